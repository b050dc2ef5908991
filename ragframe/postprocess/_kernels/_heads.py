"""Each query's head in one compiled pass, for input grouped by query with integer ids
ascending and scores presorted (as retrieval output nearly always is): the rows, whether
each is its query's first, and whether its query has more (:func:`sorted_heads`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragframe._kernels._ahead import sample
from ragframe._kernels._compile import F64, I64, Bools, compiled, frozen


@compiled
def _sorted_heads(
    query: I64, score: F64, offset: int, width: int, state: I64, last: F64,
    out: tuple[I64, Bools, Bools],
) -> bool:  # fmt: skip
    """Each query's first ``width`` rows (into ``out``: the rows, whether each is its
    query's first, whether its query has more than ``width`` rows), in one pass, for
    rows grouped by query, ids ascending and each query's scores never increasing
    (ties in input order: the ranking's order is the rows' own). Over one piece of the
    rows, the rows ``offset`` on, continuing the pieces before it: ``state`` holds the
    current query's first row, its first row in ``out``, how many rows ``out`` holds
    and the previous id, ``last[0]`` the previous score. Returns whether the rows are
    so (else ``out`` means nothing)."""
    at, first, more = out
    run_first, run_written, written, previous = state[0], state[1], state[2], state[3]
    before = last[0]
    for i in range(len(query)):
        row = offset + i
        q = query[i]
        if row == 0 or q != previous:
            if row > 0 and q < previous:
                return False
            run_first, run_written = row, written
        elif score[i] > before:
            return False
        position = row - run_first
        if position < width:
            at[written] = row
            first[written] = position == 0
            more[written] = False
            written += 1
        elif position == width:  # the query has more than width rows
            for j in range(run_written, written):
                more[j] = True
        previous, before = q, score[i]
    state[0], state[1], state[2], state[3] = run_first, run_written, written, previous
    last[0] = before
    return True


def sorted_heads(
    query: Sequence[I64], score: Sequence[F64], width: int
) -> tuple[I64, Bools, Bools] | None:
    """:func:`_sorted_heads` over the rows given in pieces (``query[k]`` and
    ``score[k]`` of equal lengths: a column's chunks, read in place) (None: the rows
    are not so). A row's place in the whole ranking is then the row itself."""
    n = sum(len(piece) for piece in query)
    out = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.bool_), np.empty(n, dtype=np.bool_))
    state, last = np.zeros(4, dtype=np.int64), np.zeros(1, dtype=np.float64)
    offset = 0
    for ids, scores in zip(query, score, strict=True):  # a few chunks
        ids, scores = frozen(ids, np.int64), frozen(scores, np.float64)
        if not _sorted_heads(ids, scores, offset, int(width), state, last, out):
            return None
        offset += len(ids)
    written = int(state[2])
    return out[0][:written], out[1][:written], out[2][:written]


@sample("_sorted_heads")
def _sample_heads() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    sorted_heads([np.zeros(1, dtype=np.int64)], [np.zeros(1)], 1)
