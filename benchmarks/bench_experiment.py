"""Benchmark ``ragframe.experiment``: 3 windows x BM25 x 12 context configurations
against each window's heaviest configuration run alone (chunk, retrieve, postprocess,
evaluate), same data, same group, so the ratio is in one table. The bars (issue 28): on
Cranfield (225 queries) the experiment within 10 s warm on 2 cores, and within 5x its
slowest configuration alone.

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_experiment.py -k smoke      # the bundled data
    python -m pytest benchmarks/bench_experiment.py -k cranfield  # ../shared's Cranfield
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe

ROOT = Path(__file__).resolve().parents[1]
CRANFIELD = ROOT.parent / "shared" / "data" / "cranfield"
SIZES = [200, 400, 800]
GRID = {
    "size": SIZES,
    "overlap_chars": [50],
    "method": ["bm25"],
    "k": [20],
    "top_k": [5, 10],
    "max_chunk_gap": [0, 1],
    "max_characters": [1000, 2000, 4000],
}
ROUNDS = 3


def _data(name: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    if name == "smoke":
        docs = pl.read_parquet(ROOT / "data" / "documents.parquet")
        queries = pl.read_parquet(ROOT / "data" / "queries.parquet").rename({"query": "text"})
        return docs, queries, ragframe.read_qrels(ROOT / "data" / "qrels.parquet")
    if not (CRANFIELD / "docs.parquet").is_file():
        pytest.skip("the Cranfield fixture (../shared/data/cranfield) is absent")
    docs = pl.read_parquet(CRANFIELD / "docs.parquet")
    queries = pl.read_parquet(CRANFIELD / "queries.parquet").select("query_id", "text")
    qrels = ragframe.read_qrels(
        pl.read_parquet(CRANFIELD / "qrels.parquet"), gain={1: 4, 2: 3, 3: 2, 4: 1}
    )
    return docs, queries, qrels


def _alone(docs: Any, queries: Any, qrels: Any, size: int) -> pl.DataFrame:
    """The heaviest context configuration of one window, its stages one by one."""
    chunks = ragframe.chunk(docs, {"window_chars": size, "overlap_chars": 50}).collect()
    found = ragframe.retrieve(chunks, queries, k=20).collect().drop("start_char", "end_char")
    config = ragframe.PostprocessConfig(
        top_k=10, max_chunk_gap=1, max_characters=4000, overlap="offsets"
    )
    blocks = ragframe.postprocess(found, config, chunks=chunks)
    return ragframe.evaluate(
        qrels, blocks=blocks, max_blocks=config.max_blocks, max_characters=4000, chunks=chunks
    ).collect()


@pytest.mark.parametrize("data", ["smoke", "cranfield"])
@pytest.mark.parametrize("size", SIZES)
def test_one_configuration_alone(benchmark: Any, data: str, size: int) -> None:
    docs, queries, qrels = _data(data)
    benchmark.group = f"experiment {data}"
    out = benchmark.pedantic(
        _alone, args=(docs, queries, qrels, size), rounds=ROUNDS, warmup_rounds=1
    )
    assert out.height >= qrels["query_id"].n_unique()


@pytest.mark.parametrize("data", ["smoke", "cranfield"])
def test_experiment_36(benchmark: Any, data: str) -> None:
    docs, queries, qrels = _data(data)
    benchmark.group = f"experiment {data}"
    out = benchmark.pedantic(
        ragframe.experiment, args=(docs, queries, qrels, GRID), rounds=ROUNDS, warmup_rounds=1
    )
    assert out.summary.height == 36
