"""The windowing engine shared by :func:`ragframe.windows` and :func:`ragframe.chunk`.

Windows over a text of ``n`` characters start at ``0, step, 2*step, ...`` with
``step = window_chars - overlap_chars``; each is at most ``window_chars`` long. The
iteration stops at the first window that reaches the end of the text, so the last
window always ends at ``n`` and no window lies entirely inside the previous window's
overlap. The count is ``0`` for an empty text, ``1`` when ``n <= window_chars`` and
``1 + ceil((n - window_chars) / step)`` otherwise.

Offsets are Unicode code points (``str.len_chars``), never bytes.

Why a kernel: consecutive windows overlap, so every character is in up to
``window / step`` windows, and a plain Arrow string array cannot share those bytes
(its offsets must be monotonic). Arrow's *string view* layout, Polars' own string
representation, can: each value is a 16-byte view (byte length, then the bytes inline
if at most 12, else a 4-byte prefix, a buffer index and a byte offset). No Polars
expression builds such views for character windows: ``bin.slice`` is O(1) per window
but copies it (and the cast back to String validates it), and ``str.slice`` shares the
buffer but finds a character offset by scanning the string from its start, which is
quadratic over a long text's windows. So :func:`slide` is one
``LazyFrame.map_batches`` node whose kernel, :func:`_cut`, builds with numpy, over
whole columns, one view per window pointing into the texts' own data buffers, and
hands the array back to Polars (``pl.Series`` imports it without copying). The kernel
is row-local (each text's windows depend on that text only), so it runs on whole
frames and on streaming batches alike.

Views locate bytes, windows are counted in characters. For an ASCII text (as many
bytes as characters) the two agree. For the other texts, copied once into one
contiguous buffer, a bit per byte marks where a character starts (every byte but a
UTF-8 continuation byte ``0b10xxxxxx``): 512-byte runs without a high bit are all
starts, the others are tested byte by byte. Character ``c`` starts at the ``c``-th set
bit, found from per-word popcounts and a binary search inside the word. The scan runs
in blocks of :func:`_block_bytes` bytes to bound its memory.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import string_bytes, string_views, view_cells
from ragframe.schema import (
    END_CHAR,
    START_CHAR,
    TEXT,
)

Ints = npt.NDArray[np.int64]

_RUN = 512
"""Bytes of non-ASCII text checked at once for being all ASCII."""


def _block_bytes(window: int) -> int:
    """Bytes of non-ASCII text scanned at once; any size >= 1 gives the same windows.

    The scan holds about 1.2 bytes of temporaries per byte of a block. ``window`` lets
    tests size blocks relative to the window (the smallest blocks stress the seams).
    """
    return max(1 << 22, window)


def _window_count(length: Ints, window: int, step: int) -> Ints:
    """Number of windows over texts of ``length`` characters (see module docstring)."""
    more = 1 + (length - window + step - 1) // step
    return np.where(length == 0, 0, np.where(length <= window, 1, more))


def _select_table() -> npt.NDArray[np.uint8]:
    """``table[v, r]``: position of the ``r``-th set bit of byte ``v`` (8 if none)."""
    table = np.full((256, 8), 8, dtype=np.uint8)
    for value in range(256):
        ones = [bit for bit in range(8) if value >> bit & 1]
        table[value, : len(ones)] = ones
    return table


_SELECT = _select_table()


def _select(value: npt.NDArray[np.uint64], rank: Ints) -> Ints:
    """Position of the ``rank``-th set bit of each 64-bit ``value`` (binary search)."""
    at = np.zeros(len(value), dtype=np.int64)
    for width in (32, 16, 8):
        low = np.bitwise_count(value & np.uint64((1 << width) - 1)).astype(np.int64)
        high = rank >= low
        rank = rank - np.where(high, low, 0)
        value = np.where(high, value >> np.uint64(width), value)
        at += np.where(high, width, 0)
    at += _SELECT[value & np.uint64(0xFF), rank]
    return at


def _nth_lead(words: npt.NDArray[np.uint64], below: Ints, ranks: Ints) -> Ints:
    """Position of the ``ranks``-th set bit of ``words`` (little-endian bit order).

    ``below`` counts the set bits before each word; every rank is below the total.
    In a word of ASCII bytes (all bits set) the position is plain arithmetic.
    """
    word = np.searchsorted(below, ranks, side="right") - 1
    rest, value = ranks - below[word], words[word]
    at = 64 * word + rest
    mixed = np.flatnonzero(value != np.uint64(2**64 - 1))
    at[mixed] = 64 * word[mixed] + _select(value[mixed], rest[mixed])
    return at


def _lead_bits(piece: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """One bit per byte of ``piece``, set where a character starts; 64 bytes per word.

    A byte starts a character unless it is a continuation byte (``0b10xxxxxx``,
    ``-128..-65`` as int8). Runs of ``_RUN`` bytes without a high bit (found by OR-ing
    their 8-byte words) are all starts; only the other runs are tested byte by byte.
    Bits past the end of ``piece`` are clear.
    """
    whole = len(piece) // _RUN * _RUN
    bits = np.zeros(-(-len(piece) // 64) * 8, dtype=np.uint8)
    runs = piece[:whole].reshape(-1, _RUN)
    high = np.bitwise_or.reduce(runs.view(np.uint64), axis=1) & np.uint64(0x8080808080808080)
    mixed = np.flatnonzero(high)
    per_run = bits[: whole // 8].reshape(-1, _RUN // 8)
    per_run[...] = 0xFF
    per_run[mixed] = np.packbits(runs[mixed].view(np.int8) >= -64, axis=1, bitorder="little")
    tail = np.packbits(piece[whole:].view(np.int8) >= -64, bitorder="little")
    bits[whole // 8 : whole // 8 + len(tail)] = tail
    return bits.view(np.uint64)


def _char_starts(data: npt.NDArray[np.uint8], queries: Sequence[Ints], block: int) -> list[Ints]:
    """Byte position in UTF-8 ``data`` of each queried character index.

    Each query array must be non-decreasing; the index equal to the number of
    characters maps to ``len(data)``. The scan runs in blocks of ``block`` bytes.
    """
    found = [np.full(len(q), len(data), dtype=np.int64) for q in queries]
    seen = 0
    for at in range(0, len(data), block):
        piece = data[at : at + block]
        words = _lead_bits(piece)
        counts = np.bitwise_count(words).astype(np.int64)
        below = np.cumsum(counts) - counts
        total = int(below[-1] + counts[-1])
        for query, out in zip(queries, found, strict=True):
            lo, hi = np.searchsorted(query, (seen, seen + total))
            out[lo:hi] = at + _nth_lead(words, below, query[lo:hi] - seen)
        seen += total
    return found


def _non_ascii(
    column: pl.Series, chars: Ints, nbytes: Ints, doc: Ints, start: Ints, end: Ints, window: int
) -> tuple[Ints, Ints, Ints]:
    """The windows of non-ASCII texts: their rows, and their byte bounds in the text."""
    wide = chars != nbytes
    rows = np.flatnonzero(wide[doc])
    if not len(rows):
        return rows, rows, rows
    picked = np.flatnonzero(wide)
    data, offsets = string_bytes(column.gather(picked))
    owner = (np.cumsum(wide) - 1)[doc[rows]]  # index among the picked texts
    chars_before = (np.cumsum(chars[picked]) - chars[picked])[owner]
    queries = (chars_before + start[rows], chars_before + end[rows])
    first, last = _char_starts(data, queries, _block_bytes(window))
    return rows, first - offsets[owner], last - offsets[owner]


def _windows(chars: Ints, window: int, step: int) -> tuple[Ints, Ints, Ints, Ints]:
    """Per window: its text's row, its index there, first and past-last character."""
    count = _window_count(chars, window, step)
    doc = np.repeat(np.arange(len(chars), dtype=np.int64), count)
    k = np.arange(len(doc), dtype=np.int64)
    k -= np.repeat(np.cumsum(count) - count, count)
    start = k * step
    end = start + window
    np.minimum(end, chars[doc], out=end)
    return doc, k, start, end


def _cut(
    frame: pl.DataFrame, *, keys: Sequence[str], index: str, window: int, step: int
) -> pl.DataFrame:
    """The kernel: every window of every row of ``frame`` (keys, ``c.T_TEXT``, ``c.T_LENGTH``)."""
    column = frame[c.T_TEXT]
    cells = view_cells(column)
    nbytes, source, at = cells.length, cells.source, cells.position
    chars = frame[c.T_LENGTH].to_numpy().astype(np.int64)
    doc, k, start, end = _windows(chars, window, step)
    position, length = at[doc] + start, end - start  # in ASCII texts bytes are characters
    rows, first, last = _non_ascii(column, chars, nbytes, doc, start, end, window)
    position[rows] = at[doc[rows]] + first
    length[rows] = last - first
    text = string_views(cells.buffers, source[doc], position, length, TEXT)
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
    texts = frame.select(*keys, body.alias(c.T_TEXT), body.str.len_chars().alias(c.T_LENGTH))
    known = texts.collect_schema()
    schema = pl.Schema(
        [(key, known[key]) for key in keys]
        + [(index, pl.Int64), (START_CHAR, pl.Int64), (END_CHAR, pl.Int64), (TEXT, pl.String)]
    )
    kernel = functools.partial(
        _cut, keys=tuple(keys), index=index, window=window, step=window - overlap
    )
    return texts.map_batches(kernel, schema=schema, streamable=True)
