"""The Dask adapter's driver side: the client and its retries, values shared with every
worker, the candidates shuffled by query, the chunk store per partition, fetch's request
order, and the parts turned into a frame, a Polars frame or a written dataset."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.distributed import _dask_tasks as t
from ragframe.distributed import _gather, _output
from ragframe.distributed import _parts as parts
from ragframe.distributed._inputs import (
    POS,
    broadcast_store,
    local_table,
    partition_count,
    require,
)
from ragframe.errors import RagframeError


class Run:
    """The client (or none: Dask's local scheduler), its workers and the retries."""

    def __init__(self, client: Any, retries: int) -> None:
        require("distributed", "dask")
        from distributed import get_client

        if client is None:
            try:
                client = get_client()
            except ValueError:
                client = None
        self.client, self.retries = client, retries
        found = len(client.scheduler_info()["workers"]) if client is not None else 0
        self.workers = found or os.cpu_count() or 1

    def share(self, value: Any) -> Any:
        """``value`` as one task of the graph: sent to the scheduler once, copied to each
        worker that needs it once, and, unlike scattered data, made again from the graph
        if the workers holding it are lost."""
        if value is None:
            return None
        dask = dask_module()

        return dask.delayed(value, pure=True)

    def compute(self, objects: Sequence[Any]) -> list[Any]:
        """Compute the delayed ``objects`` (lost tasks run again, ``retries`` times)."""
        if self.client is None:
            dask = dask_module()

            return list(dask.compute(*objects))
        from distributed import KilledWorker

        with warnings.catch_warnings():  # a broadcast store is in the graph on purpose
            warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
            futures = self.client.compute(list(objects), retries=self.retries)
        try:
            return list(self.client.gather(futures))
        except KilledWorker as exc:  # lost workers past the scheduler's allowed failures
            raise RagframeError(
                f"the Dask run failed: a worker died running its task {exc.task!r}, "
                f"{exc.allowed_failures + 1} time(s) in all, past the scheduler's "
                f"distributed.scheduler.allowed-failures ({exc.allowed_failures}); nothing "
                "was written; expected workers that stay up (their logs say why one "
                "ended: killed, out of memory)"
            ) from None


def dask_module() -> Any:
    return require("dask", "dask")


def delayed(function: Any) -> Any:
    dask = dask_module()

    return dask.delayed(t.task(function), pure=True)


def store_arg(run: Run, store: Any, broadcast: bool | None) -> tuple[Any, pa.Table | None]:
    """The store to broadcast (shared, and an empty copy) or ``None`` (join by key)."""
    if store is None:
        return None, None
    if not broadcast_store(store, broadcast):
        return None, None
    table = local_table(store)
    return run.share(table), table.slice(0, 0)


def finish(
    run: Run, tables: list[Any], empty: pa.Table, output: Any, collect: bool, stage: str
) -> Any:
    """The parts as a Dask frame, as one Polars frame in the single-machine order
    (``collect``), or written to the Parquet dataset ``output`` (its path returned)."""
    dask = dask_module()

    if collect:
        got = run.compute(tables)
        return _gather.fetch_table(got) if stage == "fetch" else _gather.blocks_table(got)
    if output is not None:
        target = _output.check_folder(output)
        temp = _output.temporary_folder(target)
        try:
            write = dask.delayed(_output.write_part, pure=True)
            run.compute([write(table, os.fspath(temp), i) for i, table in enumerate(tables)])
        except BaseException:
            _output.discard(temp)
            raise
        _output.publish(temp, target)
        return os.fspath(target)
    dd = t.dd()
    as_pandas = dask.delayed(t.pandas, pure=True)
    return dd.from_delayed([as_pandas(table) for table in tables], meta=t.pandas(empty))


def candidates_by_query(run: Run, candidates: Any, partitions: int | None) -> tuple[Any, Any, int]:
    """The candidates keyed by query bucket, shuffled, and the partition count."""
    frame, rows = t.frame_of(candidates)
    n = partitions or partition_count(rows, frame.npartitions, run.workers)
    keyed = t.keyed(frame, n, c.QUERY_ID)
    return keyed, t.by_part(keyed, n), n


def chunk_parts(run: Run, chunks: Any, keyed: Any, n: int, broadcast: bool | None) -> Any:
    """Per partition, the chunk store argument: the shared store, its joined rows, or
    ``None``; and an empty store with its columns (to check the schema up front)."""
    shared, empty = store_arg(run, chunks, broadcast)
    if chunks is None or shared is not None:
        return [shared] * n, empty
    store, _ = t.frame_of(chunks, parts.keyed_store)
    joined = t.joined_store(keyed, store, n)
    return t.delayed_parts(joined), t.schema(joined).empty_table()


def with_request_order(run: Run, frame: Any) -> Any:
    """The requests with ``request_order``, computed on the driver from their
    ``query_id`` (and ``rank``) in input order."""
    names = [n for n in (c.QUERY_ID, c.RANK) if n in frame.columns]
    (keys,) = run.compute([frame[[*names, POS]]])
    table = t.arrow(keys)
    order = _gather.request_order(parts.frame(table).sort(POS))
    positions = parts.frame(table).select(pl.col(POS).sort())
    lookup = positions.with_columns(order).to_arrow()
    meta = t.pandas(parts.with_order(t.schema(frame).empty_table(), lookup.slice(0, 0)))
    work, shared = delayed(parts.with_order), run.share(lookup)
    pieces = [work(p, shared) for p in t.delayed_parts(frame)]
    return t.dd().from_delayed([delayed(t.pandas)(p) for p in pieces], meta=meta)
