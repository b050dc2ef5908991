"""Reading and writing tables by file extension, with atomic writes.

Supported formats: Parquet (``.parquet``, ``.pq``), Arrow IPC (``.arrow``, ``.ipc``,
``.feather``), CSV (``.csv``) and JSON lines (``.jsonl``, ``.ndjson``, ``.json``).

Reading: a CSV file is checked line by line first: repeated column names and records
with too many or too few fields are errors (Polars would rename, drop or fill them
silently); a CSV or JSON-lines file Polars cannot parse is explained by
:func:`explain_read_error`: the line, what was found, what was expected.

Writing (:func:`write_table`) is atomic: the table goes to a temporary file beside the
target, ``.<name>.ragframe-tmp-<pid>-<random>``, renamed into place only when complete,
so a failure or an interrupt never leaves a half-written output, and the temporaries a
killed run left behind (their process is gone) are removed by the next write of the
same output. A new output gets the mode the umask gives; an overwritten one keeps its
mode; an output that is a symbolic link is written to the link's target (the link stays).
:func:`check_output` checks all this before any work is done.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ragframe import _textfiles
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
TEMP_MARK = ".ragframe-tmp-"
"""Part of every temporary file's name: ``.<name>.ragframe-tmp-<pid>-<random>``."""
_WRITING: set[Path] = set()
"""The temporary files this process is writing now."""
_TEMP = re.compile(re.escape(TEMP_MARK) + r"(?P<pid>[0-9]+)-[0-9a-f]+\Z")


def table_format(path: str | os.PathLike[str]) -> str:
    """Return the format name for ``path`` by its extension, or raise."""
    suffix = Path(path).suffix.lower()
    if suffix in _FORMATS:
        return _FORMATS[suffix]
    found = f"unsupported file extension '{suffix}'" if suffix else "no file extension"
    raise RagframeError(f"{found} for {os.fspath(path)}; expected one of {sorted(_FORMATS)}")


# --- reading ----------------------------------------------------------------------


def scan_table(path: str | os.PathLike[str]) -> pl.LazyFrame:
    """Lazily scan a table file; the format comes from the extension.

    Raises:
        RagframeError: unknown extension, no such file, a file Polars cannot open,
            or a CSV with repeated column names, bad UTF-8 or a ragged record.
    """
    fmt = table_format(path)
    path = Path(path)
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise RagframeError(f"input file {what}: {os.fspath(path)}; expected a table file")
    if fmt == "csv":
        problem = _textfiles.csv_problem(path)
        if problem:
            raise RagframeError(f"cannot read {os.fspath(path)}: {problem}")
    try:
        frame = _SCANS[fmt](path)
        frame.collect_schema()  # a corrupt footer or header fails here, naming the file
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise read_error(path, exc) from exc
    return frame


def _is_empty(path: str | os.PathLike[str]) -> bool:
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


_SCANS: dict[str, Callable[[Path], pl.LazyFrame]] = {
    "parquet": pl.scan_parquet,
    "ipc": pl.scan_ipc,
    "csv": pl.scan_csv,
    "ndjson": pl.scan_ndjson,
}


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
    ``None`` when no such problem is found (or the file is of another format).
    ``error`` is Polars' message, which names a value that did not parse."""
    try:
        fmt = table_format(path)
    except RagframeError:
        return None
    path = Path(path)
    if fmt == "csv":
        found = _textfiles.csv_problem(path, error)
    elif fmt == "ndjson":
        found = _textfiles.jsonl_problem(path)
    else:
        return None
    return f"cannot read {os.fspath(path)}: {found}" if found else None


def read_table(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a whole table file into memory; a file that cannot be parsed is a
    :class:`RagframeError` naming the file (and, for text formats, the line)."""
    frame = scan_table(path)
    try:
        return frame.collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise read_error(path, exc) from exc


# --- writing ----------------------------------------------------------------------


def check_output(path: str | os.PathLike[str], *, table: bool = True) -> Path:
    """Check, before any work, that ``path`` can be written; return the file that will
    be written (``path`` itself, or its target when it is a symbolic link). ``table``:
    the extension must be a table format's.

    Raises:
        RagframeError: unknown extension, ``path`` is a directory or another
            non-regular file, a parent is not a directory, or no file can be created
            there. The message names ``path`` and what was expected.
    """
    shown = os.fspath(path)
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise RagframeError(
            f"cannot write {shown}: it is a directory; expected a file path such as "
            f"{os.path.join(shown, 'out.parquet')}"
        )
    if table:
        table_format(path)
    if target.exists() and not target.is_file():
        raise RagframeError(f"cannot write {shown}: not a regular file; expected a file path")
    folder = _first_existing(target.parent)
    if not folder.is_dir():
        raise RagframeError(f"cannot write {shown}: {folder} is not a directory")
    probe = _temp_name(folder / target.name)
    try:
        _WRITING.add(probe)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
        _WRITING.discard(probe)
    except OSError as exc:
        _WRITING.discard(probe)
        raise RagframeError(
            f"cannot write {shown}: cannot create a file in {folder} ({exc.strerror}); "
            "expected a writable directory"
        ) from exc
    return target


def _first_existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def stale_temporaries(target: Path) -> list[Path]:
    """The temporaries of ``target`` whose writing process no longer runs."""
    prefix = f".{target.name}{TEMP_MARK}"
    if not target.parent.is_dir():
        return []
    found = []
    for entry in target.parent.iterdir():
        match = _TEMP.search(entry.name)
        if entry.name.startswith(prefix) and match and not _alive(int(match["pid"])):
            found.append(entry)
    return found


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; a bogus number
        return True
    return True


def write_table(frame: pl.DataFrame | pl.LazyFrame, path: str | os.PathLike[str]) -> None:
    """Write ``frame`` to ``path`` atomically; the format comes from the extension.

    A ``LazyFrame`` is collected first. List columns cannot be stored in CSV, so they
    are written as comma-joined text there. See the module docstring for the
    temporary file, modes and symbolic links.

    Raises:
        RagframeError: ``path`` cannot be written (see :func:`check_output`), or the
            write failed; the message names ``path``, never the temporary file.
    """
    fmt = table_format(path)
    check_output(path)
    df = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    write_atomically(path, lambda tmp: _write(df, tmp, fmt))


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], None]) -> None:
    """Call ``write(temporary)`` beside ``path``, then move the result onto ``path`` in
    one step: no half-written file, the mode kept, a symbolic link followed, the
    temporary named and cleaned up as the module docstring says.

    Raises:
        RagframeError: ``path`` cannot be written, or the write failed; the message
            names ``path``, never the temporary file.
    """
    shown = os.fspath(path)
    target = check_output(path, table=False)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in stale_temporaries(target):
        stale.unlink(missing_ok=True)
    tmp = _temp_name(target)
    _WRITING.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
        mode = os.fstat(fd).st_mode if not target.exists() else target.stat().st_mode
        os.close(fd)
        write(str(tmp))
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, target)
        _WRITING.discard(tmp)
    except (pl.exceptions.PolarsError, OSError) as exc:
        _remove(tmp)
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        detail = detail.strip().splitlines()[0].replace(str(tmp), shown) if detail else ""
        raise RagframeError(f"cannot write {shown}: {detail or type(exc).__name__}") from exc
    except BaseException:  # interrupted: no temporary is left behind
        _remove(tmp)
        raise


def _remove(tmp: Path) -> None:
    _WRITING.discard(tmp)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def remove_temporaries() -> None:
    """Remove the temporary files being written now, for a process about to exit on a
    signal (see :mod:`ragframe.cli`); safe to call from another thread."""
    for tmp in list(_WRITING):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


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
