"""Fragment edges moved to boundary characters, and the fragments' text, for all pairs.

Lucene's ``SimpleBoundaryScanner`` (rules in :mod:`ragframe.fetch._highlight`), as a numpy
kernel over the content column's UTF-8 buffer: character offsets are mapped to bytes
with one binary search over the continuation bytes, the ``boundary_max_scan`` characters
beside every edge are looked at one step at a time for *all* edges together (the Python
loop runs once per scanned character, never per fragment), and each fragment's text is
a zero-copy view of the buffer. Slicing the content string per fragment instead costs
a walk from the start of the document for every fragment.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._arrow import Buffer, content_buffer, strings
from ragframe.fetch._classes import Ints, chars, code_points

SCHEMA = {c.T_ORDER: pl.UInt32, c.START: pl.Int64, c.END: pl.Int64, c.T_FRAGMENT: pl.String}


class _Text:
    """Code points of a :class:`Buffer` by global character index."""

    def __init__(self, buf: Buffer) -> None:
        self.buf = buf
        self.before = buf.cont_at - np.arange(buf.cont_at.size)  # characters before each

    def byte(self, char: Ints) -> Ints:
        """Byte position of global character index ``char`` (or of the end)."""
        if not self.before.size:
            return char
        return char + np.searchsorted(self.before, char, side="right")

    def point(self, char: Ints) -> Ints:
        """Code point of global character index ``char``."""
        at = self.byte(char)
        point = self.buf.data[at].astype(np.int64)
        multi = np.flatnonzero(point >= 0xC0)
        point[multi] = code_points(self.buf.data, at[multi])
        return point


def _scan_start(text: _Text, first: Ints, start: Ints, stop: Ints, scan: int) -> Ints:
    """``findStartOffset``: just after the nearest boundary among the ``scan`` characters
    before ``start``; else 0 when the scan reaches the text's start; else ``start``."""
    moved = np.where(start <= scan, 0, start)
    active = np.arange(start.size)
    for step in range(1, scan + 1):
        active = active[start[active] >= step]
        if not active.size:
            break
        hit = np.isin(text.point(first[active] + start[active] - step), stop)
        moved[active[hit]] = start[active[hit]] - step + 1
        active = active[~hit]
    return moved


def _scan_end(text: _Text, first: Ints, end: Ints, length: Ints, stop: Ints, scan: int) -> Ints:
    """``findEndOffset``: onto the nearest boundary among the ``scan`` characters from
    ``end``, else ``end``. Lucene scans the text followed by a space (its multi-value
    separator, a boundary): a scan reaching the text's end stops there, and an end at
    or past the text's end is the text's end."""
    moved = np.minimum(end, length)
    active = np.flatnonzero(end < length)
    for step in range(scan):
        done = end[active] + step >= length[active]  # the scan reached the end of the text
        moved[active[done]] = length[active[done]]
        active = active[~done]
        if not active.size:
            break
        hit = np.isin(text.point(first[active] + end[active] + step), stop)
        moved[active[hit]] = end[active[hit]] + step
        active = active[~hit]
    return moved


def boundary_kernel(docs: pl.DataFrame, boundary_chars: str, scan: int) -> pl.DataFrame:
    """``__rf_order, start, end, __rf_fragment`` of every fragment, edges moved.

    ``docs`` holds ``content`` (no nulls) and, per document, the lists ``__rf_order``,
    ``start`` and ``end`` of its fragments (character offsets).
    """
    buf = content_buffer(docs[c.CONTENT])
    text = _Text(buf)
    doc = np.repeat(np.arange(docs.height), docs[c.T_ORDER].list.len().to_numpy())
    first = chars(buf.doc_bytes, buf.cont_at)
    length = np.diff(first)[doc]
    first = first[doc]
    start = docs[c.START].explode().to_numpy().astype(np.int64)
    end = docs[c.END].explode().to_numpy().astype(np.int64)
    stop = np.array(sorted({ord(ch) for ch in boundary_chars}), dtype=np.int64)
    start = _scan_start(text, first, start, stop, scan)
    end = _scan_end(text, first, end, length, stop, scan)
    begin = text.byte(first + start)
    fragment = strings(buf.data, begin, text.byte(first + end) - begin)
    return pl.DataFrame(
        {c.T_ORDER: docs[c.T_ORDER].explode(), c.START: start, c.END: end, c.T_FRAGMENT: fragment},
        schema=SCHEMA,
    )
