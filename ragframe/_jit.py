"""Compiled whole-buffer kernels for ``postprocess``: the distinct top-K walk and the
block merge (SPEC 1, rules 3, 6 and 7), with numba.

Why kernels, and why compiled: both steps test text against text (word-bounded
containment of normalized chunks; "the largest L such that the last L normalized
characters of one text equal the first L of another"), which no Polars expression
does, and the merge is a running sum with resets (the block size cap) whose increments
depend on the block text built so far. Each kernel is one linear pass over the whole
column's Arrow buffers (UTF-8 bytes and offsets) for every query at once, compiled to
machine code; nothing runs per row in Python. Normalized text is never materialized:
the kernels normalize the few texts a test needs into small scratch buffers.

Working on UTF-8 bytes is exact: normalization only touches ASCII bytes (whitespace,
controls), and equal byte strings that start with a lead byte are equal code point
strings, so byte matches are code point matches. Lengths are counted in code points.

Large inputs run in parts, one per CPU, on threads (:func:`_in_parts`): a part holds
whole queries (walk) or whole groups (merge) and writes only its own rows.

Compiled code is cached on disk (numba's ``cache=True``), so only the first call on a
machine pays for compilation.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba as nb
import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ragframe._text import MIN_OVERLAP

_compiled = nb.njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")


@intrinsic
def _pointer(typingctx: Any, address: Any) -> Any:
    """The byte pointer at an integer address (an Arrow buffer's), for ``carray``."""
    del typingctx, address
    pointer = types.CPointer(types.uint8)  # type: ignore[no-untyped-call]
    sig = pointer(types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        return builder.inttoptr(args[0], context.get_value_type(pointer))

    return sig, codegen


@intrinsic
def _prefetch(typingctx: Any, address: Any) -> Any:
    """Ask the CPU to start loading the cache line at an integer address (no effect on
    results: the kernels read texts in an order they know ahead, so the next texts'
    bytes can be on their way while the current one is compared)."""
    del typingctx, address
    byte = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        del signature
        function = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        )
        read, keep, data = ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)
        builder.call(function, [builder.inttoptr(args[0], byte), read, keep, data])
        return context.get_dummy_value()

    return types.void(types.int64), codegen


PREFETCH_AHEAD = 4
"""How many rows ahead the kernels prefetch texts."""


@nb.njit(inline="always")
def _prefetch_text(address: I64, length: I64, row: int) -> None:
    """Prefetch the first 512 bytes of row ``row``'s text (nothing past the end)."""
    if row < len(address):
        start = address[row]
        for offset in range(0, min(length[row], 512), 64):
            _prefetch(start + offset)  # type: ignore[call-arg]


@nb.njit(inline="always")
def _text(address: I64, length: I64, row: int) -> U8:
    """Row ``row``'s UTF-8 bytes, read in place from its Arrow buffer."""
    return nb.carray(_pointer(address[row]), length[row])  # type: ignore[attr-defined,call-arg]


U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
WalkKeys = tuple[I64, I64, I64, bool, Bools, I64, I64]

# --- bytes and code points -------------------------------------------------------------


@nb.njit(inline="always")
def _collapsible(b: int) -> bool:
    """A byte of ``[ \\t\\n\\x0B\\f\\r]``, the runs normalization turns into one space."""
    return bool(_collapsible_u8(b) != 0)


@nb.njit(inline="always")
def _collapsible_u8(b: int) -> np.uint8:
    """:func:`_collapsible` as 0 or 1 (no branch), for vectorized loops."""
    return np.uint8(b == 32) | np.uint8(np.uint8(b - np.uint8(9)) < np.uint8(5))


@nb.njit(inline="always")
def _lead(b: int) -> bool:
    """The first byte of a UTF-8 sequence (not a continuation byte)."""
    return (b & 0xC0) != 0x80


@nb.njit(inline="always")
def _decode(data: U8, pos: int) -> tuple[int, int]:
    """The code point starting at ``data[pos]`` and the position after it."""
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    if b < 0xE0:
        return ((b & 0x1F) << 6) | (data[pos + 1] & 0x3F), pos + 2
    if b < 0xF0:
        return ((b & 0x0F) << 12) | ((data[pos + 1] & 0x3F) << 6) | (data[pos + 2] & 0x3F), pos + 3
    cp = ((b & 0x07) << 18) | ((data[pos + 1] & 0x3F) << 12) | ((data[pos + 2] & 0x3F) << 6)
    return cp | (data[pos + 3] & 0x3F), pos + 4


@nb.njit(inline="always")
def _java_whitespace(cp: int) -> bool:
    """Java ``Character.isWhitespace`` (see :data:`ragframe._text.JAVA_WHITESPACE`)."""
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


@_compiled
def _code_points(data: U8, start: int, end: int) -> int:
    seg = data[start:end]  # a loop over a slice vectorizes
    count = np.int64(0)
    for i in range(len(seg)):
        count += np.int64(np.int8(seg[i]) > -65)  # not a continuation byte (0x80-0xBF)
    return int(count)


@nb.njit(inline="always")
def _step(data: U8, pos: int, end: int) -> tuple[int, int]:
    """The normalized byte at raw ``pos`` (a whitespace run reads as one space) and the
    raw position after it."""
    b = data[pos]
    pos += 1
    if _collapsible(b):
        while pos < end and _collapsible(data[pos]):
            pos += 1
        return 32, pos
    return b, pos


@nb.njit(inline="always")
def _step_back(data: U8, pos: int, start: int) -> tuple[int, int]:
    """The normalized byte ending at raw ``pos`` (a whitespace run reads as one space)
    and the raw position where it starts: :func:`_step` backwards."""
    pos -= 1
    b = data[pos]
    if _collapsible(b):
        while pos > start and _collapsible(data[pos - 1]):
            pos -= 1
        return 32, pos
    return b, pos


@_compiled
def _normalize(data: U8, start: int, end: int, out: U8) -> int:
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
        out[n], i = _step(data, i, end)
        n += 1
    return n


@_compiled
def _normalized_tail(data: U8, start: int, end: int, want: int, out: U8) -> int:
    """The last ``want`` (or fewer) bytes of the normalized ``data[start:end]``, written
    to the end of ``out[:want]``; returns how many were written (they end at ``want``)."""
    while end > start and data[end - 1] <= 32:
        end -= 1
    n = 0
    i = end
    while i > start and n < want:
        b, i = _step_back(data, i, start)
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


@_compiled
def _failure(pattern: U8, n: int, fail: I64) -> None:
    """Knuth-Morris-Pratt failure function of ``pattern[:n]``."""
    fail[0] = 0
    k = 0
    for i in range(1, n):
        while k > 0 and pattern[i] != pattern[k]:
            k = fail[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fail[i] = k


@_compiled
def _contains_words(hay: U8, h0: int, h1: int, needle: U8, n: int, fail: I64) -> bool:
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


@nb.njit(inline="always")
def _trimmed(data: U8, start: int, end: int) -> tuple[int, int]:
    """``data[start:end]`` without the bytes <= 0x20 at both ends (Java's ``trim``)."""
    while start < end and data[start] <= 32:
        start += 1
    while end > start and data[end - 1] <= 32:
        end -= 1
    return start, end


@_compiled
def _normalized_length(data: U8, start: int, end: int) -> int:
    """Length in bytes of the normalized ``data[start:end]`` (already trimmed)."""
    seg = data[start:end]
    extra = np.int64(0)
    for i in range(1, len(seg)):
        extra += np.int64(_collapsible_u8(seg[i]) & _collapsible_u8(seg[i - 1]))
    return len(seg) - int(extra)


@_compiled
def _same(a: U8, x: int, x_end: int, b: U8, y: int, y_end: int, count: int) -> tuple[int, int]:
    """Compare ``count`` normalized bytes of ``a`` from raw ``x`` with ``b`` from raw
    ``y``. Returns the raw position in ``b`` after them (-1: they differ) and the code
    points compared."""
    units = 0
    for _ in range(count):
        if x >= x_end or y >= y_end:
            return -1, units
        bx, x = _step(a, x, x_end)
        by, y = _step(b, y, y_end)
        if bx != by:
            return -1, units
        units += _lead(bx)
    return y, units


@_compiled
def _contains_raw(
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
            after, units = _same(needle, n0, n1, hay, y, h1, nn)
            work += units
            if after >= 0 and (after == h1 or _collapsible(hay[after])):
                return 1
        b, y = _step(hay, y, h1)
        boundary = b == 32
        work += 1
        if work > budget:
            return -1
    return 0


# --- distinct top-K ----------------------------------------------------------------------


@nb.njit(inline="always")
def _same_bytes(address: I64, length: I64, a: int, b: int) -> bool:
    """Whether rows ``a`` and ``b`` of a string column hold the same bytes."""
    if length[a] != length[b]:
        return False
    x, y = _text(address, length, a), _text(address, length, b)
    for i in range(len(x)):  # noqa: SIM110 -- compiled loop, no generator
        if x[i] != y[i]:
            return False
    return True


@nb.njit(inline="always")
def _same_key(keys: WalkKeys, a: int, b: int) -> bool:
    """Whether rows ``a`` and ``b`` (both with an entity) have the same entity and type."""
    number, e_address, e_length, typed, t_valid, t_address, t_length = keys
    if len(number):
        if number[a] != number[b]:
            return False
    elif not _same_bytes(e_address, e_length, a, b):
        return False
    if typed:
        if t_valid[a] != t_valid[b]:
            return False
        if t_valid[a] and not _same_bytes(t_address, t_length, a, b):
            return False
    return True


@_compiled
def _repeated(
    address: I64,
    length: I64,
    r: int,
    s: int,
    trims: I64,
    norm_len: I64,
    scratch: tuple[U8, U8, I64],
) -> bool:
    """Whether selected row ``s`` repeats candidate ``r`` by text (rule 3): the
    candidate's normalized text is non-empty and contained at word boundaries.

    Only the candidate's normalized length is needed; the selected row's trimmed
    length bounds its own (a selected row that never was a candidate here is not read
    in full)."""
    for row in (r, s):
        if trims[row, 0] < 0:
            text = _text(address, length, row)
            trims[row, 0], trims[row, 1] = _trimmed(text, 0, len(text))
    needle = _text(address, length, r)
    if norm_len[r] < 0:
        norm_len[r] = _normalized_length(needle, trims[r, 0], trims[r, 1])
    nn = norm_len[r]
    if nn == 0:
        return False
    haystack = _text(address, length, s)
    hn = norm_len[s] if norm_len[s] >= 0 else trims[s, 1] - trims[s, 0]
    hit = _contains_raw(
        haystack,
        trims[s, 0],
        trims[s, 1],
        hn,
        needle,
        trims[r, 0],
        trims[r, 1],
        nn,
        8 * (hn + nn) + 64,
    )
    if hit < 0:
        hay, cand, fail = scratch
        nn = _normalize(needle, 0, len(needle), cand)
        hn = _normalize(haystack, 0, len(haystack), hay)
        _failure(cand, nn, fail)
        hit = 1 if _contains_words(hay, 0, hn, cand, nn, fail) else 0
    return hit == 1


@_compiled
def _walk(
    address: I64,
    length: I64,
    order: I64,
    start: Bools,
    sim: F64,
    entity_null: Bools,
    hashes: I64,
    keys: WalkKeys,
    top_k: int,
    slots: int,
    part: tuple[int, int],
    out: tuple[Bools, I64, F64, I64, I64, I64],
) -> None:
    """Rule 3's walk over the queries of ``order[part[0]:part[1]]``, rows visited in
    ``order`` (ranking order per query; a query starts where ``start`` is set). Sets per row,
    in ``out``: whether it is selected, the number of chunks its query selected and the
    best similarity among them (on every row of the query), and working state (the
    selected row before it of the same key, its trimmed bounds and its normalized
    length, each once needed, -1 before).
    Parts of disjoint queries may run at once: each writes only its own rows.

    A candidate is compared only with the selected chunks of its own (entity, type): a
    chain per key, found in a per-query hash table (``hashes``, verified by
    :func:`_same_key`, so a collision costs a probe, never a wrong answer). Texts are
    compared by normalized length first, then on the fly; a pathological pair (many
    near-matches) is settled by normalizing both and a linear-time search instead.
    """
    selected, count, best, previous, trims, norm_len = out
    i, n = part
    longest = max(1, int(length.max())) if len(length) else 1
    scratch = (
        np.empty(longest, dtype=np.uint8),
        np.empty(longest, dtype=np.uint8),
        np.empty(longest, dtype=np.int64),
    )
    table = np.full(slots, -1, dtype=np.int64)  # latest selected row per key, this query
    used = np.empty(slots, dtype=np.int64)
    mask = slots - 1
    while i < n:
        first = i  # the query's rows are order[first:i] once it is walked
        picked = 0
        top = -np.inf
        filled = 0
        while i < n and (i == first or not start[order[i]]):
            r = order[i]
            i += 1
            if picked >= top_k:
                continue
            if i + PREFETCH_AHEAD < n:
                _prefetch_text(address, length, order[i + PREFETCH_AHEAD])
            repeated = False
            slot = -1
            if not entity_null[r]:
                slot = hashes[r] & mask
                while table[slot] >= 0 and not (
                    hashes[table[slot]] == hashes[r] and _same_key(keys, table[slot], r)
                ):
                    slot = (slot + 1) & mask
                s = table[slot]
                while s >= 0:
                    if sim[s] >= sim[r] and _repeated(
                        address, length, r, s, trims, norm_len, scratch
                    ):
                        repeated = True
                        break
                    s = previous[s]
            if repeated:
                continue
            picked += 1
            selected[r] = True
            top = max(top, sim[r])
            if slot >= 0:
                if table[slot] < 0:
                    used[filled] = slot
                    filled += 1
                previous[r] = table[slot]
                table[slot] = r
        for j in range(first, i):
            count[order[j]] = picked
            best[order[j]] = top
        for j in range(filled):
            table[used[j]] = -1


def walk(
    texts: pl.Series,
    rank: I64,
    start: Bools,
    sim: F64,
    entity: pl.Series,
    entity_type: pl.Series,
    hashes: I64,
    top_k: int,
) -> tuple[Bools, I64, F64]:
    """The distinct top-K walk (see :func:`_walk`) over columns in any row order:
    ``rank`` orders the rows (ranking order, each query's rows together), ``start``
    marks each query's first row, ``hashes`` hash (entity, type)."""
    address, length, alive = views(texts)
    n = len(rank)
    order = np.arange(n, dtype=np.int64)
    if n > 1 and not bool((rank[1:] > rank[:-1]).all()):
        order = np.argsort(rank, kind="stable")
    keys, more = _walk_keys(entity, entity_type)
    starts = np.flatnonzero(start[order])
    widest = int(np.diff(starts, append=n).max()) if n else 1  # rows of the largest query
    slots = 1 << (2 * widest).bit_length()
    out = (
        np.zeros(n, dtype=np.bool_),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.full(n, -1, dtype=np.int64),
        np.full((n, 2), -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
    )
    entity_null = entity.is_null().to_numpy()

    def run(part: tuple[int, int]) -> None:
        _walk(
            address, length, order, start, sim, entity_null, hashes, keys, top_k, slots, part, out
        )

    _in_parts(run, starts, n)
    del alive, more  # the buffers the addresses point into lived until here
    return out[0], out[1], out[2]


def _walk_keys(entity: pl.Series, entity_type: pl.Series) -> tuple[WalkKeys, list[Any]]:
    """What :func:`_same_key` compares: the entity (numbers or string bytes) and the
    type (validity and bytes; nothing when every type is null)."""
    none = np.zeros(0, dtype=np.int64)
    alive: list[Any] = []
    if entity.dtype == pl.String:
        number = none
        e_address, e_length, kept = views(entity)
        alive.append(kept)
    else:
        number = entity.fill_null(0).cast(pl.Int64).to_numpy()
        e_address, e_length = none, none
    typed = entity_type.null_count() < len(entity_type)
    if typed:
        t_valid = entity_type.is_not_null().to_numpy()
        t_address, t_length, kept = views(entity_type)
        alive.append(kept)
    else:
        t_valid, t_address, t_length = np.zeros(0, dtype=np.bool_), none, none
    return (number, e_address, e_length, typed, t_valid, t_address, t_length), alive


# --- merging -----------------------------------------------------------------------------


@nb.njit(inline="always")
def _skip_java_whitespace(data: U8, pos: int, end: int) -> tuple[int, int]:
    """Skip the Java whitespace at ``data[pos:end]``: the position after it and the code
    points skipped."""
    skipped = 0
    while pos < end:
        cp, nxt = _decode(data, pos)
        if not _java_whitespace(cp):
            break
        pos = nxt
        skipped += 1
    return pos, skipped


@_compiled
def _skip_units(data: U8, start: int, end: int, units: int) -> tuple[int, int]:
    """The seed's walk: skip leading Java whitespace, then ``units`` characters, a
    whitespace run counting as one. Returns the byte position and code points skipped."""
    pos, skipped = _skip_java_whitespace(data, start, end)
    for _ in range(units):
        if pos >= end:
            break
        cp, pos = _decode(data, pos)
        skipped += 1
        if _java_whitespace(cp):  # the rest of the run counts with it
            pos, more = _skip_java_whitespace(data, pos, end)
            skipped += more
    return pos, skipped


@_compiled
def _overlap_units(out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, budget: int) -> int:
    """The seed's overlap length L (code points, 0: none) between the normalized block
    text ``out[b0:b1]`` and chunk ``data[t0:t1]``, comparing on the fly.

    The block's normalized tail is read backwards, nearest the end first, so the last
    match is the longest; a place is compared in full only where its next 8 normalized
    bytes equal the chunk's first 8 (kept packed in one integer). -1: over ``budget``.
    """
    e0, e1 = _trimmed(out, b0, b1)
    x0, x1 = _trimmed(data, t0, t1)
    if e1 == e0 or x1 == x0:
        return 0
    limit = _normalized_length(data, x0, x1)
    if limit < MIN_OVERLAP:
        return 0
    tail = max(e0, e1 - limit)
    if limit == x1 - x0 and _normalized_length(out, tail, e1) == e1 - tail:
        # no whitespace run in the chunk or in the block's last ``limit`` bytes, so
        # normalized and raw positions agree: compare raw bytes, runs mapped to " "
        return _overlap_plain(out[tail:e1], data[x0:x1], budget)
    eight = np.uint64(8)
    head = np.uint64(0)
    pos = x0
    for i in range(8):  # limit >= MIN_OVERLAP > 8
        v, pos = _step(data, pos, x1)
        head |= np.uint64(v) << np.uint64(8 * i)
    window = np.uint64(0)
    best = 0
    q = e1
    distance = 0  # normalized bytes from q to the end of the block text
    work = 0
    while q > e0 and distance < limit:
        v, q = _step_back(out, q, e0)
        window = (window << eight) | np.uint64(v)
        distance += 1
        if distance >= MIN_OVERLAP and window == head:
            after, units = _same(out, q, e1, data, x0, x1, distance)
            work += distance
            if after >= 0:
                best = units
            if work > budget:
                return -1
    return best if best >= MIN_OVERLAP else 0


@nb.njit(inline="always")
def _space(b: int) -> np.uint64:
    """A raw byte as normalization reads it where no run is longer than one byte."""
    return np.uint64(32) if _collapsible(b) else np.uint64(b)


@nb.njit(inline="always")
def _places(
    a0: U8,
    a1: U8,
    a2: U8,
    a3: U8,
    c0: int,
    c1: int,
    c2: int,
    c3: int,
    any1: bool,
    any2: bool,
    any3: bool,
) -> int:
    """How many places ``i`` have ``a0[i] == c0`` and ``ak[i] == ck`` (or ``anyk``) for
    k = 1, 2, 3: the four byte columns of consecutive places. A loop from 0 over slices,
    which the compiler vectorizes."""
    hits = np.int64(0)
    for i in range(len(a0)):
        hits += np.int64(
            np.uint8(a0[i] == c0)
            & (np.uint8(a1[i] == c1) | np.uint8(any1))
            & (np.uint8(a2[i] == c2) | np.uint8(any2))
            & (np.uint8(a3[i] == c3) | np.uint8(any3))
        )
    return int(hits)


PLACES = 32
"""Places the plain overlap search filters at once."""
VERIFY_FIRST = 16
"""Bytes of a place the plain overlap search compares one by one before the rest."""


@nb.njit(inline="always")
def _differing(a: U8, b: U8) -> int:
    """How many places of ``a`` and ``b`` (same length) differ as normalization reads
    them where no run is longer than one byte (a whitespace byte is a space)."""
    bad = np.int64(0)
    for i in range(len(a)):
        x, y = a[i], b[i]
        both = _collapsible_u8(x) & _collapsible_u8(y)
        bad += np.int64(np.uint8(x != y) & ~both)
    return int(bad)


@_compiled
def _overlap_plain(tail: U8, chunk: U8, budget: int) -> int:
    """:func:`_overlap_units` where raw bytes are normalized bytes (no whitespace run
    in ``tail``, the block's last bytes, or in ``chunk``; both trimmed): the earliest
    place in ``tail`` whose rest is a prefix of ``chunk`` gives the longest overlap.

    A place is compared only where its first four bytes equal the chunk's (a chunk
    byte <= 0x20 there matches anything: whitespace of any kind normalizes to a
    space); :func:`_places` tells, :data:`PLACES` places at a time, whether any does.
    A place that passes is compared :data:`VERIFY_FIRST` bytes one by one, then the
    rest at once (:func:`_differing`)."""
    n, m = len(tail), len(chunk)
    lo, hi = max(0, n - m), n - MIN_OVERLAP + 1  # places: MIN_OVERLAP bytes from each
    c0, c1, c2, c3 = chunk[0], chunk[1], chunk[2], chunk[3]  # c0: no whitespace (trimmed)
    any1, any2, any3 = c1 <= 32, c2 <= 32, c3 <= 32
    work = 0
    base = lo
    while base < hi:
        end = min(base + PLACES, hi)
        a0, a1, a2 = tail[base:end], tail[base + 1 : end + 1], tail[base + 2 : end + 2]
        a3 = tail[base + 3 : end + 3]
        if _places(a0, a1, a2, a3, c0, c1, c2, c3, any1, any2, any3) > 0:
            for q in range(base, end):
                if tail[q] != c0:
                    continue
                distance = n - q  # >= MIN_OVERLAP > VERIFY_FIRST
                j = 1
                while j < VERIFY_FIRST and _space(tail[q + j]) == _space(chunk[j]):
                    j += 1
                if j == VERIFY_FIRST:  # the rest at once, in a vectorized loop
                    rest = tail[q + VERIFY_FIRST : n], chunk[VERIFY_FIRST:distance]
                    if _differing(rest[0], rest[1]) == 0:
                        units = _code_points(chunk, 0, distance)
                        return units if units >= MIN_OVERLAP else 0
                    j = distance
                work += j
                if work > budget:
                    return -1
        base = end
    return 0


@nb.njit(inline="always")
def _ascii_whitespace(b: int) -> np.uint8:
    """1 for an ASCII byte Java calls whitespace (``[\\t\\n\\x0B\\f\\r\\x1C-\\x20]``)."""
    return _collapsible_u8(b) | np.uint8(np.uint8(b - np.uint8(28)) < np.uint8(4))


@_compiled
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


@_compiled
def _overlap_cut(
    out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, nxt: U8, tail: U8, fail: I64
) -> tuple[int, int]:
    """``remove_overlap(out[b0:b1], data[t0:t1])`` (both non-empty): the byte position
    in the chunk where the appended text starts, and the code points skipped; (-1, 0)
    when no overlap is found (the seed appends "\n" + the whole chunk)."""
    units = _overlap_units(out, b0, b1, data, t0, t1, 16 * (t1 - t0) + 256)
    if units < 0:  # pathological text: normalize both, then a linear-time search
        units = _overlap_kmp(out, b0, b1, data, t0, t1, nxt, tail, fail)
    if units == 0:
        return -1, 0
    stop = _skip_plain(data, t0, t1, units)
    if stop >= 0:
        return stop, units
    return _skip_units(data, t0, t1, units)


@_compiled
def _overlap_kmp(
    out: U8, b0: int, b1: int, data: U8, t0: int, t1: int, nxt: U8, tail: U8, fail: I64
) -> int:
    """:func:`_overlap_units` by normalizing both texts and Knuth-Morris-Pratt."""
    nx = _normalize(data, t0, t1, nxt)
    if nx < MIN_OVERLAP:
        return 0
    ne = _normalized_tail(out, b0, b1, nx, tail)
    if ne < MIN_OVERLAP:
        return 0
    _failure(nxt, nx, fail)
    q = 0
    for i in range(nx - ne, nx):
        b = tail[i]
        while q > 0 and b != nxt[q]:
            q = fail[q - 1]
        if b == nxt[q]:
            q += 1
        if q == nx and i + 1 < nx:
            q = fail[q - 1]
    # q: the longest prefix of the chunk that the block ends with, in bytes
    units = _code_points(nxt, 0, q)
    return units if units >= MIN_OVERLAP else 0


@_compiled
def _offsets_cut(
    data: U8, t0: int, t1: int, start: int, end: int, block_end: int
) -> tuple[int, int]:
    """``overlap="offsets"``: where the appended text starts (-1: "\\n" + the chunk)."""
    if end <= block_end:
        return t1, _code_points(data, t0, t1)
    if start <= block_end:
        units = block_end - start
        pos = t0
        skipped = 0
        while pos < t1 and skipped < units:
            pos += 1
            while pos < t1 and not _lead(data[pos]):
                pos += 1
            skipped += 1
        return pos, skipped
    return -1, 0


@nb.njit(inline="always")
def _copy(source: U8, target: U8) -> None:
    for i in range(len(source)):
        target[i] = source[i]


@_compiled
def _merge(
    address: I64,
    length: I64,
    group_start: Bools,
    chunk_index: I64,
    sim: F64,
    rerank: F64,
    max_gap: int,
    cap: int,
    by_offsets: bool,
    start_char: I64,
    end_char: I64,
    part: tuple[int, int, int],
    out: U8,
    blocks: MergeBlocks,
) -> int:
    """Rules 6-8 for the groups of rows ``part[0]:part[1]``: rows in merge order,
    ``group_start`` marking each group's first row, ``rerank`` NaN where null. Writes
    block texts into ``out`` from byte ``part[2]`` on and returns the byte after them.

    Sets in ``blocks``, per row: whether it starts a block, and on each block's first
    row its text's first byte in ``out`` and its length in bytes, its length in code
    points, end chunk index, max and sum of similarity, chunk count and max rerank
    score (NaN: none). Parts of disjoint groups may run at once.
    """
    starts, block_begin_at, block_bytes, block_chars, block_end, block_max = blocks[:6]
    block_sum, block_count, block_rerank = blocks[6:]
    lo, hi, used = part
    longest = max(1, length.max()) if len(length) else 1
    nxt = np.empty(longest, dtype=np.uint8)
    tail = np.empty(longest, dtype=np.uint8)
    fail = np.empty(longest, dtype=np.int64)
    b = -1  # the current block's first row
    block_begin = used  # the current block's first byte in out
    chars = 0  # the current block's length in code points
    char_end = 0
    for r in range(lo, hi):
        _prefetch_text(address, length, r + PREFETCH_AHEAD)
        data = _text(address, length, r)
        t0, t1 = 0, len(data)
        append = False
        cut = t0  # where the appended text starts; -1: "\n" + the whole chunk
        skipped = 0
        extra = 0
        if not group_start[r] and b >= 0 and chunk_index[r] - block_end[b] <= max_gap:
            if by_offsets:
                cut, skipped = _offsets_cut(data, t0, t1, start_char[r], end_char[r], char_end)
            elif used > block_begin and t1 > t0:
                cut, skipped = _overlap_cut(out, block_begin, used, data, t0, t1, nxt, tail, fail)
            total = _code_points(data, t0, t1)
            extra = total + 1 if cut < 0 else total - skipped
            append = chars + extra <= cap
        if append:
            if cut < 0:
                out[used] = 10
                used += 1
                cut = t0
            _copy(data[cut:t1], out[used:])
            used += t1 - cut
            chars += extra
            block_end[b] = chunk_index[r]
            char_end = max(char_end, end_char[r])
            if sim[r] > block_max[b]:
                block_max[b] = sim[r]
            block_sum[b] += sim[r]
            block_count[b] += 1
            top_rerank = block_rerank[b]
            if not np.isnan(rerank[r]) and (np.isnan(top_rerank) or rerank[r] > top_rerank):
                block_rerank[b] = rerank[r]
        else:
            if b >= 0:
                block_chars[b] = chars
                block_bytes[b] = used - block_begin
            starts[r] = True
            b = r
            block_begin = used
            block_begin_at[r] = used
            _copy(data, out[used:])
            used += t1
            chars = _code_points(data, t0, t1)
            char_end = end_char[r]
            block_end[r] = chunk_index[r]
            block_max[r] = sim[r]
            block_sum[r] = sim[r]
            block_count[r] = 1
            block_rerank[r] = rerank[r]
    if b >= 0:
        block_chars[b] = chars
        block_bytes[b] = used - block_begin
    return used


MergeBlocks = tuple[Bools, I64, I64, I64, I64, F64, F64, I64, F64]
MergeResult = tuple[Bools, U8, I64, I64, I64, I64, F64, F64, I64, F64]


def merge(
    texts: pl.Series,
    order: I64,
    group_start: Bools,
    chunk_index: I64,
    sim: F64,
    rerank: F64,
    max_gap: int,
    cap: int,
    start_char: I64 | None = None,
    end_char: I64 | None = None,
) -> MergeResult:
    """Blocks of every group (see :func:`_merge`); offsets mode when offsets are given.
    ``texts`` in any row order, ``order`` their rows in merge order; the other arrays
    are in merge order.

    Returns each row's "starts a block" flag, the buffer the block texts are written
    to (UTF-8; parts leave gaps between them), then per row (set on each block's first
    row) its text's first byte in that buffer and its length in bytes, then the block
    statistics of :func:`_merge`.
    """
    address, length, _arrow = views(texts)
    address, length = address[order], length[order]
    n = len(chunk_index)
    by_offsets = start_char is not None and end_char is not None
    zeros = np.zeros(n, dtype=np.int64)
    # a block's text is at most its chunks' bytes and a newline per chunk
    room = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length + 1, out=room[1:])
    out = np.empty(int(room[-1]), dtype=np.uint8)
    blocks: MergeBlocks = (
        np.zeros(n, dtype=np.bool_),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.int64),
        np.full(n, np.nan, dtype=np.float64),
    )

    def run(part: tuple[int, int]) -> None:
        lo, hi = part
        _merge(
            address,
            length,
            group_start,
            chunk_index,
            sim,
            rerank,
            max_gap,
            cap,
            by_offsets,
            start_char if start_char is not None else zeros,
            end_char if end_char is not None else zeros,
            (lo, hi, int(room[lo])),
            out,
            blocks,
        )

    _in_parts(run, np.flatnonzero(group_start), n)
    del _arrow  # the buffers ``address`` points into lived until here
    return (blocks[0], out, *blocks[1:])


# --- ordering ----------------------------------------------------------------------------


@nb.njit(inline="always")
def _before(keys: I64, a: int, b: int) -> bool:
    """Whether row ``a`` of ``keys`` (one row of columns per row) sorts before row ``b``."""
    for k in range(keys.shape[1]):
        if keys[a, k] != keys[b, k]:
            return bool(keys[a, k] < keys[b, k])
    return False


@_compiled
def ordered_in_segments(starts: Bools, keys: I64) -> I64:
    """The rows ordered by the columns of ``keys`` (``keys[row]``, compared in column
    order; ascending, stable) within each segment of rows (``starts`` marks their first
    rows); segments stay where they are. A short segment is insertion-sorted; a long
    one takes one stable sort per column, the last column first."""
    n = len(starts)
    order = np.arange(n)
    lo = 0
    while lo < n:
        hi = lo + 1
        while hi < n and not starts[hi]:
            hi += 1
        if hi - lo > 16:
            rows = order[lo:hi].copy()
            for k in range(keys.shape[1] - 1, -1, -1):
                rows = rows[np.argsort(keys[rows, k], kind="mergesort")]
            order[lo:hi] = rows
        else:
            for i in range(lo + 1, hi):
                row = order[i]
                j = i
                while j > lo and _before(keys, row, order[j - 1]):
                    order[j] = order[j - 1]
                    j -= 1
                order[j] = row
        lo = hi
    return order


# --- running in parallel -----------------------------------------------------------------

PARALLEL_ROWS = 20_000
"""Below this many rows a kernel runs on the calling thread alone."""


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _in_parts(run: Callable[[tuple[int, int]], None], starts: I64, n: int) -> None:
    """Call ``run((lo, hi))`` on parts of ``range(n)`` that begin at ``starts`` (where a
    query or a group begins), one part per CPU, at once: the kernels release the GIL.

    A fresh pool per call: cheap next to the work, and safe after ``fork``.
    """
    parts = min(_threads(), max(1, n // PARALLEL_ROWS))
    at = np.searchsorted(starts, np.arange(1, parts) * n // parts)
    cuts = starts[np.minimum(at, len(starts) - 1)] if len(starts) else starts
    bounds = np.unique(np.concatenate([[0], cuts, [n]])).tolist()
    pieces = list(itertools.pairwise(bounds))
    if len(pieces) <= 1:
        run((0, n))
        return
    with ThreadPoolExecutor(len(pieces)) as pool:
        for done in [pool.submit(run, piece) for piece in pieces]:
            done.result()


# --- Arrow buffers -----------------------------------------------------------------------


def views(texts: pl.Series) -> tuple[I64, I64, list[Any]]:
    """Where each string's UTF-8 bytes are, without copying them: their address and
    length, read from the Arrow string views Polars exports; nulls read as "".

    The third item holds the Arrow arrays that own the bytes: keep it alive while the
    addresses are used.
    """
    if texts.null_count():
        texts = texts.fill_null("")
    arrow = texts.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]
    chunks = [ch if ch.type == pa.string_view() else ch.cast(pa.string_view()) for ch in chunks]
    address = np.empty(len(texts), dtype=np.int64)
    length = np.empty(len(texts), dtype=np.int64)
    done = 0
    for chunk in chunks:
        buffers = chunk.buffers()  # validity, views, data buffers
        view = np.frombuffer(buffers[1], dtype=np.uint32).reshape(-1, 4)
        base = np.array([b.address for b in buffers[2:]] + [0], dtype=np.int64)
        at = (done, chunk.offset, len(chunk), buffers[1].address)
        _read_views(view, base, at, address, length)
        done += len(chunk)
    return address, length, [arrow, chunks]


@_compiled
def _read_views(
    view: npt.NDArray[np.uint32],
    base: I64,
    at: tuple[int, int, int, int],
    address: I64,
    length: I64,
) -> None:
    """Fill ``address``/``length`` from ``at[0]`` on with the strings of Arrow views
    ``view[at[1]:at[1] + at[2]]`` (the views buffer starts at address ``at[3]``):
    length, then the bytes inline (up to 12) or the data buffer index and offset."""
    done, offset, count, views_address = at
    for i in range(count):
        row = offset + i
        size = np.int64(view[row, 0])
        length[done + i] = size
        if size <= 12:
            address[done + i] = views_address + 16 * row + 4
        else:
            address[done + i] = base[view[row, 2]] + np.int64(view[row, 3])


VIEW_BUFFER = 2**31 - 1
"""The largest buffer Arrow string views can point into (their offsets are int32)."""


def strings(data: U8, begin: I64, size: I64) -> pl.Series:
    """A String Series of the UTF-8 pieces ``data[begin[i]:begin[i] + size[i]]``, in
    any order, without copying them: Arrow string views into ``data`` (a buffer over
    :data:`VIEW_BUFFER` bytes is first packed into a fresh one, pieces in order)."""
    n = len(begin)
    if len(data) > VIEW_BUFFER:
        ends = np.cumsum(size)
        packed = np.empty(int(ends[-1]) if n else 0, dtype=np.uint8)
        _pack(data, begin, size, packed)
        data, begin = packed, ends - size
        if len(data) > VIEW_BUFFER:  # still too large for views: offsets, not views
            offsets = np.zeros(n + 1, dtype=np.int64)
            offsets[1:] = ends
            large = pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
            return pl.Series(large)
    cells = np.zeros((n, 4), dtype=np.uint32)
    _write_views(data, begin, size, cells.view(np.uint8).reshape(n, 16), cells)
    buffers = [None, pa.py_buffer(cells), pa.py_buffer(data)]
    return pl.Series(pa.Array.from_buffers(pa.string_view(), n, buffers))


@_compiled
def _pack(data: U8, begin: I64, size: I64, packed: U8) -> None:
    """Copy the pieces of ``data`` (``begin``, ``size``) one after another into ``packed``."""
    at = 0
    for i in range(len(begin)):
        _copy(data[begin[i] : begin[i] + size[i]], packed[at:])
        at += size[i]


@_compiled
def _write_views(
    data: U8, begin: I64, size: I64, cell_bytes: U8, cells: npt.NDArray[np.uint32]
) -> None:
    """Arrow string views (16 bytes each, zeroed) of the pieces of ``data``: the length,
    then up to 12 bytes inline, or the first 4 bytes, buffer 0 and the offset."""
    for i in range(len(begin)):
        length = size[i]
        cells[i, 0] = np.uint32(length)
        start = begin[i]
        if length <= 12:
            for k in range(length):
                cell_bytes[i, 4 + k] = data[start + k]
        else:
            for k in range(4):
                cell_bytes[i, 4 + k] = data[start + k]
            cells[i, 3] = np.uint32(start)
