"""The dense top-k kernel: each query's best chunks from a block of scores, merged into
the best found in earlier blocks, ties to the lower chunk row.

Why a kernel: numpy's ``argpartition`` picks the top k of each row but breaks ties
arbitrarily and moves every score; a chunk is kept here only when it beats the k-th
best so far (one comparison for nearly every score), in one pass over the block, and
ties go to the lower row as SPEC 6 says, because blocks come in row order and an equal
score never displaces an earlier chunk.

A query's best are a heap of :mod:`._heap` (its root the worst of them):
``heap_scores[q]``, ``heap_rows[q]``, ``sizes[q]`` of them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._heap import in_order, push
from ragframe.retrieve._kernels._jit import decorators

I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

kernel = decorators(__file__)[0]


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
                size = push(scores, rows, size, s, np.int64(first_row + j))
        sizes[q] = size


@kernel
def ordered(heap_scores: F32, heap_rows: I64, sizes: I64) -> None:
    """Each query's heap emptied into best-first order, in place."""
    for q in range(sizes.shape[0]):
        in_order(heap_scores[q], heap_rows[q], sizes[q])
