"""The token classes of a buffer's bytes, for :mod:`ragframe.fetch._tokenize`.

Which pairs and triples of classes join (:func:`pair_table`, :func:`triple_table`),
the class sets the rules look at, and :class:`Classes`: the class of every byte of a
buffer, kept only where it takes a lookup (ASCII bytes have their value's class, by
:func:`byte_table`; multi-byte characters are decoded, :func:`code_points`, and looked
up in :mod:`ragframe.fetch._wordbreak`'s code point table). Character offsets of byte
positions: :func:`chars`, :func:`char_bytes`.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ragframe._arrow import Buffer
from ragframe.fetch import _wordbreak as wb

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
ALONE = _flags((wb.HAN, wb.HIRAGANA, wb.EMOJI, wb.REGIONAL))
"""Classes whose characters are tokens one by one (Regional Indicators: two by two)."""
WORDISH = _flags((*_AN, wb.KATAKANA, wb.SOUTHEAST_ASIAN, wb.EXTENDNUMLET)) | ALONE
"""Classes that can be inside a token without a rule looking around them."""

UNDERSCORE = ord("_")
FIRST_MIDDLE, MIDDLE_SPAN = ord('"'), ord(";") - ord('"') + 1
"""The ASCII middle characters are all in ``"`` to ``;``."""
HIGH = 0x80
"""Bytes from here on belong to multi-byte characters (lead and continuation bytes)."""
DENSE = 16
"""With more than one multi-byte-character byte in ``DENSE``, classes are looked up in
a whole-buffer array rather than by binary search among those bytes."""


@cache
def byte_table() -> npt.NDArray[np.uint8]:
    """Class of each byte value: ASCII characters, continuation bytes; lead bytes are
    looked up by code point."""
    out = np.full(256, wb.OTHER, dtype=np.uint8)
    out[:HIGH] = wb.table()[:HIGH]
    out[HIGH:0xC0] = wb.CONTINUATION
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


class Classes(NamedTuple):
    """The token class of the bytes of a buffer, kept only where it takes a lookup.

    An ASCII byte's class is its value's (:func:`byte_table`); the bytes of multi-byte
    characters (``high``, sorted) have theirs in ``kind``. Continuation bytes and
    Extend/Format/ZWJ characters (WB4) are *see-through* (``see``, sorted): never a
    boundary before them, and their class is that of the character before them; not at
    the start of a document, where such a character keeps its own class (``EXTEND``:
    never in a token), as Lucene has it at the start of a text.
    """

    data: npt.NDArray[np.uint8]
    high: Ints
    """Positions of the bytes of multi-byte characters."""
    kind: npt.NDArray[np.uint8]
    """Class of each of them (see-through ones: the class of the character before)."""
    see: Ints
    """Positions of see-through bytes."""
    see_next: Ints
    """For each, the first byte after its run of see-through bytes."""
    bases: Ints
    """Lead bytes of multi-byte characters that are not see-through."""
    dense: npt.NDArray[np.uint8] | None
    """Every byte's class, when multi-byte characters are common (else ``None``)."""

    def at(self, positions: Ints) -> npt.NDArray[np.uint8]:
        """The class of the bytes at ``positions`` (valid positions)."""
        if self.dense is not None:
            return self.dense[positions]
        value = self.data[positions]
        out = byte_table()[value]
        high = np.flatnonzero(value >= HIGH)
        if high.size:
            out[high] = self.kind[np.searchsorted(self.high, positions[high])]
        return out

    def next_base(self, at: Ints) -> Ints:
        """The first byte after ``at`` that starts a base character (or the end)."""
        nxt = at + 1
        if not self.see.size:
            return nxt
        index = np.minimum(np.searchsorted(self.see, nxt), self.see.size - 1)
        return np.where(self.see[index] == nxt, self.see_next[index], nxt)


def classes(buf: Buffer) -> Classes:
    """:class:`Classes` of ``buf``: work on its multi-byte characters only."""
    data, lead, cont = buf.data, buf.lead, buf.cont_at
    if (lead.size + cont.size) * DENSE > data.size:
        high = np.flatnonzero(data >= HIGH)
    else:
        high = np.sort(np.concatenate([lead, cont]))
    kind = np.full(high.size, wb.CONTINUATION, dtype=np.uint8)
    is_lead = data[high] >= 0xC0
    kind[is_lead] = wb.table()[code_points(data, lead)]
    see_through = (kind == wb.CONTINUATION) | (kind == wb.EXTEND)
    if high.size:  # an Extend character that starts a document is a base there (WB4)
        at = np.minimum(np.searchsorted(high, buf.doc_bytes[:-1]), high.size - 1)
        see_through[at[high[at] == buf.doc_bytes[:-1]]] = False
    bases = high[is_lead & ~see_through]
    see = high[see_through]
    see_next = see + 1
    if see.size:  # each takes the class of the byte before its run (the first byte: its own)
        new = np.ones(see.size, dtype=bool)  # a run of see-through bytes starts
        new[1:] = see[1:] != see_next[:-1]
        run = np.cumsum(new) - 1
        lasts = np.append(np.flatnonzero(new)[1:] - 1, see.size - 1)
        see_next = see_next[lasts][run]
        before = np.maximum(see[new] - 1, 0)
        value = data[before]
        base = byte_table()[value]
        high_before = np.flatnonzero(value >= HIGH)
        base[high_before] = kind[np.searchsorted(high, before[high_before])]
        kind[see_through] = base[run]
    dense = None
    if high.size * DENSE > data.size:
        dense = byte_table()[data]
        dense[high] = kind
    return Classes(data, high, kind, see, see_next, bases, dense)


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
