"""Inputs and outputs on other filesystems, against a real S3 API served locally
(moto's server): every command's output written to ``s3://`` equals its local run's,
byte for byte; ``memory://`` (fsspec's) and ``file://`` URIs; atomic commit; credentials
and the endpoint from the usual environment; a missing bucket or a denied write is one
``error:`` line, before any work."""

from __future__ import annotations

import contextlib
import http.server
import logging
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ragframe import io
from ragframe.cli import main
from ragframe.io import _atomic
from tests.s3 import client

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed")
boto3 = pytest.importorskip("boto3")
pafs = pytest.importorskip("pyarrow.fs")

DATA = Path(__file__).resolve().parents[1] / "data"
SECTIONS = pl.DataFrame(
    {
        "doc_id": [1, 1, 2],
        "section_index": [0, 1, 0],
        "title": ["T", None, None],
        "text": ["abcdefgh", "ijkl", "xyz"],
    }
)
REQUESTS = pl.DataFrame(
    {"query_id": [1, 1, 2], "query": ["flow", "wing", "flow"], "doc_id": [1, 2, 3]}
)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto S3 server on a free port, for this module."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no request lines on stderr
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new bucket; credentials, region and endpoint set as a user sets them."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    name = f"rf-{secrets.token_hex(4)}"
    client().create_bucket(Bucket=name)
    return name


def keys(bucket: str) -> list[str]:
    """The objects in ``bucket``, but folder markers (``out/``, empty, which pyarrow
    writes for a folder as a local write makes the folder)."""
    listed = client().list_objects_v2(Bucket=bucket)
    return sorted(e["Key"] for e in listed.get("Contents", []) if not e["Key"].endswith("/"))


def get(bucket: str, key: str) -> bytes:
    body: bytes = client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def put(bucket: str, key: str, data: bytes) -> None:
    client().put_object(Bucket=bucket, Key=key, Body=data)


def inputs(tmp_path: Path, bucket: str) -> Path:
    """The bundled data and small tables for every command, locally and in ``bucket``
    under ``in/``."""
    folder = tmp_path / "in"
    shutil.copytree(DATA, folder)
    SECTIONS.write_parquet(folder / "sections.parquet")
    REQUESTS.write_csv(folder / "requests.csv")
    queries = pl.read_parquet(folder / "queries.parquet").rename({"query": "text"})
    queries.write_parquet(folder / "queries-text.parquet")
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        put(bucket, f"in/{path.relative_to(folder).as_posix()}", path.read_bytes())
    return folder


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "postprocess": (
        ["postprocess", "{in}/results.parquet", "--chunks", "{in}/chunks.parquet"],
        ["blocks.parquet"],
    ),
    "postprocess-parts": (
        ["postprocess", "{in}/results.parquet", "--chunks", "{in}/chunks.parquet"],
        ["parts/"],
    ),
    "evaluate": (
        [
            "evaluate",
            "{in}/results.parquet",
            "--qrels",
            "{in}/qrels.parquet",
            "--k",
            "5,10",
            "--summary",
            "{out}/summary.csv",
        ],
        ["metrics.jsonl"],
    ),
    "fetch": (["fetch", "{in}/requests.csv", "{in}/documents.parquet"], ["fetched.arrow"]),
    "window": (["window", "{in}/sections.parquet", "--window-chars", "4"], ["windows.csv"]),
    "chunk": (
        ["chunk", "{in}/documents.parquet", "--window-chars", "300", "--overlap-chars", "50"],
        ["chunks.parquet"],
    ),
    "retrieve": (
        ["retrieve", "{in}/chunks.parquet", "--queries", "{in}/queries-text.parquet", "--k", "5"],
        ["retrieved.parquet"],
    ),
}


def _argv(template: list[str], output: str, where_in: str, where_out: str) -> list[str]:
    filled = [a.replace("{in}", where_in).replace("{out}", where_out) for a in template]
    return [*filled, "-o", f"{where_out}/{output}"]


def _local_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_on_s3_writes_what_a_local_run_writes(
    command: str, tmp_path: Path, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    template, (output,) = COMMANDS[command]
    local_in, local_out = inputs(tmp_path, bucket), tmp_path / "out"
    local_out.mkdir()
    assert run(capsys, _argv(template, output, str(local_in), str(local_out))) == (0, "")
    remote = _argv(template, output, f"s3://{bucket}/in", f"s3://{bucket}/out")
    assert run(capsys, remote) == (0, "")
    written = {k.removeprefix("out/"): get(bucket, k) for k in keys(bucket) if k.startswith("out/")}
    assert written == _local_files(local_out)  # byte for byte; no temporary left behind
    assert written  # the command wrote something


def test_reads_globs_folders_and_file_uris(tmp_path: Path, bucket: str) -> None:
    frame = pl.read_parquet(DATA / "results.parquet")
    halves = frame.head(300), frame.tail(300)
    for i, half in enumerate(halves):
        local = tmp_path / f"runs/q={i}/part.parquet"
        local.parent.mkdir(parents=True)
        half.write_parquet(local)
        put(bucket, f"runs/q={i}/part.parquet", local.read_bytes())
    from_s3 = io.read_table(f"s3://{bucket}/runs")
    assert from_s3.equals(io.read_table(tmp_path / "runs"))  # hive partitions read alike
    assert io.read_table(f"s3://{bucket}/runs/**/*.parquet").equals(pl.concat(halves))
    assert io.read_table(f"file://{tmp_path}/runs/q=0/part.parquet").equals(halves[0])


def test_memory_filesystem_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    """A scheme pyarrow does not know, through fsspec: its in-memory filesystem."""
    results = pl.read_parquet(DATA / "results.parquet")
    base = f"memory://rf-{secrets.token_hex(4)}"
    io.write_table(results, f"{base}/results.parquet")
    io.write_table(pl.read_parquet(DATA / "chunks.parquet"), f"{base}/chunks/")
    argv = ["postprocess", f"{base}/results.parquet", "--chunks", f"{base}/chunks/"]
    assert run(capsys, [*argv, "-o", f"{base}/blocks.csv"]) == (0, "")
    argv = ["postprocess", str(DATA / "results.parquet"), "--chunks", str(DATA / "chunks.parquet")]
    assert main([*argv, "-o", "-", "--format", "csv", "-q"]) == 0
    import fsspec

    fs = fsspec.filesystem("memory")
    assert fs.cat_file(f"{base}/blocks.csv") == capsys.readouterr().out.encode()
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls(base, detail=False)) == [
        "blocks.csv",
        "chunks",
        "results.parquet",
    ]


def test_a_missing_input_bucket_or_key_is_one_error_line(
    bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = f"s3://{bucket}/blocks.parquet"
    for source, said in [
        ("s3://rf-no-such-bucket/results.parquet", "input file not found"),
        (f"s3://{bucket}/nothing.parquet", "input file not found"),
        (f"s3://{bucket}/*.parquet", "no files match"),
    ]:
        code, err = run(capsys, ["postprocess", source, "-o", out])
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {said}"), err
        assert source in err and "ragframe-remote" not in err
    assert keys(bucket) == []


def test_a_missing_output_bucket_is_one_error_line_before_any_work(
    bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs(tmp_path, bucket)
    argv = [
        "postprocess",
        f"s3://{bucket}/in/results.parquet",
        "--chunks",
        str(DATA / "chunks.parquet"),
    ]
    for target in ["s3://rf-no-such-bucket/blocks.parquet", "s3://rf-no-such-bucket/parts/"]:
        code, err = run(capsys, [*argv, "-o", target])
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: cannot write {target}: ") and "bucket" in err.lower()
        assert "Request ID" not in err


def test_a_failed_upload_leaves_the_old_output_and_no_temporary(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upload breaks after the temporary is written: the target keeps its old
    content, and the temporary is removed."""
    from ragframe.io import _uploads

    old = pl.DataFrame({"a": [1]})
    io.write_table(old, f"s3://{bucket}/t.parquet")
    io.write_table(old, f"s3://{bucket}/parts/")
    before = {k: get(bucket, k) for k in keys(bucket)}

    def broken_move(fs: Any, source: str, target: str) -> None:
        raise OSError("connection reset during the move")

    monkeypatch.setattr(_uploads, "_move", broken_move)
    new = pl.DataFrame({"a": [2, 3]})
    for target in [f"s3://{bucket}/t.parquet", f"s3://{bucket}/parts/"]:
        with pytest.raises(io.RagframeError, match=f"cannot write {target}: connection reset"):
            io.write_table(new, target)
    assert {k: get(bucket, k) for k in keys(bucket)} == before
    assert not [p for p in _atomic.WRITING if "ragframe-stage-" in p.name]  # local copy gone


def test_a_failed_run_writes_nothing(bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that fails after its output was opened leaves no object at all."""
    put(bucket, "in/results.parquet", (DATA / "results.parquet").read_bytes())
    put(bucket, "in/chunks.parquet", b"PAR1 not a parquet file")
    argv = ["postprocess", f"s3://{bucket}/in/results.parquet", "--chunks"]
    code, err = run(capsys, [*argv, f"s3://{bucket}/in/chunks.parquet", "-o", f"s3://{bucket}/o/"])
    assert code == 2 and err.count("\n") == 1 and f"s3://{bucket}/in/chunks.parquet" in err
    assert keys(bucket) == ["in/chunks.parquet", "in/results.parquet"]


def test_directory_output_replaces_old_parts_and_refuses_other_files(bucket: str) -> None:
    frame = pl.read_parquet(DATA / "results.parquet")
    with io.open_output(f"s3://{bucket}/d/", frame.to_arrow().schema) as sink:
        for piece in frame.iter_slices(200):
            sink.write(piece)
    assert keys(bucket) == [f"d/part-0000{i}.parquet" for i in range(3)]
    io.write_table(frame.head(5), f"s3://{bucket}/d/")
    assert keys(bucket) == ["d/part-00000.parquet"]
    assert io.read_table(f"s3://{bucket}/d/").equals(frame.head(5))
    put(bucket, "d/notes.txt", b"mine")
    with pytest.raises(io.RagframeError, match="holds other files than Parquet parts"):
        io.write_table(frame, f"s3://{bucket}/d/")


def test_credentials_come_from_the_environment(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command runs as a user runs it, a new process: with the local server's
    endpoint and credentials in the environment it succeeds; with no credentials and
    another endpoint there, it asks that endpoint (a server refusing every request: an
    HTTP refusal is an error line at once, where a closed port would be retried for
    6 s by the AWS SDK) and fails with one error line."""
    inputs(tmp_path, bucket)
    argv = [
        sys.executable,
        "-m",
        "ragframe.cli",
        "postprocess",
        f"s3://{bucket}/in/results.parquet",
    ]
    argv += ["--chunks", f"s3://{bucket}/in/chunks.parquet", "-o", f"s3://{bucket}/out.jsonl", "-q"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert "out.jsonl" in keys(bucket)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with refusing_server() as (url, asked):
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert asked and all(path.startswith(f"/{bucket}/in/") for path in asked), asked


@contextlib.contextmanager
def refusing_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on a free port answering every request 403 (no body); yields its
    URL and the paths it was asked for."""
    asked: list[str] = []

    class Refuse(http.server.BaseHTTPRequestHandler):
        def refuse(self) -> None:
            asked.append(self.path)
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = refuse

        def log_message(self, format: str, *args: Any) -> None:  # no request lines
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A moto server of its own that checks credentials and permissions (but for its
    first five requests, the setup): a bucket holding the bundled results, and the
    environment of a user allowed to read it, not to write."""
    import json
    import socket
    import time

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "5"}
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        admin = {"endpoint_url": url, "region_name": "us-east-1"}
        admin |= {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        name = f"rf-{secrets.token_hex(4)}"
        boto3.client("s3", **admin).create_bucket(Bucket=name)  # 1
        iam = boto3.client("iam", **admin)
        iam.create_user(UserName="reader")  # 2
        statement = {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"]}
        statement["Resource"] = [f"arn:aws:s3:::{name}", f"arn:aws:s3:::{name}/*"]
        policy = {"Version": "2012-10-17", "Statement": [statement]}
        iam.put_user_policy(  # 3
            UserName="reader", PolicyName="read", PolicyDocument=json.dumps(policy)
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]  # 4
        results = (DATA / "results.parquet").read_bytes()
        boto3.client("s3", **admin).put_object(Bucket=name, Key="results.parquet", Body=results)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield name
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_denied_write_is_one_error_line_before_any_work(
    guarded: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The input is read with the user's credentials; the output is refused."""
    bucket = guarded
    argv = [
        "postprocess",
        f"s3://{bucket}/results.parquet",
        "--chunks",
        str(DATA / "chunks.parquet"),
    ]
    for target in [f"s3://{bucket}/blocks.parquet", f"s3://{bucket}/parts/"]:
        code, err = run(capsys, [*argv, "-o", target])
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"error: cannot write {target}: ") and "denied" in err.lower(), err
    assert keys(bucket) == ["results.parquet"]  # the reader may list: nothing was written
