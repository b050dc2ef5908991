"""ragframe.sweep: the same rows as running and evaluating each configuration alone,
grids, the baseline tests, the Pareto front, the CLI and its report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe.errors import ConfigError
from ragframe.evaluate import SweepResult, evaluate, sweep
from ragframe.evaluate._sweep import configurations
from tests.conftest import require_cranfield
from tests.test_tokens import toy

GAIN = {1: 4, 2: 3, 3: 2, 4: 1}


def _cranfield() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    folder = require_cranfield("results_minilm.parquet", "chunks.parquet", "qrels.parquet")
    qrels = ragframe.read_qrels(pl.read_parquet(folder / "qrels.parquet"), gain=GAIN)
    results = pl.read_parquet(folder / "results_minilm.parquet")
    return results, pl.read_parquet(folder / "chunks.parquet"), qrels


def _alone(
    results: pl.DataFrame, chunks: pl.DataFrame, qrels: pl.DataFrame, config: Any
) -> pl.DataFrame:
    """One configuration's per-query rows without the sweep: postprocess, then evaluate."""
    blocks = ragframe.postprocess(results, config, chunks=chunks)
    return evaluate(
        qrels,
        blocks=blocks,
        max_blocks=config.max_blocks,
        max_characters=config.max_characters,
        chunks=chunks,
    ).collect()


GRID = {
    "top_k": [10, 20],
    "min_similarity": [0.0, 0.3],
    "max_chunk_gap": [0, 1],
    "max_characters": [1500, 3000],
}


def test_a_sweep_gives_what_each_configuration_gives_alone() -> None:
    """Sharing steps changes nothing: every configuration's per-query rows equal
    postprocess then evaluate run for it alone."""
    results, chunks, qrels = _cranfield()
    result = sweep(results, GRID, qrels, chunks=chunks)
    configs, varied = configurations(GRID)
    assert varied == ("top_k", "min_similarity", "max_chunk_gap", "max_characters")
    assert result.summary.height == len(configs) == 16
    for number, config in enumerate(configs):
        alone = _alone(results, chunks, qrels, config)
        mine = result.per_query.filter(pl.col("config") == number)
        assert mine.select(varied).unique().rows() == [tuple(getattr(config, p) for p in varied)]
        assert_frame_equal(mine.drop("config", *varied), alone)


def test_a_sweep_may_mix_character_and_token_budgets() -> None:
    """Configurations in characters and in tokens side by side (only the latter have
    ``token_count``): each one's rows are what it gives alone."""
    results, chunks, qrels = _cranfield()
    configs = [
        ragframe.PostprocessConfig(top_k=10, max_characters=3000),
        ragframe.PostprocessConfig(top_k=10, length="tokens", tokenizer=toy, max_tokens=300),
    ]
    result = sweep(results, configs, qrels, chunks=chunks)
    assert result.summary.height == 2
    for number, config in enumerate(configs):
        alone = _alone(results, chunks, qrels, config)
        mine = result.per_query.filter(pl.col("config") == number)
        assert_frame_equal(mine.select(alone.columns), alone)


def test_the_summary_tests_against_the_baseline_and_marks_the_front() -> None:
    results, chunks, qrels = _cranfield()
    grid = {"max_chunk_gap": [0, 1], "max_characters": [1500, 3000], "min_similarity": [0.0]}
    result = sweep(results, grid, qrels, chunks=chunks, baseline=1, metric="context_ndcg")
    assert isinstance(result, SweepResult) and result.baseline == 1
    summary = result.summary
    assert summary["context_ndcg"].to_list() == sorted(summary["context_ndcg"], reverse=True)
    base = summary.filter(pl.col("config") == 1).row(0, named=True)
    assert base["p_t"] is None and base["p_holm"] is None  # not compared with itself
    others = summary.filter(pl.col("config") != 1)
    assert (others["p_holm"] >= others["p_t"]).all() and (others["p_holm"] <= 1).all()
    assert (summary["context_ndcg_low"] <= summary["context_ndcg"]).all()
    assert (summary["context_ndcg"] <= summary["context_ndcg_high"]).all()
    assert result.best().row(0, named=True)["config"] == summary["config"][0]
    front = result.pareto
    assert front.height >= 1 and front["chars_used"].is_sorted()
    # nothing off the front both costs no more and scores at least as well
    for row in summary.filter(~pl.col("pareto")).iter_rows(named=True):
        assert front.filter(
            (pl.col("chars_used") <= row["chars_used"])
            & (pl.col("context_ndcg") >= row["context_ndcg"])
        ).height
    # the finding the README quotes: merged context sends no duplicate characters
    gap = summary.select("max_chunk_gap", "max_characters", "duplicate_chars")
    assert (gap.filter(pl.col("max_chunk_gap") == 1)["duplicate_chars"] == 0).all()
    assert (gap.filter(pl.col("max_chunk_gap") == 0)["duplicate_chars"] > 0).all()


def test_grids_and_their_errors() -> None:
    configs, varied = configurations({"top_k": [5, 10], "max_blocks": [3]})
    assert [(x.top_k, x.max_blocks) for x in configs] == [(5, 3), (10, 3)]
    assert varied == ("top_k",)
    given = [ragframe.PostprocessConfig(top_k=3), ragframe.PostprocessConfig(max_blocks=2)]
    assert configurations(given) == (given, ("top_k", "max_blocks"))
    with pytest.raises(ConfigError, match="unknown parameters"):
        configurations({"top-k": [3]})
    with pytest.raises(ConfigError, match="at least one value"):
        configurations({"top_k": []})
    with pytest.raises(ConfigError, match="top_k must be in"):
        configurations({"top_k": [0]})
    results = pl.DataFrame(
        {"query_id": [1], "doc_id": [1], "chunk_index": [0], "text": ["x"], "similarity": [0.5]}
    )
    qrels = pl.DataFrame({"query_id": [1], "doc_id": [1], "relevance": [1]})
    with pytest.raises(ConfigError, match="baseline must be"):
        sweep(results, {"top_k": [1, 2]}, qrels, baseline=5)
    with pytest.raises(ConfigError, match="unknown metrics"):
        sweep(results, {"top_k": [1, 2]}, qrels, metric="ndcg@10")


def test_the_cli_writes_both_tables_and_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragframe.cli import main

    data = Path(__file__).resolve().parents[1] / "data"
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\ntop_k = [5, 10]\nmax_chunk_gap = [0, 1]\nmin_similarity = 0.0\n")
    out = tmp_path / "sweep"
    report = ["--report"] if _has_matplotlib() else []
    args = ["sweep", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet")]
    args += ["--qrels", str(data / "qrels.parquet"), "--grid", str(grid), "-o", str(out)]
    assert main([*args, *report]) == 0
    shown = capsys.readouterr().out
    assert "context_recall" in shown and "95% interval" in shown and "best" in shown
    summary = pl.read_parquet(out / "summary.parquet")
    assert summary.height == 4 and set(summary["top_k"]) == {5, 10}
    assert pl.read_parquet(out / "per_query.parquet").height == 4 * 20
    if report:
        page = (out / "report.html").read_text()
        assert page.count("data:image/png;base64,") >= 2 and "<table>" in page
    bad = tmp_path / "bad.toml"
    bad.write_text("[grid]\ntop-k = [1]\n")
    assert main([*args[:-4], "--grid", str(bad), "-o", str(out)]) == 2
    assert "unknown parameters" in capsys.readouterr().err


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
