"""Token counts of tiktoken's ``cl100k_base`` computed in place: its pre-tokenizer on
ASCII text and its byte-pair merge, so that token budgets count whole columns without
a call into Python per text (:mod:`ragframe.tokens._bpe` wraps these; whole texts are
counted by :mod:`._count`).

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

from ragframe._kernels._compile import I64, U8, compiled, internal, testable

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
def build_table(pool: U8, key_at: I64, key_len: I64, rank: I64, slots: I64, pair: I64) -> None:
    """Fill ``slots`` (a power of two of them, all -1, more than the keys) with the
    index of each key ``pool[key_at[k]:key_at[k] + key_len[k]]`` at its hash's slot or
    the next free one after it, and ``pair`` (all :data:`NO_RANK`) with the rank of
    each two-byte key."""
    mask = len(slots) - 1
    for k in range(len(key_at)):
        if key_len[k] == 2:
            pair[(int(pool[key_at[k]]) << 8) | int(pool[key_at[k] + 1])] = rank[k]
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
    pair: I64,
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
        ranks[i] = pair[(int(data[start + i]) << 8) | int(data[start + i + 1])]
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
