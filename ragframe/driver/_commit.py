"""Workers write, the driver commits: every partition's part is written by its worker
into a temporary folder beside the output (``part-00000.parquet``, ...); the driver
renames the folder into place when every part is there, and removes it on any failure
or signal (:mod:`ragframe.io._atomic`), so nothing is visible before every part is written
and nothing is left behind. Only a new or empty folder, or a previous output (Parquet
parts only), is ever replaced: a folder holding anything else is refused before any
work, as the local engine refuses it. A file output is made from the finished parts by
the driver one partition at a time (:func:`assemble`): it never holds more.

A remote output (``s3://bucket/out``: :mod:`ragframe.io._filesystems`) gets a temporary
prefix beside it instead; each worker uploads its part there (one whole object, with
its own environment's credentials), and when every part is there the driver moves them
onto the output, removing old parts the new dataset lacks, then the prefix (a prefix
cannot be renamed: in that last step the parts appear one by one). A failure removes
the prefix and leaves the output as it was; a missing bucket or a denied write is found
before any work (:func:`check_folder`)."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator, Sequence
from io import BytesIO
from pathlib import Path
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe.errors import RagframeError
from ragframe.io import _atomic, _filesystems, _targets, _uploads

Folder: TypeAlias = Path | str
"""A local folder, or a remote one's URI (no final ``/``)."""
_ERRORS = (pa.ArrowException, OSError)


def check_folder(target: str | os.PathLike[str]) -> Folder:
    """``target`` as a folder to write a dataset to, before any work: new, empty, or a
    previous output (Parquet parts only; it is replaced), in a folder that exists and
    can be written (remote: a bucket that exists, a write allowed).

    Raises:
        RagframeError: naming ``target`` and what was expected.
    """
    if _filesystems.is_remote(target):
        given = os.fspath(target)
        uri = given.rstrip("/")
        if uri.endswith(":"):  # a scheme alone (``s3://``): no bucket, refused as given
            _uploads.check(given, directory=True)
            raise RagframeError(f"cannot write {given}: expected a bucket and a folder in it")
        _uploads.check(f"{uri}/", directory=True)
        return uri
    shown = os.fspath(target)
    path = Path(_filesystems.local(target))
    if path.exists() and not path.is_dir():
        raise RagframeError(f"output {shown} exists and is not a folder")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise RagframeError(f"cannot write {shown}: its folder does not exist")
    _targets.check_directory(path, shown)  # a folder not a previous output is refused
    _atomic.probe(parent, path, shown)
    return path


@contextlib.contextmanager
def parts_folder(beside: Folder) -> Iterator[Folder]:
    """A new temporary folder (remote: prefix) beside ``beside`` for the parts, removed
    at the end unless committed (on an error and on a signal too)."""
    if isinstance(beside, str):
        temp = _uploads.temp_key(beside)
        try:
            yield temp
        finally:
            _delete(temp)
        return
    local = _atomic.new_directory(beside)
    try:
        yield local
    finally:
        _atomic.remove(local)


def commit(temp: Folder, target: Folder) -> None:
    """Put the finished ``temp`` onto ``target`` (an older dataset there replaced)."""
    if isinstance(temp, str) and isinstance(target, str):
        _commit_remote(temp, target)
        return
    assert isinstance(temp, Path) and isinstance(target, Path)
    _atomic.commit_directory(temp, target)


def _commit_remote(temp: str, target: str) -> None:
    fs, path = _filesystems.filesystem(target)
    new = dict(_listed(temp))
    try:
        for name, key in _listed(target):
            if name not in new:
                fs.delete_file(key)  # a part the new dataset does not have
        for name, key in new.items():
            fs.move(key, f"{path.rstrip('/')}/{name}")
    except _ERRORS as exc:
        raise RagframeError(f"cannot write {target}: {_first_line(exc)}") from exc


def put_part(frame: pl.DataFrame, folder: str, name: str) -> None:
    """Upload one part (on a worker, with its own credentials) as one whole object,
    written as a local part is (a retried task puts the same name again)."""
    buffer = BytesIO()
    frame.write_parquet(buffer, row_group_size=io.row_group_rows(frame.height))
    fs, path = _filesystems.filesystem(f"{folder}/{name}")
    try:
        with fs.open_output_stream(path) as out:
            out.write(buffer.getvalue())
    except _ERRORS as exc:
        raise RagframeError(f"cannot write {folder}/{name}: {_first_line(exc)}") from exc


def part_files(folder: Folder) -> list[str]:
    """The parts in partition order (paths, or a remote folder's URIs)."""
    if isinstance(folder, str) and _filesystems.is_remote(folder):
        return [f"{folder}/{name}" for name, _ in _listed(folder)]
    return sorted(os.fspath(p) for p in Path(folder).iterdir() if _atomic.PART.match(p.name))


def scan_parts(files: Sequence[str]) -> pl.LazyFrame:
    """The parts as one lazy frame (remote ones through Arrow's dataset: a filter reads
    only the row groups it may need)."""
    if not any(_filesystems.is_remote(f) for f in files):
        return pl.scan_parquet(list(files), hive_partitioning=False)
    import pyarrow.dataset as ds

    fs, _ = _filesystems.filesystem(files[0])
    paths = [_filesystems.filesystem(f)[1] for f in files]
    return pl.scan_pyarrow_dataset(ds.dataset(paths, filesystem=fs, format="parquet"))


def assemble(folder: Folder, destination: str | os.PathLike[str], *, ordered: bool) -> None:
    """Write the parts in ``folder`` to ``destination`` in the single-machine order: the
    parts one after the other (partitions of query ranges), or, ``ordered`` (fetch's
    parts, each sorted by ``request_order``), a range of request order at a time read
    from every part; the driver holds one part, or one range, at a time."""
    files = part_files(folder)
    schema = _schema(files[0]) if files else None
    if ordered and schema is not None:
        schema = schema.remove(schema.get_field_index(c.REQUEST_ORDER))
    with io.open_output(destination, schema, pieces=max(len(files), 2)) as sink:
        for piece in _ranges(files) if ordered else (_read(f) for f in files):
            sink.write(piece)


def _ranges(files: list[str]) -> Iterator[pl.DataFrame]:
    total = sum(_footer(f).num_rows for f in files)
    step = max(1, math.ceil(total / max(len(files), 1)))
    scan = scan_parts(files)
    order = pl.col(c.REQUEST_ORDER)
    for low in range(0, total, step):
        piece = scan.filter((order >= low) & (order <= low + step - 1)).collect()
        yield piece.sort(c.REQUEST_ORDER).drop(c.REQUEST_ORDER)


def _read(file: str) -> pl.DataFrame:
    if _filesystems.is_remote(file):
        return pl.read_parquet(BytesIO(_filesystems.read_bytes(file)))
    return pl.read_parquet(file)


def _footer(file: str) -> Any:
    import pyarrow.parquet as pq

    if _filesystems.is_remote(file):
        fs, path = _filesystems.filesystem(file)
        return pq.read_metadata(path, filesystem=fs)
    return pq.ParquetFile(file).metadata


def _schema(file: str) -> pa.Schema:
    import pyarrow.parquet as pq

    if _filesystems.is_remote(file):
        fs, path = _filesystems.filesystem(file)
        return pq.read_schema(path, filesystem=fs)
    return pq.read_schema(file)


def _listed(folder: str) -> list[tuple[str, str]]:
    """The parts of the remote ``folder`` (name, path in its filesystem), sorted; none
    when it is not there."""
    import pyarrow.fs as pafs

    fs, path = _filesystems.filesystem(folder)
    selector = pafs.FileSelector(path.rstrip("/"), allow_not_found=True)
    try:
        found = fs.get_file_info(selector)
    except _ERRORS as exc:
        raise RagframeError(f"cannot read {folder}: {_first_line(exc)}") from exc
    return sorted((e.base_name, e.path) for e in found if _atomic.PART.match(e.base_name))


def _delete(folder: str) -> None:
    """Remove the remote prefix ``folder`` (best effort: a run's own error is the one
    to report)."""
    import pyarrow.fs as pafs

    with contextlib.suppress(*_ERRORS, RagframeError):
        fs, path = _filesystems.filesystem(folder)
        if fs.get_file_info(path).type == pafs.FileType.Directory:
            fs.delete_dir(path)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
