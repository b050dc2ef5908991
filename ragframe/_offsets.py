"""Whole-buffer kernel for ``overlap="offsets"`` merging (opt-in; SPEC 3's chunker).

When chunks carry character offsets into their document (``start_char``,
``end_char``, end exclusive), overlap removal needs no text matching: a chunk appends
only its characters beyond the block's last one (``end_char`` of the block, the
largest so far), nothing when the block already contains it, and the seed's "\\n"
separator followed by the whole chunk when the offsets leave a gap.

The block's last character is a running maximum that restarts with each block, and
blocks restart where the size cap says, which depends on those same appended lengths.
The kernel first takes the running maximum over the whole merge run, splits runs into
blocks with :func:`ragframe._blocks.block_starts`, and then checks, for every row,
that the maximum over its own block is the same; the few groups where a block restart
changed it (a chunk contained in one of the previous block) are redone exactly, one
row at a time, on integers only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from ragframe._blocks import GAP_OK, GROUP, RAW_LEN, START, Bools, Ints, array, block_starts

START_CHAR, END_CHAR, CUT = "start_char", "end_char", "cut"
OUTPUT_DTYPE = pl.Struct({START: pl.Boolean, CUT: pl.Int64})


def _max_before(segment: Ints, values: Ints) -> Ints:
    """Largest ``values`` over the earlier rows of the same (contiguous) segment, else -1."""
    if len(values) == 0:
        return values
    shifted = values - values.min() + 1  # >= 1
    span = int(shifted.max()) + 1
    running = np.maximum.accumulate(segment * span + shifted)
    before = np.concatenate(([-1], running[:-1])) - segment * span
    result: Ints = np.where(before >= 1, before - 1 + values.min(), -1)
    return result


def _cuts(start: Ints, end: Ints, raw_len: Ints, block_end: Ints) -> tuple[Ints, Ints]:
    """Where each chunk's appended text starts (-1: "\\n" + whole chunk) and its length."""
    contained = end <= block_end
    overlaps = ~contained & (start <= block_end)
    cut = np.where(contained, raw_len, np.where(overlaps, block_end - start, -1))
    app_len = np.where(cut < 0, raw_len + 1, np.maximum(raw_len - cut, 0))
    return cut, app_len


def _exact(
    first: Bools, gap_ok: Bools, start: Ints, end: Ints, raw_len: Ints, cap: int
) -> tuple[Bools, Ints]:
    """The sequential merge, on integers, for the few rows the vector pass cannot settle."""
    starts = np.zeros(len(first), dtype=bool)
    cuts = np.full(len(first), -1, dtype=np.int64)
    length = block_end = 0
    for i in range(len(first)):
        cut, app = _cuts(
            start[i : i + 1], end[i : i + 1], raw_len[i : i + 1], np.array([block_end])
        )
        if first[i] or not gap_ok[i] or length + int(app[0]) > cap:
            starts[i], length, block_end = True, int(raw_len[i]), int(end[i])
        else:
            cuts[i], length, block_end = (
                int(cut[0]),
                length + int(app[0]),
                max(block_end, int(end[i])),
            )
    return starts, cuts


def offsets_kernel(cap: int) -> Callable[[pl.Series], pl.Series]:
    """Return the kernel for ``Expr.map_batches`` over a struct of group, gap_ok,
    raw_len, start_char and end_char (rows sorted by group, then merge order).

    Output per row: ``start`` (opens a block) and ``cut`` (appended text is
    ``text[cut:]``, or "\\n" + text where -1).
    """

    def kernel(batch: pl.Series) -> pl.Series:
        if len(batch) == 0:
            return pl.Series(batch.name, [], dtype=OUTPUT_DTYPE)
        parts = batch.struct.unnest()
        group, gap_ok = array(parts, GROUP, np.int64), array(parts, GAP_OK, bool)
        raw_len = array(parts, RAW_LEN, np.int64)
        start, end = array(parts, START_CHAR, np.int64), array(parts, END_CHAR, np.int64)
        first = np.concatenate(([True], group[1:] != group[:-1]))
        run = np.cumsum(first | ~gap_ok) - 1
        run_end = _max_before(run, end)
        cut, app_len = _cuts(start, end, raw_len, run_end)
        starts = block_starts(first, gap_ok, raw_len, app_len, cap)
        block_end = _max_before(np.cumsum(starts) - 1, end)
        wrong = np.unique(group[~starts & (block_end != run_end)])
        rows = np.flatnonzero(np.isin(group, wrong))
        if len(rows):
            starts[rows], cut[rows] = _exact(
                first[rows], gap_ok[rows], start[rows], end[rows], raw_len[rows], cap
            )
        return pl.DataFrame({START: starts, CUT: cut}).to_struct(batch.name)

    return kernel
