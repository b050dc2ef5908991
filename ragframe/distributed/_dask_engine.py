"""The driver's :class:`~ragframe.driver.Engine` on Dask: the client (or Dask's local
scheduler) and its retries; rows are lists of delayed Arrow pieces, moved into
partitions by cutting each piece by its partition column and concatenating the cuts
(:mod:`._dask_pieces`: partition ``i`` holds every row of number ``i``); values shared
as graph tasks."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ragframe.distributed import _dask_pieces as dp
from ragframe.distributed import _dask_tasks as t
from ragframe.driver._engine import Empty, Keyed, Rows, Shared, Step, Work, workers_died
from ragframe.driver._sources import require


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
        found = client.scheduler_info()["workers"] if client is not None else {}
        self.workers = len(found) or os.cpu_count() or 1
        self.memory = dp.memory_of(found) if client is not None else None
        self.dask = require("dask", "dask")

    def rows(self, source: Any, keyed: Keyed) -> Rows:
        pieces, schema, count = dp.pieces_of(source, keyed)
        return Rows(pieces, schema, count, len(pieces), pieces.sizes)

    def then(self, rows: Rows, step: Step, **shared: Any) -> Rows:
        schema = step(rows.empty(), **{k: _empty_like(v) for k, v in shared.items()}).schema
        return Rows(dp.mapped(rows.native, step, shared), schema, rows.count, rows.partitions)

    def partition(self, rows: Rows, n: int) -> Rows:
        return Rows(dp.moved(rows.native, rows.schema, n, self.memory), rows.schema, rows.count, n)

    def join(self, keys: Rows, store: Rows, on: list[str], n: int) -> Rows:
        schemas = (keys.schema, store.schema)
        native = dp.join(keys.native, store.native, schemas, on, n, self.memory)
        return Rows(native, dp.joined_schema(keys.schema, store.schema, on), None, n)

    def share(self, value: Any) -> Any:
        """``value`` as one task of the graph: sent to the scheduler once, copied to each
        worker that needs it once, and, unlike scattered data, made again from the graph
        if the workers holding it are lost."""
        if value is None or isinstance(value, str | bool | int):
            return value
        return self.dask.delayed(value, pure=True)

    def gather(self, rows: Rows) -> pa.Table:
        got = self.compute(rows.native)
        return dp.concat(*got) if got else rows.empty()

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

    def run(self, work: Work, own: Rows, side: Rows | None, shared: Shared, lazy: Empty) -> Any:
        task = self.dask.delayed(t.task(work), pure=True)
        pieces = own.native
        sides = side.native if side is not None else [None] * len(pieces)
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
