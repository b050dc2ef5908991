"""The windowing engine shared by :func:`ragframe.windows` and :func:`ragframe.chunk`.

Windows over a text of ``n`` characters start at ``0, step, 2*step, ...`` with
``step = window_chars - overlap_chars``; each is at most ``window_chars`` long. The
iteration stops at the first window that reaches the end of the text, so the last
window always ends at ``n`` and no window lies entirely inside the previous window's
overlap. The count is ``0`` for an empty text, ``1`` when ``n <= window_chars`` and
``1 + ceil((n - window_chars) / step)`` otherwise.

Offsets are Unicode code points (``str.len_chars``), never bytes.

Why a kernel: consecutive windows overlap, so every character is in up to
``window / step`` windows. Polars expressions (``str.slice``, ``bin.slice``) copy each
window into a new buffer, and a plain Arrow string array cannot share the bytes either
(its offsets must be monotonic). Arrow's *string view* layout, Polars' own string
representation, can: each value is a 16-byte view (byte length, then the bytes inline
if at most 12, else a 4-byte prefix, a buffer index and a byte offset). So
:func:`slide` is one ``LazyFrame.map_batches`` node whose kernel, :func:`_cut`, builds
with numpy, over whole columns, one view per window pointing into the texts' own data
buffers, and hands the array back to Polars without copying any text. The kernel is
row-local (each text's windows depend on that text only), so it runs on whole frames
and on streaming batches alike.

Views locate bytes, windows are counted in characters. For an ASCII text (as many
bytes as characters) the two agree. For any other text the character boundaries come
from one numpy scan of its UTF-8 bytes: a byte starts a character unless it is a
continuation byte (``0b10xxxxxx``), so the ``c``-th non-continuation byte is where
character ``c`` starts. The non-ASCII texts are copied once into one contiguous buffer
for this scan, which runs in blocks of :func:`_block_bytes` bytes to bound its memory.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe.schema import END_CHAR, START_CHAR, TEXT, TMP

Ints = npt.NDArray[np.int64]

_TEXT = f"{TMP}text"
_LEN = f"{TMP}len"
_VIEW = 16
"""Bytes per view."""
_INLINE = 12
"""The longest value stored inside its view."""


def _block_bytes(window: int) -> int:
    """Bytes of non-ASCII text scanned at once; any size >= 1 gives the same windows.

    The scan holds about 9 bytes of temporaries per byte of a block. ``window`` lets
    tests size blocks relative to the window (the smallest blocks stress the seams).
    """
    return max(1 << 22, window)


def _window_count(length: Ints, window: int, step: int) -> Ints:
    """Number of windows over texts of ``length`` characters (see module docstring)."""
    more = 1 + (length - window + step - 1) // step
    return np.where(length == 0, 0, np.where(length <= window, 1, more))


def _char_starts(data: npt.NDArray[np.uint8], queries: Sequence[Ints], block: int) -> list[Ints]:
    """Byte position in UTF-8 ``data`` of each queried character index.

    Each query array must be non-decreasing; the index equal to the number of
    characters maps to ``len(data)``.
    """
    found = [np.full(len(q), len(data), dtype=np.int64) for q in queries]
    seen = 0
    for at in range(0, len(data), block):
        lead = np.flatnonzero(data[at : at + block].view(np.int8) >= -64)  # not 0b10xxxxxx
        for query, out in zip(queries, found, strict=True):
            lo, hi = np.searchsorted(query, (seen, seen + len(lead)))
            out[lo:hi] = at + lead[query[lo:hi] - seen]
        seen += len(lead)
    return found


def _byte_bounds(
    column: pl.Series, chars: Ints, nbytes: Ints, doc: Ints, start: Ints, end: Ints, window: int
) -> tuple[Ints, Ints]:
    """Byte offsets, within each text, of the windows' first and past-last characters."""
    wide = chars != nbytes  # texts that are not ASCII
    if not wide.any():
        return start, end
    picked = np.flatnonzero(wide)
    stream = column.gather(picked).to_arrow(compat_level=pl.CompatLevel.oldest())
    offsets = np.frombuffer(stream.buffers()[1], dtype=np.int64, count=len(picked) + 1)
    data = np.frombuffer(stream.buffers()[2], dtype=np.uint8, count=int(offsets[-1]))
    rank = np.cumsum(wide) - 1
    char_base = (np.cumsum(chars[picked]) - chars[picked])[rank]
    rows = np.flatnonzero(wide[doc])
    first, last = doc[rows], doc[rows]
    queries = (char_base[first] + start[rows], char_base[last] + end[rows])
    lo, hi = _char_starts(data, queries, _block_bytes(window))
    byte_start, byte_end = start.copy(), end.copy()
    byte_start[rows] = lo - offsets[rank[first]]
    byte_end[rows] = hi - offsets[rank[last]]
    return byte_start, byte_end


def _sources(array: pa.Array) -> tuple[list[npt.NDArray[np.uint8]], Ints, Ints, Ints]:
    """The bytes every view may point into, and per text: length, source and position.

    Sources are the array's data buffers, then its views buffer (for inline texts).
    """
    n, skip = len(array), array.offset
    buffers = array.buffers()
    raw = np.frombuffer(buffers[1], dtype=np.uint8, count=_VIEW * (skip + n))
    views = raw.view(np.uint32).reshape(-1, 4)[skip:].astype(np.int64)
    data = [np.frombuffer(b, dtype=np.uint8) for b in buffers[2:]]
    length = views[:, 0]
    inline = length <= _INLINE
    source = np.where(inline, len(data), views[:, 2])
    at = np.where(inline, _VIEW * (skip + np.arange(n)) + 4, views[:, 3])
    return [*data, raw], length, source, at


def _fill(
    views: npt.NDArray[np.uint32], rows: Ints, data: npt.NDArray[np.uint8], source: int, at: Ints
) -> None:
    """Write the views of windows ``rows``, which all point into ``data`` at ``at``."""
    length = views[rows, 0].astype(np.int64)
    long = length > _INLINE
    if long.any():
        words = np.ndarray((len(data) - 3,), dtype=np.uint32, buffer=data, strides=(1,))
        views[rows[long], 1] = words[at[long]]  # the first 4 bytes, unaligned
        views[rows[long], 2] = source
        views[rows[long], 3] = at[long]
    short = ~long
    if short.any():
        span = np.arange(_INLINE)
        picks = np.minimum(at[short, None] + span, len(data) - 1)
        inline = np.where(span < length[short, None], data[picks], 0).astype(np.uint8)
        views.view(np.uint8).reshape(-1, _VIEW)[rows[short], 4:] = inline


def _view_array(column: pl.Series, doc: Ints, begin: Ints, end: Ints) -> pa.Array:
    """A string view array of the byte ranges ``begin:end`` of texts ``doc``."""
    array = column.to_arrow(compat_level=pl.CompatLevel.newest())
    if array.type != pa.string_view():
        array = array.cast(pa.string_view())
    sources, _, source, at = _sources(array)
    views = np.zeros((len(doc), 4), dtype=np.uint32)
    views[:, 0] = end - begin
    window_source, position = source[doc], at[doc] + begin
    order = np.argsort(window_source, kind="stable")
    bounds = np.searchsorted(window_source[order], np.arange(len(sources) + 1))
    for index, data in enumerate(sources):
        rows = order[bounds[index] : bounds[index + 1]]
        if len(rows):
            _fill(views, rows, data, index, position[rows])
    buffers = [None, pa.py_buffer(views), *array.buffers()[2:]]
    return pa.Array.from_buffers(pa.string_view(), len(doc), buffers)


def _cut(
    frame: pl.DataFrame, *, keys: Sequence[str], index: str, window: int, step: int
) -> pl.DataFrame:
    """The kernel: every window of every row of ``frame`` (keys, ``_TEXT``, ``_LEN``)."""
    column = frame[_TEXT]
    chars = frame[_LEN].to_numpy().astype(np.int64)
    nbytes = column.str.len_bytes().to_numpy().astype(np.int64)
    count = _window_count(chars, window, step)
    doc = np.repeat(np.arange(len(chars), dtype=np.int64), count)
    k = np.arange(len(doc), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    start = k * step
    end = np.minimum(start + window, chars[doc])
    begin, stop = _byte_bounds(column, chars, nbytes, doc, start, end, window)
    text = pl.Series(TEXT, _view_array(column, doc, begin, stop))
    return frame.select(keys)[doc].with_columns(
        pl.Series(index, k), pl.Series(START_CHAR, start), pl.Series(END_CHAR, end), text
    )


def slide(
    frame: pl.LazyFrame,
    *,
    text: str,
    keys: Sequence[str],
    index: str,
    window: int,
    overlap: int,
) -> pl.LazyFrame:
    """Every window of every row's ``text``: ``keys``, ``index``, offsets, ``text``.

    Each input row is one text; a null text is empty and, like an empty text, has no
    windows. Rows keep their input order, windows ascend within a row. ``index``,
    ``start_char`` and ``end_char`` are Int64. The output's texts share the input's
    string buffers (see the module docstring).
    """
    body = pl.col(text).fill_null("")
    texts = frame.select(*keys, body.alias(_TEXT), body.str.len_chars().alias(_LEN))
    known = texts.collect_schema()
    schema = pl.Schema(
        [(key, known[key]) for key in keys]
        + [(index, pl.Int64), (START_CHAR, pl.Int64), (END_CHAR, pl.Int64), (TEXT, pl.String)]
    )
    kernel = functools.partial(
        _cut, keys=tuple(keys), index=index, window=window, step=window - overlap
    )
    return texts.map_batches(kernel, schema=schema, streamable=True)
