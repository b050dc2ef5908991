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
CHARS = f"{TMP}chars"
"""A block's length in code points."""

_STATS: dict[str, pl.DataType | type[pl.DataType]] = {
    c.END_CHUNK_INDEX: pl.Int64,
    c.TEXT: pl.String,
    CHARS: pl.Int64,
    c.MAX_SIMILARITY: pl.Float64,
    c.AVG_SIMILARITY: pl.Float64,
    c.SOURCE_CHUNK_COUNT: pl.Int64,
    c.RERANK_SCORE: pl.Float64,
    c.CHUNK_INDEXES: pl.List(pl.Int64),
}
"""What the merge kernel computes per block."""


def _grouped(kept: pl.LazyFrame, carry: Sequence[str], typed: bool = True) -> pl.LazyFrame:
    """Rule 5: each group's chunks together, in (chunk index, ranking) order, and the
    group's first chunk index and ranking row (``RANK``), which order the groups.

    The sequence of rule 5 sorts by (entity, chunk index), ties in ranking order; a
    group's rows share its entity, so its first appearance there is its row with the
    least (chunk index, rank), and groups appear in (entity, that row) order. One
    order by (entity, type, chunk index, rank) thus brings each group together in
    merge order; the order of groups matters only to rule 9's tie-break.

    The ``carry`` columns are gathered into merge order; ``text`` stays where it is
    (moving strings costs more than moving numbers) and ``MERGE_ORDER`` says, per
    merge position, which row's text comes next. ``typed=False``: every type is "".
    """
    key = [c.QUERY_ID, ENTITY, *([TYPE] if typed else [])]  # never null: row 0 starts too
    start = pl.any_horizontal(*(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in key))
    first = pl.col(GROUP_START)
    order = pl.col(MERGE_ORDER)
    return (
        kept.with_columns(pl.arg_sort_by(*key, c.CHUNK_INDEX, RANK).alias(MERGE_ORDER))
        .select(MERGE_ORDER, c.TEXT, *(pl.col(name).gather(order) for name in carry))
        .with_columns(start.alias(GROUP_START))
        .with_columns(
            *(
                (
                    pl.when(first).then(pl.col(c.CHUNK_INDEX)).forward_fill().alias(GROUP_CHUNK),
                    pl.when(first).then(pl.col(RANK)).forward_fill().alias(GROUP_RANK),
                )
                if typed
                else ()
            )
        )
    )


def _ranked_blocks(blocks: pl.DataFrame, typed: bool) -> pl.DataFrame:
    """Rule 9: ``blocks`` (in merge order: queries ascending, then groups) reordered
    within each query by ranking score, descending, ties in group order, then block
    order. A stable sort on whole columns: numbers move, the block texts stay where
    the kernel wrote them (only their views move).

    Group order is rule 5's first appearance. Without types a group is an entity, and
    merge order (``BLOCK``) already has the groups in entity order; with types, groups
    of one entity go by their first (chunk index, rank).
    """
    if blocks.height == 0:
        return blocks
    query = blocks[c.QUERY_ID]
    queries = query.ne_missing(query.shift(1)).cum_sum().to_numpy()  # ascending, as merged
    rerank = blocks[c.RERANK_SCORE].fill_null(np.nan).to_numpy()
    score = np.where(np.isnan(rerank), blocks[c.MAX_SIMILARITY].to_numpy(), rerank)
    ties = [blocks[BLOCK].to_numpy()]
    if typed:  # groups of one entity by first appearance (entities ascending, as merged)
        entity = blocks[c.ENTITY_ID]
        changed = query.ne_missing(query.shift(1)) | entity.ne_missing(entity.shift(1))
        entities = changed.cum_sum().to_numpy()
        ties = [ties[0], blocks[GROUP_RANK].to_numpy(), blocks[GROUP_CHUNK].to_numpy(), entities]
    return blocks[np.lexsort((*ties, -score, queries))]


def _merge_kernel(
    max_gap: int, cap: int, by_offsets: bool, first: dict[str, str], typed: bool
) -> Callable[[pl.Series], pl.Series]:
    """Rules 6-9 over whole columns, rows in merge order (see :func:`_jit.merge`);
    ``text`` is read through ``MERGE_ORDER``. Returns one row per block, in rule 9's
    order (:func:`_ranked_blocks`): ``BLOCK`` (its number in merge order), the block
    statistics and, renamed by ``first``, the columns of its first row."""

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
        rows = np.flatnonzero(start)
        bounds = np.append(rows, len(start))  # blocks are consecutive runs of rows
        mask = pl.Series(start)
        count = count[rows]
        stats = {
            c.END_CHUNK_INDEX: end[rows],
            c.TEXT: strings(text, text_offsets[bounds]),
            CHARS: chars[rows],
            c.MAX_SIMILARITY: top[rows],
            c.AVG_SIMILARITY: total[rows] / count,
            c.SOURCE_CHUNK_COUNT: count,
            c.RERANK_SCORE: pl.Series(rerank[rows]).fill_nan(None),
            c.CHUNK_INDEXES: pl.Series(
                pa.LargeListArray.from_arrays(pa.array(bounds), pa.array(chunk_index))
            ),
        }
        blocks = pl.DataFrame(
            {
                BLOCK: np.arange(len(rows), dtype=np.int64),
                **{name: parts[column].filter(mask) for column, name in first.items()},
                **stats,
            }
        )
        return _ranked_blocks(blocks, typed).to_struct(batch.name)

    return kernel


def blocks(
    kept: pl.LazyFrame,
    max_gap: int,
    cap: int,
    overlap: str = "text",
    passthrough: Sequence[str] = (),
    typed: bool = True,
) -> pl.LazyFrame:
    """Rules 5-9: one row per block, queries ascending, each query's blocks in rule 9's
    order (ranking score, descending; ties by group, then block: :func:`_ranked_blocks`).

    ``ROW`` is the input row of each block's first chunk, and the ``passthrough``
    columns come from it.
    """
    by_offsets = overlap == "offsets"
    offsets = (c.START_CHAR, c.END_CHAR) if by_offsets else ()
    first = {
        c.QUERY_ID: c.QUERY_ID,
        TYPE: c.ENTITY_TYPE,
        ENTITY: c.ENTITY_ID,
        c.CHUNK_INDEX: c.START_CHUNK_INDEX,
        ROW: ROW,
        **({GROUP_CHUNK: GROUP_CHUNK, GROUP_RANK: GROUP_RANK} if typed else {}),
        **{name: name for name in passthrough},
    }
    carry = [c.QUERY_ID, ENTITY, TYPE, c.CHUNK_INDEX, RANK, SIM, c.RERANK_SCORE, ROW]
    grouped = _grouped(kept, [*carry, *offsets, *passthrough], typed)
    schema = grouped.collect_schema()
    columns = [MERGE_ORDER, GROUP_START, SIM, c.RERANK_SCORE, c.TEXT, *offsets, *first]
    dtype = pl.Struct(
        {BLOCK: pl.Int64, **{name: schema[column] for column, name in first.items()}, **_STATS}
    )
    kernel = pl.struct(*dict.fromkeys(columns)).map_batches(
        _merge_kernel(max_gap, cap, by_offsets, first, typed), return_dtype=dtype
    )
    field = pl.col(c.RERANK_SCORE), pl.col(c.MAX_SIMILARITY)
    return (
        grouped.select(kernel.alias(_KERNEL))
        .unnest(_KERNEL)
        .with_columns(pl.coalesce(*field).alias(c.RANKING_SCORE))
    )
