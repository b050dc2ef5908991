"""``chunk`` on Dask and Ray through the driver's one path: partitions of consecutive
documents (ranges of input positions), so the parts, in order, are the local engine's
output: ``collect`` equals ``ragframe.chunk``, a written dataset's parts read in order
equal it, and the CLI's ``--engine`` output equals the local command's (a JSON lines
file byte for byte; Parquet row for row, same schema: its row groups follow the
partitions). Dask runs by default; Ray's cluster tests are slow."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe.cli import main
from ragframe.driver._plan import position_ranges
from ragframe.driver._sources import POS
from ragframe.errors import RagframeError
from tests import clusters

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
CONFIG = {"window_chars": 40, "overlap_chars": 10}
SHARES_DASK_CLUSTER = True  # leaves the workers alone: tests/clusters.py
ENGINES = ["dask", pytest.param("ray", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any, Any]]:
    """An engine's name, its module and its cluster (Dask's client, Ray's module)."""
    name = request.param
    if name == "dask":
        started = clusters.dask_client(request.getfixturevalue("dask_cluster"))
    else:
        started = clusters.ray_cluster()
    cluster = next(started)
    yield name, importlib.import_module(f"ragframe.distributed.{name}"), cluster
    next(started, None)  # stopped


@pytest.fixture
def documents(tmp_path: Path) -> tuple[list[str], pl.DataFrame]:
    """Documents over files of uneven sizes (one empty): empty contents, several
    windows, non-ASCII text, doc ids out of order."""
    n = 61
    docs = pl.DataFrame(
        {
            "doc_id": [(i * 37) % 101 for i in range(n)],
            "content": [f"Größe {i} · " * (i * 7 % 19) for i in range(n)],
        }
    )
    files = []
    for k, (a, b) in enumerate([(0, 5), (5, 5), (5, 40), (40, 41), (41, n)]):
        path = tmp_path / "docs" / f"d{k}.parquet"
        path.parent.mkdir(exist_ok=True)
        docs[a:b].write_parquet(path)
        files.append(str(path))
    return files, docs


def test_chunk_equals_local(
    engine: tuple[str, Any, Any], documents: tuple[list[str], pl.DataFrame], tmp_path: Path
) -> None:
    name, module, _ = engine
    files, docs = documents
    want = ragframe.chunk(docs, CONFIG).collect()
    for partitions in (None, 4):
        assert_frame_equal(module.chunk(files, CONFIG, collect=True, partitions=partitions), want)
    assert_frame_equal(module.chunk(docs, CONFIG, collect=True, partitions=3), want)
    native = _native(name, files)  # the engine's own frame: its pieces counted first
    assert_frame_equal(module.chunk(native, CONFIG, collect=True, partitions=3), want)
    written = module.chunk(files, CONFIG, output=tmp_path / "out", partitions=4)
    parts = sorted(Path(written).iterdir())
    assert [p.name for p in parts] == [f"part-0000{i}.parquet" for i in range(4)]
    assert_frame_equal(pl.read_parquet(parts), want)  # the parts, in order, are the output
    empty = ragframe.chunk(docs.clear(), CONFIG).collect()
    assert_frame_equal(module.chunk(docs.clear(), CONFIG, collect=True), empty)
    with pytest.raises(RagframeError, match="content"):
        module.chunk(docs.drop("content"), CONFIG, collect=True)


def _native(name: str, files: list[str]) -> Any:
    if name == "dask":
        import dask.dataframe as dd

        return dd.read_parquet(files)
    import ray

    return ray.data.from_arrow([pq.read_table(f) for f in files])  # a block per file


def _chunk_cli(out: str, *extra: str, docs: str) -> None:
    argv = ["chunk", docs, "--window", "40", "--overlap", "10", "-o", out, "-q"]
    assert main([*argv, *extra]) == 0


def _keys(summary: str) -> list[str]:
    """The summary's lines as key and value (the run's seconds left out)."""
    lines = [" ".join(line.split()) for line in summary.splitlines()[1:]]
    return [line for line in lines if not line.startswith("seconds ")]


def test_cli_chunk_on_an_engine_writes_what_the_local_command_writes(
    engine: tuple[str, Any, Any],
    documents: tuple[list[str], pl.DataFrame],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, _, cluster = engine
    folder = os.path.dirname(documents[0][0])
    on = ["--engine", name, "--partitions", "3"]
    if name == "dask":  # the running cluster (without it, each command starts its own)
        on += ["--scheduler", cluster.scheduler.address]
    for out in ("c.jsonl", "c.parquet", "parts/"):
        _chunk_cli(f"{tmp_path}/local/{out}", docs=folder)  # a folder keeps its final "/"
        here = _keys(capsys.readouterr().out)
        _chunk_cli(f"{tmp_path}/{name}/{out}", *on, docs=folder)
        there = _keys(capsys.readouterr().out)  # the local summary's lines, partitions too
        assert there[-3:] == ["partitions 3", f"output {tmp_path}/{name}/{out}", f"engine {name}"]
        assert here[-2].startswith("partitions ") and there[:-3] == here[:-2]
    local, got = tmp_path / "local", tmp_path / name
    assert (got / "c.jsonl").read_bytes() == (local / "c.jsonl").read_bytes()
    assert pq.read_schema(got / "c.parquet") == pq.read_schema(local / "c.parquet")
    assert_frame_equal(pl.read_parquet(got / "c.parquet"), pl.read_parquet(local / "c.parquet"))
    assert len(list((got / "parts").iterdir())) == 3
    assert_frame_equal(pl.read_parquet(got / "parts"), pl.read_parquet(local / "c.parquet"))
    assert sorted(p.name for p in got.iterdir()) == ["c.jsonl", "c.parquet", "parts"]


def test_position_ranges_cut_equal_rows_across_pieces() -> None:
    plan = position_ranges(3, [4, 0, 5])  # 9 rows: 3 a range
    assert plan.partitions == 3 and plan.on == POS and plan.in_order
    assert plan.highs == [2, (2 << 32) | 1]  # rows 0-2 of piece 0; to row 1 of piece 2
    assert position_ranges(5, [2]).partitions == 2  # no more ranges than rows
    assert position_ranges(4, []).partitions == 1


@pytest.mark.slow
def test_cli_on_a_local_ray_writes_nothing_on_stderr(tmp_path: Path) -> None:
    """``--engine ray`` without ``--ray-address`` starts a local Ray (a new process, as
    a user runs it): Ray's start-up warnings (token authentication enabled by default)
    are left out, so standard error holds nothing but what the command says."""
    pytest.importorskip("ray")
    pl.DataFrame({"doc_id": [1, 2], "content": ["Größe " * 30, "x"]}).write_parquet(
        tmp_path / "d.parquet"
    )
    argv = ["chunk", f"{tmp_path}/d.parquet", "--window", "40", "-o", "c.jsonl", "-q"]
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}  # Ray's default
    done = subprocess.run(
        [sys.executable, "-m", "ragframe.cli", *argv, "--engine", "ray"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert main([*argv[:4], "-o", f"{tmp_path}/local.jsonl", "-q"]) == 0  # the local run's
    assert (tmp_path / "c.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
