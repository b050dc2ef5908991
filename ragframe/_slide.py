"""The windowing engine shared by :func:`ragframe.windows` and :func:`ragframe.chunk`.

Windows over a text of ``n`` characters start at ``0, step, 2*step, ...`` with
``step = window_chars - overlap_chars``; each is at most ``window_chars`` long. The
iteration stops at the first window that reaches the end of the text, so the last
window always ends at ``n`` and no window lies entirely inside the previous window's
overlap. The count is ``0`` for an empty text, ``1`` when ``n <= window_chars`` and
``1 + ceil((n - window_chars) / step)`` otherwise.

Offsets are Unicode code points (``str.len_chars``), never bytes.

How it stays linear: Polars slices a string by characters by scanning it from the
start, so slicing every window straight out of a long text would cost
``O(n**2 / step)``. Instead:

* an ASCII text (characters are bytes) is sliced as binary: ``O(1)`` per window;
* any other text is cut into blocks of about :func:`_block_bytes` bytes, each moved
  forward to a character boundary (past at most 3 UTF-8 continuation bytes). A
  block's character offset is the running sum of the character lengths of the blocks
  before it. A window starting in block ``j`` is sliced out of blocks ``j`` and
  ``j + 1`` joined; it always fits there, because a block holds at least
  ``window_chars`` characters (4 bytes per character at most) unless it is the last.

Both kinds of text share the same rows; each path's input is masked to null on the
other path's rows, so neither does the other's work.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ragframe.schema import END_CHAR, START_CHAR, TEXT, TMP

_ROW = f"{TMP}row"
_BYTES = f"{TMP}bytes"
_LEN = f"{TMP}len"
_NBYTES = f"{TMP}nbytes"
_ASCII = f"{TMP}ascii"
_COUNT = f"{TMP}count"
_STRIDE = f"{TMP}stride"
_AT = f"{TMP}at"
_BLOCK_LEN = f"{TMP}block_len"
_OFFSET = f"{TMP}offset"
_WHOLE = f"{TMP}whole"
_PAIR = f"{TMP}pair"
_K = f"{TMP}k"


def _block_bytes(window: int) -> int:
    """Bytes per block of a non-ASCII text: enough for ``window`` 4-byte characters."""
    return max(4 * window + 4, 4096)


def _window_count(length: pl.Expr, window: int, step: int) -> pl.Expr:
    """Number of windows over a text of ``length`` characters (see module docstring)."""
    return (
        pl.when(length == 0)
        .then(0)
        .when(length <= window)
        .then(1)
        .otherwise(1 + (length - window + step - 1) // step)
    )


def _boundary(at: pl.Expr) -> pl.Expr:
    """Byte position ``at`` moved forward to the next UTF-8 character boundary."""
    data, size = pl.col(_BYTES), pl.col(_NBYTES)

    def continuation(i: int) -> pl.Expr:
        byte = data.bin.get(at + i, null_on_oob=True)
        return ((byte & 0xC0) == 0x80).fill_null(False)

    skip = (
        pl.when(~continuation(0))
        .then(0)
        .when(~continuation(1))
        .then(1)
        .otherwise(pl.when(continuation(2)).then(3).otherwise(2))
    )
    return pl.min_horizontal(at + skip, size)


def _texts(frame: pl.LazyFrame, text: str, window: int, step: int) -> pl.LazyFrame:
    """Per text: its bytes, length in characters and bytes, ASCII flag, window count."""
    body = pl.col(text).fill_null("")
    return (
        frame.with_row_index(_ROW)
        .with_columns(
            body.cast(pl.Binary).alias(_BYTES),
            body.str.len_chars().cast(pl.Int64).alias(_LEN),
            body.str.len_bytes().cast(pl.Int64).alias(_NBYTES),
        )
        .drop(text)
        .with_columns(
            (pl.col(_LEN) == pl.col(_NBYTES)).alias(_ASCII),
            _window_count(pl.col(_LEN), window, step).alias(_COUNT),
        )
    )


def _blocks(texts: pl.LazyFrame, window: int) -> pl.LazyFrame:
    """One row per block: an ASCII text is one block, others are cut every few KiB."""
    ascii_, size, at = pl.col(_ASCII), pl.col(_NBYTES), pl.col(_AT)
    stride = pl.when(ascii_).then(size).otherwise(_block_bytes(window)).clip(lower_bound=1)
    start, end, pair_end = _boundary(at), _boundary(at + stride), _boundary(at + 2 * stride)
    other = pl.when(~ascii_).then(pl.col(_BYTES))
    block_len = other.bin.slice(start, end - start).cast(pl.String).str.len_chars()
    return (
        texts.with_columns(stride.alias(_STRIDE))
        .with_columns(pl.int_ranges(0, size, pl.col(_STRIDE)).alias(_AT))
        .explode(_AT, keep_nulls=False)
        .with_columns(
            pl.when(ascii_).then(end - start).otherwise(block_len).cast(pl.Int64).alias(_BLOCK_LEN),
            pl.when(ascii_).then(pl.col(_BYTES)).alias(_WHOLE),
            other.bin.slice(start, pair_end - start).cast(pl.String).alias(_PAIR),
        )
        .drop(_BYTES)
        .with_columns((pl.col(_BLOCK_LEN).cum_sum().over(_ROW) - pl.col(_BLOCK_LEN)).alias(_OFFSET))
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
    ``start_char`` and ``end_char`` are Int64.
    """
    step = window - overlap
    offset, k = pl.col(_OFFSET), pl.col(_K)
    first = (offset + step - 1) // step
    stop = pl.min_horizontal((offset + pl.col(_BLOCK_LEN) + step - 1) // step, pl.col(_COUNT))
    local = k * step - offset
    piece = pl.coalesce(
        pl.col(_WHOLE).bin.slice(local, window).cast(pl.String),
        pl.col(_PAIR).str.slice(local, window),
    )
    texts = _texts(frame.select(*keys, text), text, window, step)
    return (
        _blocks(texts, window)
        .with_columns(pl.int_ranges(first, stop).alias(_K))
        .explode(_K, keep_nulls=False)
        .select(
            *keys,
            k.alias(index),
            (k * step).alias(START_CHAR),
            pl.min_horizontal(k * step + window, pl.col(_LEN)).alias(END_CHAR),
            piece.alias(TEXT),
        )
    )
