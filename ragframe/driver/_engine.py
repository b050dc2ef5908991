"""What each engine implements: the few operations that differ between the local engine,
Dask and Ray. Everything else (planning, stores, checks, commit) is the driver's
(:mod:`._run`).

Two operations are the local engine's alone (:mod:`._local`), and the driver uses them
where an engine has them: ``planned(rows, key, consecutive)``, the engine planning and
reading its own partitions in turn (ranges of whole queries, or consecutive documents)
instead of moving rows into them, and ``whole(store)``, a store held whole as the
engine holds it (a Polars frame, not copied to Arrow)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import pyarrow as pa

from ragframe.errors import RagframeError

Step = Callable[..., pa.Table]
"""A piece of rows (Arrow) and shared values -> a piece of rows (a row-wise step)."""
Keyed = Callable[[pa.Table, int], pa.Table]
"""Piece ``number`` of an input -> the piece with its rows' positions."""
Work = Callable[..., pa.Table]
"""``work(own, side, number, **shared)``: one partition's output (or its one-row count
when the worker wrote it)."""
Shared: TypeAlias = Mapping[str, Any]
"""Values every partition gets (by name), from :meth:`Engine.share`."""
Empty: TypeAlias = pa.Table | None
"""The empty output, when the outputs are wanted as the engine's own frame."""


@dataclass(frozen=True)
class Rows:
    """An input on an engine: its native rows, the Arrow schema of their pieces, the row
    count where known without reading, the partitions they were moved into, and the
    pieces' row counts where known."""

    native: Any
    schema: pa.Schema
    count: int | None = None
    partitions: int = 1
    sizes: tuple[int, ...] | None = None
    """Each input piece's row count, by piece number, where known without reading (a
    stage of consecutive documents cuts ranges of positions from them)."""

    def empty(self) -> pa.Table:
        return self.schema.empty_table()


class Engine(Protocol):
    """One engine: local (:mod:`ragframe.driver._local`), Dask
    (:mod:`ragframe.distributed._dask_engine`) or Ray (:mod:`ragframe.distributed._ray_engine`)."""

    name: str
    workers: int
    """How many workers run partitions (partition counts are a multiple of it)."""

    def rows(self, source: Any, keyed: Keyed) -> Rows:
        """``source`` (Parquet files, one piece each, or the engine's own frame) as rows,
        each piece through ``keyed``."""
        ...

    def then(self, rows: Rows, step: Step, **shared: Any) -> Rows:
        """Every piece through ``step`` (``shared``: values from :meth:`share`)."""
        ...

    def partition(self, rows: Rows, n: int) -> Rows:
        """Move the rows into ``n`` partitions by their partition column: partition
        ``i`` holds every row of number ``i``."""
        ...

    def join(self, keys: Rows, store: Rows, on: list[str], n: int) -> Rows:
        """The ``store`` rows matching ``keys`` (which carry the partition column) on
        ``on``, moved into the ``n`` partitions of their keys."""
        ...

    def share(self, value: Any) -> Any:
        """``value`` sent once to every worker (None stays None)."""
        ...

    def gather(self, rows: Rows) -> pa.Table:
        """Every row on the driver (small inputs only: keys)."""
        ...

    def run(self, work: Work, own: Rows, side: Rows | None, shared: Shared, lazy: Empty) -> Any:
        """``work`` on every partition (lost tasks run again): the list of outputs, or,
        given ``lazy`` (the empty output), the engine's own frame of them."""
        ...


def workers_died(engine: str, running: str) -> RagframeError:
    """The error of a run whose workers died running ``running`` past the engine's
    retries (the same words on every engine)."""
    return RagframeError(
        f"the {engine} run failed: a worker died running {running}; nothing was written; "
        "expected workers that stay up (their logs say why one ended: killed, out of memory)"
    )
