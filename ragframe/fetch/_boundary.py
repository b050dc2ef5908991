"""Fragment edges moved to boundary characters, and the fragments' text, for all pairs.

Lucene's ``SimpleBoundaryScanner`` (rules in :mod:`ragframe.fetch._highlight`) as numpy
over whole buffers, never a Python step per fragment. Documents with multi-byte
characters: their UTF-8 bytes end to end, character offsets mapped to bytes with one
binary search over the continuation bytes, the ``boundary_max_scan`` characters beside
every edge looked at one step at a time for *all* edges together (the Python loop runs
once per scanned character). ASCII-only documents (characters are bytes): read where
they are, in their Arrow buffers (no copy), each edge's whole scan window at once.
Each fragment's text is a zero-copy view of the bytes. Slicing the content string per
fragment instead costs a walk from the start of the document for every fragment.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._arrow import U8, Buffer, content_buffer, string_views, strings, view_cells
from ragframe.fetch._classes import Flags, Ints, chars, code_points

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
    """``__rf_order, start, end, __rf_fragment`` of every fragment, edges moved (rows
    in any order: ``__rf_order`` says which fragment each is).

    ``docs`` holds ``content`` (no nulls) and, per document, the lists ``__rf_order``,
    ``start`` and ``end`` of its fragments (character offsets). ASCII-only documents
    are read in place (:func:`_ascii_edges`), the others through one buffer of their
    bytes (:func:`_edges`).
    """
    stop = np.array(sorted({ord(ch) for ch in boundary_chars}), dtype=np.int64)
    content = docs[c.CONTENT]
    ascii_ = content.str.len_bytes() == content.str.len_chars()
    if ascii_.all() and docs.height:
        return _ascii_edges(docs, stop, scan)
    if not ascii_.any():
        return _edges(docs, stop, scan)
    parts = [
        _edges(docs.filter(~ascii_), stop, scan),
        _ascii_edges(docs.filter(ascii_), stop, scan),
    ]
    return pl.concat(parts)


def _fragments(docs: pl.DataFrame) -> tuple[Ints, Ints, Ints]:
    """Each fragment's document (row of ``docs``), start and end."""
    doc = np.repeat(np.arange(docs.height), docs[c.T_ORDER].list.len().to_numpy())
    start = docs[c.START].explode().to_numpy().astype(np.int64)
    end = docs[c.END].explode().to_numpy().astype(np.int64)
    return doc, start, end


def _frame(docs: pl.DataFrame, start: Ints, end: Ints, fragment: pl.Series) -> pl.DataFrame:
    order = docs[c.T_ORDER].explode()
    return pl.DataFrame(
        {c.T_ORDER: order, c.START: start, c.END: end, c.T_FRAGMENT: fragment}, schema=SCHEMA
    )


def _edges(docs: pl.DataFrame, stop: Ints, scan: int) -> pl.DataFrame:
    """:func:`boundary_kernel` of any documents: their bytes end to end, characters
    mapped to bytes (:class:`_Text`)."""
    buf = content_buffer(docs[c.CONTENT])
    text = _Text(buf)
    doc, start, end = _fragments(docs)
    first = chars(buf.doc_bytes, buf.cont_at)
    length = np.diff(first)[doc]
    first = first[doc]
    start = _scan_start(text, first, start, stop, scan)
    end = _scan_end(text, first, end, length, stop, scan)
    begin = text.byte(first + start)
    return _frame(docs, start, end, strings(buf.data, begin, text.byte(first + end) - begin))


def _window_hits(data: U8, at: Ints, valid: Flags, stop: Ints) -> tuple[Flags, Ints]:
    """Whether each row of byte positions ``at`` (``valid`` where inside the text) holds a
    boundary byte, and the first column that does (any, when none does)."""
    table = np.zeros(256, dtype=bool)
    table[stop[stop < 256]] = True
    if not at.shape[1]:  # a scan of 0 characters
        return np.zeros(at.shape[0], dtype=bool), np.zeros(at.shape[0], dtype=np.int64)
    hit: Flags = table[data[np.where(valid, at, 0)]] & valid
    return np.any(hit, axis=1), np.argmax(hit, axis=1)


def _ascii_scan_start(data: U8, first: Ints, start: Ints, stop: Ints, scan: int) -> Ints:
    """:func:`_scan_start` over ASCII bytes, all ``scan`` characters of every edge at once
    (a window of bytes per edge: no loop over the steps)."""
    back = start[:, None] - np.arange(1, scan + 1)
    found, step = _window_hits(data, first[:, None] + back, back >= 0, stop)
    return np.where(found, start - step, np.where(start <= scan, 0, start))


def _ascii_scan_end(data: U8, first: Ints, end: Ints, length: Ints, stop: Ints, scan: int) -> Ints:
    """:func:`_scan_end` over ASCII bytes, all ``scan`` characters of every edge at once."""
    ahead = end[:, None] + np.arange(scan)
    inside = ahead < length[:, None]
    found, step = _window_hits(data, first[:, None] + ahead, inside, stop)
    reached = ~inside.all(axis=1)  # no boundary before the text's end: it ends there
    return np.where(found, end + step, np.where(reached, length, np.minimum(end, length)))


def _ascii_edges(docs: pl.DataFrame, stop: Ints, scan: int) -> pl.DataFrame:
    """:func:`boundary_kernel` of ASCII-only documents, read where they are (their
    Arrow buffers, :func:`ragframe._arrow.view_cells`: characters are bytes there), one
    buffer's documents at a time; the fragments are views of the same bytes."""
    cells = view_cells(docs[c.CONTENT])
    doc, start, end = _fragments(docs)
    source, first, length = cells.source[doc], cells.position[doc], cells.length[doc]
    for index in np.unique(source).tolist():
        rows = np.flatnonzero(source == index)
        data = cells.buffers[index]
        start[rows] = _ascii_scan_start(data, first[rows], start[rows], stop, scan)
        end[rows] = _ascii_scan_end(data, first[rows], end[rows], length[rows], stop, scan)
    fragment = string_views(cells.buffers, source, first + start, end - start)
    return _frame(docs, start, end, fragment)
