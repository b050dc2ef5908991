"""How the postprocess kernels are compiled, and where the compiled code is kept.

The kernels Python calls are compiled by numba with :data:`compiled` (cached on disk,
GIL released); the helpers they call with :data:`internal` (or :data:`testable`), as
functions of their own rather than numba's ``inline="always"``: numba types and lowers
an inlined helper anew at every call site and types the grown caller more slowly, which
made the first compile seconds longer; a helper compiled once per signature and linked
in is inlined by LLVM where it pays, its loops unchanged. A kernel
passes :data:`ZERO` rather than a literal ``0`` so that a helper is compiled for one
signature (``int64``), not once more for ``Literal[int](0)``.

The disk cache lives in a per-user folder (``$RAGFRAME_CACHE_DIR``, else
``$XDG_CACHE_HOME/ragframe``, else ``~/.cache/ragframe``), in a subfolder named by
:func:`cache_key`: ragframe's version, numba's, and a hash of the source of every file
in this package. numba's own cache checks only the file that defines a function, so a
kernel that inlines a helper or reads a constant from another file would keep stale
code after that file changed; keyed on all of them, any change to any kernel file
compiles afresh. That is why kernel files import nothing from ragframe outside this
package at compile time (a test checks it). Keeping the cache out of the installed
package also means an install or uninstall never leaves compiled files behind. Where no
cache folder can be written, numba's own cache is used.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numba as nb
import numpy as np
import numpy.typing as npt
from numba.core import event as ev

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

ZERO = cast(int, np.int64(0))
"""0 typed ``int64``, for a kernel to pass where a literal ``0`` would be typed
``Literal[int](0)`` and compile a callee once more for that signature."""

KERNELS = Path(__file__).resolve().parent
"""The folder of the kernel files, all of which the cache key hashes."""
CACHE_ENV = "RAGFRAME_CACHE_DIR"


def cache_root() -> Path:
    """The per-user folder that holds compiled kernels."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragframe"


def sources_hash(folder: Path) -> str:
    """A hash of the names and contents of the ``.py`` files in ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def cache_key() -> str:
    """The cache subfolder for this code: ragframe's and numba's versions, the sources."""
    try:
        version = metadata.version("ragframe")
    except metadata.PackageNotFoundError:  # run from a source tree, not installed
        version = "source"
    return f"{version}-numba{nb.__version__}-{sources_hash(KERNELS)}"


def cache_folder() -> Path:
    """Where this code's compiled kernels are kept."""
    return cache_root() / cache_key()


def _install_locator() -> bool:
    """Make numba keep the kernels of this folder in :func:`cache_folder`."""
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base = getattr(caching, "_CacheLocator", None)
    if impl is None or base is None or not hasattr(impl, "_locator_classes"):
        return False  # another numba: its own cache, keyed by the defining file only

    class KernelCacheLocator(base):  # type: ignore[misc,valid-type]
        """numba cache locator for ragframe's kernels (see the module docstring)."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno

        def get_cache_path(self) -> str:
            return str(cache_folder())

        def get_source_stamp(self) -> str:
            return cache_key()

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if Path(py_file).resolve().parent != KERNELS:
                return None
            self = cls(py_func, py_file)
            try:
                self.ensure_cache_path()
            except OSError:  # not writable: numba's own locators
                return None
            return self

    classes = impl._locator_classes
    if not any(getattr(k, "__name__", "") == KernelCacheLocator.__name__ for k in classes):
        classes.insert(0, KernelCacheLocator)
    return True


LOCATOR_INSTALLED = _install_locator()
"""Whether numba keeps the kernels in :func:`cache_folder` (a test checks it)."""


class _CompileNotice(ev.Listener):
    """Tells the user, on stderr, once per process, when kernels are compiled rather
    than loaded from the cache (the first run on a machine, or after an upgrade).
    Loads from the cache are silent."""

    def __init__(self) -> None:
        self.depth = 0
        self.announced = False

    def on_start(self, event: Any) -> None:
        module = getattr(event.data.get("dispatcher"), "py_func", None)
        ours = getattr(module, "__module__", "").startswith(__package__ or "")
        if self.depth == 0 and not ours:
            return
        if self.depth == 0 and not self.announced:
            self.announced = True
            sys.stderr.write(
                "ragframe: compiling kernels, first run only (about 15 s; cached in "
                f"{cache_root()})...\n"
            )
            sys.stderr.flush()
        self.depth += 1

    def on_end(self, event: Any) -> None:
        self.depth = max(0, self.depth - 1)


NOTICE = _CompileNotice()
ev.register("numba:compile", NOTICE)  # type: ignore[no-untyped-call]

compiled = nb.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
"""Compile a kernel that Python calls to machine code, cached on disk, releasing the GIL
(its code carries the code of the helpers it calls)."""
testable = nb.njit(nogil=True, boundscheck=False, error_model="numpy")
""":data:`internal` with a Python entry, for a helper the tests also call directly."""
if TYPE_CHECKING:  # numba's stubs lack the two options below
    internal = testable
else:
    internal = nb.njit(
        nogil=True,
        boundscheck=False,
        error_model="numpy",
        no_cpython_wrapper=True,
        no_cfunc_wrapper=True,
    )
"""A helper that only kernels call: compiled once per signature, linked into its callers
(where LLVM inlines it or not), with no Python entry (none is built: callable from
compiled code only) and not cached on its own (the cached kernels hold its code)."""
