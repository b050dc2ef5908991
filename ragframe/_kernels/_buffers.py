"""Reading Arrow string buffers in place from compiled code: a pointer at an address,
a row's UTF-8 bytes as an array, prefetching the next rows' bytes, and where the
strings of some rows of a column are (:func:`row_views`).

The addresses come from :func:`ragframe._arrow.string_addresses` or :func:`row_views`
(in the kernels' wrappers); the buffers they point into must stay alive while a kernel
runs.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import polars as pl

from ragframe._arrow import INLINE, VIEW_BYTES, view_arrays
from ragframe._kernels._ahead import sample
from ragframe._kernels._compile import (
    I64,
    U8,
    bytes_at,
    compiled,
    from_numba,
    frozen,
    in_python,
    internal,
    intrinsic,
    testable,
)

carray = from_numba("carray", bytes_at)
"""numba's ``carray``: an array over memory at a pointer."""


@intrinsic(int)
def pointer(typingctx: Any, address: Any) -> Any:
    """The byte pointer at an integer address (an Arrow buffer's), for ``carray``."""
    from numba import types  # run while a kernel compiles: numba is loaded

    del typingctx, address
    kind = types.CPointer(types.uint8)  # type: ignore[no-untyped-call]
    sig = kind(types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        return builder.inttoptr(args[0], context.get_value_type(kind))

    return sig, codegen


def _no_prefetch(address: int) -> None:
    """:func:`prefetch` in plain Python: nothing."""


@intrinsic(_no_prefetch)
def prefetch(typingctx: Any, address: Any) -> Any:
    """Ask the CPU to start loading the cache line at an integer address (no effect on
    results: the kernels read texts in an order they know ahead, so the next texts'
    bytes can be on their way while the current one is compared)."""
    from llvmlite import ir  # run while a kernel compiles: numba is loaded
    from numba import types

    del typingctx, address
    byte = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        )
        read, keep, data = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(function, [builder.inttoptr(args[0], byte), read, keep, data])
        return context.get_dummy_value()

    return types.void(types.int64), codegen


def _u64_python(address: int) -> np.uint64:
    """:func:`load_u64` in plain Python."""
    return np.uint64(ctypes.c_uint64.from_address(int(address)).value)


@intrinsic(_u64_python)
def load_u64(typingctx: Any, address: Any) -> Any:
    """The 8 bytes at an integer address (any alignment) as a little-endian uint64: one
    load where a loop over the bytes takes eight, for filters that compare 8 bytes of
    text at every place."""
    from llvmlite import ir  # run while a kernel compiles: numba is loaded
    from numba import types

    del typingctx, address
    word = ir.IntType(64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del context, signature
        return builder.load(builder.inttoptr(args[0], word.as_pointer()), align=1)

    return types.uint64(types.int64), codegen


ONES = np.uint64(0x0101010101010101)
"""A byte 1 in each of a word's 8 bytes: ``b * ONES`` repeats byte ``b``."""
HIGH = np.uint64(0x8080808080808080)
"""The top bit of each of a word's 8 bytes."""
_SEVEN = np.uint64(0x7F7F7F7F7F7F7F7F)


@testable
def zero_bytes(x: np.uint64) -> np.uint64:
    """The top bit of each zero byte of ``x`` (exact: no borrow between bytes), for
    filters over words of :func:`load_u64`."""
    return ~(((x & _SEVEN) + _SEVEN) | x | _SEVEN)


PREFETCH_AHEAD = 4
"""How many rows ahead the walk prefetches texts."""


@internal
def prefetch_text(address: I64, length: I64, row: int) -> None:
    """Prefetch the first 512 bytes of row ``row``'s text (nothing past the end)."""
    if row < len(address):
        start = address[row]
        for offset in range(0, min(length[row], 512), 64):
            prefetch(start + offset)  # type: ignore[call-arg]


@internal
def read_ahead(address: I64, length: I64, row: int, ahead: int) -> U8:
    """Row ``row``'s bytes (:func:`text_at`), prefetching those ``ahead`` rows on: for
    a kernel that reads the rows' texts in row order."""
    prefetch_text(address, length, row + ahead)
    return text_at(address, length, row)


def _copy_python(target: int, source: int, count: int) -> None:
    """:func:`copy_at` in plain Python."""
    if count > 0:
        ctypes.memmove(int(target), int(source), int(count))


@intrinsic(_copy_python)
def copy_at(typingctx: Any, target: Any, source: Any, count: Any) -> Any:
    """Copy ``count`` bytes from the integer address ``source`` to ``target`` (not
    overlapping): one ``memcpy``, where a loop over the bytes is compiled to a byte at a
    time (a merge copies every chunk it reads: 7 of its 35 ms on issue 27's workload)."""
    from llvmlite import ir  # run while a kernel compiles: numba is loaded
    from numba import types
    from numba.core import cgutils

    del typingctx, target, source, count
    byte = ir.IntType(8).as_pointer()

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        to, of = (builder.inttoptr(arg, byte) for arg in args[:2])
        cgutils.raw_memcpy(builder, to, of, args[2], 1)  # type: ignore[no-untyped-call]
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64), codegen


def _copy_bytes_numpy(source: U8, target: U8) -> None:
    """:func:`copy_bytes` in whole-array numpy (its plain form)."""
    target[: len(source)] = source


@in_python(_copy_bytes_numpy)
@internal
def copy_bytes(source: U8, target: U8) -> None:
    """``source`` into the start of ``target`` (at least as long; not overlapping)."""
    if len(source) > 0:
        copy_at(target.ctypes.data, source.ctypes.data, len(source))  # type: ignore[call-arg]


@internal
def text_at(address: I64, length: I64, row: int) -> U8:
    """Row ``row``'s UTF-8 bytes, read in place from its Arrow buffer."""
    return carray(pointer(address[row]), length[row])  # type: ignore[no-any-return,call-arg]


@internal
def longest_text(length: I64) -> int:
    """The longest row's length in bytes, at least 1: the size of a kernel's scratch
    buffers. A loop rather than ``length.max()``, whose compiled form pulls in numba's
    whole array-math module on every load from the cache."""
    longest = 1
    for i in range(len(length)):
        if length[i] > longest:
            longest = length[i]
    return longest


@internal
def _u32_at(address: int) -> int:
    """The little-endian uint32 at ``address`` (a view's field)."""
    b = carray(pointer(address), 4)  # type: ignore[call-arg]
    return int(b[0]) | (int(b[1]) << 8) | (int(b[2]) << 16) | (int(b[3]) << 24)


@internal
def _chunk_of(chunk_start: I64, last: int, r: int) -> int:
    """The chunk (``0..last``) that holds row ``r``: a binary search of the chunks'
    first rows (``np.searchsorted`` would pull numba's array-math module into every
    load of the kernel from the cache: 0.19 s of a run's start)."""
    lo, hi = 0, last
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if chunk_start[mid] <= r:
            lo = mid
        else:
            hi = mid - 1
    return lo


ViewTable = tuple[I64, I64, I64, I64]
"""Where a string-view column's rows are (:func:`view_table`): each chunk's first row
(and one past the last), its first view's address, its first buffer in ``bases``, and
``bases``, every data buffer's address."""


@internal
def _view_address(where: ViewTable, r: int) -> tuple[int, int]:
    """Row ``r``'s view: its address and its chunk."""
    chunk_start, chunk_views = where[0], where[1]
    k = _chunk_of(chunk_start, len(chunk_views) - 1, r)
    return chunk_views[k] + VIEW_BYTES * (r - chunk_start[k]), k


@internal
def view_at(where: ViewTable, r: int) -> tuple[int, int]:
    """Where row ``r``'s string is (-1: no row, read as ""): its bytes' address and its
    byte length, from its view (16 bytes: the length, then the bytes when at most 12,
    else a prefix, the buffer index and the offset)."""
    if r < 0:
        return 0, 0
    view, k = _view_address(where, r)
    size = _u32_at(view)
    if size <= INLINE:
        return view + 4, size
    return where[3][where[2][k] + _u32_at(view + 8)] + _u32_at(view + 12), size


@internal
def prefetch_view(where: ViewTable, r: int) -> None:
    """Ask for row ``r``'s view ahead of :func:`view_at` (-1: nothing): the rows' views
    are scattered reads, missed in every cache when the column is large or cold."""
    if r >= 0:
        prefetch(_view_address(where, r)[0])  # type: ignore[call-arg]


@compiled
def _row_views(where: ViewTable, row: I64, out: I64, ahead: int) -> None:
    """Where the strings of rows ``row`` of a string-view column are (:func:`view_at`):
    their bytes' addresses into ``out[0]``, their byte lengths into ``out[1]``; the
    view of the row ``ahead`` rows on prefetched (0: none)."""
    for i in range(len(row)):
        if ahead > 0 and i + ahead < len(row):
            prefetch_view(where, row[i + ahead])
        out[0, i], out[1, i] = view_at(where, row[i])


VIEWS_AHEAD = 64
"""How many rows ahead :func:`row_views` prefetches a row's view (issue 27's walk rows, caches
evicted first: inline 2.0 -> 1.3 ms, store 1.45 -> 1.2; 32 and 128 in between)."""


def view_table(column: pl.Series) -> tuple[ViewTable, list[Any]]:
    """A String ``column``'s :data:`ViewTable` (nulls read ""), and the arrays that own
    the memory (keep them while its addresses are read)."""
    arrays = view_arrays(column)
    bases: list[int] = []
    starts, views, firsts = [0], [], []
    for array in arrays:
        owned = array.buffers()  # validity, views, data buffers
        firsts.append(len(bases))
        bases += [b.address for b in owned[2:] if b is not None] or [0]
        views.append(owned[1].address + VIEW_BYTES * array.offset if len(array) else 0)
        starts.append(starts[-1] + len(array))
    if not arrays:  # an empty column: every row is -1
        starts, views, firsts, bases = [0, 0], [0], [0], [0]
    where = tuple(frozen(a, np.int64) for a in (starts, views, firsts, bases))
    return (where[0], where[1], where[2], where[3]), arrays


def row_views(column: pl.Series, row: I64) -> tuple[I64, I64, list[Any]]:
    """Where the strings of rows ``row`` of a String ``column`` are (-1: no row, read as
    ""; a null reads ""): each one's UTF-8 bytes' address and byte length, read from the
    column's views in place, and the arrays that own the memory (keep them while the
    addresses are read). One pass over ``row``: nothing is computed for the column's
    other rows (a chunk store's text column, read for the few rows a kernel needs).

    Example:
        >>> address, length, alive = row_views(pl.Series(["ab", "a long string here"]),
        ...     np.array([1, -1, 0]))
        >>> length.tolist()
        [18, 0, 2]
    """
    where, arrays = view_table(column)
    out = np.zeros((2, len(row)), dtype=np.int64)
    _row_views(where, frozen(row, np.int64), out, VIEWS_AHEAD)
    return out[0], out[1], arrays


@sample("_row_views")
def _sample_row_views() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    row_views(pl.Series(["a"]), np.zeros(1, dtype=np.int64))
