"""Benchmark ``ragframe.postprocess`` against the reference loop and a minimal Polars plan.

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_postprocess.py -k smoke   # 200 queries, CI smoke
    python -m pytest benchmarks/bench_postprocess.py -k full    # 10,000 x 100 = 1M rows
    python -m pytest benchmarks/bench_postprocess.py -k "overlap and full"  # modes only

Each group (size x text variant) holds: the engine (full run, collected), the baseline
(per query only the top-k rows by similarity and their text: sort, head per group, join)
and the reference on the first 100 queries. A further group per size, ``postprocess
SIZE overlap``, runs the engine on the chunk store (which has ``start_char``/
``end_char``) in both overlap modes, the seed's ``"text"`` matching and the opt-in
``"offsets"``, same data and config otherwise. The closing summary prints the per-row
speed-up over the reference, the engine/baseline time ratio with the issue's bars (the
baseline timed in runs interleaved with the engine's rounds, and, beside it, the ratio
to the baseline's own benchmark), and the offsets/text time ratio.
Peak memory: ``benchmarks/memory_postprocess.py``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any

import polars as pl
import pytest

import ragframe
from benchmarks._generate import Retrieval
from benchmarks.conftest import record, record_paired
from ragframe.reference import postprocess_reference

CONFIG = ragframe.PostprocessConfig()
REFERENCE_QUERIES = 100
ROUNDS = 7
"""Timed rounds per benchmark: the summary compares medians, and on a shared machine a
median of 3 moves with a single slow round."""
VARIANTS = ["store", "inline"]
MODES = ["text", "offsets"]


def _inputs(data: Retrieval, variant: str) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    return (data.results, data.chunks) if variant == "store" else (data.inline, None)


def _engine(candidates: pl.DataFrame, chunks: pl.DataFrame | None) -> pl.DataFrame:
    return ragframe.postprocess(candidates, CONFIG, chunks=chunks).collect()


def _baseline(candidates: pl.DataFrame, chunks: pl.DataFrame | None) -> pl.DataFrame:
    top = (
        candidates.lazy()
        .sort(["query_id", "similarity"], descending=[False, True], maintain_order=True)
        .group_by("query_id", maintain_order=True)
        .head(CONFIG.top_k)
    )
    if chunks is not None:
        store = chunks.lazy().select("doc_id", "chunk_index", "text")
        top = top.join(store, on=["doc_id", "chunk_index"], how="left", maintain_order="left")
    return top.collect()


def _group(benchmark: Any, size: str, variant: str) -> None:
    benchmark.group = f"postprocess {size} {variant}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_engine(benchmark: Any, retrieval: tuple[str, Retrieval], variant: str) -> None:
    """The engine, with the baseline timed in the same rounds: before each engine round
    (untimed by the benchmark) the baseline runs twice, the second run timed apart,
    then the engine once untimed. Each timed run follows a run of its own kind (a run
    right after the other plan measured up to 45% slower: memory just freed by it), and
    the two are timed seconds apart, not a benchmark apart (on a shared machine the
    load changes between benchmarks)."""
    size, data = retrieval
    _group(benchmark, size, variant)
    candidates, chunks = _inputs(data, variant)
    paired: list[float] = []

    def baseline_first() -> None:
        _baseline(candidates, chunks)
        start = time.perf_counter()
        _baseline(candidates, chunks)
        paired.append(time.perf_counter() - start)
        _engine(candidates, chunks)

    out = benchmark.pedantic(
        _engine,
        args=(candidates, chunks),
        setup=baseline_first,
        rounds=ROUNDS,
        warmup_rounds=1,
    )
    assert out.height > 0
    record(benchmark, size, variant, "engine", candidates.height)
    record_paired(size, variant, statistics.median(paired[-ROUNDS:]), candidates.height)


@pytest.mark.parametrize("variant", VARIANTS)
def test_baseline(benchmark: Any, retrieval: tuple[str, Retrieval], variant: str) -> None:
    size, data = retrieval
    _group(benchmark, size, variant)
    candidates, chunks = _inputs(data, variant)
    out = benchmark.pedantic(_baseline, args=(candidates, chunks), rounds=ROUNDS, warmup_rounds=1)
    assert out.height == candidates["query_id"].n_unique() * CONFIG.top_k
    record(benchmark, size, variant, "baseline", candidates.height)


@pytest.mark.parametrize("variant", VARIANTS)
def test_reference(benchmark: Any, retrieval: tuple[str, Retrieval], variant: str) -> None:
    """The oracle on a subsample (its time is per row; the summary scales it)."""
    size, data = retrieval
    _group(benchmark, size, variant)
    sample = data.inline.filter(pl.col("query_id") <= REFERENCE_QUERIES)
    sample = sample.rename({"doc_id": "entity_id"})
    out = benchmark.pedantic(postprocess_reference, args=(sample, CONFIG), rounds=ROUNDS)
    assert out == ragframe.postprocess(sample, CONFIG).collect().to_dicts()  # same work
    record(benchmark, size, variant, "reference", sample.height)


@pytest.mark.parametrize("mode", MODES)
def test_overlap_mode(benchmark: Any, retrieval: tuple[str, Retrieval], mode: str) -> None:
    """Text-mode vs offsets-mode merging, chunk store, same data: one group per size."""
    size, data = retrieval
    benchmark.group = f"postprocess {size} overlap"
    config = replace(CONFIG, overlap=mode)

    def run() -> pl.DataFrame:
        return ragframe.postprocess(data.results, config, chunks=data.chunks).collect()

    out = benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1)
    assert out.height > 0
    record(benchmark, size, "overlap", mode, data.results.height)
