"""The driver's :class:`~ragframe.driver.Engine` on Ray Data: rows are datasets of
Arrow batches; moving them into partitions is ``groupby(partition).map_groups(...)``
(Ray's documented guarantee: one call sees every row of a group), the store rows a
partition needs riding in the same group (the envelope of :mod:`._ray_tasks`); values
shared by ``ray.put`` (one copy per node, read in place). Runs on the connected Ray
cluster (``ray.init(address=...)`` first), else starts a local one."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.distributed import _ray_tasks as rt
from ragframe.driver._engine import Empty, Keyed, Rows, Shared, Step, Work, workers_died
from ragframe.driver._sources import PART, is_path, local_table, parquet_input, require
from ragframe.errors import RagframeError


def ray_module() -> Any:
    """``ray`` (started locally unless connected), or an error naming the extra."""
    ray = require("ray", "ray")
    require("ray.data", "ray")
    if not ray.is_initialized():
        ray.init(log_to_driver=False, include_dashboard=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    context.raise_original_map_exception = True  # a worker's RagframeError, not Ray's wrapper
    logger = logging.getLogger("ray.data")  # the CLI's is quieter: its errors are one line
    logger.setLevel(max(logger.level, logging.WARNING))
    return ray


def _apply(batch: pa.Table, step: Step, **shared: Any) -> pa.Table:
    return step(batch, **{k: rt.resolve(v) for k, v in shared.items()})


def _run_group(
    batch: pa.Table, work: Work, joined: bool, shared: Mapping[str, Any], numbered: bool
) -> pa.Table:
    number = int(batch[PART][0].as_py()) if batch.num_rows else 0
    own, side = rt.split(batch) if joined else (batch, None)
    out = work(own, side, number, **{k: rt.resolve(v) for k, v in shared.items()})
    return rt.numbered(out, number) if numbered else out


class RayEngine:
    """Ray, with ``retries`` for a task lost with its worker."""

    name = "ray"

    def __init__(self, retries: int = 3) -> None:
        self.ray, self.retries = ray_module(), retries
        resources = self.ray.cluster_resources()
        self.workers = int(resources.get("CPU", os.cpu_count() or 1))

    def rows(self, source: Any, keyed: Keyed) -> Rows:
        ray = self.ray
        if is_path(source):
            given = parquet_input(source, keyed)
            items = [{"path": f, "number": i} for i, f in enumerate(given.files)]
            ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                rt.read_batch, batch_size=1, batch_format="pyarrow", fn_kwargs={"keyed": keyed}
            )
            return Rows(ds, given.schema, given.count, sizes=tuple(given.rows))
        if isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
            table = keyed(local_table(source), 0)
            count = table.num_rows
            return Rows(ray.data.from_arrow(table), table.schema, count, sizes=(count,))
        if isinstance(source, ray.data.Dataset):
            blocks = source.to_arrow_refs()  # in the dataset's order, as Ray gives it
            place = ray.remote(keyed)
            placed = [place.remote(block, i) for i, block in enumerate(blocks)]
            found = source.schema()
            base = pa.schema(getattr(found, "base_schema", found))
            return Rows(ray.data.from_arrow_refs(placed), keyed(base.empty_table(), 0).schema)
        raise TypeError(f"expected a Ray dataset or Parquet paths, got {type(source).__name__}")

    def then(self, rows: Rows, step: Step, **shared: Any) -> Rows:
        schema = step(rows.empty(), **{k: rt.resolve(v) for k, v in shared.items()}).schema
        ds = rows.native.map_batches(
            _apply, batch_format="pyarrow", fn_kwargs={"step": step, **shared}
        )
        return Rows(ds, schema, rows.count, rows.partitions)

    def partition(self, rows: Rows, n: int) -> Rows:
        """Marked only: the grouping happens in :meth:`run`, with the side rows."""
        return Rows(rows.native, rows.schema, rows.count, n)

    def join(self, keys: Rows, store: Rows, on: list[str], n: int) -> Rows:
        ds = keys.native.join(store.native, "inner", num_partitions=n, on=tuple(on))
        schema = pa.schema([*keys.schema, *(f for f in store.schema if f.name not in on)])
        return Rows(ds, schema, None, n)

    def share(self, value: Any) -> Any:
        if value is None or isinstance(value, str | bool | int):
            return value
        return self.ray.put(value)

    def gather(self, rows: Rows) -> pa.Table:
        got = self._tables(rows.native)
        return pa.concat_tables(got) if got else rows.empty()

    def _tables(self, ds: Any) -> list[pa.Table]:
        """The dataset's blocks, computed; a :class:`RagframeError` a worker raised (a
        damaged input file, bad values) is raised as it is, without Ray's wrapper; workers
        that died running a task past its retries, as one."""
        died = (self.ray.exceptions.WorkerCrashedError, self.ray.exceptions.OutOfMemoryError)
        try:
            return [t for t in self.ray.get(ds.to_arrow_refs()) if t.num_rows or t.num_columns]
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            if isinstance(cause, RagframeError):  # Ray appends lines of its own: one line
                raise type(cause)(str(cause).split("\n", 1)[0]) from None
            raise
        except died as exc:
            reason = str(exc).split("\n", 1)[0].split(". ", 1)[0]
            raise workers_died(
                "Ray", f"one of its tasks, past the task's retries ({reason})"
            ) from None

    def run(self, work: Work, own: Rows, side: Rows | None, shared: Shared, lazy: Empty) -> Any:
        if own.count == 0:  # no rows to group (Ray's shuffle finds no column to sort by)
            return self.ray.data.from_arrow(lazy) if lazy is not None else []
        ds = own.native
        if side is not None:
            schema = rt.envelope_schema(own.schema, side.schema)
            wrap = [
                d.native.map_batches(
                    rt.envelope, batch_format="pyarrow", fn_kwargs={"side": i, "schema": schema}
                )
                for i, d in enumerate((own, side))
            ]
            ds = wrap[0].union(wrap[1])
        out = ds.groupby(PART, num_partitions=own.partitions).map_groups(
            _run_group,
            batch_format="pyarrow",
            fn_kwargs={
                "work": work,
                "joined": side is not None,
                "shared": dict(shared),
                "numbered": lazy is None,
            },
            max_retries=self.retries,
        )
        return out if lazy is not None else rt.in_order(self._tables(out))
