"""A stable sort within segments of rows (each query's), by integer key columns:
rules 2 and 5 (ranking and merge order) and rule 9's block order; and rows grouped by a
dense code (each query's rows together) in one counting pass."""

from __future__ import annotations

import numpy as np

from ragframe._kernels._ahead import sample
from ragframe._kernels._compile import F64, I64, Bools, compiled, frozen, internal


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


def descending_key(values: F64) -> I64:
    """Integers in the descending order of finite ``values`` (the first is the largest),
    -0.0 tying with 0.0 (the bits of a double, negatives' magnitude bits flipped), so a
    compiled integer sort orders them. Not compiled: whole-array numpy."""
    bits = (0.0 - values).view(np.int64)  # 0.0 - 0.0 and 0.0 - -0.0 are both 0.0
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


SPAN_PER_ROW = 16
""":func:`rank_order` places distinct ranks by one scatter when their span is at most
this many slots a row."""


def rank_order(rank: I64) -> I64:
    """The rows in ascending ``rank`` order, stably (numpy's stable argsort). Distinct
    ranks within a span of :data:`SPAN_PER_ROW` slots a row (places in a ranking, as
    the walk and the merge order read them: on the benchmark's data the walk reaches
    about a sixth of a query's places) are placed by one scatter into a table of the
    span, linear: 1M shuffled places take 29 ms against the argsort's 118 ms, the walk's
    150k rows of a 1M-row shuffled input 2.5 ms against 14 ms. Rows already in order
    (presorted input) are checked in one pass and not moved. Not compiled: numpy.

    Example:
        >>> import numpy as np
        >>> rank_order(np.array([5, 2, 9, 3])).tolist(), rank_order(np.array([1, 0, 1])).tolist()
        ([1, 3, 0, 2], [1, 0, 2])
    """
    n = len(rank)
    if n < 2 or bool((rank[1:] > rank[:-1]).all()):  # in order already (presorted input)
        return np.arange(n, dtype=np.int64)
    low = int(rank.min())
    span = int(rank.max()) - low + 1
    if span <= SPAN_PER_ROW * n:
        slot = np.full(span, -1, dtype=np.int64)
        slot[rank - low] = np.arange(n, dtype=np.int64)
        order = slot[slot >= 0]
        if len(order) == n:  # distinct: no row overwrote another
            return order
    return np.argsort(rank, kind="stable")


def grouped_by(code: I64, count: int) -> I64:
    """The rows ordered by ``code`` (each in ``range(count)``), stably: a counting sort,
    two linear passes.

    Example:
        >>> import numpy as np
        >>> grouped_by(np.array([1, 0, 1, 0]), 2).tolist()
        [1, 3, 0, 2]
    """
    return _grouped_by(frozen(code, np.int64), int(count))


@compiled
def _grouped_by(code: I64, count: int) -> I64:
    """:func:`grouped_by` on its inputs as one numba type."""
    first = np.zeros(count + 1, dtype=np.int64)
    for c in code:
        first[c + 1] += 1
    for k in range(count):
        first[k + 1] += first[k]
    order = np.empty(len(code), dtype=np.int64)
    for row in range(len(code)):
        order[first[code[row]]] = row
        first[code[row]] += 1
    return order


@internal
def _row(order: I64, i: int) -> int:
    """The ``i``-th row of ``order``, or ``i`` itself when ``order`` is empty."""
    return i if len(order) == 0 else order[i]


@internal
def _head(order: I64, lo: int, hi: int, key: I64, keep: int, best: I64, best_row: I64) -> int:
    """The first ``keep`` of the rows ``lo:hi`` of ``order`` (in input order) by ``key``
    ascending, ties in input order, into ``best_row`` (``best``: their keys): one pass,
    each row compared with the last kept one, inserted only when it beats it. Returns
    how many."""
    filled = 0
    for i in range(lo, hi):
        row = _row(order, i)
        value = key[row]
        if filled == keep:
            if value >= best[keep - 1]:  # a tie loses: the kept one came first
                continue
            j = keep - 1
        else:
            j = filled
            filled += 1
        while j > 0 and best[j - 1] > value:
            best[j], best_row[j] = best[j - 1], best_row[j - 1]
            j -= 1
        best[j], best_row[j] = value, row
    return filled


def places(
    order: I64, bounds: I64, code: I64, base: I64, key: I64, keep: int, width: int
) -> tuple[I64, I64, Bools]:
    """Per row: its place in the whole ranking, its place in its query's order, and
    whether its query has more than ``width`` rows. Segment ``k`` (a query, code
    ``code[k]``, whose first place in the whole ranking is ``base[code[k]]``) holds the
    rows ``order[bounds[k]:bounds[k + 1]]``, or those rows themselves when ``order`` is
    empty, in ranking order, or in input order with ``key`` (a row's
    :func:`descending_key`). Only each query's first ``keep`` rows are placed; the
    others get place ``keep`` and rank -1."""
    rows, ends, codes, first, keys = (frozen(a, np.int64) for a in (order, bounds, code, base, key))
    return _places(rows, ends, codes, first, keys, int(keep), int(width))


@compiled
def _places(
    order: I64, bounds: I64, code: I64, base: I64, key: I64, keep: int, width: int
) -> tuple[I64, I64, Bools]:
    """:func:`places` on its inputs as one numba type."""
    n = bounds[-1]
    rank = np.full(n, -1, dtype=np.int64)
    position = np.full(n, keep, dtype=np.int64)
    more = np.empty(n, dtype=np.bool_)
    best = np.empty(max(keep, 1), dtype=np.int64)
    best_row = np.empty(max(keep, 1), dtype=np.int64)
    for k in range(len(bounds) - 1):
        lo, hi = bounds[k], bounds[k + 1]
        first = base[code[k]]
        longer = hi - lo > width
        for i in range(lo, hi):
            more[_row(order, i)] = longer
        if len(key) == 0:
            for i in range(lo, min(hi, lo + keep)):
                position[_row(order, i)] = i - lo
                rank[_row(order, i)] = first + i - lo
        else:
            for j in range(_head(order, lo, hi, key, keep, best, best_row)):
                position[best_row[j]] = j
                rank[best_row[j]] = first + j
    return rank, position, more


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


@internal
def _sort_segments(order: I64, starts: Bools, keys: I64) -> None:
    """Sort ``order`` within each segment (``starts`` marks their first rows) by the
    rows of ``keys`` it names, stably, in place."""
    n = len(order)
    scratch = np.empty(n, dtype=np.int64)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and not starts[hi]:
            hi += 1
        _merge_sorted(order[lo:hi], keys, scratch[lo:hi])
        lo = hi


@compiled
def _ordered_in_segments(starts: Bools, keys: I64) -> I64:
    """:func:`ordered_in_segments` on its inputs as one numba type."""
    order = np.arange(len(starts))
    _sort_segments(order, starts, keys)
    return order


def ranked_in_segments(starts: Bools, keys: I64, values: I64) -> tuple[I64, I64, I64]:
    """:func:`ordered_in_segments`, with each row's place in its segment in that order
    and the running total of ``values`` (``values[row]``) up to it within its segment:
    rule 9's order of a query's blocks, their ``block_rank`` and rule 10's length.

    Example:
        >>> import numpy as np
        >>> starts = np.array([True, False, True])
        >>> order, place, total = ranked_in_segments(starts, np.array([[2], [1], [0]]),
        ...     np.array([5, 7, 1]))
        >>> order.tolist(), place.tolist(), total.tolist()
        ([1, 0, 2], [0, 1, 0], [7, 12, 1])
    """
    starts, keys = frozen(starts, np.bool_), frozen(keys, np.int64)
    return _ranked_in_segments(starts, keys, frozen(values, np.int64))


@compiled
def _ranked_in_segments(starts: Bools, keys: I64, values: I64) -> tuple[I64, I64, I64]:
    """:func:`ranked_in_segments` on its inputs as one numba type."""
    n = len(starts)
    order = np.arange(n)
    _sort_segments(order, starts, keys)
    place = np.empty(n, dtype=np.int64)
    total = np.empty(n, dtype=np.int64)
    first = 0
    running = 0
    for i in range(n):
        if starts[i]:
            first, running = i, 0
        running += values[order[i]]
        place[i], total[i] = i - first, running
    return order, place, total


def in_segments_of(ranked: I64, starts: Bools, keys: I64, groups: int) -> tuple[I64, Bools, I64]:
    """The rows ``ranked`` (each segment's, ``starts`` marking their first) ordered by the
    key columns ``keys`` (``keys[k, row]``, rows as ``ranked`` names them: not gathered)
    within each segment, stably; whether each starts a segment or differs from the row
    before it in the first ``groups`` columns (rule 5's group starts); and the keys
    gathered into that order (``keys[:, order]``, each column contiguous).

    Example:
        >>> import numpy as np
        >>> keys, one = np.array([[7, 3, 7], [1, 0, 0]]), np.array([True, False, False])
        >>> order, new, got = in_segments_of(np.array([0, 1, 2]), one, keys, 1)
        >>> order.tolist(), new.tolist(), got.tolist()
        ([1, 2, 0], [True, True, False], [[3, 7, 7], [0, 0, 1]])
    """
    return _in_segments_of(
        frozen(ranked, np.int64), frozen(starts, np.bool_), frozen(keys, np.int64), int(groups)
    )


@compiled
def _in_segments_of(ranked: I64, starts: Bools, keys: I64, groups: int) -> tuple[I64, Bools, I64]:
    """:func:`in_segments_of` on its inputs as one numba type (the sort reads ``keys``
    transposed, a row's keys a column: no table of them is built)."""
    order = np.empty(len(ranked), dtype=np.int64)
    for i in range(len(ranked)):
        order[i] = ranked[i]
    _sort_segments(order, starts, keys.T)
    new = np.empty(len(order), dtype=np.bool_)
    gathered = np.empty(keys.shape, dtype=np.int64)
    for i in range(len(order)):
        row = order[i]
        differs = bool(starts[i])
        for k in range(keys.shape[0]):
            gathered[k, i] = keys[k, row]
            if k < groups and not differs:
                differs = keys[k, order[i - 1]] != keys[k, row]
        new[i] = differs
    return order, new, gathered


@sample("_grouped_by")
def _sample_grouped() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    grouped_by(np.zeros(1, dtype=np.int64), 1)


@sample("_places")
def _sample_places() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    i64 = np.zeros(1, dtype=np.int64)
    places(i64, np.array([0, 1], dtype=np.int64), i64, i64, i64, 1, 1)


@sample("_ordered_in_segments")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    ordered_in_segments(np.ones(1, dtype=np.bool_), np.zeros((1, 1), dtype=np.int64))


@sample("_ranked_in_segments")
def _sample_ranked() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    yes, i64 = np.ones(1, dtype=np.bool_), np.zeros(1, dtype=np.int64)
    ranked_in_segments(yes, np.zeros((1, 1), dtype=np.int64), i64)


@sample("_in_segments_of")
def _sample_segments_of() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    yes, i64 = np.ones(1, dtype=np.bool_), np.zeros(1, dtype=np.int64)
    in_segments_of(i64, yes, np.zeros((1, 1), dtype=np.int64), 1)
