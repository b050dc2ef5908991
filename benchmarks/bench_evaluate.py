"""Benchmark ``ragframe.evaluate`` (list metrics from a Parquet run) against ranx, end to
end: reading the run, building the tool's inputs (ranx's ``from_df`` included) and
computing per-query metrics. Same group per size, so the ratio is in one table.

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_evaluate.py -k smoke   # 1,000 queries x 100 docs
    python -m pytest benchmarks/bench_evaluate.py -k full    # 100,000 x 100 = 10M rows

ranx is a test-only dependency (``pip install ranx``); without it only ragframe runs.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe

SIZES = {"smoke": 1_000, "full": 100_000}
DOCS = 100
K = [10, 100]
RANX_METRICS = ["ndcg@10", "ndcg@100", "recall@10", "recall@100", "precision@10", "map", "mrr"]


@pytest.fixture(scope="module", params=list(SIZES))
def files(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, Path]:
    """A seeded run (each query's 100 distinct documents, random scores) and qrels (3
    retrieved and 2 unretrieved relevant documents per query, grades 1-3) as Parquet."""
    size = str(request.param)
    queries = SIZES[size]
    rng = np.random.default_rng(11)
    query = np.repeat(np.arange(queries, dtype=np.int64), DOCS)
    doc = (query * 7919 + np.tile(np.arange(DOCS) * 31, queries)) % 5_000_000
    folder = tmp_path_factory.mktemp(f"evaluate-{size}")
    run = folder / "run.parquet"
    pl.DataFrame(
        {"query_id": query, "doc_id": doc, "similarity": rng.random(len(query))}
    ).write_parquet(run)
    # three distinct retrieved documents and two never retrieved: one judgement a pair
    # (read_qrels refuses a pair judged twice)
    picks = rng.permuted(np.tile(np.arange(DOCS), (queries, 1)), axis=1)[:, :3]
    unretrieved = 5_000_000 + 2 * np.arange(queries)[:, None] + np.arange(2)
    judged_docs = np.concatenate(
        [(np.arange(queries)[:, None] * 7919 + picks * 31) % 5_000_000, unretrieved], axis=1
    )
    qrels = folder / "qrels.parquet"
    pl.DataFrame(
        {
            "query_id": np.repeat(np.arange(queries, dtype=np.int64), 5),
            "doc_id": judged_docs.ravel(),
            "relevance": rng.integers(1, 4, size=queries * 5),
        }
    ).write_parquet(qrels)
    return size, run, qrels


def _ragframe(run: Path, qrels: Path) -> pl.DataFrame:
    judged = ragframe.read_qrels(qrels)
    return ragframe.evaluate(judged, candidates=pl.scan_parquet(run), k=K).collect()


def _ranx(run: Path, qrels: Path) -> Any:
    ranx = pytest.importorskip("ranx")
    frame = pl.read_parquet(run).to_pandas()
    frame = frame.astype({"query_id": str, "doc_id": str}).astype(
        {"query_id": object, "doc_id": object}
    )
    judged = pl.read_parquet(qrels).to_pandas()
    judged = judged.astype({"query_id": str, "doc_id": str}).astype(
        {"query_id": object, "doc_id": object}
    )
    ranking = ranx.Run.from_df(
        frame, q_id_col="query_id", doc_id_col="doc_id", score_col="similarity"
    )
    truth = ranx.Qrels.from_df(
        judged, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance"
    )
    return ranx.evaluate(truth, ranking, RANX_METRICS, return_mean=False)


def test_ragframe(benchmark: Any, files: tuple[str, Path, Path]) -> None:
    size, run, qrels = files
    benchmark.group = f"evaluate {size}"
    out = benchmark.pedantic(_ragframe, args=(run, qrels), rounds=3, warmup_rounds=1)
    assert out.height == SIZES[size]
    benchmark.extra_info["rows"] = SIZES[size] * DOCS


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ranx(benchmark: Any, files: tuple[str, Path, Path]) -> None:
    """ranx, its numba kernels compiled before timing (a warm-up on a small run)."""
    size, run, qrels = files
    benchmark.group = f"evaluate {size}"
    pytest.importorskip("ranx")
    started = time.perf_counter()
    out = benchmark.pedantic(
        _ranx, args=(run, qrels), rounds=1, warmup_rounds=0 if size == "full" else 1
    )
    assert len(out["map"]) == SIZES[size]
    benchmark.extra_info["seconds_with_setup"] = time.perf_counter() - started
