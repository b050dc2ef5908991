"""Benchmark ``ragframe.sweep``: 36 configurations against one (postprocess, then
evaluate), same candidates, same group, so the ratio is in one table. The bar (issue
13): the sweep within 8x the time of one configuration at 1M candidate rows.

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_sweep.py -k smoke   # 200 queries x 100
    python -m pytest benchmarks/bench_sweep.py -k full    # 10,000 x 100 = 1M rows
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe
from benchmarks._generate import Retrieval

GRID = {
    "top_k": [10, 20],
    "max_chunk_gap": [0, 1, 2],
    "max_blocks": [5, 10],
    "max_characters": [2000, 4000, 8000],
}
ONE = ragframe.PostprocessConfig(top_k=10, max_chunk_gap=1, max_blocks=5, max_characters=4000)
ROUNDS = 3


def _qrels(data: Retrieval) -> pl.DataFrame:
    """Per query, 3 of its retrieved documents judged relevant (grades 1-3), seeded."""
    docs = data.results.select("query_id", "doc_id").unique(maintain_order=True)
    rng = np.random.default_rng(5)
    picked = docs.with_columns(pl.Series("u", rng.random(docs.height))).sort("query_id", "u")
    picked = picked.group_by("query_id", maintain_order=True).head(3)
    grades = rng.integers(1, 4, size=picked.height)
    return ragframe.read_qrels(picked.select("query_id", "doc_id", pl.Series("relevance", grades)))


def _one(data: Retrieval, qrels: pl.DataFrame) -> pl.DataFrame:
    blocks = ragframe.postprocess(data.results, ONE, chunks=data.chunks)
    return ragframe.evaluate(
        qrels,
        blocks=blocks,
        max_blocks=ONE.max_blocks,
        max_characters=ONE.max_characters,
        chunks=data.chunks,
    ).collect()


def _sweep(data: Retrieval, qrels: pl.DataFrame) -> ragframe.SweepResult:
    return ragframe.sweep(data.results, GRID, qrels, chunks=data.chunks)


@pytest.fixture(scope="module")
def judged(retrieval: tuple[str, Retrieval]) -> tuple[str, Retrieval, pl.DataFrame]:
    size, data = retrieval
    return size, data, _qrels(data)


def test_one_configuration(benchmark: Any, judged: tuple[str, Retrieval, pl.DataFrame]) -> None:
    size, data, qrels = judged
    benchmark.group = f"sweep {size}"
    out = benchmark.pedantic(_one, args=(data, qrels), rounds=ROUNDS, warmup_rounds=1)
    assert out.height == data.results["query_id"].n_unique()


def test_sweep_36(benchmark: Any, judged: tuple[str, Retrieval, pl.DataFrame]) -> None:
    size, data, qrels = judged
    benchmark.group = f"sweep {size}"
    out = benchmark.pedantic(_sweep, args=(data, qrels), rounds=ROUNDS, warmup_rounds=1)
    assert out.summary.height == 36
