"""A stable sort within segments of rows (each query's), by integer key columns:
rule 5's merge order and rule 9's block order."""

from __future__ import annotations

import numpy as np

from ragframe.postprocess._kernels._compile import I64, Bools, compiled, inline


@inline
def _before(keys: I64, a: int, b: int) -> bool:
    """Whether row ``a`` of ``keys`` (one row of columns per row) sorts before row ``b``."""
    for k in range(keys.shape[1]):
        if keys[a, k] != keys[b, k]:
            return bool(keys[a, k] < keys[b, k])
    return False


@compiled
def ordered_in_segments(starts: Bools, keys: I64) -> I64:
    """The rows ordered by the columns of ``keys`` (``keys[row]``, compared in column
    order; ascending, stable) within each segment of rows (``starts`` marks their first
    rows); segments stay where they are. A short segment is insertion-sorted; a long
    one takes one stable sort per column, the last column first."""
    n = len(starts)
    order = np.arange(n)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and not starts[hi]:
            hi += 1
        if hi - lo > 16:
            rows = order[lo:hi].copy()
            for k in range(keys.shape[1] - 1, -1, -1):
                rows = rows[np.argsort(keys[rows, k], kind="mergesort")]
            order[lo:hi] = rows
        else:
            for i in range(lo + 1, hi):
                row = order[i]
                j = i
                while j > lo and _before(keys, row, order[j - 1]):
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = row
        lo = hi
    return order
