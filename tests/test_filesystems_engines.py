"""Dask and Ray on ``s3://`` (a real S3 API served locally: moto's server): the driver
lists the remote Parquet files and reads their footers, each worker reads its own
pieces with the credentials and endpoint of its own environment, and every stage
(postprocess, fetch, evaluate, sweep) equals the local run; workers upload their parts
under a temporary prefix beside an ``s3://`` output, moved into place by the driver when
all are there (nothing left behind, an older output kept on failure). Also: an engine
refuses to replace a folder that is not a previous output, and a cluster that cannot
start is one ``error:`` line. The CLI round trips on each engine are ``slow``."""

from __future__ import annotations

import io
import logging
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe import schema as c
from ragframe.cli import main
from ragframe.driver import _sources
from ragframe.errors import RagframeError
from tests import clusters
from tests.s3 import client

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
boto3 = pytest.importorskip("boto3")

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning:ray.data.context"  # Ray Data warns about its own settings
)
DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)
GRID = {"top_k": [4, 8], "max_characters": [1500, 3000]}
ENGINES = ["dask", clusters.RAY_SLOW]  # Ray here: -m slow


def _bytes(frame: pl.DataFrame) -> bytes:
    out = io.BytesIO()
    frame.write_parquet(out)
    return out.getvalue()


def _requests() -> pl.DataFrame:
    return (
        pl.read_parquet(DATA / "results.parquet")
        .filter(pl.col(c.RANK) <= 5)
        .unique([c.QUERY_ID, c.DOC_ID], keep="first", maintain_order=True)
        .join(pl.read_parquet(DATA / "queries.parquet"), on=c.QUERY_ID, maintain_order="left")
        .select(c.QUERY_ID, c.QUERY, c.DOC_ID, c.RANK)
    )


def _blocks() -> pl.LazyFrame:
    chunks = pl.scan_parquet(DATA / "chunks.parquet")
    return ragframe.postprocess(pl.scan_parquet(DATA / "results.parquet"), CONFIG, chunks=chunks)


def _inputs_of() -> dict[str, bytes]:
    """The objects under ``in/``: the bundled data, the results and the chunks also as a
    folder of two files each (queries split across them), fetch's requests, blocks."""
    found = {f"in/{p.name}": p.read_bytes() for p in sorted(DATA.glob("*.parquet"))}
    for name in ("results", "chunks"):
        frame = pl.read_parquet(DATA / f"{name}.parquet")
        half = frame.height // 2 + 7
        found[f"in/{name}/part-0.parquet"] = _bytes(frame.head(half))
        found[f"in/{name}/part-1.parquet"] = _bytes(frame.slice(half))
    found["in/requests.parquet"] = _bytes(_requests())
    found["in/blocks.parquet"] = _bytes(_blocks().collect())
    return found


@pytest.fixture(scope="module")
def environment() -> Iterator[str]:
    """A moto S3 server; credentials, region and endpoint in the environment, as a user
    sets them, before any cluster starts (its workers inherit them)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        }.items():
            patch.setenv(name, value)
        patch.delenv("AWS_PROFILE", raising=False)
        yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def bucket(environment: str) -> str:
    name = f"rf-{secrets.token_hex(4)}"
    client().create_bucket(Bucket=name)
    for key, body in _inputs_of().items():
        client().put_object(Bucket=name, Key=key, Body=body)
    return name


def keys(bucket: str, prefix: str = "") -> list[str]:
    """The objects under ``prefix``, but folder markers (empty ``.../`` keys)."""
    listed = client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(e["Key"] for e in listed.get("Contents", []) if not e["Key"].endswith("/"))


@pytest.fixture(scope="module")
def dask_client(environment: str) -> Iterator[Any]:
    """Started after :func:`environment`: the workers take its credentials."""
    yield from clusters.dask_client()


@pytest.fixture(scope="module")
def ray_cluster(environment: str) -> Iterator[Any]:
    yield from clusters.ray_cluster()


def _engine(name: str, request: pytest.FixtureRequest) -> Any:
    """The adapter module, its cluster (worker processes) started by its fixture."""
    request.getfixturevalue("dask_client" if name == "dask" else "ray_cluster")
    import importlib

    return importlib.import_module(f"ragframe.distributed.{name}")


def test_the_driver_lists_remote_files_and_reads_their_footers(bucket: str) -> None:
    base = f"s3://{bucket}/in"
    parts = [f"{base}/chunks/part-0.parquet", f"{base}/chunks/part-1.parquet"]
    assert _sources.parquet_files(f"{base}/chunks") == parts
    assert _sources.parquet_files(f"{base}/chunks/") == parts
    assert _sources.parquet_files(f"{base}/chunks/*-1.parquet") == parts[1:]
    assert _sources.parquet_files([parts[1], parts[0]]) == [parts[1], parts[0]]
    rows = pl.read_parquet(DATA / "results.parquet").height
    assert _sources.parquet_rows([f"{base}/results.parquet"]) == [rows]
    want = pl.read_parquet_schema(DATA / "results.parquet")
    assert dict(_sources.parquet_schema(f"{base}/results.parquet")) == dict(want)
    got = _sources.local_table(f"{base}/chunks/")
    assert_frame_equal(pl.from_arrow(got), pl.read_parquet(DATA / "chunks.parquet"))  # type: ignore[arg-type]
    with pytest.raises(RagframeError, match=f"input not found: {base}/nothing.parquet"):
        _sources.parquet_files(f"{base}/nothing.parquet")
    with pytest.raises(RagframeError, match="no Parquet files"):
        _sources.parquet_files(f"{base}/chunks/*.csv")


def test_a_hive_folder_or_a_damaged_footer_is_refused_before_any_work(bucket: str) -> None:
    frame = pl.read_parquet(DATA / "results.parquet")
    client().put_object(Bucket=bucket, Key="hive/k=1/a.parquet", Body=_bytes(frame))
    with pytest.raises(RagframeError, match=f"s3://{bucket}/hive is a hive dataset"):
        _sources.parquet_files(f"s3://{bucket}/hive")
    whole = _bytes(frame)
    client().put_object(Bucket=bucket, Key="broken/a.parquet", Body=whole)
    client().put_object(Bucket=bucket, Key="broken/b.parquet", Body=whole[: len(whole) // 2])
    broken = f"s3://{bucket}/broken/b.parquet"
    with pytest.raises(RagframeError, match=f"cannot read {broken}: not a readable Parquet"):
        _sources.parquet_files(f"s3://{bucket}/broken/")


@pytest.mark.parametrize("name", ENGINES)
def test_postprocess_and_fetch_read_s3_on_each_worker_as_the_local_run(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """Inputs, chunk stores (broadcast and joined by key) and documents on S3: each
    stage's output equals the local run's on the local files."""
    engine = _engine(name, request)
    base = f"s3://{bucket}/in"
    blocks = _blocks().collect()
    for broadcast in (True, False):
        got = engine.postprocess(
            f"{base}/results/",
            CONFIG,
            chunks=f"{base}/chunks/",
            collect=True,
            partitions=3,
            broadcast=broadcast,
        )
        assert_frame_equal(got, blocks)
    documents = pl.read_parquet(DATA / "documents.parquet")
    fconfig = ragframe.FetchConfig(fulltext_threshold=600)
    fetched = ragframe.fetch(_requests(), documents, fconfig).collect()
    got = engine.fetch(
        f"{base}/requests.parquet", f"{base}/documents.parquet", fconfig, collect=True, partitions=2
    )
    assert_frame_equal(got, fetched)


@pytest.mark.parametrize("name", ENGINES)
def test_evaluate_and_sweep_read_s3_on_each_worker_as_the_local_run(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """Candidates, blocks, chunk stores and qrels on S3 (Ray's runs of these small
    stages take half a minute here: slow)."""
    engine = _engine(name, request)
    base = f"s3://{bucket}/in"
    blocks = _blocks().collect()
    qrels = ragframe.read_qrels(DATA / "qrels.parquet")
    results = pl.read_parquet(DATA / "results.parquet")
    local = ragframe.evaluate(qrels, candidates=results, k=[5, 10]).collect()
    got = engine.evaluate(f"{base}/qrels.parquet", candidates=f"{base}/results/", k=[5, 10])
    assert_frame_equal(got, local)
    chunks = pl.read_parquet(DATA / "chunks.parquet")
    local = ragframe.evaluate(qrels, blocks=blocks, chunks=chunks, max_blocks=4).collect()
    got = engine.evaluate(
        qrels, blocks=f"{base}/blocks.parquet", chunks=f"{base}/chunks/", max_blocks=4
    )
    assert_frame_equal(got, local)
    local_sweep = ragframe.sweep(results, GRID, qrels, chunks=chunks, baseline=1)
    swept = engine.sweep(
        f"{base}/results/", GRID, qrels, chunks=f"{base}/chunks.parquet", baseline=1, partitions=2
    )
    assert_frame_equal(swept.per_query, local_sweep.per_query)
    assert_frame_equal(swept.summary, local_sweep.summary)


@pytest.mark.parametrize("name", ENGINES)
def test_workers_write_a_dataset_to_s3(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """Each worker uploads its part under a temporary prefix; the driver moves them onto
    the target when all are there: an older output's parts replaced (one the new one
    lacks removed), no temporary left; fetch's parts each in request order."""
    engine = _engine(name, request)
    base = f"s3://{bucket}/in"
    prefix = f"{name}-out"
    client().put_object(Bucket=bucket, Key=f"{prefix}/part-00007.parquet", Body=b"old")
    target = f"s3://{bucket}/{prefix}"
    written = engine.postprocess(
        f"{base}/results/", CONFIG, chunks=f"{base}/chunks/", output=target, partitions=2
    )
    assert written == target
    assert keys(bucket, prefix) == [f"{prefix}/part-0000{i}.parquet" for i in range(2)]
    assert not [k for k in keys(bucket) if "ragframe-tmp" in k]
    got = pl.read_parquet([f"{target}/part-0000{i}.parquet" for i in range(2)])
    assert_frame_equal(got, _blocks().collect())  # the parts, in order, are the output
    fetched = f"s3://{bucket}/{name}-fetched/"
    engine.fetch(
        f"{base}/requests.parquet", f"{base}/documents.parquet", output=fetched, partitions=2
    )
    parts = keys(bucket, f"{name}-fetched/")
    assert len(parts) == 2
    together = pl.read_parquet([f"s3://{bucket}/{k}" for k in parts])
    want = ragframe.fetch(_requests(), pl.read_parquet(DATA / "documents.parquet")).collect()
    assert_frame_equal(together.sort(c.REQUEST_ORDER).drop(c.REQUEST_ORDER), want)
    assert not [k for k in keys(bucket) if "ragframe-tmp" in k]


@pytest.mark.parametrize("name", ENGINES)
def test_chunk_reads_and_writes_s3_on_each_worker_as_the_local_run(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """chunk on an engine: documents read from S3 by the workers, the windows collected
    and written to S3 as parts that, in order, are the local run's output."""
    engine = _engine(name, request)
    config = ragframe.WindowConfig(window_chars=400, overlap_chars=100)
    want = ragframe.chunk(pl.read_parquet(DATA / "documents.parquet"), config).collect()
    got = engine.chunk(f"s3://{bucket}/in/documents.parquet", config, collect=True, partitions=3)
    assert_frame_equal(got, want)
    prefix = f"{name}-chunks"
    target = f"s3://{bucket}/{prefix}"
    engine.chunk(f"s3://{bucket}/in/documents.parquet", config, output=target, partitions=2)
    parts = keys(bucket, prefix)
    assert parts == [f"{prefix}/part-0000{i}.parquet" for i in range(2)]
    assert_frame_equal(pl.read_parquet([f"s3://{bucket}/{k}" for k in parts]), want)
    assert not [k for k in keys(bucket) if "ragframe-tmp" in k]


def _damage_similarity(body: bytes) -> bytes:
    """The ``similarity`` column's pages overwritten, the footer and ``query_id`` whole:
    the driver's listing and plan pass read it; only a worker's read fails."""
    import pyarrow.parquet as pq

    meta = pq.read_metadata(io.BytesIO(body))
    data = bytearray(body)
    for g in range(meta.num_row_groups):
        column = meta.row_group(g).column(meta.schema.names.index("similarity"))
        start = column.dictionary_page_offset or column.data_page_offset
        data[start : start + column.total_compressed_size] = b"\x55" * column.total_compressed_size
    return bytes(data)


@pytest.mark.parametrize("name", ENGINES)
def test_a_run_failing_on_a_worker_leaves_the_s3_output_as_it_was(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    engine = _engine(name, request)
    results = pl.read_parquet(DATA / "results.parquet")
    client().put_object(Bucket=bucket, Key=f"{name}-bad/a.parquet", Body=_bytes(results))
    damaged = _damage_similarity(_bytes(results.with_columns(pl.col(c.QUERY_ID) + 100)))
    client().put_object(Bucket=bucket, Key=f"{name}-bad/b.parquet", Body=damaged)
    client().put_object(Bucket=bucket, Key=f"{name}-kept/part-00000.parquet", Body=b"old")
    target = f"s3://{bucket}/{name}-kept"
    bad = f"s3://{bucket}/{name}-bad/b.parquet"
    with pytest.raises(RagframeError, match=f"cannot read {bad}"):
        engine.postprocess(
            f"s3://{bucket}/{name}-bad/",
            CONFIG,
            chunks=f"s3://{bucket}/in/chunks.parquet",
            output=target,
            partitions=2,
        )
    assert keys(bucket, f"{name}-kept") == [f"{name}-kept/part-00000.parquet"]
    old = client().get_object(Bucket=bucket, Key=f"{name}-kept/part-00000.parquet")
    assert old["Body"].read() == b"old"
    assert not [k for k in keys(bucket) if "ragframe-tmp" in k]


def test_an_s3_output_is_checked_before_any_work(bucket: str) -> None:
    """A missing bucket; a folder holding other files than parts (not replaced)."""
    from ragframe.distributed import dask as rd

    results = f"s3://{bucket}/in/results.parquet"
    chunks = f"s3://{bucket}/in/chunks.parquet"
    target = "s3://rf-no-such-bucket/out"
    with pytest.raises(RagframeError, match=f"cannot write {target}/: .*bucket"):
        rd.postprocess(results, CONFIG, chunks=chunks, output=target)
    with pytest.raises(RagframeError, match=r"^cannot write s3://: "):  # its buckets
        rd.postprocess(results, CONFIG, chunks=chunks, output="s3://")  # not "s3:", a path
    client().put_object(Bucket=bucket, Key="mine/notes.txt", Body=b"keep me")
    with pytest.raises(RagframeError, match="holds other files than Parquet parts"):
        rd.postprocess(results, CONFIG, chunks=chunks, output=f"s3://{bucket}/mine")
    assert keys(bucket, "mine") == ["mine/notes.txt"]


def test_an_engine_replaces_only_a_previous_output_folder(tmp_path: Path) -> None:
    """``output=`` on an engine is replaced whole: a folder holding anything but Parquet
    parts (not a previous output) is refused before any work, as the local engine
    refuses it, and left as it was; a previous output or an empty folder is replaced."""
    pytest.importorskip("dask.dataframe")
    from ragframe.distributed import dask as rd

    results, chunks = str(DATA / "results.parquet"), str(DATA / "chunks.parquet")
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("keep me")
    (mine / "part-00000.parquet").write_bytes(b"x")
    with pytest.raises(RagframeError, match=r"cannot write .*mine: the directory holds other"):
        rd.postprocess(results, CONFIG, chunks=chunks, output=mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "part-00000.parquet", "sub"]
    assert (mine / "notes.txt").read_text() == "keep me"
    previous = tmp_path / "previous"
    previous.mkdir()
    (previous / "part-00009.parquet").write_bytes(b"old")
    assert rd.postprocess(results, CONFIG, chunks=chunks, output=previous, partitions=2) == str(
        previous
    )
    assert sorted(p.name for p in previous.iterdir()) == [
        "part-00000.parquet",
        "part-00001.parquet",
    ]
    with pytest.raises(RagframeError, match="exists and is not a folder"):
        rd.postprocess(results, CONFIG, chunks=chunks, output=previous / "part-00000.parquet")


def _console(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    import os

    code = "import sys; from ragframe.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )


@pytest.mark.parametrize(
    ("engine", "env", "expected"),
    [
        (["--engine", "dask", "--scheduler", "no-port"], {}, "cannot reach the Dask cluster"),
        (["--engine", "dask"], {"DASK_TEMPORARY_DIRECTORY": "{file}"}, "cannot start a local Dask"),
        (["--engine", "ray", "--ray-address", "no:such:address"], {}, "cannot reach the Ray"),
    ],
)
def test_a_cluster_that_cannot_start_is_one_error_line(
    engine: list[str], env: dict[str, str], expected: str, tmp_path: Path
) -> None:
    pytest.importorskip("distributed" if "dask" in engine else "ray")
    (tmp_path / "file").write_text("not a folder")
    env = {k: v.replace("{file}", str(tmp_path / "file")) for k, v in env.items()}
    out = tmp_path / "blocks.parquet"
    done = _console(["postprocess", str(DATA / "results.parquet"), "-o", str(out), *engine], **env)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {expected}"), done.stderr
    assert not out.exists()


CLI = {
    "postprocess": (["postprocess", "{in}/results/", "--chunks", "{in}/chunks/"], "b.parquet"),
    "parts": (["postprocess", "{in}/results.parquet", "--chunks", "{in}/chunks.parquet"], "p/"),
    "fetch": (["fetch", "{in}/requests.parquet", "{in}/documents.parquet"], "f.parquet"),
    "evaluate": (["evaluate", "{in}/blocks.parquet", "--qrels", "{in}/qrels.parquet"], "e.csv"),
}


def _download(bucket: str, into: Path) -> None:
    for key in keys(bucket, "in/"):
        path = into / key[3:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(client().get_object(Bucket=bucket, Key=key)["Body"].read())


def _read_output(path: str) -> pl.DataFrame:
    if path.endswith("/"):
        return pl.read_parquet(f"{path}part-*.parquet")
    return pl.read_csv(path) if path.endswith(".csv") else pl.read_parquet(path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize("command", sorted(CLI))
def test_cli_on_an_engine_reads_and_writes_s3_as_a_local_run(
    command: str, name: str, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine`` with every input and the output on ``s3://``: the output holds what
    the local engine writes from local files, in its order; nothing else is written."""
    pytest.importorskip("distributed" if name == "dask" else "ray")
    _download(bucket, tmp_path / "in")
    args, out = CLI[command]
    local_out = str(tmp_path / out) + ("/" if out.endswith("/") else "")
    argv = [a.replace("{in}", str(tmp_path / "in")) for a in args]
    assert main([*argv, "-o", local_out, "-q"]) == 0
    argv = [a.replace("{in}", f"s3://{bucket}/in") for a in args]
    remote_out = f"s3://{bucket}/{name}-{command}/{out}"
    code = main([*argv, "-o", remote_out, "--engine", name, "--partitions", "2", "-q"])
    assert code == 0, capsys.readouterr().err
    assert_frame_equal(_read_output(remote_out), _read_output(local_out))
    written = [k.removeprefix(f"{name}-{command}/") for k in keys(bucket, f"{name}-{command}/")]
    assert written == (
        [out] if not out.endswith("/") else [f"{out}part-00000.parquet", f"{out}part-00001.parquet"]
    )
    assert not [k for k in keys(bucket) if "ragframe-tmp" in k]


@pytest.mark.slow
@pytest.mark.parametrize("name", ENGINES)
def test_cli_sweep_on_an_engine_reads_s3_as_a_local_run(
    name: str, bucket: str, tmp_path: Path
) -> None:
    """Results, chunks and qrels on S3 (sweep's output folder is local: see
    tests/test_filesystems.py): the tables equal the local engine's on local files."""
    pytest.importorskip("distributed" if name == "dask" else "ray")
    grid = tmp_path / "grid.toml"
    grid.write_text("[grid]\ntop_k = [4, 8]\nmax_characters = [1500, 3000]\n")
    base = f"s3://{bucket}/in"
    local = [str(DATA / "results.parquet"), "--qrels", str(DATA / "qrels.parquet")]
    local += ["--chunks", str(DATA / "chunks.parquet")]
    remote = [f"{base}/results/", "--qrels", f"{base}/qrels.parquet", "--chunks", f"{base}/chunks/"]
    options = ["--grid", str(grid), "--baseline", "1", "-q"]
    assert main(["sweep", *local, *options, "-o", str(tmp_path / "local")]) == 0
    engine = ["--engine", name, "--partitions", "2"]
    assert main(["sweep", *remote, *options, "-o", str(tmp_path / "e"), *engine]) == 0
    files = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == files
    for file in (f for f in files if f.endswith(".parquet")):
        got, want = (pl.read_parquet(tmp_path / d / file) for d in ("e", "local"))
        assert_frame_equal(got, want)
