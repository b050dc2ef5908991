"""Tokenize every document at once, as Lucene's ``StandardTokenizer`` does: a numpy
kernel over the content column's UTF-8 buffer.

Why a kernel: building every run as a separate string before knowing whether it is a
token was the dominant cost of highlighting. Here each byte gets the token class of its
character (a 256-entry table for ASCII bytes, the code point table of
:mod:`ragframe.fetch._wordbreak` for the lead byte of a multi-byte character; a
continuation byte is ``CONTINUATION``) and the UAX #29 word-boundary rules Lucene's
grammar implements are applied to neighbours with whole-array operations: no Python
runs per row, document or token. Offsets are characters (code points).

The rules, over the *bases* (the characters that are not Extend/Format/ZWJ: those join
the character before them, WB4), a boundary between bases ``x`` and ``y`` unless:

* both are letters or digits (WB5, 8, 9, 10: ``x2y``, ``h2o``), both Katakana (WB13),
  both South-East Asian (Lucene: one token per Thai run);
* an ``ExtendNumLet`` (``_``) follows a letter, digit, Katakana or another one, or is
  followed by a letter, digit or Katakana (WB13a, 13b);
* a Hebrew letter is followed by a single quote (WB7a);
* ``x y z`` or ``w x y`` is letter, (MidLetter | MidNumLet | Single_Quote), letter
  (WB6, 7: ``prandtl's``, ``e.g``), digit, (MidNum | MidNumLet | Single_Quote), digit
  (WB11, 12: ``2.71``, ``1,000``), or Hebrew letter, double quote, Hebrew letter
  (WB7b, 7c): the rules that look two characters ahead or behind, evaluated only at
  the (few) middle characters;
* two Regional Indicators pair up (WB15, 16).

A segment between boundaries is a token when it holds a letter, digit, Katakana, Han,
Hiragana, South-East Asian or emoji character (Han, Hiragana and emoji: one per
character); others (punctuation, spaces, ``__``, ``½``) are dropped. A token longer
than 255 characters is split every 255 (Lucene's ``maxTokenLength``; Lucene counts
UTF-16 units). Not reproduced: emoji ZWJ sequences (each emoji is its own token).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import Buffer, content_buffer, strings
from ragframe.fetch import _wordbreak as wb

MAX_TOKEN = 255
"""Lucene's ``StandardAnalyzer`` ``maxTokenLength``."""

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]

_AN = (wb.ALETTER, wb.HEBREW, wb.NUMERIC)
_LETTERS = (wb.ALETTER, wb.HEBREW)


def _flags(classes: tuple[int, ...]) -> Flags:
    out = np.zeros(wb.COUNT, dtype=bool)
    out[list(classes)] = True
    return out


@cache
def pair_table() -> Flags:
    """``pair_table()[x * COUNT + y]``: no boundary between bases of classes x, y."""
    join = np.zeros((wb.COUNT, wb.COUNT), dtype=bool)
    an, kata, enl = list(_AN), wb.KATAKANA, wb.EXTENDNUMLET
    join[np.ix_(an, an)] = True
    join[kata, kata] = True
    join[wb.SOUTHEAST_ASIAN, wb.SOUTHEAST_ASIAN] = True
    join[[*an, kata, enl], enl] = True
    join[enl, [*an, kata]] = True
    join[wb.HEBREW, wb.SINGLE_QUOTE] = True
    return join.ravel()


@cache
def triple_table() -> npt.NDArray[np.bool_]:
    """``triple_table()[x, m, y]``: the middle base ``m`` joins both neighbours."""
    join = np.zeros((wb.COUNT, wb.COUNT, wb.COUNT), dtype=bool)
    letters, digit = list(_LETTERS), wb.NUMERIC
    for mid in (wb.MIDLETTER, wb.MIDNUMLET, wb.SINGLE_QUOTE):
        join[np.ix_(letters, [mid], letters)] = True
    for mid in (wb.MIDNUM, wb.MIDNUMLET, wb.SINGLE_QUOTE):
        join[digit, mid, digit] = True
    join[wb.HEBREW, wb.DOUBLE_QUOTE, wb.HEBREW] = True
    return join


MIDDLE = _flags((wb.MIDLETTER, wb.MIDNUM, wb.MIDNUMLET, wb.SINGLE_QUOTE, wb.DOUBLE_QUOTE))
WORD = _flags(wb.WORD)
BASE = ~_flags((wb.EXTEND, wb.CONTINUATION))


@cache
def _byte_table() -> npt.NDArray[np.uint8]:
    """Class of each byte value: ASCII characters, continuation bytes; lead bytes are
    looked up by code point."""
    out = np.full(256, wb.OTHER, dtype=np.uint8)
    out[:0x80] = wb.table()[:0x80]
    out[0x80:0xC0] = wb.CONTINUATION
    return out


def code_points(data: npt.NDArray[np.uint8], lead: Ints) -> Ints:
    """Code points of the multi-byte characters whose lead bytes are at ``lead``."""
    first = data[lead].astype(np.int64)
    b1, b2, b3 = (data.take(lead + k, mode="clip").astype(np.int64) & 0x3F for k in (1, 2, 3))
    two = ((first & 0x1F) << 6) | b1
    three = ((first & 0x0F) << 12) | (b1 << 6) | b2
    four = ((first & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3
    points = np.where(first >= 0xF0, four, np.where(first >= 0xE0, three, two))
    return np.minimum(points, 0x10FFFF)


def byte_classes(buf: Buffer) -> npt.NDArray[np.uint8]:
    """The token class of every byte (``CONTINUATION`` for continuation bytes)."""
    kind = _byte_table()[buf.data]
    if buf.lead.size:
        kind[buf.lead] = wb.table()[code_points(buf.data, buf.lead)]
    return kind


def _joins(k: npt.NDArray[np.uint8], doc_break: Flags) -> Flags:
    """``join[j]``: no boundary between bases ``j`` and ``j + 1``."""
    join: Flags = pair_table()[k[:-1].astype(np.intp) * wb.COUNT + k[1:]]
    mid = np.flatnonzero(MIDDLE[k[1:-1]]) + 1
    if mid.size:
        ok = triple_table()[k[mid - 1], k[mid], k[mid + 1]]
        ok &= ~doc_break[mid] & ~doc_break[mid + 1]
        mid = mid[ok]
        join[mid - 1] = True
        join[mid] = True
    regional = np.flatnonzero(k == wb.REGIONAL)
    if regional.size:  # pairs within each run of Regional Indicators
        new = np.ones(regional.size, dtype=bool)
        new[1:] = (regional[1:] != regional[:-1] + 1) | doc_break[regional[1:]]
        head = np.maximum.accumulate(np.where(new, np.arange(regional.size), 0))
        second = regional[(np.arange(regional.size) - head) % 2 == 1]
        join[second - 1] = True
    join &= ~doc_break[1:]
    return join


def _segments(kind: npt.NDArray[np.uint8], doc_bytes: Ints) -> tuple[Ints, Ints]:
    """Byte start and end of every token (before the 255-character split)."""
    base = np.flatnonzero(BASE[kind])
    if not base.size:
        return base, base
    k = kind[base]
    doc_break = np.zeros(base.size, dtype=bool)  # a document starts before this base
    at = np.searchsorted(base, doc_bytes[1:-1])
    doc_break[at[at < base.size]] = True
    join = _joins(k, doc_break)
    first = np.flatnonzero(np.concatenate([[True], ~join]))
    bounds = np.union1d(base[first], doc_bytes)
    head = kind[bounds[:-1]]
    token = WORD[head]
    led = np.flatnonzero(head == wb.EXTENDNUMLET)
    if led.size:  # "_a" is a token, "__" is not
        words = base[WORD[k]]
        after = np.searchsorted(words, bounds[led])
        inside = words[np.minimum(after, words.size - 1)] < bounds[led + 1]
        token[led] = (after < words.size) & inside
    kept = np.flatnonzero(token)
    return bounds[kept], bounds[kept + 1]


def chars(positions: Ints, cont_at: Ints) -> Ints:
    """Character index of byte ``positions`` (bytes minus continuation bytes before)."""
    if not cont_at.size:
        return positions
    return positions - np.searchsorted(cont_at, positions)


def char_bytes(char: Ints, cont_at: Ints) -> Ints:
    """Byte position of global character index ``char`` (inverse of :func:`chars`)."""
    if not cont_at.size:
        return char
    before = cont_at - np.arange(cont_at.size)  # characters before each continuation byte
    return char + np.searchsorted(before, char, side="right")


def _split_long(starts: Ints, ends: Ints, cont_at: Ints) -> tuple[Ints, Ints]:
    """Tokens longer than :data:`MAX_TOKEN` characters cut every :data:`MAX_TOKEN`."""
    maybe = np.flatnonzero(ends - starts > MAX_TOKEN)
    if not maybe.size:
        return starts, ends
    first, last = chars(starts[maybe], cont_at), chars(ends[maybe], cont_at)
    long = last - first > MAX_TOKEN
    maybe, first, last = maybe[long], first[long], last[long]
    if not maybe.size:
        return starts, ends
    pieces = (last - first + MAX_TOKEN - 1) // MAX_TOKEN
    owner = np.repeat(np.arange(maybe.size), pieces)
    rank = np.arange(owner.size) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_start = first[owner] + rank * MAX_TOKEN
    piece_end = np.minimum(piece_start + MAX_TOKEN, last[owner])
    keep = np.ones(starts.size, dtype=bool)
    keep[maybe] = False
    new_starts = np.concatenate([starts[keep], char_bytes(piece_start, cont_at)])
    new_ends = np.concatenate([ends[keep], char_bytes(piece_end, cont_at)])
    order = np.argsort(new_starts, kind="stable")
    return new_starts[order], new_ends[order]


def token_bytes(buf: Buffer) -> tuple[Ints, Ints]:
    """Byte start and end (exclusive) of every token of every row of ``buf``, in order."""
    starts, ends = _segments(byte_classes(buf), buf.doc_bytes)
    return _split_long(starts, ends, buf.cont_at)


def _runs(starts: Ints, ends: Ints, doc_bytes: Ints) -> tuple[Ints, Ints, Flags]:
    """Tokens and the gaps between them: byte start, end and whether a token."""
    bounds = np.union1d(np.union1d(starts, ends), doc_bytes)
    is_token = np.zeros(bounds.size - 1, dtype=bool)
    is_token[np.searchsorted(bounds, starts)] = True
    return bounds[:-1], bounds[1:], is_token


def run_schema(id_type: pl.DataType) -> dict[str, pl.DataType]:
    """The columns :func:`tokenize` returns."""
    return {
        c.DOC_ID: id_type,
        c.T_RUN: pl.String(),
        c.START: pl.Int64(),
        c.END: pl.Int64(),
        c.T_IS_WORD: pl.Boolean(),
    }


def tokenize(docs: pl.DataFrame, words_only: bool) -> pl.DataFrame:
    """``doc_id, __rf_run, start, end, __rf_is_word``: the runs of every document.

    ``docs`` holds ``doc_id`` and ``content`` (no nulls). Runs are tokens and, unless
    ``words_only``, the maximal gaps between them; their text is as in the document
    (not lower-cased).
    """
    buf = content_buffer(docs[c.CONTENT])
    starts, ends = token_bytes(buf)
    is_word = np.ones(starts.size, dtype=bool)
    if not words_only:
        starts, ends, is_word = _runs(starts, ends, buf.doc_bytes)
    return _frame(docs, c.DOC_ID, buf, starts, ends, is_word)


def _frame(
    docs: pl.DataFrame, key: str, buf: Buffer, starts: Ints, ends: Ints, is_word: Flags
) -> pl.DataFrame:
    doc = np.searchsorted(buf.doc_bytes, starts, side="right") - 1
    first_char = chars(buf.doc_bytes, buf.cont_at)[doc]
    return pl.DataFrame(
        {
            c.DOC_ID: docs[key].gather(doc),
            c.T_RUN: strings(buf.data, starts, ends - starts, c.T_RUN),
            c.START: chars(starts, buf.cont_at) - first_char,
            c.END: chars(ends, buf.cont_at) - first_char,
            c.T_IS_WORD: is_word,
        },
        schema=run_schema(docs.schema[key]),
    )


def text_tokens(texts: pl.Series) -> tuple[Ints, pl.Series]:
    """Row index and text (as written) of every token of a string column (nulls: none)."""
    buf = content_buffer(texts)
    starts, ends = token_bytes(buf)
    row = np.searchsorted(buf.doc_bytes, starts, side="right") - 1
    return row, strings(buf.data, starts, ends - starts)
