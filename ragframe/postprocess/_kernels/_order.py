"""A stable sort within segments of rows (each query's), by integer key columns:
rule 5's merge order and rule 9's block order."""

from __future__ import annotations

import numpy as np

from ragframe.postprocess._kernels._ahead import sample
from ragframe.postprocess._kernels._compile import I64, Bools, compiled, frozen, internal


@internal
def _before(keys: I64, a: int, b: int) -> bool:
    """Whether row ``a`` of ``keys`` (one row of columns per row) sorts before row ``b``."""
    for k in range(keys.shape[1]):
        if keys[a, k] != keys[b, k]:
            return bool(keys[a, k] < keys[b, k])
    return False


@internal
def _merge_sorted(rows: I64, keys: I64, scratch: I64) -> None:
    """Sort ``rows`` by their ``keys`` rows, stably, in place: a bottom-up merge sort
    over runs of 16 insertion-sorted rows (``scratch`` as long as ``rows``). Written
    out rather than numpy's stable argsort, whose compiled form takes seconds to build
    on first use."""
    n = len(rows)
    for lo in range(0, n, 16):
        hi = min(lo + 16, n)
        for i in range(lo + 1, hi):
            row = rows[i]
            j = i
            while j > lo and _before(keys, row, rows[j - 1]):
                rows[j] = rows[j - 1]
                j -= 1
            rows[j] = row
    width = 16
    source, target = rows, scratch
    swapped = False
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(keys, source[j], source[i]):  # ties: the left run first
                    target[k] = source[j]
                    j += 1
                else:
                    target[k] = source[i]
                    i += 1
                k += 1
            while i < mid:
                target[k] = source[i]
                i += 1
                k += 1
            while j < hi:
                target[k] = source[j]
                j += 1
                k += 1
        source, target = target, source
        swapped = not swapped
        width *= 2
    if swapped:  # the sorted rows are in ``scratch``
        for i in range(n):
            rows[i] = scratch[i]


def ordered_in_segments(starts: Bools, keys: I64) -> I64:
    """The rows ordered by the columns of ``keys`` (``keys[row]``, compared in column
    order; ascending, stable) within each segment of rows (``starts`` marks their first
    rows); segments stay where they are.

    Example:
        >>> import numpy as np
        >>> starts = np.array([True, False, True])
        >>> ordered_in_segments(starts, np.array([[2], [1], [0]])).tolist()
        [1, 0, 2]
    """
    return _ordered_in_segments(frozen(starts, np.bool_), frozen(keys, np.int64))


@compiled
def _ordered_in_segments(starts: Bools, keys: I64) -> I64:
    """:func:`ordered_in_segments` on its inputs as one numba type."""
    n = len(starts)
    order = np.arange(n)
    scratch = np.empty(n, dtype=np.int64)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and not starts[hi]:
            hi += 1
        _merge_sorted(order[lo:hi], keys, scratch[lo:hi])
        lo = hi
    return order


@sample("_ordered_in_segments")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    ordered_in_segments(np.ones(1, dtype=np.bool_), np.zeros((1, 1), dtype=np.int64))
