"""Span judgements (SPEC 7, issue 28): ``read_qrels`` with ``start_char``/``end_char``,
``span_recall``/``span_precision`` and the chunk level of ``evaluate``, by hand and
against the plain reference (:mod:`ragframe.reference.spans`) with hypothesis."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.evaluate import evaluate
from ragframe.evaluate._metrics import HIGHER
from ragframe.reference import spans as ref


def _qrels(rows: list[tuple[object, object, int, int, int]]) -> pl.DataFrame:
    q, d, s, e, r = zip(*rows, strict=True) if rows else ([], [], [], [], [])
    frame = pl.DataFrame(
        {"query_id": q, "doc_id": d, "start_char": s, "end_char": e, "relevance": r},
        schema={
            "query_id": pl.Int64,
            "doc_id": pl.Int64,
            "start_char": pl.Int64,
            "end_char": pl.Int64,
            "relevance": pl.Int64,
        },
    )
    return rf.read_qrels(frame)


def _blocks(rows: list[tuple[int, int, int, int, int]]) -> pl.DataFrame:
    """Blocks ``(query_id, doc_id, start_char, end_char, char_count)`` in rank order."""
    q, d, s, e, n = zip(*rows, strict=True)
    ranks = [sum(1 for x in q[:i] if x == q[i]) for i in range(len(q))]
    return pl.DataFrame(
        {
            "query_id": q,
            "block_rank": ranks,
            "entity_id": d,
            "char_count": n,
            "truncated": [b - a > m for a, b, m in zip(s, e, n, strict=True)],
            "start_char": s,
            "end_char": e,
        }
    )


def _metrics(
    qrels: pl.DataFrame, blocks: pl.DataFrame
) -> dict[object, tuple[float | None, float | None]]:
    out = evaluate(qrels, blocks=blocks, max_characters=10_000).collect()
    return {
        r["query_id"]: (r["span_recall"], r["span_precision"]) for r in out.iter_rows(named=True)
    }


def test_read_qrels_spans_frame_and_file(tmp_path: Path) -> None:
    """Offsets kept, ids as written (a CSV's leading-zero id stays text), Parquet too."""
    path = tmp_path / "spans.csv"
    path.write_text("query_id,doc_id,start_char,end_char,relevance\n01,d1,0,5,1\n")
    got = rf.read_qrels(path)
    assert got.columns == ["query_id", "doc_id", "start_char", "end_char", "relevance", "gain"]
    assert got.row(0) == ("01", "d1", 0, 5, 1, 1.0)
    got.drop("gain").write_parquet(tmp_path / "spans.parquet")
    assert rf.read_qrels(tmp_path / "spans.parquet").equals(got)
    assert _qrels([(1, 7, 3, 9, 2)]).row(0) == (1, 7, 3, 9, 2, 2.0)


def test_span_metrics_hand_computed() -> None:
    """Query 1, doc 7: spans [0,10) g1 and [5,20) g2 overlap (union 20 characters),
    [50,60) grade 0 counts for nothing, [30,30) is empty. Blocks [0,10) and [15,25)
    cover 15 of them; 20 characters sent. Query 2: block on an unjudged document."""
    qrels = _qrels(
        [(1, 7, 0, 10, 1), (1, 7, 5, 20, 2), (1, 7, 50, 60, 0), (1, 7, 30, 30, 1), (2, 8, 0, 4, 1)]
    )
    blocks = _blocks([(1, 7, 0, 10, 10), (1, 7, 15, 25, 10), (2, 9, 0, 5, 5)])
    got = _metrics(qrels, blocks)
    assert got[1] == (pytest.approx(0.75), pytest.approx(0.75))
    assert got[2] == (0.0, 0.0)


def test_overlapping_blocks_count_once_in_recall_each_time_in_precision() -> None:
    qrels = _qrels([(1, 7, 0, 10, 1)])
    blocks = _blocks([(1, 7, 0, 10, 10), (1, 7, 0, 10, 10), (1, 7, 5, 30, 25)])
    recall, precision = _metrics(qrels, blocks)[1]
    assert recall == 1.0 and precision == pytest.approx(10 / 45)


def test_nested_and_touching_spans_and_truncated_block() -> None:
    """[0,4) and [4,8) touch (8 characters); [1,3) nests. The block [2,12) holds only
    its first 3 characters: [2,5)."""
    qrels = _qrels([(1, 7, 0, 4, 1), (1, 7, 4, 8, 1), (1, 7, 1, 3, 1)])
    recall, precision = _metrics(qrels, _blocks([(1, 7, 2, 12, 3)]))[1]
    assert recall == pytest.approx(3 / 8) and precision == 1.0


def test_document_judgement_is_best_span() -> None:
    """Document-level metrics see a document as its best span: d7 gain 2, d8 not
    relevant (grade 0), so recall@2 of the ranking d8, d7 is 1 and ndcg is 1/log2(3)."""
    qrels = _qrels([(1, 7, 0, 4, 1), (1, 7, 9, 12, 2), (1, 8, 0, 3, 0)])
    run = pl.DataFrame({"query_id": [1, 1], "doc_id": [8, 7], "score": [2.0, 1.0]})
    row = evaluate(qrels, candidates=run, k=[2]).collect().row(0, named=True)
    assert row["n_relevant"] == 1 and row["recall@2"] == 1.0
    assert row["ndcg@2"] == pytest.approx(1 / math.log2(3))


def test_chunk_level_hand_computed() -> None:
    """Chunks of d7: 0 [0,10), 1 [10,20), 2 [20,30). Span [12,22) g1 overlaps chunks 1
    and 2; [30,35) touches chunk 2 without overlapping. Ranking 0, 2: precision@2 0.5,
    recall@2 0.5 (two relevant chunks in the store)."""
    qrels = _qrels([(1, 7, 12, 22, 1), (1, 7, 30, 35, 1)])
    chunks = pl.DataFrame(
        {
            "doc_id": [7, 7, 7],
            "chunk_index": [0, 1, 2],
            "start_char": [0, 10, 20],
            "end_char": [10, 20, 30],
        }
    )
    run = pl.DataFrame(
        {"query_id": [1, 1], "doc_id": [7, 7], "chunk_index": [0, 2], "score": [2.0, 1.0]}
    )
    row = (
        evaluate(qrels, candidates=run, k=[2], chunks=chunks, level="chunk")
        .collect()
        .row(0, named=True)
    )
    assert row["precision@2"] == 0.5 and row["recall@2"] == 0.5
    assert row["mrr"] == 0.5
    want = ref.chunk_gains(
        [(1, 7, 12, 22, 1.0), (1, 7, 30, 35, 1.0)], [(7, 0, 0, 10), (7, 1, 10, 20), (7, 2, 20, 30)]
    )
    assert want == {(1, 7, 1): 1.0, (1, 7, 2): 1.0}


def test_directions_registered() -> None:
    assert {"span_recall", "span_precision"} <= HIGHER


_span = st.tuples(
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(0, 30),
    st.integers(0, 12),
    st.integers(-1, 3),
)
_block = st.tuples(
    st.integers(1, 4),
    st.integers(1, 3),
    st.integers(0, 30),
    st.integers(0, 12),
    st.integers(1, 12),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_span, max_size=12), st.lists(_block, min_size=1, max_size=8))
def test_span_metrics_match_reference(
    raw_spans: list[tuple[int, int, int, int, int]],
    raw_blocks: list[tuple[int, int, int, int, int]],
) -> None:
    """Overlapping, nested, touching and empty spans, grades <= 0, several documents,
    queries with blocks but no judgements (recall 0), blocks of unjudged documents."""
    spans = [(q, d, s, s + n, g) for q, d, s, n, g in raw_spans]
    blocks = [(q, d, s, s + n, min(m, n) if n else 0) for q, d, s, n, m in raw_blocks]
    blocks = [b for b in blocks if b[4] > 0] or [(1, 1, 0, 1, 1)]
    got = _metrics(_qrels(spans), _blocks(blocks))
    want = ref.span_metrics([(q, d, s, e, float(g)) for q, d, s, e, g in spans], blocks)
    for query, (recall, precision) in want.items():
        assert got[query][0] == (None if recall is None else pytest.approx(recall))
        assert got[query][1] == (None if precision is None else pytest.approx(precision))
    assert set(got) == set(want)


@settings(max_examples=40, deadline=None)
@given(st.lists(_span, min_size=1, max_size=10))
def test_chunk_level_matches_reference(raw_spans: list[tuple[int, int, int, int, int]]) -> None:
    """recall@k at chunk level: relevant chunks ranked / relevant chunks of the store,
    against the reference's chunk gains (chunks of 5 characters, 8 per document)."""
    spans = [(q, d, s, s + n, g) for q, d, s, n, g in raw_spans]
    chunks = [(d, i, 5 * i, 5 * i + 5) for d in (1, 2, 3) for i in range(8)]
    store = pl.DataFrame(
        chunks, schema=["doc_id", "chunk_index", "start_char", "end_char"], orient="row"
    )
    ranked = [(q, d, i) for q in (1, 2, 3) for d in (1, 2) for i in range(0, 8, 2)]
    run = pl.DataFrame(ranked, schema=["query_id", "doc_id", "chunk_index"], orient="row")
    run = run.with_columns(score=-pl.int_range(pl.len()).cast(pl.Float64))
    out = evaluate(_qrels(spans), candidates=run, k=[100], chunks=store, level="chunk").collect()
    gains = ref.chunk_gains([(q, d, s, e, float(g)) for q, d, s, e, g in spans], chunks)
    for row in out.iter_rows(named=True):
        mine = {k for k in gains if k[0] == row["query_id"]}
        hit = {k for k in mine if (k[0], k[1], k[2]) in set(ranked)}
        if row["query_id"] not in {s[0] for s in spans}:
            assert row["recall@100"] is None  # unjudged, as at document level
            continue
        assert row["recall@100"] == pytest.approx(len(hit) / len(mine) if mine else 0.0)


def test_whole_document_spans_equal_document_judgements() -> None:
    """Judging each document as the span 0..len gives the document judgements' list
    metrics, and the best of several spans is the document's grade."""
    docs = pl.DataFrame({"query_id": [1, 1, 1, 2, 2], "doc_id": [5, 6, 7, 5, 8]})
    grades = [2, 0, -1, 1, 3]
    plain = rf.read_qrels(docs.with_columns(relevance=pl.Series(grades)))
    spans = _qrels(
        [(q, d, 0, 100, g) for (q, d), g in zip(docs.rows(), grades, strict=True)]
        + [(1, 5, 10, 20, 1), (2, 8, 0, 0, 0)]
    )
    run = pl.DataFrame(
        {"query_id": [1, 1, 1, 2, 2], "doc_id": [6, 5, 9, 8, 7], "score": [3.0, 2, 1, 2, 1]}
    )
    want = evaluate(plain, candidates=run, k=[1, 3]).collect()
    got = evaluate(spans, candidates=run, k=[1, 3]).collect()
    assert got.equals(want)
