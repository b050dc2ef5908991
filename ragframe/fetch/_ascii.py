"""The candidate tokens of ASCII-only documents in one compiled pass over their bytes,
read in place (the documents' own Arrow buffers: nothing is copied).

Why: on ASCII text the numpy tokenizer (:mod:`ragframe.fetch._tokenize`) makes ten or
so whole-buffer passes (flags, bridges, runs, searches) and :mod:`ragframe.fetch._terms`
then hashes every token, to keep the few that may equal a term: most of highlighting's
time. Here each document is read once, 64 bytes at a time: eight 8-byte loads give a
64-bit mask of its word bytes (letters, digits, ``_``, by arithmetic on all eight
bytes at once) and one of its middle-character candidates; tokens start and end where
the mask changes, found bit by bit (a count of trailing zeros), so no branch is taken
per byte and none per token but the few rules below; each token is hashed from one
8-byte load, masked to its length.

The rules are those of :mod:`ragframe.fetch._tokenize` restricted to ASCII, read from
the same tables (passed in): a token is a maximal run of word bytes (which all join
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

from typing import Any

import numpy as np
import numpy.typing as npt

from ragframe._kernels._buffers import carray, load_u64, pointer
from ragframe._kernels._compile import compiled, internal, intrinsic
from ragframe._kernels._own import keep_in_user_cache

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bools = npt.NDArray[np.bool_]
U64 = npt.NDArray[np.uint64]

keep_in_user_cache(__file__)  # not beside this file: never in site-packages

_ONES = np.uint64(0x0101010101010101)
_TOPS = np.uint64(0x8080808080808080)
_CASE = np.uint64(0x2020202020202020)
_GATHER = np.uint64(0x0102040810204080)
"""Times the top bits of 8 bytes moved to bits 0-7: their 8 bits in the top byte."""
_ONE = np.uint64(1)


def _zeros_python(value: np.uint64) -> int:
    """:func:`trailing_zeros` in plain Python."""
    bits = int(value)
    return (bits & -bits).bit_length() - 1


@intrinsic(_zeros_python)
def trailing_zeros(typingctx: Any, value: Any) -> Any:
    """The number of zero bits below the lowest set bit of a non-zero uint64 (one
    instruction: ``llvm.cttz``)."""
    from llvmlite import ir  # run while a kernel compiles: numba is loaded
    from numba import types

    del typingctx, value
    word = ir.IntType(64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del context, signature
        function = builder.module.declare_intrinsic("llvm.cttz", [word, ir.IntType(1)])
        return builder.call(function, [args[0], ir.Constant(ir.IntType(1), 1)])

    return types.int64(types.uint64), codegen


@internal
def _at_least(x: np.uint64, low: int) -> np.uint64:
    """The top bit of each byte of ``x`` (all below 0x80) that is ``>= low``."""
    return (x + _ONES * np.uint64(0x80 - low)) & _TOPS


@internal
def _within(x: np.uint64, low: int, high: int) -> np.uint64:
    """The top bit of each byte of ``x`` (all below 0x80) in ``low..high``."""
    return _at_least(x, low) & ~_at_least(x, high + 1)


@internal
def _gathered(tops: np.uint64) -> np.uint64:
    """The top bits of the 8 bytes of ``tops`` as bits 0-7 (the others clear)."""
    return ((tops >> np.uint64(7)) * _GATHER) >> np.uint64(56)


@internal
def _load(text: U8, address: int, at: int) -> np.uint64:
    """The 8 bytes from ``at`` of ``text`` (at ``address``) as a little-endian word,
    zeros past its end (one load where 8 bytes remain)."""
    if at + 8 <= len(text):
        return load_u64(address + at)  # type: ignore[call-arg,no-any-return]
    x = np.uint64(0)
    for k in range(max(len(text) - at, 0)):
        x |= np.uint64(text[at + k]) << np.uint64(8 * k)
    return x


@internal
def _masks(text: U8, address: int, at: int, middle: I64) -> tuple[np.uint64, np.uint64]:
    """Bit ``k`` of the first: byte ``at + k`` of ``text`` is a word byte (``[0-9A-Za-z_]``);
    of the second: it is in the middle characters' range ``middle[0]..middle[1]``
    (``k`` from 0 to 63; none past the end)."""
    word, mid = np.uint64(0), np.uint64(0)
    for w in range(8):
        x = _load(text, address, at + 8 * w)
        letter = _within(x | _CASE, 0x61, 0x7A)
        tops = letter | _within(x, 0x30, 0x39) | _within(x, 0x5F, 0x5F)
        word |= _gathered(tops) << np.uint64(8 * w)
        mid |= _gathered(_within(x, middle[0], middle[1])) << np.uint64(8 * w)
    return word, mid


@internal
def _bridged(
    text: U8,
    at: int,
    word: np.uint64,
    mid: np.uint64,
    before: np.uint64,
    after: np.uint64,
    classes: U8,
    triple: Bools,
    n: int,
) -> np.uint64:
    """``word`` with the middle characters that join the word bytes around them (the
    triple table) set. ``before``/``after``: 1 when the bytes just before and after the
    64 are word bytes."""
    left = (word << _ONE) | before
    right = (word >> _ONE) | (after << np.uint64(63))
    pending = mid & ~word & left & right
    out = word
    while pending:
        k = trailing_zeros(pending)  # type: ignore[call-arg]
        pending &= pending - _ONE
        i = at + k
        x, y, z = int(classes[text[i - 1]]), int(classes[text[i]]), int(classes[text[i + 1]])
        if triple[(x * n + y) * n + z]:
            out |= _ONE << np.uint64(k)
    return out


@internal
def _only(text: U8, i: int, end: int, byte: int) -> bool:
    """Whether the bytes ``i`` to ``end`` (exclusive) all equal ``byte``."""
    for k in range(i, end):  # noqa: SIM110  (a loop numba compiles; no generator)
        if text[k] != byte:
            return False
    return True


@internal
def _emit(
    text: U8,
    address: int,
    start: int,
    end: int,
    base: int,
    mix: np.uint64,
    slots: U8,
    params: I64,
    hashes: U64,
    out_start: I64,
    out_end: I64,
    found: int,
) -> int:
    """Write the pieces of the run ``start..end`` (cut every ``max_token``) at
    ``found`` of ``out_start, out_end`` (offset by ``base``) while there is room; the
    new count: ``found`` plus those whose key hashes into a marked slot (``slots``:
    one bit per slot, little-endian bit order). The key: the first 8 bytes OR 0x20
    (little-endian), masked to the length, times ``hashes[0]``, XOR ``(mix | length)
    * hashes[1]``; the slot: its top bits (shifted right by ``hashes[2]``)."""
    if text[start] == params[1] and _only(text, start, end, params[1]):
        return found  # "__": no token
    room = len(out_start)
    i = start
    while i < end:
        piece = min(end - i, params[2])
        key = (_load(text, address, i) | _CASE) & hashes[3 + min(piece, 8)]
        key = key * hashes[0]
        key ^= (mix | np.uint64(piece)) * hashes[1]
        slot = key >> hashes[2]
        if found < room:
            out_start[found], out_end[found] = base + i, base + i + piece
        found += int((slots[slot >> np.uint64(3)] >> (slot & np.uint64(7))) & np.uint64(1))
        i += piece
    return found


@compiled
def ascii_candidates(
    address: I64,
    length: I64,
    offsets: I64,
    rows: I64,
    classes: U8,
    triple: Bools,
    slots: U8,
    params: I64,
    hashes: U64,
    out_start: I64,
    out_end: I64,
) -> int:
    """The candidates of documents ``d`` (``length[d]`` ASCII bytes at ``address[d]``;
    row ``rows[d]`` of the frame, for the hash): their byte start and end plus
    ``offsets[d]``, written in text order to ``out_start, out_end`` while they have
    room. Returns how many there are (more than the room: call again with more).

    ``classes``: the class of each ASCII byte; ``triple``: the triple table, flat;
    ``slots``: the term slot table, one bit per slot; ``params``: the class count,
    the byte ``_`` (the one ASCII ``ExtendNumLet``), ``max_token``, the first and last
    byte of the middle characters' range; ``hashes``: the two multipliers, the shift,
    then the masks keeping the first 0 to 8 bytes of a word.
    """
    n = params[0]
    middle = params[3:5]
    found = 0
    for d in range(len(address)):
        at = address[d]
        text = carray(pointer(at), length[d])  # type: ignore[call-arg]  # in place
        mix = np.uint64(rows[d]) << np.uint64(24)
        size, begin, before, inside = len(text), -1, np.uint64(0), np.uint64(0)
        word, mid = _masks(text, at, 0, middle)
        for chunk in range(0, size + 1, 64):  # one more, empty, where 64 divide the size
            after_word, after_mid = _masks(text, at, chunk + 64, middle)
            after = after_word & _ONE
            run = _bridged(text, chunk, word, mid, before, after, classes, triple, n)
            before = word >> np.uint64(63)
            edges = run ^ ((run << _ONE) | inside)  # where a run starts or ends
            inside = run >> np.uint64(63)
            word, mid = after_word, after_mid
            while edges:
                k = chunk + trailing_zeros(edges)  # type: ignore[call-arg]
                edges &= edges - _ONE
                if begin < 0:
                    begin = k
                    continue
                found = _emit(
                    text,
                    at,
                    begin,
                    k,
                    offsets[d],
                    mix,
                    slots,
                    params,
                    hashes,
                    out_start,
                    out_end,
                    found,
                )
                begin = -1
    return found
