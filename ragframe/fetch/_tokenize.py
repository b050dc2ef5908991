"""Tokenize every document at once, as Lucene's ``StandardTokenizer`` does: a numpy
kernel over the content column's UTF-8 buffer.

Why a kernel: building every run as a separate string before knowing whether it is a
token was the dominant cost of highlighting. Here the whole-buffer work is byte
arithmetic, no table gathers (numpy turns a ``uint8`` index into ``intp`` first: a
gather per byte costs several passes): ASCII letters, digits and ``_`` are word bytes
by comparisons of byte values, and so are the ASCII middle characters
that join two word bytes (a few more comparisons, then the rules below at the few
candidates); word runs come from one comparison of neighbours (runs of underscores
only are unmarked first: not tokens). Classes (a 256-entry table for ASCII bytes, the
code point table of :mod:`ragframe.fetch._wordbreak` for multi-byte characters:
:class:`ragframe.fetch._classes.Classes`) are looked up only where a rule looks: at
the multi-byte characters (few, in most text), at the middle-character candidates and
at segment starts. Where multi-byte characters are common, a whole-buffer class array
is built instead (:data:`ragframe.fetch._classes.DENSE`). No Python runs per row,
document or token. Offsets are characters (code points).

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

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import Buffer, content_buffer, strings
from ragframe.fetch import _wordbreak as wb
from ragframe.fetch._classes import (
    FIRST_MIDDLE,
    HIGH,
    MIDDLE,
    MIDDLE_SPAN,
    UNDERSCORE,
    WORDISH,
    Classes,
    byte_table,
    char_bytes,
    chars,
    classes,
    pair_table,
    triple_table,
)

MAX_TOKEN = 255
"""Lucene's ``StandardAnalyzer`` ``maxTokenLength``."""

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]


def with_points(bounds: Ints, points: Ints) -> Ints:
    """The sorted, distinct ``bounds`` with the (few) ``points`` added, still distinct.
    (``np.union1d`` sorts everything again: slow on a whole buffer.)"""
    points = np.unique(points)
    if not bounds.size:
        return points
    at = np.searchsorted(bounds, points)
    new = (at >= bounds.size) | (bounds[np.minimum(at, bounds.size - 1)] != points)
    return np.insert(bounds, at[new], points[new])


def _word_flags(cls: Classes, scratch: npt.NDArray[np.uint8]) -> tuple[Flags, Ints]:
    """Whether each byte is :data:`WORDISH`, with a False byte before and after: ASCII
    bytes by arithmetic (``[0-9A-Za-z_]``), the others from their class; and where the
    underscores are (from the same comparison). ``scratch``: as many bytes as the
    buffer at least, overwritten (no whole-buffer temporaries)."""
    data = cls.data
    flags = np.zeros(data.size + 2, dtype=bool)
    word = flags[1:-1]
    scratch = scratch[: data.size]
    test = scratch.view(np.bool_)
    np.bitwise_or(data, np.uint8(0x20), out=scratch)
    scratch -= np.uint8(ord("a"))
    np.less(scratch, np.uint8(26), out=word)
    np.subtract(data, np.uint8(ord("0")), out=scratch)
    np.less(scratch, np.uint8(10), out=test)
    word |= test
    np.equal(data, np.uint8(UNDERSCORE), out=test)
    word |= test
    underscores = np.flatnonzero(test)
    if cls.high.size:
        flags[cls.high + 1] = WORDISH[cls.kind]
    return flags, underscores


def _crossing(doc: Ints, lo: Ints, hi: Ints) -> Flags:
    """Whether a document starts in ``(lo[i], hi[i]]`` (sorted, disjoint intervals)."""
    out = np.zeros(lo.size, dtype=bool)
    if lo.size:
        inner = doc[1:-1]
        k = np.searchsorted(lo, inner) - 1  # the last interval opening before each start
        k = k[(k >= 0) & (inner <= hi[np.maximum(k, 0)])]
        out[k] = True
    return out


def _bridge(cls: Classes, flags: Flags, doc: Ints, scratch: npt.NDArray[np.uint8]) -> None:
    """Mark as word bytes the middle characters that join the letters or digits around
    them (WB6/7, 11/12, 7b/7c: ``e.g``, ``2.71``), so that word runs go across them.

    ASCII middle characters between two word bytes are found by whole-buffer arithmetic
    (all of them are in ``"`` to ``;``: the others there are dropped by their class);
    non-ASCII ones, and ASCII ones followed by a see-through character, among the (few)
    multi-byte characters. ``scratch``: as in :func:`_word_flags`."""
    data, size = cls.data, cls.data.size
    scratch = scratch[:size]
    middle = scratch.view(np.bool_)
    np.subtract(data, np.uint8(FIRST_MIDDLE), out=scratch)
    np.less(scratch, np.uint8(MIDDLE_SPAN), out=middle)
    middle &= flags[:-2]  # the byte before is a word byte
    middle &= flags[2:]  # and the byte after (a base character: a word byte is not see-through)
    np.greater(middle, flags[1:-1], out=middle)  # and it is not one
    g = np.flatnonzero(middle)
    ok = triple_table()[cls.at(g - 1), byte_table()[data[g]], cls.at(g + 1)]
    ok &= ~_crossing(doc, g - 1, g + 1)
    flags[g[ok] + 1] = True
    if not cls.high.size:
        return
    before = cls.see[cls.see > 0] - 1  # an ASCII middle character, then see-through ones
    value = data[before]
    before = before[(value < HIGH) & MIDDLE[byte_table()[value]]]
    g = np.union1d(cls.bases[MIDDLE[cls.at(cls.bases)]], before)
    g = g[g > 0]
    n = cls.next_base(g)
    g, n = g[n < size], n[n < size]
    ok = triple_table()[cls.at(g - 1), cls.at(g), cls.at(n)]
    ok &= ~_crossing(doc, g - 1, n)
    _mark(flags, g[ok], n[ok], True)


def _mark(flags: Flags, lo: Ints, hi: Ints, value: bool) -> None:
    """Set the flags of the bytes ``lo[i]`` to ``hi[i]`` (exclusive; few, short)."""
    length = hi - lo
    offsets = np.cumsum(length) - length
    flags[np.repeat(lo - offsets, length) + np.arange(int(length.sum())) + 1] = value


def _underscore_runs(flags: Flags, underscores: Ints) -> Ints:
    """Unmark the word runs made only of underscores (``"__"`` is not a token, WB13a
    joins it into one segment: Lucene drops it); return the other underscores. So
    that they need no deletion from the (large) token arrays after."""
    if not underscores.size:
        return underscores
    head = np.ones(underscores.size, dtype=bool)
    head[1:] = underscores[1:] != underscores[:-1] + 1
    first = np.flatnonzero(head)
    lo = underscores[first]
    hi = underscores[np.append(first[1:], underscores.size) - 1] + 1
    alone = ~flags[lo] & ~flags[hi + 1]  # no word byte before or after the run
    if not alone.any():
        return underscores
    _mark(flags, lo[alone], hi[alone], False)
    kept: Ints = underscores[~np.repeat(alone, np.diff(np.append(first, underscores.size)))]
    return kept


def _word_runs(cls: Classes, doc: Ints) -> tuple[Ints, Ints, Ints]:
    """Start and end of every maximal run of :data:`WORDISH` bytes and of the middle
    characters that join them (runs of underscores only left out), and the
    underscores inside runs."""
    scratch = np.empty(cls.data.size + 1, dtype=np.uint8)
    flags, underscores = _word_flags(cls, scratch)
    _bridge(cls, flags, doc, scratch)
    underscores = _underscore_runs(flags, underscores)
    change = scratch.view(np.bool_)
    np.not_equal(flags[1:], flags[:-1], out=change)
    edges = np.flatnonzero(change)  # alternate start, end
    return edges[0::2], edges[1::2], underscores


def _hebrew_quote(cls: Classes, starts: Ints, ends: Ints, doc: Ints) -> Ints:
    """``ends``, a Hebrew letter keeping a following single quote (WB7a)."""
    size = cls.data.size
    after = cls.high[cls.kind == wb.HEBREW] + 1  # ends right after a Hebrew letter's byte
    if not after.size:
        return ends
    index = np.minimum(np.searchsorted(ends, after), ends.size - 1)
    hebrew = index[ends[index] == after]
    end = ends[hebrew]
    quote = hebrew[(end < size) & (cls.at(np.minimum(end, size - 1)) == wb.SINGLE_QUOTE)]
    end = ends[quote]
    quote = quote[np.searchsorted(doc, end - 1, "right") == np.searchsorted(doc, end, "right")]
    ends = ends.copy()
    ends[quote] = cls.next_base(ends[quote])
    return ends


def _inner_breaks(buf: Buffer, cls: Classes, starts: Ints, ends: Ints) -> Ints:
    """Boundaries inside runs: only next to a non-ASCII character (ASCII letters, digits
    and ``_`` always join), and at document starts."""
    size = cls.data.size
    at = np.union1d(cls.bases, cls.next_base(cls.bases))
    at = at[at < size]
    before = cls.at(np.maximum(at - 1, 0))
    here = cls.at(at)
    join = pair_table()[before.astype(np.intp) * wb.COUNT + here]
    join |= MIDDLE[here] | MIDDLE[before]  # inside a run: bridged by _bridged
    regional = np.flatnonzero(here == wb.REGIONAL)
    if regional.size:  # pairs within each run of Regional Indicators
        r = at[regional]
        new = np.ones(r.size, dtype=bool)
        new[1:] = r[1:] != r[:-1] + 4
        doc = np.minimum(np.searchsorted(buf.doc_bytes, r), buf.doc_bytes.size - 1)
        new |= buf.doc_bytes[doc] == r  # pairs start again in each document
        head = np.maximum.accumulate(np.where(new, np.arange(r.size), 0))
        join[regional[(np.arange(r.size) - head) % 2 == 1]] = True
    points = np.concatenate([at[~join], buf.doc_bytes[1:-1]])
    run = np.searchsorted(starts, points, "right") - 1
    inside = (
        (run >= 0) & (points > starts[np.maximum(run, 0)]) & (points < ends[np.maximum(run, 0)])
    )
    return np.unique(points[inside])


def _only_extendnumlet(cls: Classes, starts: Ints, ends: Ints) -> Flags:
    """Whether each segment (one that starts with an ``ExtendNumLet``) holds only
    ``ExtendNumLet`` bytes: most are settled by their second byte, the rest by all."""
    only: Flags = np.equal(ends - starts, 1)
    pending = np.flatnonzero(~only)
    pending = pending[cls.at(starts[pending] + 1) == wb.EXTENDNUMLET]
    if pending.size:
        s, length = starts[pending], ends[pending] - starts[pending]
        offsets = np.cumsum(length) - length
        positions = np.repeat(s - offsets, length) + np.arange(int(length.sum()))
        all_enl = cls.at(positions) == wb.EXTENDNUMLET
        only[pending] = np.logical_and.reduceat(all_enl, offsets)
    return only


def _segments(buf: Buffer) -> tuple[Ints, Ints]:
    """Byte start and end of every token (before the 255-character split)."""
    cls = classes(buf)
    starts, ends, underscores = _word_runs(cls, buf.doc_bytes)
    if not starts.size:
        return starts, ends
    ends = _hebrew_quote(cls, starts, ends, buf.doc_bytes)
    cuts = _inner_breaks(buf, cls, starts, ends)
    if cuts.size:
        starts, ends = with_points(starts, cuts), with_points(ends, cuts)
    return _without_extendnumlet(cls, starts, ends, underscores)


def _without_extendnumlet(
    cls: Classes, starts: Ints, ends: Ints, underscores: Ints
) -> tuple[Ints, Ints]:
    """The segments less those made only of ``ExtendNumLet`` characters (``"_a"`` is a
    token, ``"__"`` is not), looked for among the segments that start at one (the
    underscores left in runs and the non-ASCII ones), not by reading every segment's
    first byte."""
    enl = underscores
    if cls.bases.size:
        other = cls.bases[cls.at(cls.bases) == wb.EXTENDNUMLET]
        enl = np.sort(np.concatenate([enl, other])) if other.size else enl
    if not enl.size:
        return starts, ends
    index = np.minimum(np.searchsorted(starts, enl), starts.size - 1)
    lead = index[starts[index] == enl]
    drop = lead[_only_extendnumlet(cls, starts[lead], ends[lead])]
    if drop.size:
        starts, ends = np.delete(starts, drop), np.delete(ends, drop)
    return starts, ends


def _split_long(starts: Ints, ends: Ints, cont_at: Ints) -> tuple[Ints, Ints, Ints]:
    """Tokens longer than :data:`MAX_TOKEN` characters cut every :data:`MAX_TOKEN`;
    their starts, ends and byte lengths."""
    lengths = ends - starts
    maybe = np.flatnonzero(lengths > MAX_TOKEN)
    if not maybe.size:
        return starts, ends, lengths
    first, last = chars(starts[maybe], cont_at), chars(ends[maybe], cont_at)
    long = last - first > MAX_TOKEN
    maybe, first, last = maybe[long], first[long], last[long]
    if not maybe.size:
        return starts, ends, lengths
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
    starts, ends = new_starts[order], new_ends[order]
    return starts, ends, ends - starts


def token_spans(buf: Buffer) -> tuple[Ints, Ints, Ints]:
    """Byte start, end (exclusive) and length of every token of every row of ``buf``,
    in order (the lengths, computed for the split of long tokens, are the hash's)."""
    starts, ends = _segments(buf)
    return _split_long(starts, ends, buf.cont_at)


def token_bytes(buf: Buffer) -> tuple[Ints, Ints]:
    """Byte start and end (exclusive) of every token of every row of ``buf``, in order."""
    starts, ends, _ = token_spans(buf)
    return starts, ends


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
