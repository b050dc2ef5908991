"""The driver's :class:`~ragframe.driver.Engine` on Dask: the client (or Dask's local
scheduler) and its retries; rows are Dask frames of Arrow-backed pandas partitions,
moved into partitions by ``set_index`` on the partition column with the divisions
``0, 1, ..., n`` (Dask's documented guarantee: partition ``i`` holds every row of
number ``i``); values shared as graph tasks."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ragframe.distributed import _dask_tasks as t
from ragframe.distributed._inputs import require
from ragframe.driver._engine import Keyed, Rows, Step, Work, workers_died


def _apply(df: Any, step: Step, **shared: Any) -> Any:
    return t.pandas(step(t.arrow(df), **shared))


class DaskEngine:
    """Dask, on the current ``distributed`` client (or ``client``)."""

    name = "dask"

    def __init__(self, client: Any = None, retries: int = 2) -> None:
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
        self.dask = require("dask", "dask")

    def rows(self, source: Any, keyed: Keyed) -> Rows:
        frame, count = t.frame_of(source, keyed)
        return Rows(frame, t.schema(frame), count, frame.npartitions)

    def then(self, rows: Rows, step: Step, **shared: Any) -> Rows:
        schema = step(rows.empty(), **{k: _empty_like(v) for k, v in shared.items()}).schema
        meta = t.pandas(schema.empty_table())
        native = rows.native.map_partitions(_apply, step, **shared, meta=meta)
        return Rows(native, schema, rows.count, rows.partitions)

    def partition(self, rows: Rows, n: int) -> Rows:
        return Rows(t.by_part(rows.native, n), rows.schema, rows.count, n)

    def join(self, keys: Rows, store: Rows, on: list[str], n: int) -> Rows:
        joined = keys.native.merge(store.native, on=on, how="inner")
        return Rows(t.by_part(joined, n), t.schema(joined), None, n)

    def share(self, value: Any) -> Any:
        """``value`` as one task of the graph: sent to the scheduler once, copied to each
        worker that needs it once, and, unlike scattered data, made again from the graph
        if the workers holding it are lost."""
        if value is None or isinstance(value, str | bool | int):
            return value
        return self.dask.delayed(value, pure=True)

    def gather(self, rows: Rows) -> pa.Table:
        (got,) = self.compute([rows.native])
        return t.arrow(got)

    def compute(self, objects: Sequence[Any]) -> list[Any]:
        """Compute the delayed ``objects`` (lost tasks run again, ``retries`` times)."""
        if self.client is None:
            return list(self.dask.compute(*objects))
        from distributed import KilledWorker

        with warnings.catch_warnings():  # a broadcast store is in the graph on purpose
            warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
            futures = self.client.compute(list(objects), retries=self.retries)
        try:
            return list(self.client.gather(futures))
        except KilledWorker as exc:  # lost workers past the scheduler's allowed failures
            raise workers_died(
                "Dask",
                f"its task {exc.task!r}, {exc.allowed_failures + 1} time(s) in all, past the "
                "scheduler's distributed.scheduler.allowed-failures "
                f"({exc.allowed_failures})",
            ) from None

    def run(
        self,
        work: Work,
        own: Rows,
        side: Rows | None,
        shared: Mapping[str, Any],
        lazy: pa.Table | None,
    ) -> Any:
        task = self.dask.delayed(t.task(work), pure=True)
        pieces = t.delayed_parts(own.native)
        sides = t.delayed_parts(side.native) if side is not None else [None] * len(pieces)
        tables = [
            task(p, s, i, **shared) for i, (p, s) in enumerate(zip(pieces, sides, strict=True))
        ]
        if lazy is None:
            return self.compute(tables)
        as_pandas = self.dask.delayed(t.pandas, pure=True)
        return t.dd().from_delayed([as_pandas(x) for x in tables], meta=t.pandas(lazy))


def _is_delayed(value: Any) -> bool:
    return type(value).__module__.startswith("dask")


def _empty_like(value: Any) -> Any:
    """What a step sees of a shared value when its schema is worked out: the value (a
    table shared as a graph task is computed; it is small)."""
    return value.compute() if _is_delayed(value) else value
