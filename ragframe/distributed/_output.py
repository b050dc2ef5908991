"""A distributed run's Parquet dataset, written atomically: every partition writes its
part (``part-00000.parquet``, ...; a retried task rewrites the same name) into a
temporary folder beside the target, which is renamed into place when every part is
there, so a failed or interrupted run leaves no half-written dataset."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import pyarrow as pa

from ragframe import io
from ragframe.distributed._parts import frame
from ragframe.errors import RagframeError


def check_folder(target: str | os.PathLike[str]) -> Path:
    """``target`` as a folder to write a dataset to: it may exist only as a folder (it is
    replaced), its parent must exist."""
    path = Path(target)
    if path.exists() and not path.is_dir():
        raise RagframeError(f"output {os.fspath(path)} exists and is not a folder")
    if not path.absolute().parent.is_dir():
        raise RagframeError(f"cannot write {os.fspath(path)}: its folder does not exist")
    return path


def temporary_folder(target: Path) -> Path:
    """A new empty folder beside ``target`` for its parts."""
    temp = target.parent / f".{target.name}{io.TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    temp.mkdir()
    return temp


def write_part(table: pa.Table, folder: str, number: int) -> int:
    """Write one partition's part (atomically); return its row count."""
    io.write_table(frame(table), os.path.join(folder, f"part-{number:05d}.parquet"))
    return int(table.num_rows)


def publish(temp: Path, target: Path) -> None:
    """Rename the finished ``temp`` folder to ``target`` (an older dataset there is
    replaced)."""
    old = None
    if target.exists():
        old = target.parent / f".{target.name}{io.TEMP_MARK}old-{secrets.token_hex(4)}"
        target.rename(old)
    temp.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard(temp: Path) -> None:
    """Remove an unfinished run's parts."""
    shutil.rmtree(temp, ignore_errors=True)
