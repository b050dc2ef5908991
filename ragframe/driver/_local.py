"""The driver's :class:`~ragframe.driver.Engine` on one machine: partitions read one
after the other, the next read and the last written by one background thread
(:mod:`._behind`) while the current one is processed, so memory stays flat (about one
partition more) however large the input.

What differs from Dask and Ray: the engine plans its own partitions
(:meth:`LocalEngine.planned`): ranges of whole queries (:mod:`._ranges`: a counting
pass, then filtered scans or one spill) or consecutive documents (:mod:`._batches`),
which it reads in turn, in input order (no row positions needed); a store not held
whole is semi-joined for each partition's keys as the partition is processed; the
outputs go, in partition order, to the run's :class:`Output` (a file, a folder of
parts or standard output, written atomically by :mod:`ragframe.io`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver import _batches, _ranges
from ragframe.driver._behind import Behind
from ragframe.driver._engine import Empty, Keyed, Rows, Shared, Step, Work
from ragframe.driver._inputs import Input, row_count
from ragframe.driver._parts import frame
from ragframe.driver._plan import Plan
from ragframe.driver._sources import CHUNK, ENTITY, PART, POS, positioned
from ragframe.errors import RagframeError


class Output(Protocol):
    """Where a local run's outputs go, in partition order, and what it reports."""

    def opened(
        self, partitions: int, rows: int | None
    ) -> contextlib.AbstractContextManager[Callable[[Any], object]]:
        """The output (and progress bar) open for the run: its writer of one piece."""
        ...

    def done(self, rows: pl.DataFrame, store: Any, out: pa.Table) -> None:
        """One partition done (its rows, the store rows it saw, its output)."""
        ...

    def failed(self, rows: pl.DataFrame, store: Any, error: RagframeError) -> RagframeError:
        """The error to raise for a partition that failed with ``error``."""
        ...


@dataclass(frozen=True)
class Pieces:
    """A run's own partitions, made in turn (read ahead in the background)."""

    made: Iterator[pl.DataFrame]


@dataclass(frozen=True)
class Pending:
    """A store to be read in parts: each partition's share of it (:meth:`partition`)."""

    store: Input


@dataclass(frozen=True)
class Derived:
    """Rows made from each partition's own rows: a step's output, the store rows it
    needs (``of(number, rows)``)."""

    of: Callable[[int, pl.DataFrame], Any]


class LocalEngine:
    """One machine: threads and a background writer (use it as a context manager: the
    spill of an input not grouped by query is removed at its end)."""

    name = "local"
    workers = 1

    def __init__(self, output: Output, per: int, beside: Path) -> None:
        self.output, self.per, self.beside = output, per, beside
        self.spilled = False
        self.total: int | None = None
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    def rows(self, source: Any, keyed: Keyed) -> Rows:
        """``source`` (an :class:`~ragframe.driver._inputs.Input`) as it is: partitions
        are read in input order, so no positions are added; a store (``keyed`` not
        :func:`~ragframe.driver._sources.positioned`) is read in parts later."""
        schema = pl.DataFrame(schema=source.frame.collect_schema()).to_arrow().schema
        native = source if keyed is positioned else Pending(source)
        return Rows(native, schema, row_count(source))

    def whole(self, store: Input) -> pl.DataFrame:
        """A store held whole: the frame given, or read once."""
        return store.eager if store.eager is not None else store.frame.collect()

    def planned(
        self, rows: Rows, key: str, consecutive: bool, wanted: int | None
    ) -> tuple[Plan, Rows]:
        """The partitions of ``rows``, read one after the other: ranges of whole queries
        (``key`` ``query_id``), consecutive documents, or (else) ``wanted`` hash buckets
        of ``key`` of an input in memory."""
        given: Input = rows.native
        if consecutive:
            n = _batches.batch_count(given, self.per)
            self.total = rows.count
            made = _batches.batches(given, self.per)
            return Plan(n, None, key), Rows(Pieces(made), rows.schema, rows.count, n)
        if key != c.QUERY_ID:
            n, self.total = wanted or 1, rows.count
            plan = Plan(n, None, key)
            assert given.eager is not None  # hash buckets of an input in memory (requests)
            keyed = frame(plan.step(given.eager)) if n > 1 else given.eager
            part = pl.col(PART)
            made = (keyed.filter(part == k).drop(PART) if n > 1 else keyed for k in range(n))
            return plan, Rows(Pieces(made), rows.schema, rows.count, n)
        ranges = _ranges.query_ranges(given.frame, self.per, rows.count)
        self.spilled = not _ranges.filtered_scans_fit(given, ranges)
        if self.spilled:
            read = self.stack.enter_context(_ranges.spilled(given, ranges, self.beside))
        else:
            read = _ranges.filtered(given, ranges)
        n, self.total = len(ranges.bounds), ranges.total
        pieces = Pieces(read(k) for k in range(n))
        highs = [hi for _, hi in ranges.bounds[:-1]]
        return Plan(n, highs, key), Rows(pieces, rows.schema, rows.count, n)

    def then(self, rows: Rows, step: Step, **shared: Any) -> Rows:
        """``step`` on each partition's rows (given its :data:`PART`) as it is read; on
        an input not yet partitioned, on the whole of it, read (numbered by :data:`POS`
        first); a store read in parts is read as :meth:`partition` and :meth:`join` say."""
        before = rows.native
        if isinstance(before, Pending):
            return rows
        if isinstance(before, Input):
            given = before.eager if before.eager is not None else before.frame.collect()
            whole = frame(step(_positioned(given), **shared))
            return Rows(Input(whole.lazy(), eager=whole), whole.to_arrow().schema, whole.height)
        empty = step(_numbered(0, frame(rows.empty())), **shared)

        def of(k: int, own: pl.DataFrame) -> Any:
            given = before.of(k, own) if isinstance(before, Derived) else _numbered(k, own)
            return step(given, **shared)

        return Rows(Derived(of), empty.schema, None, rows.partitions)

    def partition(self, rows: Rows, n: int) -> Rows:
        """A store moved into the partitions of its documents: each partition reads the
        documents its own rows name (a streaming semi-join), no more."""
        pending: Pending = rows.native
        return Rows(Derived(lambda k, own: named(pending.store, own)), rows.schema)

    def join(self, keys: Rows, store: Rows, on: list[str], n: int) -> Rows:
        """The store rows each partition's keys find: a streaming semi-join of the store
        (only those rows are held), in store order."""
        made: Derived = keys.native
        given: Input = store.native.store
        return Rows(Derived(lambda k, own: needed(given, frame(made.of(k, own)))), store.schema)

    def share(self, value: Any) -> Any:
        return value

    def gather(self, rows: Rows) -> pa.Table:
        return frame(rows.native.frame.collect()).to_arrow()

    def run(self, work: Work, own: Rows, side: Rows | None, shared: Shared, lazy: Empty) -> int:
        """``work`` on every partition in turn, each output handed to the output's
        writer on the background thread; how many partitions there were."""
        done = 0
        with self.output.opened(own.partitions, self.total) as write, Behind() as behind:
            for k, rows in enumerate(behind.read_ahead(own.native.made)):
                store = side.native.of(k, rows) if side is not None else shared.get("store")
                try:
                    out = work(rows, store if side is not None else None, k, **shared)
                except RagframeError as exc:
                    raised = self.output.failed(rows, store, exc)
                    if raised is exc:
                        raise
                    raise raised from exc
                behind.write(write, out)
                self.output.done(rows, store, out)
                done += 1
                del rows, store
        return done


def _positioned(rows: pl.DataFrame) -> pl.DataFrame:
    if POS in rows.columns:
        return rows
    return rows.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias(POS))


def _numbered(k: int, rows: pl.DataFrame) -> pl.DataFrame:
    return rows.with_columns(pl.lit(k, pl.Int64).alias(PART))


def needed(store: Input, keys: pl.DataFrame) -> pl.DataFrame:
    """The rows of the chunk ``store`` whose (entity, chunk index) is in ``keys`` (as
    :func:`ragframe.driver._parts.store_keys` gives them), in store order."""
    names = store.frame.collect_schema().names()
    own = c.ENTITY_ID if c.ENTITY_ID in names else c.DOC_ID
    dtype = keys.schema[ENTITY]
    on = [pl.col(own).cast(dtype, strict=False), pl.col(c.CHUNK_INDEX).cast(pl.Int64, strict=False)]
    wanted = keys.lazy().select(ENTITY, CHUNK)
    plan = store.frame.join(
        wanted, left_on=on, right_on=[ENTITY, CHUNK], how="semi", maintain_order="left"
    )
    return plan.collect(engine="streaming")


def named(documents: Input, requests: pl.DataFrame) -> pl.DataFrame:
    """The ``documents`` the ``requests`` name (their ``doc_id``, or ``entity_id``), in
    document order: a streaming semi-join, so only those documents are held."""
    from ragframe.fetch._strategy import request_key  # fetch's alone: loaded by fetch

    key = request_key(requests.schema)
    dtype = pl.String if requests.schema[key] == pl.String else pl.Int64
    wanted = requests.lazy().select(pl.col(key).cast(dtype, strict=False).alias(_ID)).unique()
    on = pl.col(c.DOC_ID).cast(dtype, strict=False)
    plan = documents.frame.join(wanted, left_on=on, right_on=_ID, how="semi", maintain_order="left")
    return plan.collect(engine="streaming")


_ID = c.TMP + "doc"
