"""A broadcast store given as Parquet files travels as their names, not their rows: each
worker process reads it once (and keeps the last one read), so the driver never holds
the store, and no copy of it goes through the scheduler or the object store."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from ragframe.driver._sources import parquet_empty, read_parquet
from ragframe.io._unreadable import naming


@dataclass(frozen=True)
class StoreFiles:
    """A store's Parquet files and, for local ones, their sizes and times (a file
    rewritten between two runs is read again, not taken from a worker's last read)."""

    files: tuple[str, ...]
    stamps: tuple[tuple[int, int] | None, ...]

    @classmethod
    def of(cls, files: Sequence[str]) -> StoreFiles:
        return cls(tuple(files), tuple(_stamp(f) for f in files))

    def empty(self) -> pa.Table:
        """The store's columns, no rows (as a read of the files gives them)."""
        with naming(list(self.files)):
            return parquet_empty(self.files[0])

    def table(self) -> pa.Table:
        """The whole store (on a worker: read once per process)."""
        return _read(self)


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:  # a URI: read as it is when the worker reads it
        return None
    return found.st_size, found.st_mtime_ns


@functools.lru_cache(maxsize=1)
def _read(store: StoreFiles) -> pa.Table:
    """The files read as every input piece is (a remote one with the worker's own
    credentials; a damaged one an error naming it)."""
    return pa.concat_tables([read_parquet(f) for f in store.files])
