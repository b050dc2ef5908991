"""Retrieval benchmarks, each beside its baseline in the same group (issue 24):

* ``bm25-index``: ragframe's BM25 index of the chunks against bm25s (numba backend):
  its tokenizer (no stop words) and index;
* ``bm25-retrieve``: every query's top 10 (ragframe: analysis, search, the candidate
  table) against bm25s (the queries tokenized, ``retrieve``);
* ``dense``: every query's top 100 by inner product against the numpy floor (one
  float32 matrix product per block of 128 queries, ``argpartition``, a sort of the k).

``-k smoke`` (CI) runs tiny sizes; the issue's sizes (1M chunks and 10,000 queries for
BM25; 200,000 chunks x 10,000 queries x 384 dimensions for dense) run only when asked:
``RAGFRAME_BENCH_RETRIEVE=full python -m pytest benchmarks/bench_retrieve.py -k full``.
Peak memory, in fresh processes: ``python benchmarks/memory_retrieve.py``. bm25s is in
the ``compare`` extra; its benchmarks skip without it.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from benchmarks._retrieve_data import chunks, queries, vectors

LARGE_ENV = "RAGFRAME_BENCH_RETRIEVE"
BM25_SIZES = {"smoke": (2_000, 200), "full": (1_000_000, 10_000)}
DENSE_SIZES = {"smoke": (2_000, 200, 32), "full": (200_000, 10_000, 384)}


def _wanted(size: str) -> None:
    if size != "smoke" and size not in os.environ.get(LARGE_ENV, "").split(","):
        pytest.skip(f"set {LARGE_ENV}={size} to run it")


@cache
def _texts(size: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    n, m = BM25_SIZES[size]
    return chunks(n), queries(m)


@cache
def _bm25s(size: str) -> tuple[Any, Any]:
    bm25s = pytest.importorskip("bm25s")
    data, _ = _texts(size)
    model = bm25s.BM25(backend="numba")
    model.index(
        bm25s.tokenize(data["text"].to_list(), stopwords=None, show_progress=False),
        show_progress=False,
    )
    return bm25s, model


def _once(benchmark: Any, size: str, function: Any) -> Any:
    rounds = 3 if size == "smoke" else 1
    return benchmark.pedantic(function, rounds=rounds, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("size", list(BM25_SIZES))
@pytest.mark.parametrize("who", ["ragframe", "bm25s"])
def test_bm25_index(benchmark: Any, size: str, who: str) -> None:
    _wanted(size)
    benchmark.group = f"bm25-index-{size}"
    data, _ = _texts(size)
    if who == "ragframe":
        index = _once(benchmark, size, lambda: rf.bm25_index(data))
        assert index.chunks.height == data.height
        return
    bm25s = pytest.importorskip("bm25s")
    texts = data["text"].to_list()

    def build() -> Any:
        model = bm25s.BM25(backend="numba")
        model.index(bm25s.tokenize(texts, stopwords=None, show_progress=False), show_progress=False)
        return model

    _once(benchmark, size, build)


@pytest.mark.parametrize("size", list(BM25_SIZES))
@pytest.mark.parametrize("who", ["ragframe", "bm25s"])
def test_bm25_retrieve(benchmark: Any, size: str, who: str) -> None:
    _wanted(size)
    benchmark.group = f"bm25-retrieve-{size}"
    data, asked = _texts(size)
    if who == "ragframe":
        index = rf.bm25_index(data)
        out = _once(benchmark, size, lambda: rf.retrieve(index, asked, k=10).collect())
        assert out["query_id"].n_unique() <= asked.height
        return
    bm25s, model = _bm25s(size)
    texts = asked["text"].to_list()
    threads = len(os.sched_getaffinity(0))

    def search() -> Any:
        tokens = bm25s.tokenize(texts, stopwords=None, show_progress=False)
        return model.retrieve(tokens, k=10, show_progress=False, n_threads=threads)

    _once(benchmark, size, search)


def _floor(chunk_vectors: np.ndarray, query_vectors: np.ndarray, k: int) -> np.ndarray:
    rows = []
    for lo in range(0, len(query_vectors), 128):
        s = query_vectors[lo : lo + 128] @ chunk_vectors.T
        top = np.argpartition(-s, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(s, top, axis=1), axis=1, kind="stable")
        rows.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(rows)


@pytest.mark.parametrize("size", list(DENSE_SIZES))
@pytest.mark.parametrize("who", ["ragframe", "numpy floor"])
def test_dense(benchmark: Any, size: str, who: str) -> None:
    _wanted(size)
    benchmark.group = f"dense-{size}"
    n, m, dims = DENSE_SIZES[size]
    chunk_vectors, query_vectors = vectors(n, dims, seed=1), vectors(m, dims, seed=2)
    if who == "numpy floor":
        _once(benchmark, size, lambda: _floor(chunk_vectors, query_vectors, 100))
        return
    frame = pl.DataFrame(
        {
            "doc_id": np.arange(n),
            "chunk_index": np.zeros(n, dtype=np.int64),
            "vector": pl.Series(chunk_vectors, dtype=pl.Array(pl.Float32, dims)),
        }
    )
    asked = pl.DataFrame(
        {
            "query_id": np.arange(m),
            "vector": pl.Series(query_vectors, dtype=pl.Array(pl.Float32, dims)),
        }
    )
    out = _once(
        benchmark,
        size,
        lambda: rf.retrieve(frame, asked, method="dense", metric="ip", k=100).collect(),
    )
    assert out.height == m * 100
