"""How ragframe's kernels are compiled: by numba, at their first call, never at
import.

The decorators here mark a kernel-file function and leave it plain Python until a
kernel is first called: importing ``ragframe`` (or running a command that uses no
kernel) imports no numba. The first call of any kernel or testable helper imports numba
(:mod:`._jit`, which also sets up the on-disk cache) and replaces every marked function
in every loaded kernel file's namespace by its numba dispatcher, so numba, compiling a
kernel, finds dispatchers where the kernel names its helpers; the kernel is then
compiled or loaded from the cache for the call's argument types.

Kernels Python calls are compiled with :func:`compiled` (cached on disk, GIL released);
the helpers they call with :func:`internal` (or :func:`testable`), as functions of their
own rather than numba's ``inline="always"``: numba types and lowers an inlined helper
anew at every call site and types the grown caller more slowly, which made the first
compile seconds longer; a helper compiled once per signature and linked in is inlined
by LLVM where it pays, its loops unchanged.

One signature per kernel: numba compiles a kernel once per distinct argument types, and
a read-only array, another integer width or a non-contiguous array is another type (an
Arrow buffer handed over without a copy is read-only). The kernels' Python wrappers
pass every input array through :func:`frozen` (C-contiguous, read-only, one dtype) and
every output array fresh and writable, so the first run compiles each kernel once and
every later input loads it. A kernel passes :data:`ZERO` rather than a literal ``0`` so
that a helper is compiled for one signature (``int64``), not once more for
``Literal[int](0)``.

Small inputs run in Python: a kernel called on at most :func:`python_rows` rows
(``$RAGFRAME_PYTHON_ROWS``, default :data:`PYTHON_ROWS`) runs the same function as
plain Python (:func:`python_form`: the kernel file's function with its helpers' plain
forms in place of numba's), so a run on a small table neither imports numba nor
compiles nor loads anything: a first run takes well under a second instead of
compiling for seconds, a warm one skips numba's import and the loads. That pays only
while the work is small: a process runs at most :data:`PYTHON_BUDGET` times
:func:`python_rows` rows in Python in all, then every kernel call is compiled (an
experiment or a sweep calls the kernels tens of times on a few thousand rows each,
where Python's per-row cost soon outweighs numba's one-time import and loads: on
Cranfield's 36-configuration experiment, 1.2 s in Python against 0.57 s compiled,
warm). Python reads the
kernels' integers as numpy scalars, whose arithmetic keeps their width where numba
widens to 64 bits: the kernel files widen explicitly (``int(b)``) wherever a byte's
value is shifted or added to, and the tests check the two forms equal.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe._kernels._own import in_shared_family

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
F = TypeVar("F", bound=Callable[..., Any])

ZERO = cast(int, np.int64(0))
"""0 typed ``int64``, for a kernel to pass where a literal ``0`` would be typed
``Literal[int](0)`` and compile a callee once more for that signature."""

_LOCK = threading.RLock()
"""Held while numba is set up and functions are replaced (parts run on threads)."""


PYTHON_ROWS_ENV = "RAGFRAME_PYTHON_ROWS"
PYTHON_ROWS = 2_000
"""Rows up to which a kernel runs as plain Python (see the module docstring): on the
default data's first ``postprocess`` (600 candidates), Python takes a fraction of a
second where numba's import and loads take most of one, and its compile ten."""


PYTHON_BUDGET = 10
"""How many times :func:`python_rows` rows a process runs in Python, in all its kernel
calls, before it compiles every later call (the default job's experiment: about 5,900)."""
_PYTHON_DONE = [0]
"""The rows this process's kernel calls have run in Python so far."""


def runs_in_python(rows: int) -> bool:
    """Whether a kernel call on ``rows`` rows runs as plain Python: few rows, and the
    process's Python budget (:data:`PYTHON_BUDGET`) not spent (counted when it does; a
    race between threads miscounts by a call, which only moves the switch)."""
    limit = python_rows()
    if rows > limit or _PYTHON_DONE[0] + rows > PYTHON_BUDGET * limit:
        return False
    _PYTHON_DONE[0] += rows
    return True


def python_rows() -> int:
    """The most rows a kernel runs on as plain Python: ``$RAGFRAME_PYTHON_ROWS`` when it
    is a whole number (0: always compiled), else :data:`PYTHON_ROWS`."""
    value = os.environ.get(PYTHON_ROWS_ENV, "").strip()
    return int(value) if value.isdigit() else PYTHON_ROWS


def rows_of(args: tuple[Any, ...]) -> int:
    """A kernel call's size: the longest first dimension of its array arguments other
    than bytes (text buffers are addressed, not counted)."""
    longest = 0
    for arg in args:
        if isinstance(arg, np.ndarray) and arg.ndim and arg.dtype != np.uint8:
            longest = max(longest, arg.shape[-1] if arg.ndim == 2 else arg.shape[0])
    return longest


class Lazy:
    """A function of a kernel file, plain Python until numba is needed (see the module
    docstring); ``kind`` is one of :data:`KINDS`; ``python`` the plain form of an
    intrinsic or a numba function."""

    def __init__(
        self, function: Callable[..., Any], kind: str, python: Callable[..., Any] | None = None
    ) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.kind = kind
        self.python = python
        self.jitted: Any = None
        _MARKED[id(self)] = self
        FILES.add(function.__module__)

    def __call__(self, *args: Any) -> Any:
        """Call the compiled function (compiling it, or loading it, the first time); a
        kernel on few rows runs as plain Python (see the module docstring)."""
        if self.kind not in CALLABLE:
            raise TypeError(f"{self.function.__name__} is called from compiled code only")
        if self.kind == "kernel" and runs_in_python(rows_of(args)):
            try:
                with np.errstate(all="ignore"):  # numba's integers wrap silently too
                    return python_form(self)(*args)
            except OverflowError:  # a kernel whose integers must wrap (BPE's hashing)
                pass  # its outputs are written again in full by the compiled form
        return (self.jitted or jit_all(self))(*args)

    def __getattr__(self, name: str) -> Any:
        """numba's attributes of the compiled form (``signatures``), once it is made."""
        jitted = self.__dict__.get("jitted")
        if jitted is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(jitted, name)

    def __repr__(self) -> str:
        return f"<{self.kind} {self.function.__module__}.{self.function.__qualname__}>"


KINDS = ("kernel", "testable", "internal", "intrinsic", "numba")
CALLABLE = ("kernel", "testable")
"""The kinds Python may call; the others are called from compiled code only."""


def compiled(function: F) -> F:
    """Mark a kernel that Python calls: compiled to machine code at its first call,
    cached on disk, releasing the GIL (its code carries the code of its helpers)."""
    return cast(F, Lazy(function, "kernel"))


def internal(function: F) -> F:
    """Mark a helper that only kernels call: compiled once per signature, linked into its
    callers (where LLVM inlines it or not), with no Python entry and not cached on its
    own (the cached kernels hold its code)."""
    return cast(F, Lazy(function, "internal"))


def testable(function: F) -> F:
    """:func:`internal` with a Python entry, for a helper the tests also call directly."""
    return cast(F, Lazy(function, "testable"))


def in_python(python: Callable[..., Any]) -> Callable[[F], F]:
    """Give a marked helper (applied above :func:`internal` or :func:`testable`) another
    plain form than its own code: whole-array numpy for a loop that numba vectorizes
    and Python would run byte by byte. Both must return the same (the tests check)."""

    def give(marked: F) -> F:
        cast(Lazy, marked).python = python
        return marked

    return give


def intrinsic(python: Callable[..., Any]) -> Callable[[F], F]:
    """Mark a numba intrinsic (``numba.extending.intrinsic``): typing and LLVM code
    written in Python, run when a kernel that calls it is compiled; ``python`` is what
    it does, as plain Python."""

    def mark(function: F) -> F:
        return cast(F, Lazy(function, "intrinsic", python))

    return mark


def from_numba(name: str, python: Callable[..., Any]) -> Any:
    """numba's top-level ``name`` (e.g. ``carray``) for kernels to call, bound when numba
    is loaded; ``python``: the same as plain Python."""

    def attribute() -> None:
        """A name of numba's, bound when numba is loaded."""

    attribute.__name__ = attribute.__qualname__ = name
    return Lazy(attribute, "numba", python)


def bytes_at(address: int, count: int) -> Any:
    """``carray(pointer(address), count)`` as plain Python: a uint8 array over the
    memory at ``address``, not copied."""
    if count <= 0:
        return np.empty(0, dtype=np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * int(count)).from_address(int(address)))


FILES: set[str] = set()
"""The modules that define marked functions: the shared family's kernel files
(:mod:`._own`), and kernel files elsewhere that use these decorators
(``ragframe.evaluate._ranking``)."""
_MARKED: dict[int, Lazy] = {}
"""Every marked function by its id, and by the id of its numba form once made."""
_PLAIN: dict[int, Callable[..., Any]] = {}
"""Each marked function's plain form, by the marked function's id."""
_NAMESPACES: dict[str, dict[str, Any]] = {}
"""Each kernel file's names as its plain forms see them."""


def marked_as(function: Any) -> Lazy:
    """The marked function ``function`` is (or is numba's form of)."""
    return _MARKED[id(function)]


def python_form(marked: Any) -> Callable[..., Any]:
    """The plain-Python form of a marked function (see the module docstring): its own
    code over its file's names, each marked function among them (or its numba form)
    replaced by its plain form."""
    lazy = marked_as(marked)
    plain = _PLAIN.get(id(lazy))
    if plain is None:
        if lazy.python is not None:
            plain = lazy.python
        else:
            f = lazy.function
            names = _namespace(f.__module__)  # may make this one's plain form: keep it
            plain = _PLAIN.get(id(lazy)) or types.FunctionType(
                f.__code__, names, f.__name__, f.__defaults__, f.__closure__
            )
        _PLAIN[id(lazy)] = plain
    return plain


def _namespace(module: str) -> dict[str, Any]:
    """Kernel file ``module``'s names for plain forms (filled once; marked names are
    made plain on first use of the file)."""
    names = _NAMESPACES.get(module)
    if names is None:
        names = _NAMESPACES[module] = {}
        for name, value in list(vars(sys.modules[module]).items()):
            names[name] = python_form(value) if id(value) in _MARKED else value
    return names


def jit_all(first: Lazy) -> Any:
    """Replace every marked function in the loaded kernel files by numba's form of it
    (importing numba the first time); return ``first``'s."""
    with _LOCK:
        if first.jitted is None:
            from ragframe._kernels import _jit  # numba, only now

            family = _family(first.function.__module__)
            names = [name for name in sorted(FILES) if _family(name) == family]
            modules = [sys.modules[name] for name in names if name in sys.modules]
            for module in modules:
                for name, value in list(vars(module).items()):
                    if isinstance(value, Lazy):
                        if value.jitted is None:
                            value.jitted = _jit.jit(value.function, value.kind)
                            _MARKED[id(value.jitted)] = value
                        if value.kind != "kernel":  # Python calls kernels through Lazy
                            setattr(module, name, value.jitted)
        return first.jitted


def _family(module: str) -> str:
    """The files whose marked functions are made numba's together with ``module``'s:
    the shared family's (kernels call helpers across its files, :mod:`._own`), or
    ``module`` alone (a kernel file elsewhere calls only its own code)."""
    return "shared" if in_shared_family(module) else module


def frozen(array: npt.ArrayLike, dtype: npt.DTypeLike) -> Any:
    """``array`` as a kernel input: C-contiguous, of ``dtype``, read-only (a view; a copy
    only where the layout or the dtype differ), so that every input has one numba type."""
    view = np.ascontiguousarray(array, dtype=dtype).view()
    view.flags.writeable = False
    return view


def int64s(column: pl.Series) -> I64:
    """An integer column as int64 numbers for a kernel, nulls as 0 (no copy where it is
    int64 already and has no nulls)."""
    if column.null_count():
        column = column.fill_null(0)
    if column.dtype != pl.Int64:
        column = column.cast(pl.Int64)
    return column.to_numpy()
