"""Outputs that appear whole or not at all: temporaries beside the target, renamed into
place when complete, and cleaned up after a failure, an interrupt or a killed run.

A temporary is named ``.<name>.ragframe-tmp-<pid>-<random>`` beside its target ``name``
(a file, or a directory of Parquet parts); the temporaries of a target whose process
no longer runs are stale and removed by the next write of the same target. Everything
this process is writing now is listed in :data:`WRITING`, for :func:`remove_temporaries`
(a process about to exit on a signal).

A directory target is replaced in two renames (the old one moved aside to a
temporary, the new one into place, then the old one removed), so an interrupt between
them leaves the target absent, never half-written; only a directory that holds nothing
but Parquet parts (a previous output) or nothing at all is ever replaced.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import time
from pathlib import Path

from ragframe.errors import RagframeError

TEMP_MARK = ".ragframe-tmp-"
"""Part of every temporary's name: ``.<name>.ragframe-tmp-<pid>-<random>``."""
PART = re.compile(r"part-[0-9]{5,}\.parquet\Z")
"""The name of one part of a directory output: ``part-00000.parquet``."""
WRITING: set[Path] = set()
"""The temporaries (files and directories) this process is writing now."""
_TEMP = re.compile(re.escape(TEMP_MARK) + r"(?P<pid>[0-9]+)-[0-9a-f]+(\.[a-z]+)?\Z")


def temp_name(target: Path, suffix: str = "") -> Path:
    """A new temporary's path beside ``target`` (``suffix``: an extension to keep)."""
    name = f".{target.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}{suffix}"
    return target.with_name(name)


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


def remove(path: Path) -> None:
    """Remove a temporary (a file or a directory), ignoring what is already gone."""
    WRITING.discard(path)
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def remove_settled(path: Path, quiet: float = 0.05, limit: float = 2.0) -> None:
    """:func:`remove` a temporary that a writer may still be adding to (a Polars sink that
    raised on one file while its other writers finish theirs): removed again until it
    stays gone for ``quiet`` seconds, ``limit`` seconds at most."""
    deadline = time.monotonic() + limit
    remove(path)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        if not os.path.lexists(path):
            return
        remove(path)


def remove_stale(target: Path) -> None:
    """Remove the stale temporaries of ``target`` (see :func:`stale_temporaries`)."""
    for stale in stale_temporaries(target):
        remove(stale)


def remove_temporaries() -> None:
    """Remove everything being written now, for a process about to exit on a signal;
    safe to call from another thread."""
    for tmp in list(WRITING):
        remove(tmp)


def probe(folder: Path, target: Path, shown: str) -> None:
    """Fail unless a file can be created in ``folder`` (the nearest existing parent of
    ``target``): create a temporary there and remove it."""
    tmp = temp_name(folder / target.name)
    try:
        WRITING.add(tmp)
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(tmp)
    except OSError as exc:
        raise RagframeError(
            f"cannot write {shown}: cannot create a file in {folder} ({exc.strerror}); "
            "expected a writable directory"
        ) from exc
    finally:
        WRITING.discard(tmp)


def first_existing(folder: Path) -> Path:
    """``folder`` or its nearest parent that exists."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def foreign_entry(folder: Path) -> Path | None:
    """The first entry of an existing directory that is neither a Parquet part nor a
    hidden file (a temporary): such a directory is not a previous output."""
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or (PART.match(entry.name) and entry.is_file()):
            continue
        return entry
    return None


def make_parents(target: Path) -> list[Path]:
    """Create the missing folders above ``target``; return those this call created,
    deepest first, for :func:`remove_created` after a failed write."""
    created = []
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        created.append(folder)
        folder = folder.parent
    target.parent.mkdir(parents=True, exist_ok=True)
    return created


def remove_created(folders: list[Path]) -> None:
    """Remove the folders a failed write created (:func:`make_parents`), deepest
    first, each only while empty (another run may be writing there)."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def new_directory(target: Path) -> Path:
    """Create the temporary directory a directory output is written into."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target)
    tmp = temp_name(target)
    WRITING.add(tmp)
    tmp.mkdir()
    return tmp


def commit_directory(tmp: Path, target: Path) -> None:
    """Move the finished directory ``tmp`` onto ``target``: an existing target (a
    previous output, checked by the caller) is moved aside, then removed; the new
    directory gets the old one's mode."""
    old = None
    if target.exists():
        tmp.chmod(target.stat().st_mode & 0o7777)
        old = temp_name(target)
        WRITING.add(old)
        os.replace(target, old)
    os.replace(tmp, target)
    WRITING.discard(tmp)
    if old is not None:
        remove(old)
