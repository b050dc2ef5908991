"""Two runs writing the same output at once: the output is one run's whole result, never
a mix of the two, and no temporary is left. Each run either succeeds or fails with one
``error:`` line (a directory output that another run replaced at the same moment)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from ragframe.cli import main
from ragframe.io import TEMP_MARK, read_table

ROWS = 20_000


def _results(seed: int) -> pl.DataFrame:
    """Candidates whose blocks tell the runs apart (every text names its run)."""
    return pl.DataFrame(
        {
            "query_id": [i // 5 for i in range(ROWS)],
            "entity_id": list(range(ROWS)),
            "chunk_index": [0] * ROWS,
            "text": [f"run {seed} candidate {i}" for i in range(ROWS)],
            "similarity": [((i * (seed + 3)) % 997) / 997 for i in range(ROWS)],
        }
    )


def _start(given: Path, out: str, extra: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "POLARS_MAX_THREADS": "1"}
    command = [sys.executable, "-m", "ragframe.cli", "postprocess", str(given), "-o", out, "-q"]
    return subprocess.Popen(
        [*command, *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("blocks.parquet", []),
        ("blocks.csv", ["--rows-per-partition", "4000"]),
        ("blocks.parquet", ["--rows-per-partition", "4000"]),
        ("blocks/", ["--rows-per-partition", "4000"]),
    ],
    ids=["file-whole", "csv-pieces", "parquet-pieces", "directory"],
)
def test_one_whole_result_wins(
    tmp_path: Path, name: str, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = []
    expected = []
    for seed in (1, 2):
        given = tmp_path / f"results-{seed}.parquet"
        _results(seed).write_parquet(given)
        inputs.append(given)
        alone = f"{tmp_path}/alone-{seed}-{name}"  # each run's result alone, in this process
        assert main(["postprocess", str(given), "-o", alone, "-q", *extra]) == 0
        assert capsys.readouterr().err == ""
        expected.append(read_table(alone))
    out_folder = tmp_path / "out"
    out_folder.mkdir()
    out = f"{out_folder}/{name}"
    for _ in range(3):  # each round: both at once, over the last round's output
        runs = [_start(given, out, extra) for given in inputs]
        for run in runs:
            err = run.communicate(timeout=300)[1]
            assert run.returncode in (0, 2), err
            if run.returncode:
                lines = err.splitlines()
                assert len(lines) == 1 and lines[0].startswith(f"error: cannot write {out}")
        assert any(run.returncode == 0 for run in runs)
        got = read_table(out)
        assert got.equals(expected[0]) or got.equals(expected[1])
        assert not [p for p in out_folder.rglob("*") if TEMP_MARK in p.name]
