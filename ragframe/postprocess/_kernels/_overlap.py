"""Rule 7, ``remove_overlap``: the seed's overlap length L between a block's text and
the next chunk (the largest L >= 20 such that the block's last L normalized characters
are the chunk's first L), and the seed's walk over the raw chunk to where the appended
text starts. Also the ``overlap="offsets"`` cut."""

from __future__ import annotations

import numpy as np

from ragframe._kernels._buffers import ONES, load_u64, zero_bytes
from ragframe._kernels._compile import I64, U8, ZERO, internal, testable
from ragframe.postprocess._kernels._text import (
    code_points,
    collapsible,
    collapsible_u8,
    decode,
    failure,
    java_whitespace,
    lead,
    normalize,
    normalized_length,
    normalized_tail,
    same,
    step,
    step_back,
    trimmed,
)

MIN_OVERLAP = 20
"""Shortest overlap ``remove_overlap`` looks for, in normalized characters (SPEC 1,
rule 7)."""


@internal
def _skip_java_whitespace(data: U8, pos: int, end: int) -> tuple[int, int]:
    """Skip the Java whitespace at ``data[pos:end]``: the position after it and the code
    points skipped."""
    skipped = 0
    while pos < end:
        cp, nxt = decode(data, pos)
        if not java_whitespace(cp):
            break
        pos = nxt
        skipped += 1
    return pos, skipped


@testable
def _skip_units(data: U8, start: int, end: int, units: int) -> tuple[int, int]:
    """The seed's walk (SPEC 1, rule 7): skip leading Java whitespace, then ``units``
    characters, a whitespace run counting one at its first character. The walk stops
    right after the character that makes ``units``: when that is a run's first
    character, the rest of the run stays in the text. Returns the byte position and
    the code points skipped."""
    pos, skipped = _skip_java_whitespace(data, start, end)
    for unit in range(units):
        if pos >= end:
            break
        cp, pos = decode(data, pos)
        skipped += 1
        if java_whitespace(cp) and unit + 1 < units:  # the rest of the run counts with it
            pos, more = _skip_java_whitespace(data, pos, end)
            skipped += more
    return pos, skipped


@testable
def _overlap_units(out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, budget: int) -> int:
    """The seed's overlap length L (code points, 0: none) between the normalized block
    text ``out[b0:b1]`` and chunk ``data[t0:t1]``, comparing on the fly.

    The block's normalized tail is read backwards, nearest the end first, so the last
    match is the longest; a place is compared in full only where its next 8 normalized
    bytes equal the chunk's first 8 (kept packed in one integer). -1: over ``budget``.
    """
    e0, e1 = trimmed(out, b0, b1)
    x0, x1 = trimmed(data, t0, t1)
    if e1 == e0 or x1 == x0:
        return 0
    limit = normalized_length(data, x0, x1)
    if limit < MIN_OVERLAP:
        return 0
    tail = max(e0, e1 - limit)
    if limit == x1 - x0 and normalized_length(out, tail, e1) == e1 - tail:
        # no whitespace run in the chunk or in the block's last ``limit`` bytes, so
        # normalized and raw positions agree: compare raw bytes, runs mapped to " "
        return _overlap_plain(out[tail:e1], data[x0:x1], budget, False)
    eight = np.uint64(8)
    head = np.uint64(0)
    pos = x0
    for i in range(8):  # limit >= MIN_OVERLAP > 8
        v, pos = step(data, pos, x1)
        head |= np.uint64(v) << np.uint64(8 * i)
    window = np.uint64(0)
    best = 0
    q = e1
    distance = 0  # normalized bytes from q to the end of the block text
    work = 0
    while q > e0 and distance < limit:
        v, q = step_back(out, q, e0)
        window = (window << eight) | np.uint64(v)
        distance += 1
        if distance >= MIN_OVERLAP and window == head:
            after, units = same(out, q, e1, data, x0, x1, distance)
            work += distance
            if after >= 0:
                best = units
            if work > budget:
                return -1
    return best if best >= MIN_OVERLAP else 0


@internal
def _space(b: int) -> np.uint64:
    """A raw byte as normalization reads it where no run is longer than one byte."""
    return np.uint64(32) if collapsible(b) else np.uint64(b)


@testable
def _mismatch(a: U8, b: U8, count: int) -> int:
    """The first of the ``count`` places (within both) where ``a`` and ``b`` differ as
    normalization reads them where no run is longer than one byte (any whitespace byte
    is a space), ``count`` when none does. Equal 8-byte words are passed at once
    (:func:`load_u64`: a place's bytes mostly equal raw), the rest byte by byte."""
    x, y = a.ctypes.data, b.ctypes.data
    j = 0
    while j < count:
        if j + 8 <= count and load_u64(x + j) == load_u64(y + j):  # type: ignore[call-arg]
            j += 8
        elif _space(a[j]) == _space(b[j]):
            j += 1
        else:
            return j
    return count


@internal
def _head_filter(chunk: U8) -> tuple[np.uint64, np.uint64]:
    """The chunk's first 8 bytes as one little-endian word, and the mask of those a
    place must equal: a byte <= 0x20 matches anything (whitespace of any kind
    normalizes to a space; a control byte is left to the comparison)."""
    head = np.uint64(0)
    mask = np.uint64(0)
    for j in range(8):
        b = np.uint64(chunk[j])
        if b > np.uint64(32):
            head |= b << np.uint64(8 * j)
            mask |= np.uint64(0xFF) << np.uint64(8 * j)
    return head, mask


ANCHORED = 16
"""Places one anchor test passes over (:func:`_any_anchored`)."""


@internal
def _anchors(chunk: U8) -> tuple[int, int]:
    """The first and the last of the chunk's first 8 bytes above 0x20 (-1 twice when
    none is): bytes a place must hold as they are (a whitespace byte of the chunk may
    stand for any other)."""
    first, last = -1, -1
    for j in range(8):
        if chunk[j] > 32:
            last = j
            if first < 0:
                first = j
    return first, last


@internal
def _any_anchored(address: int, apart: int, x: np.uint64, y: np.uint64) -> bool:
    """Whether any of the :data:`ANCHORED` places from ``address`` (where each place's
    first anchor is, :func:`_anchors`) holds byte ``x`` there and ``y`` ``apart``
    bytes on (``x`` and ``y``: the anchors' bytes repeated, :data:`ONES`): four loads
    and two zero-byte tests, where :func:`_any_head` takes four loads for four places."""
    a = (load_u64(address) ^ x) | (load_u64(address + apart) ^ y)  # type: ignore[call-arg]
    b = (load_u64(address + 8) ^ x) | (load_u64(address + 8 + apart) ^ y)  # type: ignore[call-arg]
    return bool((zero_bytes(a) | zero_bytes(b)) != np.uint64(0))


@internal
def _any_head(address: int, head: np.uint64, mask: np.uint64) -> bool:
    """Whether any of the 4 places from ``address`` may start with the chunk's head
    (:func:`_head_filter`): one branch for four loads."""
    a = (load_u64(address) ^ head) & mask  # type: ignore[call-arg]
    b = (load_u64(address + 1) ^ head) & mask  # type: ignore[call-arg]
    c = (load_u64(address + 2) ^ head) & mask  # type: ignore[call-arg]
    d = (load_u64(address + 3) ^ head) & mask  # type: ignore[call-arg]
    return bool((a == 0) | (b == 0) | (c == 0) | (d == 0))


@internal
def _overlap_plain(tail: U8, chunk: U8, budget: int, ascii_only: bool) -> int:
    """:func:`_overlap_units` where raw bytes are normalized bytes (no whitespace run
    in ``tail``, the block's last bytes, or in ``chunk``; both trimmed, the chunk at
    least :data:`MIN_OVERLAP` bytes): the earliest place in ``tail`` whose rest is a
    prefix of ``chunk`` gives the longest overlap.

    A place is compared only where its first 8 bytes equal the chunk's
    (:func:`_head_filter`; one unaligned load a place, :func:`load_u64`, four places
    a branch, :func:`_any_head`: 370 -> 150 ns a 400-byte chunk against a 4-byte
    filter of 32 places at a time), and those tested :data:`ANCHORED` places at a
    time for two of those bytes first (:func:`_any_anchored`). A place that passes is
    compared 8 bytes a step (:func:`_mismatch`; with the anchors, 200 -> 120 ns an
    append on issue 27's chunks). ``ascii_only``: the chunk is ASCII (a byte is a
    code point)."""
    n, m = len(tail), len(chunk)
    lo, hi = max(0, n - m), n - MIN_OVERLAP + 1  # places: MIN_OVERLAP bytes from each
    head, mask = _head_filter(chunk)
    first, last = _anchors(chunk)
    x, y = np.uint64(chunk[max(first, 0)]) * ONES, np.uint64(chunk[max(last, 0)]) * ONES
    at = tail.ctypes.data  # a place's 8 bytes end before ``n``: hi - 1 + 8 < n
    work = 0
    q = checked = lo  # the places below ``checked`` passed the anchors
    while q < hi:
        if q >= checked and first >= 0 and q + ANCHORED <= hi:
            if not _any_anchored(at + q + first, last - first, x, y):
                q += ANCHORED
                continue
            checked = q + ANCHORED
        if q + 4 <= hi and not _any_head(at + q, head, mask):
            q += 4
            continue
        here = q
        q += 1
        if (load_u64(at + here) ^ head) & mask:  # type: ignore[call-arg]
            continue
        distance = n - here  # >= MIN_OVERLAP
        j = _mismatch(tail[here:], chunk, distance)
        if j == distance:
            units = distance if ascii_only else code_points(chunk, ZERO, distance)
            return units if units >= MIN_OVERLAP else 0
        work += j + 1
        if work > budget:
            return -1
    return 0


@internal
def _ascii_whitespace(b: int) -> np.uint8:
    """1 for an ASCII byte Java calls whitespace (``[\\t\\n\\x0B\\f\\r\\x1C-\\x20]``)."""
    return collapsible_u8(b) | np.uint8(np.uint8(b - np.uint8(28)) < np.uint8(4))


@testable
def _skip_plain(data: U8, start: int, end: int, units: int) -> int:
    """:func:`_skip_units` where the answer is plain: the byte position after ``units``
    characters from ``start`` when they are ASCII, the first is no Java whitespace and
    no whitespace among them is followed by whitespace or a non-ASCII byte (no run to
    skip, no leading whitespace: one byte per character); -1 otherwise."""
    stop = start + units
    if stop >= end or units == 0:
        return -1
    a, b = data[start:stop], data[start + 1 : stop + 1]
    bad = np.int64(_ascii_whitespace(data[start]))
    for i in range(len(a)):
        after = _ascii_whitespace(b[i]) | np.uint8(b[i] >= 128)  # may start a run
        bad += np.int64(np.uint8(a[i] >= 128) | (_ascii_whitespace(a[i]) & after))
    return stop if bad == 0 else -1


@internal
def _plain_units(out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, budget: int) -> int:
    """:func:`_overlap_units` where the chunk is ASCII and neither text has two
    neighbouring bytes below 0x21 (:func:`~._text.plain`): normalized bytes are the raw
    bytes, so nothing is counted before the search (:func:`_overlap_plain`)."""
    e0, e1 = trimmed(out, b0, b1)
    x0, x1 = trimmed(data, t0, t1)
    if e1 == e0 or x1 - x0 < MIN_OVERLAP:
        return 0
    return _overlap_plain(out[max(e0, e1 - (x1 - x0)) : e1], data[x0:x1], budget, True)


@internal
def overlap_cut(
    out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, scratch: tuple[U8, U8, I64],
    flat: bool,
) -> tuple[int, int]:  # fmt: skip
    """``remove_overlap(out[b0:b1], data[t0:t1])`` (both non-empty): the byte position
    in the chunk where the appended text starts, and the code points skipped; (-1, 0)
    when no overlap is found (the seed appends "\n" + the whole chunk). ``flat``: the
    chunk is ASCII and neither text has two neighbouring bytes below 0x21
    (:func:`~._text.plain`), so no normalized length is counted and a unit is a byte;
    ``scratch``: the linear-time search's buffers (:func:`_overlap_kmp`)."""
    budget = 16 * (t1 - t0) + 256
    if flat:
        units = _plain_units(out, b0, b1, data, t0, t1, budget)
    else:
        units = _overlap_units(out, b0, b1, data, t0, t1, budget)
    if units < 0:  # pathological text: normalize both, then a linear-time search
        units = _overlap_kmp(out, b0, b1, data, t0, t1, *scratch)
    if units == 0:
        return -1, 0
    if flat and t0 + units < t1 and not _ascii_whitespace(data[t0]):
        return t0 + units, units  # :func:`_skip_plain`'s answer: no run, one byte a unit
    stop = _skip_plain(data, t0, t1, units)
    if stop >= 0:
        return stop, units
    return _skip_units(data, t0, t1, units)


@internal
def _overlap_kmp(
    out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, nxt: U8, tail: U8, fail: I64
) -> int:
    """:func:`_overlap_units` by normalizing both texts and Knuth-Morris-Pratt."""
    nx = normalize(data, t0, t1, nxt)
    if nx < MIN_OVERLAP:
        return 0
    ne = normalized_tail(out, b0, b1, nx, tail)
    if ne < MIN_OVERLAP:
        return 0
    failure(nxt, nx, fail)
    q = ZERO  # int64 from the start: one signature of code_points below
    for i in range(nx - ne, nx):
        b = tail[i]
        while q > 0 and b != nxt[q]:
            q = fail[q - 1]
        if b == nxt[q]:
            q += 1
        if q == nx and i + 1 < nx:
            q = fail[q - 1]
    # q: the longest prefix of the chunk that the block ends with, in bytes
    units = code_points(nxt, ZERO, q)
    return units if units >= MIN_OVERLAP else 0


@internal
def offsets_cut(
    data: U8, t0: int, t1: int, start: float, end: float, block_end: float
) -> tuple[int, int]:
    """``overlap="offsets"``: where the appended text starts (-1: "\\n" + the chunk);
    the offsets are floats (whole numbers, or NaN for a chunk the store lacks)."""
    if end <= block_end:
        return t1, code_points(data, t0, t1)
    if start <= block_end:
        units = block_end - start
        pos = t0
        skipped = 0
        while pos < t1 and skipped < units:
            pos += 1
            while pos < t1 and not lead(data[pos]):
                pos += 1
            skipped += 1
        return pos, skipped
    return -1, 0
