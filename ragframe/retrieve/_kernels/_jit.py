"""How this package's kernel files compile: one call per file,
``kernel, helper = decorators(__file__)``.

``kernel`` compiles a function Python calls (numba's ``cache=True``, kept in ragframe's
per-user cache folder and keyed on the source of every file of this folder:
``keep_folder_in_user_cache``; the GIL released). ``helper`` compiles a function only
kernels call: no Python entry and no cache of its own (the cached kernels hold its code,
so a kernel calling a helper of another file here is compiled afresh when that file
changes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import numba as nb

from ragframe._kernels import _jit  # noqa: F401 -- installs the per-user cache's locator
from ragframe._kernels._own import keep_folder_in_user_cache

F = TypeVar("F", bound=Callable[..., Any])


class Decorator(Protocol):
    """A decorator that compiles a function and keeps its signature (for the checker)."""

    def __call__(self, function: F, /) -> F: ...


def decorators(py_file: str) -> tuple[Decorator, Decorator]:
    """The ``kernel`` and ``helper`` decorators for the kernel file ``py_file``, whose
    compiled kernels are kept in the per-user cache (never beside the file, which may
    be in ``site-packages``)."""
    keep_folder_in_user_cache(py_file)
    kernel = nb.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
    helper = nb.njit(
        nogil=True,
        boundscheck=False,
        error_model="numpy",
        no_cpython_wrapper=True,  # type: ignore[call-overload]  # not in numba's stubs
        no_cfunc_wrapper=True,
    )
    return cast(Decorator, kernel), cast(Decorator, helper)
