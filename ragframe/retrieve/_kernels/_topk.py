"""The dense top-k kernel: each query's best chunks from a block of scores, merged into
the best found in earlier blocks, ties to the lower chunk row.

Why a kernel: numpy's ``argpartition`` picks the top k of each row but breaks ties
arbitrarily and moves every score; a chunk is kept here only when it beats the k-th
best so far (one comparison for nearly every score), in one pass over the block, and
ties go to the lower row as SPEC 6 says, because blocks come in row order and an equal
score never displaces an earlier chunk.

A query's best are a min-heap (its root the worst of them): ``heap_scores[q]``,
``heap_rows[q]``, ``sizes[q]`` of them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._jit import decorators

I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

kernel, helper = decorators(__file__)


@helper
def _better(s1: np.float32, r1: np.int64, s2: np.float32, r2: np.int64) -> bool:
    """Whether (score ``s1``, row ``r1``) ranks above (``s2``, ``r2``)."""
    return bool(s1 > s2 or (s1 == s2 and r1 < r2))


@helper
def _sift_down(scores: F32, rows: I64, size: int) -> None:
    i = 0
    while True:
        low, left = i, 2 * i + 1
        if left < size and _better(scores[low], rows[low], scores[left], rows[left]):
            low = left
        right = left + 1
        if right < size and _better(scores[low], rows[low], scores[right], rows[right]):
            low = right
        if low == i:
            return
        scores[i], scores[low] = scores[low], scores[i]
        rows[i], rows[low] = rows[low], rows[i]
        i = low


@helper
def _push(scores: F32, rows: I64, size: int, s: np.float32, r: np.int64) -> int:
    if size < scores.shape[0]:
        i = size
        scores[i], rows[i] = s, r
        while i > 0:
            parent = (i - 1) // 2
            if not _better(scores[parent], rows[parent], scores[i], rows[i]):
                break
            scores[i], scores[parent] = scores[parent], scores[i]
            rows[i], rows[parent] = rows[parent], rows[i]
            i = parent
        return size + 1
    if s > scores[0]:  # an equal score is a later row: it never wins
        scores[0], rows[0] = s, r
        _sift_down(scores, rows, size)
    return size


@kernel
def merge_block(
    block: F32, first_row: int, lo: int, hi: int, heap_scores: F32, heap_rows: I64, sizes: I64
) -> None:
    """Merge the scores ``block[q - lo]`` of chunks ``first_row ..`` (rows of the block,
    queries ``lo .. hi-1``) into each query's best. NaN scores are never kept."""
    width = block.shape[1]
    for q in range(lo, hi):
        scores, rows = heap_scores[q], heap_rows[q]
        size = sizes[q]
        k = scores.shape[0]
        line = block[q - lo]
        for j in range(width):
            s = line[j]
            if size == k and not s > scores[0]:
                continue
            if s == s:
                size = _push(scores, rows, size, s, np.int64(first_row + j))
        sizes[q] = size


@kernel
def ordered(heap_scores: F32, heap_rows: I64, sizes: I64) -> None:
    """Each query's heap emptied into best-first order, in place."""
    for q in range(sizes.shape[0]):
        scores, rows = heap_scores[q], heap_rows[q]
        size = sizes[q]
        while size > 0:
            size -= 1
            s, r = scores[0], rows[0]
            scores[0], rows[0] = scores[size], rows[size]
            _sift_down(scores, rows, size)
            scores[size], rows[size] = s, r
