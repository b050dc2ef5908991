"""Rule 3, the distinct top-K walk, as one compiled pass over every query's ranking:
skip a candidate that an already-selected chunk of the same entity repeats, stop at
``top_k``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from ragframe._kernels._ahead import sample
from ragframe._kernels._buffers import (
    PREFETCH_AHEAD,
    VIEWS_AHEAD,
    ViewTable,
    prefetch_text,
    prefetch_view,
    text_at,
    view_at,
    view_table,
)
from ragframe._kernels._compile import (
    F64,
    I64,
    U8,
    ZERO,
    Bools,
    compiled,
    frozen,
    internal,
)
from ragframe._kernels._parts import in_parts
from ragframe.postprocess._kernels._contains import (
    contains_from_head,
    contains_raw,
    contains_words,
    head_of,
)
from ragframe.postprocess._kernels._keys import MIXER, WalkKeys, key_hashes, nulls, walk_keys
from ragframe.postprocess._kernels._order import rank_order
from ragframe.postprocess._kernels._text import (
    failure,
    normalize,
    normalized_length,
    trimmed,
)


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
def _hash_of(hashes: I64, keys: WalkKeys, r: int) -> int:
    """Row ``r``'s hash of its key: ``hashes[r]``, or with no ``hashes`` (integer
    entities, no types) its entity mixed (multiplied, wrapping, and its high bits
    folded into the low ones the table reads)."""
    if len(hashes):
        return int(hashes[r])
    h = keys[0][r] * MIXER
    return int(h ^ (h >> 29))


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


@internal
def _kept(sim: float, start: bool, best: float, t: float) -> bool:
    """Rule 4 on a selected row: at or above its query's threshold ``t``, or (the
    fallback) the query's first candidate when the best selected similarity is below."""
    return sim >= t or (start and best < t)


@compiled
def _walk(
    views: ViewTable,
    text_row: I64,
    order: I64,
    start: Bools,
    sim: F64,
    entity_null: Bools,
    hashes: I64,
    keys: WalkKeys,
    more: Bools,
    top_k: int,
    thresholds: F64,
    slots: int,
    part: tuple[int, int],
    out: tuple[Bools, I64, F64, Bools, I64, I64, I64, I64, I64],
) -> None:
    """Rule 3's walk over the queries of ``order[part[0]:part[1]]``, each row's text the
    row ``text_row`` of a string column (``views``: its
    :data:`~ragframe._kernels._buffers.ViewTable`; -1: none), rows visited in
    ``order`` (ranking order per query; a query starts where ``start`` is set). Sets per row,
    in ``out``: whether it is selected, the number of chunks its query selected and the
    best similarity among them (on every row of the query), whether rule 4 keeps it
    (:func:`_kept`, the query's threshold ``thresholds[count]``; never in a query
    ``more`` marks on its first row that selects fewer than ``top_k``: more candidates
    follow, walked again), and working state (the
    selected row before it of the same key, its trimmed bounds and its normalized
    length, each once needed, -1 before; its text's address and byte length, found
    from its view as the part begins). ``more`` empty: no query has more.
    Parts of disjoint queries may run at once: each writes only its own rows.

    A candidate is compared only with the selected chunks of its own (entity, type): a
    chain per key, found in a per-query hash table (``hashes``, verified by
    :func:`_same_key`, so a collision costs a probe, never a wrong answer). Texts are
    compared by normalized length first, then on the fly; a pathological pair (many
    near-matches) is settled by normalizing both and a linear-time search instead.
    """
    selected, count, best, keep, previous, trims, norm_len, address, length = out
    i, n = part
    longest = 1
    for j in range(i, n):  # this part's rows, here: parts touch their memory at once
        if j + VIEWS_AHEAD < n:
            prefetch_view(views, text_row[order[j + VIEWS_AHEAD]])
        r = order[j]
        address[r], length[r] = view_at(views, text_row[r])
        longest = max(longest, length[r])
        selected[r] = False
        previous[r], trims[r, 0], trims[r, 1], norm_len[r] = -1, -1, -1, -1
    scratch = (  # for the longest text, in bytes
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
                h = _hash_of(hashes, keys, r)
                slot = h & mask
                while table[slot] >= 0 and not (
                    _hash_of(hashes, keys, table[slot]) == h and _same_key(keys, table[slot], r)
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
        short = len(more) > 0 and more[order[first]] and picked < top_k
        t = thresholds[picked]
        for j in range(first, i):
            r = order[j]
            count[r] = picked
            best[r] = top
            keep[r] = selected[r] and not short and _kept(sim[r], start[r], top, t)
        for j in range(filled):
            table[used[j]] = -1


class Walked(NamedTuple):
    """Per row, what :func:`walk` finds."""

    selected: Bools
    """Rule 3 selects it."""
    picked: I64
    """How many chunks its query selects."""
    best: F64
    """The best similarity among them (-inf: none)."""
    keep: Bools
    """Rule 4 keeps it (and its query is not left short: see :func:`_walk`)."""
    address: I64
    """Its text's UTF-8 bytes' address (read in place, found from its view) ..."""
    length: I64
    """... and byte length (0: no text)."""
    alive: object
    """Owns the memory the addresses point into: keep it while they are read."""


def walk(
    text: pl.Series,
    text_row: I64,
    rank: I64,
    start: Bools,
    sim: F64,
    entity: pl.Series,
    entity_type: pl.Series | None,
    hashes: I64 | None,
    top_k: int,
    thresholds: F64,
    more: Bools | None = None,
) -> Walked:
    """The distinct top-K walk (see :func:`_walk`) over columns in any row order, each
    row's text the row ``text_row`` of the String column ``text`` (-1: none, read as ""),
    read in place: ``rank`` orders the rows (ranking order, each
    query's rows together), ``start`` marks each query's first row, ``hashes`` hash
    (entity, type) (None: :func:`~._keys.key_hashes`; empty: the integer entities mixed,
    :func:`_hash_of`); ``entity_type`` None: every type is null.
    Rule 4 with ``thresholds``, the threshold of a query selecting ``k`` chunks at
    ``k`` (for every count a query here can reach); ``more`` marks the rows of queries
    with more candidates than these (None: none). Inputs reach the kernel
    :func:`~._compile.frozen`, outputs fresh: one signature whatever the caller's
    arrays."""
    n = len(rank)
    order = rank_order(rank)
    keys, alive = walk_keys(entity, entity_type)
    views, texts = view_table(text)
    if hashes is None:
        hashes = key_hashes(entity, entity_type)
    inputs = (
        views,
        frozen(text_row, np.int64),
        frozen(order, np.int64),
        frozen(start, np.bool_),
        frozen(sim, np.float64),
        frozen(nulls(entity), np.bool_),
        frozen(hashes, np.int64),
        keys,
        frozen(np.zeros(0, dtype=np.bool_) if more is None else more, np.bool_),
    )
    starts = np.flatnonzero(start[order])
    widest = int(np.diff(starts, append=n).max()) if n else 1  # rows of the largest query
    slots = 1 << (2 * widest).bit_length()
    out = _outputs(n)
    limits = frozen(thresholds, np.float64)

    def run(part: tuple[int, int]) -> None:
        _walk(*inputs, int(top_k), limits, slots, part, out)

    in_parts(run, starts, n)
    del alive  # the keys' buffers lived until here; the texts' go with the result
    return Walked(out[0], out[1], out[2], out[3], out[7], out[8], texts)


def _outputs(n: int) -> tuple[Bools, I64, F64, Bools, I64, I64, I64, I64, I64]:
    """What :func:`_walk` sets, for ``n`` rows: selected, count, best, keep, then its
    working state and each text's address and length; not filled here: each part sets
    its own rows first (on its thread, where a fill here touched all of them on the
    caller's)."""
    return (
        np.empty(n, dtype=np.bool_),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.float64),
        np.empty(n, dtype=np.bool_),
        np.empty(n, dtype=np.int64),
        np.empty((n, 2), dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
    )


@sample("_walk")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    i64, yes = np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.bool_)
    entity, entity_type = pl.Series([1]), pl.Series([None], dtype=pl.String)
    walk(pl.Series(["a"]), i64, i64, yes, np.zeros(1), entity, entity_type, None, 1, np.zeros(2))
