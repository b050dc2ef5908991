"""Inputs and outputs named by URI: ``s3://``, ``gs://``, ``hdfs://`` and the other
schemes pyarrow's filesystems know, any other scheme fsspec knows (``memory://``,
``az://``, ...), and ``file://`` (a local path). Credentials, regions and endpoints come
from each filesystem's usual environment: for S3, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_DEFAULT_REGION``,
``AWS_ENDPOINT_URL`` (an S3-compatible server), ``AWS_PROFILE``, ``~/.aws``; for GCS,
``GOOGLE_APPLICATION_CREDENTIALS``.

Reading: a remote input (a file, a folder, a glob) is copied to a local temporary
folder first, as standard input is, and read from there exactly as a local input is
(the same formats, checks and messages, naming the URI); the copies are removed at exit
or on a signal. Dask and Ray (``--engine``) do not copy: the driver lists the remote
files and reads their footers, and each worker reads its own pieces with its own
environment's credentials (:mod:`ragframe.driver._remote`).

Writing a remote output: :mod:`ragframe.io._uploads`.
"""

from __future__ import annotations

import atexit
import fnmatch
import os
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ragframe.errors import RagframeError
from ragframe.io import _atomic

_SCHEME = re.compile(r"\A(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+)://")
_GLOB = frozenset("*?[")
SPOOLS: dict[str, str] = {}
"""Each local copy of a remote input (its folder, ending with ``/``) -> the URI prefix it
stands for: messages naming a copy name the URI instead (:func:`shown`)."""


def scheme(path: object) -> str | None:
    """The URI scheme of ``path`` (``s3``, ``file``, ...), or None for a plain path.

    Example:
        >>> scheme("s3://bucket/runs.parquet"), scheme("runs.parquet"), scheme("C:/x")
        ('s3', None, None)
    """
    if not isinstance(path, str):
        return None
    match = _SCHEME.match(path)
    return match["scheme"].lower() if match else None


def is_remote(path: object) -> bool:
    """Whether ``path`` is a URI of another filesystem than the local one."""
    found = scheme(path)
    return found is not None and found not in ("file", "local")


def local(path: Any) -> Any:
    """``path`` with a ``file://`` URI made a local path; anything else unchanged.

    Example:
        >>> local("file:///data/my%20runs.parquet"), local("runs/")
        ('/data/my runs.parquet', 'runs/')
    """
    if scheme(path) not in ("file", "local"):
        return path
    parts = urlsplit(path)
    return unquote(parts.netloc + parts.path) if parts.netloc else unquote(parts.path)


def filesystem(uri: str) -> tuple[Any, str]:
    """The pyarrow filesystem of ``uri`` and the path in it: pyarrow's own (S3, GCS,
    HDFS), else fsspec's, wrapped for pyarrow.

    Raises:
        RagframeError: no filesystem knows the scheme, or it cannot be set up.
    """
    import pyarrow as pa
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(uri)  # type: ignore[no-any-return]
    except pa.ArrowInvalid:
        pass  # a scheme pyarrow does not know: fsspec may
    except (pa.ArrowException, OSError) as exc:
        raise RagframeError(f"cannot open {uri}: {first_line(exc)}") from exc
    try:
        import fsspec
        from fsspec.core import url_to_fs
    except ImportError:
        raise RagframeError(f"no filesystem for {uri}: pip install fsspec") from None
    try:
        fs, path = url_to_fs(uri)
    except (ValueError, ImportError, OSError) as exc:
        known = ", ".join(sorted(fsspec.available_protocols())[:12])
        raise RagframeError(
            f"no filesystem for {uri}: {first_line(exc)}; expected a scheme pyarrow or "
            f"fsspec knows ({known}, ...)"
        ) from exc
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"\s*\(Request ID: [^)]*\)", "", line)


def shown(message: str) -> str:
    """``message`` naming URIs where it names the local copies of remote inputs."""
    for copy, uri in SPOOLS.items():
        message = message.replace(copy, uri).replace(copy.rstrip("/"), uri.rstrip("/"))
    return message


# --- reading ----------------------------------------------------------------------


def fetch(uri: str) -> str:
    """A local copy of the remote input ``uri`` (a file, a folder or a glob): the local
    path to read instead, of the same shape (a glob stays a glob; nothing there, a path
    that does not exist, for the caller's message).

    Raises:
        RagframeError: the filesystem cannot be reached or read.
    """
    import pyarrow as pa

    fs, uri_base, rest, found = _listing(uri)
    uri_parent, _, name = uri_base.rpartition("/")
    home = Path(tempfile.mkdtemp(prefix="ragframe-remote-"))
    _atomic.WRITING.add(home)  # removed on a signal, or at exit
    atexit.register(_atomic.remove, home)
    SPOOLS[f"{home}/"] = f"{uri_parent}/"
    copy = home / name
    try:
        for path, relative in found or []:
            _download(fs, path, copy / relative if relative else copy)
        if found is not None and not (found and not found[0][1]):  # a folder, maybe empty
            copy.mkdir(exist_ok=True)
    except (pa.ArrowException, OSError) as exc:
        raise RagframeError(f"cannot read {uri}: {first_line(exc)}") from exc
    return (os.path.join(copy, rest) if rest else str(copy)) + ("/" if uri.endswith("/") else "")


def remote_files(uri: str) -> list[str]:
    """The URIs of the files of the remote input ``uri``: itself (a file), a folder's
    files (recursively), or those a glob matches; sorted, hidden names (``.*``, ``_*``)
    skipped in folders. Empty when nothing is there.

    Raises:
        RagframeError: the filesystem cannot be reached or read.
    """
    _, uri_base, _, found = _listing(uri)
    kept = [r for _, r in found or [] if not any(p.startswith((".", "_")) for p in r.split("/"))]
    return [uri_base + (f"/{relative}" if relative else "") for relative in kept]


def _listing(uri: str) -> tuple[Any, str, str, list[tuple[str, str]] | None]:
    """``uri``'s filesystem, its URI up to the first glob component, the glob after it
    (or ``""``), and its files as (path in the filesystem, path relative to the base;
    ``""`` for the base itself); None when nothing is there."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    fs, path = filesystem(uri)
    path = path.rstrip("/")
    base = _fixed_part(path)
    rest = path[len(base) :].lstrip("/")  # the glob after the fixed folders
    given = uri.rstrip("/")
    uri_base = given[: len(given) - len(rest)].rstrip("/") if rest else given
    try:
        info = fs.get_file_info(base)
        if info.type == pafs.FileType.File and not rest:
            return fs, uri_base, rest, [(base, "")]
        if info.type != pafs.FileType.Directory:
            return fs, uri_base, rest, None
        found = []
        for entry in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
            relative = entry.path[len(base) :].lstrip("/")
            if entry.type == pafs.FileType.File and (not rest or _matches(rest, relative)):
                found.append((entry.path, relative))
    except (pa.ArrowException, OSError) as exc:
        raise RagframeError(f"cannot read {uri}: {first_line(exc)}") from exc
    return fs, uri_base, rest, sorted(found, key=lambda f: f[1])


def read_bytes(uri: str) -> bytes:
    """The content of the remote file ``uri``.

    Raises:
        RagframeError: it cannot be read.
    """
    import pyarrow as pa

    fs, path = filesystem(uri)
    try:
        with fs.open_input_stream(path) as source:
            return bytes(source.readall())
    except (pa.ArrowException, OSError) as exc:
        raise RagframeError(f"cannot read {uri}: {first_line(exc)}") from exc


def _fixed_part(path: str) -> str:
    """The folders of ``path`` before its first component with a glob character."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if _GLOB & set(part):
            return "/".join(parts[:i])
    return path


def _matches(pattern: str, relative: str) -> bool:
    """Whether the path ``relative`` matches the glob ``pattern`` (``**``: any folders),
    component by component as :func:`glob.glob` matches."""
    want, have = pattern.split("/"), relative.split("/")
    if want == ["**"]:
        return True
    if want[0] == "**":
        return any(_matches("/".join(want[1:]), "/".join(have[i:])) for i in range(len(have)))
    if not have or not fnmatch.fnmatchcase(have[0], want[0]):
        return False
    if len(want) == 1:
        return len(have) == 1
    return len(have) > 1 and _matches("/".join(want[1:]), "/".join(have[1:]))


def _download(fs: Any, path: str, to: Path) -> None:
    to.parent.mkdir(parents=True, exist_ok=True)
    with fs.open_input_stream(path) as source, to.open("wb") as out:
        while chunk := source.read(8 << 20):
            out.write(chunk)
