"""retrieve without its kernels (``ragframe.retrieve._small``): on small inputs the term
ids, the index and every query's top k come from Polars and numpy, and equal the
compiled kernels' bit for bit (hypothesis, adversarial text, Cranfield), a vocabulary
moves from its Series to the hash table with the same ids, and the default data's
retrieve loads no numba. Lucene's own scores are checked on both forms in
``tests/test_retrieve_lucene.py``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import polars as pl
import pytest
from hypothesis import given

import ragframe as rf
from ragframe.retrieve import _small
from ragframe.retrieve._vocab import Vocabulary
from tests.conftest import require_cranfield
from tests.fresh import ROOT, run_fresh
from tests.test_retrieve import _text

FORMS = {"compiled": "0", "small": "1000000000"}
"""``$RAGFRAME_PYTHON_ROWS`` for each form: 0 compiles always; a billion rows keeps every
call of these tests under :func:`_small.limit`."""


@contextmanager
def form(name: str) -> Iterator[None]:
    """Run retrieve in the form ``name`` (of :data:`FORMS`) meanwhile."""
    before = os.environ.get("RAGFRAME_PYTHON_ROWS")
    os.environ["RAGFRAME_PYTHON_ROWS"] = FORMS[name]
    try:
        yield
    finally:
        if before is None:
            del os.environ["RAGFRAME_PYTHON_ROWS"]
        else:
            os.environ["RAGFRAME_PYTHON_ROWS"] = before


def _frames(texts: list[str | None], queries: list[str | None]) -> tuple[pl.DataFrame, ...]:
    chunks = pl.DataFrame(
        {"doc_id": range(len(texts)), "chunk_index": [0] * len(texts), "text": texts},
        schema_overrides={"text": pl.String},
    )
    asked = pl.DataFrame(
        {"query_id": range(len(queries)), "text": queries}, schema_overrides={"text": pl.String}
    )
    return chunks, asked


def _both(chunks: pl.DataFrame, queries: pl.DataFrame, **options: float) -> list[pl.DataFrame]:
    out = []
    for name in FORMS:
        with form(name):
            out.append(rf.retrieve(chunks, queries, **options).collect())
    return out


def _same_index(a: rf.BM25Index, b: rf.BM25Index) -> None:
    assert a.vocabulary.terms().to_list() == b.vocabulary.terms().to_list()
    for name in ("offsets", "docs", "freqs", "lengths"):
        mine, theirs = getattr(a, name), getattr(b, name)
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs), name


@given(
    texts=st.lists(_text, min_size=1, max_size=25),
    queries=st.lists(_text, min_size=1, max_size=6),
    k=st.integers(1, 6),
    k1=st.sampled_from([0.0, 0.5, 1.2, 3.0]),
    b=st.sampled_from([0.0, 0.3, 0.75, 1.0]),
)
def test_small_inputs_give_the_kernels_index_and_top_k(
    texts: list[str | None], queries: list[str | None], k: int, k1: float, b: float
) -> None:
    chunks, asked = _frames(texts, queries)
    indexes = []
    for name in FORMS:
        with form(name):
            indexes.append(rf.bm25_index(chunks))
    _same_index(*indexes)
    compiled, small = _both(chunks, asked, k=k, k1=k1, b=b)
    assert small.equals(compiled)
    assert small["similarity"].to_list() == compiled["similarity"].to_list()  # bits, NaN-free


def test_many_terms_per_chunk_sum_in_the_kernels_order() -> None:
    """Long queries over chunks that hold most of their terms, ties everywhere: the
    float64 sums of many float32 clause scores, rounded to float32, and the order."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    texts: list[str | None] = [" ".join(rng.choice(words, size=60)) for _ in range(300)]
    texts += texts[:50]  # exact ties
    queries: list[str | None] = [" ".join(rng.choice(words, size=30)) for _ in range(40)]
    chunks, asked = _frames(texts, queries)
    for k in (1, 7, 400):
        compiled, small = _both(chunks, asked, k=k, k1=0.9, b=0.4)
        assert small.equals(compiled), k


def test_cranfield_in_both_forms() -> None:
    """Cranfield's first 1,500 chunks and 40 queries: the index and the top 1, 3, 50."""
    data = require_cranfield("chunks.parquet", "queries.parquet")
    chunks = pl.read_parquet(data / "chunks.parquet").head(1500)
    queries = pl.read_parquet(data / "queries.parquet").head(40)
    indexes = []
    for name in FORMS:
        with form(name):
            indexes.append(rf.bm25_index(chunks))
    _same_index(*indexes)
    for k in (1, 3, 50):
        compiled, small = _both(chunks, queries, k=k)
        assert small.equals(compiled), k


def test_the_work_decides_the_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limit is ``$RAGFRAME_PYTHON_ROWS`` times PER_ROW; 0 always compiles."""
    monkeypatch.setenv("RAGFRAME_PYTHON_ROWS", "4")
    assert _small.limit() == 4 * _small.PER_ROW
    assert _small.is_small(4 * _small.PER_ROW) and not _small.is_small(4 * _small.PER_ROW + 1)
    monkeypatch.setenv("RAGFRAME_PYTHON_ROWS", "0")
    assert not _small.is_small(1)


def _tokens(words: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = np.frombuffer(" ".join(words).encode(), dtype=np.uint8)
    lengths = np.array([len(w.encode()) for w in words], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    return data, starts, lengths


def test_a_vocabulary_moves_to_the_table_with_the_same_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Small calls on the Series, then a large one on the table (made from the Series):
    every id as a vocabulary that was the table throughout gives."""
    calls = [
        (["Wing", "lift", "WING", "body"], True, True),
        (["lift", "Drag", "drag", "x"], True, True),
        (["body", "nope", "DRAG"], True, False),
        ([f"T{i % 97}" for i in range(300)] + ["wing"], True, True),  # the large call
        (["t5", "LIFT", "new"], False, True),
    ]

    def run(limit: int) -> tuple[list[list[int]], list[str]]:
        monkeypatch.setattr(_small, "limit", lambda: limit)
        vocab, out = Vocabulary(), []
        for words, lower, insert in calls:
            data, starts, lengths = _tokens(words)
            out.append(vocab.ids(data, starts, lengths, lower=lower, insert=insert).tolist())
        return out, vocab.terms().to_list()

    moving = run(50)
    assert moving == run(0)
    assert moving[0][0] == [0, 1, 0, 2] and moving[0][2] == [2, -1, 3]


@pytest.mark.parametrize("limit", [0, 10**6])
def test_an_index_with_repeated_terms_is_refused(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_small, "limit", lambda: limit)
    with pytest.raises(ValueError, match="not distinct"):
        Vocabulary.of(pl.Series(["wing", "lift", "wing"]))
    assert Vocabulary.of(pl.Series(["wing", "lift"])).terms().to_list() == ["wing", "lift"]


def test_the_default_data_retrieves_without_numba(tmp_path: Path) -> None:
    """A fresh process at the default ``$RAGFRAME_PYTHON_ROWS``: the bundled chunks and
    queries are indexed and searched with no numba loaded (no kernel compiled or
    loaded), and give what the compiled kernels give."""
    script = (
        "import sys, polars as pl, ragframe as rf\n"
        "chunks = pl.read_parquet('data/chunks.parquet')\n"
        "queries = pl.read_parquet('data/queries.parquet').rename({'query': 'text'})\n"
        "rf.retrieve(chunks, queries, k=20).collect().write_parquet(sys.argv[1])\n"
    )
    out = tmp_path / "small.parquet"
    run_fresh(tmp_path, script, [out], unloaded=("numba",))
    chunks = pl.read_parquet(ROOT / "data" / "chunks.parquet")
    queries = pl.read_parquet(ROOT / "data" / "queries.parquet").rename({"query": "text"})
    with form("compiled"):
        want = rf.retrieve(chunks, queries, k=20).collect()
    assert pl.read_parquet(out).equals(want)
