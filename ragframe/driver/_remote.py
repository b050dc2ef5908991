"""Parquet inputs named by URI on an engine (``s3://``, ``gs://``, any filesystem of
:mod:`ragframe.io._filesystems`): the driver lists the files and reads their footers
(schemas, row counts) there, never their rows; each
worker reads its own pieces, whole, with the credentials and endpoint of its own
environment (``AWS_*`` for S3, as every worker's process inherits or sets them).

Local and remote behave alike: a folder's ``*.parquet`` files (recursively, sorted,
hidden names skipped), a glob's matches, a file; a hive folder refused; a damaged footer
an error naming the file before any work."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.errors import RagframeError
from ragframe.io import _filesystems
from ragframe.io._unreadable import unreadable

is_remote = _filesystems.is_remote
local = _filesystems.local
_FAILURES = (pa.ArrowException, OSError, pl.exceptions.PolarsError, pl.exceptions.PanicException)


def files(uri: str, what: str = "input") -> list[str]:
    """The Parquet files of the remote ``uri`` (a file, a folder, a glob), as URIs;
    empty for a glob that matches nothing or a folder without Parquet files.

    Raises:
        RagframeError: nothing is there (not a glob), a hive folder, or the filesystem
            cannot be read.
    """
    listed = _filesystems.remote_files(uri)
    if glob.has_magic(uri):
        return listed
    base = uri.rstrip("/")
    if listed == [base]:
        return listed  # a file
    if not listed:
        raise RagframeError(f"{what} not found: {uri}; expected a Parquet file, folder or glob")
    refuse_hive(base, listed, what)
    return [f for f in listed if f.endswith(".parquet")]


def refuse_hive(base: str, listed: Sequence[str], what: str) -> None:
    """Raise when a file of the folder ``base`` lies under a ``key=value`` folder (a
    hive dataset: an engine would not see the columns those names hold)."""
    for file in listed:
        folders = file[len(base) :].strip("/").split("/")[:-1]
        hive = [d for d in folders if "=" in d and not d.startswith((".", "_"))]
        if hive:
            inner = file[: file.index(hive[0]) + len(hive[0])]
            raise RagframeError(
                f"{what} {base} is a hive dataset ({inner}): an engine reads each Parquet file "
                "as it is, without the columns its folder names hold; write the input without "
                "partition folders, or run locally (--engine local reads hive partitions)"
            )


def metadata(path: str) -> Any:
    """The footer of the remote Parquet file ``path`` (``pyarrow.parquet.FileMetaData``).

    Raises:
        RagframeError: it cannot be read (naming ``path``).
    """
    import pyarrow.parquet as pq

    fs, where = _filesystems.filesystem(path)
    try:
        return pq.read_metadata(where, filesystem=fs)
    except _FAILURES as exc:
        raise unreadable(path, exc) from exc


def footers(paths: Sequence[str]) -> list[Any]:
    """The footers of ``paths``, read a few at a time (a round trip each)."""
    if len(paths) <= 1:
        return [metadata(p) for p in paths]
    with ThreadPoolExecutor(max_workers=min(16, len(paths))) as pool:
        return list(pool.map(metadata, paths))


def schema(path: str) -> pl.Schema:
    """The Polars schema of the remote Parquet file ``path``, from its footer."""
    arrow = metadata(path).schema.to_arrow_schema()
    empty = pl.from_arrow(arrow.empty_table())
    assert isinstance(empty, pl.DataFrame)
    return empty.schema


def read(path: str) -> pl.DataFrame:
    """The remote Parquet file ``path``, whole (on the worker that needs it), read as
    Polars reads a local file."""
    content = _filesystems.read_bytes(path)
    try:
        return pl.read_parquet(BytesIO(content))
    except _FAILURES as exc:
        raise unreadable(path, exc) from exc
