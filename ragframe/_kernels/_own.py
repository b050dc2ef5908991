"""Which kernel files compile together and where their compiled kernels are kept
(numba-free, so that a kernel file's import loads no numba).

The shared family (:data:`SHARED`): this package (the building blocks every kernel
uses) and the stages' kernel folders whose kernels call each other's helpers (the
token-capped merge of ``postprocess`` counts tokens with ``tokens``' kernels). Their
marked functions are made numba's together, and their compiled kernels are kept in one
cache folder keyed on all of their files (:func:`ragframe._kernels._jit.cache_key`).
The family is declared here, not registered as its folders are imported, so the key is
the same whichever of them a process imports first.

Kernel files elsewhere that call only their own code (:data:`OWN_FILES`) are kept in
the same per-user cache, each keyed on its own source alone; a kernel folder elsewhere
whose files call only each other's helpers (:data:`OWN_FOLDERS`, ``retrieve``'s) is kept
there keyed on all of that folder's files."""

from __future__ import annotations

from pathlib import Path

SHARED = ("ragframe._kernels", "ragframe.postprocess._kernels", "ragframe.tokens._kernels")
"""The packages of the shared family (see the module docstring)."""
PACKAGE = Path(__file__).resolve().parent.parent
"""The ``ragframe`` package's folder."""
FOLDERS = tuple(PACKAGE.joinpath(*name.split(".")[1:]) for name in SHARED)
"""The folders of :data:`SHARED`, whose ``.py`` files the shared cache key hashes."""

OWN_FILES: set[Path] = set()
"""Kernel files outside :data:`FOLDERS` whose kernels are kept in the per-user folder
too, each keyed on its own source alone: files whose kernels call only their own code
(:func:`keep_in_user_cache`)."""
OWN_FOLDERS: set[Path] = set()
"""Kernel folders outside :data:`FOLDERS` whose kernels are kept in the per-user folder,
keyed on all of the folder's ``.py`` files: folders whose files call each other's
helpers, and nothing compiled outside the folder (:func:`keep_folder_in_user_cache`)."""


def in_shared_family(module: str) -> bool:
    """Whether the module named ``module`` is a file of the shared family."""
    return module.rpartition(".")[0] in SHARED


def keep_in_user_cache(py_file: str) -> None:
    """Keep the kernels ``py_file`` defines from here on (``cache=True``) in the
    per-user folder, keyed on that file's source, rather than beside the file: in an
    installed package numba's own cache would write into ``site-packages``, where an
    uninstall leaves the files (and a folder that shadows a later install) behind."""
    OWN_FILES.add(Path(py_file).resolve())


def keep_folder_in_user_cache(py_file: str) -> None:
    """:func:`keep_in_user_cache` for a kernel file whose kernels call helpers of other
    files in its folder: its kernels are keyed on every file of the folder, so an edit
    of a helper's file compiles its callers afresh (numba's own cache would check only
    the caller's file)."""
    OWN_FOLDERS.add(Path(py_file).resolve().parent)


def cache_source(py_file: str) -> Path | None:
    """What the cache key of the kernels defined in ``py_file`` hashes: None for the
    shared family (all of :data:`FOLDERS`), the folder for a file of :data:`OWN_FOLDERS`,
    the file itself for one of :data:`OWN_FILES`; raises LookupError for any other file
    (numba's own cache keeps its kernels)."""
    path = Path(py_file).resolve()
    if path.parent in FOLDERS:
        return None
    if path.parent in OWN_FOLDERS:
        return path.parent
    if path in OWN_FILES:
        return path
    raise LookupError(py_file)
