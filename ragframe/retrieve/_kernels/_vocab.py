"""The vocabulary kernels: every token of a buffer turned into its term's id, through one
open-addressing hash table of the terms' bytes, for a whole block of tokens at once.

Why a kernel: a term id per token is a hash lookup of a few bytes; Polars says it as a
join of every token against the vocabulary (or a categorical cast whose mapping is
global and not ours to keep), which builds or probes a hash table of the whole
vocabulary once per block. Here the table persists between blocks, a token's bytes
are hashed where they lie in the text's buffer (ASCII letters lower-cased on the fly,
as Java lower-cases them), and a new term's lower-cased bytes are appended to the
vocabulary's own buffer.

The table: ``table`` (a power of two wide, at most half full) holds a term id per slot,
-1 when free; ``hashes[t]`` is term ``t``'s 64-bit hash; term ``t``'s bytes are
``term_data[term_starts[t]:term_starts[t + 1]]``. Probing is linear from the slot the
hash's high bits name.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._jit import decorators

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]

_OFFSET = np.uint64(0xCBF29CE484222325)
_PRIME = np.uint64(0x100000001B3)
"""FNV-1a, 64 bits, over the term's lower-cased bytes."""
_MIX = np.uint64(0x9E3779B97F4A7C15)

kernel, helper = decorators(__file__)


@helper
def _lower(byte: np.uint8, lower: bool) -> np.uint8:
    """``byte``, an ASCII capital lower-cased when ``lower``."""
    if lower and 65 <= byte <= 90:
        return np.uint8(byte + 32)
    return byte


@helper
def _hash(data: U8, start: int, length: int, lower: bool) -> np.uint64:
    h = _OFFSET
    for i in range(start, start + length):
        h ^= np.uint64(_lower(data[i], lower))
        h *= _PRIME
    return h


@helper
def _slot(h: np.uint64, shift: np.uint64) -> np.int64:
    return np.int64((h * _MIX) >> shift)


@helper
def _same(
    data: U8, start: int, length: int, lower: bool, term_data: U8, term_starts: I64, t: int
) -> bool:
    at = term_starts[t]
    if term_starts[t + 1] - at != length:
        return False
    for i in range(length):  # noqa: SIM110 (numba compiles loops, not generators)
        if _lower(data[start + i], lower) != term_data[at + i]:
            return False
    return True


@kernel
def intern(
    data: U8,
    starts: I64,
    lengths: I64,
    lower: bool,
    insert: bool,
    table: I32,
    hashes: U64,
    term_data: U8,
    term_starts: I64,
    sizes: I64,
    out: I32,
) -> None:
    """``out[i]``: the id of the term ``data[starts[i]:starts[i] + lengths[i]]`` (ASCII
    capitals lower-cased when ``lower``), a new id when it is new and ``insert``
    (its hash and bytes appended), else -1.

    ``sizes`` is ``[terms, bytes]`` in use, updated; the caller leaves room for every
    token to be new: ``table`` at least twice ``sizes[0] + len(starts)`` wide,
    ``hashes`` and ``term_starts`` as long, ``term_data`` ``sum(lengths)`` bytes more.
    """
    n, used = sizes[0], sizes[1]
    mask = table.shape[0] - 1
    shift = np.uint64(64 - int(np.log2(table.shape[0])))
    for i in range(starts.shape[0]):
        start, length = starts[i], lengths[i]
        h = _hash(data, start, length, lower)
        slot = _slot(h, shift)
        while True:
            t = table[slot]
            if t < 0:
                if insert:
                    table[slot] = n
                    hashes[n] = h
                    for j in range(length):
                        term_data[used + j] = _lower(data[start + j], lower)
                    used += length
                    term_starts[n + 1] = used
                    out[i] = n
                    n += 1
                else:
                    out[i] = -1
                break
            if hashes[t] == h and _same(data, start, length, lower, term_data, term_starts, t):
                out[i] = t
                break
            slot = (slot + 1) & mask
    sizes[0], sizes[1] = n, used


@kernel
def rehash(hashes: U64, n: int, table: I32) -> None:
    """Enter terms ``0 .. n-1`` (by their ``hashes``) into an empty ``table``."""
    mask = table.shape[0] - 1
    shift = np.uint64(64 - int(np.log2(table.shape[0])))
    for t in range(n):
        slot = _slot(hashes[t], shift)
        while table[slot] >= 0:
            slot = (slot + 1) & mask
        table[slot] = t
