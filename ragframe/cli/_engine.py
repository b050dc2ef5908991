"""``--engine local|dask|ray`` for ``postprocess``, ``fetch``, ``chunk``, ``evaluate``
and ``sweep``: the options, the cluster (connected to, or started on this machine for the
run), and each command run by :mod:`ragframe.distributed` with the same output and the
same summary. The workers write the parts (:mod:`ragframe.driver`); a directory output
is committed as they wrote it, a file is streamed from the parts by the driver one
partition (or one range of request order) at a time, never gathered whole."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ragframe import io
from ragframe import schema as c
from ragframe.cli._common import PARTITION_SIZES, first_line, integer
from ragframe.cli._options import config_from_args
from ragframe.distributed import _connect
from ragframe.driver._sources import (
    parquet_files,
    parquet_rows,
    parquet_schema,
    refuse_hive,
    require,
)
from ragframe.errors import ConfigError, RagframeError
from ragframe.io import _atomic, _filesystems

if TYPE_CHECKING:
    from ragframe.evaluate import SweepResult

# Each command's stage is imported in its run below, not here: a command loads only its
# own stage (``ragframe fetch`` never imports postprocess or its kernels).

ENGINES = ("local", "dask", "ray")


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """The engine options (one group)."""
    group = parser.add_argument_group("engine (past one machine; Parquet inputs)")
    group.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: this process (default); dask: a Dask cluster (pip install "
        "'ragframe[dask]'); ray: a Ray cluster (pip install 'ragframe[ray]')",
    )
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a running Dask scheduler, tcp://HOST:8786 (default: a local cluster, started "
        "for the run)",
    )
    group.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="a running Ray cluster, HOST:6379 or ray://HOST:10001 (default: a local Ray, "
        "started for the run)",
    )
    group.add_argument(
        "--partitions",
        type=integer,
        metavar="N",
        help="the engine's partitions (--engine dask or ray; default: from the rows)",
    )
    group.add_argument(  # its text, checked by _connect.timeout: an error quotes it as typed
        "--connect-timeout",
        metavar="SECONDS",
        help="how many seconds --scheduler or --ray-address has to answer before the run fails "
        f"(default: ${_connect.ENVIRONMENT}, else {_connect.CONNECT_TIMEOUT:g})",
    )


def on_engine(args: argparse.Namespace) -> bool:
    """Whether the command runs on Dask or Ray (and its engine options fit)."""
    if args.scheduler and args.engine != "dask":
        raise ConfigError("--scheduler is for --engine dask")
    if args.ray_address and args.engine != "ray":
        raise ConfigError("--ray-address is for --engine ray")
    if args.partitions is not None and args.partitions < 1:
        raise ConfigError(f"--partitions must be >= 1, got {args.partitions}")
    if args.connect_timeout is not None and not (args.scheduler or args.ray_address):
        raise ConfigError("--connect-timeout is for --scheduler or --ray-address")
    if args.scheduler or args.ray_address:
        _connect.timeout(args.connect_timeout)  # a bad value: an error before any work
    if args.partitions is not None and args.engine == "local":
        raise ConfigError(
            "--partitions is for --engine dask or ray (the local engine sizes its "
            "partitions by --rows-per-partition where it has them)"
        )
    for size in (s for s in PARTITION_SIZES if getattr(args, s, None) and args.engine != "local"):
        raise ConfigError(
            f"--{size.replace('_', '-')} is for the local engine (--engine {args.engine} "
            "sizes its partitions by --partitions)"
        )
    return bool(args.engine != "local")


@contextmanager
def _cluster(args: argparse.Namespace) -> Iterator[Any]:
    """The adapter module, its cluster connected or started (and stopped after)."""
    if args.engine == "dask":
        from ragframe.distributed import dask as dask_engine

        distributed = require("distributed", "dask")
        try:
            if args.scheduler:  # answering within the timeout, or one error line
                seconds = _connect.timeout(args.connect_timeout)
                _connect.reach(args.scheduler, 8786, seconds)
            client = (
                distributed.Client(args.scheduler, timeout=seconds)
                if args.scheduler
                else distributed.Client(
                    distributed.LocalCluster(
                        threads_per_worker=1,
                        dashboard_address=":0",
                        # a failed task's error is the command's one line; its log,
                        # with a traceback, is left out
                        silence_logs=logging.CRITICAL,
                        env={"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", "1")},
                    )
                )
            )
        except Exception as exc:  # any failure to start or connect: one line, no traceback
            raise _not_started("Dask", args.scheduler, exc, "tcp://HOST:8786") from None
        try:
            yield dask_engine
        finally:
            cluster = client.cluster
            client.close()
            if cluster is not None:
                cluster.close()
        return
    from ragframe.distributed import ray as ray_engine

    ray = require("ray", "ray")
    require("ray.data", "ray")  # configures its logger when imported: before the line below
    # Ray Data logs a worker's error with its traceback before raising it; the command
    # prints the error as one line (ragframe.cli), so that log is left out.
    logging.getLogger("ray.data").setLevel(logging.CRITICAL)
    started = not ray.is_initialized()  # called from Python with Ray running: use it
    client = str(args.ray_address).startswith("ray://")  # Ray Client's address, not GCS's
    try:
        if started and args.ray_address:  # answering within the timeout, or one error line
            seconds = _connect.timeout(args.connect_timeout)
            _connect.reach(args.ray_address, 10001 if client else 6379, seconds)
        if started:
            ray.init(  # Ray's notes on starting or connecting: left out, as its logs are
                address=args.ray_address,
                include_dashboard=False,
                log_to_driver=False,  # a local Ray's start-up warnings ("Token authentication
                # is enabled", its default) left out too; errors raise; the run's are shown
                logging_level=logging.WARNING if args.ray_address else logging.ERROR,
            )
            logging.getLogger("ray").setLevel(logging.WARNING)
    except Exception as exc:  # any failure to start or connect: one line, no traceback
        form = "ray://HOST:10001" if client else "HOST:6379"
        raise _not_started("Ray", args.ray_address, exc, form) from None
    try:
        yield ray_engine
    finally:
        if started:
            ray.shutdown()


def _not_started(
    engine: str, address: str | None, exc: BaseException, expected: str
) -> RagframeError:
    """The one-line error of a cluster that could not be reached or started."""
    detail = first_line(exc)
    if address:
        return RagframeError(
            f"cannot reach the {engine} cluster at {address}: {detail}; expected the address "
            f"of a running cluster ({expected})"
        )
    return RagframeError(f"cannot start a local {engine} cluster: {detail}")


def _parquet(path: str | None, what: str) -> str | None:
    """An engine input: a Parquet file, folder or glob (other formats: run locally), not
    a hive dataset (its columns live in folder names, which the engines do not read)."""
    if path is None:
        return None
    path = _filesystems.local(path)
    remote = _filesystems.is_remote(path)
    if not (
        path.endswith((".parquet", ".pq", *(("/",) if remote else ())))
        or "*" in path
        or (os.path.isdir(path) if not remote else _remote_folder(path))
    ):
        raise ConfigError(f"{what} {path}: an engine reads Parquet (a file, folder or glob)")
    refuse_hive(path, what)
    return path


def _remote_folder(uri: str) -> bool:
    """Whether the remote ``uri`` (no final ``/``) holds files: a folder."""
    found = _filesystems.remote_files(uri)
    return bool(found) and found != [uri]


_INPUTS = {
    "postprocess": ("results", "chunks"),
    "fetch": ("requests", "documents", "sizes"),
    "evaluate": ("input", "chunks"),
    "sweep": ("results", "chunks"),
    "chunk": ("documents",),
}


def _check_inputs(args: argparse.Namespace, command: str) -> None:
    """Every input is Parquet, checked before a cluster is started."""
    for name in _INPUTS[command]:
        _parquet(getattr(args, name), name.upper() if name != "chunks" else "--chunks")


def run_on_engine(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """Run ``command`` on ``args.engine``; the command's summary."""
    _check_inputs(args, command)
    io.check_output(args.output)
    with _cluster(args) as engine:
        summary = _RUNS[command](engine, args)
    summary["engine"] = args.engine
    return summary


@contextmanager
def _parts(destination: str) -> Iterator[Path | str]:
    """A temporary folder beside ``destination`` for the workers' parts (a remote
    ``destination``: a temporary prefix beside it, the workers uploading their parts
    there), removed at the end (on an error and on a signal too). Missing folders above
    ``destination`` are made, as the local engine makes them."""
    if _filesystems.is_remote(destination):
        from ragframe.driver import _commit

        with _commit.parts_folder(destination.rstrip("/")) as remote:
            yield remote
        return
    beside = Path(tempfile.gettempdir()) / "ragframe-run" if destination == io.STDIO else None
    if beside is None:
        Path(os.path.realpath(destination)).parent.mkdir(parents=True, exist_ok=True)
    folder = _atomic.temp_name(beside or Path(os.path.realpath(destination)))
    _atomic.WRITING.add(folder)
    try:
        yield folder
    finally:
        _atomic.remove(folder)


@contextmanager
def _written(
    args: argparse.Namespace, run: Callable[[Path | str], Any], *, ordered: bool = False
) -> Iterator[tuple[pl.LazyFrame, int]]:
    """The parts the workers write (``run(folder)``: the written folder), committed as
    written when ``--output`` is a directory, else made into it by
    :func:`ragframe.driver._commit.assemble` (``ordered``: fetch's parts, always
    assembled, a range of request order at a time); inside, a scan of the parts and
    how many there are (one a partition: the summary's ``partitions``)."""
    from ragframe.driver import _commit

    with _parts(args.output) as folder:
        if io.is_directory(args.output) and not ordered:
            written = run(args.output)
        else:
            written = run(folder)
            _commit.assemble(written, args.output, ordered=ordered)
        files = _commit.part_files(written)
        yield _commit.scan_parts(files), len(files)


def _postprocess(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Workers write the parts, in query order; the summary is counted from them."""
    from ragframe.postprocess import PostprocessConfig

    config = config_from_args(PostprocessConfig, args)
    results, chunks = _parquet(args.results, "RESULTS"), _parquet(args.chunks, "--chunks")
    run = {"config": config, "chunks": chunks, "partitions": args.partitions}
    with _written(args, lambda out: engine.postprocess(results, output=out, **run)) as (scan, n):
        found = (
            scan.select(
                pl.col(c.QUERY_ID).n_unique(),
                pl.len(),
                pl.col(c.CHAR_COUNT).sum(),
                pl.col(c.TRUNCATED).sum(),
            )
            .collect(engine="streaming")
            .row(0)
        )
    return {
        "queries with blocks": found[0],
        "blocks out": found[1],
        "characters out": int(found[2] or 0),
        "truncated blocks": int(found[3] or 0),
        "partitions": n,
        "output": str(args.output),
    }


def _fetch(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Workers write the parts (each in request order); the driver merges them into the
    output a range of request order at a time."""
    from ragframe.fetch import FetchConfig

    config = config_from_args(FetchConfig, args)
    requests, documents = _parquet(args.requests, "REQUESTS"), _parquet(args.documents, "DOCUMENTS")
    run = {"sizes": args.sizes, "partitions": args.partitions}
    with _written(
        args, lambda out: engine.fetch(requests, documents, config, output=out, **run), ordered=True
    ) as (scan, n):
        counts = scan.group_by(c.STRATEGY).len().collect(engine="streaming")
    per = dict(zip(counts[c.STRATEGY].to_list(), counts["len"].to_list(), strict=True))
    return {"rows": int(sum(per.values())), **per, "partitions": n, "output": args.output}


def _chunk(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Workers write the parts (consecutive documents, in input order); the summary
    counts as the local run's does (documents from the footers)."""
    from ragframe.window import WindowConfig

    config = config_from_args(WindowConfig, args)
    documents = _parquet(args.documents, "DOCUMENTS")
    assert documents is not None
    run = {"partitions": args.partitions}
    with _written(args, lambda out: engine.chunk(documents, config, output=out, **run)) as ran:
        found = ran[0].select(pl.len(), pl.col(c.TEXT).str.len_chars().sum())
        chunks, characters = found.collect(engine="streaming").row(0)
    return {
        "documents": sum(parquet_rows(parquet_files(documents))),
        "chunks": chunks,
        "characters": int(characters or 0),
        "partitions": ran[1],
        "output": args.output,
    }


def evaluate_on_engine(args: argparse.Namespace, qrels: Any) -> Any:
    """``ragframe evaluate`` on ``args.engine``: the per-query table."""
    if args.candidates:
        raise ConfigError(
            "--candidates with --engine: evaluate the blocks and the ranking in two runs"
        )
    _check_inputs(args, "evaluate")
    source = _parquet(args.input, "INPUT")
    assert source is not None
    schema = parquet_schema(parquet_files(source)[0])
    is_blocks = c.BLOCK_RANK in schema or c.CONTENT in schema
    options: dict[str, Any] = {
        "max_blocks": args.max_blocks,
        "max_characters": args.max_characters,
        "max_tokens": args.max_tokens,
        "chunks": args.chunks,
    }
    if not is_blocks:
        options = {"k": args.k or [10], "ties": args.ties or "input"}
        unused = [
            o for o in ("max_blocks", "max_characters", "max_tokens", "chunks") if getattr(args, o)
        ]
        if unused:
            option = "--" + unused[0].replace("_", "-")
            raise ConfigError(f"{option} is for the context metrics of blocks; INPUT is a ranking")
    elif args.k is not None or args.ties is not None:
        raise ConfigError("--k and --ties are for a ranking's list metrics; INPUT is blocks")
    with _cluster(args) as engine:
        return engine.evaluate(
            qrels,
            **{"blocks" if is_blocks else "candidates": source},
            **options,
            partitions=args.partitions,
        )


def sweep_on_engine(args: argparse.Namespace, grid: Any, qrels: Any) -> SweepResult:
    """``ragframe sweep`` on ``args.engine``: the :class:`SweepResult`."""
    _check_inputs(args, "sweep")
    with _cluster(args) as engine:
        result: SweepResult = engine.sweep(
            _parquet(args.results, "RESULTS"),
            grid,
            qrels,
            chunks=args.chunks,
            baseline=args.baseline,
            metric=args.metric,
            cost=args.cost,
            partitions=args.partitions,
        )
    return result


_RUNS: dict[str, Callable[[Any, argparse.Namespace], dict[str, Any]]] = {
    "postprocess": _postprocess,
    "fetch": _fetch,
    "chunk": _chunk,
}
