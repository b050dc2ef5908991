"""Writing an output named by URI (see :mod:`ragframe.io._filesystems` for the schemes
and where credentials come from).

A remote output is written locally first, then uploaded to a temporary key
beside the target (``.<name>.ragframe-tmp-<pid>-<random>``) and moved onto it, so the
target appears whole or not at all (S3 cannot move a file over 5 GB: an error, nothing
written). A directory output (``.../``) is uploaded part by part to a temporary prefix;
its parts then replace the old ones (a prefix cannot be renamed, so readers may see the
parts appear one by one in that last step; a failure removes what was uploaded).
Failures, a missing bucket and a denied write included, are a :class:`RagframeError`
naming the URI.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragframe.errors import RagframeError
from ragframe.io import _atomic
from ragframe.io._filesystems import filesystem, first_line


@contextlib.contextmanager
def staged(uri: str) -> Iterator[str]:
    """A local path to write the output ``uri`` to (ending with ``/`` as ``uri`` does),
    uploaded (:func:`upload`) when the block ends without an error; the local copy is
    removed in any case. Messages name ``uri``, never the local path."""
    home = Path(tempfile.mkdtemp(prefix="ragframe-stage-"))
    _atomic.WRITING.add(home)  # removed on a signal
    written = home / (uri.rstrip("/").rpartition("/")[2] or "output")
    try:
        try:
            yield str(written) + ("/" if uri.endswith("/") else "")
        except RagframeError as exc:
            message = str(exc).replace(str(written), uri.rstrip("/"))
            raise RagframeError(message) from exc
        upload(written, uri)
    finally:
        _atomic.remove(home)


def temp_key(path: str) -> str:
    """A temporary key beside ``path`` (no final ``/``)."""
    folder, _, name = path.rpartition("/")
    temp = f".{name}{_atomic.TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}"
    return f"{folder}/{temp}" if folder else temp


def check(uri: str, directory: bool) -> None:
    """Fail before any work unless the output ``uri`` can be written: a file output is
    not a folder there, a directory output holds nothing but Parquet parts, and an
    empty object can be created (and is removed) beside it: a missing bucket or a
    denied write is found here.

    Raises:
        RagframeError: naming ``uri`` and what was expected.
    """
    import pyarrow as pa
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    path = path.rstrip("/")
    try:
        info = fs.get_file_info(path)
        if not directory and info.type == pafs.FileType.Directory:
            raise RagframeError(
                f"cannot write {uri}: it is a folder; expected a file path, or {uri}/ "
                "(a final '/') for a directory of Parquet parts"
            )
        if directory and info.type == pafs.FileType.Directory:
            foreign = _foreign(fs, path)
            if foreign is not None:
                raise RagframeError(
                    f"cannot write {uri}: the folder holds other files than Parquet parts "
                    f"({foreign}); expected a new or empty folder, or a previous output "
                    "(part-*.parquet only), which is replaced"
                )
        if directory and info.type == pafs.FileType.File:
            raise RagframeError(f"cannot write {uri}: it is a file; expected a folder")
        probe = temp_key(f"{_first_existing(fs, path)}/{path.rpartition('/')[2]}")
        with fs.open_output_stream(probe):
            pass
        fs.delete_file(probe)
    except (pa.ArrowException, OSError) as exc:
        raise RagframeError(f"cannot write {uri}: {first_line(exc)}") from exc


def _first_existing(fs: Any, path: str) -> str:
    """The nearest folder above ``path`` that exists (the bucket, at the top): a probe
    there leaves no folder marker behind when it is removed, as one in a new folder
    would on S3."""
    import pyarrow.fs as pafs

    folder = path.rpartition("/")[0]
    while "/" in folder.strip("/") and fs.get_file_info(folder).type != pafs.FileType.Directory:
        folder = folder.rpartition("/")[0]
    return folder


def _foreign(fs: Any, path: str) -> str | None:
    import pyarrow.fs as pafs

    for entry in fs.get_file_info(pafs.FileSelector(path, recursive=False)):
        name = entry.base_name
        if name.startswith(".") or (_atomic.PART.match(name) and entry.type == pafs.FileType.File):
            continue
        return str(name)
    return None


def upload(written: Path, uri: str) -> None:
    """Put the finished local output ``written`` (a file, or a folder of Parquet parts
    for a ``uri`` ending with ``/``) onto ``uri``, as the module docstring says.

    Raises:
        RagframeError: the upload failed; nothing of it is left behind.
    """
    import pyarrow as pa

    fs, path = filesystem(uri)
    path = path.rstrip("/")
    temp = temp_key(path)
    try:
        if written.is_dir():
            _upload_parts(fs, written, temp, path)
        else:
            _put(fs, written, temp)
            _move(fs, temp, path)
    except (pa.ArrowException, OSError) as exc:
        _delete(fs, temp)
        raise RagframeError(f"cannot write {uri}: {first_line(exc)}") from exc
    except BaseException:
        _delete(fs, temp)
        raise


def _upload_parts(fs: Any, written: Path, temp: str, path: str) -> None:
    import pyarrow.fs as pafs

    parts = sorted(p.name for p in written.iterdir() if _atomic.PART.match(p.name))
    for name in parts:
        _put(fs, written / name, f"{temp}/{name}")
    if fs.get_file_info(path).type == pafs.FileType.Directory:
        for entry in fs.get_file_info(pafs.FileSelector(path)):
            if _atomic.PART.match(entry.base_name) and entry.base_name not in parts:
                fs.delete_file(entry.path)  # a part the new output does not have
    for name in parts:
        _move(fs, f"{temp}/{name}", f"{path}/{name}")
    _delete(fs, temp)


def _move(fs: Any, source: str, target: str) -> None:
    """Move one object onto ``target`` (S3: a copy, whole or not at all, then a delete)."""
    fs.move(source, target)


def _put(fs: Any, file: Path, key: str) -> None:
    with file.open("rb") as source, fs.open_output_stream(key) as out:
        while chunk := source.read(8 << 20):
            out.write(chunk)


def _delete(fs: Any, key: str) -> None:
    """Remove ``key`` (an object or a prefix), ignoring what is not there."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        kind = fs.get_file_info(key).type
        if kind == pafs.FileType.Directory:
            fs.delete_dir(key)
        elif kind == pafs.FileType.File:
            fs.delete_file(key)
    except (pa.ArrowException, OSError):
        pass  # best effort: a failed write's own error is the one to report
