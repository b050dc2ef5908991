"""Small inputs without numba: the term ids, the postings, the terms' peaks and the BM25
top k in Polars and whole-array numpy, giving what the kernels of :mod:`._kernels` give,
bit for bit, where the work is small enough that compiling those kernels (seconds, on a
first run) would cost more than it saves.

- Term ids: the tokens (ASCII capitals lower-cased in the buffer) as strings, joined to
  the vocabulary; new terms are the distinct unknown ones in order of first appearance
  (``unique(maintain_order=True)``), as the kernel's hash table numbers them.
- Postings: the distinct (term, chunk) keys of every token with their counts, sorted
  by term then chunk: each term's chunks ascending with the term's frequency there, as
  the kernel's counting sort writes them.
- Search: every query's every clause against every posting of its term (a full
  evaluation, which max-score pruning in the kernel only shortens), each score in
  float32 as Lucene computes it; a chunk's clause scores summed in float64 in the
  clauses' order (one clause position at a time, vectorized over all (query, chunk)
  pairs), so every rounding is the kernel's; the top k by the float32 sum, ties to the
  lower row.

Where: a call whose work (tokens and terms, or postings scored) is at most
:func:`limit` (``$RAGFRAME_PYTHON_ROWS`` times :data:`PER_ROW`; 0 compiles always).
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe._arrow import series, strings

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

PER_ROW = 250
"""Work (tokens, postings) per row of ``$RAGFRAME_PYTHON_ROWS`` up to which retrieve runs
without its kernels: 500,000 at the default 2,000 rows."""


def limit() -> int:
    """The most work a call does without the kernels (see the module docstring)."""
    from ragframe._kernels._compile import python_rows  # no numba

    return PER_ROW * python_rows()


def is_small(work: int) -> bool:
    """Whether a call of ``work`` (tokens, postings) runs without the kernels."""
    return work <= limit()


def _lowered(data: U8) -> U8:
    """``data`` with its ASCII capitals lower-cased (a copy)."""
    capital = (data >= 65) & (data <= 90)
    return data + (capital.astype(np.uint8) << np.uint8(5))


def term_ids(
    terms: pl.Series, data: U8, starts: I64, lengths: I64, *, lower: bool, insert: bool
) -> tuple[I32, pl.Series]:
    """Each token's id among ``terms`` (distinct, in id order) and the terms after
    (grown by the new ones when ``insert``; else -1 for a token not among them)."""
    tokens = strings(_lowered(data) if lower else data, starts, lengths, "term")
    if insert:
        grown = pl.concat([terms, tokens]).unique(maintain_order=True)
        terms = series("term", grown.to_arrow().cast(pa.large_string()))  # owns its bytes
    numbered = terms.to_frame().with_row_index("id")
    found = tokens.to_frame().join(numbered, on="term", how="left", maintain_order="left")
    ids = found["id"].cast(pl.Int32).fill_null(-1).to_numpy()
    return np.ascontiguousarray(ids, dtype=np.int32), terms


def _ranges(lo: I64, count: I64) -> I64:
    """The positions ``lo[i] .. lo[i] + count[i] - 1`` of every range, end to end."""
    ends = np.cumsum(count)
    total = int(ends[-1]) if ends.size else 0
    at: I64 = np.arange(total, dtype=np.int64) + np.repeat(lo - (ends - count), count)
    return at


def postings(ids: I32, token_starts: I64, n_terms: int) -> tuple[I64, I32, I32]:
    """``offsets``, ``docs``, ``freqs`` of the postings (see :class:`._index.BM25Index`)
    of the chunks whose term ids are ``ids[token_starts[c]:token_starts[c + 1]]``."""
    n_chunks = max(token_starts.size - 1, 1)
    chunk = np.repeat(np.arange(token_starts.size - 1, dtype=np.int64), np.diff(token_starts))
    keys, freqs = np.unique(ids.astype(np.int64) * n_chunks + chunk, return_counts=True)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // n_chunks, minlength=n_terms), out=offsets[1:])
    return offsets, (keys % n_chunks).astype(np.int32), freqs.astype(np.int32)


def term_peaks(offsets: I64, docs: I32, tfs: I32, norms: U8, cache: F32, terms: I32) -> F32:
    """:func:`._kernels._search.term_peaks`: each term's largest ``tf * norm_inverse``."""
    lo, count = offsets[terms], offsets[terms + 1] - offsets[terms]
    at = _ranges(lo, count)
    x = tfs[at].astype(np.float32) * cache[norms[docs[at]]]
    out = np.zeros(terms.size, dtype=np.float32)
    held = count > 0
    if at.size:
        starts = (np.cumsum(count) - count)[held]
        out[held] = np.maximum(np.maximum.reduceat(x, starts), np.float32(0.0))
    return out


def search_work(offsets: I64, terms: I32) -> int:
    """The postings a full evaluation of the clauses ``terms`` scores."""
    return int((offsets[terms + 1] - offsets[terms]).sum())


def search(
    starts: I64,
    terms: I32,
    weights: F32,
    offsets: I64,
    docs: I32,
    tfs: I32,
    norms: U8,
    cache: F32,
    k: int,
) -> tuple[I64, I32, F32]:
    """Every query's top ``k`` (query rows ascending, best first, ties to the lower
    chunk row): query row, chunk row, score, as :func:`._kernels._search.search` finds
    them (query ``q``'s clauses are ``starts[q]:starts[q + 1]``, in summing order)."""
    n_queries = starts.size - 1
    clause_query = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(starts))
    count = offsets[terms + 1] - offsets[terms]
    at = _ranges(offsets[terms], count)
    clause = np.repeat(np.arange(terms.size, dtype=np.int64), count)
    doc = docs[at].astype(np.int64)
    w = weights[clause]
    score = w - w / (np.float32(1.0) + tfs[at].astype(np.float32) * cache[norms[doc]])
    n_chunks = max(norms.size, 1)
    order = np.argsort(clause_query[clause] * n_chunks + doc, kind="stable")  # clause order kept
    key, score = (clause_query[clause] * n_chunks + doc)[order], score[order]
    first = np.ones(key.size, dtype=bool)
    first[1:] = key[1:] != key[:-1]
    group = np.cumsum(first) - 1
    nth = np.arange(key.size) - np.flatnonzero(first)[group]
    total = _sums(score, group, nth, int(first.sum()))
    pair = key[first]
    query, chunk, best = pair // n_chunks, pair % n_chunks, total.astype(np.float32)
    ranked = np.lexsort((chunk, -best, query))
    query, chunk, best = query[ranked], chunk[ranked], best[ranked]
    top = np.arange(query.size) - np.searchsorted(query, query) < k
    return query[top], chunk[top].astype(np.int32), best[top]


def _sums(score: F32, group: I64, nth: I64, groups: int) -> npt.NDArray[np.float64]:
    """Each group's float64 sum of its float32 ``score`` s, added left to right in
    their order (``nth``: the position within its group): one position at a time."""
    total = np.zeros(groups, dtype=np.float64)
    by_position = np.argsort(nth, kind="stable")
    bounds = np.searchsorted(nth[by_position], np.arange(int(nth.max(initial=-1)) + 2))
    for lo, hi in pairwise(bounds.tolist()):
        rows = by_position[lo:hi]  # one score per group: no repeated index
        total[group[rows]] += score[rows].astype(np.float64)
    return total
