"""experiment (SPEC 8): each configuration equals its stages run alone; the grid's checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe.errors import ConfigError
from ragframe.evaluate._experiment import experiment
from ragframe.evaluate._grid import settings
from tests.conftest import require_cranfield

GAIN = {1: 4, 2: 3, 3: 2, 4: 1}
GRID = {
    "size": [200, 400, 800],
    "overlap_chars": [50],
    "k": [10, 20],
    "top_k": [5, 10],
    "max_characters": [1000, 2000],
}


def _cranfield() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    folder = require_cranfield("docs.parquet", "queries.parquet", "qrels.parquet")
    docs = pl.read_parquet(folder / "docs.parquet")
    queries = pl.read_parquet(folder / "queries.parquet").select("query_id", "text")
    qrels = ragframe.read_qrels(pl.read_parquet(folder / "qrels.parquet"), gain=GAIN)
    return docs, queries, qrels


def _alone(docs: Any, queries: Any, qrels: Any, setting: Any) -> pl.DataFrame:
    """One configuration without any sharing: chunk, retrieve, postprocess, evaluate."""
    chunks = ragframe.chunk(docs, setting.window).collect()
    found = ragframe.retrieve(chunks, queries, setting.retrieval).collect()
    found = found.drop("start_char", "end_char")
    blocks = ragframe.postprocess(found, setting.context, chunks=chunks)
    return ragframe.evaluate(
        qrels,
        blocks=blocks,
        max_blocks=setting.context.max_blocks,
        max_characters=setting.context.max_characters,
        chunks=chunks,
    ).collect()


def test_each_configuration_equals_its_stages_run_alone() -> None:
    docs, queries, qrels = _cranfield()
    result = experiment(docs, queries, qrels, GRID, keep=True)
    configured, varied = settings(GRID)
    assert varied == ("window_chars", "k", "top_k", "max_characters")
    assert result.summary.height == len(configured) == 24
    assert len(result.chunks) == 3 and len(result.candidates) == 3  # k shares a search
    for window, kept in result.chunks.items():  # as the chunker gives them
        assert_frame_equal(kept, ragframe.chunk(docs, window).collect())
    for number, setting in enumerate(configured):
        mine = result.per_query.filter(pl.col("config") == number)
        assert mine.select(varied).unique().rows() == [
            (
                setting.window.window_chars,
                setting.retrieval.k,
                setting.context.top_k,
                setting.context.max_characters,
            )
        ]
        assert_frame_equal(mine.drop("config", *varied), _alone(docs, queries, qrels, setting))


def test_the_default_data_runs_and_queries_may_name_their_text_query() -> None:
    data = ragframe.__file__.rsplit("/", 2)[0] + "/data/"
    docs = pl.read_parquet(data + "documents.parquet")
    queries = pl.read_parquet(data + "queries.parquet")  # query_id, query
    qrels = pl.read_parquet(data + "qrels.parquet")
    result = experiment(docs, queries, qrels, {"size": [200, 400], "max_characters": 2000})
    assert result.summary.height == 2
    assert result.per_query["query_id"].n_unique() == queries.height
    assert result.best().height == 1


@pytest.mark.parametrize(
    ("grid", "first"),
    [
        ({"sise": [200]}, "experiment grid: unknown parameter 'sise'; did you mean 'size'?"),
        ({"size": []}, "experiment grid: 'size' needs at least one value, got []"),
        ({"size": [0]}, "experiment grid: invalid window: window_chars=0"),
        ({"overlap": [50]}, "experiment grid: 'overlap' is postprocess's merge mode"),
        ({"k": [0]}, "experiment grid: k must be"),
        ({"size": {1, 2}}, "sweep grid: 'size' must be a list of values"),
        ({}, "experiment grid: no parameters"),
        (
            {"size": list(range(1, 40)), "top_k": list(range(1, 40))},
            "experiment grid: 1,521 configurations, more than the maximum of 1,000",
        ),
    ],
    ids=[
        "did-you-mean",
        "empty",
        "bad-window",
        "overlap-mode",
        "bad-k",
        "set",
        "nothing",
        "too-many",
    ],
)
def test_a_bad_grid_is_refused_before_any_work(grid: dict[str, Any], first: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings(grid)
    assert str(info.value).startswith(first), str(info.value)


def test_the_maximum_may_be_raised() -> None:
    grid = {"size": list(range(2, 40)), "overlap_chars": 1, "top_k": list(range(1, 40))}
    configured, _ = settings(grid, max_configurations=2000)
    assert len(configured) == 38 * 39


def test_the_readme_default_job_runs_the_whole_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's first command (its arguments, against the bundled data)."""
    from ragframe.cli import main

    root = Path(__file__).resolve().parents[1]
    line = (root / "README.md").read_text().splitlines()[3]
    command = line.split(" && ragframe ", 1)[1].split()
    assert command[0] == "experiment"
    args = [a if a.startswith("-") else str(root / a) for a in command]
    args[0], args[-1] = "experiment", str(tmp_path / "experiment")
    assert main(args) == 0
    shown = capsys.readouterr().out
    assert "context_recall" in shown and "95% interval" in shown and "window_chars" in shown
    summary = pl.read_parquet(tmp_path / "experiment" / "summary.parquet")
    assert summary.height == 9 and set(summary["window_chars"]) == {200, 400, 800}
    per_query = pl.read_parquet(tmp_path / "experiment" / "per_query.parquet")
    assert per_query.height == 9 * 20


def test_the_cli_refuses_a_bad_grid_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragframe.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    bad = tmp_path / "bad.toml"
    bad.write_text("[grid]\nsise = [200]\n")
    out = tmp_path / "out"
    args = ["experiment", str(data / "documents.parquet"), "--queries"]
    args += [str(data / "queries.parquet"), "--qrels", str(data / "qrels.parquet")]
    assert main([*args, "--grid", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: experiment grid: unknown parameter 'sise'; did you mean 'size'?")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    big = tmp_path / "big.toml"
    big.write_text("[grid]\nsize = [100, 200, 300]\ntop_k = [1, 2, 3, 4]\n")
    assert main([*args, "--grid", str(big), "-o", str(out), "--max-configurations", "10"]) == 2
    assert "12 configurations, more than the maximum of 10" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "bad.toml",
        "big.toml",
    ]


def _span_qrels(docs: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """Span judgements over Cranfield's judged documents: one span of up to 300
    characters per judged (query, document) pair, placed by the ids (so some cross a
    window's edge), graded as the document was."""
    length = pl.col("content").str.len_chars()
    spans = qrels.join(docs.select("doc_id", "content"), on="doc_id").with_columns(
        start_char=((pl.col("doc_id") * 37 + pl.col("query_id") * 11) % (length + 1)).cast(pl.Int64)
    )
    return spans.select(
        "query_id",
        "doc_id",
        "start_char",
        pl.min_horizontal(pl.col("start_char") + 300, length).cast(pl.Int64).alias("end_char"),
        "relevance",
    )


def test_span_judgements_survive_rechunking_and_equal_each_configuration_alone() -> None:
    """With span judgements (SPEC 7) every window is judged by the same spans: each
    configuration's span_recall and span_precision (and the rest) equal its stages run
    alone, and the windows' span recalls differ (the spans are not the chunks)."""
    docs, queries, _ = _cranfield()
    folder = require_cranfield("qrels.parquet")
    spans = ragframe.read_qrels(
        _span_qrels(docs, pl.read_parquet(folder / "qrels.parquet")), gain=GAIN
    )
    grid = {"size": [200, 800], "overlap_chars": [50], "top_k": [5], "max_characters": [2000]}
    result = experiment(docs, queries, spans, grid, metric="span_recall")
    assert result.metric == "span_recall"
    assert {"span_recall", "span_precision"} <= set(result.per_query.columns)
    assert {"span_recall", "span_recall_low", "span_precision_high"} <= set(result.summary.columns)
    configured, varied = settings(grid)
    recalls = []
    for number, setting in enumerate(configured):
        mine = result.per_query.filter(pl.col("config") == number).drop("config", *varied)
        alone = _alone(docs, queries, spans, setting)
        assert_frame_equal(mine, alone)
        recalls.append(mine["span_recall"].mean())
    summarized = result.summary.sort("config")["span_recall"].to_list()
    assert summarized == pytest.approx(recalls)
    assert 0 < min(recalls) < max(recalls) <= 1
    assert result.best()["config"].to_list() == [recalls.index(max(recalls))]


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        (
            {"doc_id": [1, 2], "start_char": [11, 0], "end_char": [15, 9]},
            "qrels: 1 span past the end of its document; first: judgement 1: doc_id 2, "
            "start_char 0, end_char 9, the document has 5 characters",
        ),
        (
            {"doc_id": [1, 3], "start_char": [0, 0], "end_char": [2, 2]},
            "qrels: 1 judgement on 1 document the documents lack; first: judgement 1: doc_id 3",
        ),
    ],
    ids=["past-the-end", "unknown-document"],
)
def test_spans_outside_the_documents_are_refused_before_any_work(
    spans: dict[str, list[int]], message: str
) -> None:
    docs = pl.DataFrame({"doc_id": [1, 2], "content": ["wings give lift", "tails"]})
    queries = pl.DataFrame({"query_id": [1], "text": ["lift"]})
    qrels = pl.DataFrame({"query_id": [1, 1], **spans, "relevance": [1, 1]})
    with pytest.raises(ragframe.DataError) as info:
        experiment(docs, queries, qrels, {"size": [5, 20], "overlap_chars": 0})
    assert str(info.value).startswith(message), str(info.value)
