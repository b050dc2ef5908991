"""Merge half of ``postprocess``: sort, group, remove overlap, build and order blocks.

SPEC 1, rules 5-9. Rule 5's order is a compiled sort within each query
(:func:`merge_order`); the merge (overlap removal against the block text built so far,
the size cap: a running sum with resets) is one compiled pass over every group
(:func:`ragframe.postprocess._kernels._merge.merge`) reading each chunk's text in place;
rule 9 a compiled sort of each query's blocks. No frame that carries text is ever
sorted (the streaming engine copies every string it sorts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import consecutive_strings, int64_lists, prefix_words, strings
from ragframe._kernels._compile import F64, I64, Bools
from ragframe.postprocess._budget import TRUNCATE_WINDOW, within_budget
from ragframe.postprocess._columns import floats, gathered
from ragframe.postprocess._kernels._merge import MergeResult, merge
from ragframe.postprocess._kernels._order import (
    descending_key,
    in_segments_of,
    rank_order,
    ranked_in_segments,
)
from ragframe.postprocess._kernels._pieces import Texts, runs_of, truncated, write_blocks
from ragframe.postprocess._texts import RowTexts, row_texts, stacked

_STATS: dict[str, pl.DataType | type[pl.DataType]] = {
    c.END_CHUNK_INDEX: pl.Int64,
    c.TEXT: pl.String,
    c.T_CHARS: pl.Int64,
    c.MAX_SIMILARITY: pl.Float64,
    c.AVG_SIMILARITY: pl.Float64,
    c.SOURCE_CHUNK_COUNT: pl.Int64,
    c.RERANK_SCORE: pl.Float64,
    c.RANKING_SCORE: pl.Float64,
    c.CHUNK_INDEXES: pl.List(pl.Int64),
}
"""What the merge kernel computes per block."""


class MergeOrder(NamedTuple):
    """The rows (``order``) in merge order (:func:`merge_order`), what the merge reads."""

    order: npt.NDArray[np.int64]
    query_start: Bools
    """Whether a row starts its query."""
    group_start: Bools
    """Whether a row starts its group (query, entity, type)."""
    entity: npt.NDArray[np.int64]
    """The entity's code (the entity, or its dense rank for strings)."""
    chunk_index: npt.NDArray[np.int64]
    rank: npt.NDArray[np.int64]


def merge_order(parts: pl.DataFrame, typed: bool) -> MergeOrder:
    """Rule 5: the rows of ``parts`` (any order) in merge order: queries ascending, and
    within each query by (entity, type, chunk index, rank), so each group's chunks
    together, in (chunk index, ranking) order.

    ``c.T_RANK``, a row's place in the whole ranking, puts the rows in (query, ranking)
    order: distinct places, ordered by one scatter (:func:`rank_order`). The sequence
    of rule 5 then sorts each query's rows by (entity, chunk index), ties in ranking
    order; a group's rows share its entity, so its first appearance there is its row
    with the least (chunk index, rank), and groups appear in (entity, that row) order.
    The order of groups matters only to rule 9's tie-break (:func:`_rule9_order`).
    ``typed=False``: every type is "", so the type is no key. String keys sort by their
    dense rank (Polars' string order), in a compiled sort within each query.
    """
    rank = parts[c.T_RANK].to_numpy()
    ranked = rank_order(rank)
    query = parts[c.QUERY_ID]
    if query.dtype.is_integer():
        ids = query.to_numpy()[ranked]
        starts = np.r_[True, ids[1:] != ids[:-1]] if len(ids) else np.zeros(0, dtype=np.bool_)
        in_order = bool(np.all(ids[1:] >= ids[:-1]))
    else:  # text would be costly to gather
        query = query.gather(pl.Series(ranked))
        starts = query.ne_missing(query.shift(1)).fill_null(True).to_numpy()
        in_order = query.is_sorted()
    if not in_order:  # c.T_RANK is a place in a ranking sorted by query
        raise RuntimeError("internal error: ranks out of query order in the merge kernel")

    def code(name: str) -> npt.NDArray[np.int64]:
        column = parts[name]
        if column.dtype == pl.String:
            column = column.rank("dense")
        return column.cast(pl.Int64).to_numpy()

    group = [c.T_ENTITY, *([c.T_TYPE] if typed else [])]
    keys = np.stack([code(name) for name in [*group, c.CHUNK_INDEX]] + [rank])
    order, group_start, keys = in_segments_of(ranked, starts, keys, len(group))
    return MergeOrder(order, starts, group_start, keys[0], keys[-2], keys[-1])  # keys[:, order]


def _rule9_order(
    new_query: Bools,
    score: F64,
    chars: I64,
    ties: tuple[I64, I64, I64] | None,
) -> tuple[I64, I64, I64]:
    """Rule 9 on blocks in merge order (queries ascending, then groups): the blocks
    reordered within each query by ranking score (``score``), descending, ties in group
    order, then block order; with each block's rank in its query (``block_rank``) and
    the running length (``chars``) of its query's blocks up to it, which rule 10 needs.

    Group order is rule 5's first appearance. Without types (``ties`` None) a group is
    an entity, and merge order already has the groups in entity order; with types,
    groups of one entity go by their first (rank, chunk index): ``ties`` holds, per
    block, its group's first rank and chunk index and its entity's code.
    """
    keys = [descending_key(score)]
    if ties is not None:  # groups of one entity by first appearance (entities ascending)
        first_rank, first_chunk, entity = ties
        entities = (new_query | np.r_[True, entity[1:] != entity[:-1]]).cumsum()
        keys += [entities, first_chunk, first_rank]
    return ranked_in_segments(new_query, np.column_stack(keys), chars)  # stable: block order


def running_totals(values: I64, first: I64) -> I64:
    """Each value's running total within its segment (``first``: where each one's
    segment begins), itself included: rule 10's length of a query's blocks up to one."""
    total = np.cumsum(values)
    return total - (total - values)[first]


def _block_groups(group_start: Bools, firsts: I64) -> I64:
    """Each block's group's first row (blocks: their first rows ``firsts``, in merge
    order; ``group_start`` marks the rows that start a group): the last block at or
    before it that starts a group, as a block never spans two groups."""
    return np.maximum.accumulate(np.where(group_start[firsts], firsts, 0))


class _Blocks(NamedTuple):
    """The blocks of a batch in rule 9's order (the budget's, when one is given)."""

    rows: I64
    """Each block's first row, in merge order."""
    lengths: I64
    """Each block's rows."""
    group: I64
    """Each block's group's first row, in merge order."""
    score: F64
    rerank: F64
    block_rank: I64
    running: I64
    """The length of the query's blocks up to this one (rule 10)."""


def _ordered(
    rows_in: MergeOrder, m: MergeResult, typed: bool, budget: tuple[int, int] | None = None
) -> _Blocks:
    """Rule 8's ranking score and rule 9's order of the blocks ``m`` found; with
    ``budget`` (``max_blocks``, ``max_characters``) only the blocks rule 10 keeps (each
    column gathered once, at the kept blocks)."""
    firsts = np.flatnonzero(m.starts)  # each block's first row, in merge order
    rerank, top = m.rerank[firsts], m.max_similarity[firsts]
    missing = np.isnan(rerank)
    score = top if missing.all() else np.where(missing, top, rerank)
    group = _block_groups(rows_in.group_start, firsts)
    ties = None
    if typed:
        ties = (rows_in.rank[group], rows_in.chunk_index[group], rows_in.entity[firsts])
    ranked, block_rank, running = _rule9_order(
        rows_in.query_start[firsts], score, m.chars[firsts], ties
    )
    if budget is not None:
        kept = np.flatnonzero(within_budget(block_rank, running, *budget))
        ranked, block_rank, running = ranked[kept], block_rank[kept], running[kept]
    rows = firsts[ranked]
    ends = np.append(firsts[1:], len(m.starts))[ranked]  # blocks: runs of rows
    lengths, group = ends - rows, group[ranked]
    return _Blocks(rows, lengths, group, score[ranked], rerank[ranked], block_rank, running)


def _kept(blocks: _Blocks, keep: Bools) -> _Blocks:
    """The blocks where ``keep`` is set, in the same order (gathered by their indexes:
    a boolean mask per column is several times slower)."""
    kept = np.flatnonzero(keep)
    return _Blocks._make(column[kept] for column in blocks)


def _texts(
    texts: tuple[I64, I64], m: MergeResult, blocks: _Blocks, limit: int | None
) -> tuple[pl.Series, I64, Bools]:
    """The blocks' texts (each query's first one cut to ``limit`` code points as rule 10
    cuts, when longer), their lengths in code points and whether each was cut: views
    into the merge's buffer (:attr:`MergeResult.text`) where they hold half its bytes
    or more, else written once into a buffer of exactly their bytes."""
    chars = m.chars[blocks.rows]
    parts = Texts(
        blocks.rows, blocks.rows + blocks.lengths, np.zeros_like(chars), m.size[blocks.rows]
    )
    cut = chars > limit if limit is not None else np.zeros(len(chars), dtype=np.bool_)
    if cut.any():
        address, length = texts
        some = Texts(*(column[cut] for column in parts))
        done, kept_chars = truncated(address, length, m.piece, some, limit or 0, TRUNCATE_WINDOW)
        parts.skip[cut], parts.take[cut], chars = done.skip, done.take, chars.copy()
        chars[cut] = kept_chars
    if len(m.text) and 2 * int(parts.take.sum()) >= len(m.text):
        begin = m.at[blocks.rows] + parts.skip
        head = m.head[blocks.rows].astype(np.uint32)  # the merge's, where nothing is cut
        head[cut] = prefix_words(m.text, begin[cut])
        return strings(m.text, begin, parts.take, prefix=head), chars, cut
    data, begin = write_blocks(*texts, m.piece, parts)
    return consecutive_strings(data, begin), chars, cut


def _frame(
    parts: pl.DataFrame,
    rows_in: MergeOrder,
    m: MergeResult,
    blocks: _Blocks,
    texts: tuple[pl.Series, I64, Bools],
    first: dict[str, str],
) -> pl.DataFrame:
    """One row per block: rule 8's fields, its rank and running length, the first rows'
    columns (``first``: renamed), its text (see :func:`_texts`)."""
    order, rows = rows_in.order, blocks.rows
    heads, group_heads = order[rows], order[blocks.group]
    count = m.chunk_count[rows]
    text, chars, cut = texts
    return pl.DataFrame(
        {
            **{name: gathered(parts[name], group_heads) for name in (c.ENTITY_TYPE, c.ENTITY_ID)},
            **{name: gathered(parts[column], heads).alias(name) for column, name in first.items()},
            c.END_CHUNK_INDEX: m.end_chunk_index[rows],
            c.TEXT: text,
            c.T_CHARS: m.chars[rows],
            c.MAX_SIMILARITY: m.max_similarity[rows],
            c.AVG_SIMILARITY: m.sum_similarity[rows] / count,
            c.SOURCE_CHUNK_COUNT: count,
            c.RERANK_SCORE: pl.Series(blocks.rerank, nan_to_null=True),
            c.RANKING_SCORE: blocks.score,
            c.CHUNK_INDEXES: int64_lists(
                blocks.lengths, runs_of(rows_in.chunk_index, rows, blocks.lengths)
            ),
            c.BLOCK_RANK: blocks.block_rank,
            c.T_TOTAL: blocks.running,
            c.CHAR_COUNT: chars,
            c.TRUNCATED: cut,
        }
    )


class MergeInputs(NamedTuple):
    """What :func:`ragframe.postprocess._kernels._merge.merge` reads besides the caps,
    in merge order: similarities, rerank scores (NaN: null), offsets (None: by text)."""

    sim: F64
    rerank: F64
    start_char: F64 | None
    end_char: F64 | None


def in_merge_order(found: RowTexts, typed: bool) -> tuple[MergeOrder, tuple[I64, I64], MergeInputs]:
    """A kernel batch's rows (:func:`ragframe.postprocess._texts.row_texts`) in merge
    order (:func:`merge_order`), their texts' addresses and lengths, and the numbers the
    merge reads, gathered into that order (the kernel reads each text through it)."""
    parts = found.rows
    rows_in = merge_order(parts, typed)
    order = rows_in.order
    offsets = found.offsets
    sim = parts[c.T_SIM].to_numpy()[order]
    rerank = floats(parts[c.RERANK_SCORE], order)
    numbers = MergeInputs(
        sim, rerank, *((offsets[0][order], offsets[1][order]) if offsets else (None, None))
    )
    return rows_in, (found.address[order], found.length[order]), numbers


def _blocks_of(found: RowTexts, max_gap: int, cap: int, first: dict[str, str], typed: bool,
               budget: tuple[int, int] | None) -> pl.DataFrame:  # fmt: skip
    """Rules 5-9 (see :func:`ragframe.postprocess._kernels._merge.merge`), and rule 10
    with ``budget`` (``max_blocks``, ``max_characters``), on rows in any order
    (:func:`merge_order`) whose texts are ``found``
    (:func:`ragframe.postprocess._texts.row_texts`). Numbers are gathered into merge
    order here; the kernel reads each chunk's text through the order. Returns one row
    per block (each the budget keeps), in rule 9's order (:func:`_rule9_order`): see
    :func:`_frame`. Only the texts of the blocks returned are written."""
    parts = found.rows
    rows_in, texts, n = in_merge_order(found, typed)
    m = merge(
        *texts, rows_in.group_start, rows_in.chunk_index, n.sim, n.rerank, max_gap, cap,
        n.start_char, n.end_char, in_place=True,
    )  # fmt: skip
    blocks = _ordered(rows_in, m, typed, budget)
    written = _texts(texts, m, blocks, budget[1] if budget is not None else None)
    return _frame(parts, rows_in, m, blocks, written, first)


def _merge_kernel(max_gap: int, cap: int, by_offsets: bool, first: dict[str, str], typed: bool,
                  budget: tuple[int, int] | None, in_source: bool,
                  ) -> Callable[[pl.Series], pl.Series]:  # fmt: skip
    """:func:`_blocks_of` over whole columns, their texts read in place (``in_source``:
    from the text source after them, :func:`ragframe.postprocess._texts.row_texts`)."""

    def kernel(batch: pl.Series) -> pl.Series:
        found = row_texts(batch.struct.unnest(), in_source, by_offsets)
        return _blocks_of(found, max_gap, cap, first, typed, budget).to_struct(batch.name)

    return kernel


@dataclass(frozen=True, slots=True)
class KernelInputs:
    """What a merge kernel (in characters or in tokens) reads and the fields it gives.

    Attributes:
        by_offsets: overlap removed by the chunks' offsets (``overlap="offsets"``).
        first: the columns each block takes from its first chunk -> their names in the
            blocks.
        fields: the blocks' fields every merge gives (each kind adds its own).
        inputs: the struct of the columns the kernel reads.
        rows: ``kept``, with the chunk store's texts (and offsets) stacked below it.
    """

    by_offsets: bool
    first: dict[str, str]
    fields: dict[str, Any]
    inputs: pl.Expr
    rows: pl.LazyFrame


def kernel_inputs(
    kept: pl.LazyFrame, texts: pl.LazyFrame | None, overlap: str, passthrough: Sequence[str]
) -> KernelInputs:
    """The :class:`KernelInputs` of a merge of ``kept`` (texts from ``texts``' rows, or
    their own)."""
    by_offsets = overlap == "offsets"
    side = [c.TEXT, *((c.START_CHAR, c.END_CHAR) if by_offsets else ())]
    first = {
        c.QUERY_ID: c.QUERY_ID,
        c.CHUNK_INDEX: c.START_CHUNK_INDEX,
        **{name: name for name in passthrough},
    }
    schema = kept.collect_schema()
    fields = {
        **{name: schema[name] for name in (c.ENTITY_TYPE, c.ENTITY_ID)},
        **{name: schema[column] for column, name in first.items()},
        **_STATS,
        c.BLOCK_RANK: pl.Int64,
        c.T_TOTAL: pl.Int64,
    }
    group = [c.T_TYPE, c.T_ENTITY, c.ENTITY_TYPE, c.ENTITY_ID]
    columns = [c.T_ROW, *side, c.T_RANK, c.T_SIM, c.RERANK_SCORE, *group, *first]
    rows = kept if texts is None else stacked(kept, texts, [pl.col(name) for name in side])
    return KernelInputs(by_offsets, first, fields, pl.struct(*dict.fromkeys(columns)), rows)


def blocks(
    kept: pl.LazyFrame,
    texts: pl.LazyFrame | None,
    max_gap: int,
    cap: int,
    overlap: str = "text",
    passthrough: Sequence[str] = (),
    typed: bool = True,
    budget: tuple[int, int] | None = None,
) -> pl.LazyFrame:
    """Rules 5-9: one row per block, queries ascending, each query's blocks in rule 9's
    order (ranking score, descending; ties by group, then block: :func:`_rule9_order`).
    ``kept`` rows in any order; their ``c.T_RANK`` (a place in the whole ranking) orders
    them; their texts are ``texts``' rows ``c.T_ROW`` (the chunk store), or, without
    ``texts``, their own ``text`` (and offsets). With ``budget`` (``max_blocks``,
    ``max_characters``), rule 10 too: only the blocks it keeps, their texts cut where it
    cuts (nothing is written for the others).

    The ``passthrough`` columns come from each block's first chunk; ``entity_type``
    and ``entity_id`` from its group's first chunk, as they were in the input (rule 8).
    Without ``budget``, ``c.T_CHARS`` and ``c.T_TOTAL`` are what rule 10 reads
    (:func:`ragframe.postprocess._budget.budget`).
    """
    the = kernel_inputs(kept, texts, overlap, passthrough)
    dtype = pl.Struct({**the.fields, c.CHAR_COUNT: pl.Int64, c.TRUNCATED: pl.Boolean})
    kernel = _merge_kernel(
        max_gap, cap, the.by_offsets, the.first, typed, budget, texts is not None
    )
    out = the.rows.select(the.inputs.map_batches(kernel, return_dtype=dtype).alias(c.T_KERNEL))
    out = out.unnest(c.T_KERNEL)
    return out if budget is None else out.select(*c.BLOCK_COLUMNS, *passthrough)
