"""The driver's peak RSS on a Dask run written to a dataset (issue 26: at most 600 MB at
30M rows): the benchmarks' synthetic candidates (:mod:`benchmarks.bench_distributed`'s
inputs, 8 files, rows shuffled), postprocessed by a ``LocalCluster`` of 2 worker
processes with ``output=`` a folder; the workers write the parts, so the driver (this
process) holds the plan, never the rows. The cluster (its scheduler and its workers)
runs in a child process, as a cluster runs beside the machine that submits to it: the
driver's figure is this process alone (``ru_maxrss``, counted from after the inputs are
written: they are made in another child); the scheduler's and the workers' peaks are
printed beside it::

    python -m benchmarks.memory_distributed --queries 10000   # 1M rows
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path
from typing import Any


def _make(queries: int, root: str, out: list[str]) -> None:
    from benchmarks.bench_distributed import _inputs

    files, store = _inputs(queries, Path(root))
    out.extend([*files, store])


def _cluster(address: Any, stop: Any, peak: Any) -> None:
    """A ``LocalCluster`` (scheduler in this child, 2 worker processes) until ``stop``."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        dashboard_address=":0",
        env={"POLARS_MAX_THREADS": "1"},
    ) as cluster:
        address.put(cluster.scheduler_address)
        stop.wait()
    peak.value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_peak() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        with multiprocessing.Manager() as manager:
            made = manager.list()
            child = multiprocessing.Process(target=_make, args=(args.queries, root, made))
            child.start()
            child.join()
            paths = list(made)
        address, stop = multiprocessing.Queue(), multiprocessing.Event()
        scheduler_peak = multiprocessing.Value("d", 0.0)
        cluster = multiprocessing.Process(target=_cluster, args=(address, stop, scheduler_peak))
        cluster.start()
        from distributed import Client

        import ragframe
        from ragframe.distributed import dask as rd

        with Client(address.get(timeout=120)) as client:
            started = time.perf_counter()
            rd.postprocess(
                paths[:-1],
                ragframe.PostprocessConfig(),
                chunks=paths[-1],
                output=Path(root) / "out",
            )
            took = time.perf_counter() - started
            workers = max(client.run(_worker_peak).values())
        stop.set()
        cluster.join()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"{args.queries * 100:,} rows: dask run {took:.1f} s, driver peak RSS {peak:.0f} MiB "
            f"(scheduler {scheduler_peak.value:.0f} MiB, largest worker {workers:.0f} MiB)"
        )


if __name__ == "__main__":
    main()
