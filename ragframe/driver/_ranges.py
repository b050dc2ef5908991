"""Partitions of whole queries: ranges of query ids, and how each is read.

One streaming pass counts each query's rows (``group_by(query_id).len()``: it reads
only the ``query_id`` column); the sorted queries are cut into ranges of about
``rows_per_partition`` rows, at query boundaries, so a partition holds every row of its
queries however the input is ordered, and the partitions, in order, hold the queries in
output order (so their outputs are written one after the other, sorted as one big call
sorts them). Rows with a null query id go to the first partition (where postprocess
reports them). An input whose row count is known without reading it (Parquet metadata,
a frame in memory) and fits one partition is one partition, not counted.

A partition is then read one of two ways:

* a **filtered scan** (``query_id`` between its bounds): Parquet row groups whose
  statistics lie outside are skipped, so an input grouped by query (retrieval output
  nearly always is) is read about once in all. Chosen for an in-memory frame, and for
  Parquet when the row-group statistics say the scans read at most twice the rows;
* a **spill**: one streaming pass writes the input into one Parquet folder per
  partition (beside the output; LZ4, written once and read once), read back one at a
  time, then removed. For anything else: an unsorted Parquet input, CSV, JSON lines,
  Arrow IPC, a lazy frame.

What it costs (``python benchmarks/memory_postprocess.py --passes 10M``, 10M rows in
5 partitions, medians of 3 interleaved rounds, beside one partition's postprocess at
3.7 s): input grouped by query, the counting pass 0.44 s and all filtered scans 0.72 s
(about 6% of the run); rows shuffled, counting 1.3 s, the spill 4.5 s, reading it back
1.0 s (about 37%).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragframe import schema as c
from ragframe.driver._inputs import Bound, Input, group_ranges, rows_read
from ragframe.errors import RagframeError
from ragframe.io import _atomic, _targets

PART = c.TMP + "partition"
"""The spilled rows' partition, the key of the spill's folders."""
FILTERED_READS = 2.0
"""Filtered scans are chosen while they read at most this many times the input's rows."""

Reader = Callable[[int], pl.DataFrame]
"""Partition number -> its rows, in input order."""


@dataclass(frozen=True)
class Ranges:
    """The partitions: inclusive query-id bounds, rows and queries of each."""

    bounds: list[tuple[Bound, Bound]]
    rows: list[int]
    queries: list[int]
    """(0 where not counted: one partition of every row, see :func:`query_ranges`.)"""
    nulls: bool
    """Whether some rows have a null query id (they go to the first partition)."""

    @property
    def total(self) -> int:
        return sum(self.rows)


def query_ranges(
    frame: pl.LazyFrame,
    rows_per_partition: int,
    known_rows: int | None = None,
    *,
    counted: bool = False,
) -> Ranges:
    """Cut the queries of ``frame``, sorted, into ranges of about ``rows_per_partition``
    rows (a query is never cut). ``known_rows``, the frame's row count when known without
    reading it (Parquet metadata, a frame in memory): at most ``rows_per_partition``
    make one partition of every row, with no counting pass (its query count then 0:
    not counted). ``counted``: ``frame`` holds counts already (``query_id`` and ``len``,
    a query possibly on several rows: their counts are added up)."""
    if known_rows is not None and known_rows <= rows_per_partition:
        one = [(None, None)] if known_rows else []
        return Ranges(one, [known_rows] * len(one), [0] * len(one), False)
    key = pl.col(c.QUERY_ID)
    rows_of = pl.col("len").sum() if counted else pl.len()
    plan = frame.group_by(key).agg(rows_of.alias("len")).sort(key, nulls_last=False)
    counts = plan.collect(engine="streaming")
    nulls = counts.height > 0 and counts[c.QUERY_ID][0] is None
    null_rows = int(counts["len"][0]) if nulls else 0
    counts = counts.slice(1) if nulls else counts
    if counts.height == 0:  # no rows, or only rows without a query id
        one = [(None, None)] if nulls else []
        return Ranges(one, [null_rows] * len(one), [0] * len(one), nulls)
    total = int(counts["len"].sum())
    parts = max(1, -(-total // rows_per_partition))
    size = max(total / parts, 1)
    last = counts["len"].cum_sum() - 1  # the position of each query's last row
    numbered = counts.with_columns((last / size).floor().cast(pl.Int64).alias(PART))
    by = numbered.group_by(PART, maintain_order=True).agg(
        key.first().alias("lo"), key.last().alias("hi"), pl.col("len").sum(), pl.len().alias("n")
    )
    rows = by["len"].to_list()
    rows[0] += null_rows
    return Ranges(
        bounds=list(zip(by["lo"].to_list(), by["hi"].to_list(), strict=True)),
        rows=rows,
        queries=by["n"].to_list(),
        nulls=nulls,
    )


def filtered_scans_fit(given: Input, ranges: Ranges) -> bool:
    """Whether filtered scans read little enough (the module docstring)."""
    if len(ranges.bounds) == 1 or given.eager is not None:
        return True
    if not given.parquet or given.source is None:
        return False
    groups = group_ranges(given.source, c.QUERY_ID)
    if groups is None:
        return False
    try:
        read = rows_read(groups, ranges.bounds)
    except TypeError:  # statistics of another type than the ids (bytes, say)
        return False
    return read <= FILTERED_READS * max(ranges.total, 1)


def _between(ranges: Ranges, k: int) -> pl.Expr:
    lo, hi = ranges.bounds[k]
    inside = pl.col(c.QUERY_ID).is_between(lo, hi)
    return inside | pl.col(c.QUERY_ID).is_null() if ranges.nulls and k == 0 else inside


def filtered(given: Input, ranges: Ranges) -> Reader:
    """Read partition ``k`` by a filtered scan (the whole input when there is one)."""
    if len(ranges.bounds) == 1:
        return lambda k: given.frame.collect()
    return lambda k: given.frame.filter(_between(ranges, k)).collect()


@contextlib.contextmanager
def spilled(given: Input, ranges: Ranges, beside: Path) -> Iterator[Reader]:
    """Spill the input into one folder per partition (beside the output, removed at
    the end, on an error and on a signal); read partition ``k`` from its folder."""
    folder = _atomic.temp_name(beside)
    _atomic.WRITING.add(folder)
    created = _atomic.make_parents(folder)  # the output's folders: removed if left empty
    try:
        dtype = given.frame.collect_schema()[c.QUERY_ID]
        highs = pl.Series([hi for _, hi in ranges.bounds[:-1]], dtype=dtype)
        part = pl.lit(highs).search_sorted(pl.col(c.QUERY_ID), side="left")
        keyed = given.frame.with_columns(part.alias(PART))  # a null id: 0, the first
        sink = pl.PartitionBy(folder, key=PART, include_key=False)
        try:
            keyed.sink_parquet(sink, compression="lz4", mkdir=True, engine="streaming")
        except (pl.exceptions.PolarsError, OSError) as exc:
            full = _targets.out_of_room(exc)
            if full is None:  # a read error: the input's to explain
                raise
            raise RagframeError(
                f"cannot write {beside}: {full} for the input spilled beside it (an input "
                "not grouped by query is first split into one folder per partition); "
                "nothing was written"
            ) from exc
        yield lambda k: _read_spilled(folder, k)
    except BaseException:  # the sink's other writers may still be adding files
        _atomic.remove_settled(folder)
        raise
    finally:
        _atomic.remove(folder)
        _atomic.remove_created(created)


def _read_spilled(folder: Path, k: int) -> pl.DataFrame:
    files = sorted((folder / f"{PART}={k}").glob("*.parquet"))
    return pl.scan_parquet(files, hive_partitioning=False).collect()
