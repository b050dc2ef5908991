"""BM25 as Lucene 8 scores a query against the index (SPEC 6): the query's clauses, their
weights and bounds, and every query's top k by the search kernel.

The query: Lucene's classic ``QueryParser`` (default operator OR) analyzes the text
with the same analyzer and builds one ``SHOULD`` clause per token; ``BooleanQuery``'s
rewrite then merges repeated clauses into one whose boost is the number of repeats
(``"wing wing body"`` is ``wing^2 body``). So a query is its distinct known terms, each
with ``weight = float(count) * idf`` in float32; a term the index lacks matches nothing
and is dropped. A chunk's score is the float32 rounding of the float64 sum of its
clauses' float32 scores (Lucene's disjunction and WAND scorers sum in double).

Where few postings are scored (:func:`._small.is_small`), the peaks and the top k are
found in numpy (:mod:`._small`), bit for bit the kernel's, with no kernel to compile.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe.retrieve import _small
from ragframe.retrieve._analysis import analyze
from ragframe.retrieve._index import BM25Index
from ragframe.retrieve._norms import average_length, idf, norm_cache
from ragframe.retrieve._output import Hits
from ragframe.retrieve._parts import in_parts

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

QUERIES_PER_PART = 256
"""Queries per kernel call (each call allocates its per-chunk scratch once)."""


class Clauses(NamedTuple):
    """The queries' clauses: query ``q``'s are ``starts[q]:starts[q + 1]``, highest
    bound first."""

    starts: I64
    terms: I32
    weights: F32
    bounds: F32


def clauses(index: BM25Index, texts: pl.Series, k1: float, b: float) -> Clauses:
    """Each query's distinct known terms, with Lucene's weight and the highest score
    the term gives any chunk."""
    tokens = analyze(texts, index.vocabulary, insert=False)
    n_queries = texts.len()
    query = np.repeat(np.arange(n_queries, dtype=np.int64), np.diff(tokens.starts))
    known = tokens.ids >= 0
    key = query[known] * max(len(index.vocabulary), 1) + tokens.ids[known]
    distinct, count = np.unique(key, return_counts=True)
    q = distinct // max(len(index.vocabulary), 1)
    terms = (distinct % max(len(index.vocabulary), 1)).astype(np.int32)
    weights = count.astype(np.float32) * idf(index.doc_freqs()[terms], index.doc_count)
    bounds = _bounds(index, terms, weights, k1, b)
    order = np.lexsort((-bounds, q))
    starts = np.searchsorted(q, np.arange(n_queries + 1)).astype(np.int64)
    return Clauses(starts, terms[order], weights[order], bounds[order])


def _cache(index: BM25Index, k1: float, b: float) -> F32:
    return norm_cache(k1, b, average_length(index.total_tokens, index.doc_count))


def _bounds(index: BM25Index, terms: I32, weights: F32, k1: float, b: float) -> F32:
    """The highest score of each clause: its weight through the score at the term's
    largest ``tf * norm_inverse`` (the score increases with it, in float32 too)."""
    distinct, back = np.unique(terms, return_inverse=True)
    if _small.is_small(_small.search_work(index.offsets, distinct)):
        peaks_of = _small.term_peaks
    else:
        from ragframe.retrieve._kernels import _search

        peaks_of = _search.term_peaks
    peaks = peaks_of(
        index.offsets, index.docs, index.freqs, index.norms, _cache(index, k1, b),
        distinct.astype(np.int32),
    )  # fmt: skip
    x = peaks[back]
    bounds: F32 = weights - weights / (np.float32(1.0) + x)
    return bounds


def search(index: BM25Index, texts: pl.Series, k: int, k1: float, b: float) -> Hits:
    """Every query's top ``k`` chunks (fewer where fewer match; none where none does)."""
    found = clauses(index, texts, k1, b)
    n = texts.len()
    if _small.is_small(_small.search_work(index.offsets, found.terms)):
        query, chunk, score = _small.search(
            found.starts, found.terms, found.weights, index.offsets, index.docs,
            index.freqs, index.norms, _cache(index, k1, b), k,
        )  # fmt: skip
        return Hits(query, chunk, score)
    from ragframe.retrieve._kernels import _search

    docs = np.empty(n * k, dtype=np.int32)
    scores = np.empty(n * k, dtype=np.float32)
    counts = np.zeros(n, dtype=np.int64)
    norms, cache = index.norms, _cache(index, k1, b)

    def run(lo: int, hi: int) -> None:
        _search.search(
            found.starts, found.terms, found.weights, found.bounds, index.offsets,
            index.docs, index.freqs, norms, cache, lo, hi,
            docs[lo * k : hi * k], scores[lo * k : hi * k], counts[lo:hi],
        )  # fmt: skip

    in_parts(run, 0, n, QUERIES_PER_PART)
    keep = np.arange(k)[None, :] < counts[:, None]
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    return Hits(rows, docs.reshape(n, k)[keep], scores.reshape(n, k)[keep])
