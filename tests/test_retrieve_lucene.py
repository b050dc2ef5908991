"""BM25 retrieval against real Lucene 8 (SPEC 6): the same chunks indexed by Lucene
(``StandardAnalyzer`` without stop words, ``BM25Similarity``) and searched by its
classic query parser, through ``tests/lucene/Bm25Oracle.java``.

The bar (issue 24): on each of two chunkings of Cranfield, at least 99% of queries get
Lucene's exact top 10 (order included), scores within 1e-4 relative. Measured here:
every query, every score bit for bit (float32), which the tests assert, for the
compiled kernels and for the small inputs' Polars/numpy form (``retrieve._small``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.retrieve._norms import byte_to_length, length_to_byte
from tests import lucene_bm25
from tests.conftest import require_cranfield
from tests.test_retrieve_small import FORMS, form

pytestmark = [
    pytest.mark.lucene,
    pytest.mark.skipif(
        not lucene_bm25.available(), reason="java, javac or Lucene's jars are missing"
    ),
]


def _compare(
    chunks: pl.DataFrame, queries: pl.DataFrame, k: int, name: str, **params: float
) -> tuple[int, float, list[int]]:
    """(queries whose top k equals Lucene's, order included; the largest relative score
    difference; the query rows that differ), retrieve run in the form ``name``."""
    with form(name):
        got = rf.retrieve(chunks, queries, k=k, **params).collect()
    want = _lucene(tuple(chunks["text"].to_list()), tuple(queries["text"].to_list()), k, params)
    rows = chunks.with_row_index("row").select("doc_id", "chunk_index", "row")
    got = got.join(rows, on=["doc_id", "chunk_index"], how="left", maintain_order="left")
    by_query = {q: g for (q,), g in got.group_by("query_id", maintain_order=True)}
    same, worst, differ = 0, 0.0, []
    for i, (query_id, lucene) in enumerate(zip(queries["query_id"].to_list(), want, strict=True)):
        mine = by_query.get(query_id)
        mine_rows = [] if mine is None else mine["row"].to_list()
        mine_scores = [] if mine is None else mine["similarity"].to_list()
        if mine_rows == lucene.rows:
            same += 1
        else:
            differ.append(i)
        for a, b in zip(mine_scores, lucene.scores, strict=False):
            worst = max(worst, abs(a - b) / abs(b))
    return same, worst, differ


_LUCENE: dict[tuple[Any, ...], list[Any]] = {}


def _lucene(
    chunks: tuple[str | None, ...],
    queries: tuple[str | None, ...],
    k: int,
    params: dict[str, float],
) -> list[Any]:
    """Lucene's top ``k`` of each query, searched once per input: each form of retrieve
    is compared with the same answer."""
    key = (chunks, queries, k, tuple(sorted(params.items())))
    if key not in _LUCENE:
        _LUCENE[key] = lucene_bm25.search(chunks, queries, top=k, **params)
    return _LUCENE[key]


@pytest.mark.parametrize("name", FORMS)
def test_cranfield_chunks_score_as_lucene(name: str) -> None:
    data = require_cranfield("chunks.parquet", "queries.parquet")
    chunks = pl.read_parquet(data / "chunks.parquet")
    queries = pl.read_parquet(data / "queries.parquet")
    same, worst, differ = _compare(chunks, queries, 10, name)
    assert same == queries.height, differ[:10]
    assert worst == 0.0  # float32 for float32: the same bits


@pytest.mark.parametrize("name", FORMS)
def test_a_chunking_of_our_own_scores_as_lucene(name: str) -> None:
    """Cranfield's documents chunked by ragframe at window 200, overlap 50 (about
    10,000 chunks), top 100, and Lucene's defaults changed (k1 0.9, b 0.4)."""
    data = require_cranfield("docs.parquet", "queries.parquet")
    docs = pl.read_parquet(data / "docs.parquet")
    chunks = rf.chunk(docs, rf.WindowConfig(window_chars=200, overlap_chars=50)).collect()
    queries = pl.read_parquet(data / "queries.parquet")
    for k, params in ((10, {}), (100, {"k1": 0.9, "b": 0.4})):
        same, worst, differ = _compare(chunks, queries, k, name, **params)
        assert same == queries.height, (k, differ[:10])
        assert worst == 0.0


@pytest.mark.parametrize("name", FORMS)
def test_adversarial_text_scores_as_lucene(name: str) -> None:
    """Case, repeated query words (Lucene boosts them), tokens Lucene splits or keeps
    (``e.g``, ``2.71``, ``x-y``), words past 255 characters, empty and null chunks,
    a query with no token, operator words (plain words here and in the oracle)."""
    rng = np.random.default_rng(3)
    words = [
        "Wing",
        "wing",
        "WING",
        "e.g.",
        "2.71",
        "x-y",
        "İstanbul",
        "straße",
        "ΣΑΣ",
        "a" * 300,
        "body",
        "the",
        "of",
        "flow",
        "prandtl's",
        "AND",
        "NOT",
        "日本語",
    ]
    texts: list[str | None] = [
        " ".join(rng.choice(words, size=rng.integers(1, 40))) for _ in range(400)
    ]
    texts[5], texts[17] = "", None
    chunks = pl.DataFrame(
        {"doc_id": np.arange(400) // 3, "chunk_index": np.arange(400) % 3, "text": texts},
        schema_overrides={"text": pl.String},
    )
    queries = pl.DataFrame(
        {
            "query_id": np.arange(60),
            "text": [
                "wing wing wing body",
                "?!",
                "",
                "İSTANBUL flow flow",
                "e.g. 2.71",
                "x-y AND NOT",
                "a" * 300 + " a",
                "日本",
                *[" ".join(rng.choice(words, size=5)) for _ in range(52)],
            ],
        }
    )
    same, worst, differ = _compare(chunks, queries, 20, name)
    assert same == queries.height, differ
    assert worst == 0.0


def test_the_one_byte_norm_is_lucenes() -> None:
    lengths = [
        *range(0, 2000),
        *np.unique(np.geomspace(2000, 2**31 - 1, 3000).astype(np.int64)).tolist(),
    ]
    codes, decoded = lucene_bm25.norms(lengths)
    assert length_to_byte(lengths).tolist() == codes
    assert byte_to_length(np.arange(256)).tolist() == decoded
