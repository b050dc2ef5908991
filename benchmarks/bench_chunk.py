"""Benchmark: ``ragframe.chunk`` against a plain Python slicing loop, same group per size.

The corpus is real text: the Python standard library's own ``.py`` sources (code,
docstrings, comments; about 7% of the files contain non-ASCII characters), drawn with a
fixed seed until the size is reached, one file per document. Window 400, overlap 100
(the Cranfield fixture's settings).

Baselines, in the same group as ragframe so the ratio shows in one table:

* ``python-loop-frame``: what a user without ragframe writes: take the same documents
  DataFrame, loop over it in Python slicing each text, build the same output DataFrame.
* ``python-loop-lists``: the loop alone, from Python lists to Python lists (no Polars
  conversion in or out) -- the most favourable setting for Python.

Run (benchmarks are not part of the default test run)::

    python -m pytest benchmarks/bench_chunk.py --benchmark-only -k small     # smoke, 2 MB
    python -m pytest benchmarks/bench_chunk.py --benchmark-only -k 200MB     # the issue's bar

On a shared machine wall times swing with other processes' load; add
``--benchmark-timer=time.process_time`` to compare CPU time instead (summed over
threads, so it understates what Polars' parallelism gains in wall time).
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
SIZES = {"small-2MB": 2_000_000, "medium-20MB": 20_000_000, "large-200MB": 200_000_000}


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


def _python_loop(contents: list[str], ids: list[int]) -> tuple[list[Any], ...]:
    """The plain loop: slice every window of every text, one column list each."""
    doc_ids: list[int] = []
    indexes: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    pieces: list[str] = []
    step = WINDOW - OVERLAP
    for doc_id, text in zip(ids, contents, strict=True):
        n, start, index = len(text), 0, 0
        while n:
            end = min(start + WINDOW, n)
            doc_ids.append(doc_id)
            indexes.append(index)
            starts.append(start)
            ends.append(end)
            pieces.append(text[start:end])
            if end == n:
                break
            start, index = start + step, index + 1
    return doc_ids, indexes, starts, ends, pieces


def _python_loop_frame(docs: pl.DataFrame) -> pl.DataFrame:
    columns = _python_loop(docs["content"].to_list(), docs["doc_id"].to_list())
    names = ("doc_id", "chunk_index", "start_char", "end_char", "text")
    return pl.DataFrame(dict(zip(names, columns, strict=True)))


def _ragframe(docs: pl.DataFrame) -> pl.DataFrame:
    return chunk(docs.lazy(), WindowConfig(window_chars=WINDOW, overlap_chars=OVERLAP)).collect()


def _python_loop_lists(docs: pl.DataFrame) -> tuple[Any, ...]:
    """Arguments for the lists-only loop: converted before timing starts."""
    return (docs["content"].to_list(), docs["doc_id"].to_list())


@pytest.mark.parametrize("runner", ["ragframe", "python-loop-frame", "python-loop-lists"])
@pytest.mark.parametrize("size", list(SIZES))
def test_chunk(benchmark: Any, size: str, runner: str) -> None:
    docs = _corpus(SIZES[size])
    benchmark.group = f"chunk {size} (window {WINDOW}, overlap {OVERLAP})"
    benchmark.extra_info["characters"] = int(docs["content"].str.len_chars().sum())
    rounds = 3 if SIZES[size] >= 100_000_000 else 5
    if runner == "python-loop-lists":
        function, args = _python_loop, _python_loop_lists(docs)
    else:
        function = _ragframe if runner == "ragframe" else _python_loop_frame
        args = (docs,)
    benchmark.pedantic(function, args=args, rounds=rounds, warmup_rounds=1)


def test_ragframe_and_loop_agree() -> None:
    """Not timed: both sides of the comparison produce the same table (small corpus)."""
    docs = _corpus(SIZES["small-2MB"])
    assert _ragframe(docs).equals(_python_loop_frame(docs))
