"""Token counts of tiktoken's ``cl100k_base`` computed in place: its pre-tokenizer on
ASCII text and its byte-pair merge, so that token budgets count whole columns without
a call into Python per text (:mod:`ragframe.postprocess._bpe` wraps these).

tiktoken's ``encode_ordinary`` splits a text with one regular expression (the encoding's
``_pat_str``) and encodes each piece on its own: a piece that is a token is one token,
else its bytes are merged pairwise, lowest rank first (the leftmost of equal ranks),
until no adjacent pair is a token. This file does the same: :func:`piece_end` is
``cl100k_base``'s expression read alternative by alternative, in its order, for text
whose bytes are all ASCII (there, ``\\p{L}`` is ``[A-Za-z]``, ``\\p{N}`` is ``[0-9]``
and ``\\s`` is ``[\\t\\n\\v\\f\\r ]``); :func:`piece_tokens` is tiktoken's merge loop.
A text with any other byte is counted by tiktoken itself (the caller's fallback): its
character classes need Unicode's tables, which tiktoken's Rust ``regex`` has and these
kernels do not.

The vocabulary (the token bytes and their ranks) is an open-addressing hash table of
token indexes (:func:`build_table`), its keys' bytes end to end in one pool.
"""

from __future__ import annotations

import numpy as np

from ragframe.postprocess._kernels._buffers import text_at
from ragframe.postprocess._kernels._compile import I64, U8, compiled, internal, testable

NO_RANK = 1 << 62
"""The rank of a pair that is not a token (above every real rank)."""

OTHER, LETTER, DIGIT, BLANK, NEWLINE = 0, 1, 2, 3, 4
"""The ASCII classes :func:`piece_end` tells apart (the table :func:`classes` makes)."""

_FNV_OFFSET = -3750763034362895579  # 0xcbf29ce484222325 as a signed 64-bit integer
_FNV_PRIME = 1099511628211


def classes() -> U8:
    """Each byte's class for :func:`piece_end` (bytes past ASCII: :data:`OTHER`,
    never looked at: such a text is not counted here)."""
    table = np.full(256, OTHER, dtype=np.uint8)
    table[ord("A") : ord("Z") + 1] = LETTER
    table[ord("a") : ord("z") + 1] = LETTER
    table[ord("0") : ord("9") + 1] = DIGIT
    table[[9, 11, 12, 32]] = BLANK
    table[[10, 13]] = NEWLINE
    return table


@internal
def key_hash(data: U8, start: int, end: int) -> int:
    """A 64-bit hash of ``data[start:end]`` (FNV-1a, then its high bits folded in)."""
    h = _FNV_OFFSET
    for k in range(start, end):
        h = (h ^ data[k]) * _FNV_PRIME
    return h ^ (h >> 29)


@compiled
def build_table(pool: U8, key_at: I64, key_len: I64, slots: I64) -> None:
    """Fill ``slots`` (a power of two of them, all -1, more than the keys) with the
    index of each key ``pool[key_at[k]:key_at[k] + key_len[k]]`` at its hash's slot or
    the next free one after it."""
    mask = len(slots) - 1
    for k in range(len(key_at)):
        slot = key_hash(pool, key_at[k], key_at[k] + key_len[k]) & mask
        while slots[slot] >= 0:
            slot = (slot + 1) & mask
        slots[slot] = k


@internal
def rank_of(
    data: U8, start: int, end: int, pool: U8, key_at: I64, key_len: I64, rank: I64, slots: I64
) -> int:
    """The rank of the token ``data[start:end]``, or :data:`NO_RANK`."""
    mask = len(slots) - 1
    n = end - start
    slot = key_hash(data, start, end) & mask
    while True:
        k = slots[slot]
        if k < 0:
            return NO_RANK
        if key_len[k] == n:
            at = key_at[k]
            same = True
            for j in range(n):
                if pool[at + j] != data[start + j]:
                    same = False
                    break
            if same:
                return rank[k]  # type: ignore[no-any-return]
        slot = (slot + 1) & mask


@internal
def piece_tokens(
    data: U8,
    start: int,
    end: int,
    pool: U8,
    key_at: I64,
    key_len: I64,
    rank: I64,
    slots: I64,
    bounds: I64,
    ranks: I64,
) -> int:
    """The number of tokens tiktoken encodes the piece ``data[start:end]`` into: one if
    it is a token, else what its byte-pair merge leaves (``bounds`` and ``ranks``:
    scratch of at least ``end - start + 1``)."""
    n = end - start
    if n <= 1:
        return n
    if rank_of(data, start, end, pool, key_at, key_len, rank, slots) != NO_RANK:
        return 1
    for i in range(n - 1):
        bounds[i] = start + i
        ranks[i] = rank_of(data, start + i, start + i + 2, pool, key_at, key_len, rank, slots)
    bounds[n - 1], ranks[n - 1] = end - 1, NO_RANK
    bounds[n], ranks[n] = end, NO_RANK
    parts = n + 1  # part i is data[bounds[i]:bounds[i + 1]]; ranks[i]: of parts i and i+1
    while True:
        best, at = NO_RANK, -1
        for i in range(parts - 1):
            if ranks[i] < best:
                best, at = ranks[i], i
        if at < 0:
            return parts - 1
        if at > 0:
            ranks[at - 1] = (
                rank_of(data, bounds[at - 1], bounds[at + 2], pool, key_at, key_len, rank, slots)
                if at + 2 < parts
                else NO_RANK
            )
        ranks[at] = (
            rank_of(data, bounds[at], bounds[at + 3], pool, key_at, key_len, rank, slots)
            if at + 3 < parts
            else NO_RANK
        )
        for i in range(at + 1, parts - 1):
            bounds[i] = bounds[i + 1]
            ranks[i] = ranks[i + 1]
        parts -= 1


@testable
def piece_end(data: U8, i: int, n: int, cls: U8) -> int:
    """Where the piece of ``data[:n]`` (ASCII) that starts at ``i`` ends, by
    ``cl100k_base``'s expression, its alternatives tried in order::

        '(?i:[sdmt]|ll|ve|re)          a contraction
        [^\\r\\n\\p{L}\\p{N}]?+\\p{L}++     letters, after one other character or none
        \\p{N}{1,3}+                     up to three digits
         ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+    other characters, after a space or none, then newlines
        \\s++$                           blanks to the end
        \\s*[\\r\\n]                       blanks to the last newline among them
        \\s+(?!\\S)                      blanks but the last, before a non-blank
        \\s                              one blank
    """
    b = data[i]
    k = cls[b]
    if b == 39 and i + 1 < n:  # '
        x = data[i + 1] | 32  # lower case (only letters are compared)
        if x == 115 or x == 100 or x == 109 or x == 116:  # s d m t
            return i + 2
        if i + 2 < n:
            y = data[i + 2] | 32
            if (x == 108 and y == 108) or (x == 118 and y == 101) or (x == 114 and y == 101):
                return i + 3  # ll ve re
    j = i + 1 if (k == OTHER or k == BLANK) else i  # noqa: SIM109 -- compiled
    if j < n and cls[data[j]] == LETTER:
        j += 1
        while j < n and cls[data[j]] == LETTER:
            j += 1
        return j
    if k == DIGIT:
        j = i + 1
        while j < n and j < i + 3 and cls[data[j]] == DIGIT:
            j += 1
        return j
    j = i + 1 if b == 32 else i
    if j < n and cls[data[j]] == OTHER:
        j += 1
        while j < n and cls[data[j]] == OTHER:
            j += 1
        while j < n and cls[data[j]] == NEWLINE:
            j += 1
        return j
    # k is BLANK or NEWLINE: a run of blanks
    end = i
    last = -1
    while end < n and cls[data[end]] >= BLANK:
        if cls[data[end]] == NEWLINE:
            last = end
        end += 1
    if end == n:
        return n
    if last >= 0:
        return last + 1
    if end - i >= 2:
        return end - 1
    return i + 1


@internal
def is_ascii(data: U8) -> bool:
    """Whether every byte of ``data`` is ASCII."""
    for b in data:  # noqa: SIM110 -- compiled loop, no generator
        if b >= 128:
            return False
    return True


CACHE_SLOTS = 1 << 16
"""Pieces a kernel call remembers the counts of: a direct-mapped cache of short pieces
(most pieces of a text are its language's words, and a piece that is not a token
costs a merge)."""
SHORT = 15
"""The longest piece the cache keeps, in bytes: its bytes and length packed into two
64-bit keys, compared at once."""


@internal
def count_tail(
    data: U8,
    start: int,
    end: int,
    cls: U8,
    pool: U8,
    key_at: I64,
    key_len: I64,
    rank: I64,
    slots: I64,
    bounds: I64,
    ranks: I64,
    seen_key: I64,
    seen_count: I64,
) -> tuple[int, int, int]:
    """The token count of the ASCII text ``data[start:end]`` (its pieces' counts, those
    of pieces up to :data:`SHORT` bytes remembered in ``seen_key``, two keys a slot (0:
    empty), and ``seen_count``), with where its last piece starts and
    the count before that piece: ``(count, last_start, count_before_last)``.

    What makes a merge's count incremental: in the text ``a + b``, every piece of
    ``a`` but its last is a piece of ``a + b`` too (no alternative of the expression
    looks behind a piece's start, and each one that ends a piece before the end of
    ``a`` read nothing past it), so ``count(a + b)`` is ``count_before_last`` of ``a``
    plus the count of ``a[last_start:] + b``."""
    mask = len(seen_count) - 1
    total = 0
    before = 0
    last = start
    i = start
    while i < end:
        j = piece_end(data, i, end, cls)
        n = j - i
        if n == 1:
            count = 1
        elif n <= SHORT:
            low = 0
            high = n << 56
            for k in range(min(n, 8)):
                low |= int(data[i + k]) << (8 * k)
            for k in range(8, n):
                high |= int(data[i + k]) << (8 * (k - 8))
            slot = (((low ^ (high * 31)) * -7046029254386353131) >> 40) & mask
            if seen_key[2 * slot] == low and seen_key[2 * slot + 1] == high:
                count = seen_count[slot]
            else:
                count = piece_tokens(data, i, j, pool, key_at, key_len, rank, slots, bounds, ranks)
                seen_key[2 * slot], seen_key[2 * slot + 1] = low, high
                seen_count[slot] = count
        else:
            count = piece_tokens(data, i, j, pool, key_at, key_len, rank, slots, bounds, ranks)
        before = total
        last = i
        total += count
        i = j
    return total, last, before


@compiled
def all_ascii(address: I64, length: I64) -> bool:
    """Whether every text (read in place) is ASCII."""
    for t in range(len(address)):  # noqa: SIM110 -- compiled loop, no generator
        if not is_ascii(text_at(address, length, t)):
            return False
    return True


@compiled
def count_texts(
    address: I64,
    length: I64,
    lo: int,
    hi: int,
    cls: U8,
    pool: U8,
    key_at: I64,
    key_len: I64,
    rank: I64,
    slots: I64,
    out: I64,
) -> None:
    """``out[t]``: the token count of text ``t`` (read in place at ``address[t]``,
    ``length[t]`` bytes) for ``t`` in ``[lo, hi)``, or -1 where the text is not all
    ASCII (tiktoken counts those)."""
    longest = 1
    for t in range(lo, hi):
        longest = max(longest, length[t])
    bounds = np.empty(longest + 1, dtype=np.int64)
    ranks = np.empty(longest + 1, dtype=np.int64)
    seen_key = np.zeros(2 * CACHE_SLOTS, dtype=np.int64)
    seen_count = np.zeros(CACHE_SLOTS, dtype=np.int64)
    for t in range(lo, hi):
        data = text_at(address, length, t)
        if not is_ascii(data):
            out[t] = -1
            continue
        out[t] = count_tail(
            data,
            0,
            len(data),
            cls,
            pool,
            key_at,
            key_len,
            rank,
            slots,
            bounds,
            ranks,
            seen_key,
            seen_count,
        )[0]


@compiled
def longest_prefixes(
    address: I64,
    length: I64,
    limit: int,
    cls: U8,
    pool: U8,
    key_at: I64,
    key_len: I64,
    rank: I64,
    slots: I64,
    out: I64,
) -> None:
    """``out[t]``: the prefix length rule 10's truncation in tokens finds for text ``t``
    (its count over ``limit``): bisection over lengths, ``lo = 0``, ``hi = len``, the
    middle prefix's count ``<= limit`` -> ``lo``, else ``hi``, until ``hi - lo == 1``;
    ``lo``. -1 where the text is not ASCII (lengths in bytes are then not code points).

    A prefix is counted from the text's own pieces: the prefix's pieces but its last
    are the text's (as in :func:`count_tail`); its last starts at the start of the
    text's piece holding its last byte, or earlier, at the first of the blank-only
    pieces right before that one (a blank run cut by the prefix's end becomes one
    piece), so the prefix counts the text's pieces before that, plus what it has from
    there on."""
    longest = 1
    for t in range(len(address)):
        longest = max(longest, length[t])
    bounds = np.empty(longest + 1, dtype=np.int64)
    ranks = np.empty(longest + 1, dtype=np.int64)
    seen_key = np.zeros(2 * CACHE_SLOTS, dtype=np.int64)
    seen_count = np.zeros(CACHE_SLOTS, dtype=np.int64)
    starts = np.empty(longest + 1, dtype=np.int64)
    before = np.empty(longest + 1, dtype=np.int64)
    blank = np.empty(longest + 1, dtype=np.bool_)
    for t in range(len(address)):
        data = text_at(address, length, t)
        if not is_ascii(data):
            out[t] = -1
            continue
        n = len(data)
        m = 0
        total = 0
        i = 0
        while i < n:
            j = piece_end(data, i, n, cls)
            only = True
            for k in range(i, j):
                if cls[data[k]] < BLANK:
                    only = False
                    break
            starts[m], before[m], blank[m] = i, total, only
            total += count_tail(
                data,
                i,
                j,
                cls,
                pool,
                key_at,
                key_len,
                rank,
                slots,
                bounds,
                ranks,
                seen_key,
                seen_count,
            )[0]
            m += 1
            i = j
        lo, hi = 0, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            a, b = 0, m - 1  # the last piece starting before byte mid
            while a < b:
                c = (a + b + 1) // 2
                if starts[c] <= mid - 1:
                    a = c
                else:
                    b = c - 1
            r = a
            while r > 0 and blank[r - 1]:
                r -= 1
            count = (
                before[r]
                + count_tail(
                    data,
                    starts[r],
                    mid,
                    cls,
                    pool,
                    key_at,
                    key_len,
                    rank,
                    slots,
                    bounds,
                    ranks,
                    seen_key,
                    seen_count,
                )[0]
            )
            if count <= limit:
                lo = mid
            else:
                hi = mid
        out[t] = lo
