"""Writing a table piece by piece, so that no run holds its whole output: to one file
(a temporary beside it, renamed into place at the end), to a directory of Parquet parts
(one part per piece, in a temporary directory renamed into place), or to standard
output (as it comes; it cannot be taken back).

A file written in one piece is written by the ``whole`` function it is given (Polars'
writers, as :func:`ragframe.io.write_table` writes); one of several pieces by Arrow's
Parquet and IPC writers or Polars' CSV and JSON-lines writers appending to one handle.
Every piece is cast to the schema given up front, which an empty output also gets.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, TypeAlias

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ragframe import schema as c
from ragframe.io import _atomic
from ragframe.io._targets import failure, flat

Piece: TypeAlias = pl.DataFrame | pa.Table
WholeWriter = Callable[[pl.DataFrame, str, str], None]
"""``(frame, path, format)``: write a whole table to a file."""
_ERRORS = (pl.exceptions.PolarsError, pa.ArrowException, OSError)
PARQUET: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "data_page_size": 4 * 2**20,
}
"""Arrow's Parquet writer options: zstd at level 3, as Polars writes, in pages of up to
4 MiB. Arrow's default level (1) is slower here, not faster: on a 10M run's output
(485k blocks, 368 MB of text) level 3 wrote in 1.85 s against 2.00 s, a file of 55 MB
against 81 MB. Its default pages (1 MiB) compress the text in smaller pieces: on a
2M-row partition's 182k blocks (145 MB) 4 MiB pages write a file of 18.1 MB against
21.8 MB in 0.49 s of CPU against 0.56 s (medians of 6, alternated; 8 MiB: 17.5 MB,
0.50 s)."""
NO_STATISTICS = frozenset({c.TEXT, c.CONTENT})
"""Columns of long text written without min/max statistics: no reader prunes row groups
by a block's text, and computing them took about 9% of the writer's time (a 2M-row
partition's 182k blocks, 145 MB: 0.65 s against 0.72 s of CPU, medians of 5)."""


def parquet_options(schema: pa.Schema) -> dict[str, Any]:
    """Arrow's Parquet writer options for a table of ``schema``: :data:`PARQUET`, and
    statistics for every column but :data:`NO_STATISTICS`."""
    kept = [name for name in schema.names if name not in NO_STATISTICS]
    return {**PARQUET, "write_statistics": kept if len(kept) < len(schema.names) else True}


class Sink(Protocol):
    """Where the pieces of one output go."""

    def write(self, piece: Piece) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


def arrow(piece: Piece, schema: pa.Schema) -> pa.Table:
    """``piece`` as an Arrow table of ``schema``."""
    table = piece.to_arrow() if isinstance(piece, pl.DataFrame) else piece
    return table if table.schema == schema else table.cast(schema)


def polars(piece: Piece) -> pl.DataFrame:
    """``piece`` as a Polars frame."""
    if isinstance(piece, pl.DataFrame):
        return piece
    frame = pl.from_arrow(piece)
    assert isinstance(frame, pl.DataFrame)
    return frame


class Appender:
    """One table written piece by piece to an open binary handle."""

    def __init__(self, handle: IO[bytes] | str, fmt: str, schema: pa.Schema) -> None:
        self.fmt, self.schema, self.first = fmt, schema, True
        self.arrow: Any = None
        self.owned = isinstance(handle, str)
        self.handle: Any = handle
        if fmt == "parquet":
            self.arrow = pq.ParquetWriter(handle, schema, **parquet_options(schema))
        elif fmt == "ipc":
            self.arrow = pa.ipc.new_file(handle, schema)
        elif isinstance(handle, str):
            self.handle = open(handle, "wb")  # noqa: SIM115 (closed by close())

    def write(self, piece: Piece) -> None:
        if self.arrow is not None:
            self.arrow.write_table(arrow(piece, self.schema))
        elif self.fmt == "csv":
            flat(polars(piece)).write_csv(self.handle, include_header=self.first)
        else:
            polars(piece).write_ndjson(self.handle)
        self.first = False

    def close(self) -> None:
        if self.first and self.fmt == "csv":  # an empty output still has its header
            self.write(self.schema.empty_table())
        if self.arrow is not None:
            self.arrow.close()
        elif self.owned:
            self.handle.close()
        else:
            self.handle.flush()


class FileSink:
    """Pieces into one file: the first piece is held; a second opens a writer on the
    temporary file; at the end one piece is written whole."""

    def __init__(self, target: Path, shown: str, fmt: str, schema: pa.Schema, whole: WholeWriter):
        self.target, self.shown, self.fmt, self.schema, self.whole = (
            target,
            shown,
            fmt,
            schema,
            whole,
        )
        self.created = _atomic.make_parents(target)
        _atomic.remove_stale(target)
        self.tmp = _atomic.temp_name(target)
        _atomic.WRITING.add(self.tmp)
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
        self.mode = os.fstat(fd).st_mode if not target.exists() else target.stat().st_mode
        os.close(fd)
        self.held: Piece | None = None
        self.appender: Appender | None = None

    def stream(self) -> None:
        """Write every piece as it comes (more than one will come)."""
        try:
            self.appender = Appender(str(self.tmp), self.fmt, self.schema)
        except _ERRORS as exc:
            raise failure(self.shown, exc, self.tmp) from exc

    def write(self, piece: Piece) -> None:
        try:
            if self.appender is None and self.held is None:
                self.held = piece
                return
            if self.appender is None:
                self.appender = Appender(str(self.tmp), self.fmt, self.schema)
                self.appender.write(self.held)
                self.held = None
            self.appender.write(piece)
        except _ERRORS as exc:
            raise failure(self.shown, exc, self.tmp) from exc

    def close(self) -> None:
        try:
            if self.appender is not None:
                self.appender.close()
            else:
                held = self.held if self.held is not None else self.schema.empty_table()
                self.whole(polars(held), str(self.tmp), self.fmt)
            os.chmod(self.tmp, self.mode & 0o7777)
            os.replace(self.tmp, self.target)
            _atomic.WRITING.discard(self.tmp)
        except _ERRORS as exc:
            self.abort()
            raise failure(self.shown, exc, self.tmp) from exc

    def abort(self) -> None:
        if self.appender is not None:
            with contextlib.suppress(*_ERRORS):
                (self.appender.arrow or self.appender.handle).close()
        _atomic.remove(self.tmp)
        _atomic.remove_created(self.created)


class PartsSink:
    """Pieces into a directory, one Parquet part each (``part-00000.parquet``, ...)."""

    def __init__(self, target: Path, shown: str, schema: pa.Schema):
        self.target, self.shown, self.schema = target, shown, schema
        self.created = _atomic.make_parents(target)
        self.tmp = _atomic.new_directory(target)
        self.count = 0

    def write(self, piece: Piece) -> None:
        path = self.tmp / f"part-{self.count:05d}.parquet"
        try:
            pq.write_table(arrow(piece, self.schema), path, **parquet_options(self.schema))
        except _ERRORS as exc:
            raise failure(self.shown, exc, self.tmp) from exc
        self.count += 1

    def close(self) -> None:
        if not self.count:  # an empty output keeps its schema
            self.write(self.schema.empty_table())
        try:
            _atomic.commit_directory(self.tmp, self.target)
        except OSError as exc:
            self.abort()
            raise failure(self.shown, exc, self.tmp) from exc

    def abort(self) -> None:
        _atomic.remove(self.tmp)
        _atomic.remove_created(self.created)


class StdoutSink:
    """Pieces to standard output, in ``fmt``, as they come."""

    def __init__(self, fmt: str, schema: pa.Schema):
        self.appender = Appender(sys.stdout.buffer, fmt, schema)

    def write(self, piece: Piece) -> None:
        try:
            self.appender.write(piece)
        except _ERRORS as exc:
            raise failure("standard output", exc) from exc

    def close(self) -> None:
        try:
            self.appender.close()
        except _ERRORS as exc:
            raise failure("standard output", exc) from exc

    def abort(self) -> None:
        """Nothing to take back: what was written is out."""
