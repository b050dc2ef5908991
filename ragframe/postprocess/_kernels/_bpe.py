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

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

from ragframe._kernels._buffers import text_at
from ragframe._kernels._compile import (
    I64,
    U8,
    ZERO,
    Bools,
    compiled,
    internal,
    testable,
)
from ragframe.postprocess._kernels._text import budget_cut, trimmed

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


LONG_PIECE = 512
"""The longest piece counted here, in bytes: a longer one (a long word, a URL, base64)
makes its text not counted here (tiktoken's merge of a long piece takes n log n steps,
this file's quadratic one many more)."""
CACHE_SLOTS = 1 << 16
"""Pieces a kernel call remembers the counts of: a direct-mapped cache of short pieces
(most pieces of a text are its language's words, and a piece that is not a token
costs a merge)."""
SHORT = 15
"""The longest piece the cache keeps, in bytes: its bytes and length packed into two
64-bit keys, compared at once."""


Vocab = tuple[U8, U8, I64, I64, I64, I64, I64]
"""What the counting kernels read of an encoding: the byte classes (:func:`classes`),
then its tokens' bytes end to end, where each starts, its length, its rank, the hash
table of their indexes, and the rank of every two-byte token (``pair[b0 << 8 | b1]``,
:data:`NO_RANK`: none)."""
Cache = tuple[I64, I64]
"""A kernel's remembered piece counts (``seen_key``, ``seen_count``, see
:func:`count_tail`), kept between calls by the caller; one per thread at a time."""


Scratch = tuple[I64, I64]
"""The byte-pair merge's scratch (a piece's part bounds and pair ranks), longer than
any piece counted (:func:`new_scratch`)."""


@internal
def new_scratch(longest: int) -> Scratch:
    """:data:`Scratch` for pieces of up to ``longest`` bytes."""
    return np.empty(longest + 1, dtype=np.int64), np.empty(longest + 1, dtype=np.int64)


Pieces = tuple[I64, I64, Bools]
"""Where :func:`count_tail` records a text's pieces: each one's start, the count before
it, whether it is blanks only (:func:`no_pieces`: none recorded)."""


@internal
def no_pieces() -> Pieces:
    """A record no text fits in: nothing recorded."""
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_)


@internal
def count_tail(
    data: U8, start: int, end: int, vocab: Vocab, scratch: Scratch, cache: Cache, record: Pieces
) -> tuple[int, int, int]:
    """The token count of the ASCII text ``data[start:end]``, with where its last piece
    starts and the count before that piece: ``(count, last_start, count_before_last)``;
    count -1 for a text with a piece over :data:`LONG_PIECE` bytes (not counted here).
    The counts of pieces of up to :data:`SHORT` bytes are remembered in ``cache``
    (``seen_key``: two keys a slot, the piece's bytes and length, 0: empty;
    ``seen_count``); ``scratch`` is the merge's, :func:`new_scratch`.
    With a ``record`` longer than the text, each piece's start, the count before it,
    and whether it is blanks only, in order, then ``end`` as the next start.

    What makes a merge's count incremental: in the text ``a + b``, every piece of
    ``a`` but its last is a piece of ``a + b`` too (no alternative of the expression
    looks behind a piece's start, and each one that ends a piece before the end of
    ``a`` read nothing past it), so ``count(a + b)`` is ``count_before_last`` of ``a``
    plus the count of ``a[last_start:] + b``.

    One loop, nothing called for the usual piece (a call with this many arrays costs
    more than the piece)."""
    cls, pool, key_at, key_len, rank, slots, pair = vocab
    bounds, ranks = scratch
    seen_key, seen_count = cache
    starts, befores, blanks = record
    recording = len(starts) > end - start
    mask = len(seen_count) - 1
    total = 0
    before = 0
    last = start
    m = 0
    i = start
    while i < end:
        b = data[i]
        k = cls[b]
        # the usual piece, letters after at most one blank or other character (not a
        # contraction's '): found and packed in one scan; any other, by piece_end
        other = (k == BLANK) | (k == OTHER)
        lead = k == LETTER or (other and b != 39 and i + 1 < end and cls[data[i + 1]] == LETTER)
        low = np.int64(0)
        high = np.int64(0)
        only = False
        if lead:
            j = i + 1
            low = np.int64(b)
            while j < end and cls[data[j]] == LETTER:
                if j - i < 8:
                    low |= np.int64(data[j]) << (8 * (j - i))
                elif j - i < SHORT:
                    high |= np.int64(data[j]) << (8 * (j - i - 8))
                j += 1
        else:
            j = piece_end(data, i, end, cls)
            only = k >= BLANK
            for q in range(i, j):
                only = only and cls[data[q]] >= BLANK
                if q - i < 8:
                    low |= np.int64(data[q]) << (8 * (q - i))
                elif q - i < SHORT:
                    high |= np.int64(data[q]) << (8 * (q - i - 8))
        n = j - i
        if n > LONG_PIECE:  # not counted here: the caller's tiktoken
            return -1, last, before
        if n == 1:
            count = 1
        elif n <= SHORT:
            high |= np.int64(n) << 56
            slot = (((low ^ (high * 31)) * -7046029254386353131) >> 40) & mask
            if seen_key[2 * slot] == low and seen_key[2 * slot + 1] == high:
                count = seen_count[slot]
            else:
                count = piece_tokens(
                    data, i, j, pool, key_at, key_len, rank, slots, pair, bounds, ranks
                )
                seen_key[2 * slot], seen_key[2 * slot + 1] = low, high
                seen_count[slot] = count
        else:
            count = piece_tokens(
                data, i, j, pool, key_at, key_len, rank, slots, pair, bounds, ranks
            )
        if recording:
            starts[m], befores[m], blanks[m] = i, total, only
            m += 1
        before = total
        last = i
        total += count
        i = j
    if recording:
        starts[m] = end  # after the last piece
    return total, last, before


@compiled
def ascii_texts(address: I64, length: I64, out: Bools) -> None:
    """``out[t]``: whether text ``t`` (read in place) is all ASCII."""
    for t in range(len(address)):
        out[t] = is_ascii(text_at(address, length, t))


def new_cache(slots: int = CACHE_SLOTS) -> Cache:
    """An empty :data:`Cache`."""
    return np.zeros(2 * slots, dtype=np.int64), np.zeros(slots, dtype=np.int64)


class CachePool:
    """The :data:`Cache` s of one vocabulary, kept between kernel calls (a piece's count
    is worked out once per process, not once per call): each call takes one for its
    thread and gives it back."""

    def __init__(self) -> None:
        self._free: list[Cache] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def taken(self) -> Iterator[Cache]:
        """A cache no other thread uses meanwhile."""
        with self._lock:
            cache = self._free.pop() if self._free else new_cache()
        try:
            yield cache
        finally:
            with self._lock:
                self._free.append(cache)


@compiled
def count_texts(
    address: I64, length: I64, lo: int, hi: int, vocab: Vocab, cache: Cache, out: I64
) -> None:
    """``out[t]``: the token count of text ``t`` (read in place at ``address[t]``,
    ``length[t]`` bytes) for ``t`` in ``[lo, hi)``, or -1 where the text is not all
    ASCII or has a piece over :data:`LONG_PIECE` bytes (tiktoken counts those)."""
    longest = 1
    for t in range(lo, hi):
        longest = max(longest, length[t])
    scratch = new_scratch(longest)
    nothing = no_pieces()
    for t in range(lo, hi):
        data = text_at(address, length, t)
        if not is_ascii(data):
            out[t] = -1
            continue
        out[t] = count_tail(data, ZERO, len(data), vocab, scratch, cache, nothing)[0]


@internal
def cut_trimmed(data: U8, limit: int, window: int) -> tuple[int, int]:
    """Rule 10's cut of ``data`` at ``limit`` code points (fewer than it has,
    :func:`~._text.budget_cut`), then Java-trimmed: the bytes ``[start, end)`` kept."""
    return trimmed(data, ZERO, budget_cut(data, limit, window))


@compiled
def truncations(
    address: I64, length: I64, limit: int, window: int, vocab: Vocab, cache: Cache, out: I64
) -> None:
    """Rule 10's truncation in tokens of each text (read in place; its count over
    ``limit``), exactly as :func:`ragframe.postprocess._token_budget._truncate` does it:
    ``out[t]`` is the kept text's first byte, ``out[n + t]`` its end and ``out[2n + t]``
    its count (-1 for a text not ASCII, where bytes are not code points, or with a piece
    over :data:`LONG_PIECE` bytes).

    1. The longest prefix by bisection over lengths: ``lo = 0``, ``hi = len``, the
       middle prefix's count ``<= limit`` -> ``lo``, else ``hi``, until ``hi - lo == 1``.
       A prefix is counted from the text's own pieces: the prefix's pieces but its
       last are the text's (as in :func:`count_tail`); its last starts at the start of
       the text's piece holding its last byte, or earlier, at the first of the
       blank-only pieces right before that one (a blank run cut by the prefix's end is
       one piece), so the prefix counts the text's pieces before that, plus what it has
       from there on: at least one token and at most one a byte, so only a probe those
       bounds leave open is counted.
    2. Rule 10's cut (its look-back ``window``) and trim of that prefix
       (:func:`cut_trimmed`), counted.
    3. Where the trim made it count more (a leading space off re-tokenizes the first
       word), the same bisection over ``[0, lo]`` on the cut and trimmed texts."""
    n_texts = len(address)
    longest = 1
    for t in range(n_texts):
        longest = max(longest, length[t])
    scratch = new_scratch(longest)
    record = (
        np.empty(longest + 1, dtype=np.int64),
        np.empty(longest + 1, dtype=np.int64),
        np.empty(longest + 1, dtype=np.bool_),
    )
    starts, before, blank = record
    nothing = no_pieces()
    for t in range(n_texts):
        data = text_at(address, length, t)
        if not is_ascii(data):
            out[t], out[n_texts + t], out[2 * n_texts + t] = 0, 0, -1
            continue
        n = len(data)
        whole = count_tail(data, ZERO, n, vocab, scratch, cache, record)[0]
        if whole < 0:  # a long piece: tiktoken's
            out[t], out[n_texts + t], out[2 * n_texts + t] = 0, 0, -1
            continue
        m = 0  # the pieces recorded
        while starts[m] < n:
            m += 1
        lo, hi = 0, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            a, b = 0, m - 1  # the last piece starting before byte mid
            while a < b:
                h = (a + b + 1) // 2
                if starts[h] <= mid - 1:
                    a = h
                else:
                    b = h - 1
            r = a
            while r > 0 and blank[r - 1]:
                r -= 1
            if before[r] + mid - starts[r] <= limit:
                fits = True
            elif before[r] + 1 > limit:
                fits = False
            else:
                tail = count_tail(data, starts[r], mid, vocab, scratch, cache, nothing)[0]
                fits = before[r] + tail <= limit
            if fits:
                lo = mid
            else:
                hi = mid
        a, b = cut_trimmed(data, lo, window)
        count = count_tail(data, a, b, vocab, scratch, cache, nothing)[0]
        if count > limit:  # the trim re-tokenized: the longest cut that fits
            low, high = 0, lo
            while high - low > 1:
                mid = (low + high) // 2
                x, y = cut_trimmed(data, mid, window)
                probe = count_tail(data, x, y, vocab, scratch, cache, nothing)[0]
                if probe <= limit:
                    low = mid
                else:
                    high = mid
            a, b = cut_trimmed(data, low, window)
            count = count_tail(data, a, b, vocab, scratch, cache, nothing)[0]
        out[t], out[n_texts + t], out[2 * n_texts + t] = a, b, count
