"""Rules 5-9 with rule 6's block cap in tokens (SPEC 1, "Budgets in tokens").

Whether a chunk joins its block depends on the token count of the merged text, which
is not the sum of the pieces' counts (BPE merges across the seam), so the merge is
sequential within a group. It runs in rounds over every group at once: round ``j``
appends the ``j``-th chunk of each group to that group's current block, all the
appends of the round are counted in one batch call of the tokenizer, and each append
is kept when its count is within ``max_block_tokens`` (else the chunk starts a new
block). Rounds: at most the chunks of the largest group, less one.

No count is skipped on a bound: a BPE count is neither monotone in the text nor
additive, so every merged text is counted as it is, and a block's count is its own
text's. A block of one chunk is not counted here (no decision needs it): rule 10
counts those it reaches (:mod:`._token_budget`).

The text of each append is the character merge's own: the compiled merge
(:func:`ragframe.postprocess._kernels._merge.merge`) run on pairs (the block's text,
the chunk) with no character cap, its pairs' texts then written
(:func:`~ragframe.postprocess._kernels._pieces.write_blocks`), gives ``block +
remove_overlap(block, chunk)`` (rule 7), or the offsets mode's append, byte for byte as
the character mode builds it. Rule 5's order and rule 9's come from :mod:`._merge` as
well, and each candidate's text from its text source as the character merge reads it
(:mod:`._texts`: the input's own text, or the chunk store's row ``c.T_ROW``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._arrow import consecutive_strings, int64_lists, string_addresses
from ragframe._kernels._compile import F64, I64, Bools, frozen
from ragframe._validate import MAX_COUNT
from ragframe.postprocess import _merge as _char_merge
from ragframe.postprocess import _token_budget
from ragframe.postprocess._budget import within_budget
from ragframe.postprocess._kernels._merge import NotCounted, merge
from ragframe.postprocess._kernels._pieces import Texts, runs_of, write_blocks
from ragframe.postprocess._merge import (
    MergeOrder,
    _block_groups,
    _rule9_order,
    kernel_inputs,
    merge_order,
)
from ragframe.postprocess._texts import row_texts, split
from ragframe.tokens import _bpe
from ragframe.tokens._counters import TokenCounter, count_texts
from ragframe.tokens._kernels._count import ascii_texts

Offsets = tuple[I64, I64]
"""``start_char`` and ``end_char`` of every row (input order)."""


class Assignment(NamedTuple):
    """Which rows start a block, and each block's text and count after each row (merge
    order); a block's own are those after its last row."""

    starts: Bools
    text: I64
    """The block's text after the row: its place in ``pool``."""
    tokens: I64
    """The block's token count after the row (-1: one chunk, not counted)."""
    pool: pl.Series
    """The input texts (input order), then the kept appends of each round."""


def appended(
    pool: pl.Series, block: I64, chunk: I64, ends: tuple[I64, I64, I64] | None
) -> pl.Series:
    """Each block text (``pool[block[i]]``) with its chunk's text (``pool[chunk[i]]``)
    appended as rule 6 appends it: overlap removed by text (rule 7), or, with ``ends``
    (the block's last character, the chunk's start and end), by offsets."""
    k = len(block)
    order = np.empty(2 * k, dtype=np.int64)
    order[0::2], order[1::2] = block, chunk
    first = np.zeros(2 * k, dtype=np.bool_)
    first[0::2] = True
    offsets: tuple[I64 | None, I64 | None] = (None, None)
    if ends is not None:
        start, end = np.zeros(2 * k, dtype=np.int64), np.zeros(2 * k, dtype=np.int64)
        end[0::2], start[1::2], end[1::2] = ends
        offsets = (start, end)
    address, length, alive = string_addresses(pool)
    address, length = address[order], length[order]
    pairs = merge(
        address,
        length,
        first,
        np.tile(np.array([0, 1], dtype=np.int64), k),
        np.zeros(2 * k),
        np.full(2 * k, np.nan),
        1,
        MAX_COUNT,
        *offsets,
    )
    if not (pairs.starts[0::2].all() and not pairs.starts[1::2].any()):
        raise RuntimeError("internal error: a pair did not merge in the token merge")
    heads = np.arange(0, 2 * k, 2, dtype=np.int64)
    size = pairs.size[heads]
    data, begin = write_blocks(
        address, length, pairs.piece, Texts(heads, heads + 2, np.zeros_like(size), size)
    )
    del alive  # the buffers the addresses point into lived until here
    return consecutive_strings(data, begin)


def assign(
    texts: pl.Series,
    rows: MergeOrder,
    offsets: Offsets | None,
    max_gap: int,
    cap: int,
    counter: TokenCounter,
) -> Assignment:
    """Rule 6 with the cap in tokens, in rounds over every group (module docstring).
    ``texts`` in input order, no nulls; ``rows`` their merge order."""
    order, index = rows.order, rows.chunk_index
    first = np.flatnonzero(rows.group_start)
    sizes = np.diff(np.append(first, len(order)))
    starts = rows.group_start.copy()
    text = order.copy()  # a row that starts a block: its own text
    tokens = np.full(len(order), -1, dtype=np.int64)
    char_end = offsets[1][order] if offsets is not None else None
    pool, size = [texts], len(texts)
    for j in range(1, int(sizes.max(initial=1))):  # rounds, never rows
        row = first[sizes > j] + j
        close = index[row] - index[row - 1] <= max_gap
        near = row[close]
        starts[row[~close]] = True  # past the gap: a new block, nothing to count
        if not len(near):
            continue
        ends = None
        if offsets is not None and char_end is not None:
            ends = (char_end[near - 1], offsets[0][order[near]], offsets[1][order[near]])
        merged = appended(pl.concat(pool, rechunk=False), text[near - 1], order[near], ends)
        counts = count_texts(counter, merged)  # one batch per round
        fits = counts <= cap
        joined = near[fits]
        starts[near[~fits]] = True
        text[joined] = size + np.arange(len(joined))
        tokens[joined] = counts[fits]
        if char_end is not None:
            char_end[joined] = np.maximum(char_end[joined - 1], char_end[joined])
        pool.append(merged.filter(pl.Series(fits)))
        size += len(joined)
    return Assignment(starts, text, tokens, pl.concat(pool, rechunk=False))


def _sums(values: F64, firsts: I64, lengths: I64) -> F64:
    """Each block's sum of ``values``, added in row order (as the character merge adds)."""
    total = values[firsts].copy()
    for k in range(1, int(lengths.max(initial=1))):  # positions in a block, never rows
        more = lengths > k
        total[more] += values[firsts[more] + k]
    return total


def _frame(
    parts: pl.DataFrame, rows: MergeOrder, blocks: Assignment, first: dict[str, str], typed: bool
) -> pl.DataFrame:
    """One row per block in rule 9's order, with the character merge's columns and the
    block's token count (null: one chunk, not counted)."""
    order, n = rows.order, len(rows.order)
    firsts = np.flatnonzero(blocks.starts)
    lengths = np.diff(np.append(firsts, n))
    lasts = firsts + lengths - 1
    sim = parts[c.T_SIM].to_numpy()[order]
    rerank = parts[c.RERANK_SCORE].cast(pl.Float64).to_numpy()[order]  # null: NaN
    top = np.maximum.reduceat(sim, firsts) if n else sim
    top_rerank = np.fmax.reduceat(rerank, firsts) if n else rerank  # NaN only if all are
    score = np.where(np.isnan(top_rerank), top, top_rerank)
    texts = blocks.pool.gather(blocks.text[lasts])
    chars = texts.str.len_chars().cast(pl.Int64).to_numpy()
    group = _block_groups(rows.group_start, firsts)
    ties = (rows.rank[group], rows.chunk_index[group], rows.entity[firsts]) if typed else None
    ranked, block_rank, running = _rule9_order(rows.query_start[firsts], score, chars, ties)
    heads, group_heads = pl.Series(order[firsts[ranked]]), pl.Series(order[group[ranked]])
    count = lengths[ranked]
    tokens = blocks.tokens[lasts[ranked]]
    return pl.DataFrame(
        {
            **{name: parts[name].gather(group_heads) for name in (c.ENTITY_TYPE, c.ENTITY_ID)},
            **{name: parts[column].gather(heads) for column, name in first.items()},
            c.END_CHUNK_INDEX: rows.chunk_index[lasts[ranked]],
            c.TEXT: texts.gather(pl.Series(ranked)),
            c.T_CHARS: chars[ranked],
            c.MAX_SIMILARITY: top[ranked],
            c.AVG_SIMILARITY: _sums(sim, firsts, lengths)[ranked] / count,
            c.SOURCE_CHUNK_COUNT: count,
            c.RERANK_SCORE: pl.Series(top_rerank[ranked], dtype=pl.Float64).fill_nan(None),
            c.RANKING_SCORE: score[ranked],
            c.CHUNK_INDEXES: int64_lists(count, runs_of(rows.chunk_index, firsts[ranked], count)),
            c.BLOCK_RANK: block_rank,
            c.T_TOTAL: running,
            c.T_TOKENS: pl.Series(tokens, dtype=pl.Int64).replace(-1, None),
        }
    )


def _row_text(parts: pl.DataFrame, in_source: bool) -> pl.Series:
    """Each row's text (null: ""), from the row itself or, for a :func:`stacked` batch,
    from its text source's row ``c.T_ROW`` (-1: none, "")."""
    if not in_source:
        return parts[c.TEXT].fill_null("")
    rows, source = split(parts)
    row = rows[c.T_ROW].to_numpy()
    if not len(source):
        return pl.Series(c.TEXT, [""] * len(row), dtype=pl.String)
    text = source[c.TEXT].gather(pl.Series(np.where(row >= 0, row, 0))).fill_null("")
    none = np.flatnonzero(row < 0)
    return text.scatter(none, "") if len(none) else text


def _kernel(
    max_gap: int,
    cap: int,
    counter: TokenCounter,
    by_offsets: bool,
    first: dict[str, str],
    typed: bool,
    in_source: bool,
    budget: Any = None,
    passthrough: Sequence[str] = (),
) -> Callable[[pl.Series], pl.Series]:
    """The token merge over whole columns (rows in any order), as the character merge's
    kernel gives its blocks (:func:`ragframe.postprocess._merge.blocks`); ``in_source``:
    the batch is :func:`stacked`, texts in the text source after the rows. With
    ``budget`` (the config), the budgeted blocks (:func:`_token_budget.budget`)."""

    vocab = _bpe.kernel_vocab(counter)

    def in_rounds(whole: pl.DataFrame, found: Any) -> pl.DataFrame:
        parts, offsets = found.rows, found.offsets
        del found  # only the offsets and the rows are read here: the texts by value
        rows = merge_order(parts, typed)
        texts = _row_text(whole, in_source)
        blocks = assign(texts, rows, offsets, max_gap, cap, counter)
        frame = _frame(parts, rows, blocks, first, typed)
        if budget is not None:
            frame = _token_budget.budget(frame.lazy(), budget, list(passthrough)).collect()
        return frame

    def compiled(found: Any) -> pl.DataFrame:
        assert vocab is not None
        return _compiled(found, cap, vocab, max_gap, first, typed, budget, passthrough)

    def kernel(batch: pl.Series) -> pl.Series:
        whole = batch.struct.unnest()
        found = row_texts(whole, in_source, by_offsets)
        if vocab is None:
            return in_rounds(whole, found).to_struct(batch.name)
        try:
            return compiled(found).to_struct(batch.name)
        except NotCounted:  # a text not ASCII: its queries in rounds, tiktoken counting
            pass
        rows, source = split(whole) if in_source else (whole, whole.clear())
        plain = ascii_rows(found)
        del found
        others = rows[c.QUERY_ID].is_in(rows[c.QUERY_ID].filter(pl.Series(~plain)).unique())
        out = []
        for keep, fast in ((~others, True), (others, False)):
            part = pl.concat([rows.filter(keep), source]) if in_source else rows.filter(keep)
            if not keep.any():
                continue
            texts = row_texts(part, in_source, by_offsets)
            if fast:
                with contextlib.suppress(NotCounted):  # ASCII, a piece too long: rounds too
                    out.append(compiled(texts))
                    continue
            out.append(in_rounds(part, texts))
        frame = pl.concat(out).sort(c.QUERY_ID, c.BLOCK_RANK, maintain_order=True)
        return frame.to_struct(batch.name)

    return kernel


def ascii_rows(found: Any) -> Bools:
    """Whether each row's text (:func:`row_texts`) is ASCII."""
    out = np.zeros(len(found.address), dtype=np.bool_)
    ascii_texts(frozen(found.address, np.int64), frozen(found.length, np.int64), out)
    return out


def _budgeted(
    frame: pl.DataFrame, tokens: I64, config: Any, passthrough: Sequence[str]
) -> pl.DataFrame:
    """The blocks of :func:`_compiled` that rule 10 in tokens keeps, each with its count
    (``tokens``), given the token budget's output columns; a query's first block cut
    where it is over (:func:`_token_budget._truncate`)."""
    over = np.flatnonzero(tokens > config.max_tokens)
    text, chars = frame[c.TEXT], frame[c.T_CHARS].to_numpy().copy()
    if len(over):
        cut, counts = _token_budget._truncate(text.gather(over), config.counter, config.max_tokens)
        text = text.scatter(over, cut)
        tokens = tokens.copy()
        tokens[over] = counts
        chars[over] = cut.str.len_chars().cast(pl.Int64).to_numpy()
    truncated = np.zeros(len(tokens), dtype=np.bool_)
    truncated[over] = True
    return frame.with_columns(
        text.alias(c.TEXT),
        pl.Series(c.TRUNCATED, truncated),
        pl.Series(c.TOKEN_COUNT, tokens, dtype=pl.Int64),
        pl.Series(c.CHAR_COUNT, chars, dtype=pl.Int64),
    ).select(*c.TOKEN_BLOCK_COLUMNS, *passthrough)


def _compiled(
    found: Any, cap: int, vocab: _bpe.Counting, max_gap: int, first: dict[str, str], typed: bool,
    budget: Any = None, passthrough: Sequence[str] = (),
) -> pl.DataFrame:  # fmt: skip
    """The blocks :func:`assign` and :func:`_frame` give, by the character merge's kernel
    merging in tokens (every text ASCII: the counts are the kernel's own, exactly
    tiktoken's), each block counted once, incrementally: one pass, no rounds. With
    ``budget`` (the config), rule 10 too, before any text is written: only the texts
    of the blocks it keeps are."""
    parts = found.rows
    rows_in, texts, n = _char_merge.in_merge_order(found, typed)
    m = merge(
        *texts, rows_in.group_start, rows_in.chunk_index, n.sim, n.rerank, max_gap, MAX_COUNT,
        n.start_char, n.end_char, tokens=(cap, *vocab),
    )  # fmt: skip
    ordered = _char_merge._ordered(rows_in, m, typed)
    tokens = m.tokens[ordered.rows]
    if budget is not None:  # the blocks past the budget: no text
        rank = ordered.block_rank
        running = _char_merge.running_totals(tokens, np.arange(len(tokens)) - rank)  # per query
        keep = within_budget(rank, running, budget.max_blocks, budget.max_tokens)
        ordered, tokens = _char_merge._kept(ordered, keep), tokens[keep]
    written = _char_merge._texts(texts, m, ordered, None)
    frame = _char_merge._frame(parts, rows_in, m, ordered, written, first)
    del found  # the buffers the addresses point into lived until here
    if budget is not None:
        return _budgeted(frame, tokens, budget, passthrough)
    return frame.drop(c.CHAR_COUNT, c.TRUNCATED).with_columns(
        pl.Series(c.T_TOKENS, tokens, dtype=pl.Int64)
    )


def blocks(
    kept: pl.LazyFrame,
    texts: pl.LazyFrame | None,
    max_gap: int,
    cap: int,
    counter: TokenCounter,
    overlap: str = "text",
    passthrough: Sequence[str] = (),
    typed: bool = True,
    budget: Any = None,
) -> pl.LazyFrame:
    """Rules 5-9 with the block cap ``cap`` in tokens: the character merge's blocks
    (:func:`ragframe.postprocess._merge.blocks`, same columns and order) plus
    ``c.T_TOKENS``, each block's token count where the merge counted it. With
    ``budget`` (a :class:`PostprocessConfig`), rule 10 in tokens too: the output's
    columns (:func:`ragframe.postprocess._token_budget.budget`'s). Texts as the
    character merge reads them: ``texts``' rows ``c.T_ROW`` (the chunk store), or,
    without ``texts``, the rows' own ``text`` (and offsets)."""
    the = kernel_inputs(kept, texts, overlap, passthrough)
    fields: dict[str, Any] = {**the.fields, c.T_TOKENS: pl.Int64}
    if budget is not None:
        fields.update({c.CHAR_COUNT: pl.Int64, c.TRUNCATED: pl.Boolean, c.TOKEN_COUNT: pl.Int64})
        fields = {name: fields[name] for name in (*c.TOKEN_BLOCK_COLUMNS, *passthrough)}
    in_source = texts is not None
    run = _kernel(
        max_gap, cap, counter, the.by_offsets, the.first, typed, in_source, budget, passthrough
    )
    kernel = the.inputs.map_batches(run, return_dtype=pl.Struct(fields))
    return the.rows.select(kernel.alias(c.T_KERNEL)).unnest(c.T_KERNEL)
