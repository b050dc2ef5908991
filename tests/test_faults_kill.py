"""A worker killed mid-run, on Dask and on Ray: the command, connected to a running
cluster (``--scheduler`` / ``--ray-address``), either completes, its output equal to
the local run's, the lost work done again; or, where the cluster gives lost work no
second try, fails whole: one ``error:`` line, exit status 2, no output, no temporary
left beside it. The worker is killed (``SIGKILL``) while it runs one of the run's
partition tasks, seen on the cluster itself: Dask's scheduler lists the task among a
worker's, a Ray worker's process title names it. The library's own runs with a worker
killed are in ``tests/test_distributed.py``. The cluster tests are marked ``slow``.
On the local engine (threads in one process) the worker is the process: killed while
it writes, the older output stays as it was and the next run removes the temporary."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ragframe.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")
QUERIES = 3000
"""300,000 candidates: a run of seconds on two workers, time to kill one mid-task."""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The candidates as a folder of three parts (queries split across them), the chunk
    store, and the local command's blocks."""
    from benchmarks._generate import generate

    data = generate(QUERIES, documents=2000, seed=5)
    root = tmp_path_factory.mktemp("kill")
    results = root / "results"
    results.mkdir()
    third = data.results.height // 3
    for i in range(3):
        part = data.results.slice(i * third, third if i < 2 else None)
        part.write_parquet(results / f"part-{i:05d}.parquet")
    chunks = root / "chunks.parquet"
    data.chunks.write_parquet(chunks)
    local = root / "local.parquet"
    argv = ["postprocess", str(results), "--chunks", str(chunks), "-o", str(local), "-q"]
    assert main(argv) == 0
    return results, chunks, local


def _command(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "RAY_DISABLE_USAGE_STATS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "ragframe.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _run_and_kill(
    args: list[str], busy: Callable[[], int | None], *, every: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Run the command; once ``busy()`` names a worker running one of its partition
    tasks, kill that worker (while the command still runs); ``every``: each worker
    that runs one, until the command ends."""
    proc = _command(args)
    killed: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            pid = busy()
            if pid is not None and pid not in killed and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                if not every:
                    return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
        watcher.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), killed


def _postprocess_args(inputs: tuple[Path, Path, Path], out: Path) -> list[str]:
    results, chunks, _ = inputs
    return ["postprocess", str(results), "--chunks", str(chunks), "-o", str(out), "-q"]


def _assert_whole(done: subprocess.CompletedProcess[str], out: Path, local: Path) -> None:
    assert done.returncode == 0, done.stderr
    assert_frame_equal(pl.read_parquet(out), pl.read_parquet(local))
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]


def _assert_failed_whole(done: subprocess.CompletedProcess[str], out: Path, lost: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert lines[0].startswith(lost), lines[0]
    assert list(out.parent.iterdir()) == []  # no output, no temporary


# --- local ----------------------------------------------------------------------


def test_local_command_killed_mid_write_leaves_the_older_output(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out" / "blocks.parquet"
    out.parent.mkdir()
    older = [*_postprocess_args(inputs, out), "--top-k", "3"]
    assert main(older) == 0
    before = out.read_bytes()

    def writing() -> int | None:  # the command's temporary beside the output holds data
        temps = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]
        return proc_pid[0] if any(_holds_data(p) for p in temps) else None

    proc_pid: list[int] = []
    args = [*_postprocess_args(inputs, out), "--rows-per-partition", "20000"]
    proc = _command(args)
    proc_pid.append(proc.pid)
    watcher = threading.Thread(target=lambda: _kill_when(writing, proc))
    watcher.start()
    proc.communicate(timeout=300)
    watcher.join()
    assert proc.returncode == -signal.SIGKILL, "the command ended before it was killed"
    assert out.read_bytes() == before
    assert len(list(out.parent.iterdir())) == 2  # the output and the killed run's temporary
    assert main(_postprocess_args(inputs, out)) == 0
    _assert_whole(subprocess.CompletedProcess([], 0), out, inputs[2])


def _holds_data(path: Path) -> bool:
    """Whether ``path`` exists with bytes in it: the run's own temporary, not the empty
    file the write check creates and removes beside the output first (a kill seen on
    that one found it gone, the run not yet writing)."""
    try:
        return path.stat().st_size > 0
    except FileNotFoundError:
        return False


def _kill_when(ready: Callable[[], int | None], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        pid = ready()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.005)


# --- Dask ---------------------------------------------------------------------------


@contextmanager
def _dask_cluster(allowed_failures: int) -> Iterator[Any]:
    """A local Dask cluster of two worker processes (each restarted by its nanny when
    killed) whose scheduler runs a task lost with its worker ``allowed_failures``
    times more before it fails the run (KilledWorker)."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
            env={"POLARS_MAX_THREADS": "1"},
        )
        client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _dask_busy(client: Any, task: str) -> Callable[[], int | None]:
    """The process of a worker the scheduler has given a ``task`` task, if any."""

    def busy() -> int | None:
        for address, keys in client.processing().items():
            if any(task in str(key) for key in keys):
                pid: int | None = client.run(os.getpid, workers=[address]).get(address)
                return pid
        return None

    return busy


def _dask_args(client: Any) -> list[str]:
    return ["--engine", "dask", "--scheduler", client.cluster.scheduler_address]


@pytest.mark.slow
def test_dask_worker_killed_mid_task_the_run_completes(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out" / "blocks.parquet"
    out.parent.mkdir()
    with _dask_cluster(allowed_failures=3) as client:
        args = [*_postprocess_args(inputs, out), *_dask_args(client)]
        done, killed = _run_and_kill(args, _dask_busy(client, "ragframe-work"))
    assert killed, f"no worker was killed mid-task: nothing was tested ({done.stderr})"
    _assert_whole(done, out, inputs[2])


@pytest.mark.slow
def test_dask_worker_killed_without_a_retry_the_run_fails_whole(
    inputs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out" / "blocks.parquet"
    out.parent.mkdir()
    with _dask_cluster(allowed_failures=0) as client:
        args = [*_postprocess_args(inputs, out), *_dask_args(client)]
        done, killed = _run_and_kill(args, _dask_busy(client, "ragframe-work"))
    assert killed, f"no worker was killed mid-task: nothing was tested ({done.stderr})"
    _assert_failed_whole(done, out, "error: the Dask run failed: a worker died running its task")


# --- Ray ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A new local Ray of two CPUs, started by this process (its workers are this
    process's descendants: only those are ever killed), and its address."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _ray_busy() -> int | None:
    """A worker of this process's Ray running a partition task (its process title names
    the task: ``ray::MapBatches(run_group)``; an idle one's is ``ray::IDLE``)."""
    import psutil

    for proc in psutil.Process().children(recursive=True):
        try:
            line = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if line.startswith("ray::") and "run_group" in line:
            return int(proc.pid)
    return None


@pytest.mark.slow
def test_ray_worker_killed_mid_task_the_run_completes(
    inputs: tuple[Path, Path, Path], tmp_path: Path, ray_address: str
) -> None:
    out = tmp_path / "out" / "blocks.parquet"
    out.parent.mkdir()
    args = [*_postprocess_args(inputs, out), "--engine", "ray", "--ray-address", ray_address]
    done, killed = _run_and_kill(args, _ray_busy)
    assert killed, f"no worker was killed mid-task: nothing was tested ({done.stderr})"
    _assert_whole(done, out, inputs[2])


@pytest.mark.slow
def test_ray_every_try_killed_the_run_fails_whole(
    inputs: tuple[Path, Path, Path], tmp_path: Path, ray_address: str
) -> None:
    """Each worker that takes the task is killed, past Ray's retries (3): one error."""
    out = tmp_path / "out" / "blocks.parquet"
    out.parent.mkdir()
    args = [*_postprocess_args(inputs, out), "--engine", "ray", "--ray-address", ray_address]
    done, killed = _run_and_kill(args, _ray_busy, every=True)
    assert len(killed) >= 4, f"fewer workers killed than Ray tries: {killed} ({done.stderr})"
    _assert_failed_whole(done, out, "error: the Ray run failed")
