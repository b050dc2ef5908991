"""Chunk post-processing for every query at once (SPEC section 1, seed
``RagChunkPostProcessor``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from ragframe import _inputs, _merge, _select
from ragframe import schema as c
from ragframe._select import ROW
from ragframe._text import JAVA_WHITESPACE, TRIM_CHARS, TRUNCATE_LOOKBACK
from ragframe.config import check_int, check_unit_float
from ragframe.errors import ConfigError
from ragframe.schema import Frame, to_lazy

OverlapMode = Literal["text", "offsets"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PostprocessConfig:
    """Parameters of :func:`ragframe.postprocess` (the seed's names and meaning).

    Args:
        top_k: chunks selected per query by ranking score, after removing repeats (>= 1).
        min_similarity: base of the adaptive similarity threshold (0..1).
        max_chunk_gap: largest chunk-index gap merged into one block (>= 0; 1 means
            adjacent chunks only).
        max_blocks: blocks kept per query (>= 1).
        max_characters: total characters kept per query (>= 1).
        max_merged_block_characters: largest merged block, in characters (>= 1).
        overlap: ``"text"`` (the seed: remove overlap by matching normalized text) or
            ``"offsets"`` (opt-in: remove it exactly by ``start_char``/``end_char``).

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

    def __post_init__(self) -> None:
        check_int("top_k", self.top_k, 1)
        check_unit_float("min_similarity", self.min_similarity)
        check_int("max_chunk_gap", self.max_chunk_gap, 0)
        check_int("max_blocks", self.max_blocks, 1)
        check_int("max_characters", self.max_characters, 1)
        check_int("max_merged_block_characters", self.max_merged_block_characters, 1)
        if self.overlap not in ("text", "offsets"):
            raise ConfigError(f"overlap must be 'text' or 'offsets', got {self.overlap!r}")

    def threshold(self, selected: int) -> float:
        """The seed's adaptive similarity threshold for ``selected`` chunks."""
        m, k = float(self.min_similarity), self.top_k
        if selected <= 1:
            t = 0.6 * m
        elif selected >= k:
            t = 1.2 * m
        else:
            t = m * (0.6 + 0.6 * (selected - 1) / (k - 1))
        return min(1.0, max(0.0, t))


_WS_CLASS = "".join(f"\\x{{{ord(ch):04X}}}" for ch in sorted(JAVA_WHITESPACE))


def _truncate_expr(text: pl.Expr, limit: int) -> pl.Expr:
    """Rule 10's cut: at ``limit``, or at the last whitespace in the 79 positions
    before it; then Java-trim."""
    window = text.str.slice(
        max(0, limit - TRUNCATE_LOOKBACK), limit - max(0, limit - TRUNCATE_LOOKBACK)
    )
    after = window.str.extract(f"[{_WS_CLASS}]([^{_WS_CLASS}]*)$", 1)
    cut = pl.when(after.is_null()).then(limit).otherwise(limit - 1 - after.str.len_chars())
    return text.str.slice(0, cut).str.strip_chars(TRIM_CHARS)


def _budget(
    blocks: pl.LazyFrame, config: PostprocessConfig, passthrough: list[str]
) -> pl.LazyFrame:
    """Rule 10 on blocks in rule 9's order, with their ``block_rank`` and running length
    (as :func:`_merge.blocks` gives them): the block and character budgets."""
    length = pl.col(_merge.CHARS)
    rank = pl.col(c.BLOCK_RANK)
    fits = (rank < config.max_blocks) & (
        (pl.col(_merge.TOTAL) <= config.max_characters) | (rank == 0)
    )
    truncated = length > config.max_characters
    # only the rare truncated block pays for the cut: every other row cuts ""
    cut = _truncate_expr(
        pl.when(truncated).then(c.TEXT).otherwise(pl.lit("")), config.max_characters
    )
    return (
        blocks.filter(fits)
        .with_columns(pl.when(truncated).then(cut).otherwise(c.TEXT).alias(c.TEXT))
        .with_columns(
            truncated.alias(c.TRUNCATED),
            pl.when(truncated)
            .then(pl.col(c.TEXT).str.len_chars().cast(pl.Int64))
            .otherwise(length)
            .alias(c.CHAR_COUNT),
        )
        .select(*c.BLOCK_COLUMNS, *passthrough)
    )


def postprocess(
    candidates: Frame, config: PostprocessConfig | None = None, *, chunks: Frame | None = None
) -> pl.LazyFrame:
    """Turn retrieved chunks into context blocks, for every query at once.

    Per query (``query_id``): distinct top-K by ranking score, the adaptive similarity
    threshold, sort and group by document, merge adjacent chunks removing the overlap
    they share, cap block size, then the block and character budgets -- exactly as the
    seed ``RagChunkPostProcessor`` (SPEC section 1), as one lazy Polars plan.

    Args:
        candidates: one row per retrieved chunk: ``query_id`` (int or string, never
            null), ``entity_id`` or its alias ``doc_id`` (int or string; null = no
            entity), ``chunk_index`` (int; null = 0), ``similarity`` (number; null =
            0.0), ``text`` (string; null = "", optional when ``chunks`` is given),
            optional ``entity_type`` (string) and ``rerank_score`` (number). Any other
            column is passed through from the first chunk of each block. Row order is
            the tie-break. A polars DataFrame/LazyFrame or a pyarrow Table.
        config: the parameters; defaults to ``PostprocessConfig()``.
        chunks: optional chunk store ``(entity_id|doc_id, chunk_index, text)``; its text
            is joined only to the candidates that need it (late materialization). The
            first row wins where a key repeats.

    Returns:
        A LazyFrame with one row per block, sorted by ``query_id`` then ``block_rank``:
        ``query_id, block_rank, entity_type, entity_id, start_chunk_index,
        end_chunk_index, text, max_similarity, avg_similarity, source_chunk_count,
        rerank_score, ranking_score, char_count, truncated, chunk_indexes`` and the
        passthrough columns. ``entity_type``/``entity_id`` are the group key: null
        becomes "" and 0 ("" for string ids). Lengths are Unicode code points.

    Raises:
        SchemaError: a required column is missing or has the wrong type (at once).
        DataError: null ``query_id``, NaN or infinite scores (when collected).

    Example:
        >>> import polars as pl
        >>> rows = pl.DataFrame({
        ...     "query_id": [1, 1], "entity_id": [7, 7], "chunk_index": [0, 1],
        ...     "text": ["Intro text before. Shared overlap phrase for removal",
        ...              "Shared overlap phrase for removal and unique second."],
        ...     "similarity": [0.9, 0.8]})
        >>> postprocess(rows).collect()["text"].to_list()
        ['Intro text before. Shared overlap phrase for removal and unique second.']
    """
    config = config or PostprocessConfig()
    offsets = config.overlap == "offsets"
    given = to_lazy(candidates, "candidates")
    typed = c.ENTITY_TYPE in given.collect_schema()  # else every type is null
    lf, passthrough = _inputs.canonical(given, chunks is not None, offsets)
    schema = lf.collect_schema()
    if chunks is None:
        side = [c.TEXT, *(_inputs.OFFSETS if offsets else ())]
        texts = lf.select(ROW, *side).cache()  # both walk passes join it
        on: tuple[list[pl.Expr], list[str]] = ([pl.col(ROW)], [ROW])
    else:
        store, key, names = _inputs.chunk_store(to_lazy(chunks, "chunks"), schema, offsets)
        texts, on = store.cache(), (key, names)  # cached: both walk passes join it
    zero: int | str = "" if schema[c.ENTITY_ID] == pl.String else 0
    known = [name for name in _inputs.KNOWN if name in schema]
    row = [ROW] if chunks is None else []  # the key of inline text
    slim = lf.select(*row, *known, *passthrough)  # passthrough rides along
    kept = _select.kept_chunks(
        slim, texts, on, zero, config.top_k, config.min_similarity, typed, _inputs.absent(schema)
    )
    cap = config.max_merged_block_characters
    blocks = _merge.blocks(kept, config.max_chunk_gap, cap, config.overlap, passthrough, typed)
    return _budget(blocks, config, passthrough)
