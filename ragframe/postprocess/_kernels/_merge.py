"""Rules 6-8, the block merge, as one compiled pass over every group: append each
chunk to the current block (its overlap removed, rule 7) while the gap and the size cap
allow, else start a new block; block statistics on the way."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe._arrow import string_addresses
from ragframe.postprocess._kernels._ahead import sample
from ragframe.postprocess._kernels._buffers import (
    PREFETCH_AHEAD,
    longest_text,
    prefetch_text,
    text_at,
)
from ragframe.postprocess._kernels._compile import (
    F64,
    I64,
    U8,
    ZERO,
    Bools,
    compiled,
    frozen,
    internal,
)
from ragframe.postprocess._kernels._overlap import offsets_cut, overlap_cut
from ragframe.postprocess._kernels._parts import in_parts
from ragframe.postprocess._kernels._text import code_points


@internal
def _copy(source: U8, target: U8) -> None:
    for i in range(len(source)):
        target[i] = source[i]


@compiled
def _merge(
    address: I64,
    length: I64,
    group_start: Bools,
    chunk_index: I64,
    sim: F64,
    rerank: F64,
    max_gap: int,
    cap: int,
    by_offsets: bool,
    start_char: F64,
    end_char: F64,
    part: tuple[int, int, int],
    out: U8,
    blocks: MergeBlocks,
) -> int:
    """Rules 6-8 for the groups of rows ``part[0]:part[1]``: rows in merge order,
    ``group_start`` marking each group's first row, ``rerank`` and the offsets NaN
    where null (offsets as floats: exact below 2**53, and one signature whether or not
    a chunk lacks them). Writes block texts into ``out`` from byte ``part[2]`` on and
    returns the byte after them.

    Sets in ``blocks``, per row: whether it starts a block, and on each block's first
    row its text's first byte in ``out`` and its length in bytes, its length in code
    points, end chunk index, max and sum of similarity, chunk count and max rerank
    score (NaN: none). Parts of disjoint groups may run at once.
    """
    starts, block_begin_at, block_bytes, block_chars, block_end, block_max = blocks[:6]
    block_sum, block_count, block_rerank = blocks[6:]
    lo, hi, used = part
    longest = longest_text(length)
    nxt = np.empty(longest, dtype=np.uint8)
    tail = np.empty(longest, dtype=np.uint8)
    fail = np.empty(longest, dtype=np.int64)
    b = -1  # the current block's first row
    block_begin = used  # the current block's first byte in out
    chars = 0  # the current block's length in code points
    char_end = 0.0  # float64, as the offsets: one signature of offsets_cut
    for r in range(lo, hi):
        prefetch_text(address, length, r + PREFETCH_AHEAD)
        data = text_at(address, length, r)
        t0, t1 = ZERO, len(data)
        append = False
        cut = t0  # where the appended text starts; -1: "\n" + the whole chunk
        skipped = 0
        extra = 0
        if not group_start[r] and b >= 0 and chunk_index[r] - block_end[b] <= max_gap:
            if by_offsets:
                cut, skipped = offsets_cut(data, t0, t1, start_char[r], end_char[r], char_end)
            elif used > block_begin and t1 > t0:
                cut, skipped = overlap_cut(out, block_begin, used, data, t0, t1, nxt, tail, fail)
            total = code_points(data, t0, t1)
            extra = total + 1 if cut < 0 else total - skipped
            append = chars + extra <= cap
        if append:
            if cut < 0:
                out[used] = 10
                used += 1
                cut = t0
            _copy(data[cut:t1], out[used:])
            used += t1 - cut
            chars += extra
            block_end[b] = chunk_index[r]
            char_end = max(char_end, end_char[r])
            if sim[r] > block_max[b]:
                block_max[b] = sim[r]
            block_sum[b] += sim[r]
            block_count[b] += 1
            top_rerank = block_rerank[b]
            if not np.isnan(rerank[r]) and (np.isnan(top_rerank) or rerank[r] > top_rerank):
                block_rerank[b] = rerank[r]
        else:
            if b >= 0:
                block_chars[b] = chars
                block_bytes[b] = used - block_begin
            starts[r] = True
            b = r
            block_begin = used
            block_begin_at[r] = used
            _copy(data, out[used:])
            used += t1
            chars = code_points(data, t0, t1)
            char_end = end_char[r]
            block_end[r] = chunk_index[r]
            block_max[r] = sim[r]
            block_sum[r] = sim[r]
            block_count[r] = 1
            block_rerank[r] = rerank[r]
    if b >= 0:
        block_chars[b] = chars
        block_bytes[b] = used - block_begin
    return used


MergeBlocks = tuple[Bools, I64, I64, I64, I64, F64, F64, I64, F64]


class MergeResult(NamedTuple):
    """What :func:`merge` gives: per row in merge order, set on each block's first row
    (``starts``), the block's text (``size`` bytes at ``begin`` in ``buffer``) and its
    statistics."""

    starts: Bools
    """Whether the row starts a block."""
    buffer: U8
    """The block texts, UTF-8 (parts leave gaps between them)."""
    begin: I64
    """The block text's first byte in ``buffer``."""
    size: I64
    """The block text's length in bytes."""
    chars: I64
    """The block text's length in code points."""
    end_chunk_index: I64
    max_similarity: F64
    sum_similarity: F64
    chunk_count: I64
    """Chunks merged into the block."""
    rerank: F64
    """The largest rerank score merged (NaN: none)."""


def merge(
    texts: pl.Series,
    order: I64,
    group_start: Bools,
    chunk_index: I64,
    sim: F64,
    rerank: F64,
    max_gap: int,
    cap: int,
    start_char: npt.NDArray[np.int64 | np.float64] | None = None,
    end_char: npt.NDArray[np.int64 | np.float64] | None = None,
) -> MergeResult:
    """Blocks of every group (see :func:`_merge`); offsets mode when offsets are given.
    ``texts`` in any row order, ``order`` their rows in merge order; the other arrays
    are in merge order.

    Returns the blocks as a :class:`MergeResult`. Inputs reach the kernel
    :func:`~._compile.frozen`, outputs fresh: one signature whatever the caller's arrays.
    """
    address, length, alive = string_addresses(texts)
    address, length = address[order], length[order]
    n = len(chunk_index)
    by_offsets = start_char is not None and end_char is not None
    zeros = np.zeros(n, dtype=np.int64)
    rows = (
        frozen(address, np.int64),
        frozen(length, np.int64),
        frozen(group_start, np.bool_),
        frozen(chunk_index, np.int64),
        frozen(sim, np.float64),
        frozen(rerank, np.float64),
    )
    offsets = (
        frozen(start_char if start_char is not None else zeros, np.float64),
        frozen(end_char if end_char is not None else zeros, np.float64),
    )
    # a block's text is at most its chunks' bytes and a newline per chunk
    room = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length + 1, out=room[1:])
    out = np.empty(int(room[-1]), dtype=np.uint8)
    blocks: MergeBlocks = (
        np.zeros(n, dtype=np.bool_),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.int64),
        np.full(n, np.nan, dtype=np.float64),
    )

    def run(part: tuple[int, int]) -> None:
        lo, hi = part
        _merge(
            *rows,
            int(max_gap),
            int(cap),
            by_offsets,
            *offsets,
            (lo, hi, int(room[lo])),
            out,
            blocks,
        )

    in_parts(run, np.flatnonzero(group_start), n)
    del alive  # the buffers ``address`` points into lived until here
    return MergeResult(blocks[0], out, *blocks[1:])


@sample("_merge")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    i64, f64, yes = np.zeros(1, dtype=np.int64), np.zeros(1), np.ones(1, dtype=np.bool_)
    merge(pl.Series(["a"]), i64, yes, i64, f64, f64, 1, 10)
