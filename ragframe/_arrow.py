"""The one place that reads and writes Arrow string buffers, for every stage.

Polars keeps strings as Arrow *string views*: per value a 16-byte view holding the
byte length, then the bytes themselves when at most 12, else a 4-byte prefix, the
index of a data buffer and the byte offset there. Reading them in place, and writing
views that point into existing bytes, is how the kernels avoid copying text:

* :func:`view_cells` -- where each value's bytes are (buffer, position, length);
* :func:`string_addresses` -- the same as memory addresses, for compiled kernels;
* :func:`string_bytes` and :func:`content_buffer` -- a column's bytes end to end with
  offsets (one copy at most), for kernels that scan all text at once;
* :func:`string_views` -- a String Series of byte ranges of several buffers, no copy;
* :func:`strings` -- the same for ranges of one buffer of any size: past
  :data:`VIEW_BUFFER` bytes (the most a view's int32 offset reaches) it is seen as
  several overlapping buffers, so nothing is packed or copied;
* :func:`consecutive_strings` -- consecutive pieces of one buffer of any size, cut
  between pieces into buffers of at most :data:`VIEW_BUFFER` bytes (a merge's output:
  the buffers hold exactly the text the column shows).

Nulls read as empty strings everywhere here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

U8 = npt.NDArray[np.uint8]
U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

VIEW_BYTES = 16
"""Bytes per view."""
INLINE = 12
"""The longest value stored inside its view."""
VIEW_BUFFER = 2**31 - 1
"""The largest buffer a view's offset can reach into."""


def int64_lists(lengths: I64, values: I64, name: str = "") -> pl.Series:
    """A ``List(Int64)`` Series whose ``i``-th list is the next ``lengths[i]`` of
    ``values``, built from the buffers themselves: ``pa.array`` of a numpy array first
    imports pandas where it is installed, to check for its types (0.3-0.7 s, once per
    process, on every command that writes blocks).

    Example:
        >>> import numpy as np
        >>> int64_lists(np.array([2, 0, 1]), np.array([5, 6, 7])).to_list()
        [[5, 6], [], [7]]
    """
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.ascontiguousarray(values, dtype=np.int64)

    def ints(a: I64) -> pa.Array:
        return pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])

    return series(name, pa.LargeListArray.from_arrays(ints(offsets), ints(flat)))


def view_arrays(column: pl.Series) -> list[pa.Array]:
    """The column's Arrow string view arrays (Polars' own, not copied; nulls as "")."""
    if column.null_count():
        column = column.fill_null("")
    arrow = column.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]
    return [ch if ch.type == pa.string_view() else ch.cast(pa.string_view()) for ch in chunks]


class ViewCells(NamedTuple):
    """Where a string column's values are: ``length`` bytes at ``position`` in
    ``buffers[source]``. Inline values are read from their views' own buffer, which is
    among ``buffers``. ``arrays`` own the memory: keep them while the bytes are used."""

    arrays: list[pa.Array]
    buffers: list[U8]
    length: I64
    source: I64
    position: I64


def view_cells(column: pl.Series) -> ViewCells:
    """:class:`ViewCells` of a string column, read from its views (no text copied)."""
    arrays = view_arrays(column)
    buffers: list[U8] = []
    length, source, position = [], [], []
    for array in arrays:
        n, skip = len(array), array.offset
        owned = array.buffers()  # validity, views, data buffers
        raw = np.frombuffer(owned[1], dtype=np.uint8, count=VIEW_BYTES * (skip + n))
        cells = raw.view(np.uint32).reshape(-1, 4)[skip:]
        data = [np.frombuffer(b, dtype=np.uint8) for b in owned[2:] if b is not None]
        size = cells[:, 0].astype(np.int64)
        inline = size <= INLINE
        first = len(buffers)
        here = VIEW_BYTES * (skip + np.arange(n, dtype=np.int64)) + 4
        source.append(np.where(inline, first + len(data), first + cells[:, 2].astype(np.int64)))
        position.append(np.where(inline, here, cells[:, 3].astype(np.int64)))
        length.append(size)
        buffers += [*data, raw]
    return ViewCells(arrays, buffers, *(_joined(parts) for parts in (length, source, position)))


def _joined(parts: list[I64]) -> I64:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def string_addresses(column: pl.Series) -> tuple[I64, I64, ViewCells]:
    """Each value's bytes as a memory address and a length, for compiled kernels that
    read text in place. The third item owns the memory: keep it alive meanwhile."""
    cells = view_cells(column)
    base = np.array([b.ctypes.data for b in cells.buffers] + [0], dtype=np.int64)
    return base[cells.source] + cells.position, cells.length, cells


class Buffer(NamedTuple):
    """A string column's UTF-8 bytes, end to end, and where its characters are."""

    data: U8
    doc_bytes: I64
    """Byte offset of each row, then the end (``len + 1`` entries)."""
    lead: I64
    """Positions of the lead bytes of multi-byte characters."""
    cont_at: I64
    """Positions of continuation bytes."""


def string_bytes(column: pl.Series) -> tuple[U8, I64]:
    """A string column's UTF-8 bytes end to end and each row's byte offset, then the
    end (``len + 1`` offsets from 0); one copy at most, nulls as ""."""
    array = column.fill_null("").to_arrow().cast(pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if len(array) == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64)
    owned = array.buffers()
    offsets = np.frombuffer(owned[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    data = np.frombuffer(owned[2] or b"", dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data, offsets - offsets[0]


def content_buffer(column: pl.Series) -> Buffer:
    """The :class:`Buffer` of a string column (:func:`string_bytes`, and where its
    multi-byte characters are)."""
    data, offsets = string_bytes(column)
    high = np.flatnonzero(data >= 0x80)
    is_lead = data[high] >= 0xC0
    return Buffer(data, offsets, high[is_lead], high[~is_lead])


def string_views(
    buffers: Sequence[Any],
    source: I64,
    position: I64,
    length: I64,
    name: str = "",
    prefix: U32 | None = None,
) -> pl.Series:
    """A String Series of ``length[i]`` bytes at ``position[i]`` in
    ``buffers[source[i]]`` (numpy byte arrays or Arrow buffers, each at most
    :data:`VIEW_BUFFER` bytes), sharing their memory: one view per value. ``prefix``:
    each value's first 4 bytes as a little-endian word (:func:`prefix_words`), where
    the caller has them (else read here: a read of each value's bytes, which costs
    where the buffers are large and not in cache)."""
    data = [b if isinstance(b, np.ndarray) else np.frombuffer(b, dtype=np.uint8) for b in buffers]
    views = np.zeros((len(length), 4), dtype=np.uint32)
    views[:, 0] = length
    if prefix is not None:  # inline values overwrite it
        views[:, 1] = prefix
    views[:, 2] = source  # buffer index and offset; inline values overwrite both
    views[:, 3] = position
    for index, rows in _groups(source, len(data)):
        _fill(views, rows, data[index], position[rows], length[rows], prefix is None)
    owned = [None, pa.py_buffer(views), *(pa.py_buffer(b) for b in data)]
    return series(name, pa.Array.from_buffers(pa.string_view(), len(length), owned))


class _CArray:
    """An Arrow array seen only through the C data interface (:func:`series`)."""

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        schema, array = self.array.__arrow_c_array__(requested_schema)
        return schema, array


def series(name: str, array: pa.Array) -> pl.Series:
    """A Polars Series of ``array``, taken over through the C data interface as it is.
    ``pl.Series(name, array)`` first imports ``pyarrow.compute`` to coerce types none of
    ours needs (about 45 ms of a short run's start).

    Example:
        >>> series("n", pa.array([1, 2])).to_list()
        [1, 2]
    """
    return pl.Series(_CArray(array)).alias(name)


def strings(
    data: U8, begin: I64, size: I64, name: str = "", prefix: U32 | None = None
) -> pl.Series:
    """A String Series of the pieces ``data[begin[i]:begin[i] + size[i]]`` of one
    buffer, in any order, sharing its memory (``prefix``: see :func:`string_views`). A
    buffer past :data:`VIEW_BUFFER` bytes is seen as overlapping windows of that size,
    ``VIEW_BUFFER // 2`` apart, each piece in the window it starts in (a piece longer
    than half a window is copied instead)."""
    if len(data) <= VIEW_BUFFER:
        zero = np.zeros(len(begin), dtype=np.int64)
        return string_views([data], zero, begin, size, name, prefix)
    step = VIEW_BUFFER // 2
    if len(size) and int(size.max()) > VIEW_BUFFER - step:
        return _packed(data, begin, size, name)
    window = begin // step
    count = int(window.max()) + 1 if len(window) else 0
    windows = [data[k * step : k * step + VIEW_BUFFER] for k in range(count)]
    return string_views(windows, window, begin - window * step, size, name, prefix)


def consecutive_strings(data: U8, begin: I64, name: str = "") -> pl.Series:
    """A String Series of the consecutive pieces ``data[begin[i]:begin[i + 1]]`` of one
    buffer, sharing its memory: the buffer is cut between pieces into view buffers of
    at most :data:`VIEW_BUFFER` bytes, so text of any total size is never packed or
    copied (only a piece longer than :data:`VIEW_BUFFER` bytes makes it pack them)."""
    size = np.diff(begin)
    if len(size) and int(size.max()) > VIEW_BUFFER:
        return _packed(data, begin[:-1], size, name)
    source = np.zeros(len(size), dtype=np.int64)
    base = np.zeros(len(size), dtype=np.int64)
    buffers: list[U8] = []
    lo = 0
    while lo < len(size) or not buffers:  # one buffer at least, even for no pieces
        first = int(begin[lo])
        stop = max(lo, int(np.searchsorted(begin, first + VIEW_BUFFER, side="right")) - 1)
        source[lo:stop], base[lo:stop] = len(buffers), first
        buffers.append(data[first : int(begin[stop])])
        lo = stop
    return string_views(buffers, source, begin[:-1] - base, size, name)


def _packed(data: U8, begin: I64, size: I64, name: str) -> pl.Series:
    """:func:`strings` by copying the pieces into one large-string array."""
    offsets = np.zeros(len(begin) + 1, dtype=np.int64)
    np.cumsum(size, out=offsets[1:])
    rows = np.repeat(begin - offsets[:-1], size) + np.arange(int(offsets[-1]), dtype=np.int64)
    array = pa.LargeStringArray.from_buffers(
        len(begin), pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data[rows]))
    )
    return series(name, array)


def _groups(source: I64, count: int) -> Iterator[tuple[int, slice | I64]]:
    """The values of each buffer: a slice when already grouped (the usual case)."""
    grouped = bool(np.all(source[:-1] <= source[1:]))
    order = None if grouped else np.argsort(source, kind="stable")
    bounds = np.searchsorted(source if order is None else source[order], np.arange(count + 1))
    for index in range(count):
        lo, hi = int(bounds[index]), int(bounds[index + 1])
        if lo < hi:
            yield index, slice(lo, hi) if order is None else order[lo:hi]


_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(5)], dtype=np.uint32)
"""``_LOW_BYTES[n]`` keeps the first ``n`` bytes of a little-endian 4-byte word."""


def prefix_words(data: U8, at: I64) -> U32:
    """The 4 bytes at each of ``at`` in ``data`` as a little-endian word, read unaligned
    (0 where fewer than 4 bytes are left: only inline values, which hold all theirs).

    Example:
        >>> import numpy as np
        >>> prefix_words(np.frombuffer(b"abcdef", dtype=np.uint8), np.array([0, 2, 5])).tolist()
        [1684234849, 1717920867, 0]
    """
    if len(data) < 4:
        return np.zeros(len(at), dtype=np.uint32)
    words = np.ndarray((len(data) - 3,), dtype=np.uint32, buffer=data, strides=(1,))
    return np.where(at < len(words), words[np.minimum(at, len(words) - 1)], 0).astype(np.uint32)


def _fill(
    views: npt.NDArray[np.uint32],
    rows: slice | I64,
    data: U8,
    at: I64,
    length: I64,
    prefix: bool = True,
) -> None:
    """The bytes the views ``rows`` (all into ``data`` at ``at``) hold themselves: the
    4-byte prefix (with ``prefix``; else set already), or the whole value when inline:
    three 4-byte words read unaligned and masked to the value's length (per-byte index
    arrays cost twelve times more memory, and the time of its page faults)."""
    if isinstance(rows, slice):
        target, rows = views[rows], np.arange(rows.stop - rows.start)
    else:
        target = views
    if len(data) >= 4:  # the first 4 bytes, read unaligned; inline values overwrite them
        words = np.ndarray((len(data) - 3,), dtype=np.uint32, buffer=data, strides=(1,))
        if prefix:
            target[rows, 1] = words[np.minimum(at, len(words) - 1)]
    short = np.flatnonzero(length <= INLINE)
    near_end = at[short] + INLINE > len(data)
    if len(data) >= INLINE and not near_end.all():
        fast = short[~near_end]
        place, start, size = rows[fast], at[fast], length[fast]
        for k in range(INLINE // 4):
            kept = np.clip(size - 4 * k, 0, 4)
            target[place, 1 + k] = words[start + 4 * k] & _LOW_BYTES[kept]
    slow = short[near_end]
    if len(slow):  # the last values of the buffer: byte by byte
        span = np.arange(INLINE)
        picks = np.minimum(at[slow, None] + span, max(len(data) - 1, 0))
        inline = np.where(span < length[slow, None], data[picks] if len(data) else 0, 0)
        target.view(np.uint8).reshape(-1, VIEW_BYTES)[rows[slow], 4:] = inline.astype(np.uint8)
