"""Parquet inputs that cannot be read, named: a truncated or corrupted file is an error
that names the file, however many files the input has and whichever engine reads it.

Polars scans lazily, so a damaged file can fail only when its rows are read, deep inside
a run, with a message that names no file. Two checks name it:

- up front, :func:`check_footers` reads every file's footer (a few kilobytes each):
  a truncated file, or one that is not Parquet at all, fails before any work;
- after a read failed (a footer can be whole while a page is not), :func:`naming`
  reads the input's Parquet files one by one, batch by batch, to find the one that
  cannot be read, and raises the error naming it. This costs a read of the input, but
  only on the way out of a run that has already failed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.errors import DataError, RagframeError

FileName = str | os.PathLike[str]
_FAILURES: tuple[type[BaseException], ...] = (
    pl.exceptions.PolarsError,
    pl.exceptions.PanicException,  # a Rust panic on bytes no writer produced
    OSError,
    ValueError,  # pyarrow's ArrowInvalid
)
_PARQUET = (".parquet", ".pq")


def unreadable(file: FileName, exc: BaseException) -> RagframeError:
    """The error for the Parquet ``file`` that failed to read with ``exc``: a
    :class:`DataError`, but for an empty file (the same error as for every format)."""
    shown = os.fspath(file)
    with contextlib.suppress(OSError):
        if "://" not in shown and os.path.getsize(shown) == 0:
            return RagframeError(
                f"cannot read {shown}: the file is empty; expected a table with a header or schema"
            )
    if isinstance(exc, PermissionError):
        return DataError(
            f"cannot read {shown}: permission denied; expected a file this user can read"
        )
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = lines[0] if lines else type(exc).__name__
    return DataError(
        f"cannot read {shown}: not a readable Parquet file ({detail}); expected a "
        "complete Parquet file (is it truncated or corrupted?)"
    )


def check_footers(files: Iterable[FileName]) -> None:
    """Raise :func:`unreadable` for the first of ``files`` whose footer (the schema and
    row groups) cannot be read."""
    for file in files:
        try:
            pl.read_parquet_schema(os.fspath(file))
        except _FAILURES as exc:
            raise unreadable(file, exc) from exc


def _read_through(file: FileName) -> None:
    """Read every row of ``file``, a batch at a time (memory stays flat)."""
    import pyarrow.parquet as pq  # only after a failure

    shown = os.fspath(file)
    if "://" in shown:
        from pyarrow import fs

        filesystem, inner = fs.FileSystem.from_uri(shown)
        handle = pq.ParquetFile(inner, filesystem=filesystem)
    else:
        handle = pq.ParquetFile(shown)
    with handle:
        for _ in handle.iter_batches(batch_size=65_536):
            pass


def first_unreadable(files: Iterable[FileName]) -> RagframeError | None:
    """The error naming the first of ``files`` that cannot be read whole, or None."""
    for file in files:
        try:
            _read_through(file)
        except _FAILURES as exc:
            return unreadable(file, exc)
    return None


def parquet_files_of(given: Any) -> list[str]:
    """The Parquet files of an input given as a path (a file, a folder, a glob), or of
    a list of them; none for anything else (a frame) or a path that finds nothing."""
    from ragframe.io import _sources

    items = [given] if isinstance(given, str | os.PathLike) else given
    if not isinstance(items, list | tuple):
        return []
    found: list[str] = []
    for item in items:
        if not isinstance(item, str | os.PathLike) or os.fspath(item) == _sources.STDIO:
            continue
        with contextlib.suppress(RagframeError, OSError):
            files = _sources.files_of(item)
            found += [os.fspath(f) for f in files if Path(f).suffix.lower() in _PARQUET]
    return found


@contextlib.contextmanager
def naming(*inputs: Any) -> Iterator[None]:
    """Inside, a failure to read (Polars', Arrow's, a panic) that comes from a damaged
    Parquet file of ``inputs`` (paths; anything else is passed over) is raised as the
    error naming that file; any other error goes on as it was."""
    try:
        yield
    except RagframeError:
        raise
    except _FAILURES as exc:
        files = [f for given in inputs for f in parquet_files_of(given)]
        found = first_unreadable(files)
        if found is not None:
            raise found from exc
        raise
