"""``WindowConfig``: window size and overlap, validated (SPEC 3, "Parameters")."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from ragframe._validate import MAX_COUNT, shown
from ragframe.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowConfig:
    """Parameters of :func:`windows`, :func:`assemble` and :func:`ragframe.chunk`.

    Args:
        window_chars: the largest window, in characters (Unicode code points; >= 1 and
            at most ``2**62``, :data:`ragframe._validate.MAX_COUNT`).
        overlap_chars: characters each window shares with the previous one
            (``0 <= overlap_chars < window_chars``); windows start every
            ``window_chars - overlap_chars`` characters.

    Both may be Python or numpy integers (not bools).

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
        given = f"window_chars={shown(w)}, overlap_chars={shown(o)}"
        rule = f"1 <= window_chars <= {MAX_COUNT} and 0 <= overlap_chars < window_chars"
        if any(isinstance(v, bool | np.bool_) or not isinstance(v, Integral) for v in (w, o)):
            raise ConfigError(f"invalid window: {given}; expected integers with {rule}")
        if not 1 <= w <= MAX_COUNT or not 0 <= o < w:
            raise ConfigError(f"invalid window: {given}; expected {rule}")
        object.__setattr__(self, "window_chars", int(w))  # numpy integers as plain ints
        object.__setattr__(self, "overlap_chars", int(o))

    @property
    def step(self) -> int:
        """Characters between consecutive window starts: ``window - overlap``."""
        return self.window_chars - self.overlap_chars
