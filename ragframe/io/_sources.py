"""Where an input table is: a file, a glob, a directory (a Parquet dataset, hive
partitions read, or files of one other format), or ``-``, standard input.

:func:`resolve` finds the files and their one format; :func:`ragframe.io.scan_table`
scans them. Hidden entries (names starting with ``.`` or ``_``: temporaries,
``_SUCCESS`` markers) are skipped in directories, as Spark and Polars skip them.
Standard input is copied to a temporary file first (Parquet needs to seek; every
reader needs a file), its format read from its first bytes.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import polars as pl

from ragframe.errors import RagframeError
from ragframe.io import _atomic, _filesystems, _textfiles

STDIO = "-"
"""The path that means standard input (or output)."""
FORMATS = {
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
EXTENSION = {"parquet": ".parquet", "ipc": ".arrow", "csv": ".csv", "ndjson": ".jsonl"}
"""The extension each format's temporaries get."""
_HIDDEN = (".", "_")
_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class Source:
    """The files of one input table."""

    shown: str
    """The input as the user wrote it (``-`` for standard input)."""
    format: str
    """``parquet``, ``ipc``, ``csv`` or ``ndjson``."""
    files: tuple[Path, ...]
    """Every file, in the order their rows are read."""
    root: Path | None = None
    """The directory of a Parquet dataset (its hive partitions are read), else None."""


def table_format(path: str | os.PathLike[str]) -> str:
    """Return the format name for ``path`` by its extension, or raise."""
    suffix = Path(path).suffix.lower()
    if suffix in FORMATS:
        return FORMATS[suffix]
    found = f"unsupported file extension '{suffix}'" if suffix else "no file extension"
    raise RagframeError(f"{found} for {os.fspath(path)}; expected one of {sorted(FORMATS)}")


def resolve(path: str | os.PathLike[str]) -> Source:
    """The files of the input ``path`` and their format.

    Raises:
        RagframeError: nothing there, no table files, files of several formats, a
            file of an unknown format, or a directory of non-Parquet files with
            subdirectories (hive partitions need Parquet).
    """
    if _filesystems.is_remote(path):
        return _remote(os.fspath(path))
    path = _filesystems.local(path)
    shown = os.fspath(path)
    if shown == STDIO:
        return _stdin()
    where = Path(path)
    if where.is_file():
        return Source(shown, table_format(where), (where,))
    if where.is_dir():
        return _directory(where, shown)
    if _GLOB & set(shown):
        return _glob(shown)
    if shown.endswith(("/", os.sep)):
        raise RagframeError(f"input directory not found: {shown}; expected a dataset")
    table_format(where)  # a name no table has is the first thing to say
    raise RagframeError(f"input file not found: {shown}; expected a table file")


def _remote(uri: str) -> Source:
    """A remote input, read from its local copy (:func:`ragframe.io._filesystems.fetch`)."""
    try:
        found = resolve(_filesystems.fetch(uri))
    except RagframeError as exc:
        raise RagframeError(_filesystems.shown(str(exc))) from exc
    return Source(uri, found.format, found.files, found.root)


def _one_format(files: list[Path], shown: str) -> str:
    other = next((f for f in files if f.suffix.lower() not in FORMATS), None)
    if other is not None and len(files) > 1:
        raise RagframeError(
            f"input {shown} holds a file that is not a table: {other}; expected table "
            "files only (names starting with '.' or '_' are skipped)"
        )
    formats = {table_format(f) for f in files}
    if len(formats) > 1:
        found = sorted({f.suffix.lower() for f in files})
        raise RagframeError(
            f"input {shown} holds files of several formats ({', '.join(found)}); "
            "expected one format (name the files with a glob, e.g. 'dir/*.parquet')"
        )
    return formats.pop()


def _glob(pattern: str) -> Source:
    files = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
    if not files:
        raise RagframeError(f"no files match {pattern}; expected at least one table file")
    return Source(pattern, _one_format(files, pattern), tuple(files))


def files_of(path: str | os.PathLike[str], what: str = "input") -> tuple[Path, ...]:
    """Every file of the input ``path``, whatever its format: the file itself, the
    files a glob matches (sorted), or those of a directory (walked in sorted order,
    hidden names skipped, a hidden folder with files refused as :func:`resolve`
    refuses it). Not standard input: see :func:`spool_stdin`.

    Raises:
        RagframeError: nothing there, or no file (``what`` names the input).
    """
    if _filesystems.is_remote(path):
        try:
            return files_of(_filesystems.fetch(os.fspath(path)), what)
        except RagframeError as exc:
            raise RagframeError(_filesystems.shown(str(exc))) from exc
    path = _filesystems.local(path)
    shown = os.fspath(path)
    where = Path(path)
    if where.is_file():
        return (where,)
    if where.is_dir():
        files = walk(where, shown)
        if not files:
            raise RagframeError(f"{what} directory has no files: {shown}")
        return tuple(files)
    if _GLOB & set(shown):
        found = sorted(Path(p) for p in glob.glob(shown, recursive=True) if Path(p).is_file())
        if not found:
            raise RagframeError(f"no files match {shown}; expected at least one {what} file")
        return tuple(found)
    raise RagframeError(f"{what} not found: {shown}; expected a file, a glob, a folder or '-'")


def walk(root: Path, shown: str) -> list[Path]:
    """The files under ``root``, in sorted order, hidden names (``.*``, ``_*``) skipped;
    folders behind symbolic links followed, as Polars follows them.

    Raises:
        RagframeError: a hidden folder that holds files (Polars would read them); a
            folder reached twice through symbolic links (a loop, which Polars would
            follow until the system refuses); a broken symbolic link; a folder that
            cannot be listed or a file that cannot be read (permissions).
    """
    files: list[Path] = []
    seen: dict[str, Path] = {}
    for folder, dirs, names in os.walk(root, onerror=_unlisted(shown), followlinks=True):
        _once(Path(folder), seen, shown)
        hidden = [d for d in dirs if d.startswith(_HIDDEN)]
        for name in hidden:  # Polars reads files in hidden folders: refuse them
            inside = Path(folder, name)
            if any(p.is_file() for p in inside.rglob("*")):
                raise RagframeError(
                    f"input directory {shown} holds a hidden folder with files: {inside}; "
                    "expected only table files and partition folders (move it out, or "
                    "name the files with a glob)"
                )
        dirs[:] = sorted(d for d in dirs if d not in hidden)
        found = [_readable(Path(folder, n), shown) for n in sorted(names)]
        files += [path for path in found if not path.name.startswith(_HIDDEN)]
    return files


def _unlisted(shown: str) -> Callable[[OSError], None]:
    def fail(exc: OSError) -> None:
        raise RagframeError(
            f"input directory {shown}: cannot list {exc.filename} ({exc.strerror}); "
            "expected folders this user can read"
        ) from exc

    return fail


def _once(folder: Path, seen: dict[str, Path], shown: str) -> None:
    """Fail when ``folder`` is a folder already walked, reached again by a link."""
    real = os.path.realpath(folder)
    if real not in seen:
        seen[real] = folder
        return
    first = seen[real]
    links = [p for p in (*folder.parents, folder, *first.parents, first) if p.is_symlink()]
    link = max(links, key=lambda p: len(p.parts)) if links else folder
    raise RagframeError(
        f"input directory {shown} reaches one folder twice, as {first} and as {folder}, "
        f"through the symbolic link {link} -> {os.readlink(link) if links else link} (a "
        "loop, or a second link to a folder); expected each folder once"
    )


def _readable(path: Path, shown: str) -> Path:
    """``path``, a file of the input directory ``shown``, or the error it calls for."""
    if path.is_symlink() and not path.exists():
        raise RagframeError(
            f"input directory {shown} holds a broken symbolic link: {path} -> "
            f"{os.readlink(path)} (its target does not exist); expected table files (Polars "
            "looks at every name, hidden ones too)"
        )
    if not path.name.startswith(_HIDDEN) and not os.access(path, os.R_OK):
        raise RagframeError(
            f"cannot read {path}: permission denied; expected a file this user can read"
        )
    return path


def _directory(root: Path, shown: str) -> Source:
    files = walk(root, shown)
    if not files:
        raise RagframeError(
            f"input directory has no table files: {shown}; expected Parquet files (a "
            "dataset, hive partitions allowed) or files of one table format"
        )
    fmt = _one_format(files, shown)
    nested = [f for f in files if f.parent != root]
    if fmt != "parquet" and nested:
        raise RagframeError(
            f"input directory {shown} holds {fmt} files in subfolders ({nested[0]}); "
            "expected them side by side (partition folders need Parquet)"
        )
    return Source(shown, fmt, tuple(files), root if fmt == "parquet" else None)


def _sniff(head: bytes) -> str:
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1"):
        return "ipc"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return "ndjson" if text.startswith(b"{") else "csv"


SPOOLED: list[Path] = []
"""Standard input, copied once; read again from here."""


def _stdin() -> Source:
    tmp = spool_stdin()
    return Source(STDIO, table_format(tmp), (tmp,))


def spool_stdin() -> Path:
    """Standard input copied to a temporary file (once per process; removed at exit or
    on a signal), named with the extension of the format its first bytes say:
    ``.parquet``, ``.arrow``, ``.jsonl`` (a first ``{``), else ``.csv`` (any text)."""
    if SPOOLED:
        return SPOOLED[0]
    stream: BinaryIO = sys.stdin.buffer
    head = stream.read(64)
    home = Path(tempfile.gettempdir()) / "stdin"
    _atomic.remove_stale(home)
    tmp = _atomic.temp_name(home, EXTENSION[_sniff(head)])
    _atomic.WRITING.add(tmp)  # removed on a signal
    with tmp.open("wb") as handle:
        handle.write(head)
        shutil.copyfileobj(stream, handle, 1 << 20)
    SPOOLED.append(tmp)
    atexit.register(forget_stdin)
    return tmp


def forget_stdin() -> None:
    """Remove the copy of standard input (at the end of a command)."""
    while SPOOLED:
        _atomic.remove(SPOOLED.pop())


def _is_empty(path: str | os.PathLike[str]) -> bool:
    try:
        return os.path.isfile(path) and os.path.getsize(path) == 0
    except OSError:
        return False


def read_error(path: str | os.PathLike[str], exc: BaseException) -> RagframeError:
    """The error to raise when Polars failed with ``exc`` reading ``path``: the line
    that is wrong (:func:`explain_read_error`), else Polars' first line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = lines[0] if lines else type(exc).__name__
    if isinstance(exc, pl.exceptions.NoDataError) or _is_empty(path):
        detail = "the file is empty; expected a table with a header or schema"
    explained = explain_read_error(path, str(exc))
    return RagframeError(explained or f"cannot read {os.fspath(path)}: {detail}")


def explain_read_error(path: str | os.PathLike[str], error: str = "") -> str | None:
    """Why Polars could not read the CSV or JSON-lines file ``path``: the first bad
    line and what was wrong (bad UTF-8, a wrong number of fields, invalid JSON), or
    ``None`` when no such problem is found (or the file is of another format, or not
    one file). ``error`` is Polars' message, which names a value that did not parse."""
    try:
        fmt = table_format(path)
    except RagframeError:
        return None
    path = Path(path)
    if not path.is_file():
        return None
    if fmt == "csv":
        found = _textfiles.csv_problem(path, error)
    elif fmt == "ndjson":
        found = _textfiles.jsonl_problem(path)
    else:
        return None
    return f"cannot read {os.fspath(path)}: {found}" if found else None
