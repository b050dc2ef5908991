"""UTF-8 bytes as the seed's Java reads them: code points, Java whitespace, and rule 7's
normalization (whitespace runs as one space, Java-trimmed) read on the fly, forwards or
backwards, without materializing the normalized text.

Working on UTF-8 bytes is exact: normalization only touches ASCII bytes (whitespace,
controls), and equal byte strings that start with a lead byte are equal code point
strings, so byte matches are code point matches. Lengths are counted in code points.
"""

from __future__ import annotations

import numpy as np

from ragframe._kernels._compile import I64, U8, ZERO, in_python, internal, testable


def _collapsible_array(seg: U8) -> U8:
    """:func:`collapsible_u8` of every byte of ``seg`` (plain forms' numpy)."""
    return (seg == 32) | ((seg - np.uint8(9)) < np.uint8(5))  # type: ignore[no-any-return]


def _code_points_numpy(data: U8, start: int, end: int) -> int:
    """:func:`code_points` in whole-array numpy (its plain form)."""
    return int(np.count_nonzero((data[start:end] & 0xC0) != 0x80))


def _normalized_length_numpy(data: U8, start: int, end: int) -> int:
    """:func:`normalized_length` in whole-array numpy (its plain form)."""
    both = _collapsible_array(data[start:end])
    return end - start - int(np.count_nonzero(both[1:] & both[:-1]))


def _plain_numpy(data: U8, start: int, end: int) -> tuple[bool, bool]:
    """:func:`plain` in whole-array numpy (its plain form)."""
    seg = data[start:end]
    ascii_only = not len(seg) or int(seg.max()) < 0x80
    return ascii_only, len(seg) < 2 or int(np.maximum(seg[1:], seg[:-1]).min()) > 32


@in_python(_plain_numpy)
@internal
def plain(data: U8, start: int, end: int) -> tuple[bool, bool]:
    """Whether ``data[start:end]`` is all ASCII, and whether no two neighbouring bytes
    are both below 0x21 (then it has no whitespace run: normalization maps each
    whitespace byte to one space, raw and normalized positions agree: :func:`runless`).
    Two byte reductions the compiler vectorizes, where :func:`code_points` and
    :func:`normalized_length` counting runs take 37 and 70 ns for 400 bytes."""
    seg = data[start:end]
    top = np.uint8(0)
    for i in range(len(seg)):
        top = max(top, seg[i])
    return bool(top < 0x80), runless(seg)


def _collapsible_python(b: int) -> bool:
    """:func:`collapsible` in Python comparisons (its plain form: the compiled form's
    branch-free numpy scalar arithmetic costs ~4 us a byte as plain Python)."""
    return bool(b == 32 or 9 <= b <= 13)


def _collapsible_u8_python(b: int) -> np.uint8:
    """:func:`collapsible_u8` in Python comparisons (its plain form)."""
    return np.uint8(b == 32 or 9 <= b <= 13)


@in_python(_collapsible_python)
@internal
def collapsible(b: int) -> bool:
    """A byte of ``[ \\t\\n\\x0B\\f\\r]``, the runs normalization turns into one space."""
    return bool(collapsible_u8(b) != 0)


@in_python(_collapsible_u8_python)
@internal
def collapsible_u8(b: int) -> np.uint8:
    """:func:`collapsible` as 0 or 1 (no branch), for vectorized loops."""
    return np.uint8(b == 32) | np.uint8(np.uint8(b - np.uint8(9)) < np.uint8(5))


@internal
def lead(b: int) -> bool:
    """The first byte of a UTF-8 sequence (not a continuation byte)."""
    return (b & 0xC0) != 0x80


@internal
def decode(data: U8, pos: int) -> tuple[int, int]:
    """The code point starting at ``data[pos]`` and the position after it."""
    b = int(data[pos])  # int: 64 bits in plain Python too, as numba widens
    if b < 0x80:
        return b, pos + 1
    b1 = int(data[pos + 1]) & 0x3F
    if b < 0xE0:
        return ((b & 0x1F) << 6) | b1, pos + 2
    b2 = int(data[pos + 2]) & 0x3F
    if b < 0xF0:
        return ((b & 0x0F) << 12) | (b1 << 6) | b2, pos + 3
    cp = ((b & 0x07) << 18) | (b1 << 12) | (b2 << 6)
    return cp | (int(data[pos + 3]) & 0x3F), pos + 4


@testable
def java_whitespace(cp: int) -> bool:
    """Java ``Character.isWhitespace`` (SPEC 1, rule 7: the ASCII set, U+001C-U+001F, the
    Unicode space, line and paragraph separators except the no-break spaces)."""
    if cp < 0x80:
        return cp == 32 or (cp >= 9 and cp <= 13) or (cp >= 28 and cp <= 31)
    return (
        cp == 0x1680
        or (cp >= 0x2000 and cp <= 0x200A and cp != 0x2007)
        or cp == 0x2028
        or cp == 0x2029
        or cp == 0x205F
        or cp == 0x3000
    )


@in_python(_code_points_numpy)
@internal
def code_points(data: U8, start: int, end: int) -> int:
    seg = data[start:end]  # a loop over a slice vectorizes
    count = np.int64(0)
    for i in range(len(seg)):
        count += np.int64(np.int8(seg[i]) > -65)  # not a continuation byte (0x80-0xBF)
    return int(count)


@internal
def step(data: U8, pos: int, end: int) -> tuple[int, int]:
    """The normalized byte at raw ``pos`` (a whitespace run reads as one space) and the
    raw position after it."""
    b = data[pos]
    pos += 1
    if collapsible(b):
        while pos < end and collapsible(data[pos]):
            pos += 1
        return 32, pos
    return b, pos


@internal
def step_back(data: U8, pos: int, start: int) -> tuple[int, int]:
    """The normalized byte ending at raw ``pos`` (a whitespace run reads as one space)
    and the raw position where it starts: :func:`step` backwards."""
    pos -= 1
    b = data[pos]
    if collapsible(b):
        while pos > start and collapsible(data[pos - 1]):
            pos -= 1
        return 32, pos
    return b, pos


@internal
def normalize(data: U8, start: int, end: int, out: U8) -> int:
    """Rule 7's normalization of ``data[start:end]`` into ``out``; returns its length.

    Java's ``trim`` after collapsing strips every byte <= 0x20 at both ends, so trim
    the raw bytes first, then collapse the whitespace runs inside.
    """
    while start < end and data[start] <= 32:
        start += 1
    while end > start and data[end - 1] <= 32:
        end -= 1
    n = 0
    i = start
    while i < end:
        out[n], i = step(data, i, end)
        n += 1
    return n


@internal
def normalized_tail(data: U8, start: int, end: int, want: int, out: U8) -> int:
    """The last ``want`` (or fewer) bytes of the normalized ``data[start:end]``, written
    to the end of ``out[:want]``; returns how many were written (they end at ``want``)."""
    while end > start and data[end - 1] <= 32:
        end -= 1
    n = 0
    i = end
    while i > start and n < want:
        b, i = step_back(data, i, start)
        n += 1
        out[want - n] = b
    # what is left of the text may be only bytes the leading trim removes
    if n > 0 and out[want - n] <= 32:
        rest = i
        while rest > start and data[rest - 1] <= 32:
            rest -= 1
        if rest == start:
            while n > 0 and out[want - n] <= 32:
                n -= 1
    return n


@internal
def failure(pattern: U8, n: int, fail: I64) -> None:
    """Knuth-Morris-Pratt failure function of ``pattern[:n]``."""
    fail[0] = 0
    k = 0
    for i in range(1, n):
        while k > 0 and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k


@internal
def trimmed(data: U8, start: int, end: int) -> tuple[int, int]:
    """``data[start:end]`` without the bytes <= 0x20 at both ends (Java's ``trim``)."""
    while start < end and data[start] <= 32:
        start += 1
    while end > start and data[end - 1] <= 32:
        end -= 1
    return start, end


@internal
def runless(seg: U8) -> bool:
    """Whether no two neighbouring bytes of ``seg`` are both below 0x21: then it has no
    whitespace run (a run's bytes are all below 0x21). The least of the larger of each
    two neighbours, a byte reduction the compiler vectorizes (13 ns for 400 bytes,
    where counting the pairs took 60)."""
    least = np.uint8(255)
    for i in range(len(seg) - 1):
        least = min(least, max(seg[i], seg[i + 1]))
    return bool(least > 32)


@in_python(_normalized_length_numpy)
@internal
def normalized_length(data: U8, start: int, end: int) -> int:
    """Length in bytes of the normalized ``data[start:end]`` (already trimmed). Text
    without two neighbouring bytes below 0x21 (most prose) is told at once by
    :func:`runless`, about five times as fast as the exact count."""
    seg = data[start:end]
    if runless(seg):
        return len(seg)
    extra = np.int64(0)
    for i in range(1, len(seg)):
        extra += np.int64(collapsible_u8(seg[i]) & collapsible_u8(seg[i - 1]))
    return len(seg) - int(extra)


@internal
def same(a: U8, x: int, x_end: int, b: U8, y: int, y_end: int, count: int) -> tuple[int, int]:
    """Compare ``count`` normalized bytes of ``a`` from raw ``x`` with ``b`` from raw
    ``y``. Returns the raw position in ``b`` after them (-1: they differ) and the code
    points compared."""
    units = 0
    for _ in range(count):
        if x >= x_end or y >= y_end:
            return -1, units
        bx, x = step(a, x, x_end)
        by, y = step(b, y, y_end)
        if bx != by:
            return -1, units
        units += lead(bx)
    return y, units


@internal
def budget_cut(text: U8, limit: int, window: int) -> int:
    """The byte where rule 10 cuts ``text`` (longer than ``limit`` code points): at the
    last Java whitespace among positions ``limit - 1`` down to, not including,
    ``max(0, limit - window)``, else where code point ``limit`` starts."""
    pos = ZERO  # the byte where code point ``limit`` starts
    seen = 0
    while seen < limit:
        pos += 1
        while pos < len(text) and not lead(text[pos]):
            pos += 1
        seen += 1
    cut = pos
    lowest = max(0, limit - window)
    at = limit
    while at - 1 > lowest:  # positions limit - 1 down to lowest + 1
        pos -= 1
        while not lead(text[pos]):
            pos -= 1
        at -= 1
        cp, _ = decode(text, pos)
        if java_whitespace(cp):
            return pos
    return cut
