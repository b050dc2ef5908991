"""A run's inputs: a path (its files known: Parquet metadata says sizes and row-group
statistics without reading the data) or a frame given in Python."""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ragframe import io
from ragframe.io import Source
from ragframe.schema import to_lazy

Bound = Any
"""A query id (int or string) bounding a partition."""


@dataclass(frozen=True)
class Input:
    """One input of a run."""

    frame: pl.LazyFrame
    """The whole input, lazily."""
    source: Source | None = None
    """Its files, when it was given as a path."""
    eager: pl.DataFrame | None = None
    """The frame itself, when one in memory was given (filters on it are cheap)."""

    @property
    def parquet(self) -> bool:
        return self.source is not None and self.source.format == "parquet"


def open_input(data: Any, what: str) -> Input:
    """``data`` (a path, a Polars frame or an Arrow table) as an :class:`Input`."""
    if isinstance(data, (str, os.PathLike)):
        src = io.source(data)
        return Input(io.scan_table(src), src)
    if isinstance(data, pa.Table):
        data = pl.from_arrow(data)
    if isinstance(data, pl.DataFrame):
        return Input(data.lazy(), eager=data)
    return Input(to_lazy(data, what))


def _metadata(src: Source) -> Iterator[pq.FileMetaData]:
    for file in src.files:
        yield pq.ParquetFile(file).metadata


def _columns(row_group: pq.RowGroupMetaData, names: Sequence[str]) -> Iterator[Any]:
    for j in range(row_group.num_columns):
        column = row_group.column(j)
        if column.path_in_schema in names:
            yield column


def stored_bytes(given: Input, names: Sequence[str]) -> int | None:
    """The uncompressed size of the columns ``names`` of a Parquet input (its metadata),
    an in-memory frame's size, else the files' size; None for a lazy frame."""
    if given.eager is not None:
        present = [n for n in names if n in given.eager.columns]
        return int(given.eager.select(present).estimated_size())
    if given.source is None:
        return None
    if not given.parquet:
        return sum(os.path.getsize(f) for f in given.source.files)
    total = 0
    for meta in _metadata(given.source):
        for i in range(meta.num_row_groups):
            total += sum(c.total_uncompressed_size for c in _columns(meta.row_group(i), names))
    return total


def row_count(given: Input) -> int | None:
    """The number of rows, when known without reading the data."""
    if given.eager is not None:
        return given.eager.height
    if given.parquet and given.source is not None:
        return sum(int(meta.num_rows) for meta in _metadata(given.source))
    return None


def group_ranges(src: Source, name: str) -> list[tuple[Bound, Bound, int]] | None:
    """Each row group's ``(min, max, rows)`` of column ``name``; None when a row group
    has no statistics for it (or the column is not in the files: a hive key)."""
    found = []
    for meta in _metadata(src):
        for i in range(meta.num_row_groups):
            group = meta.row_group(i)
            column = next(_columns(group, [name]), None)
            if not group.num_rows:
                continue
            stats = column.statistics if column is not None else None
            if stats is None or not stats.has_min_max:
                return None
            found.append((stats.min, stats.max, group.num_rows))
    return found


def rows_read(groups: list[tuple[Bound, Bound, int]], bounds: list[tuple[Bound, Bound]]) -> int:
    """The rows that filtered scans of the partitions ``bounds`` (sorted, disjoint,
    inclusive) read, when a row group is read by every partition its range meets."""
    lows, highs = [lo for lo, _ in bounds], [hi for _, hi in bounds]
    total = 0
    for low, high, rows in groups:
        first = bisect.bisect_left(highs, low)  # the first partition ending at or after low
        last = bisect.bisect_right(lows, high)  # past the last one starting at or before high
        total += rows * max(last - first, 0)
    return total


def file_bytes(file: Path, names: Sequence[str]) -> tuple[int, int]:
    """The rows of one Parquet file and the uncompressed size of its columns ``names``."""
    meta = pq.ParquetFile(file).metadata
    groups = (meta.row_group(i) for i in range(meta.num_row_groups))
    return meta.num_rows, sum(
        col.total_uncompressed_size for g in groups for col in _columns(g, names)
    )
