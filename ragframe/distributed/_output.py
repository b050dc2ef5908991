"""A distributed run's Parquet dataset, written atomically: every partition writes its
part (``part-00000.parquet``, ...; a retried task rewrites the same name) into a
temporary folder beside the target, which is renamed into place when every part is
there, so a failed or interrupted run leaves no half-written dataset.

A remote target (``s3://...``, see :mod:`ragframe._filesystems`) gets a temporary
prefix beside it instead: each worker uploads its part there (one whole object), and
when every part is there the driver moves them onto the target, removing old parts the
new dataset does not have (a prefix cannot be renamed, so that last step is not one
atomic switch; a failed run leaves the target as it was and removes its prefix)."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

import pyarrow as pa

from ragframe import _atomic, _filesystems, io
from ragframe.distributed._parts import frame
from ragframe.errors import RagframeError

Target = Path | str
"""A local folder, or a remote one's URI (no final ``/``)."""


def check_folder(target: str | os.PathLike[str]) -> Target:
    """``target`` as a folder to write a dataset to: it may exist only as a folder (it is
    replaced), its parent must exist. A remote one may hold nothing but Parquet parts,
    and must be writable (a missing bucket or a denied write is found here)."""
    if _filesystems.is_remote(target):
        uri = os.fspath(target).rstrip("/")
        _filesystems.check(f"{uri}/", directory=True)
        return uri
    path = Path(_filesystems.local(target))
    if path.exists() and not path.is_dir():
        raise RagframeError(f"output {os.fspath(path)} exists and is not a folder")
    if not path.absolute().parent.is_dir():
        raise RagframeError(f"cannot write {os.fspath(path)}: its folder does not exist")
    return path


def temporary_folder(target: Target) -> Target:
    """A new empty folder (a remote one: a new prefix) beside ``target`` for its parts."""
    if isinstance(target, str):
        return _filesystems.temp_key(target)
    temp = target.parent / f".{target.name}{io.TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    temp.mkdir()
    return temp


def write_part(table: pa.Table, folder: str, number: int) -> int:
    """Write one partition's part (atomically); return its row count."""
    io.write_table(frame(table), os.path.join(folder, f"part-{number:05d}.parquet"))
    return int(table.num_rows)


def publish(temp: Target, target: Target) -> None:
    """Rename the finished ``temp`` folder to ``target`` (an older dataset there is
    replaced); a remote one's parts are moved one by one."""
    if isinstance(temp, str) and isinstance(target, str):
        _publish_remote(temp, target)
        return
    assert isinstance(temp, Path) and isinstance(target, Path)
    old = None
    if target.exists():
        old = target.parent / f".{target.name}{io.TEMP_MARK}old-{secrets.token_hex(4)}"
        target.rename(old)
    temp.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _publish_remote(temp: str, target: str) -> None:
    import pyarrow.fs as pafs

    fs, temp_path = _filesystems.filesystem(temp)
    path = _filesystems.filesystem(target)[1].rstrip("/")
    try:
        listed = fs.get_file_info(pafs.FileSelector(temp_path, allow_not_found=True))
        parts = sorted(e.base_name for e in listed if _atomic.PART.match(e.base_name))
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            for entry in fs.get_file_info(pafs.FileSelector(path)):
                if _atomic.PART.match(entry.base_name) and entry.base_name not in parts:
                    fs.delete_file(entry.path)  # a part the new dataset does not have
        for name in parts:
            fs.move(f"{temp_path}/{name}", f"{path}/{name}")
    except (pa.ArrowException, OSError) as exc:
        discard(temp)
        raise RagframeError(f"cannot write {target}: {str(exc).splitlines()[0]}") from exc
    discard(temp)


def discard(temp: Target) -> None:
    """Remove an unfinished run's parts."""
    if isinstance(temp, str):
        import pyarrow.fs as pafs

        fs, path = _filesystems.filesystem(temp)
        try:
            if fs.get_file_info(path).type == pafs.FileType.Directory:
                fs.delete_dir(path)
        except (pa.ArrowException, OSError):
            pass  # best effort: the run's own error is the one to report
        return
    shutil.rmtree(temp, ignore_errors=True)
