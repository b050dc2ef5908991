"""Output targets: whether one can be written (checked before any work), and the one
error a failed write gives (naming the user's path, never the temporary)."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import polars as pl

from ragframe.errors import RagframeError
from ragframe.io import _atomic
from ragframe.io._sources import FORMATS, table_format

_FULL = {
    errno.ENOSPC: "no space left on the device",
    errno.EFBIG: "the file is too large (the file-size limit, ulimit -f, was reached)",
    errno.EDQUOT: "the disk quota is exceeded",
}
"""What a write that ran out of room says, by its errno."""
_ERRNO = re.compile(r"(?:os error|errno) ([0-9]+)")


def out_of_room(exc: BaseException) -> str | None:
    """Why ``exc`` (an ``OSError``, or Polars' or Arrow's error that quotes one) says a
    write ran out of room: the disk is full, a file-size limit or a quota; else None."""
    code = exc.errno if isinstance(exc, OSError) else None
    if code not in _FULL:
        found = _ERRNO.search(str(exc))
        code = int(found[1]) if found else None
    return _FULL.get(code) if code is not None else None


def failure(shown: str, exc: BaseException, tmp: Path | None = None) -> RagframeError:
    """The error for a failed write of ``shown``: it names the user's path, never the
    temporary; a write that ran out of room says so (:func:`out_of_room`)."""
    full = out_of_room(exc)
    if full is not None:
        return RagframeError(f"cannot write {shown}: {full}; nothing was written")
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    detail = detail.strip().splitlines()[0] if detail.strip() else ""
    if tmp is not None:
        detail = detail.replace(str(tmp), shown)
    return RagframeError(f"cannot write {shown}: {detail or type(exc).__name__}")


def flat(df: pl.DataFrame) -> pl.DataFrame:
    """List columns as comma-joined text (CSV cannot hold them)."""
    nested = [name for name, dt in df.schema.items() if dt.is_nested()]
    if nested:
        df = df.with_columns(pl.col(nested).cast(pl.List(pl.String)).list.join(","))
    return df


def check_file(target: Path, shown: str, table: bool) -> None:
    """Fail unless a file can be written at ``target`` (``table``: a table's extension)."""
    if target.is_dir():
        raise RagframeError(
            f"cannot write {shown}: it is a directory; expected a file path such as "
            f"{os.path.join(shown, 'out.parquet')}, or {shown.rstrip('/')}/ (a final '/') "
            "for a directory of Parquet parts"
        )
    if table and not Path(shown).suffix:
        raise RagframeError(
            f"no file extension for {shown}; expected one of {sorted(FORMATS)}, "
            f"or {shown}/ (a final '/') for a directory of Parquet parts"
        )
    if table:
        table_format(shown)
    if target.exists() and not target.is_file():
        raise RagframeError(f"cannot write {shown}: not a regular file; expected a file path")


def check_directory(target: Path, shown: str) -> None:
    """Fail unless ``target`` can be a directory output: new, empty, or parts only."""
    if target.exists() and not target.is_dir():
        raise RagframeError(
            f"cannot write {shown}: it is not a directory; expected a directory for "
            f"Parquet parts (or {shown.rstrip('/')} without the final '/' for one file)"
        )
    foreign = _atomic.foreign_entry(target) if target.is_dir() else None
    if foreign is not None:
        raise RagframeError(
            f"cannot write {shown}: the directory holds other files than Parquet parts "
            f"({foreign.name}); expected a new or empty directory, or a previous output "
            "(part-*.parquet only), which is replaced"
        )
