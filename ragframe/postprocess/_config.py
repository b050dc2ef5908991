"""``PostprocessConfig``: the seed's parameters, validated (SPEC 1, "Parameters")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ragframe._validate import set_ints, set_unit_float
from ragframe.errors import ConfigError

OverlapMode = Literal["text", "offsets"]
MissingTextPolicy = Literal["error", "empty", "drop"]
"""What a candidate without a row in the chunk store gets (SPEC 1, "Missing text")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PostprocessConfig:
    """Parameters of :func:`ragframe.postprocess` (the seed's names and meaning).

    Args:
        top_k: chunks selected per query by ranking score (``rerank_score``, else
            ``similarity``), skipping text repeated within the same entity (>= 1).
        min_similarity: base ``m`` of the adaptive similarity threshold: selected chunks
            need a similarity of at least ``0.6 * m`` (one selected) up to ``1.2 * m``
            (``top_k`` selected) (0..1).
        max_chunk_gap: largest ``chunk_index`` gap merged into one block (>= 0; 1 means
            adjacent chunks only, 0 only repeated indexes).
        max_blocks: blocks kept per query (>= 1).
        max_characters: total characters kept per query; a first block over it is
            truncated at a word boundary (>= 1).
        max_merged_block_characters: largest merged block, in characters; a chunk that
            would exceed it starts a new block (>= 1).
        overlap: how the overlap between merged chunks is removed: ``"text"`` (the
            seed: by matching normalized text) or ``"offsets"`` (opt-in: exactly by the
            ``start_char``/``end_char`` columns).
        missing_text: what happens to a candidate whose (entity_id, chunk_index) has no
            row in the chunk store (a null entity_id has none): ``"error"`` (a
            DataError naming how many candidates and queries miss text and the first
            keys), ``"empty"`` (treated as empty text, like null text) or ``"drop"``
            (dropped before ranking). Only read when a chunk store is given.

    Integers may be Python or numpy integers (not bools), at most ``2**62``
    (:data:`ragframe._validate.MAX_COUNT`); ``min_similarity`` any real number in [0, 1].

    Raises:
        ConfigError: a parameter is out of range or of the wrong type.

    Example:
        >>> PostprocessConfig(top_k=5, max_blocks=3).top_k
        5
    """

    top_k: int = 10
    min_similarity: float = 0.3
    max_chunk_gap: int = 1
    max_blocks: int = 5
    max_characters: int = 8000
    max_merged_block_characters: int = 2000
    overlap: OverlapMode = "text"
    missing_text: MissingTextPolicy = "error"

    def __post_init__(self) -> None:
        set_ints(
            self,
            {
                "top_k": 1,
                "max_chunk_gap": 0,
                "max_blocks": 1,
                "max_characters": 1,
                "max_merged_block_characters": 1,
            },
        )
        set_unit_float(self, "min_similarity")
        if self.overlap not in ("text", "offsets"):
            raise ConfigError(f"overlap must be 'text' or 'offsets', got {self.overlap!r}")
        if self.missing_text not in ("error", "empty", "drop"):
            raise ConfigError(
                f"missing_text must be 'error', 'empty' or 'drop', got {self.missing_text!r}"
            )
