"""The bounded heap both top-k kernels keep a query's best chunks in (:mod:`._search`
for BM25, :mod:`._topk` for dense scores): at most ``len(scores)`` of them, a min-heap
whose root is the worst, ranked by a higher score, then a lower chunk row (SPEC 6).

A heap is two arrays, ``scores`` (float32) and ``rows`` (the chunk rows, int32 or
int64: each width compiles its own form), and the number of entries held, ``size``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._jit import decorators

F32 = npt.NDArray[np.float32]
Rows = npt.NDArray[np.int32] | npt.NDArray[np.int64]
Row = int | np.integer[Any]

helper = decorators(__file__)[1]


@helper
def better(s1: np.float32, r1: Row, s2: np.float32, r2: Row) -> bool:
    """Whether (score ``s1``, row ``r1``) ranks above (``s2``, ``r2``): a higher score,
    then a lower row."""
    return bool(s1 > s2 or (s1 == s2 and r1 < r2))


@helper
def sift_down(scores: F32, rows: Rows, size: int) -> None:
    """Restore the heap ``[:size]`` after its root was replaced."""
    i = 0
    while True:
        low, left = i, 2 * i + 1
        for c in (left, left + 1):
            if c < size and better(scores[low], rows[low], scores[c], rows[c]):
                low = c
        if low == i:
            return
        scores[i], scores[low] = scores[low], scores[i]
        rows[i], rows[low] = rows[low], rows[i]
        i = low


@helper
def push(scores: F32, rows: Rows, size: int, s: np.float32, r: Row) -> int:
    """Add (``s``, ``r``) to the heap of the ``size`` best, replacing the root when the
    heap is full and it ranks above the root; returns the new size."""
    if size < scores.shape[0]:
        i = size
        scores[i], rows[i] = s, r
        while i > 0:
            parent = (i - 1) // 2
            if not better(scores[parent], rows[parent], scores[i], rows[i]):
                break
            scores[i], scores[parent] = scores[parent], scores[i]
            rows[i], rows[parent] = rows[parent], rows[i]
            i = parent
        return size + 1
    if better(s, r, scores[0], rows[0]):
        scores[0], rows[0] = s, r
        sift_down(scores, rows, size)
    return size


@helper
def in_order(scores: F32, rows: Rows, size: int) -> None:
    """Empty the heap ``[:size]`` into best-first order, in place (a heap sort: the
    worst, the root, goes to the end each time)."""
    while size > 0:
        size -= 1
        scores[0], scores[size] = scores[size], scores[0]
        rows[0], rows[size] = rows[size], rows[0]
        sift_down(scores, rows, size)
