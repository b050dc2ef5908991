"""A first run (issue 27): the README's first command, the default job, runs in a fresh
process from an empty kernel cache at the default ``$RAGFRAME_PYTHON_ROWS`` without
loading numba (nothing compiled, nothing cached) or tqdm (no bar where standard error is
no terminal), and its output equals the compiled kernels' (the suite's own setting)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ragframe.cli import main
from tests.fresh import ROOT, run_fresh


def _readme_job(out: Path) -> list[str]:
    """The README's first command's ``ragframe`` arguments, writing to ``out``."""
    line = (ROOT / "README.md").read_text().splitlines()[3]
    command = line.split(" && ragframe ", 1)[1].split()
    args = [a if a.startswith("-") else str(ROOT / a) for a in command]
    args[0], args[-1] = "experiment", str(out)
    return args


def test_the_default_job_loads_no_numba_and_equals_the_compiled_run(tmp_path: Path) -> None:
    script = "import sys\nfrom ragframe.cli import main\nassert main(sys.argv[1:]) == 0\n"
    args = _readme_job(tmp_path / "first")
    run_fresh(tmp_path, script, args, unloaded=("numba", "tqdm", "asyncio"))
    assert main(_readme_job(tmp_path / "compiled")) == 0  # the suite compiles (conftest)
    for name in ("summary.parquet", "per_query.parquet"):
        first = pl.read_parquet(tmp_path / "first" / name)
        assert first.equals(pl.read_parquet(tmp_path / "compiled" / name)), name
