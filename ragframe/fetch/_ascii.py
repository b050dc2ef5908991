"""The candidate tokens of ASCII-only documents in one compiled pass over their bytes.

Why: on ASCII text the numpy tokenizer (:mod:`ragframe.fetch._tokenize`) makes ten or
so whole-buffer passes (flags, bridges, runs, searches) and :mod:`ragframe.fetch._terms`
then hashes every token, to keep the few that may equal a term: most of highlighting's
time. Here one loop per document walks the bytes once, finds each token by the same
rules and hashes it as it ends, writing only the candidates.

The rules are those of :mod:`ragframe.fetch._tokenize` restricted to ASCII, read from
the same tables (passed in, so this file's compiled code depends on nothing else): a
token is a maximal run of word bytes (letters, digits and ``_``, which all join
pairwise in the pair table, a test checks it) and of middle characters joining the
bytes around them (the triple table: ``e.g``, ``2.71``, ``prandtl's``); a run made only
of ``_`` (``ExtendNumLet``, ``__``) is no token; one longer than ``max_token`` bytes is
cut every ``max_token`` (ASCII: bytes are characters). The key hashed is
:func:`ragframe.fetch._terms._keys`'s, bit for bit, looked up in a bit table (8 times
smaller than a flag per slot: it stays in the CPU cache). The tests compare this pass
with the numpy tokenizer and filter on whole buffers.

Compiled with postprocess's machinery (:mod:`ragframe._kernels._compile`):
plain Python on few rows, cached in ragframe's per-user folder keyed on this file.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe._kernels._compile import compiled, internal
from ragframe._kernels._own import keep_in_user_cache

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bools = npt.NDArray[np.bool_]
U64 = npt.NDArray[np.uint64]

keep_in_user_cache(__file__)  # not beside this file: never in site-packages


@internal
def _hit(data: U8, start: int, length: int, mix: np.uint64, slots: U8, hashes: U64) -> int:
    """1 when the token of ``length`` bytes at ``start`` hashes into a marked slot
    (``slots``: one bit per slot, little-endian bit order), else 0. The key: its first
    8 bytes OR 0x20 (little-endian) times ``hashes[0]``, XOR ``(mix | length) *
    hashes[1]``; the slot: its top bits (shifted right by ``hashes[2]``)."""
    key = np.uint64(0)
    for k in range(min(length, 8)):
        key |= (np.uint64(data[start + k]) | np.uint64(0x20)) << np.uint64(8 * k)
    key = key * hashes[0]
    key ^= (mix | np.uint64(length)) * hashes[1]
    slot = key >> hashes[2]
    return int((slots[slot >> np.uint64(3)] >> (slot & np.uint64(7))) & np.uint64(1))


@internal
def _run_end(data: U8, i: int, hi: int, word: Bools, classes: U8, triple: Bools, n: int) -> int:
    """The end of the token that starts with the word byte at ``i`` (before ``hi``):
    word bytes join (the ASCII ones all do, pairwise), and so does a middle character
    between two of them that the triple table joins."""
    j = i + 1
    while True:
        while j < hi and word[data[j]]:
            j += 1
        if j + 1 < hi and word[data[j + 1]]:
            x, y, z = int(classes[data[j - 1]]), int(classes[data[j]]), int(classes[data[j + 1]])
            if triple[(x * n + y) * n + z]:
                j += 2
                continue
        return j


@internal
def _only(data: U8, i: int, end: int, byte: int) -> bool:
    """Whether the bytes ``i`` to ``end`` (exclusive) all equal ``byte``."""
    for k in range(i, end):  # noqa: SIM110  (a loop numba compiles; no generator)
        if data[k] != byte:
            return False
    return True


@compiled
def ascii_candidates(
    data: U8,
    doc_bytes: I64,
    rows: I64,
    classes: U8,
    triple: Bools,
    slots: U8,
    params: I64,
    hashes: U64,
    out_start: I64,
    out_end: I64,
) -> int:
    """The candidates of documents ``d`` (bytes ``doc_bytes[d]`` to ``doc_bytes[d + 1]``
    of ``data``, all ASCII; row ``rows[d]`` of the frame, for the hash): their byte
    start and end, written in text order to ``out_start, out_end`` while they have
    room. Returns how many there are (more than the room: call again with more).

    ``classes``: the class of each ASCII byte; ``triple``: the triple table, flat;
    ``slots``: the term slot table, one bit per slot; ``params``: the class count,
    the byte ``_`` (the one ASCII ``ExtendNumLet``), ``max_token``, then 1 for each
    ASCII byte that is a word byte; ``hashes``: the two multipliers and the shift.
    """
    n, underscore, max_token = params[0], params[1], params[2]
    word = params[3:] == 1
    room, found = out_start.shape[0], 0
    for d in range(doc_bytes.shape[0] - 1):
        i, hi = doc_bytes[d], doc_bytes[d + 1]
        mix = np.uint64(rows[d]) << np.uint64(24)
        while i < hi:
            if not word[data[i]]:
                i += 1
                continue
            end = _run_end(data, i, hi, word, classes, triple, n)
            if data[i] == underscore and _only(data, i, end, underscore):
                i = end  # "__": no token
            while i < end:
                piece = min(end - i, max_token)
                if found < room:
                    out_start[found], out_end[found] = i, i + piece
                found += _hit(data, i, piece, mix, slots, hashes)
                i += piece
    return found
