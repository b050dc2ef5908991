"""A cluster address given to ``--engine`` must answer within ``--connect-timeout``
seconds (default ``$RAGFRAME_CONNECT_TIMEOUT``, else 30): one whose port nobody listens
on, or one that never answers, is one ``error:`` line naming it, in about that time
(Ray's own client retried such an address for minutes). Nothing is written."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragframe.cli import main
from ragframe.distributed import _connect
from ragframe.errors import ConfigError

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture
def closed_port() -> int:
    """A port nobody listens on (bound a moment ago, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listen queue is full: a new connection is never answered (Linux
    drops its SYN), as a firewalled or vanished host behaves."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = int(server.getsockname()[1])
    waiting = []
    for _ in range(4):  # fill the queue (never accepted)
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        waiting.append(s)
    time.sleep(0.1)
    yield port
    for s in [*waiting, server]:
        s.close()


def _run(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, float]:
    out = tmp_path / "blocks.parquet"
    start = time.monotonic()
    code = main(["postprocess", str(DATA / "results.parquet"), "-o", str(out), "-q", *argv])
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert not out.exists()
    return err, took


@pytest.mark.parametrize(
    ("engine", "option", "address"),
    [
        ("dask", "--scheduler", "tcp://127.0.0.1:{port}"),
        ("ray", "--ray-address", "127.0.0.1:{port}"),
        ("ray", "--ray-address", "ray://127.0.0.1:{port}"),
    ],
)
@pytest.mark.parametrize("kind", ["closed_port", "silent_port"])
def test_an_address_that_does_not_answer_fails_within_the_timeout(
    engine: str,
    option: str,
    address: str,
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    pytest.importorskip("distributed" if engine == "dask" else "ray")
    given = address.format(port=request.getfixturevalue(kind))
    argv = ["--engine", engine, option, given, "--connect-timeout", "1.5"]
    err, took = _run(argv, tmp_path, capsys)
    name = "Dask" if engine == "dask" else "Ray"
    reason = "Connection refused" if kind == "closed_port" else "timed out"
    said = f"cannot reach the {name} cluster at {given}: no answer within 1.5 s ({reason})"
    form = {"dask": "tcp://HOST:8786", "ray": "HOST:6379"}[engine]
    form = "ray://HOST:10001" if given.startswith("ray://") else form  # Ray Client's form
    assert err == f"error: {said}; expected the address of a running cluster ({form})\n", err
    assert took < 1.5 + 5, took  # the timeout, and the engine's import
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()


def test_the_environment_sets_the_default_timeout(
    closed_port: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setenv(_connect.ENVIRONMENT, "0.5")
    err, took = _run(
        ["--engine", "dask", "--scheduler", f"127.0.0.1:{closed_port}"], tmp_path, capsys
    )
    assert "no answer within 0.5 s (Connection refused)" in err and took < 5
    monkeypatch.setenv(_connect.ENVIRONMENT, "soon")
    err, _ = _run(["--engine", "dask", "--scheduler", "tcp://x:1"], tmp_path, capsys)
    assert err == f"error: {_connect.ENVIRONMENT} must be a number of seconds > 0, got 'soon'\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--connect-timeout", "0", "--engine", "ray", "--ray-address", "h:1"], "> 0, got '0'"),
        (["--connect-timeout", "-1", "--engine", "dask", "--scheduler", "h:1"], "> 0, got '-1'"),
        (["--connect-timeout", "inf", "--engine", "dask", "--scheduler", "h:1"], "> 0, got 'inf'"),
        (["--connect-timeout", "1e-0x", "--engine", "dask", "--scheduler", "h:1"], "got '1e-0x'"),
        (["--connect-timeout", "5", "--engine", "dask"], "is for --scheduler or --ray-address"),
    ],
)
def test_a_bad_timeout_is_one_error_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err, took = _run(argv, tmp_path, capsys)
    assert message in err and took < 5


def test_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _connect.host_port("10.0.0.5", 8786) == ("10.0.0.5", 8786)
    assert _connect.host_port("tls://h.example:9", 8786) == ("h.example", 9)
    assert _connect.host_port("[::1]:6379", 1) == ("::1", 6379)
    for other in ("auto", "local", "inproc://x", "ucx://h:1", "no:such:address", "h:port"):
        assert _connect.host_port(other, 1) is None
    with pytest.raises(OSError, match=r"cannot resolve the host 'no-such-host\.invalid'"):
        _connect.reach("no-such-host.invalid:1", 1, 5.0)
    with pytest.raises(ConfigError, match="must be a number of seconds"):
        _connect.timeout(-1.0)
    monkeypatch.delenv(_connect.ENVIRONMENT, raising=False)
    assert _connect.timeout(None) == _connect.CONNECT_TIMEOUT == 30
    assert _connect.timeout(2.5) == 2.5


def test_a_scheduler_that_answers_runs_as_the_local_engine(tmp_path: Path) -> None:
    """The probe lets a running scheduler through (in-process workers: cheap)."""
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.dataframe")
    import polars as pl
    from polars.testing import assert_frame_equal

    args = ["postprocess", str(DATA / "results.parquet"), "--chunks", str(DATA / "chunks.parquet")]
    assert main([*args, "-o", str(tmp_path / "local.parquet"), "-q"]) == 0
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        on = ["--engine", "dask", "--scheduler", cluster.scheduler_address]
        assert (
            main([*args, "-o", str(tmp_path / "e.parquet"), "-q", *on, "--connect-timeout", "5"])
            == 0
        )
    got, want = (pl.read_parquet(tmp_path / f) for f in ("e.parquet", "local.parquet"))
    assert_frame_equal(got, want)
