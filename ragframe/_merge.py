"""Merge half of ``postprocess``: sort, group, remove overlap, build blocks.

SPEC 1, rules 5-8. Sorting and grouping are Polars expressions; the merge itself
(overlap removal against the block text built so far, and the size cap, a running sum
with resets) runs in one compiled pass over every group (:func:`ragframe._jit.merge`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe._jit import merge, strings
from ragframe._select import ENTITY, RANK, ROW, SIM, TYPE
from ragframe.schema import TMP

GROUP_CHUNK = f"{TMP}group_chunk"
GROUP_RANK = f"{TMP}group_rank"
GROUP_START = f"{TMP}group_start"
MERGE_ORDER = f"{TMP}merge_order"
BLOCK = f"{TMP}block"
_KERNEL = f"{TMP}kernel"
GROUP_ORDER = [c.ENTITY_ID, GROUP_CHUNK, GROUP_RANK, BLOCK]
"""Rule 9's tie-break among blocks of a query: group order, then block order."""
_START = "start"
CHARS = f"{TMP}chars"
"""A block's length in code points."""

_OUTPUT = pl.Struct(
    {
        _START: pl.Boolean,
        c.TEXT: pl.String,
        CHARS: pl.Int64,
        c.END_CHUNK_INDEX: pl.Int64,
        c.MAX_SIMILARITY: pl.Float64,
        c.AVG_SIMILARITY: pl.Float64,
        c.SOURCE_CHUNK_COUNT: pl.Int64,
        c.RERANK_SCORE: pl.Float64,
        c.CHUNK_INDEXES: pl.List(pl.Int64),
    }
)


def _grouped(kept: pl.LazyFrame, carry: Sequence[str]) -> pl.LazyFrame:
    """Rule 5: each group's chunks together, in (chunk index, ranking) order, and the
    group's first chunk index and ranking row (``RANK``), which order the groups.

    The sequence of rule 5 sorts by (entity, chunk index), ties in ranking order; a
    group's rows share its entity, so its first appearance there is its row with the
    least (chunk index, rank), and groups appear in (entity, that row) order. One
    order by (entity, type, chunk index, rank) thus brings each group together in
    merge order; the order of groups matters only to rule 9's tie-break.

    The ``carry`` columns are gathered into merge order; ``text`` stays where it is
    (moving strings costs more than moving numbers) and ``MERGE_ORDER`` says, per
    merge position, which row's text comes next.
    """
    key = [c.QUERY_ID, ENTITY, TYPE]  # never null: the first row starts a group too
    start = pl.any_horizontal(*(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in key))
    first = pl.col(GROUP_START)
    order = pl.col(MERGE_ORDER)
    return (
        kept.with_columns(pl.arg_sort_by(*key, c.CHUNK_INDEX, RANK).alias(MERGE_ORDER))
        .select(MERGE_ORDER, c.TEXT, *(pl.col(name).gather(order) for name in carry))
        .with_columns(start.alias(GROUP_START))
        .with_columns(
            pl.when(first).then(pl.col(c.CHUNK_INDEX)).forward_fill().alias(GROUP_CHUNK),
            pl.when(first).then(pl.col(RANK)).forward_fill().alias(GROUP_RANK),
        )
    )


def _merge_kernel(max_gap: int, cap: int, by_offsets: bool) -> Callable[[pl.Series], pl.Series]:
    """Rules 6-8 over whole columns, rows in merge order (see :func:`_jit.merge`);
    ``text`` is read through ``MERGE_ORDER``."""

    def kernel(batch: pl.Series) -> pl.Series:
        parts = batch.struct.unnest()
        chunk_index = parts[c.CHUNK_INDEX].to_numpy()
        offs = (
            (parts[c.START_CHAR].to_numpy(), parts[c.END_CHAR].to_numpy())
            if by_offsets
            else (None, None)
        )
        start, text, text_offsets, chars, end, top, total, count, rerank = merge(
            parts[c.TEXT],
            parts[MERGE_ORDER].to_numpy(),
            parts[GROUP_START].to_numpy(),
            chunk_index,
            parts[SIM].to_numpy(),
            parts[c.RERANK_SCORE].fill_null(np.nan).to_numpy(),
            max_gap,
            cap,
            *offs,
        )
        # a block's chunk indexes on its first row, empty lists on the others
        indexes = pa.LargeListArray.from_arrays(
            pa.array(_list_offsets(start, count)), pa.array(chunk_index)
        )
        return pl.DataFrame(
            {
                _START: start,
                c.TEXT: strings(text, text_offsets),
                CHARS: chars,
                c.END_CHUNK_INDEX: end,
                c.MAX_SIMILARITY: top,
                c.AVG_SIMILARITY: total / np.maximum(count, 1),
                c.SOURCE_CHUNK_COUNT: count,
                c.RERANK_SCORE: pl.Series(rerank).fill_nan(None),
                c.CHUNK_INDEXES: pl.Series(indexes),
            }
        ).to_struct(batch.name)

    return kernel


def _list_offsets(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """List offsets giving each block's first row its rows' values, others nothing."""
    n = len(start)
    ends = np.where(start, np.arange(n) + count, 0)
    running = np.maximum.accumulate(ends) if n else ends
    out = np.zeros(n + 1, dtype=np.int64)
    out[1:] = running
    return out


def blocks(
    kept: pl.LazyFrame,
    max_gap: int,
    cap: int,
    overlap: str = "text",
    passthrough: Sequence[str] = (),
) -> pl.LazyFrame:
    """Rules 5-8: one row per block; :data:`GROUP_ORDER` orders blocks by group, then
    by position in the group.

    ``ROW`` is the input row of each block's first chunk, and the ``passthrough``
    columns come from it. Row order is not kept.
    """
    by_offsets = overlap == "offsets"
    offsets = (c.START_CHAR, c.END_CHAR) if by_offsets else ()
    carry = [c.QUERY_ID, ENTITY, TYPE, c.CHUNK_INDEX, RANK, SIM, c.RERANK_SCORE, ROW]
    inputs = pl.struct(
        MERGE_ORDER,
        GROUP_START,
        c.CHUNK_INDEX,
        SIM,
        c.RERANK_SCORE,
        c.TEXT,
        *offsets,
    )
    kernel = inputs.map_batches(_merge_kernel(max_gap, cap, by_offsets), return_dtype=_OUTPUT)
    field = pl.col(_KERNEL).struct.field
    return (
        _grouped(kept, [*carry, *offsets, *passthrough])
        .with_columns(kernel.alias(_KERNEL))
        .filter(field(_START))
        .select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias(BLOCK),
            c.QUERY_ID,
            pl.col(TYPE).alias(c.ENTITY_TYPE),
            pl.col(ENTITY).alias(c.ENTITY_ID),
            pl.col(c.CHUNK_INDEX).alias(c.START_CHUNK_INDEX),
            field(c.END_CHUNK_INDEX),
            field(c.TEXT),
            field(CHARS),
            field(c.MAX_SIMILARITY),
            field(c.AVG_SIMILARITY),
            field(c.SOURCE_CHUNK_COUNT),
            field(c.RERANK_SCORE),
            pl.coalesce(field(c.RERANK_SCORE), field(c.MAX_SIMILARITY)).alias(c.RANKING_SCORE),
            field(c.CHUNK_INDEXES),
            ROW,
            GROUP_CHUNK,
            GROUP_RANK,
            *passthrough,
        )
    )
