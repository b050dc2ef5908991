"""The document ranking (its kernels) against a plain per-query ranking, and the ranks
``evaluate`` looks up against the ranking joined with the judgements: duplicates,
ties, NaN and signed zeros, null scores and ids, string and integer ids, queries in
any order. Example counts come from the hypothesis profile in ``conftest.py``."""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe.evaluate import document_ranking, evaluate
from ragframe.evaluate._lists import relevant_documents
from ragframe.evaluate._qrels import read_qrels
from ragframe.evaluate._runs import ranking_rows, relevant_ranks
from ragframe.schema import T_POSITION

NAN = float("nan")
SCORES = [NAN, -0.0, 0.0, 0.1, 0.5, 0.5, 0.9, -1.0, math.inf, None]


def _order(score: float) -> tuple[int, float]:
    """Polars' descending order: NaN first, then by score down (-0.0 == 0.0)."""
    return (0, 0.0) if math.isnan(score) else (1, -score)


def plain_ranking(rows: list[tuple[Any, Any, float | None]]) -> list[tuple[Any, Any, float, int]]:
    """Per query, in order (null first): its documents by best score (NaN ignored
    unless all are NaN), descending, ties by first appearance."""
    queries: dict[Any, dict[Any, list[Any]]] = {}
    for row, (query, doc, score) in enumerate(rows):
        if doc is None:
            continue
        value = 0.0 if score is None else score
        docs = queries.setdefault(query, {})
        if doc not in docs:
            docs[doc] = [value, row]
        elif math.isnan(docs[doc][0]) or value > docs[doc][0]:
            docs[doc][0] = value
    out = []
    for query in sorted(queries, key=lambda q: (q is not None, q)):
        docs = queries[query]
        ranked = sorted(docs, key=lambda d: (_order(docs[d][0]), docs[d][1]))
        out += [(query, d, docs[d][0], r) for r, d in enumerate(ranked, start=1)]
    return out


@st.composite
def runs(draw: st.DrawFn) -> pl.DataFrame:
    """Rows in any order: a few queries (a null one too), documents repeated; ids
    integers or strings."""
    query = st.one_of(st.none(), st.integers(0, 4)) if draw(st.booleans()) else st.integers(0, 4)
    doc = st.one_of(st.integers(0, 12), st.none()) if draw(st.booleans()) else st.integers(0, 12)
    rows = draw(st.lists(st.tuples(query, doc, st.sampled_from(SCORES)), max_size=60))
    if draw(st.booleans()):
        rows.sort(key=lambda r: (r[0] is not None, r[0] or 0))  # grouped: the fast path
    frame = pl.DataFrame(
        rows,
        schema={"query_id": pl.Int64, "doc_id": pl.Int64, "similarity": pl.Float64},
        orient="row",
    )
    return _typed(frame, draw(st.booleans()), draw(st.booleans()))


def _typed(frame: pl.DataFrame, query_strings: bool, doc_strings: bool) -> pl.DataFrame:
    """``frame`` with its integer ids as strings where asked."""
    ids = [("query_id", "q{}", query_strings), ("doc_id", "d{}", doc_strings)]
    return frame.with_columns(pl.format(f, n).alias(n) for n, f, asked in ids if asked)


def _same(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g[:2] == w[:2] and g[3] == w[3], (g, w)
        assert g[2] == w[2] or (math.isnan(g[2]) and math.isnan(w[2])), (g, w)


@given(runs())
def test_document_ranking_equals_the_plain_ranking(run: pl.DataFrame) -> None:
    got = document_ranking(run).collect().rows()
    _same(got, plain_ranking(run.rows()))


@pytest.mark.parametrize("count_up_to", [0, 1000], ids=["sorted", "counted"])
@given(run=runs(), data=st.data())
def test_relevant_ranks_are_the_rankings_joined_with_the_judgements(
    run: pl.DataFrame, data: st.DataObject, count_up_to: int
) -> None:
    """Duplicate judgements count twice, as a join counts them; every ranked query
    has a row."""
    pairs = st.tuples(st.integers(0, 5), st.integers(0, 14), st.floats(0.5, 3.0))
    judged = pl.DataFrame(
        data.draw(st.lists(pairs, max_size=30)),
        schema={"query_id": pl.Int64, "doc_id": pl.Int64, "gain": pl.Float64},
        orient="row",
    )
    judged = _typed(judged, *(run.schema[n] == pl.String for n in ("query_id", "doc_id")))
    relevant = relevant_documents(judged)
    found = relevant_ranks(ranking_rows(run), relevant, count_up_to=count_up_to).collect()
    ranking = document_ranking(run).collect()
    joined = ranking.join(relevant, on=["query_id", "doc_id"]).select("query_id", "rank", "gain")
    got = found.drop_nulls()
    assert sorted(got.select("query_id", "rank", "gain").rows()) == sorted(joined.rows())
    assert set(found["query_id"].to_list()) == set(ranking["query_id"].to_list())
    # in query then rank order, each with its place among its query's found
    assert got.equals(got.sort("query_id", "rank", maintain_order=True))
    place = pl.col("rank").rank("ordinal").over("query_id")
    assert got[T_POSITION].to_list() == got.select(place)["rank"].to_list()


def test_ties_go_to_the_first_appearance_of_the_document_and_nan_ranks_first() -> None:
    """d1 appears first (0.5) and later scores 0.9, as d2 does once: d1 first. NaN
    above every number; -0.0 ties with 0.0 (first appearance again)."""
    run = pl.DataFrame(
        {
            "query_id": [1, 1, 1, 1, 1, 1],
            "doc_id": [1, 2, 3, 1, 4, 5],
            "similarity": [0.5, 0.9, -0.0, 0.9, NAN, 0.0],
        }
    )
    ranking = document_ranking(run).collect()
    assert ranking["doc_id"].to_list() == [4, 1, 2, 3, 5]
    qrels = read_qrels(pl.DataFrame({"query_id": [1], "doc_id": [2], "relevance": [1]}))
    assert evaluate(qrels, candidates=run, k=1).collect()["mrr"].item() == 1 / 3


def test_an_empty_run_ranks_nothing_and_scores_judged_queries_zero() -> None:
    run = pl.DataFrame(schema={"query_id": pl.Int64, "doc_id": pl.Int64, "similarity": pl.Float64})
    assert document_ranking(run).collect().height == 0
    qrels = read_qrels(pl.DataFrame({"query_id": [1], "doc_id": [2], "relevance": [1]}))
    per = evaluate(qrels, candidates=run, k=1).collect()
    assert per.select("query_id", "mrr", "ndcg@1").rows() == [(1, 0.0, 0.0)]
