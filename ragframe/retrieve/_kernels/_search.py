"""The BM25 search kernel: every query's top k chunks, scored in float32 exactly as
Lucene 8's ``BM25Similarity`` scores them, each chunk's clause scores summed in float64
and the sum rounded to float32 (as Lucene's disjunction scorers do).

Why a kernel: a query's score of a chunk is a sum over the query's terms of a function
of the term's frequency in the chunk and the chunk's length norm; a vectorized form
(a sparse matrix product) computes it for every chunk that holds any query term, and
the top k of every query then needs a pass over all of them. Here each query runs
term at a time over its terms' postings, from the term with the highest possible score
down (*max-score* pruning, exact): once the k-th best partial score exceeds what the
remaining terms could add to a chunk that has none of the terms seen so far, those
terms are only looked up (by binary search in their postings) for the chunks already
seen whose best possible score still reaches the k-th, so a frequent term of low
weight is never walked whole. The pruning decisions compare float32 roundings of
bounds that are never below the true sums, so a chunk is dropped only when its score
is certainly below the k-th best: the top k, ties to the lower chunk row, are exactly
those of a full evaluation.

One query's term ``i``: ``terms[i]`` (a term id), ``weights[i]`` (Lucene's
``boost * idf``, float32) and ``bounds[i]`` (the highest score the term gives any chunk,
float32); a query's terms come highest bound first.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._heap import in_order, push
from ragframe.retrieve._kernels._jit import decorators

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
Postings = tuple[I64, I32, I32, U8, F32]
"""The index as the helpers read it: ``(offsets, docs, tfs, norms, cache)``: term ``t``'s
postings are ``offsets[t]:offsets[t + 1]`` of ``docs`` (chunk rows, ascending) and
``tfs``; a chunk's one-byte length norm in ``norms`` and its ``norm_inverse`` in
``cache``."""

_UP = 1.0 + 2.0**-40
"""A bound's float64 sum is scaled by this before it is rounded to float32, so that it
stays a bound even if a sum of many terms was rounded in float64."""

WALK_PER_CANDIDATE = 16
"""Once the candidates are fixed, a term with at most this many postings per candidate
is walked (its postings read in order, the candidates' scores added), one with more is
looked up for each candidate (galloping): a lookup costs about as much as reading this
many postings."""

kernel, helper = decorators(__file__)


@helper
def _score(weight: np.float32, tf: np.int32, norm_inverse: np.float32) -> np.float32:
    """Lucene 8's BM25 score of one term in one chunk, in float32:
    ``weight - weight / (1 + tf * norm_inverse)``."""
    return weight - weight / (np.float32(1.0) + np.float32(tf) * norm_inverse)


@kernel
def term_peaks(offsets: I64, docs: I32, tfs: I32, norms: U8, cache: F32, terms: I32) -> F32:
    """For each of ``terms``, the largest ``tf * norm_inverse`` (float32) over its
    postings: the score is increasing in it, so the term's highest score."""
    out = np.zeros(terms.shape[0], dtype=np.float32)
    for i in range(terms.shape[0]):
        t = terms[i]
        peak = np.float32(0.0)
        for p in range(offsets[t], offsets[t + 1]):
            x = np.float32(tfs[p]) * cache[norms[docs[p]]]
            peak = max(peak, x)
        out[i] = peak
    return out


@helper
def _best(acc: F64, rows: I32, n: int, heap_scores: F32, heap_rows: I32) -> int:
    """The best ``len(heap_scores)`` of ``rows[:n]`` by score, as a heap; their count."""
    size = 0
    for j in range(n):
        d = rows[j]
        size = push(heap_scores, heap_rows, size, np.float32(acc[d]), d)
    return size


@helper
def _walk(
    t: int, w: np.float32, index: Postings, acc: F64, mark: I32, stamp: int, rows: I32, n: int
) -> tuple[int, float]:
    """Add term ``t``'s scores to every chunk of its postings; returns the new number of
    rows touched and the largest partial score among the chunks it touched."""
    offsets, docs, tfs, norms, cache = index
    best = 0.0
    for p in range(offsets[t], offsets[t + 1]):
        d = docs[p]
        s = np.float64(_score(w, tfs[p], cache[norms[d]]))
        new = mark[d] != stamp
        mark[d] = stamp
        rows[n] = d  # kept only when new (no branch on it)
        n += new
        s += 0.0 if new else acc[d]
        acc[d] = s
        best = max(best, s)
    return n, best


@helper
def _update(t: int, w: np.float32, index: Postings, acc: F64, mark: I32, stamp: int) -> None:
    """Add term ``t``'s scores to the chunks of its postings already seen (``mark``)."""
    offsets, docs, tfs, norms, cache = index
    for p in range(offsets[t], offsets[t + 1]):
        d = docs[p]
        if mark[d] == stamp:
            acc[d] += np.float64(_score(w, tfs[p], cache[norms[d]]))


@helper
def _keep(acc: F64, rows: I32, n: int, rest: float, theta: np.float32) -> int:
    """Keep (in place) the chunks of ``rows[:n]`` whose best possible score, adding
    ``rest``, reaches ``theta``; returns how many."""
    kept = 0
    for j in range(n):
        d = rows[j]
        if np.float32((acc[d] + rest) * _UP) >= theta:
            rows[kept] = d
            kept += 1
    return kept


@helper
def _gallop(docs: I32, p: int, end: int, d: int) -> int:
    """The first position at or after ``p`` (below ``end``) whose chunk is at least
    ``d``, or ``end``: doubling steps, then a binary search (``docs`` ascending)."""
    if p >= end or docs[p] >= d:
        return p
    step = 1
    while p + step < end and docs[p + step] < d:
        p += step
        step *= 2
    lo, hi = p + 1, min(p + step, end)  # docs[p] < d; the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if docs[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


@helper
def _look_up(
    t: int,
    w: np.float32,
    index: Postings,
    acc: F64,
    rows: I32,
    n: int,
    rest: float,
    theta: np.float32,
) -> int:
    """Add term ``t``'s scores to the chunks ``rows[:n]`` (ascending) that hold it,
    walking its postings by galloping, then keep (in place) those whose best possible
    score, adding ``rest``, reaches ``theta``; returns how many are kept."""
    offsets, docs, tfs, norms, cache = index
    p, end = offsets[t], offsets[t + 1]
    kept = 0
    for j in range(n):
        d = rows[j]
        p = _gallop(docs, p, end, d)
        if p < end and docs[p] == d:
            acc[d] += np.float64(_score(w, tfs[p], cache[norms[d]]))
        if np.float32((acc[d] + rest) * _UP) >= theta:
            rows[kept] = d
            kept += 1
    return kept


_DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
_BIT_OF = np.array(
    [
        0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4,
        62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
        63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
        46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6,
    ],
    dtype=np.int64,
)  # fmt: skip
"""The index of a word's lowest set bit from its de Bruijn product's top six bits."""


@helper
def _in_row_order(rows: I32, n: int, bits: U64) -> None:
    """Sort ``rows[:n]`` (distinct chunk rows) ascending through a bitmap over the chunks
    (``bits``, all clear, left clear): linear in the rows and the words they span,
    where a comparison sort of tens of thousands of candidates costs more than the
    lookups they are sorted for."""
    if n == 0:
        return
    low, high = rows[0], rows[0]
    for j in range(n):
        d = rows[j]
        bits[d >> 6] |= np.uint64(1) << np.uint64(d & 63)
        low, high = min(low, d), max(high, d)
    c = 0
    for word in range(low >> 6, (high >> 6) + 1):
        x = bits[word]
        bits[word] = np.uint64(0)
        while x:
            lowest = x & (~x + np.uint64(1))
            rows[c] = np.int32(word * 64 + _BIT_OF[(lowest * _DE_BRUIJN) >> np.uint64(58)])
            c += 1
            x ^= lowest


@helper
def _one_query(
    terms: I32,
    weights: F32,
    bounds: F32,
    a: int,
    b: int,
    index: Postings,
    acc: F64,
    mark: I32,
    stamp: int,
    rows: I32,
    rest: F64,
    heap_scores: F32,
    heap_rows: I32,
    bits: U64,
) -> int:
    """Query terms ``a:b``: its best chunks into the heap; returns their count.

    Terms are walked whole, adding every chunk they hold, until no chunk unseen so far
    can reach the k-th best partial score (``theta``); from then on the chunks seen are
    the only candidates, and a term is walked for them alone where its postings are
    few next to the candidates (:data:`WALK_PER_CANDIDATE`), else looked up for each
    candidate by galloping; after each term, candidates that can no longer reach
    ``theta`` (raised as the partial scores grow) are dropped."""
    m = b - a
    k = heap_scores.shape[0]
    offsets = index[0]
    rest[m] = 0.0
    for i in range(m - 1, -1, -1):
        rest[i] = rest[i + 1] + np.float64(bounds[a + i])
    n, best = 0, 0.0
    theta = np.float32(-1.0)
    open_, ordered = True, False
    for i in range(m):
        t, w = terms[a + i], weights[a + i]
        if open_:
            n, top = _walk(t, w, index, acc, mark, stamp, rows, n)
            best = max(best, top)
            if i + 1 < m and n >= k:
                bound = np.float32(rest[i + 1] * _UP)
                if bound < np.float32(best):
                    _best(acc, rows, n, heap_scores, heap_rows)
                    theta = heap_scores[0]
                    if bound < theta:
                        open_ = False
                        n = _keep(acc, rows, n, rest[i + 1], theta)
            continue
        if offsets[t + 1] - offsets[t] <= WALK_PER_CANDIDATE * n:
            _update(t, w, index, acc, mark, stamp)
            n = _keep(acc, rows, n, rest[i + 1], theta)
        else:
            if not ordered:
                _in_row_order(rows, n, bits)
                ordered = True
            n = _look_up(t, w, index, acc, rows, n, rest[i + 1], theta)
        if i + 1 < m and n > k:  # the k-th best partial score only grows: prune harder
            _best(acc, rows, n, heap_scores, heap_rows)
            theta = max(theta, heap_scores[0])
    return _best(acc, rows, n, heap_scores, heap_rows)


@kernel
def search(
    starts: I64,
    terms: I32,
    weights: F32,
    bounds: F32,
    offsets: I64,
    docs: I32,
    tfs: I32,
    norms: U8,
    cache: F32,
    lo: int,
    hi: int,
    out_docs: I32,
    out_scores: F32,
    out_counts: I64,
) -> None:
    """The top ``k`` chunks of queries ``lo .. hi-1`` (query ``q``'s terms are
    ``starts[q]:starts[q + 1]``), best first, ties to the lower row: query ``q``'s are
    ``out_docs``/``out_scores`` from ``(q - lo) * k``, ``out_counts[q - lo]`` of them,
    where ``k = len(out_docs) // (hi - lo)``."""
    chunks = norms.shape[0]
    k = out_docs.shape[0] // max(hi - lo, 1)
    acc = np.zeros(chunks, dtype=np.float64)
    mark = np.full(chunks, -1, dtype=np.int32)
    rows = np.empty(chunks, dtype=np.int32)
    bits = np.zeros((chunks + 63) // 64, dtype=np.uint64)
    longest = 1
    for q in range(lo, hi):
        longest = max(longest, starts[q + 1] - starts[q])
    rest = np.zeros(longest + 1, dtype=np.float64)
    heap_scores = np.zeros(k, dtype=np.float32)
    heap_rows = np.zeros(k, dtype=np.int32)
    index = (offsets, docs, tfs, norms, cache)
    for q in range(lo, hi):
        size = 0
        if starts[q + 1] > starts[q]:
            size = _one_query(
                terms, weights, bounds, starts[q], starts[q + 1], index, acc, mark, q - lo,
                rows, rest, heap_scores, heap_rows, bits,
            )  # fmt: skip
        at = (q - lo) * k
        out_counts[q - lo] = size
        in_order(heap_scores, heap_rows, size)
        out_docs[at : at + size] = heap_rows[:size]
        out_scores[at : at + size] = heap_scores[:size]
