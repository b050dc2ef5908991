"""What evaluate reads and how (issue 25): one reader for judgements and one for runs,
ids as written, the id rule between them, fetched content measured, trec_eval's ties
(against pytrec_eval), stated context depths and budgets, runs written only as they
are read back."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe as rf
from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError
from ragframe.evaluate import document_ranking, evaluate, read_qrels, read_run, write_run
from tests.conftest import require_cranfield

QRELS = pl.DataFrame({"query_id": [1, 1], "doc_id": [7, 9], "relevance": [1, 1]})


def _text(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# --- 1. ids as written ---------------------------------------------------------------


def test_a_trec_file_keeps_its_ids_as_written(tmp_path: Path) -> None:
    """Doc 0123 stays 0123 (it was read as 123 and a run of strings found nothing at
    rank 1), and queries 01 and 1 are two queries (they collided)."""
    qrels = read_qrels(_text(tmp_path, "q.txt", "01 0 0123 1\n1 0 0123 1\n1 0 d2 1\n"))
    assert qrels.select("query_id", "doc_id").rows() == [("01", "0123"), ("1", "0123"), ("1", "d2")]
    run = pl.DataFrame({"query_id": ["01"], "doc_id": ["0123"], "similarity": [0.9]})
    per = evaluate(qrels, candidates=run, k=1).collect()
    assert per.select("query_id", "mrr", "n_relevant").rows() == [
        ("01", 1.0, 1),
        ("1", 0.0, 2),
    ]


def test_a_csv_reads_digit_ids_as_strings(tmp_path: Path) -> None:
    path = _text(tmp_path, "q.csv", "query_id,doc_id,relevance\n01,0123,1\n")
    assert read_qrels(path).row(0) == ("01", "0123", 1, 1.0)
    run = _text(tmp_path, "r.csv", "query_id,doc_id,score\n01,0123,0.5\n")
    assert read_run(run).row(0) == ("01", "0123", 0.5)


def test_integer_ids_meet_strings_that_write_them(tmp_path: Path) -> None:
    """The one rule: "7" meets 7, and a string that does not write an integer plainly
    is an error, whichever side holds the strings."""
    qrels = read_qrels(_text(tmp_path, "q.txt", "1 0 7 1\n1 0 9 1\n"))
    run = pl.DataFrame({"query_id": [1, 1], "doc_id": [3, 7], "similarity": [0.9, 0.8]})
    assert evaluate(qrels, candidates=run, k=2).collect()["mrr"].to_list() == [0.5]
    strings = run.with_columns(pl.col("doc_id").cast(pl.String))
    assert evaluate(QRELS, candidates=strings, k=2).collect()["mrr"].to_list() == [0.5]
    with pytest.raises(DataError, match=r"column 'doc_id' has ids .*first: row 0: '0123'"):
        evaluate(read_qrels(_text(tmp_path, "z.txt", "1 0 0123 1\n")), candidates=run)
    with pytest.raises(DataError, match=r"first: row 1: 'd7'"):
        evaluate(QRELS, candidates=strings.with_columns(pl.Series("doc_id", ["3", "d7"]))).collect()
    with pytest.raises(DataError, match=r"column 'query_id' .*'01'"):
        evaluate(QRELS, candidates=run.with_columns(pl.lit("01").alias("query_id"))).collect()


def test_ids_integers_parses_on_request(tmp_path: Path) -> None:
    path = _text(tmp_path, "q.txt", "01 0 0123 1\n")
    assert read_qrels(path, ids="integers").row(0) == (1, 123, 1, 1.0)
    run = _text(tmp_path, "run.txt", "01 Q0 0123 1 2.5 bm25\n")
    assert read_run(run, ids="integers").row(0) == (1, 123, 1, 2.5, "bm25")
    collide = _text(tmp_path, "c.txt", "1 0 5 1\n01 0 5 0\n")
    with pytest.raises(
        DataError, match=r"c.txt, line 2: query_id 1, doc_id 5, relevance 0, judged 1 at"
    ):
        read_qrels(collide, ids="integers")


# --- 4. BOM, BEIR header, short rows, duplicates ------------------------------------


def test_a_byte_order_mark_is_not_part_of_the_first_id(tmp_path: Path) -> None:
    assert read_qrels(_text(tmp_path, "q.txt", b"\xef\xbb\xbf1 0 d1 1\n"))["query_id"][0] == "1"
    run = _text(tmp_path, "r.txt", b"\xef\xbb\xbfq1 Q0 d1 1 0.5 t\n")
    assert read_run(run)["query_id"][0] == "q1"


def test_a_beir_file_needs_its_header_and_full_rows(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    _text(beir, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\tc 1\t1\nq2\tc2\t2\n")
    assert read_qrels(beir).rows() == [("q1", "c 1", 1, 1.0), ("q2", "c2", 2, 2.0)]
    assert read_qrels(beir / "qrels" / "test.tsv").height == 2  # the file itself too
    _text(beir, "qrels/dev.tsv", "q1\tc1\t1\nq2\tc2\t1\n")
    with pytest.raises(RagframeError, match=r"dev.tsv, line 1: expected the header"):
        read_qrels(beir, split="dev")
    _text(beir, "qrels/short.tsv", "query-id\tcorpus-id\tscore\nq1\tc1\t1\nq2\tc2\n")
    with pytest.raises(RagframeError, match=r"short.tsv, line 3: expected 3 fields .*got 2"):
        read_qrels(beir, split="short")


def test_short_and_long_trec_lines_are_named(tmp_path: Path) -> None:
    with pytest.raises(RagframeError, match=r"q.txt, line 3: expected 4 fields .*got 3"):
        read_qrels(_text(tmp_path, "q.txt", "1 0 d1 1\n\n1 0 d2\n"))
    with pytest.raises(RagframeError, match=r"r.txt, line 1: expected 6 fields .*got 7"):
        read_run(_text(tmp_path, "r.txt", "1 Q0 d1 1 0.5 tag extra\n"))


def test_duplicate_judgements_are_refused_or_resolved_as_asked(tmp_path: Path) -> None:
    path = _text(tmp_path, "q.txt", "1 0 d1 2\n1 0 d2 1\n1 0 d1 0\n1 0 d2 1\n")
    with pytest.raises(DataError) as info:
        read_qrels(path)
    assert str(info.value).startswith(
        "qrels: 2 judgements repeat a (query_id, doc_id) judged before (1 with another "
        f"grade); first: {path}, line 3: query_id '1', doc_id 'd1', relevance 0, judged 2 "
        f"at {path}, line 1"
    )
    grades = {
        mode: read_qrels(path, duplicates=mode)["relevance"].to_list()
        for mode in ("first", "last", "max")
    }
    assert grades == {"first": [2, 1], "last": [0, 1], "max": [2, 1]}


def test_one_reader_takes_globs_folders_and_standard_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _text(tmp_path, "trec/a.txt", "1 0 d1 1\n")
    _text(tmp_path, "trec/b.txt", "2 0 d2 1\n")
    want = [("1", "d1"), ("2", "d2")]
    assert read_qrels(tmp_path / "trec").select("query_id", "doc_id").rows() == want
    assert read_qrels(f"{tmp_path}/trec/*.txt").select("query_id", "doc_id").rows() == want
    hive = tmp_path / "hive"
    for q in (1, 2):
        (hive / f"query_id={q}").mkdir(parents=True)
        pl.DataFrame({"doc_id": [f"d{q}"], "relevance": [1]}).write_parquet(
            hive / f"query_id={q}" / "part.parquet"
        )
    assert read_qrels(hive).sort("query_id").select("doc_id").to_series().to_list() == [
        "d1",
        "d2",
    ]
    for text in ("1 0 d1 1\n", "query_id,doc_id,relevance\n1,d1,1\n"):
        monkeypatch.setattr(sys, "stdin", _Stdin(text.encode()))
        monkeypatch.setattr("ragframe.io._sources.SPOOLED", [])
        assert read_qrels("-").select("query_id", "doc_id").row(0) == ("1", "d1")


class _Stdin:
    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)


def test_empty_files_are_errors_not_tracebacks(tmp_path: Path) -> None:
    for name in ("q.txt", "q.csv", "q.parquet"):
        with pytest.raises(RagframeError, match=r"the file is empty"):
            read_qrels(_text(tmp_path, name, b""))
    _text(tmp_path, "beir/qrels/test.tsv", b"")
    with pytest.raises(RagframeError, match=r"the file is empty; expected BEIR"):
        read_qrels(tmp_path / "beir")
    with pytest.raises(RagframeError, match=r"the file is empty; expected TREC run"):
        read_run(_text(tmp_path, "r.txt", b"\n\n"))


# --- 2. fetched content ---------------------------------------------------------------


def test_fetch_output_is_measured_by_its_content() -> None:
    """The blocks' char_count says 5; the LLM receives the fetched documents."""
    requests = pl.DataFrame(
        {
            "query_id": [1, 1],
            "query": ["lift", "lift"],
            "doc_id": [7, 3],
            "block_rank": [0, 1],
            "char_count": [5, 5],
            "truncated": [False, False],
        }
    )
    documents = pl.DataFrame({"doc_id": [7, 3], "content": ["x" * 40, "wings lift " * 500]})
    fetched = rf.fetch(requests, documents, rf.FetchConfig(fulltext_threshold=100)).collect()
    sent = fetched["content"].str.len_chars().sum()
    row = evaluate(QRELS, blocks=fetched, max_characters=10_000).collect().row(0, named=True)
    assert row["chars_used"] == sent > 40
    assert row["budget_share"] == sent / 10_000
    assert row["relevant_share"] == 40 / sent  # doc 7: relevant; doc 3: unjudged
    with pytest.raises(ConfigError, match="chunks with fetch output"):
        evaluate(QRELS, blocks=fetched, chunks=pl.DataFrame({"doc_id": [1]}))


def test_fetched_cranfield_context_is_measured_as_sent() -> None:
    """Cranfield's blocks fetched: the content sent is far longer than the blocks'
    char_count (the issue saw 2,755 reported against 6,875 sent per query)."""
    names = ("results_minilm.parquet", "chunks.parquet", "docs.parquet", "queries.parquet")
    folder = require_cranfield(*names)
    results = pl.read_parquet(folder / "results_minilm.parquet")
    chunks = pl.read_parquet(folder / "chunks.parquet")
    documents = pl.read_parquet(folder / "docs.parquet").select("doc_id", "content")
    queries = pl.read_parquet(folder / "queries.parquet").select("query_id", query="text")
    qrels = read_qrels(pl.read_parquet(folder / "qrels.parquet"), gain={1: 4, 2: 3, 3: 2, 4: 1})
    blocks = rf.postprocess(results, {"max_blocks": 5}, chunks=chunks).collect()
    requests = blocks.join(queries, on="query_id").drop("text")
    fetched = rf.fetch(requests, documents).collect()
    of_blocks = evaluate(qrels, blocks=blocks).collect()["chars_used"].mean()
    of_content = evaluate(qrels, blocks=fetched).collect()["chars_used"].mean()
    sent = fetched["content"].str.len_chars().sum() / blocks["query_id"].n_unique()
    assert isinstance(of_blocks, float) and isinstance(of_content, float)
    assert of_content == pytest.approx(sent) and of_content > 1.5 * of_blocks


# --- 3. ties: equal to trec_eval --------------------------------------------------------


def _tied(int_ids: bool, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run full of ties (three scores), several chunks per document, and graded
    judgements with -1 and 0."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for q in range(30):
        for _ in range(rng.randint(1, 40)):
            d = rng.randint(0, 30)
            rows.append(
                {
                    "query_id": q if int_ids else f"q{q}",
                    "doc_id": d if int_ids else f"d{d}",
                    "similarity": rng.choice([0.1, 0.5, 0.5, 0.9, 0.9, 0.9]),
                }
            )
    judged = [
        {
            "query_id": q if int_ids else f"q{q}",
            "doc_id": d if int_ids else f"d{d}",
            "relevance": rng.choice([-1, 0, 1, 2, 3]),
        }
        for q in range(33)
        for d in rng.sample(range(35), 10)
    ]
    return pl.DataFrame(rows), read_qrels(pl.DataFrame(judged))


KS = [1, 3, 5, 10, 20]
MEASURES = {"map": "map", "recip_rank": "mrr"}
for _k in KS:
    MEASURES |= {
        f"P_{_k}": f"precision@{_k}",
        f"recall_{_k}": f"recall@{_k}",
        f"ndcg_cut_{_k}": f"ndcg@{_k}",
        f"success_{_k}": f"hit@{_k}",
    }


def _pytrec_eval(run: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, dict[str, float]]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scores: dict[str, dict[str, float]] = {}
    best = run.group_by("query_id", "doc_id").agg(pl.col("similarity").max())
    for q, d, s in best.iter_rows():
        scores.setdefault(str(q), {})[str(d)] = float(s)
    gains: dict[str, dict[str, int]] = {}
    for q, d, g in qrels.select("query_id", "doc_id", "gain").iter_rows():
        gains.setdefault(str(q), {})[str(d)] = int(g)
    asked = {"map", "recip_rank"} | {
        f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "ndcg_cut", "success")
    }
    found: dict[str, dict[str, float]] = pytrec_eval.RelevanceEvaluator(gains, asked).evaluate(
        scores
    )
    return found


@pytest.mark.parametrize("int_ids", [True, False], ids=["integer-ids", "string-ids"])
@pytest.mark.parametrize("seed", [0, 1])
def test_ties_trec_eval_equals_pytrec_eval_on_every_measure(int_ids: bool, seed: int) -> None:
    run, qrels = _tied(int_ids, seed)
    theirs = _pytrec_eval(run, qrels)
    per = {}
    for ties in ("trec_eval", "input"):
        rows = evaluate(qrels, candidates=run, k=KS, ties=ties).collect()  # type: ignore[arg-type]
        per[ties] = {str(r["query_id"]): r for r in rows.iter_rows(named=True)}
    assert len(theirs) == 30
    differ = 0
    for q, measures in theirs.items():
        for trec, ours in MEASURES.items():
            assert per["trec_eval"][q][ours] == pytest.approx(measures[trec], abs=1e-12), (q, ours)
            differ += abs(per["input"][q][ours] - measures[trec]) > 1e-12
    assert differ > 0  # first appearance is not trec_eval's order on these ties


def test_trec_eval_ties_order_document_ids_as_text_descending() -> None:
    run = pl.DataFrame({"query_id": [1] * 4, "doc_id": [9, 10, 2, 30], "similarity": [0.5] * 4})
    ranked = document_ranking(run, ties="trec_eval").collect()["doc_id"].to_list()
    assert ranked == [9, 30, 2, 10]  # "9" > "30" > "2" > "10"
    assert document_ranking(run).collect()["doc_id"].to_list() == [9, 10, 2, 30]
    with pytest.raises(ConfigError, match="ties must be 'input' or 'trec_eval'"):
        document_ranking(run, ties="docid")  # type: ignore[arg-type]


# --- 6, 7. depth, budgets, nonsense parameters ---------------------------------------------


def test_context_ndcg_without_max_blocks_holds_every_relevant_document() -> None:
    """One block holding one of two relevant documents is not a perfect context (with
    the context's own length as depth it scored 1.0)."""
    blocks = pl.DataFrame(
        {
            "query_id": [1],
            "block_rank": [0],
            "entity_id": [7],
            "char_count": [10],
            "truncated": [False],
        }
    )
    ndcg = evaluate(QRELS, blocks=blocks).collect()["context_ndcg"].item()
    assert ndcg == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert evaluate(QRELS, blocks=blocks, max_blocks=1).collect()["context_ndcg"].item() == 1.0


def test_token_budgets_give_the_share_of_the_token_budget() -> None:
    blocks = pl.DataFrame(
        {
            "query_id": [1, 1],
            "block_rank": [0, 1],
            "entity_id": [7, 3],
            "char_count": [400, 100],
            "token_count": [90, 10],
            "truncated": [False, False],
        }
    )
    row = evaluate(QRELS, blocks=blocks, max_tokens=200).collect().row(0, named=True)
    assert (row["tokens_used"], row["budget_share"]) == (100, 0.5)
    with pytest.raises(ConfigError, match="budget_share is against one budget"):
        evaluate(QRELS, blocks=blocks, max_tokens=200, max_characters=8000)
    with pytest.raises(SchemaError, match="missing column 'token_count'"):
        evaluate(QRELS, blocks=blocks.drop("token_count"), max_tokens=200)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_characters": 0}, "max_characters must be in [1, "),
        ({"max_characters": -5}, "max_characters must be in [1, "),
        ({"max_blocks": 0}, "max_blocks must be in [1, "),
        ({"max_tokens": 0}, "max_tokens must be in [1, "),
        ({"max_blocks": 2.5}, "max_blocks must be an integer in [1, "),
    ],
)
def test_nonsense_budgets_are_refused(options: dict[str, Any], message: str) -> None:
    blocks = pl.DataFrame(
        {"query_id": [1], "block_rank": [0], "entity_id": [7], "char_count": [5], "truncated": [0]}
    ).with_columns(pl.col("truncated").cast(pl.Boolean))
    with pytest.raises(ConfigError) as info:
        evaluate(QRELS, blocks=blocks, **options)
    assert str(info.value).startswith(message)


# --- 7. runs written only as read back ---------------------------------------------------


@pytest.mark.parametrize(
    ("change", "tag", "message"),
    [
        ({"doc_id": ["a b", "c"]}, "t", "run: column 'doc_id' has ids that are empty or hold"),
        ({"query_id": ["", "q"]}, "t", "run: column 'query_id' has ids that are empty"),
        ({"score": [None, 0.5]}, "t", "run: column 'score' has null values"),
        ({"rank": [None, 2]}, "t", "run: column 'rank' has null values"),
        ({"doc_id": ["c", "c"]}, "t", "run: 1 row repeats a (query_id, doc_id) pair"),
        ({}, "my run", "tag must be a non-empty string without whitespace"),
        ({}, "", "tag must be a non-empty string without whitespace"),
    ],
)
def test_write_run_refuses_what_read_run_would_reject(
    tmp_path: Path, change: dict[str, list[Any]], tag: str, message: str
) -> None:
    run = pl.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["a", "c"], "rank": [1, 2], "score": [0.9, 0.5]}
    )
    run = run.with_columns(pl.Series(k, v, dtype=run.schema[k]) for k, v in change.items())
    with pytest.raises(RagframeError) as info:
        write_run(run, tmp_path / "run.txt", tag=tag)
    assert str(info.value).startswith(message)
    assert list(tmp_path.iterdir()) == []


def test_what_write_run_writes_read_run_reads_back(tmp_path: Path) -> None:
    run = pl.DataFrame(
        {
            "query_id": ["01", "01", "2"],
            "doc_id": ["0123", "x-1", "é"],
            "rank": [1, 2, 1],
            "score": [0.1 + 0.2, float("nan"), -1e-300],
        }
    )
    write_run(run, tmp_path / "run.txt", tag="t")
    back = read_run(tmp_path / "run.txt")
    assert back.select("query_id", "doc_id", "rank").equals(run.select(back.columns[:3]))
    assert back["score"][0] == 0.1 + 0.2 and math.isnan(back["score"][1])


def test_the_evaluate_command_shows_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bar on standard error (forced here: it is off when stderr is no terminal)."""
    from ragframe.cli import evaluate as command
    from ragframe.cli import main

    monkeypatch.setattr(command, "progress", lambda args: True)
    run = _text(tmp_path, "run.txt", "1 Q0 7 1 0.5 t\n")
    qrels = _text(tmp_path, "q.txt", "1 0 7 1\n")
    assert main(["evaluate", str(run), "--qrels", str(qrels), "-o", str(tmp_path / "m.csv")]) == 0
    err = capsys.readouterr().err
    assert "evaluate" in err and "3/3" in err
    monkeypatch.undo()
    assert main(["evaluate", str(run), "--qrels", str(qrels), "-o", str(tmp_path / "m.csv")]) == 0
    assert "evaluate:" not in capsys.readouterr().err  # not a terminal: no bar
