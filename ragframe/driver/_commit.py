"""Workers write, the driver commits: every partition's part is written by its worker
into a temporary folder beside the output (``part-00000.parquet``, ...); the driver
renames the folder into place when every part is there, and removes it on any failure
or signal (:mod:`ragframe.io._atomic`), so nothing is visible before every part is written
and nothing is left behind. A file output is made from the finished parts by the
driver one partition at a time (:func:`assemble`): it never holds more."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ragframe import io
from ragframe import schema as c
from ragframe.errors import RagframeError
from ragframe.io import _atomic


def check_folder(target: str | os.PathLike[str]) -> Path:
    """``target`` as a folder to write a dataset to: it may exist only as a folder (it is
    replaced), its parent must exist."""
    path = Path(target)
    if path.exists() and not path.is_dir():
        raise RagframeError(f"output {os.fspath(path)} exists and is not a folder")
    if not path.absolute().parent.is_dir():
        raise RagframeError(f"cannot write {os.fspath(path)}: its folder does not exist")
    return path


@contextlib.contextmanager
def parts_folder(beside: Path) -> Iterator[Path]:
    """A new temporary folder beside ``beside`` for the parts, removed at the end unless
    committed (on an error and on a signal too)."""
    temp = _atomic.new_directory(beside)
    try:
        yield temp
    finally:
        _atomic.remove(temp)


def commit(temp: Path, target: Path) -> None:
    """Rename the finished ``temp`` onto ``target`` (an older dataset there replaced)."""
    _atomic.commit_directory(temp, target)


def part_files(folder: Path) -> list[Path]:
    """The parts in partition order."""
    return sorted(p for p in folder.iterdir() if _atomic.PART.match(p.name))


def assemble(folder: Path, destination: str | os.PathLike[str], *, ordered: bool) -> None:
    """Write the parts in ``folder`` to ``destination`` in the single-machine order: the
    parts one after the other (partitions of query ranges), or, ``ordered`` (fetch's
    parts, each sorted by ``request_order``), a range of request order at a time read
    from every part; the driver holds one part, or one range, at a time."""
    files = part_files(folder)
    schema = pq.read_schema(files[0]) if files else None
    if ordered and schema is not None:
        schema = schema.remove(schema.get_field_index(c.REQUEST_ORDER))
    with io.open_output(destination, schema, pieces=max(len(files), 2)) as sink:
        for piece in _ranges(files) if ordered else (pl.read_parquet(f) for f in files):
            sink.write(piece)


def _ranges(files: list[Path]) -> Iterator[pl.DataFrame]:
    total = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    step = max(1, math.ceil(total / max(len(files), 1)))
    scan = pl.scan_parquet(files, hive_partitioning=False)
    for low in range(0, total, step):
        piece = scan.filter(pl.col(c.REQUEST_ORDER).is_between(low, low + step - 1)).collect()
        yield piece.sort(c.REQUEST_ORDER).drop(c.REQUEST_ORDER)
