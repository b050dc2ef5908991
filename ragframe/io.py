"""Reading and writing tables by file extension, with atomic writes.

Supported formats: Parquet (``.parquet``), Arrow IPC (``.arrow``, ``.ipc``,
``.feather``), CSV (``.csv``) and JSON lines (``.jsonl``, ``.ndjson``, ``.json``).
Writes go to a temporary file beside the target and are renamed into place only when
complete, so a failure never leaves a half-written output.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ragframe.errors import RagframeError

_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "ipc",
    ".ipc": "ipc",
    ".feather": "ipc",
    ".csv": "csv",
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".json": "ndjson",
}


def table_format(path: str | os.PathLike[str]) -> str:
    """Return the format name for ``path`` by its extension, or raise."""
    suffix = Path(path).suffix.lower()
    try:
        return _FORMATS[suffix]
    except KeyError:
        raise RagframeError(
            f"unsupported file extension '{suffix}' for {os.fspath(path)}; "
            f"expected one of {sorted(_FORMATS)}"
        ) from None


def scan_table(path: str | os.PathLike[str]) -> pl.LazyFrame:
    """Lazily scan a table file; the format comes from the extension."""
    fmt = table_format(path)
    path = Path(path)
    if not path.is_file():
        raise RagframeError(f"input file not found: {os.fspath(path)}")
    if fmt == "parquet":
        return pl.scan_parquet(path)
    if fmt == "ipc":
        return pl.scan_ipc(path)
    if fmt == "csv":
        return pl.scan_csv(path)
    return pl.scan_ndjson(path)


def read_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a whole table file into memory."""
    try:
        return scan_table(path).collect()
    except (pl.exceptions.ComputeError, OSError) as exc:
        raise RagframeError(f"cannot read {os.fspath(path)}: {exc}") from exc


def write_table(frame: pl.DataFrame | pl.LazyFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` to ``path`` atomically; the format comes from the extension.

    A ``LazyFrame`` is collected first. List columns cannot be stored in CSV, so they
    are written as comma-joined text there.
    """
    fmt = table_format(path)
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    write_atomically(path, lambda tmp: _write(df, tmp, fmt))


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Call ``write(temporary_path)`` beside ``path``, then move the result to ``path``
    in one step (no half-written file; the temporary is removed on failure)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write(df: pl.DataFrame, path: str, fmt: str) -> None:
    if fmt == "parquet":
        df.write_parquet(path)
    elif fmt == "ipc":
        df.write_ipc(path)
    elif fmt == "csv":
        nested = [name for name, dt in df.schema.items() if dt.is_nested()]
        if nested:
            df = df.with_columns(pl.col(nested).cast(pl.List(pl.String)).list.join(","))
        df.write_csv(path)
    else:
        df.write_ndjson(path)
