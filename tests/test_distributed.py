"""ragframe on Dask and on Ray equals the single-process engine row for row: on the
Cranfield fixture, on a synthetic 1M-row input spread over files that split queries,
and with a worker killed mid-run. One small cluster test per engine runs by default;
the rest are marked ``slow``. Skipped where the engine is not installed."""

from __future__ import annotations

import glob
import itertools
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe import schema as c
from ragframe.driver import _sources
from ragframe.errors import ConfigError, RagframeError
from tests import clusters
from tests.conftest import require_cranfield

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning:ray.data.context"  # Ray Data warns about its own settings
)
CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)
SHARES_DASK_CLUSTER = True  # leaves the workers alone: tests/clusters.py
GAIN = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}
GRID = {"top_k": [5, 10], "max_characters": [1500, 4000]}


@pytest.fixture(scope="module")
def cranfield() -> Path:
    return require_cranfield("results_minilm.parquet", "chunks.parquet", "docs.parquet")


@pytest.fixture(scope="module")
def dask_client(dask_cluster: Any) -> Iterator[Any]:
    yield from clusters.dask_client(dask_cluster)


@pytest.fixture
def killable_dask_client() -> Iterator[Any]:
    """A cluster of its own, for a test that kills its workers (closed after the test, so
    the module's client is the current one again)."""
    yield from clusters.dask_client()


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    yield from clusters.ray_cluster()


def _engine(name: str, request: pytest.FixtureRequest, dask: str = "dask_client") -> Any:
    """The adapter module, its cluster started (by its fixture; ``dask`` names Dask's)."""
    request.getfixturevalue(dask if name == "dask" else "ray_cluster")
    if name == "dask":
        from ragframe.distributed import dask as module
    else:
        from ragframe.distributed import ray as module
    return module


ENGINES = ["dask", "ray"]


def _local_blocks(results: Any, chunks: Any) -> pl.DataFrame:
    return ragframe.postprocess(results, CONFIG, chunks=chunks).collect()


@pytest.mark.parametrize("name", ENGINES)
def test_postprocess_equals_local_on_cranfield(
    name: str, cranfield: Path, request: pytest.FixtureRequest
) -> None:
    """The default run's one cluster test per engine: both ways to the chunk store."""
    engine = _engine(name, request)
    results, chunks = cranfield / "results_minilm.parquet", cranfield / "chunks.parquet"
    whole = _local_blocks(pl.scan_parquet(results), pl.scan_parquet(chunks))
    for broadcast in (True, False):
        got = engine.postprocess(
            str(results),
            CONFIG,
            chunks=str(chunks),
            collect=True,
            partitions=3,
            broadcast=broadcast,
        )
        assert_frame_equal(got, whole)


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_fetch_evaluate_sweep_equal_local_on_cranfield(
    name: str, cranfield: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    engine = _engine(name, request)
    frames = {
        n: pl.read_parquet(cranfield / f"{n}.parquet")
        for n in ("results_minilm", "chunks", "docs", "queries")
    }
    queries = frames["queries"].select(c.QUERY_ID, pl.col("text").alias(c.QUERY))
    requests = (
        frames["results_minilm"]
        .filter(pl.col(c.RANK) <= 5)
        .join(queries, on=c.QUERY_ID, maintain_order="left")
        .select(c.QUERY_ID, c.QUERY, c.DOC_ID, c.RANK)
    )
    req_path = tmp_path / "requests.parquet"
    requests.write_parquet(req_path)
    docs = frames["docs"].select(c.DOC_ID, c.CONTENT)
    fconfig = ragframe.FetchConfig(fulltext_threshold=600)
    whole = ragframe.fetch(requests, docs, fconfig).collect()
    lazy = engine.postprocess(
        str(cranfield / "results_minilm.parquet"), CONFIG, chunks=frames["chunks"]
    )
    assert_frame_equal(
        _frame_of(name, lazy).sort(c.QUERY_ID, c.BLOCK_RANK),
        _local_blocks(frames["results_minilm"], frames["chunks"]),
    )
    for broadcast in (True, False):
        got = engine.fetch(
            str(req_path), docs, fconfig, collect=True, partitions=3, broadcast=broadcast
        )
        assert_frame_equal(got, whole)

    qrels = ragframe.read_qrels(cranfield / "qrels.parquet", gain=GAIN)
    results = frames["results_minilm"]
    dropped = results.filter(pl.col(c.QUERY_ID) % 7 != 0)  # judged queries with no candidates
    path = tmp_path / "results.parquet"
    dropped.write_parquet(path)
    local = ragframe.evaluate(qrels, candidates=dropped, k=[5, 10]).collect()
    assert_frame_equal(engine.evaluate(qrels, candidates=str(path), k=[5, 10], partitions=3), local)
    blocks = _local_blocks(dropped, frames["chunks"])
    blocks_path = tmp_path / "blocks.parquet"
    blocks.write_parquet(blocks_path)
    options = {"max_blocks": 4, "max_characters": 3000}
    local = ragframe.evaluate(qrels, blocks=blocks, chunks=frames["chunks"], **options).collect()
    got = engine.evaluate(
        qrels, blocks=str(blocks_path), chunks=frames["chunks"], partitions=3, **options
    )
    assert_frame_equal(got, local)

    local_sweep = ragframe.sweep(dropped, GRID, qrels, chunks=frames["chunks"], baseline=1)
    for broadcast in (True, False):
        swept = engine.sweep(
            str(path),
            GRID,
            qrels,
            chunks=frames["chunks"],
            baseline=1,
            partitions=3,
            broadcast=broadcast,
        )
        assert_frame_equal(swept.per_query, local_sweep.per_query)
        assert_frame_equal(swept.summary, local_sweep.summary)


def _frame_of(name: str, out: Any) -> pl.DataFrame:
    """An engine's own output (a Dask frame, a Ray dataset) as one Polars frame."""
    import pyarrow as pa

    if name == "dask":
        table = pa.Table.from_pandas(out.compute(), preserve_index=False)
    else:
        import ray

        table = pa.concat_tables(ray.get(out.to_arrow_refs()))
    got = pl.from_arrow(table)
    assert isinstance(got, pl.DataFrame)
    return got


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str, pl.DataFrame]:
    """1M candidates (10,000 queries) in a seeded random row order, cut into five files
    of unequal sizes (so most queries are split across files), the chunk store, and the
    single-process output over the same files."""
    from benchmarks._generate import generate

    data = generate(10_000, documents=4_000, seed=7)
    order = np.random.default_rng(3).permutation(data.results.height)
    shuffled = data.results[order]
    root = tmp_path_factory.mktemp("synthetic")
    cuts = [0, 90_000, 350_000, 410_000, 800_000, shuffled.height]
    files = []
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        files.append(os.fspath(root / f"part-{i}.parquet"))
        shuffled.slice(a, b - a).write_parquet(files[-1])
    store = os.fspath(root / "chunks.parquet")
    data.chunks.write_parquet(store)
    whole = _local_blocks(pl.scan_parquet(files), pl.scan_parquet(store))
    return files, store, whole


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_postprocess_equals_local_on_1m_rows_across_files(
    name: str,
    synthetic: tuple[list[str], str, pl.DataFrame],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    engine = _engine(name, request)
    files, store, whole = synthetic
    got = engine.postprocess(files, CONFIG, chunks=store, collect=True, partitions=4)
    assert_frame_equal(got, whole)
    written = engine.postprocess(
        files, CONFIG, chunks=store, output=tmp_path / "out", partitions=4, broadcast=False
    )
    parts = sorted(glob.glob(os.path.join(written, "part-*.parquet")))
    assert len(parts) == 4
    assert_frame_equal(pl.read_parquet(parts).sort(c.QUERY_ID, c.BLOCK_RANK), whole)


def _kill_when_a_part_is_written(folder: Path, pids: Callable[[], list[int]]) -> list[int]:
    """Once the first part is in the run's temporary folder, kill one worker."""
    pattern = os.path.join(
        folder.parent, f".{folder.name}{ragframe.io.TEMP_MARK}*", "part-*.parquet"
    )
    deadline = time.monotonic() + 300
    while not glob.glob(pattern) and time.monotonic() < deadline:
        time.sleep(0.05)
    victims = pids()[:1]
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    return victims


def _busy_ray_workers() -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if line.startswith("ray::") and "IDLE" not in line and "MapBatches" in line:
            found.append(proc.info["pid"])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_a_worker_killed_mid_run_loses_and_doubles_nothing(
    name: str,
    synthetic: tuple[list[str], str, pl.DataFrame],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    engine = _engine(name, request, dask="killable_dask_client")
    files, store, whole = synthetic
    target = tmp_path / "out"
    if name == "dask":
        client = request.getfixturevalue("killable_dask_client")

        def pids() -> list[int]:
            return list(client.run(os.getpid).values())
    else:
        pids = _busy_ray_workers
    killed: list[int] = []
    thread = threading.Thread(
        target=lambda: killed.extend(_kill_when_a_part_is_written(target, pids))
    )
    thread.start()
    written = engine.postprocess(files, CONFIG, chunks=store, output=target, partitions=8)
    thread.join()
    assert killed, "no worker was killed: the test did not test anything"
    parts = sorted(glob.glob(os.path.join(written, "part-*.parquet")))
    assert len(parts) == 8
    assert_frame_equal(pl.read_parquet(parts).sort(c.QUERY_ID, c.BLOCK_RANK), whole)


def test_parquet_files_in_polars_order(tmp_path: Path) -> None:
    for name in ("b.parquet", "a.parquet", "sub/c.parquet"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        pl.DataFrame({"x": [1]}).write_parquet(tmp_path / name)
    found = [Path(f).relative_to(tmp_path).as_posix() for f in _sources.parquet_files(tmp_path)]
    assert found == ["a.parquet", "b.parquet", "sub/c.parquet"]
    assert _sources.parquet_files([tmp_path / "b.parquet", tmp_path / "a.parquet"])[0].endswith(
        "b.parquet"
    )
    with pytest.raises(RagframeError, match="input not found"):
        _sources.parquet_files(tmp_path / "nope.parquet")


def test_a_missing_engine_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "ray", None)
    with pytest.raises(ConfigError, match=r"pip install 'ragframe\[ray\]'"):
        _sources.require("ray", "ray")


def test_broadcast_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    small = pl.DataFrame({"doc_id": [1], "chunk_index": [0], "text": ["x"]})
    assert _sources.broadcast_store(small, None)
    assert not _sources.broadcast_store(small, False)
    assert not _sources.broadcast_store(small.lazy(), None)  # size unknown: join by key
    monkeypatch.setattr(_sources, "BROADCAST_LIMIT", small.estimated_size() - 1)
    assert not _sources.broadcast_store(small, None)  # over the limit: join by key
    assert _sources.partition_count(10_000_000, 8, 2) == 6
    assert _sources.partition_count(None, 3, 2) == 4


def test_engine_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragframe.cli import main

    out = os.fspath(tmp_path / "out.parquet")
    base = ["postprocess", "data/results.parquet", "--chunks", "data/chunks.parquet", "-o", out]
    cases = {
        "--scheduler is for --engine dask": ["--scheduler", "tcp://nowhere:1"],
        "--ray-address is for --engine ray": ["--engine", "dask", "--ray-address", "x:1"],
        "--partitions must be >= 1, got 0": ["--engine", "ray", "--partitions", "0"],
        "an engine reads Parquet": ["--engine", "dask"],
    }
    for message, extra in cases.items():
        argv = base + extra
        if message == "an engine reads Parquet":
            argv[1] = os.fspath(tmp_path / "results.csv")
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_cli_engine_equals_local(name: str, tmp_path: Path) -> None:
    pytest.importorskip("distributed" if name == "dask" else "ray")
    from ragframe.cli import main

    args = ["postprocess", "data/results.parquet", "--chunks", "data/chunks.parquet"]
    assert main([*args, "-o", os.fspath(tmp_path / "local.parquet")]) == 0
    assert main([*args, "-o", os.fspath(tmp_path / "e.parquet"), "--engine", name]) == 0
    got, want = (pl.read_parquet(tmp_path / f) for f in ("e.parquet", "local.parquet"))
    assert_frame_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_cli_engine_workers_write_every_output_as_local(
    name: str, cranfield: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On an engine the workers write the parts and the driver commits them: a file, a
    directory of parts and fetch's request order all equal the local run, and nothing
    but the outputs is left in the folder; the summary counts the partitions, as the
    local one does."""
    pytest.importorskip("distributed" if name == "dask" else "ray")
    from ragframe.cli import main

    results, chunks = str(cranfield / "results_minilm.parquet"), str(cranfield / "chunks.parquet")
    args = ["postprocess", results, "--chunks", chunks, "-q"]
    assert main([*args, "-o", os.fspath(tmp_path / "local.parquet")]) == 0
    engine = ["--engine", name, "--partitions", "3"]
    capsys.readouterr()
    assert main([*args, "-o", os.fspath(tmp_path / "e.parquet"), *engine]) == 0
    assert re.search(r"\n  partitions +3\n", capsys.readouterr().out)
    assert main([*args, "-o", os.fspath(tmp_path / "parts") + "/", *engine]) == 0
    want = pl.read_parquet(tmp_path / "local.parquet")
    assert_frame_equal(pl.read_parquet(tmp_path / "e.parquet"), want)
    parts = sorted(glob.glob(os.fspath(tmp_path / "parts" / "part-*.parquet")))
    assert len(parts) == 3
    assert_frame_equal(pl.read_parquet(parts), want)  # the parts, in order, are the output
    queries = pl.read_parquet(cranfield / "queries.parquet")
    requests = (
        pl.read_parquet(results)
        .filter(pl.col(c.RANK) <= 5)
        .join(queries.select(c.QUERY_ID, pl.col("text").alias(c.QUERY)), on=c.QUERY_ID)
        .select(c.QUERY_ID, c.QUERY, c.DOC_ID, c.RANK)
    )
    requests.write_parquet(tmp_path / "requests.parquet")
    docs = os.fspath(cranfield / "docs.parquet")
    fetch = ["fetch", os.fspath(tmp_path / "requests.parquet"), docs, "-q"]
    assert main([*fetch, "-o", os.fspath(tmp_path / "flocal.parquet")]) == 0
    capsys.readouterr()
    assert main([*fetch, "-o", os.fspath(tmp_path / "fe.parquet"), *engine]) == 0
    assert re.search(r"\n  partitions +3\n", capsys.readouterr().out)
    got, local = (pl.read_parquet(tmp_path / f) for f in ("fe.parquet", "flocal.parquet"))
    assert_frame_equal(got, local)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [
        "e.parquet",
        "fe.parquet",
        "flocal.parquet",
        "local.parquet",
        "parts",
        "requests.parquet",
    ]


@pytest.mark.parametrize("name", ["dask", clusters.RAY_SLOW])
def test_a_broadcast_store_file_is_read_by_the_workers_again_when_rewritten(
    name: str,
    cranfield: Path,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store given as files travels as their names: the driver never reads it (its
    reader is made to fail here), and a worker that read it in one run reads it again
    when the file was rewritten before the next (same path, other text)."""
    from ragframe.driver import _run

    def no_driver_read(store: Any) -> Any:
        raise AssertionError(f"the driver read the store {store!r}")

    monkeypatch.setattr(_run, "local_table", no_driver_read)
    engine = _engine(name, request)
    results = str(cranfield / "results_minilm.parquet")
    chunks = pl.read_parquet(cranfield / "chunks.parquet")
    store = tmp_path / "chunks.parquet"
    for text in (pl.col("text"), pl.col("text").str.to_uppercase()):
        chunks.with_columns(text).write_parquet(store)
        got = engine.postprocess(
            results, CONFIG, chunks=str(store), collect=True, partitions=3, broadcast=True
        )
        assert_frame_equal(got, _local_blocks(pl.scan_parquet(results), pl.scan_parquet(store)))
