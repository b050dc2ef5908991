"""numba itself, imported only when a kernel is first called (:mod:`._compile`): the
options each kind of function is compiled with, where the compiled code is kept, and
the notice while it compiles.

The disk cache lives in a per-user folder (``$RAGFRAME_CACHE_DIR``, else
``$XDG_CACHE_HOME/ragframe``, else ``~/.cache/ragframe``), in a subfolder named by
:func:`cache_key`: ragframe's version, numba's, and a hash of the source of every file
of the shared family (:mod:`._own`: this package and the stages' kernel folders that
call each other's helpers). numba's own cache checks only the file that defines a
function, so a kernel that inlines a helper or reads a constant from another file would
keep stale code after that file changed; keyed on all of them, any change to any kernel
file compiles afresh. That is why kernel files import nothing from ragframe outside the
family's folders at compile time (a test checks it). Keeping the cache out of the installed
package also means an install or uninstall never leaves compiled files behind. Where no
cache folder can be written, numba's own cache is used.

Loading a cached kernel skips numba's set-up for compiling (numba imports and registers
every implementation it has, about half a second, before it looks in its cache): cached
machine code needs only numba's runtime. A compile still sets everything up first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numba as nb
from numba.core import caching
from numba.core import event as ev
from numba.core.runtime.nrt import rtsys
from numba.extending import intrinsic

from ragframe._kernels import _ahead
from ragframe._kernels._own import FOLDERS, OWN_FILES, cache_source, keep_in_user_cache

KERNELS = FOLDERS
"""The folders of the shared family's kernel files, all of which its cache key hashes."""
CACHE_ENV = "RAGFRAME_CACHE_DIR"
COMPILE_SECONDS = "10-15"
"""About how long a first run compiles, for the notice: on a 2-core machine, measured
9.1-9.4 s wall for the default data's first ``postprocess`` with the second process
(:mod:`._ahead`, started while a CPU is idle), 14-15 s without it (a busy machine)."""

_COMMON = {"nogil": True, "boundscheck": False, "error_model": "numpy"}
OPTIONS: dict[str, dict[str, Any]] = {
    "kernel": {**_COMMON, "no_cfunc_wrapper": True},
    "testable": {**_COMMON, "no_cfunc_wrapper": True},
    "internal": {**_COMMON, "no_cpython_wrapper": True, "no_cfunc_wrapper": True},
}
"""numba's options per kind of function: no C-callable wrapper for any (nothing calls
one), no Python entry for helpers only kernels call."""


def jit(function: Callable[..., Any], kind: str) -> Any:
    """numba's form of a kernel-file function of kind ``kind`` (see :mod:`._compile`)."""
    if kind == "numba":
        return getattr(nb, function.__name__)
    if kind == "intrinsic":
        return intrinsic(function)
    dispatcher = nb.njit(**OPTIONS[kind])(function)
    if kind == "kernel":
        dispatcher._cache = _cache_for(function)
    return dispatcher


def cache_root() -> Path:
    """The per-user folder that holds compiled kernels."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragframe"


def sources_hash(*sources: Path) -> str:
    """A hash of the names and contents of the ``.py`` files in each of ``sources`` (a
    folder), or of the file itself."""
    digest = hashlib.sha256()
    for i, source in enumerate(sources):
        for path in sorted(source.glob("*.py")) if source.is_dir() else [source]:
            name = f"{i}/{path.name}" if len(sources) > 1 else path.name
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def cache_key(source: Path | None = None) -> str:
    """The cache subfolder for the kernels of ``source`` (None: the shared family, all
    of :data:`KERNELS`; else one of :data:`OWN_FILES` or :data:`._own.OWN_FOLDERS`):
    ragframe's and numba's versions, a hash of the sources."""
    try:
        version = metadata.version("ragframe")
    except metadata.PackageNotFoundError:  # run from a source tree, not installed
        version = "source"
    if source is None:
        return f"{version}-numba{nb.__version__}-{sources_hash(*KERNELS)}"
    name = f"{source.parent.name}{source.name}" if source.is_dir() else source.stem
    mark = f"{name.strip('_')}-"
    return f"{version}-numba{nb.__version__}-{mark}{sources_hash(source)}"


def cache_folder(source: Path | None = None) -> Path:
    """Where the compiled kernels of ``source`` (see :func:`cache_key`) are kept."""
    return cache_root() / cache_key(source)


class KernelCache(caching.FunctionCache):
    """numba's cache of one kernel, loading without numba's set-up for compiling (the
    module docstring; anything unexpected falls back to numba's own way), and waiting
    for a kernel that a second process compiles (:mod:`._ahead`)."""

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        name = self._py_func.__name__
        _ahead.before_load(name)
        try:
            rtsys.initialize(target_context)  # what cached code needs of the set-up
            found = self._load_overload(sig, target_context)  # type: ignore[no-untyped-call]
        except Exception:  # a corrupt or foreign entry: numba decides
            found = super().load_overload(sig, target_context)  # type: ignore[no-untyped-call]
        if found is None:
            _ahead.missed(name, cached)
        return found

    def save_overload(self, sig: Any, data: Any) -> None:
        """Cache a compiled kernel; where the cache cannot take it (a full disk, a
        file-size limit, a quota) the process keeps the kernel compiled in memory and a
        later one compiles it again: the run is not failed for its cache (numba removes
        its half-written temporary)."""
        with contextlib.suppress(OSError):
            super().save_overload(sig, data)  # type: ignore[no-untyped-call]


def cached(name: str) -> bool:
    """Whether the cache holds a kernel named ``name`` (for some signature)."""
    return any(cache_folder().glob(f"*.{name}-*.nbi"))


def _cache_for(function: Callable[..., Any]) -> Any:
    """A kernel's cache: :class:`KernelCache` where this numba has the parts it uses."""
    usable = hasattr(KernelCache, "_load_overload") and LOCATOR_INSTALLED
    cache = KernelCache if usable else caching.FunctionCache
    return cache(function)  # type: ignore[no-untyped-call]


def _install_locator() -> bool:
    """Make numba keep the kernels of :data:`KERNELS` (and of :data:`OWN_FILES` and
    :data:`._own.OWN_FOLDERS`) in :func:`cache_folder`."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base = getattr(caching, "_CacheLocator", None)
    if impl is None or base is None or not hasattr(impl, "_locator_classes"):
        return False  # another numba: its own cache, keyed by the defining file only

    class KernelCacheLocator(base):  # type: ignore[misc,valid-type]
        """numba cache locator for ragframe's kernels (see the module docstring)."""

        def __init__(self, py_func: Any, py_file: str, source: Path | None) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._source = source

        def get_cache_path(self) -> str:
            return str(cache_folder(self._source))

        def get_source_stamp(self) -> str:
            return cache_key(self._source)

        def get_disambiguator(self) -> str:
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            try:
                source = cache_source(py_file)
            except LookupError:  # not one of ragframe's: numba's own locators
                return None
            self = cls(py_func, py_file, source)
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
__all__ = ["OWN_FILES", "keep_in_user_cache"]  # their home is :mod:`._own` (no numba)


class _CompileNotice(ev.Listener):
    """Tells the user, on stderr, once per process, when kernels are compiled rather
    than loaded from the cache (the first run on a machine, or after an upgrade).
    Loads from the cache are silent."""

    def __init__(self) -> None:
        self.depth = 0
        self.announced = False

    def on_start(self, event: Any) -> None:
        module = getattr(event.data.get("dispatcher"), "py_func", None)
        ours = getattr(module, "__module__", "").startswith("ragframe.")  # evaluate's too
        if self.depth == 0 and not ours:
            return
        if self.depth == 0 and not self.announced:
            self.announced = True
            sys.stderr.write(
                f"ragframe: compiling kernels, first run only (about {COMPILE_SECONDS} s; "
                f"cached in {cache_root()})...\n"
            )
            sys.stderr.flush()
        self.depth += 1

    def on_end(self, event: Any) -> None:
        self.depth = max(0, self.depth - 1)


NOTICE = _CompileNotice()
ev.register("numba:compile", NOTICE)  # type: ignore[no-untyped-call]
