"""A first run (issue 27): the README's first command, the default job, runs in a fresh
process from an empty kernel cache at the default ``$RAGFRAME_PYTHON_ROWS`` without
loading numba (nothing compiled, nothing cached) or tqdm (no bar where standard error is
no terminal), and its output equals the compiled kernels' (the suite's own setting); a
plain ``ragframe postprocess`` of the default data loads none of what it does not need."""

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


UNNEEDED = (
    *("pyarrow.dataset", "pyarrow.compute"),
    *("numba", "tqdm", "asyncio", "dask", "distributed", "ray", "fsspec", "pandas"),
    *("hypothesis", "tiktoken", "tokenizers", "regex"),
    *("ragframe.evaluate", "ragframe.fetch", "ragframe.retrieve", "ragframe.window"),
    "ragframe.reference",
)
"""What a warm ``ragframe postprocess`` of the default data does without (issue 27's warm
bar: a whole process in 0.6 s): the compiled kernels, the engines and their clients,
tokenizers, the other stages, Arrow's datasets and compute (pyarrow itself is needed:
the kernels read and build string columns through Arrow buffers)."""


def test_a_plain_postprocess_of_the_default_data_loads_none_of_the_unneeded(
    tmp_path: Path,
) -> None:
    script = "import sys\nfrom ragframe.cli import main\nassert main(sys.argv[1:]) == 0\n"
    out = tmp_path / "blocks.parquet"
    args = ["postprocess", "data/results.parquet", "--chunks", "data/chunks.parquet", "-o", out]
    run_fresh(tmp_path, script, args, unloaded=UNNEEDED)
    data = ROOT / "data"  # the same run in this process: the compiled kernels (conftest)
    again = [str(data / "results.parquet"), "--chunks", str(data / "chunks.parquet")]
    assert main(["postprocess", *again, "-o", str(tmp_path / "again.parquet")]) == 0
    assert pl.read_parquet(out).equals(pl.read_parquet(tmp_path / "again.parquet"))


def test_the_command_loads_its_modules_without_the_cyclic_collector(tmp_path: Path) -> None:
    """Run as the command (``main()``, the console script's call), the modules load with
    the cyclic collector off and are then frozen out of its passes, and it is on again
    for the run; called with a list (from Python) the caller's collector is untouched."""
    out = tmp_path / "blocks.parquet"
    script = (
        "import gc, sys\n"
        "from ragframe.cli import main\n"
        "assert main() == 0\n"
        "assert gc.isenabled() and gc.get_freeze_count() > 10_000, gc.get_freeze_count()\n"
        "gc.unfreeze()\n"
        f"assert main(sys.argv[1:-1] + [{str(tmp_path / 'again.parquet')!r}]) == 0\n"
        "assert gc.isenabled() and gc.get_freeze_count() == 0, gc.get_freeze_count()\n"
    )
    args = ["postprocess", "data/results.parquet", "--chunks", "data/chunks.parquet", "-o", out]
    run_fresh(tmp_path, script, args, unloaded=())
    assert pl.read_parquet(out).equals(pl.read_parquet(tmp_path / "again.parquet"))
