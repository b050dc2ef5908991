"""The windowing engine shared by :func:`ragframe.windows` and :func:`ragframe.chunk`.

Windows over a text of ``n`` characters start at ``0, step, 2*step, ...`` with
``step = window_chars - overlap_chars``; each is at most ``window_chars`` long. The
iteration stops at the first window that reaches the end of the text, so the last
window always ends at ``n`` and no window lies entirely inside the previous window's
overlap. The count is ``0`` for an empty text, ``1`` when ``n <= window_chars`` and
``1 + ceil((n - window_chars) / step)`` otherwise.

Offsets are Unicode code points (``str.len_chars``), never bytes.

Speed: Polars slices a string by characters by scanning it from the start, so slicing
every window straight out of a long text costs ``O(n**2 / step)``. Instead, ASCII texts
(where characters are bytes) are sliced as binary, ``O(1)`` per window; other texts are
first cut into blocks of about ``sqrt(n * step)`` characters (a whole number of steps,
plus the overlap) and each window is sliced out of its block, ``O(n * sqrt(n / step))``
in all. Both paths are plain expressions over the same rows: the input of each is
masked to null on the other path's rows, so neither does the other's work.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ragframe.schema import END_CHAR, START_CHAR, TEXT, TMP

_BODY = f"{TMP}body"
_LEN = f"{TMP}len"
_ASCII = f"{TMP}ascii"
_COUNT = f"{TMP}count"
_STRIDE = f"{TMP}stride"
_BLOCK_START = f"{TMP}block_start"
_BLOCK = f"{TMP}block"
_BYTES = f"{TMP}bytes"
_LOCAL = f"{TMP}local"


def _window_count(length: pl.Expr, window: int, step: int) -> pl.Expr:
    """Number of windows over a text of ``length`` characters (see module docstring)."""
    return (
        pl.when(length == 0)
        .then(0)
        .when(length <= window)
        .then(1)
        .otherwise(1 + (length - window + step - 1) // step)
    )


def _block_stride(length: pl.Expr, count: pl.Expr, ascii_: pl.Expr, step: int) -> pl.Expr:
    """Characters between block starts: the whole text when ASCII, else ~sqrt(n*step)."""
    steps = (length / step).sqrt().round().cast(pl.Int64).clip(lower_bound=1)
    return pl.when(ascii_).then(count.clip(lower_bound=1)).otherwise(steps) * step


def _window_text(window: int) -> pl.Expr:
    """The window's text from whichever path (bytes or block) its row is on."""
    start = pl.col(_BLOCK_START) + pl.col(_LOCAL)
    by_bytes = pl.col(_BYTES).bin.slice(start, window).cast(pl.String)
    by_block = pl.col(_BLOCK).str.slice(pl.col(_LOCAL), window)
    return pl.coalesce(by_bytes, by_block)


def _blocks(frame: pl.LazyFrame, window: int, overlap: int, step: int) -> pl.LazyFrame:
    """One row per block: the ASCII bytes (whole text) or the non-ASCII block text."""
    body, length, ascii_ = pl.col(_BODY), pl.col(_LEN), pl.col(_ASCII)
    count, stride = pl.col(_COUNT), pl.col(_STRIDE)
    return (
        frame.with_columns(
            body.str.len_chars().cast(pl.Int64).alias(_LEN),
            (body.str.len_chars() == body.str.len_bytes()).alias(_ASCII),
        )
        .with_columns(_window_count(length, window, step).alias(_COUNT))
        .with_columns(_block_stride(length, count, ascii_, step).alias(_STRIDE))
        .with_columns(pl.int_ranges(0, count * step, stride).alias(_BLOCK_START))
        .explode(_BLOCK_START, keep_nulls=False)
        .with_columns(
            pl.when(ascii_).then(body).cast(pl.Binary).alias(_BYTES),
            pl.when(~ascii_)
            .then(body)
            .str.slice(pl.col(_BLOCK_START), stride + overlap)
            .alias(_BLOCK),
        )
        .drop(_BODY)
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
    remaining = pl.col(_COUNT) * step - pl.col(_BLOCK_START)
    start = pl.col(_BLOCK_START) + pl.col(_LOCAL)
    return (
        _blocks(frame.select(*keys, pl.col(text).fill_null("").alias(_BODY)), window, overlap, step)
        .with_columns(
            pl.int_ranges(0, pl.min_horizontal(pl.col(_STRIDE), remaining), step).alias(_LOCAL)
        )
        .explode(_LOCAL)
        .select(
            *keys,
            (start // step).alias(index),
            start.alias(START_CHAR),
            pl.min_horizontal(start + window, pl.col(_LEN)).alias(END_CHAR),
            _window_text(window).alias(TEXT),
        )
    )
