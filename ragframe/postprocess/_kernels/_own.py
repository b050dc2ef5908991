"""Kernel files outside this folder that keep their compiled kernels in ragframe's
per-user cache folder (numba-free, so that such a file's import loads no numba)."""

from __future__ import annotations

from pathlib import Path

OWN_FILES: set[Path] = set()
"""Kernel files outside this folder whose kernels are kept in the per-user folder too,
each keyed on its own source alone: files whose kernels call only their own code
(:func:`keep_in_user_cache`)."""


def keep_in_user_cache(py_file: str) -> None:
    """Keep the kernels ``py_file`` defines from here on (``cache=True``) in the
    per-user folder, keyed on that file's source, rather than beside the file: in an
    installed package numba's own cache would write into ``site-packages``, where an
    uninstall leaves the files (and a folder that shadows a later install) behind."""
    OWN_FILES.add(Path(py_file).resolve())
