"""Rule 3, the distinct top-K walk, as one compiled pass over every query's ranking:
skip a candidate that an already-selected chunk of the same entity repeats, stop at
``top_k``."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe._arrow import string_addresses
from ragframe._kernels._ahead import sample
from ragframe._kernels._buffers import (
    PREFETCH_AHEAD,
    longest_text,
    prefetch_text,
    text_at,
)
from ragframe._kernels._compile import (
    F64,
    I64,
    U8,
    ZERO,
    Bools,
    compiled,
    frozen,
    int64s,
    internal,
)
from ragframe._kernels._parts import in_parts
from ragframe.postprocess._kernels._contains import (
    contains_from_head,
    contains_raw,
    contains_words,
    head_of,
)
from ragframe.postprocess._kernels._order import rank_order
from ragframe.postprocess._kernels._text import (
    failure,
    normalize,
    normalized_length,
    trimmed,
)

WalkKeys = tuple[I64, I64, I64, bool, Bools, I64, I64]


@internal
def _same_bytes(address: I64, length: I64, a: int, b: int) -> bool:
    """Whether rows ``a`` and ``b`` of a string column hold the same bytes."""
    if length[a] != length[b]:
        return False
    x, y = text_at(address, length, a), text_at(address, length, b)
    for i in range(len(x)):  # noqa: SIM110 -- compiled loop, no generator
        if x[i] != y[i]:
            return False
    return True


@internal
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


@internal
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
    in full). The places left for the candidate are tried where they may begin with
    its first 8 bytes (:func:`contains_from_head`; on issue 27's workload 26.1-27.8 ->
    25.2-25.9 ms the walk alone, store, 28.2-28.5 -> 25.8-26.2 inline, one thread),
    or, when those hold a whitespace run, on the fly (:func:`contains_raw`)."""
    for row in (r, s):
        if trims[row, 0] < 0:
            text = text_at(address, length, row)
            trims[row, 0], trims[row, 1] = trimmed(text, ZERO, len(text))
    needle = text_at(address, length, r)
    if norm_len[r] < 0:
        norm_len[r] = normalized_length(needle, trims[r, 0], trims[r, 1])
    nn = norm_len[r]
    if nn == 0:
        return False
    haystack = text_at(address, length, s)
    hn = norm_len[s] if norm_len[s] >= 0 else trims[s, 1] - trims[s, 0]
    if nn > hn:
        return False
    n0, n1, h0, h1 = trims[r, 0], trims[r, 1], trims[s, 0], trims[s, 1]
    head = head_of(needle, address[r], n0)
    budget = 8 * (hn + nn) + 64
    if head[1]:  # a head to filter the places with
        hit = contains_from_head(haystack, address[s], h0, h1, head, needle, n0, n1, nn, budget)
    else:
        hit = contains_raw(haystack, h0, h1, hn, needle, n0, n1, nn, budget)
    if hit < 0:
        hay, cand, fail = scratch
        nn = normalize(needle, ZERO, len(needle), cand)
        hn = normalize(haystack, ZERO, len(haystack), hay)
        failure(cand, nn, fail)
        hit = 1 if contains_words(hay, ZERO, hn, cand, nn, fail) else 0
    return hit == 1


@compiled
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
    longest = longest_text(length)
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
                prefetch_text(address, length, order[i + PREFETCH_AHEAD])
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
    address: I64,
    length: I64,
    rank: I64,
    start: Bools,
    sim: F64,
    entity: pl.Series,
    entity_type: pl.Series,
    hashes: I64,
    top_k: int,
) -> tuple[Bools, I64, F64]:
    """The distinct top-K walk (see :func:`_walk`) over columns in any row order, the
    texts read in place (``address``, ``length``: :func:`ragframe._arrow.string_addresses`;
    their buffers alive meanwhile): ``rank`` orders the rows (ranking order, each
    query's rows together), ``start`` marks each query's first row, ``hashes`` hash
    (entity, type). Inputs reach the kernel :func:`~._compile.frozen`, outputs fresh:
    one signature whatever the caller's arrays."""
    n = len(rank)
    order = rank_order(rank)
    keys, more = _walk_keys(entity, entity_type)
    inputs = (
        frozen(address, np.int64),
        frozen(length, np.int64),
        frozen(order, np.int64),
        frozen(start, np.bool_),
        frozen(sim, np.float64),
        frozen(entity.is_null().to_numpy(), np.bool_),
        frozen(hashes, np.int64),
        keys,
    )
    starts = np.flatnonzero(start[order])
    widest = int(np.diff(starts, append=n).max()) if n else 1  # rows of the largest query
    slots = 1 << (2 * widest).bit_length()
    out = _outputs(n)

    def run(part: tuple[int, int]) -> None:
        _walk(*inputs, int(top_k), slots, part, out)

    in_parts(run, starts, n)
    del more  # the buffers the addresses point into lived until here
    return out[0], out[1], out[2]


def _outputs(n: int) -> tuple[Bools, I64, F64, I64, I64, I64]:
    """What :func:`_walk` sets, for ``n`` rows: selected, count, best, then its working
    state (-1: not yet known)."""
    return (
        np.zeros(n, dtype=np.bool_),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.float64),
        np.full(n, -1, dtype=np.int64),
        np.full((n, 2), -1, dtype=np.int64),
        np.full(n, -1, dtype=np.int64),
    )


@sample("_walk")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    i64, yes = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.bool_)
    entity, entity_type = pl.Series([1]), pl.Series([None], dtype=pl.String)
    address, length, alive = string_addresses(pl.Series(["a"]))
    walk(address, length, i64, yes, np.zeros(1), entity, entity_type, i64, 1)
    del alive


def _walk_keys(entity: pl.Series, entity_type: pl.Series) -> tuple[WalkKeys, list[Any]]:
    """What :func:`_same_key` compares: the entity (numbers or string bytes) and the
    type (validity and bytes; nothing when every type is null)."""
    none = np.zeros(0, dtype=np.int64)
    alive: list[Any] = []
    if entity.dtype == pl.String:
        number = none
        e_address, e_length, kept = string_addresses(entity)
        alive.append(kept)
    else:
        number = int64s(entity)
        e_address, e_length = none, none
    typed = entity_type.null_count() < len(entity_type)
    if typed:
        t_valid = entity_type.is_not_null().to_numpy()
        t_address, t_length, kept = string_addresses(entity_type)
        alive.append(kept)
    else:
        t_valid, t_address, t_length = np.zeros(0, dtype=np.bool_), none, none
    number, e_address, e_length, t_address, t_length = (
        frozen(a, np.int64) for a in (number, e_address, e_length, t_address, t_length)
    )
    t_valid = frozen(t_valid, np.bool_)
    return (number, e_address, e_length, bool(typed), t_valid, t_address, t_length), alive
