"""ragframe.sweep: the same rows as running and evaluating each configuration alone,
grids, the baseline tests, the Pareto front, the CLI and its report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe.errors import ConfigError, DataError
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
    tokens = config.length == "tokens"  # the budget in its own unit
    return evaluate(
        qrels,
        blocks=blocks,
        max_blocks=config.max_blocks,
        max_characters=None if tokens else config.max_characters,
        max_tokens=config.max_tokens if tokens else None,
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
    with pytest.raises(ConfigError, match="no metric 'ndcg@10' here"):
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


# --- issue 25: directions, token budgets, the folder written whole, the CLI's options --

SMALL = pl.DataFrame(
    {
        "query_id": [1, 1, 1, 2, 2],
        "entity_id": [7, 7, 3, 9, 4],
        "chunk_index": [0, 1, 0, 0, 0],
        "start_char": [0, 300, 0, 0, 0],
        "end_char": [400, 700, 400, 400, 400],
        "text": ["alpha beta gamma", "gamma delta", "zeta", "eta theta", "iota"],
        "similarity": [0.9, 0.8, 0.7, 0.6, 0.5],
    }
)
SMALL_QRELS = pl.DataFrame({"query_id": [1, 2], "doc_id": [7, 9], "relevance": [1, 1]})


@pytest.mark.parametrize("metric", ["duplicate_chars", "chars_used", "first_relevant_rank"])
def test_lower_is_better_metrics_pick_the_lowest(metric: str) -> None:
    """They picked the worst configuration (every metric was higher-is-better)."""
    results, chunks, qrels = _cranfield()
    grid = {"max_chunk_gap": [0, 1], "max_characters": [1000, 3000], "min_similarity": [0.0]}
    result = sweep(results, grid, qrels, chunks=chunks, metric=metric)
    means = result.summary[metric]
    assert means.to_list() == sorted(means.to_list())  # best first: the lowest
    assert result.best()[metric].item() == means.min()
    for row in result.pareto.iter_rows(named=True):  # nothing cheaper is at least as low
        better = result.summary.filter(
            (pl.col("chars_used") <= row["chars_used"])
            & (pl.col(metric) <= row[metric])
            & ((pl.col("chars_used") < row["chars_used"]) | (pl.col(metric) < row[metric]))
        )
        assert better.height == 0


@pytest.mark.parametrize("name", ["query_id", "judged", "n_relevant", "top_k", "config", "x"])
def test_columns_that_are_not_metrics_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"sweep: metric: '{name}' is not a metric"):
        sweep(SMALL, {"top_k": [1, 2]}, SMALL_QRELS, metric=name)
    result = sweep(SMALL, {"top_k": [1, 2]}, SMALL_QRELS)
    with pytest.raises(ConfigError, match="best: metric"):
        result.best(name)
    with pytest.raises(ConfigError, match=r"sweep: cost: 'context_recall' is not a cost"):
        sweep(SMALL, {"top_k": [1, 2]}, SMALL_QRELS, cost="context_recall")


def test_in_tokens_the_share_and_the_cost_count_tokens() -> None:
    """budget_share divided characters by the character default, and the front
    weighed characters, for configurations budgeted in tokens."""
    configs = [
        ragframe.PostprocessConfig(length="tokens", tokenizer=toy, max_tokens=t) for t in (2, 8)
    ]
    result = sweep(SMALL, configs, SMALL_QRELS)
    assert result.cost == "tokens_used"
    rows = result.per_query.select("config", "tokens_used", "budget_share", "max_tokens")
    for config, used, share, budget in rows.rows():
        assert share == used / budget, config
    mixed = sweep(SMALL, [ragframe.PostprocessConfig(max_characters=10), configs[0]], SMALL_QRELS)
    assert mixed.cost == "chars_used"
    assert mixed.per_query.filter(pl.col("config") == 0)["tokens_used"].is_null().all()
    with pytest.raises(ConfigError, match="tokens_used needs every configuration"):
        sweep(SMALL, [ragframe.PostprocessConfig(), configs[0]], SMALL_QRELS, cost="tokens_used")


def test_no_judged_query_is_a_clear_error() -> None:
    """It was ``ValueError: 0 is not in list``."""
    none = SMALL_QRELS.clear()
    with pytest.raises(DataError, match=r"sweep: no query is judged \(2 queries"):
        sweep(SMALL, {"top_k": [1, 2]}, none)


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"top_k": 3}, None),
        ({"top_k": (1, 2)}, None),
        ({"top_k": {1, 2}}, r"'top_k' must be a list of values, got a set"),
        ({"top_k": {"a": 1}}, r"'top_k' must be a list of values, got a dict"),
        ({"top_k": ["10"]}, r"sweep grid: top_k must be an integer"),
        ({"top_k": [1.5]}, r"sweep grid: top_k must be an integer"),
        ({1: [2]}, r"sweep grid: unknown parameters \[1\]"),
        ("top_k", r"sweep grid: expected a mapping of parameters to values or a list"),
    ],
)
def test_grid_values_of_the_wrong_type(grid: Any, message: str | None) -> None:
    if message is None:
        assert configurations(grid)[0]
        return
    with pytest.raises(ConfigError, match=message):
        configurations(grid)


def test_a_progress_bar_counts_the_configurations(capsys: pytest.CaptureFixture[str]) -> None:
    sweep(SMALL, {"top_k": [1, 2, 3]}, SMALL_QRELS, progress=True)
    err = capsys.readouterr().err
    assert "sweep" in err and "4/4" in err


def _sweep_cli(tmp_path: Path, *extra: str, top_k: str = "[5, 10]") -> list[str]:
    data = Path(__file__).resolve().parents[1] / "data"
    grid = tmp_path / "grid.toml"
    grid.write_text(f"[grid]\ntop_k = {top_k}\n")
    args = ["sweep", str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet")]
    return [*args, "--qrels", str(data / "qrels.parquet"), "--grid", str(grid), *extra]


def test_the_cli_writes_the_summary_to_standard_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragframe.cli import main

    assert main(_sweep_cli(tmp_path, "-o", "-", "--format", "csv", "-q")) == 0
    out, err = capsys.readouterr()
    summary = pl.read_csv(out.encode())
    assert summary.height == 2 and "context_recall_low" in summary.columns
    assert "95% interval" in err and "ragframe sweep" in err  # the table: not in the data
    assert main(_sweep_cli(tmp_path, "-o", "-", "--report")) == 2
    assert "--report writes OUTDIR/report.html" in capsys.readouterr().err


def test_the_report_folder_is_written_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt while the report is written leaves the old folder as it was, and no
    temporary beside it (it left half a new folder)."""
    import importlib

    from ragframe.cli import main

    evaluate_package = importlib.import_module("ragframe.evaluate")
    out = tmp_path / "sweep"
    assert main(_sweep_cli(tmp_path, "-o", str(out))) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(result: Any, path: Any) -> None:
        Path(path).write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate_package, "write_report", interrupted)
    new_grid = _sweep_cli(tmp_path, "-o", str(out), "--report", top_k="[1, 2, 3]")
    assert main(new_grid) == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml", "sweep"]
    (out / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(_sweep_cli(tmp_path, "-o", str(out))) == 2
    assert "holds other files than a sweep's (notes.txt)" in capsys.readouterr().err


def test_a_failed_write_of_the_folder_is_one_error_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk filling while the report is written: one ``error:`` line naming the
    folder and the reason, the old folder as it was, no temporary beside it."""
    import errno
    import importlib

    from ragframe.cli import main

    evaluate_package = importlib.import_module("ragframe.evaluate")
    out = tmp_path / "sweep"
    assert main(_sweep_cli(tmp_path, "-o", str(out))) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()

    def full(result: Any, path: Any) -> None:
        Path(path).write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(evaluate_package, "write_report", full)
    assert main(_sweep_cli(tmp_path, "-o", str(out), "--report", top_k="[1, 2, 3]")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: cannot write {out}: No space left on device"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.toml", "sweep"]
