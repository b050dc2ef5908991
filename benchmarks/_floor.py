"""The floor: one compiled pass doing the essential work of ``postprocess`` with
simplified rules, to show how far the engine is from what the hardware allows.

Per query (rows grouped by query, as the benchmark's data are): each query's top
:data:`HEAD` candidates by similarity (one pass; a full sort of the query when the walk
needs more), the distinct top-K walk (a candidate is a repeat when a selected chunk of
its entity with a similarity at least its own contains its raw bytes), rule 4's
threshold, the kept chunks sorted by (entity, chunk index), merged where adjacent with
the longest raw-byte overlap of at least 20 bytes removed (else a newline), blocks
ordered by best similarity, then the block and character budgets (bytes; the first
block cut at the limit). Texts are read in place from the chunk store's Arrow string
views (found by a hash of (entity, chunk index) built per call), only for the
candidates walked; block texts are written once, for the blocks kept. Two threads,
each a half of the queries. Not the engine's rules: a lower bound on its cost.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba as nb
import numpy as np
import polars as pl
from numba.extending import intrinsic

from ragframe._arrow import consecutive_strings, string_addresses

HEAD = 12
"""Candidates per query the first pass ranks."""
MIN_OVERLAP = 20
jit = nb.njit(nogil=True, cache=True, boundscheck=False)


@jit
def _mix(entity: int, chunk: int) -> int:
    h = np.uint64(entity) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(chunk)
    h ^= h >> np.uint64(29)
    return int(h * np.uint64(0xBF58476D1CE4E5B9) >> np.uint64(1))


@jit
def _index(entity: Any, chunk: Any, slots: int) -> Any:
    """An open-addressing table (``slots``: a power of two) of the store's rows by
    (entity, chunk index)."""
    table = np.full(slots, -1, dtype=np.int64)
    for row in range(len(entity)):
        slot = _mix(entity[row], chunk[row]) & (slots - 1)
        while table[slot] >= 0:
            slot = (slot + 1) & (slots - 1)
        table[slot] = row
    return table


@jit
def _find(table: Any, s_entity: Any, s_chunk: Any, entity: int, chunk: int) -> int:
    mask = len(table) - 1
    slot = _mix(entity, chunk) & mask
    while table[slot] >= 0:
        row = table[slot]
        if s_entity[row] == entity and s_chunk[row] == chunk:
            return int(row)
        slot = (slot + 1) & mask
    return -1


@jit
def _contains(hay: Any, needle: Any) -> bool:
    n, m = len(hay), len(needle)
    if m == 0 or m > n:
        return m == 0
    for i in range(n - m + 1):
        if hay[i] == needle[0]:
            j = 1
            while j < m and hay[i + j] == needle[j]:
                j += 1
            if j == m:
                return True
    return False


@jit
def _overlap(block: Any, lo: int, used: int, chunk: Any) -> int:
    """The longest L >= MIN_OVERLAP with block[used - L:used] == chunk[:L] (within
    ``block[lo:used]``), else 0: places filtered by their first 8 bytes at once (a
    rolling 64-bit window), the earliest match is the longest."""
    first = max(lo, used - len(chunk))
    last = used - MIN_OVERLAP  # the latest place
    if len(chunk) < MIN_OVERLAP or last < first:
        return 0
    want = np.uint64(0)
    window = np.uint64(0)
    for j in range(8):
        want |= np.uint64(chunk[j]) << np.uint64(8 * j)
        window |= np.uint64(block[first + j]) << np.uint64(8 * j)
    for q in range(first, last + 1):
        if window == want:
            j = 8
            while q + j < used and block[q + j] == chunk[j]:
                j += 1
            if q + j == used:
                return used - q
        window = (window >> np.uint64(8)) | (np.uint64(block[q + 8]) << np.uint64(56))
    return 0


@jit
def _sort_rows(rows: Any, count: int, key: Any, key2: Any) -> None:
    """Insertion sort of rows[:count] by (key desc) or, with key2, (key, key2) asc."""
    for i in range(1, count):
        row = rows[i]
        j = i
        while j > 0:
            prev = rows[j - 1]
            if len(key2):
                later = key[prev] > key[row] or (key[prev] == key[row] and key2[prev] > key2[row])
            else:
                later = key[prev] < key[row]
            if not later:
                break
            rows[j] = prev
            j -= 1
        rows[j] = row


@jit
def _bytes(address: Any, length: Any, row: int) -> Any:
    return nb.carray(_pointer(address[row]), length[row])  # type: ignore[attr-defined]


@intrinsic
def _pointer(typingctx: Any, address: Any) -> Any:
    kind = nb.types.CPointer(nb.types.uint8)
    sig = kind(nb.types.int64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.inttoptr(args[0], context.get_value_type(kind))

    return sig, codegen


@jit
def _floor(
    bounds: Any,
    part: Any,
    sim: Any,
    entity: Any,
    chunk: Any,
    store: Any,
    params: Any,
    out: Any,
    block_query: Any,
    block_end: Any,
) -> int:
    """Queries ``part[0]:part[1]``; block texts into ``out``; returns the blocks."""
    table, s_entity, s_chunk, address, length = store
    top_k, min_sim, max_gap, max_blocks, max_chars, cap = params
    rows = np.empty(max(1, int(np.max(np.diff(bounds)))), dtype=np.int64)
    picked = np.empty(top_k, dtype=np.int64)
    text_row = np.empty(top_k, dtype=np.int64)
    scratch = np.empty(top_k * (int(length.max()) + 1) + 1, dtype=np.uint8)
    starts = np.empty(top_k + 1, dtype=np.int64)
    score = np.empty(top_k, dtype=np.float64)
    order = np.empty(top_k, dtype=np.int64)
    used_out, blocks = 0, 0
    for q in range(part[0], part[1]):
        lo, hi = bounds[q], bounds[q + 1]
        m = hi - lo
        for i in range(m):
            rows[i] = lo + i
        head = min(HEAD, m)
        for i in range(head, m):  # keep the best ``head`` at the front, ranked
            if sim[rows[i]] > sim[rows[head - 1]]:
                rows[head - 1], rows[i] = rows[i], rows[head - 1]
                _sort_rows(rows, head, sim, sim[:0])
        _sort_rows(rows, head, sim, sim[:0])
        n = 0
        i = 0
        while i < m and n < top_k:
            if i == head:  # the fallback: rank the whole query
                _sort_rows(rows, m, sim, sim[:0])
            r = rows[i]
            i += 1
            s = _find(table, s_entity, s_chunk, entity[r], chunk[r]) if len(table) else r
            repeated = False
            if s >= 0:
                mine = _bytes(address, length, s)
                for j in range(n):
                    p = picked[j]
                    same = entity[p] == entity[r] and sim[p] >= sim[r] and text_row[j] >= 0
                    if same and _contains(_bytes(address, length, text_row[j]), mine):
                        repeated = True
                        break
            if not repeated:
                picked[n], text_row[n] = r, s
                n += 1
        t = 0.6 * min_sim if n <= 1 else 1.2 * min_sim
        if 1 < n < top_k:
            t = min_sim * (0.6 + 0.6 * (n - 1) / (top_k - 1))
        kept = 0
        for j in range(n):
            if sim[picked[j]] >= t:
                picked[kept], text_row[kept] = picked[j], text_row[j]
                kept += 1
        if kept == 0 and n > 0:  # the first selected chunk alone
            kept = 1
        for j in range(kept):
            order[j] = j
        for a in range(1, kept):  # by (entity, chunk index)
            x = order[a]
            b = a
            while b > 0 and (
                entity[picked[order[b - 1]]] > entity[picked[x]]
                or (
                    entity[picked[order[b - 1]]] == entity[picked[x]]
                    and chunk[picked[order[b - 1]]] > chunk[picked[x]]
                )
            ):
                order[b] = order[b - 1]
                b -= 1
            order[b] = x
        nb_blocks, used = 0, 0
        for a in range(kept):
            r, s = picked[order[a]], text_row[order[a]]
            data = _bytes(address, length, s) if s >= 0 else scratch[:0]
            merge = a > 0 and entity[r] == entity[picked[order[a - 1]]]
            merge = merge and chunk[r] - chunk[picked[order[a - 1]]] <= max_gap
            cut = _overlap(scratch, starts[nb_blocks - 1], used, data) if merge else 0
            extra = len(data) - cut + (1 if cut == 0 else 0)
            if merge and used - starts[nb_blocks - 1] + extra <= cap:
                if cut == 0:
                    scratch[used] = 10
                    used += 1
                scratch[used : used + len(data) - cut] = data[cut:]
                used += len(data) - cut
                score[nb_blocks - 1] = max(score[nb_blocks - 1], sim[r])
            else:
                starts[nb_blocks] = used
                score[nb_blocks] = sim[r]
                nb_blocks += 1
                scratch[used : used + len(data)] = data
                used += len(data)
        starts[nb_blocks] = used
        for j in range(nb_blocks):
            order[j] = j
        _sort_rows(order, nb_blocks, score, score[:0])
        total = 0
        for j in range(min(nb_blocks, max_blocks)):
            b = order[j]
            size = starts[b + 1] - starts[b]
            if total + size > max_chars:
                if j > 0:
                    break
                size = max_chars
            out[used_out : used_out + size] = scratch[starts[b] : starts[b] + size]
            used_out += size
            total += size
            block_query[blocks], block_end[blocks] = q, used_out
            blocks += 1
    return blocks


def floor(results: pl.DataFrame, chunks: pl.DataFrame | None, config: Any) -> pl.DataFrame:
    """The floor's blocks (``query_id``, ``text``) for candidates grouped by query: their
    texts from the chunk store ``chunks``, or with ``chunks`` None from their own
    ``text`` column (inline)."""
    query = results["query_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]])
    bounds = np.append(starts, len(query))
    if chunks is None:  # inline: an empty table says "the candidate's own row"
        s_entity = s_chunk = table = np.empty(0, dtype=np.int64)
        address, length, alive = string_addresses(results["text"])
    else:
        s_entity = chunks["doc_id"].to_numpy()
        s_chunk = chunks["chunk_index"].to_numpy()
        address, length, alive = string_addresses(chunks["text"])
        table = _index(s_entity, s_chunk, 1 << (2 * len(s_entity) + 1).bit_length())
    store = (table, s_entity, s_chunk, address, length)
    params = (
        config.top_k,
        config.min_similarity,
        config.max_chunk_gap,
        config.max_blocks,
        config.max_characters,
        config.max_merged_block_characters,
    )
    sim = results["similarity"].to_numpy()
    entity, chunk = results["doc_id"].to_numpy(), results["chunk_index"].to_numpy()
    cut = [0, len(starts) // 2, len(starts)]

    def run(part: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        queries = part[1] - part[0]
        out = np.empty(queries * config.max_characters, dtype=np.uint8)
        block_query = np.empty(queries * config.max_blocks, dtype=np.int64)
        block_end = np.empty(queries * config.max_blocks, dtype=np.int64)
        args = (sim, entity, chunk, store, params, out, block_query, block_end)
        count = _floor(bounds, np.array(part), *args)
        return out, block_query[:count], block_end[:count]

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(run, itertools.pairwise(cut)))
    del alive
    texts = [consecutive_strings(out, np.r_[0, ends]) for out, _, ends in done]
    blocks = np.concatenate([q for _, q, _ in done])
    return pl.DataFrame({"query_id": query[starts[blocks]], "text": pl.concat(texts)})
