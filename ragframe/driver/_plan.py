"""The driver's plan of partitions, the same for every engine.

A stage keyed by query, over Parquet files, gets **ranges of whole queries**: the
workers count each query's rows in their pieces (:func:`query_counts`), the driver adds
up those counts (the queries and their counts, never the rows) and cuts the sorted
queries into ranges (:func:`ragframe.driver._ranges.query_ranges`, the local
runner's), so partition ``k`` holds the queries of range ``k``: the parts, in order,
are the output in the single-machine order, and a file output is their concatenation.
An engine's own frame (its row count unknown to the driver) and fetch (whole
documents) get **hash buckets** (:func:`ragframe.partition.bucket`). A stage of
consecutive documents (chunk) gets **ranges of input positions** (:data:`POS`) of about
equal row counts, cut from the pieces' row counts (Parquet footers, else a count of
each piece's rows): the parts, in order, are the documents in input order."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver._parts import frame, with_part
from ragframe.driver._ranges import query_ranges
from ragframe.driver._sources import PART, POS, is_path, parquet_files, partition_count
from ragframe.io._unreadable import naming

PIECE = c.TMP + "piece"
"""An input piece's number (a row's :data:`POS` over ``2**32``)."""


@dataclass(frozen=True)
class Plan:
    """How many partitions, and the step giving each row its partition."""

    partitions: int
    highs: list[Any] | None
    """Each range's last query (or position) but the last range's (None: hash buckets)."""
    key: str
    on: str = c.QUERY_ID
    """The column the ranges are of: ``query_id``, or :data:`POS` (consecutive rows)."""

    @property
    def in_order(self) -> bool:
        """Whether the parts, in order, hold the output in the single-machine order."""
        return self.highs is not None or self.partitions == 1

    def step(self, table: pa.Table) -> pa.Table:
        """``table`` with :data:`PART`, its rows' partition."""
        if self.highs is None:
            return with_part(table, self.partitions, self.key)
        rows = frame(table)
        ids = pl.col(self.on)
        highs = pl.Series(self.highs, dtype=rows.schema[self.on])
        part = pl.lit(highs).search_sorted(ids, side="left").cast(pl.Int64)
        return rows.with_columns(part.fill_null(0).alias(PART)).to_arrow()


def query_counts(table: pa.Table) -> pa.Table:
    """Each query of a piece and its rows there (what a worker gives the plan)."""
    return frame(table).group_by(c.QUERY_ID).agg(pl.len()).to_arrow()


def piece_counts(table: pa.Table) -> pa.Table:
    """Each input piece of a table and its rows there (from :data:`POS`)."""
    piece = (pl.col(POS) // (1 << 32)).alias(PIECE)
    return frame(table).group_by(piece).agg(pl.len()).to_arrow()


def position_ranges(wanted: int, sizes: Sequence[int]) -> Plan:
    """``wanted`` ranges of consecutive input positions holding about equal numbers of
    rows, the pieces (by number) holding ``sizes`` rows each."""
    total = sum(sizes)
    step = max(1, math.ceil(total / max(wanted, 1)))
    starts = list(itertools.accumulate(sizes, initial=0))  # each piece's first row
    highs = []
    for last in range(step - 1, total - 1, step):  # each range's last row but the last's
        piece = bisect.bisect_right(starts, last) - 1
        highs.append((piece << 32) | (last - starts[piece]))
    return Plan(len(highs) + 1, highs, c.DOC_ID, POS)


def consecutive(
    sizes: Sequence[int] | None,
    wanted: int | None,
    workers: int,
    counts: Callable[[], pa.Table],
) -> Plan:
    """The plan of a stage of consecutive documents: ranges of positions, from the
    pieces' ``sizes`` where known, else from ``counts`` (:func:`piece_counts` of every
    piece, concatenated)."""
    if sizes is None:
        counted = frame(counts())
        found = dict(zip(counted[PIECE].to_list(), counted["len"].to_list(), strict=True))
        sizes = [found.get(i, 0) for i in range(max(found, default=-1) + 1)]
    total = sum(sizes)
    return position_ranges(wanted or partition_count(total, len(sizes), workers), sizes)


def plan(
    source: Any,
    key: str,
    rows: int | None,
    pieces: int,
    wanted: int | None,
    workers: int,
    counts: Callable[[], pa.Table],
) -> Plan:
    """The partitions of ``source`` (``rows``: its row count where known, else as many as
    its ``pieces``): ``wanted``, or from the row count, a multiple of the workers.
    ``counts``: the pieces' :func:`query_counts`, concatenated (asked for only where the
    plan is ranges of queries)."""
    n = wanted or partition_count(rows, pieces, workers)
    if key != c.QUERY_ID or not is_path(source) or rows is None or n == 1:
        return Plan(n, None, key)
    files = parquet_files(source)
    with naming(files):  # a damaged file: an error naming it, as a worker's read says
        counted = pl.DataFrame(counts()).lazy()
        ranges = query_ranges(counted, math.ceil(rows / n), counted=True)
    bounds = ranges.bounds or [(None, None)]
    return Plan(len(bounds), [hi for _, hi in bounds[:-1]], key)
