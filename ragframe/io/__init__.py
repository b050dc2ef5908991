"""Reading and writing tables -- files, datasets, standard input and output -- with
atomic writes.

Formats, by file extension: Parquet (``.parquet``, ``.pq``), Arrow IPC (``.arrow``,
``.ipc``, ``.feather``), CSV (``.csv``) and JSON lines (``.jsonl``, ``.ndjson``,
``.json``).

Reading (:func:`scan_table`): an input is a file, a glob (``runs/*.parquet``), a
directory (a Parquet dataset, hive partitions ``key=value/`` read as columns; or files
of one other format side by side; hidden names, ``.*`` and ``_*``, are skipped) or
``-``, standard input (copied to a temporary file, its format read from its first
bytes). A CSV file is checked line by line first: repeated column names and records
with too many or too few fields are errors (Polars would rename, drop or fill them
silently); a CSV or JSON-lines file Polars cannot parse is explained by
:func:`explain_read_error`: the line, what was found, what was expected.

Writing (:func:`write_table`, :func:`open_output` for an output written piece by piece)
is atomic: the table goes to a temporary beside the target,
``.<name>.ragframe-tmp-<pid>-<random>``, renamed into place only when complete, so a
failure or an interrupt never leaves a half-written output, and the temporaries a
killed run left behind (their process is gone) are removed by the next write of the
same output. An output is a file, a directory of Parquet parts (a path that ends with
``/``: ``part-00000.parquet``, ... in order; an existing directory is replaced only
when it is empty or holds nothing but parts) or ``-``, standard output (``fmt``, JSON
lines by default; written as it comes, so not atomic). A new output gets the mode the
umask gives; an overwritten one keeps its mode; an output that is a symbolic link is
written to the link's target (the link stays). :func:`check_output` checks all this
before any work is done.

Any input or output may also be a URI: ``s3://``, ``gs://``, ``hdfs://`` (pyarrow's
filesystems), any scheme fsspec knows (``memory://``, ...), or ``file://`` (a local
path). A remote input is copied to a local temporary and read as a local one; a remote
output is written locally, then uploaded to a temporary key beside the target and
moved into place. Credentials and endpoints come from the usual environment
(``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ...); see :mod:`ragframe.io._filesystems`
(reading) and :mod:`ragframe.io._uploads` (writing).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from ragframe.errors import RagframeError
from ragframe.io import (
    _atomic,
    _filesystems,
    _sources,
    _targets,
    _textfiles,
    _unreadable,
    _uploads,
)
from ragframe.io._atomic import TEMP_MARK, remove_temporaries, stale_temporaries
from ragframe.io._sources import STDIO, Source, explain_read_error, read_error, table_format

if TYPE_CHECKING:
    import pyarrow as pa

    from ragframe.io._sinks import Sink

__all__ = [
    "STDIO",
    "TEMP_MARK",
    "Source",
    "check_output",
    "explain_read_error",
    "is_directory",
    "open_output",
    "read_error",
    "read_table",
    "remove_temporaries",
    "scan_table",
    "source",
    "stale_temporaries",
    "table_format",
    "write_atomically",
    "write_table",
]
_SCANS: dict[str, Callable[..., pl.LazyFrame]] = {
    "parquet": pl.scan_parquet,
    "ipc": pl.scan_ipc,
    "csv": pl.scan_csv,
    "ndjson": pl.scan_ndjson,
}
STDOUT_FORMAT = "ndjson"
"""What ``-`` (standard output) gets unless a format is given."""


# --- reading ----------------------------------------------------------------------


def source(path: str | os.PathLike[str]) -> Source:
    """The files behind the input ``path`` (see the module docstring) and their format.

    Raises:
        RagframeError: nothing there, no table files, files of several formats.
    """
    return _sources.resolve(path)


def scan_table(
    path: str | os.PathLike[str] | Source, *, strings: Sequence[str] = ()
) -> pl.LazyFrame:
    """Lazily scan a table: a file, a glob, a directory or ``-`` (module docstring).

    ``strings``: columns a CSV file's values are read as written, as strings (Polars
    would read ``0123`` as the integer 123); other formats store their types.

    Raises:
        RagframeError: unknown extension, nothing found, a file Polars cannot open,
            or a CSV with repeated column names, bad UTF-8 or a ragged record.
        DataError: a Parquet file (any part of a dataset) that is truncated or not
            Parquet at all: its footer is read up front; the message names it.
    """
    src = path if isinstance(path, Source) else source(path)
    if src.format == "csv":
        for file in src.files:
            problem = _textfiles.csv_problem(file)
            if problem:
                raise RagframeError(_shown(src, f"cannot read {file}: {problem}"))
    if src.format == "parquet":  # every footer: a damaged part fails here, named
        try:
            _unreadable.check_footers(src.files)
        except RagframeError as exc:
            raise type(exc)(_shown(src, str(exc))) from exc
    try:
        frame = _scan(src, strings)
        frame.collect_schema()  # a corrupt footer or header fails here, naming the file
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(_shown(src, str(read_error(_named(src), exc)))) from exc
    return frame


def _scan(src: Source, strings: Sequence[str] = ()) -> pl.LazyFrame:
    if src.root is not None:
        return pl.scan_parquet(src.root, hive_partitioning=True, hidden_file_prefix=[".", "_"])
    files = [str(f) for f in src.files]
    where = files[0] if len(files) == 1 else files
    if src.format == "csv" and strings:
        return pl.scan_csv(where, schema_overrides=dict.fromkeys(strings, pl.String))
    return _SCANS[src.format](where)


def _named(src: Source) -> Path:
    """The path an error names: the one file, else the dataset as given."""
    return src.files[0] if len(src.files) == 1 else Path(src.shown)


def _shown(src: Source, message: str) -> str:
    """``message`` naming standard input, or a remote input's URI, where it names their
    temporary copies."""
    if src.shown != STDIO:
        return _filesystems.shown(message)
    return message.replace(str(src.files[0]), "standard input")


def read_table(
    path: str | os.PathLike[str] | Source, *, strings: Sequence[str] = ()
) -> pl.DataFrame:
    """Read a whole table into memory; a file that cannot be parsed is a
    :class:`RagframeError` naming the file (and, for text formats, the line).
    ``strings``: as :func:`scan_table`."""
    frame = scan_table(path, strings=strings)
    shown = path.shown if isinstance(path, Source) else path
    files = list(path.files) if isinstance(path, Source) else path
    try:
        with _unreadable.naming(files):  # a damaged page: the file that holds it
            return frame.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(_filesystems.shown(str(read_error(shown, exc)))) from exc


# --- writing ----------------------------------------------------------------------


def is_directory(path: str | os.PathLike[str]) -> bool:
    """Whether the output ``path`` is a directory of Parquet parts: it ends with ``/``."""
    return os.fspath(path).endswith(("/", os.sep))


def check_output(path: str | os.PathLike[str], *, table: bool = True) -> Path:
    """Check, before any work, that ``path`` can be written; return what will be
    written (``path`` itself, or its target when it is a symbolic link; ``-`` for
    standard output). ``table``: the extension must be a table format's.

    Raises:
        RagframeError: unknown extension, ``path`` is a directory (without a final
            ``/``) or another non-regular file, a directory output that holds other
            files than Parquet parts, a parent is not a directory, or no file can be
            created there. The message names ``path`` and what was expected.
    """
    path = _filesystems.local(path)
    shown = os.fspath(path)
    if shown == STDIO:
        return Path(STDIO)
    if _filesystems.is_remote(shown):  # a URI: checked there, returned as given
        if table and not is_directory(shown):
            table_format(shown)
        _uploads.check(shown, is_directory(shown))
        return Path(shown)
    target = Path(os.path.realpath(path))
    if is_directory(path):
        _targets.check_directory(target, shown)
    else:
        _targets.check_file(target, shown, table)
    folder = _atomic.first_existing(target.parent)
    if not folder.is_dir():
        raise RagframeError(f"cannot write {shown}: {folder} is not a directory")
    _atomic.probe(folder, target, shown)
    return target


@contextlib.contextmanager
def open_output(
    path: str | os.PathLike[str],
    schema: pa.Schema,
    *,
    fmt: str | None = None,
    pieces: int | None = None,
) -> Iterator[Sink]:
    """An output written piece by piece (``sink.write(frame_or_arrow_table)``), each
    piece cast to ``schema``; committed (renamed into place) when the block ends
    without an error, removed otherwise. ``fmt``: the format of ``-``; ``pieces``: how
    many pieces will come, when known (a file of one piece is written whole, as
    :func:`write_table` writes it; of more, each piece as it comes).

    Raises:
        RagframeError: the output cannot be written (:func:`check_output`), or a
            write failed; the message names ``path``, never the temporary.
    """
    from ragframe.io import _sinks  # Arrow's writers: loaded by the runs that write pieces

    path = _filesystems.local(path)
    if _filesystems.is_remote(path):  # written here first, then uploaded
        check_output(path)
        with (
            _uploads.staged(os.fspath(path)) as written,
            open_output(written, schema, fmt=fmt, pieces=pieces) as staged,
        ):
            yield staged
        return
    target = check_output(path)
    shown = os.fspath(path)
    sink: Sink
    if shown == STDIO:
        sink = _sinks.StdoutSink(fmt or STDOUT_FORMAT, schema)
    elif is_directory(path):
        sink = _sinks.PartsSink(target, shown, schema)
    else:
        sink = _sinks.FileSink(target, shown, table_format(shown), schema, _whole)
    try:
        if pieces is not None and pieces > 1 and isinstance(sink, _sinks.FileSink):
            sink.stream()
        yield sink
        sink.close()
    except BaseException:  # a failure or an interrupt: nothing is left behind
        sink.abort()
        raise


def _whole(df: pl.DataFrame, path: str, fmt: str) -> None:
    _write(df, path, fmt)  # looked up when called (tests replace it)


def write_table(
    frame: pl.DataFrame | pl.LazyFrame, path: str | os.PathLike[str], *, fmt: str | None = None
) -> None:
    """Write ``frame`` to ``path`` atomically: a file (the format from the extension),
    a directory of Parquet parts (``path`` ends with ``/``) or ``-`` (``fmt``).

    A ``LazyFrame`` is collected first. List columns cannot be stored in CSV, so they
    are written as comma-joined text there. See the module docstring for the
    temporaries, modes and symbolic links.

    Raises:
        RagframeError: ``path`` cannot be written (see :func:`check_output`), or the
            write failed; the message names ``path``, never the temporary file.
    """
    path = _filesystems.local(path)
    if os.fspath(path) != STDIO and not is_directory(path):
        fmt = table_format(path)
        check_output(path)
        df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
        write_atomically(path, lambda tmp: _write(df, tmp, fmt))
        return
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    with open_output(path, df.to_arrow().schema, fmt=fmt) as sink:
        sink.write(df)


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Call ``write(temporary)`` beside ``path``, then move the result onto ``path`` in
    one step: no half-written file, the mode kept, a symbolic link followed, the
    temporary named and cleaned up as the module docstring says.

    Raises:
        RagframeError: ``path`` cannot be written, or the write failed; the message
            names ``path``, never the temporary file.
    """
    path = _filesystems.local(path)
    shown = os.fspath(path)
    if _filesystems.is_remote(shown):  # written here first, then uploaded
        check_output(shown, table=False)
        with _uploads.staged(shown) as written:
            write_atomically(written, write)
        return
    target = check_output(path, table=False)
    created = _atomic.make_parents(target)
    _atomic.remove_stale(target)
    tmp = _atomic.temp_name(target)
    _atomic.WRITING.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
        mode = os.fstat(fd).st_mode if not target.exists() else target.stat().st_mode
        os.close(fd)
        write(str(tmp))
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, target)
        _atomic.WRITING.discard(tmp)
    except (pl.exceptions.PolarsError, OSError) as exc:
        _atomic.remove(tmp)
        _atomic.remove_created(created)
        raise _targets.failure(shown, exc, tmp) from exc
    except BaseException:  # interrupted: no temporary is left behind
        _atomic.remove(tmp)
        _atomic.remove_created(created)
        raise


ROW_GROUP_ROWS = (8_192, 512**2)
"""The fewest and the most rows of a Parquet row group :func:`_write` writes (the most:
Polars' default)."""


def row_group_rows(height: int) -> int:
    """Rows per row group of a table of ``height`` rows written whole: two row groups a
    thread, so Polars compresses them on every CPU at once (one row group is compressed
    on one), within :data:`ROW_GROUP_ROWS`."""
    low, high = ROW_GROUP_ROWS
    return max(low, min(high, -(-height // (2 * pl.thread_pool_size()))))


def _write(df: pl.DataFrame, path: str, fmt: str) -> None:
    if fmt == "parquet":
        df.write_parquet(path, row_group_size=row_group_rows(df.height))
    elif fmt == "ipc":
        df.write_ipc(path)
    elif fmt == "csv":
        _targets.flat(df).write_csv(path)
    else:
        df.write_ndjson(path)
