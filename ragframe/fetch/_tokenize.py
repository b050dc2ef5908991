"""Tokenize every document at once, as Lucene's ``StandardTokenizer`` does: a numpy
kernel over the content column's UTF-8 buffer.

Why a kernel: building every run as a separate string before knowing whether it is a
token was the dominant cost of highlighting. Here each byte gets the token class of its
character (a 256-entry table for ASCII bytes, the code point table of
:mod:`ragframe.fetch._wordbreak` for the lead byte of a multi-byte character; a
continuation byte is ``CONTINUATION``) and the UAX #29 word-boundary rules Lucene's
grammar implements are applied to neighbours with whole-array operations: no Python
runs per row, document or token. Offsets are characters (code points).

The rules work on bytes: continuation bytes and Extend/Format/ZWJ characters (WB4) are
*see-through* (never a boundary before them) and carry the class of the character
before them, so each other byte sees the previous *base* character's class in the
byte before it. A boundary between bases ``x`` and ``y`` unless:

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


def _transparent(buf: Buffer, kind: npt.NDArray[np.uint8]) -> Flags:
    """Bytes that never start a segment (continuation bytes, Extend/Format/ZWJ
    characters: WB4), their class set to that of the character before them."""
    see_through = np.zeros(kind.size + 1, dtype=bool)
    see_through[buf.cont_at] = True
    if not buf.lead.size:
        return see_through
    extend = buf.lead[kind[buf.lead] == wb.EXTEND]
    see_through[extend] = True
    fill = np.sort(np.concatenate([buf.cont_at, extend]))
    fill = fill[fill > 0]
    for _ in range(fill.size):  # chains (a mark after a mark) take a few rounds
        before = kind[fill - 1]
        changed = np.flatnonzero(kind[fill] != before)
        if not changed.size:
            break
        kind[fill[changed]] = before[changed]
    return see_through


def _next_base(at: Ints, see_through: Flags) -> Ints:
    """The first byte after ``at`` that starts a base character (or the end)."""
    nxt = at + 1
    pending = np.flatnonzero(see_through[np.minimum(nxt, see_through.size - 1)])
    while pending.size:
        nxt[pending] += 1
        pending = pending[see_through[np.minimum(nxt[pending], see_through.size - 1)]]
    return nxt


ALONE = _flags((wb.HAN, wb.HIRAGANA, wb.EMOJI, wb.REGIONAL))
"""Classes whose characters are tokens one by one (Regional Indicators: two by two)."""
WORDISH = _flags((*_AN, wb.KATAKANA, wb.SOUTHEAST_ASIAN, wb.EXTENDNUMLET)) | ALONE
"""Classes that can be inside a token without a rule looking around them."""


def with_points(bounds: Ints, points: Ints) -> Ints:
    """The sorted, distinct ``bounds`` with the (few) ``points`` added, still distinct.
    (``np.union1d`` sorts everything again: slow on a whole buffer.)"""
    points = np.unique(points)
    if not bounds.size:
        return points
    at = np.searchsorted(bounds, points)
    new = (at >= bounds.size) | (bounds[np.minimum(at, bounds.size - 1)] != points)
    return np.insert(bounds, at[new], points[new])


def _word_runs(kind: npt.NDArray[np.uint8]) -> tuple[Ints, Ints]:
    """Start and end of every maximal run of :data:`WORDISH` bytes."""
    flags = np.zeros(kind.size + 2, dtype=bool)
    np.take(WORDISH, kind, out=flags[1:-1])
    edges = np.flatnonzero(flags[1:] != flags[:-1])  # alternate start, end
    return edges[0::2], edges[1::2]


def _bridged(
    kind: npt.NDArray[np.uint8], see: Flags, starts: Ints, ends: Ints, doc: Ints
) -> tuple[Ints, Ints]:
    """Join runs across one middle character (WB6/7, 11/12, 7b/7c: ``e.g``, ``2.71``);
    a Hebrew letter keeps a following single quote (WB7a)."""
    if starts.size < 2:
        return starts, ends
    gap, nxt = ends[:-1], starts[1:]
    maybe = np.flatnonzero(MIDDLE[kind[gap]])
    g, n = gap[maybe], nxt[maybe]
    ok = triple_table()[kind[g - 1], kind[g], kind[n]]
    ok &= np.searchsorted(doc, g - 1, "right") == np.searchsorted(doc, n, "right")
    ok &= _next_base(g, see) == n
    joined = maybe[ok]
    keep_end = np.ones(ends.size, dtype=bool)
    keep_end[joined] = False
    keep_start = np.ones(starts.size, dtype=bool)
    keep_start[joined + 1] = False
    starts, ends = starts[keep_start], ends[keep_end]
    hebrew = np.flatnonzero(kind[ends - 1] == wb.HEBREW)
    end = ends[hebrew]
    quote = hebrew[(end < kind.size) & (kind[np.minimum(end, kind.size - 1)] == wb.SINGLE_QUOTE)]
    end = ends[quote]
    quote = quote[np.searchsorted(doc, end - 1, "right") == np.searchsorted(doc, end, "right")]
    ends[quote] = _next_base(ends[quote], see)
    return starts, ends


def _inner_breaks(
    buf: Buffer, kind: npt.NDArray[np.uint8], see: Flags, starts: Ints, ends: Ints
) -> Ints:
    """Boundaries inside runs: only next to a non-ASCII character (ASCII letters, digits
    and ``_`` always join), and at document starts."""
    lead = buf.lead[~see[buf.lead]] if buf.lead.size else buf.lead
    at = np.union1d(lead, _next_base(lead, see))
    at = at[at < kind.size]
    before = kind[np.maximum(at - 1, 0)]
    join = pair_table()[before.astype(np.intp) * wb.COUNT + kind[at]]
    join |= MIDDLE[kind[at]] | MIDDLE[before]  # inside a run: bridged by _bridged
    regional = np.flatnonzero(kind[at] == wb.REGIONAL)
    if regional.size:  # pairs within each run of Regional Indicators
        r = at[regional]
        new = np.ones(r.size, dtype=bool)
        new[1:] = r[1:] != r[:-1] + 4
        head = np.maximum.accumulate(np.where(new, np.arange(r.size), 0))
        join[regional[(np.arange(r.size) - head) % 2 == 1]] = True
    points = np.concatenate([at[~join], buf.doc_bytes[1:-1]])
    run = np.searchsorted(starts, points, "right") - 1
    inside = (
        (run >= 0) & (points > starts[np.maximum(run, 0)]) & (points < ends[np.maximum(run, 0)])
    )
    return np.unique(points[inside])


def _segments(buf: Buffer) -> tuple[Ints, Ints]:
    """Byte start and end of every token (before the 255-character split)."""
    kind = byte_classes(buf)
    see = _transparent(buf, kind)
    starts, ends = _word_runs(kind)
    if not starts.size:
        return starts, ends
    starts, ends = _bridged(kind, see, starts, ends, buf.doc_bytes)
    cuts = _inner_breaks(buf, kind, see, starts, ends)
    if cuts.size:
        starts, ends = with_points(starts, cuts), with_points(ends, cuts)
    lead_enl = np.flatnonzero(kind[starts] == wb.EXTENDNUMLET) if starts.size else starts
    if lead_enl.size:  # "_a" is a token, "__" is not
        enl = np.flatnonzero(kind == wb.EXTENDNUMLET)
        s, e = starts[lead_enl], ends[lead_enl]
        only = np.searchsorted(enl, e) - np.searchsorted(enl, s) == e - s
        keep = np.ones(starts.size, dtype=bool)
        keep[lead_enl[only]] = False
        starts, ends = starts[keep], ends[keep]
    return starts, ends


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
    starts, ends = _segments(buf)
    return _split_long(starts, ends, buf.cont_at)


def _runs(starts: Ints, ends: Ints, doc_bytes: Ints) -> tuple[Ints, Ints, Flags]:
    """Tokens and the gaps between them: byte start, end and whether a token."""
    edges = np.empty(2 * starts.size, dtype=np.int64)  # tokens are sorted and disjoint
    edges[0::2], edges[1::2] = starts, ends
    distinct = np.ones(edges.size, dtype=bool)
    distinct[1:] = edges[1:] != edges[:-1]
    bounds = with_points(edges[distinct], doc_bytes)
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
