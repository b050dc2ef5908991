"""``PostprocessConfig``: the seed's parameters, validated (SPEC 1, "Parameters")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ragframe._validate import set_ints, set_unit_float
from ragframe.errors import ConfigError
from ragframe.tokens._counters import SPEC_FORMS, TokenCounter, token_counter

OverlapMode = Literal["text", "offsets"]
MissingTextPolicy = Literal["error", "empty", "drop"]
"""What a candidate without a row in the chunk store gets (SPEC 1, "Missing text")."""
LengthMode = Literal["chars", "tokens"]
"""What rule 6's block cap and rule 10's budget count (SPEC 1, "Budgets in tokens")."""
TokenizerLike: TypeAlias = TokenCounter | str | object
"""A tokenizer as :func:`ragframe.postprocess.token_counter` takes it."""


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
        length: what the block cap (rule 6) and the budget (rule 10) count:
            ``"chars"`` (the seed: ``max_merged_block_characters`` and
            ``max_characters``) or ``"tokens"`` (opt-in: ``max_block_tokens`` and
            ``max_tokens``, counted by ``tokenizer`` on the text they measure; the
            character limits are then not read).
        tokenizer: what counts tokens: a spec ('tiktoken:ENCODING' or
            'hf:PATH/tokenizer.json'), a tiktoken encoding, a tokenizers Tokenizer, an
            object with ``count(texts)`` or a callable counting a batch of texts. Needed
            for ``length="tokens"``; with ``"chars"`` it only adds ``token_count`` to the
            output.
        max_block_tokens: largest merged block, in tokens; a chunk that would take the
            merged block's text over it starts a new block (>= 1; ``length="tokens"``).
        max_tokens: total tokens kept per query; a first block over it is cut to its
            longest prefix within it, then at a word boundary (>= 1; ``length="tokens"``).

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
    length: LengthMode = "chars"
    tokenizer: TokenizerLike | None = None
    max_block_tokens: int = 500
    max_tokens: int = 2000

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
        self._check_tokens()

    def _check_tokens(self) -> None:
        """The token fields (SPEC 1, "Budgets in tokens"); the tokenizer as a counter."""
        set_ints(self, {"max_block_tokens": 1, "max_tokens": 1})
        if self.length not in ("chars", "tokens"):
            raise ConfigError(f"length must be 'chars' or 'tokens', got {self.length!r}")
        if self.tokenizer is not None:
            object.__setattr__(self, "tokenizer", token_counter(self.tokenizer))
        elif self.length == "tokens":
            raise ConfigError(
                f"length='tokens' needs a tokenizer ({SPEC_FORMS}, a tiktoken encoding, a "
                "tokenizers Tokenizer or a callable counting a batch of texts), got None"
            )

    @property
    def counter(self) -> TokenCounter | None:
        """The tokenizer as a :class:`~ragframe.postprocess.TokenCounter` (None: none)."""
        return self.tokenizer if isinstance(self.tokenizer, TokenCounter) else None
