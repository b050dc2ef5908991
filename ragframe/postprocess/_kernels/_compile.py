"""How the postprocess kernels are compiled: by numba, at their first call, never at
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
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
import polars as pl

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


class Lazy:
    """A function of a kernel file, plain Python until numba is needed (see the module
    docstring); ``kind`` is one of :data:`KINDS`."""

    def __init__(self, function: Callable[..., Any], kind: str) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.kind = kind
        self.jitted: Any = None

    def __call__(self, *args: Any) -> Any:
        """Call the compiled function (compiling it, or loading it, the first time)."""
        if self.kind not in CALLABLE:
            raise TypeError(f"{self.function.__name__} is called from compiled code only")
        return (self.jitted or jit_all(self))(*args)

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


def intrinsic(function: F) -> F:
    """Mark a numba intrinsic (``numba.extending.intrinsic``): typing and LLVM code
    written in Python, run when a kernel that calls it is compiled."""
    return cast(F, Lazy(function, "intrinsic"))


def from_numba(name: str) -> Any:
    """numba's top-level ``name`` (e.g. ``carray``) for kernels to call, bound when numba
    is loaded."""

    def attribute() -> None:
        """A name of numba's, bound when numba is loaded."""

    attribute.__name__ = attribute.__qualname__ = name
    return Lazy(attribute, "numba")


def jit_all(first: Lazy) -> Any:
    """Replace every marked function in the loaded kernel files by numba's form of it
    (importing numba the first time); return ``first``'s."""
    with _LOCK:
        if first.jitted is None:
            from ragframe.postprocess._kernels import _jit  # numba, only now

            package = __name__.rpartition(".")[0] + "."
            modules = [m for n, m in list(sys.modules.items()) if n.startswith(package)]
            for module in modules:
                for name, value in list(vars(module).items()):
                    if isinstance(value, Lazy):
                        if value.jitted is None:
                            value.jitted = _jit.jit(value.function, value.kind)
                        setattr(module, name, value.jitted)
        return first.jitted


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
