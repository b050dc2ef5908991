"""The document-ranking kernels: each query's documents deduplicated and ranked, in one
pass over rows grouped by query (input order kept within a query).

Why kernels: Polars says "a document's best chunk" as a ``group_by(query, doc)`` (a
hash of every row on two keys), "ranked by score, ties by first appearance" as a global
three-key sort, and "the ranks of the relevant documents" as a join of every ranked row
with the judgements: on 10M rows, most of ``evaluate``'s time. Within one query all
three are small: its rows deduplicated through a hash table that fits in cache, its
judged documents looked up there, each one's rank counted (how many of the query's
documents precede it), no sort. Polars has no expression for "deduplicate, then rank,
within each group" that does not hash or sort the whole column first.

Orders as Polars orders them (so a rank is the one a ``sort`` gives): a score of NaN
ranks above every number, ``-0.0`` ties with ``0.0``; a document's score is the
maximum of its chunks' scores with NaN ignored unless all are NaN, as ``max()``.

The hash table the kernels share, one query at a time: ``table`` (a power of two wide,
at least twice the largest query's row count) maps a slot to the index of one of the
query's documents, -1 when free; ``shift`` (64 - log2 of the width) turns a document
key's product with :data:`_GOLDEN` into its first slot, probing on linearly.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe._kernels._compile import compiled, internal
from ragframe._kernels._own import keep_in_user_cache

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
U64 = npt.NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
"""2^64 / the golden ratio: multiplicative (Fibonacci) hashing of the document keys."""
_SIGN = np.uint64(1) << np.uint64(63)
COUNT_UP_TO = 32
"""A query with at most this many relevant documents found has their ranks counted
(one pass over its documents each); one with more sorts its documents once."""

keep_in_user_cache(__file__)  # not beside this file: never in site-packages
kernel = compiled
"""A kernel Python calls (postprocess's decorators, :mod:`ragframe.postprocess._kernels.
_compile`): compiled to machine code at its first call on more rows than
``$RAGFRAME_PYTHON_ROWS`` (plain Python on fewer: no numba imported), cached on disk
(in ragframe's per-user folder, keyed on this file) with the code of the helpers it
calls (all in this file, which imports nothing it calls), releasing the GIL."""
helper = internal
"""A helper only kernels call: no Python entry, not cached on its own (the cached
kernels hold its code), so a first run compiles and a later one loads less."""


@helper
def _descending(score: float, bits: np.uint64) -> np.uint64:
    """An unsigned key whose ascending order is Polars' descending order of ``score``
    (``bits``, its IEEE bits): NaN first, then +inf down to -inf, ``-0.0`` equal to
    ``0.0``."""
    if score != score:
        return np.uint64(0)
    if score == 0.0:
        bits = np.uint64(0)  # -0.0 as 0.0
    ascending = ~bits if bits & _SIGN else bits | _SIGN
    return ~ascending


@helper
def _table(starts: I64) -> tuple[I64, np.uint64, int]:
    """The hash table (all free), its ``shift``, and the largest query's row count
    (room enough for one query's documents)."""
    largest = 1
    for g in range(starts.shape[0] - 1):
        largest = max(largest, starts[g + 1] - starts[g])
    bits = 4
    while (1 << bits) < 2 * largest:  # a load of at most 1/2
        bits += 1
    return np.full(1 << bits, -1, np.int64), np.uint64(64 - bits), largest


@helper
def _slot(k: np.int64, key: I64, firsts: I64, table: I64, shift: np.uint64) -> int:
    """The slot of document key ``k``: where it is, or the free slot it would take."""
    mask = table.shape[0] - 1
    slot = np.int64((np.uint64(k) * _GOLDEN) >> shift)
    while table[slot] >= 0 and key[firsts[table[slot]]] != k:
        slot = (slot + 1) & mask
    return int(slot)


@helper
def _documents(
    a: int, b: int, key: I64, score: F64, table: I64, shift: np.uint64, firsts: I64, best: F64
) -> int:
    """Rows ``[a, b)`` (one query) to its distinct documents, entered in ``table``:
    ``firsts[:d]`` the row of each one's first appearance, in row order, ``best[:d]``
    its best score; returns ``d``. ``table`` must be empty (all -1)."""
    d = 0
    for row in range(a, b):
        slot = _slot(key[row], key, firsts, table, shift)
        found = table[slot]
        if found < 0:
            table[slot] = d
            firsts[d] = row
            best[d] = score[row]
            d += 1
        elif score[row] > best[found] or best[found] != best[found]:
            best[found] = score[row]
    return d


@helper
def _empty(key: I64, firsts: I64, d: int, table: I64, shift: np.uint64) -> None:
    """Free the slots of the ``d`` documents entered (not the whole table)."""
    mask = table.shape[0] - 1
    for i in range(d):
        slot = np.int64((np.uint64(key[firsts[i]]) * _GOLDEN) >> shift)
        while table[slot] >= 0:
            table[slot] = -1
            slot = (slot + 1) & mask


@helper
def _order_keys(best: F64, d: int, out: U64) -> None:
    """``out[:d]``: each document's :func:`_descending` key."""
    bits = best.view(np.uint64)
    for i in range(d):
        out[i] = _descending(best[i], bits[i])


@helper
def _sort_stably(keys: U64, d: int, order: I64, spare: U64, spare_order: I64) -> None:
    """``order[:d]``: ``0 .. d-1`` sorted by ``keys`` (ties in index order), ``keys[:d]``
    sorted with it. Insertion sort of blocks of 16, then bottom-up merges, back and
    forth through the spares (numba's ``argsort`` takes seconds more to compile)."""
    for i in range(d):
        order[i] = i
    for a in range(0, d, 16):
        for i in range(a + 1, min(a + 16, d)):
            k, o, j = keys[i], order[i], i - 1
            while j >= a and keys[j] > k:
                keys[j + 1], order[j + 1] = keys[j], order[j]
                j -= 1
            keys[j + 1], order[j + 1] = k, o
    width, flipped = 16, False
    while width < d:
        if flipped:
            _merge_all(spare, spare_order, keys, order, d, width)
        else:
            _merge_all(keys, order, spare, spare_order, d, width)
        width, flipped = 2 * width, not flipped
    if flipped:
        keys[:d], order[:d] = spare[:d], spare_order[:d]


@helper
def _merge_all(keys: U64, order: I64, to_keys: U64, to_order: I64, d: int, width: int) -> None:
    """Merge each pair of sorted runs of ``width`` into the ``to_`` arrays (the left
    run first among equal keys: stable)."""
    for a in range(0, d, 2 * width):
        mid, end = min(a + width, d), min(a + 2 * width, d)
        i, j = a, mid
        for k in range(a, end):
            if j >= end or (i < mid and keys[i] <= keys[j]):
                to_keys[k], to_order[k] = keys[i], order[i]
                i += 1
            else:
                to_keys[k], to_order[k] = keys[j], order[j]
                j += 1


@helper
def _rank_of(i: int, keys: U64, d: int) -> int:
    """The rank of document ``i`` among ``d`` (by ``keys``, ties by index): 1 + those
    before it in index order with a key <= its, + those after with a key < its."""
    k = keys[i]
    rank = 1
    for j in range(i):
        rank += keys[j] <= k
    for j in range(i + 1, d):
        rank += keys[j] < k
    return rank


@kernel
def rank_documents(starts: I64, key: I64, score: F64) -> tuple[I64, F64, I64]:
    """Per query (rows ``starts[g]`` to ``starts[g + 1]``, in input order), its distinct
    documents (equal ``key``) ranked by best ``score``, descending, ties by first
    appearance.

    Returns:
        ``(rows, best, rank)``, one entry per (query, document) in query then rank
        order: the row of the document's first appearance, its best score, its rank
        (1-based).
    """
    n = key.shape[0]
    table, shift, room = _table(starts)
    firsts, best, keys = np.empty(room, np.int64), np.empty(room), np.empty(room, np.uint64)
    order, spare, spare_order = np.empty(room, np.int64), keys.copy(), np.empty(room, np.int64)
    rows, best_out, rank = np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64)
    out = 0
    for g in range(starts.shape[0] - 1):
        d = _documents(starts[g], starts[g + 1], key, score, table, shift, firsts, best)
        _empty(key, firsts, d, table, shift)
        _order_keys(best, d, keys)
        _sort_stably(keys, d, order, spare, spare_order)  # ties: first appearance first
        for r in range(d):
            rows[out], best_out[out], rank[out] = firsts[order[r]], best[order[r]], r + 1
            out += 1
    return rows[:out], best_out[:out], rank[:out]


@helper
def _look_up(
    lo: int, hi: int, wanted_key: I64, key: I64, firsts: I64, table: I64, shift: np.uint64, at: I64
) -> int:
    """``at[lo:hi]``: each wanted document's index among the query's (-1: not
    retrieved); returns how many were."""
    found = 0
    for w in range(lo, hi):
        at[w] = table[_slot(wanted_key[w], key, firsts, table, shift)]
        found += at[w] >= 0
    return found


@helper
def _counted(lo: int, hi: int, at: I64, keys: U64, d: int, entries: I64, ranks: I64) -> int:
    """The wanted documents found, ``entries[:n]`` in rank order (ties in wanted
    order), ``ranks[:n]`` their ranks, each counted; returns ``n``."""
    n = 0
    for w in range(lo, hi):
        if at[w] < 0:
            continue
        rank, j = _rank_of(at[w], keys, d), n - 1
        while j >= 0 and ranks[j] > rank:  # insertion: few are found
            entries[j + 1], ranks[j + 1] = entries[j], ranks[j]
            j -= 1
        entries[j + 1], ranks[j + 1] = w, rank
        n += 1
    return n


@helper
def _walked(lo: int, hi: int, at: I64, order: I64, d: int, entries: I64, ranks: I64) -> int:
    """:func:`_counted` from the query's documents sorted (``order[:d]``): each
    document's wanted entries chained from ``head`` (in wanted order), read in rank
    order."""
    head, chain = np.full(d, -1, np.int64), np.empty(hi - lo, np.int64)
    for w in range(hi - 1, lo - 1, -1):
        if at[w] >= 0:
            chain[w - lo], head[at[w]] = head[at[w]], w
    n = 0
    for r in range(d):
        w = head[order[r]]
        while w >= 0:
            entries[n], ranks[n] = w, r + 1
            n += 1
            w = chain[w - lo]
    return n


@kernel
def relevant_ranks(
    starts: I64, key: I64, score: F64, wanted: I64, wanted_key: I64, count_up_to: int
) -> tuple[I64, I64, I64, I64]:
    """The rank (as :func:`rank_documents` ranks) of each wanted document of each query:
    query ``g``'s are ``wanted_key[wanted[g]:wanted[g + 1]]``. A query with more than
    ``count_up_to`` found sorts its documents; otherwise each rank is counted.

    Returns:
        ``(query, rank, place, entry)``, in query then rank order (ties in wanted
        order), for each wanted document a query retrieved: the query's index ``g``,
        the rank, its place among the query's found (1-based) and its index in
        ``wanted_key``; ``(g, -1, -1, -1)`` for a query that found none.
    """
    table, shift, room = _table(starts)
    firsts, best, keys = np.empty(room, np.int64), np.empty(room), np.empty(room, np.uint64)
    order, spare, spare_order = np.empty(room, np.int64), keys.copy(), np.empty(room, np.int64)
    m = wanted_key.shape[0]
    at, entries, ranks = np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64)
    out, size = 0, m + starts.shape[0] - 1
    query, rank = np.full(size, -1, np.int64), np.full(size, -1, np.int64)
    place, entry = np.full(size, -1, np.int64), np.full(size, -1, np.int64)
    for g in range(starts.shape[0] - 1):
        lo, hi = wanted[g], wanted[g + 1]
        d = _documents(starts[g], starts[g + 1], key, score, table, shift, firsts, best)
        found = _look_up(lo, hi, wanted_key, key, firsts, table, shift, at)
        _empty(key, firsts, d, table, shift)
        n = 0
        if found:
            _order_keys(best, d, keys)
            if found > count_up_to:
                _sort_stably(keys, d, order, spare, spare_order)
                n = _walked(lo, hi, at, order, d, entries, ranks)
            else:
                n = _counted(lo, hi, at, keys, d, entries, ranks)
        for i in range(max(n, 1)):  # a query that found none: one row, the rest -1
            query[out] = g
            if n:
                rank[out], place[out], entry[out] = ranks[i], i + 1, entries[i]
            out += 1
    return query[:out], rank[:out], place[:out], entry[:out]
