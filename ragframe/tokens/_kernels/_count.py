"""Token counts of whole texts in place (``cl100k_base`` on ASCII text, see
:mod:`._bpe`): a text's pieces found and merged in one loop (:func:`count_tail`, which
the token-capped merge of ``postprocess`` calls incrementally too), each column's texts
on all CPUs (:func:`count_texts`), with the counts of short pieces remembered between
calls (:class:`CachePool`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import numpy as np

from ragframe._kernels._buffers import text_at
from ragframe._kernels._compile import I64, U8, ZERO, Bools, compiled, internal
from ragframe.tokens._kernels._bpe import (
    BLANK,
    LETTER,
    OTHER,
    is_ascii,
    piece_end,
    piece_tokens,
)

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
