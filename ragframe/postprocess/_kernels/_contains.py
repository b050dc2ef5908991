"""Rule 3's test: is a candidate's normalized text contained, at word boundaries, in a
selected chunk's (``" " + cand + " "`` in ``" " + selected + " "``)? The places are
filtered by the candidate's first bytes, 8 places at a time (:func:`contains_from_head`),
or compared on the fly (:func:`contains_raw`), within a work budget; past it, by
Knuth-Morris-Pratt over normalized copies."""

from __future__ import annotations

import numpy as np

from ragframe._kernels._buffers import HIGH, ONES, load_u64, zero_bytes
from ragframe._kernels._compile import I64, U8, internal, testable
from ragframe.postprocess._kernels._text import collapsible, same, step

BELOW = np.uint64(0x2121212121212121)
EIGHT = np.uint64(8)


@internal
def _low(x: np.uint64) -> np.uint64:
    """The top bit of each byte of ``x`` below 0x21 (exact: no borrow between bytes)."""
    return ~(((x | HIGH) - BELOW) | x) & HIGH


@testable
def head_of(needle: U8, at: int, start: int) -> tuple[np.uint64, np.uint64, np.uint64]:
    """The candidate's first 8 bytes from ``start``, its first byte above 0x20, as one
    little-endian word, the mask of those a place must equal (its bytes above 0x20 up to the last
    one: a byte <= 0x20 matches anything, and so do the bytes after the last), and the
    mask of all bytes up to that last one. Mask 0 (no filter) where those bytes do not
    map one to one onto the normalized text's first bytes: fewer than 8 bytes left, or
    two neighbouring bytes <= 0x20 (a run, which normalization collapses). ``at``:
    the candidate's address."""
    if start + 8 > len(needle):
        return np.uint64(0), np.uint64(0), np.uint64(0)
    head = load_u64(at + start)  # type: ignore[call-arg]
    mask = HIGH & ~_low(head)  # the top bit of each byte above 0x20
    last = np.uint64(0)  # the span up to the last byte above 0x20 (the first is one)
    for j in range(8):
        if (mask >> np.uint64(8 * j + 7)) & np.uint64(1):
            last = np.uint64(8 * j + 8)
    span = ~np.uint64(0) if last == np.uint64(64) else (np.uint64(1) << last) - np.uint64(1)
    low = _low(head)
    if low & (low >> EIGHT) & span:  # a run within the span
        return np.uint64(0), np.uint64(0), np.uint64(0)
    bytes_above = (mask >> np.uint64(7)) * np.uint64(0xFF)  # 0xFF where above 0x20
    return head & span, bytes_above & span, span


@internal
def _place(at: int, p: int, head: np.uint64, mask: np.uint64, span: np.uint64) -> bool:
    """Whether the normalized text from raw place ``p`` (at least 8 bytes before the
    end of the text) may start with the head: its raw bytes equal it, or a run among
    them shifts normalized from raw positions (then it cannot tell: True)."""
    x = load_u64(at + p)  # type: ignore[call-arg]
    if ((x ^ head) & mask) == 0:
        return True
    low = _low(x)
    return bool((low & (low >> EIGHT) & span) != np.uint64(0))


@internal
def _at_place(needle: U8, x: int, x_end: int, hay: U8, y: int, y_end: int) -> tuple[bool, int]:
    """Whether the normalized ``needle[x:x_end]`` (trimmed) is the normalized ``hay``
    from raw place ``y`` on, followed by a word end (a whitespace byte, or ``y_end``);
    and how many bytes were compared. Reads the needle only as far as it matches."""
    work = 0
    while x < x_end:
        if y >= y_end:
            return False, work
        bx, x = step(needle, x, x_end)
        by, y = step(hay, y, y_end)
        work += 1
        if bx != by:
            return False, work
    return y == y_end or collapsible(hay[y]), work


@internal
def _starts(
    at: int, p: int, first: np.uint64, second: np.uint64, any_second: np.uint64
) -> np.uint64:
    """The top bit of each of the places ``p .. p + 7`` (bytes ``p - 1 .. p + 8`` read)
    that may begin with the head: its first byte the head's, its second the head's (or
    any: ``any_second``), the byte before <= 0x20 (a word start is after whitespace)."""
    one = zero_bytes(load_u64(at + p) ^ first)  # type: ignore[call-arg]
    two = zero_bytes(load_u64(at + p + 1) ^ second) | any_second  # type: ignore[call-arg]
    return one & two & _low(load_u64(at + p - 1))  # type: ignore[call-arg]


@testable
def contains_from_head(
    hay: U8,
    at: int,
    h0: int,
    h1: int,
    head: tuple[np.uint64, np.uint64, np.uint64],
    needle: U8,
    n0: int,
    n1: int,
    nn: int,
    budget: int,
) -> int:
    """:func:`contains_raw` for a candidate with a head (:func:`head_of`, mask not 0)
    and normalized length ``nn``: tried only at the word starts of the normalized
    ``hay[h0:h1]`` (trimmed; ``at``: its address) that leave room for ``nn`` bytes and
    may begin with the head: first whether there is any, 8 places at a time without a
    branch (their first two bytes and the byte before), then each such place, 8 bytes
    at once (:func:`_place`), then compared as far as it matches. 1: contained, 0: not,
    -1: over ``budget`` compared bytes."""
    word, mask, span = head
    n = len(hay)
    last = h1 - nn  # the last place with room for the candidate
    if last < h0:
        return 0
    lead = int(word & np.uint64(0xFF))
    first = (word & np.uint64(0xFF)) * ONES
    any_second = HIGH if ((mask >> EIGHT) & np.uint64(0xFF)) == np.uint64(0) else np.uint64(0)
    second = ((word >> EIGHT) & np.uint64(0xFF)) * ONES
    ends = min(last + 1, n - 8)  # places before it: their bytes can be read in blocks
    some = np.uint64(0)
    p = h0 + 1
    while p < ends:  # any place at all? (the last block's places past ``ends`` dropped)
        found = _starts(at, p, first, second, any_second)
        if p + 8 > ends:
            found &= (np.uint64(1) << np.uint64(8 * (ends - p))) - np.uint64(1)
        some |= found
        p += 8
    tail = max(ends, h0 + 1)  # the last places, one by one
    for q in range(tail, last + 1):
        if int(hay[q]) == lead and collapsible(hay[q - 1]):
            some = HIGH
    start = int(hay[h0]) == lead
    if some == 0 and not start:
        return 0
    hay = hay[:h1]  # places compare up to the trimmed end
    work = 0
    if start and (h0 + 8 > n or _place(at, h0, word, mask, span)):
        found_at, work = _tried(needle, n0, n1, hay, h0, work, budget)
        if found_at:
            return found_at
    p = h0 + 1
    while p < ends:  # the blocks again, this time place by place where one may
        found = _starts(at, p, first, second, any_second)
        if found:
            for j in range(min(8, ends - p)):
                q = p + j
                bit = (found >> np.uint64(8 * j + 7)) & np.uint64(1)
                if bit and collapsible(hay[q - 1]) and _place(at, q, word, mask, span):
                    found_at, work = _tried(needle, n0, n1, hay, q, work, budget)
                    if found_at:
                        return found_at
        p += 8
    for q in range(tail, last + 1):
        may = int(hay[q]) == lead and collapsible(hay[q - 1])
        if may and (q + 8 > n or _place(at, q, word, mask, span)):
            found_at, work = _tried(needle, n0, n1, hay, q, work, budget)
            if found_at:
                return found_at
    return 0


@internal
def _tried(
    needle: U8, n0: int, n1: int, hay: U8, q: int, work: int, budget: int
) -> tuple[int, int]:
    """Place ``q`` passed the filters: 1 if the candidate is there, -1 once past the
    work budget, else 0; and the work so far."""
    there, units = _at_place(needle, n0, n1, hay, q, len(hay))
    work += units
    if there:
        return 1, work
    return (-1 if work > budget else 0), work


@internal
def contains_words(hay: U8, h0: int, h1: int, needle: U8, n: int, fail: I64) -> bool:
    """``" " + needle + " "`` is a substring of ``" " + hay[h0:h1] + " "`` (both
    normalized, ``needle`` non-empty, ``fail`` its failure function): linear time."""
    if n > h1 - h0:
        return False
    q = 0
    for i in range(h0, h1):
        b = hay[i]
        while q > 0 and b != needle[q]:
            q = fail[q - 1]
        if b == needle[q]:
            q += 1
        if q == n:
            begin = i + 1 - n
            if (begin == h0 or hay[begin - 1] == 32) and (i + 1 == h1 or hay[i + 1] == 32):
                return True
            q = fail[q - 1]
    return False


@testable
def contains_raw(
    hay: U8, h0: int, h1: int, hn: int, needle: U8, n0: int, n1: int, nn: int, budget: int
) -> int:
    """Word-bounded containment of the normalized ``needle[n0:n1]`` (trimmed, normalized
    length ``nn`` > 0) in the normalized ``hay[h0:h1]`` (trimmed; ``hn``: its normalized
    length, or more), comparing on the fly. 1: contained, 0: not, -1: over ``budget``
    steps."""
    slack = hn - nn
    if slack < 0:
        return 0
    first = needle[n0]
    y = h0
    boundary = True
    work = 0
    for _ in range(slack + 1):
        if y >= h1:  # ``hn`` was more than the length
            break
        if boundary and hay[y] == first:
            after, units = same(needle, n0, n1, hay, y, h1, nn)
            work += units
            if after >= 0 and (after == h1 or collapsible(hay[after])):
                return 1
        b, y = step(hay, y, h1)
        boundary = b == 32
        work += 1
        if work > budget:
            return -1
    return 0
