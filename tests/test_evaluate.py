"""ragframe.evaluate: qrels and runs in, list metrics against trec_eval (and ranx),
context metrics against hand-computed cases, every query accounted for, and what the
metrics say on Cranfield."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe
from ragframe.errors import ConfigError, RagframeError, SchemaError
from ragframe.evaluate import (
    document_ranking,
    evaluate,
    read_qrels,
    read_run,
    summarize,
    write_run,
)
from tests.conftest import require_cranfield

CRANFIELD_GAIN = {1: 4, 2: 3, 3: 2, 4: 1}
"""Cranfield's grades run 1 (complete answer) to 4 (minimal interest); -1 is not
relevant."""
TREC_MEASURES = {
    "map": "map",
    "recip_rank": "mrr",
    "P_1": "precision@1",
    "P_10": "precision@10",
    "recall_10": "recall@10",
    "recall_50": "recall@50",
    "ndcg_cut_5": "ndcg@5",
    "ndcg_cut_10": "ndcg@10",
    "ndcg_cut_50": "ndcg@50",
}


def _cranfield(name: str) -> pl.DataFrame:
    return pl.read_parquet(require_cranfield(f"{name}.parquet") / f"{name}.parquet")


def _trec_eval(qrels: pl.DataFrame, ranking: pl.DataFrame) -> dict[str, dict[str, float]]:
    """trec_eval's own numbers (pytrec_eval), for our document ranking given as
    strictly decreasing scores, so trec_eval's tie order (by docno) never applies."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run: dict[str, dict[str, float]] = {}
    for qid, did, rank in ranking.select("query_id", "doc_id", "rank").iter_rows():
        run.setdefault(str(qid), {})[str(did)] = float(1_000_000 - rank)
    judged: dict[str, dict[str, int]] = {}
    for qid, did, gain in qrels.select("query_id", "doc_id", "gain").iter_rows():
        judged.setdefault(str(qid), {})[str(did)] = int(gain)
    evaluator = pytrec_eval.RelevanceEvaluator(judged, set(TREC_MEASURES))
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


def _assert_equal_to_trec_eval(qrels: pl.DataFrame, candidates: pl.DataFrame) -> int:
    per = evaluate(qrels, candidates=candidates, k=[1, 5, 10, 50]).collect()
    ours = {str(row["query_id"]): row for row in per.iter_rows(named=True)}
    theirs = _trec_eval(qrels, document_ranking(candidates).collect())
    assert theirs, "trec_eval evaluated no query"
    for qid, measures in theirs.items():
        for trec, name in TREC_MEASURES.items():
            assert ours[qid][name] == pytest.approx(measures[trec], abs=1e-12), (qid, name)
    return len(theirs)


def test_list_metrics_equal_trec_eval_on_cranfield() -> None:
    qrels = read_qrels(_cranfield("qrels"), gain=CRANFIELD_GAIN)
    assert _assert_equal_to_trec_eval(qrels, _cranfield("results_minilm")) == 225


def test_list_metrics_equal_trec_eval_with_ties_and_string_ids() -> None:
    """Ties in score, several chunks per document (its best counts), string ids, a
    document that is relevant but never retrieved, queries with no relevant document."""
    import random

    rng = random.Random(7)
    rows: list[dict[str, Any]] = []
    for q in range(40):
        for _ in range(rng.randint(1, 30)):
            doc = f"d{rng.randint(0, 25)}"
            rows.append(
                {"query_id": f"q{q}", "doc_id": doc, "similarity": rng.choice([0.1, 0.5, 0.5, 0.9])}
            )
    judged = [
        {"query_id": f"q{q}", "doc_id": f"d{d}", "relevance": rng.choice([-1, 0, 1, 2, 3])}
        for q in range(45)
        for d in rng.sample(range(30), 8)
    ]
    qrels = read_qrels(pl.DataFrame(judged))
    assert _assert_equal_to_trec_eval(qrels, pl.DataFrame(rows)) == 40


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_list_metrics_equal_ranx_on_cranfield() -> None:
    """ranx (a test-only dependency: ``pip install ranx``; its first use compiles for a
    minute or more) gives the same numbers per query."""
    ranx = pytest.importorskip("ranx")
    qrels = read_qrels(_cranfield("qrels"), gain=CRANFIELD_GAIN)
    ranking = document_ranking(_cranfield("results_minilm")).collect()
    scores: dict[str, dict[str, float]] = {}
    for qid, did, rank in ranking.select("query_id", "doc_id", "rank").iter_rows():
        scores.setdefault(str(qid), {})[str(did)] = float(1_000_000 - rank)
    gains: dict[str, dict[str, int]] = {}
    relevant = qrels.filter(pl.col("gain") > 0).select("query_id", "doc_id", "gain")
    for qid, did, gain in relevant.iter_rows():
        gains.setdefault(str(qid), {})[str(did)] = int(gain)
    run, truth = ranx.Run(scores), ranx.Qrels(gains)
    names = ["ndcg@10", "recall@10", "precision@10", "map", "mrr", "hit_rate@10"]
    theirs = ranx.evaluate(truth, run, names, return_mean=False)
    per = evaluate(qrels, candidates=_cranfield("results_minilm"), k=10).collect()
    mine = per.filter(pl.col("n_relevant") > 0).sort("query_id")
    order = sorted(run.keys(), key=int)
    for name in names:
        got = dict(zip(run.keys(), theirs[name], strict=True))
        column = "hit@10" if name == "hit_rate@10" else name
        want = [got[q] for q in order if int(q) in set(mine["query_id"].to_list())]
        assert mine[column].to_list() == pytest.approx(want, abs=1e-12), name


def test_hand_computed_list_metrics() -> None:
    """Query 1: ranking d3 (0.9), d7 (0.8, its best chunk), d5; relevant d7 (gain 2)
    and d9 (gain 1, never retrieved)."""
    qrels = pl.DataFrame({"query_id": [1, 1, 1], "doc_id": [7, 9, 5], "relevance": [2, 1, -1]})
    run = pl.DataFrame(
        {
            "query_id": [1, 1, 1, 1],
            "doc_id": [7, 3, 7, 5],
            "similarity": [0.2, 0.9, 0.8, 0.1],
        }
    )
    row = evaluate(qrels, candidates=run, k=[1, 2]).collect().row(0, named=True)
    assert row["n_relevant"] == 2
    assert row["mrr"] == 0.5
    assert row["map"] == pytest.approx((1 / 2) / 2)
    assert row["precision@2"] == 0.5 and row["recall@2"] == 0.5 and row["hit@1"] == 0.0
    ideal = 2 + 1 / math.log2(3)
    assert row["ndcg@2"] == pytest.approx((2 / math.log2(3)) / ideal)


def test_every_query_is_accounted_for() -> None:
    """Judged without candidates: 0; candidates without judgements: reported with null
    metrics and not averaged; the summary counts both."""
    qrels = pl.DataFrame({"query_id": [1, 2], "doc_id": [7, 8], "relevance": [1, 1]})
    run = pl.DataFrame({"query_id": [1, 3], "doc_id": [7, 7], "similarity": [0.5, 0.5]})
    per = evaluate(qrels, candidates=run, k=5).collect()
    assert per["query_id"].to_list() == [1, 2, 3]
    assert per["judged"].to_list() == [True, True, False]
    assert per["ndcg@5"].to_list() == [1.0, 0.0, None]
    summary = summarize(per)
    assert summary.select("queries", "judged", "unjudged").row(0) == (3, 2, 1)
    assert summary["ndcg@5"].item() == 0.5


@pytest.mark.parametrize("engine", ["streaming", "auto"])
def test_the_plan_survives_a_consumer_that_stops_early(engine: Any) -> None:
    """A join against an empty frame finishes the plan before it has read its inputs (as
    ``partition.evaluate_part`` does for a partition without queries). Polars 2.1's
    streaming ``gather`` by a column then panicked (``PortState::Done``): the ideal DCG
    must not place rows with one."""
    qrels = pl.DataFrame({"query_id": [1, 1, 2], "doc_id": [7, 9, 8], "relevance": [2, 1, 1]})
    run = pl.DataFrame({"query_id": [1, 2], "doc_id": [7, 3], "similarity": [0.5, 0.4]})
    blocks = pl.DataFrame(
        {
            "query_id": [1],
            "block_rank": [0],
            "entity_id": [7],
            "char_count": [10],
            "truncated": [False],
        }
    )
    none = pl.LazyFrame({"query_id": []}, schema={"query_id": pl.Int64})
    for plan in (
        evaluate(qrels, candidates=run, k=[1, 5]),
        evaluate(qrels, blocks=blocks, max_blocks=2, max_characters=100),
    ):
        whole = plan.collect()
        for how in ("semi", "inner"):
            out = plan.join(none, on="query_id", how=how).collect(engine=engine)
            assert out.height == 0 and out.columns[: whole.width] == whole.columns
        kept = plan.join(none, on="query_id", how="anti", maintain_order="left")
        assert kept.collect(engine=engine).equals(whole)


def test_context_metrics_hand_computed() -> None:
    """Blocks of query 1: d7 (relevant, gain 2) twice, d3 (unjudged), d5 (judged not
    relevant); d9 (gain 1) never reaches the context."""
    qrels = pl.DataFrame({"query_id": [1, 1, 1], "doc_id": [7, 9, 5], "relevance": [2, 1, 0]})
    blocks = pl.DataFrame(
        {
            "query_id": [1, 1, 1, 1],
            "block_rank": [0, 1, 2, 3],
            "entity_id": [3, 7, 7, 5],
            "char_count": [10, 20, 30, 40],
            "truncated": [False, False, False, True],
            "chunk_indexes": [[0], [0, 1], [1, 2], [4]],
        }
    )
    chunks = pl.DataFrame(
        {
            "doc_id": [7, 7, 7, 3, 5],
            "chunk_index": [0, 1, 2, 0, 4],
            "start_char": [0, 300, 600, 0, 0],
            "end_char": [400, 700, 1000, 400, 400],
        }
    )
    per = evaluate(qrels, blocks=blocks, max_blocks=5, max_characters=200, chunks=chunks)
    row = per.collect().row(0, named=True)
    assert row["context_recall"] == 0.5 and row["context_recall_capped"] == 0.5
    assert row["chars_used"] == 100 and row["budget_share"] == 0.5
    assert row["relevant_share"] == pytest.approx(0.5)
    assert row["unjudged_share"] == pytest.approx(0.1)
    assert row["first_relevant_rank"] == 1 and row["first_relevant_offset"] == 10
    assert row["truncated_blocks"] == 1 and row["blocks"] == 4
    ideal = 2 + 1 / math.log2(3)
    assert row["context_ndcg"] == pytest.approx((2 / math.log2(3)) / ideal)
    # d7: block 1 covers [0, 700), block 2 [300, 1000): 400 characters twice
    assert row["duplicate_chars"] == 400


def test_qrels_from_trec_and_beir_files(tmp_path: Path) -> None:
    trec = tmp_path / "qrels.txt"
    trec.write_text("1 0 d1 2\n1\t0  d2 -1\n\n2 0 d1 0\n")
    table = read_qrels(trec)
    assert table.select("query_id", "doc_id", "relevance", "gain").rows() == [
        ("1", "d1", 2, 2.0),  # ids as written: strings
        ("1", "d2", -1, 0.0),
        ("2", "d1", 0, 0.0),
    ]
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("01 0 0123 1\n1 0 5 1\n")
    assert read_qrels(numbers)["doc_id"].to_list() == ["0123", "5"]
    assert read_qrels(numbers, ids="integers").rows() == [(1, 123, 1, 1.0), (1, 5, 1, 1.0)]
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tc1\t1\n")
    assert read_qrels(beir)["doc_id"].to_list() == ["c1"]
    with pytest.raises(RagframeError, match=r"no qrels/dev\.tsv"):
        read_qrels(beir, split="dev")
    bad = tmp_path / "bad.txt"
    bad.write_text("1 0 d1 2\n1 0 d2\n")
    with pytest.raises(RagframeError, match="line 2: expected 4 fields"):
        read_qrels(bad)


def test_trec_run_files_round_trip(tmp_path: Path) -> None:
    run = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "similarity": [0.3, 0.9, 0.1]}
    )
    ranking = document_ranking(run).collect()
    path = tmp_path / "run.txt"
    write_run(ranking, path, tag="test")
    assert path.read_text().splitlines()[0] == "q1 Q0 b 1 0.9 test"
    back = read_run(path)
    assert (
        back.select("query_id", "doc_id", "rank").rows()
        == ranking.select("query_id", "doc_id", "rank").rows()
    )
    assert [p.name for p in tmp_path.iterdir()] == ["run.txt"]  # no stray temporary


def test_bad_arguments_are_clear_errors() -> None:
    qrels = pl.DataFrame({"query_id": [1], "doc_id": [7], "relevance": [1]})
    with pytest.raises(ConfigError, match="needs candidates"):
        evaluate(qrels)
    run = pl.DataFrame({"query_id": [1], "doc_id": [7], "similarity": [0.5]})
    with pytest.raises(ConfigError, match="k must be"):
        evaluate(qrels, candidates=run, k=0)
    with pytest.raises(SchemaError, match="missing column 'relevance'"):
        evaluate(qrels.drop("relevance"), candidates=run)
    strings = run.with_columns(pl.col("doc_id").cast(pl.String))
    with pytest.raises(SchemaError, match="expected integer or string ids"):
        evaluate(qrels, candidates=strings.with_columns(pl.col("query_id").cast(pl.Float64)))


def test_on_cranfield_merging_removes_the_duplicate_characters_naive_top_k_sends() -> None:
    """The sweep's example finding: at equal character budget, merged context (gap 1)
    against naive top-K concatenation (gap 0)."""
    qrels = read_qrels(_cranfield("qrels"), gain=CRANFIELD_GAIN)
    results, chunks = _cranfield("results_minilm"), _cranfield("chunks")
    found = {}
    for gap in (1, 0):
        config = ragframe.PostprocessConfig(
            top_k=20, min_similarity=0.0, max_chunk_gap=gap, max_blocks=10, max_characters=3000
        )
        blocks = ragframe.postprocess(results, config, chunks=chunks)
        per = evaluate(qrels, blocks=blocks, max_blocks=10, max_characters=3000, chunks=chunks)
        found[gap] = summarize(per.collect()).row(0, named=True)
    assert found[1]["duplicate_chars"] == 0
    assert found[0]["duplicate_chars"] > 50  # overlapping windows sent twice
    for gap in (0, 1):
        assert found[gap]["budget_share"] <= 1.0
        assert 0 < found[gap]["context_recall"] < 1


def test_the_cli_prints_the_quality_table_of_the_default_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's first command: postprocess the bundled data, then evaluate it."""
    from ragframe.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    blocks, metrics, means = tmp_path / "b.parquet", tmp_path / "m.parquet", tmp_path / "s.csv"
    results, chunks = str(data / "results.parquet"), str(data / "chunks.parquet")
    assert main(["postprocess", results, "--chunks", chunks, "-o", str(blocks)]) == 0
    qrels = ["--qrels", str(data / "qrels.parquet")]
    args = ["evaluate", str(blocks), *qrels, "--candidates", results, "--k", "5,10"]
    assert main([*args, "--max-blocks", "5", "-o", str(metrics), "--summary", str(means)]) == 0
    shown = capsys.readouterr().out
    assert "ragframe evaluate" in shown and "context_recall" in shown and "ndcg@10" in shown
    per_query = pl.read_parquet(metrics)
    assert per_query.height == 20 and per_query["judged"].all()
    summary = pl.read_csv(means)
    assert summary["queries"].item() == 20
    assert 0 < summary["ndcg@10"].item() <= 1 and 0 < summary["context_recall"].item() <= 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", "0"], "expected positive integers"),
        (["--k", "ten"], "expected integers separated by commas"),
        (["--gain", "1=4"], "expected GRADE:GAIN pairs"),
    ],
)
def test_the_cli_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    from ragframe.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    args = ["evaluate", str(data / "results.parquet"), "--qrels", str(data / "qrels.parquet")]
    assert main([*args, *extra, "-o", str(tmp_path / "m.parquet")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and message in error and "Traceback" not in error
    assert list(tmp_path.iterdir()) == []
