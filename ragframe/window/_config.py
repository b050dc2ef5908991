"""``WindowConfig``: window size and overlap, validated (SPEC 3, "Parameters")."""

from __future__ import annotations

from dataclasses import dataclass

from ragframe.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowConfig:
    """Parameters of :func:`windows`, :func:`assemble` and :func:`ragframe.chunk`.

    Args:
        window_chars: the largest window, in characters (Unicode code points; >= 1).
        overlap_chars: characters each window shares with the previous one
            (``0 <= overlap_chars < window_chars``); windows start every
            ``window_chars - overlap_chars`` characters.

    Raises:
        ConfigError: a value is not an integer or out of range; the message names both.

    Example:
        >>> WindowConfig(window_chars=400, overlap_chars=100).step
        300
    """

    window_chars: int
    overlap_chars: int = 0

    def __post_init__(self) -> None:
        w, o = self.window_chars, self.overlap_chars
        given = f"window_chars={w!r}, overlap_chars={o!r}"
        rule = "window_chars >= 1 and 0 <= overlap_chars < window_chars"
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (w, o)):
            raise ConfigError(f"invalid window: {given}; expected integers with {rule}")
        if w < 1 or not 0 <= o < w:
            raise ConfigError(f"invalid window: {given}; expected {rule}")

    @property
    def step(self) -> int:
        """Characters between consecutive window starts: ``window - overlap``."""
        return self.window_chars - self.overlap_chars
