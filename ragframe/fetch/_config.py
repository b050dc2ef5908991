"""The fetch stage's settings, each written once: :class:`HighlightConfig` (SPEC 2.1,
the passages) and :class:`FetchConfig`, which is a :class:`HighlightConfig` plus the
full-text threshold (SPEC 2, rules 1 and 4)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ragframe._validate import as_config, set_ints
from ragframe.errors import ConfigError

HighlighterMode = Literal["fvh", "unified"]
HighlightOrder = Literal["score", "offset"]
FragmentScoring = Literal["matches", "terms"]

FVH_MARGIN = 6
"""Lucene's ``BaseFragListBuilder.MARGIN_DEFAULT``; fragments must be >= 3 x margin."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HighlightConfig:
    """Highlighter settings; the defaults are the ones Fess asks its search engine for,
    and give Lucene's FastVectorHighlighter fragments, fragment for fragment.

    Args:
        fragment_size: characters per fragment (>= 18, Lucene's minimum for margin 6);
            in ``"unified"`` mode, the longest sentence piece before it is split.
        number_of_fragments: passages kept per pair (>= 1).
        highlighter: ``"fvh"`` (FastVectorHighlighter) or ``"unified"`` (sentences, BM25).
        order: ``"score"`` (best first, Fess) or ``"offset"`` (document order).
        scoring: how ``"fvh"`` scores fragments: ``"matches"`` (the default: match
            count, Lucene's ``SimpleFieldFragList`` as in Fess) or ``"terms"`` (opt-in:
            distinct query terms first, then matches, so that a frequent term cannot
            crowd a rarer one out of the chosen fragments).
        boundary_chars: the characters fragment edges move to (by default tab, newline,
            U+0013 and space, as in Fess).
        boundary_max_scan: how far a fragment edge may move to reach one of the
            ``boundary_chars``, in characters (>= 0; 0 keeps the edges where they are).
        max_matches: matches considered per pair, first in text order (>= 1; the
            FastVectorHighlighter's phrase limit: 256 is OpenSearch's ``phrase_limit``
            default, which Fess gets; Lucene's own default is unlimited).

    Integers may be Python or numpy integers (not bools), at most ``2**62``
    (:data:`ragframe._validate.MAX_COUNT`).

    Raises:
        ConfigError: a parameter is out of range or of the wrong type.

    Example:
        >>> HighlightConfig(fragment_size=200).number_of_fragments
        5
    """

    fragment_size: int = 1000
    number_of_fragments: int = 5
    highlighter: HighlighterMode = "fvh"
    order: HighlightOrder = "score"
    scoring: FragmentScoring = "matches"
    boundary_chars: str = "\t\n\x13 "
    boundary_max_scan: int = 20
    max_matches: int = 256

    def __post_init__(self) -> None:
        set_ints(
            self,
            {
                "fragment_size": 3 * FVH_MARGIN,
                "number_of_fragments": 1,
                "boundary_max_scan": 0,
                "max_matches": 1,
            },
        )
        if self.highlighter not in ("fvh", "unified"):
            raise ConfigError(f"highlighter must be 'fvh' or 'unified', got {self.highlighter!r}")
        if self.order not in ("score", "offset"):
            raise ConfigError(f"order must be 'score' or 'offset', got {self.order!r}")
        if self.scoring not in ("matches", "terms"):
            raise ConfigError(f"scoring must be 'matches' or 'terms', got {self.scoring!r}")
        if not isinstance(self.boundary_chars, str):
            raise ConfigError(
                f"boundary_chars must be a string, got {type(self.boundary_chars).__name__}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchConfig(HighlightConfig):
    """Parameters of :func:`fetch`; the highlighter's defaults are Fess's settings (see
    :class:`~ragframe.HighlightConfig`).

    Args:
        fulltext_threshold: documents longer than this (characters) are highlighted,
            and a highlighted document without passages is cut to this length (>= 0).
        fragment_size, number_of_fragments, highlighter, order, scoring, boundary_chars,
            boundary_max_scan, max_matches: see :class:`~ragframe.HighlightConfig`.

    Raises:
        ConfigError: a parameter is out of range or of the wrong type.

    Example:
        >>> FetchConfig(fulltext_threshold=500).highlight_config.fragment_size
        1000
    """

    fulltext_threshold: int = 3000

    def __post_init__(self) -> None:
        HighlightConfig.__post_init__(self)  # slots: no zero-argument super()
        set_ints(self, {"fulltext_threshold": 0})

    @property
    def highlight_config(self) -> HighlightConfig:
        """The highlighter settings of this config."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(HighlightConfig)}
        return HighlightConfig(**fields)


def as_highlight_config(config: object) -> HighlightConfig:
    """The highlighter settings of ``config`` (a :class:`FetchConfig` too, or a mapping of
    :class:`HighlightConfig` fields; defaults when None)."""
    config = as_config(config, HighlightConfig)
    if isinstance(config, FetchConfig):
        return config.highlight_config
    return config
