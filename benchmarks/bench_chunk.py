"""Benchmark: ``ragframe.chunk`` against a plain Python slicing loop, same group per size.

The corpus is real text: the Python standard library's own ``.py`` sources (code,
docstrings, comments; about 7% of the files, a quarter of the bytes, contain non-ASCII
characters), drawn with a fixed seed until the size is reached, one file per document.
Window 400, overlap 100 (the Cranfield fixture's settings).

Runners, in one group per size so the ratio shows in one table:

* ``ragframe``: ``chunk(docs.lazy(), config).collect()``, DataFrame in, DataFrame out.
* ``python-loop`` (the baseline): what a user without ragframe writes -- loop over
  Python lists of ids and texts, slice every window, append one
  ``(doc_id, chunk_index, start_char, end_char, text)`` tuple per chunk. The lists are
  made before timing starts, so the loop pays for no conversion in or out.
* ``python-loop-frame``: the same loop from and to a Polars DataFrame (``to_list`` in,
  ``pl.DataFrame`` out), i.e. the same contract as ``ragframe``.

Run (benchmarks are not part of the default test run)::

    python -m pytest benchmarks/bench_chunk.py --benchmark-only -k smoke     # smoke, 2 MB
    python -m pytest benchmarks/bench_chunk.py --benchmark-only -k 200MB     # the issue's bar

Compare the ``Min`` column (least disturbed round). On a shared machine wall times swing
with other processes' load; add ``--benchmark-timer=time.process_time`` for CPU time
(summed over threads, so it understates what Polars' parallelism gains in wall time).
"""

from __future__ import annotations

import functools
import random
import sysconfig
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ragframe import WindowConfig, chunk

WINDOW, OVERLAP = 400, 100
SIZES = {"smoke-2MB": 2_000_000, "medium-20MB": 20_000_000, "large-200MB": 200_000_000}


@functools.cache
def _stdlib_texts() -> tuple[str, ...]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    return tuple(t for t in texts if t)


@functools.cache
def _corpus(size: int) -> pl.DataFrame:
    """Documents drawn (seeded) from the stdlib sources until ``size`` characters."""
    rng, texts, docs, total = random.Random(20240611), _stdlib_texts(), [], 0
    while total < size:
        docs.append(rng.choice(texts))
        total += len(docs[-1])
    return pl.DataFrame({"doc_id": range(len(docs)), "content": docs})


def _python_loop(ids: list[Any], contents: list[str]) -> list[tuple[Any, ...]]:
    """The plain loop: every window of every text, one row tuple per chunk."""
    rows: list[tuple[Any, ...]] = []
    step = WINDOW - OVERLAP
    for doc_id, text in zip(ids, contents, strict=True):
        n, start, index = len(text), 0, 0
        while n:
            end = min(start + WINDOW, n)
            rows.append((doc_id, index, start, end, text[start:end]))
            if end == n:
                break
            start, index = start + step, index + 1
    return rows


def _python_loop_frame(docs: pl.DataFrame) -> pl.DataFrame:
    rows = _python_loop(docs["doc_id"].to_list(), docs["content"].to_list())
    names = ["doc_id", "chunk_index", "start_char", "end_char", "text"]
    return pl.DataFrame(rows, schema=names, orient="row")


def _ragframe(docs: pl.DataFrame) -> pl.DataFrame:
    return chunk(docs.lazy(), WindowConfig(window_chars=WINDOW, overlap_chars=OVERLAP)).collect()


def _lists(docs: pl.DataFrame) -> tuple[list[Any], list[str]]:
    """The baseline's input, converted before timing starts."""
    return docs["doc_id"].to_list(), docs["content"].to_list()


@pytest.mark.parametrize("runner", ["ragframe", "python-loop", "python-loop-frame"])
@pytest.mark.parametrize("size", list(SIZES))
def test_chunk(benchmark: Any, size: str, runner: str) -> None:
    docs = _corpus(SIZES[size])
    benchmark.group = f"chunk {size} (window {WINDOW}, overlap {OVERLAP})"
    benchmark.extra_info["characters"] = int(docs["content"].str.len_chars().sum())
    if runner == "python-loop":
        function, args = _python_loop, _lists(docs)
    else:
        function = _ragframe if runner == "ragframe" else _python_loop_frame
        args = (docs,)
    benchmark.pedantic(function, args=args, rounds=5, warmup_rounds=1)


def test_ragframe_and_loops_agree() -> None:
    """Not timed: every runner produces the same rows (small corpus)."""
    docs = _corpus(SIZES["smoke-2MB"])
    out = _ragframe(docs)
    assert out.rows() == _python_loop(*_lists(docs))
    assert out.equals(_python_loop_frame(docs))
