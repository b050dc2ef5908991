"""Benchmark fixtures: seeded data per size, and a closing table of the ratios the issue
sets as bars (engine vs reference per row, engine vs the minimal Polars plan)."""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest

from benchmarks._generate import Retrieval, generate

SIZES = {"smoke": 200, "full": 10_000}
"""Queries per size (x 100 candidates each): ``-k smoke`` for CI, ``-k full`` for 1M rows."""

_TIMES: dict[tuple[str, str, str], tuple[float, int]] = {}


@pytest.fixture(scope="session", params=list(SIZES))
def retrieval(request: pytest.FixtureRequest) -> tuple[str, Retrieval]:
    size = str(request.param)
    data = generate(SIZES[size])
    gc.collect()  # the generator's garbage, not the first benchmark, pays for its collection
    return size, data


def record(benchmark: Any, size: str, variant: str, who: str, rows: int) -> None:
    """Remember a finished benchmark's median time and the rows it processed."""
    benchmark.extra_info["rows"] = rows
    _TIMES[(size, variant, who)] = (benchmark.stats.stats.median, rows)


def record_paired(size: str, variant: str, baseline_s: float, rows: int) -> None:
    """Remember the baseline's median time over runs interleaved with the engine's."""
    _TIMES[(size, variant, "paired baseline")] = (baseline_s, rows)


def _bar(size: str, met: bool, text: str) -> str:
    """The verdict on a bar; the issue sets its bars at full size (1M rows) only."""
    return f" (bar {text}: {'ok' if met else 'MISSED'})" if size == "full" else ""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    write = terminalreporter.write_line
    for module in ("benchmarks.bench_scale", "benchmarks.bench_floor"):
        lines = getattr(sys.modules.get(module), "ratios", lambda: [])()
        if lines:
            write("")
            write(f"{module.rsplit('.', 1)[-1]} ratios (medians of rounds; bars from issue 16)")
            for line in lines:
                write(line)
    if not _TIMES:
        return
    write("")
    write("postprocess ratios (median times; reference scaled per row; bars at full size)")
    for size, variant in sorted({(s, v) for s, v, _ in _TIMES}):
        got = {who: t for (s, v, who), t in _TIMES.items() if (s, v) == (size, variant)}
        if "text" in got and "offsets" in got:
            (text_s, rows), offsets_s = got["text"], got["offsets"][0]
            write(
                f"  {size:5} overlap text {text_s:8.3f} s, offsets {offsets_s:8.3f} s for "
                f"{rows:,} rows | offsets/text {offsets_s / text_s:5.2f}x"
            )
        if "engine" not in got:
            continue
        engine_s, engine_rows = got["engine"]
        line = f"  {size:5} {variant:6} engine {engine_s:8.3f} s for {engine_rows:,} rows"
        if "reference" in got:
            ref_s, ref_rows = got["reference"]
            speedup = (ref_s / ref_rows) / (engine_s / engine_rows)
            line += f" | vs reference {speedup:6.1f}x faster per row"
            line += _bar(size, speedup >= 20, ">= 20x")
        if "paired baseline" in got:
            ratio = engine_s / got["paired baseline"][0]
            line += f" | engine/baseline {ratio:5.2f}x interleaved"
            line += _bar(size, ratio <= 3, "<= 3x")
        if "baseline" in got:
            line += f", {engine_s / got['baseline'][0]:5.2f}x to the baseline benchmark"
        write(line)
