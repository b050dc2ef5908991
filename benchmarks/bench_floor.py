"""Benchmark ``ragframe.postprocess`` against the floor: one compiled pass doing the
essential work with simplified rules (:mod:`benchmarks._floor`).

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_floor.py -k smoke   # 200 queries, CI smoke
    python -m pytest benchmarks/bench_floor.py -k full    # 10,000 x 100 = 1M rows

One group per size, ``floor SIZE``: the engine on the chunk store, collected in memory
(the benchmark's data, as :mod:`benchmarks.bench_postprocess` runs it), and the floor
on the same frames. The floor is timed in the same rounds as the engine (before each
engine round, untimed by the benchmark). Bar (issue 16): the engine within 4x of the
floor at full size.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import polars as pl

import ragframe
from benchmarks._floor import floor
from benchmarks._generate import Retrieval

CONFIG = ragframe.PostprocessConfig()
ROUNDS = 7
BAR = 4.0

_TIMES: dict[str, tuple[float, float]] = {}


def _engine(data: Retrieval) -> pl.DataFrame:
    return ragframe.postprocess(data.results, CONFIG, chunks=data.chunks).collect()


def test_engine_and_floor(benchmark: Any, retrieval: tuple[str, Retrieval]) -> None:
    """The engine, with the floor timed in the same rounds."""
    size, data = retrieval
    benchmark.group = f"floor {size}"
    paired: list[float] = []

    def floor_first() -> None:
        start = time.perf_counter()
        blocks = floor(data.results, data.chunks, CONFIG)
        paired.append(time.perf_counter() - start)
        assert blocks.height > 0

    out = benchmark.pedantic(
        _engine, args=(data,), setup=floor_first, rounds=ROUNDS, warmup_rounds=1
    )
    assert out.height > 0
    engine_s, floor_s = benchmark.stats.stats.median, statistics.median(paired[-ROUNDS:])
    benchmark.extra_info["floor_s"] = floor_s
    _TIMES[size] = (engine_s, floor_s)


def test_floor_keeps_what_the_engine_keeps_mostly(retrieval: tuple[str, Retrieval]) -> None:
    """The floor is a fair lower bound: on the benchmark's data it keeps as many blocks
    as the engine and nearly the same texts (its rules are simpler, not laxer)."""
    _, data = retrieval
    engine, low = _engine(data), floor(data.results, data.chunks, CONFIG)
    assert abs(low.height - engine.height) <= engine.height // 50
    bytes_engine, bytes_floor = (
        engine["text"].str.len_bytes().sum(),
        low["text"].str.len_bytes().sum(),
    )
    assert abs(bytes_engine - bytes_floor) <= bytes_engine // 50


def ratios() -> list[str]:
    """The summary lines: engine / floor per size, and the bar at full size."""
    lines = []
    for size, (engine_s, floor_s) in _TIMES.items():
        ratio = engine_s / floor_s
        verdict = (
            f" (bar <= {BAR:g}x: {'ok' if ratio <= BAR else 'MISSED'})" if size == "full" else ""
        )
        lines.append(
            f"  {size:5} engine {engine_s * 1000:8.1f} ms, floor {floor_s * 1000:8.1f} ms: "
            f"{ratio:5.2f}x{verdict}"
        )
    return lines
