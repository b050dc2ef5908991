"""Whole-buffer kernel that splits merge runs into blocks (SPEC 1, rule 6).

Why a kernel: a block closes when its text would grow past
``max_merged_block_characters``; where the next block starts depends on where the
previous one started, a running sum that resets. No Polars expression does that.
The kernel still works on whole arrays: for every chunk it finds, by one
``searchsorted`` over prefix sums, where a block started there would end; then it
follows those "next start" pointers for all runs at once, one array step per block
depth (a handful in practice).

The appended texts come in precomputed per adjacent pair (the previous chunk against
the next). That equals the seed's "block text against the next chunk" whenever the
block text ends with the previous chunk's normalized text and the next chunk cannot
overlap further back. The kernel checks that per step; a group where it cannot be
shown (adversarial text: empty or blank chunks inside a block, control characters,
a chunk containing its predecessor, whitespace at a seam) is merged exactly, one chunk
at a time, with the reference ``remove_overlap`` -- correctness first, and only those
groups pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe._text import remove_overlap

Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]

# fields of the kernel's input struct
GROUP, GAP_OK, RAW_LEN, APP_LEN, RISKY = "group", "gap_ok", "raw_len", "app_len", "risky"
APP_HEAD, APP_TAIL, RAW_TAIL, TEXT = "app_head_solid", "app_tail_ws", "raw_tail_ws", "text"
NOT_PLAIN = "not_plain"
START, APP = "start", "app"
OUTPUT_DTYPE = pl.Struct({START: pl.Boolean, APP: pl.String})


def _array(frame: pl.DataFrame, name: str, dtype: type[Any]) -> npt.NDArray[Any]:
    return frame[name].fill_null(False if dtype is bool else 0).to_numpy().astype(dtype)


def _block_starts(first: Bools, gap_ok: Bools, raw_len: Ints, app_len: Ints, cap: int) -> Bools:
    """Block starts when each run (consecutive mergeable chunks) is split by ``cap``."""
    n = len(first)
    run_start = first | ~gap_ok
    run_id = np.cumsum(run_start) - 1
    run_end = np.append(np.flatnonzero(run_start)[1:] - 1, n - 1)[run_id]
    prefix = np.cumsum(app_len)
    limit = cap - raw_len + prefix
    last = np.searchsorted(prefix, limit, side="right") - 1
    nxt = np.clip(last, np.arange(n), run_end) + 1
    starts = np.zeros(n, dtype=bool)
    frontier = np.flatnonzero(run_start)
    while len(frontier):
        starts[frontier] = True
        step = nxt[frontier]
        frontier = step[step <= run_end[frontier]]
    return starts


def _unsafe_groups(parts: pl.DataFrame, starts: Bools, first: Bools) -> Ints:
    """Groups where some step cannot be shown to equal the seed's sequential merge."""
    n = len(starts)
    idx = np.arange(n)
    gap_ok = _array(parts, GAP_OK, bool) & ~first
    raw_len, app_len = _array(parts, RAW_LEN, np.int64), _array(parts, APP_LEN, np.int64)
    contributes = np.where(starts, raw_len, app_len) > 0
    tail_ws = np.where(starts, _array(parts, RAW_TAIL, bool), _array(parts, APP_TAIL, bool))
    last_nonempty = np.maximum.accumulate(np.where(contributes, idx, -1))
    block_start = np.maximum.accumulate(np.where(starts, idx, -1))
    # block text before row j, i.e. before its appended text, ends with whitespace
    before = np.concatenate(([-1], last_nonempty[:-1]))
    seam = (before >= block_start) & tail_ws[np.maximum(before, 0)]
    seam &= _array(parts, APP_HEAD, bool)
    prev_continues = np.concatenate(([False], ~starts[:-1]))
    prev_seam = np.concatenate(([False], seam[:-1]))
    group = _array(parts, GROUP, np.int64)
    odd = np.bincount(group, weights=_array(parts, NOT_PLAIN, bool))[group] > 0
    unsafe = gap_ok & prev_continues & (_array(parts, RISKY, bool) | odd | prev_seam)
    groups: Ints = np.unique(group[unsafe])
    return groups


def _exact(texts: list[str], first: Bools, gap_ok: Bools, cap: int) -> tuple[Bools, list[str]]:
    """The seed's sequential merge for a few rows: block starts and appended texts."""
    starts = np.zeros(len(texts), dtype=bool)
    apps: list[str] = []
    block = ""
    for i, text in enumerate(texts):
        app = remove_overlap(block, text) if gap_ok[i] and not first[i] else text
        if first[i] or not gap_ok[i] or len(block) + len(app) > cap:
            starts[i], block = True, text
            apps.append(text)
        else:
            block += app
            apps.append(app)
    return starts, apps


def block_kernel(cap: int) -> Callable[[pl.Series], pl.Series]:
    """Return the kernel for ``Expr.map_batches`` over the struct fields named above.

    Rows must be sorted by group, then merge order. Output per row: ``start`` (the
    row opens a block) and ``app`` (its appended text where it differs from the
    precomputed pairwise one, else null).
    """

    def kernel(batch: pl.Series) -> pl.Series:
        parts = batch.struct.unnest()
        group = _array(parts, GROUP, np.int64)
        first = np.concatenate(([True], group[1:] != group[:-1])) if len(group) else group > 0
        gap_ok = _array(parts, GAP_OK, bool)
        starts = _block_starts(
            first, gap_ok, _array(parts, RAW_LEN, np.int64), _array(parts, APP_LEN, np.int64), cap
        )
        apps: list[str | None] = [None] * len(group)
        rows = np.flatnonzero(np.isin(group, _unsafe_groups(parts, starts, first)))
        if len(rows):
            exact_starts, exact_apps = _exact(
                parts[TEXT].gather(rows).fill_null("").to_list(), first[rows], gap_ok[rows], cap
            )
            starts[rows] = exact_starts
            for row, app in zip(rows.tolist(), exact_apps, strict=True):
                apps[row] = app
        return pl.DataFrame({START: starts, APP: pl.Series(apps, dtype=pl.String)}).to_struct(
            batch.name
        )

    return kernel
