"""Dask and Ray read their inputs from ``s3://`` (a real S3 API served locally, moto's
server): the driver lists the files, each worker reads its own pieces with the
credentials and endpoint of its own environment, and the result equals the local run
row for row. The CLI on an engine writes its output to ``s3://`` as a local run writes
it. Skipped where moto or the engine is not installed."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe.cli import main
from ragframe.distributed import _inputs
from ragframe.errors import RagframeError

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
boto3 = pytest.importorskip("boto3")

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning:ray.data.context"  # Ray Data warns about its own settings
)
DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)


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
    """A bucket holding the bundled data under ``in/``; the chunks also as a folder of
    two files (``in/chunks/``)."""
    name = f"rf-{secrets.token_hex(4)}"
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=name)
    for path in sorted(DATA.glob("*.parquet")):
        s3.put_object(Bucket=name, Key=f"in/{path.name}", Body=path.read_bytes())
    requests = (
        pl.read_parquet(DATA / "results.parquet")
        .unique(["query_id", "doc_id"], keep="first", maintain_order=True)
        .join(pl.read_parquet(DATA / "queries.parquet"), on="query_id")
        .select("query_id", "query", "doc_id")
    )
    s3.put_object(Bucket=name, Key="in/requests.parquet", Body=_parquet_bytes(requests))
    chunks = pl.read_parquet(DATA / "chunks.parquet")
    half = chunks.height // 2
    for i, part in enumerate((chunks.head(half), chunks.tail(chunks.height - half))):
        key = f"in/chunks/part-{i}.parquet"
        buffer = _parquet_bytes(part)
        s3.put_object(Bucket=name, Key=key, Body=buffer)
    return name


def _parquet_bytes(frame: pl.DataFrame) -> bytes:
    import io

    out = io.BytesIO()
    frame.write_parquet(out)
    return out.getvalue()


@pytest.fixture(scope="module")
def dask_client(environment: str) -> Iterator[Any]:
    pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def ray_cluster(environment: str) -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _engine(name: str, request: pytest.FixtureRequest) -> Any:
    request.getfixturevalue("dask_client" if name == "dask" else "ray_cluster")
    if name == "dask":
        from ragframe.distributed import dask as module
    else:
        from ragframe.distributed import ray as module
    return module


def test_the_driver_lists_remote_parquet_files(bucket: str) -> None:
    base = f"s3://{bucket}/in"
    assert _inputs.parquet_files(f"{base}/chunks") == [
        f"{base}/chunks/part-0.parquet",
        f"{base}/chunks/part-1.parquet",
    ]
    assert _inputs.parquet_files(f"{base}/chunks/*-1.parquet") == [f"{base}/chunks/part-1.parquet"]
    assert _inputs.parquet_rows([f"{base}/results.parquet"]) == [
        pl.read_parquet(DATA / "results.parquet").height
    ]
    want = pl.read_parquet_schema(DATA / "results.parquet")
    assert dict(_inputs.parquet_schema(f"{base}/results.parquet")) == dict(want)
    with pytest.raises(RagframeError, match=f"input not found: {base}/nothing.parquet"):
        _inputs.parquet_files(f"{base}/nothing.parquet")


@pytest.mark.parametrize("name", ["dask", "ray"])
def test_postprocess_reads_s3_on_each_worker(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """Both ways to the chunk store: broadcast (the driver reads it) and joined by key
    (the workers read its pieces)."""
    engine = _engine(name, request)
    want = ragframe.postprocess(
        pl.scan_parquet(DATA / "results.parquet"),
        CONFIG,
        chunks=pl.scan_parquet(DATA / "chunks.parquet"),
    ).collect()
    for broadcast in (True, False):
        got = engine.postprocess(
            f"s3://{bucket}/in/results.parquet",
            CONFIG,
            chunks=f"s3://{bucket}/in/chunks/",
            collect=True,
            partitions=3,
            broadcast=broadcast,
        )
        assert_frame_equal(got, want)


def _keys(bucket: str, prefix: str) -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(e["Key"] for e in listed.get("Contents", []) if not e["Key"].endswith("/"))


@pytest.mark.parametrize("name", ["dask", "ray"])
def test_workers_write_a_dataset_to_s3(
    name: str, bucket: str, request: pytest.FixtureRequest
) -> None:
    """Each worker uploads its part under a temporary prefix; the driver moves them onto
    the target when all are there (older parts replaced, nothing else left)."""
    engine = _engine(name, request)
    results, chunks = f"s3://{bucket}/in/results.parquet", f"s3://{bucket}/in/chunks.parquet"
    want = engine.postprocess(results, CONFIG, chunks=chunks, collect=True, partitions=2)
    prefix = f"{name}-out"
    boto3.client("s3").put_object(Bucket=bucket, Key=f"{prefix}/part-00007.parquet", Body=b"x")
    target = f"s3://{bucket}/{prefix}"
    assert engine.postprocess(results, CONFIG, chunks=chunks, output=target, partitions=2) == target
    assert _keys(bucket, prefix) == [f"{prefix}/part-0000{i}.parquet" for i in range(2)]
    assert not _keys(bucket, f".{prefix}")  # the temporary prefix is gone
    got = ragframe.io.read_table(f"{target}/")
    assert_frame_equal(got.sort("query_id", "block_rank"), want.sort("query_id", "block_rank"))


def test_a_dataset_output_to_a_missing_bucket_is_refused_before_any_work(
    bucket: str, request: pytest.FixtureRequest
) -> None:
    engine = _engine("dask", request)
    results = f"s3://{bucket}/in/results.parquet"
    target = "s3://rf-no-such-bucket/out"
    with pytest.raises(RagframeError, match=f"cannot write {target}/: .*bucket"):
        engine.postprocess(
            results, CONFIG, chunks=f"s3://{bucket}/in/chunks.parquet", output=target
        )


CLI = {
    "postprocess": ["postprocess", "{in}/results.parquet", "--chunks", "{in}/chunks/"],
    "fetch": ["fetch", "{in}/requests.parquet", "{in}/documents.parquet"],
    "evaluate": ["evaluate", "{in}/results.parquet", "--qrels", "{in}/qrels.parquet"],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["dask", "ray"])
@pytest.mark.parametrize("command", sorted(CLI))
def test_cli_on_an_engine_reads_and_writes_s3_as_a_local_run(
    command: str, name: str, bucket: str, tmp_path: Path
) -> None:
    """``--engine`` with every input and the output on ``s3://``: the output holds the
    rows of the same engine's run on local files, in its order. (Compared with the
    engine on local files: fetch on an engine numbers ``rank`` differently from the
    local engine even on local files, a difference of the engines, not of S3.)"""
    pytest.importorskip("distributed" if name == "dask" else "ray")
    local = tmp_path / "in"
    local.mkdir()
    for key in _keys(bucket, "in/"):
        (local / key[3:]).parent.mkdir(parents=True, exist_ok=True)
        (local / key[3:]).write_bytes(
            boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
        )
    argv = [a.replace("{in}", str(local)) for a in CLI[command]]
    local_run = [*argv, "-o", str(tmp_path / "out.parquet"), "-q", "--engine", name]
    assert main(local_run) == 0  # the same engine on local files (see the docstring)
    argv = [a.replace("{in}", f"s3://{bucket}/in") for a in CLI[command]]
    out = f"{name}-{command}.parquet"
    assert main([*argv, "-o", f"s3://{bucket}/{out}", "--engine", name, "-q"]) == 0
    got = boto3.client("s3").get_object(Bucket=bucket, Key=out)["Body"].read()
    want = pl.read_parquet(tmp_path / "out.parquet")
    assert_frame_equal(pl.read_parquet(got), want)
