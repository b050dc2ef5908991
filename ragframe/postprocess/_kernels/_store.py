"""The chunk store's rows by key: for each candidate, the store row with its (entity,
chunk index), found in a hash table of the store's keys built per call (one compiled
pass over the store, one over the candidates). It replaces a Polars join: the text is
then read in place from the store's own column, and a candidate without a row is the
missing-text check, with no anti-join."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe._arrow import string_addresses
from ragframe._kernels._ahead import sample
from ragframe._kernels._buffers import text_at
from ragframe._kernels._compile import I64, Bools, compiled, frozen, int64s, internal, testable
from ragframe._kernels._parts import in_parts

Keys = tuple[I64, I64, I64, I64]
"""An (entity, chunk index) key per row: the entity as numbers, or (when those are
empty) as UTF-8 bytes at addresses with lengths; then the chunk index."""


@internal
def _mix(entity: int, chunk: int) -> int:
    """A hash >= 0 of an (entity number or string hash, chunk index) pair."""
    h = np.uint64(entity) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(chunk) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= h >> np.uint64(32)
    return int(np.int64(h >> np.uint64(1)))


@internal
def _string_hashes(address: I64, length: I64) -> I64:
    """FNV-1a of each string's UTF-8 bytes."""
    out = np.empty(len(length), dtype=np.int64)
    for row in range(len(length)):
        data = text_at(address, length, row)
        h = np.uint64(0xCBF29CE484222325)
        for i in range(len(data)):
            h = (h ^ np.uint64(data[i])) * np.uint64(0x100000001B3)
        out[row] = np.int64(h)
    return out


@internal
def _same_string(keys: Keys, i: int, other: Keys, j: int) -> bool:
    """Whether row ``i`` of ``keys`` and row ``j`` of ``other`` hold the same entity
    string (their hashes already agree)."""
    if keys[2][i] != other[2][j]:
        return False
    x, y = text_at(keys[1], keys[2], i), text_at(other[1], other[2], j)
    for k in range(len(x)):  # noqa: SIM110 -- compiled loop, no generator
        if x[k] != y[k]:
            return False
    return True


@compiled
def _table(store: Keys, stored: Bools, slots: int) -> tuple[I64, I64]:
    """The store rows (``stored``: it has a whole key) by key, the first row of a key
    winning: ``slots`` (a power of two, more than twice the rows) slots, each a store
    row, its entity (number or string hash) and chunk index, so a probe reads one
    slot; and the entities' string hashes (empty for numbers)."""
    mask = slots - 1
    numbers = len(store[0]) > 0
    hashes = store[0][:0] if numbers else _string_hashes(store[1], store[2])
    entity = store[0] if len(store[0]) else hashes
    table = np.full((slots, 3), -1, dtype=np.int64)
    for row in range(len(stored)):
        if not stored[row]:
            continue
        e, c = entity[row], store[3][row]
        slot = _mix(e, c) & mask
        while table[slot, 0] >= 0 and not (
            table[slot, 1] == e
            and table[slot, 2] == c
            and (numbers or _same_string(store, table[slot, 0], store, row))
        ):
            slot = (slot + 1) & mask
        if table[slot, 0] < 0:
            table[slot, 0], table[slot, 1], table[slot, 2] = row, e, c
    return table, hashes


@compiled
def _probe(
    table: I64, store: Keys, candidates: Keys, wanted: Bools, part: tuple[int, int], found: I64
) -> None:
    """For the candidates ``part[0]:part[1]`` (``wanted``: it has a whole key), the
    store row of :func:`_table` with their key, into ``found`` (else -1); string
    entities are compared byte for byte only where hash and chunk index agree."""
    mask = len(table) - 1
    lo, hi = part
    numbers = len(candidates[0]) > 0
    hashes = (
        candidates[0][:0] if numbers else _string_hashes(candidates[1][lo:hi], candidates[2][lo:hi])
    )
    for row in range(lo, hi):
        found[row] = -1
        if not wanted[row]:
            continue
        e, c = (candidates[0][row] if numbers else hashes[row - lo]), candidates[3][row]
        slot = _mix(e, c) & mask
        while table[slot, 0] >= 0:
            at = table[slot, 0]
            same = table[slot, 1] == e and table[slot, 2] == c
            if same and (numbers or _same_string(store, at, candidates, row)):
                found[row] = at
                break
            slot = (slot + 1) & mask


def _keys(entity: pl.Series, chunk: pl.Series) -> tuple[Keys, Bools, list[Any]]:
    """The :data:`Keys` of two columns, whether each row's key is whole (no null), and
    what owns the memory the addresses point into; as kernel inputs
    (:func:`~._compile.frozen`: one signature whatever the columns)."""
    if entity.null_count() or chunk.null_count():
        whole = frozen((entity.is_not_null() & chunk.is_not_null()).to_numpy(), np.bool_)
    else:  # the usual case: no mask to build
        whole = frozen(np.ones(len(entity), dtype=np.bool_), np.bool_)
    chunks = int64s(chunk)
    none = np.zeros(0, dtype=np.int64)
    alive: list[Any] = []
    if entity.dtype == pl.String:
        address, length, cells = string_addresses(entity)
        keys = (none, address, length, chunks)
        alive.append(cells)
    else:
        keys = (int64s(entity), none, none, chunks)
    e, a, n, k = (frozen(column, np.int64) for column in keys)
    return (e, a, n, k), whole, alive


DENSE_SPAN = 4
"""A store whose entities span at most this many times its rows (plus
:data:`DENSE_SLACK`) is indexed by entity directly when laid out as chunkers write it."""
DENSE_SLACK = 1024


def _runs_room(store: Keys, stored: Bools) -> I64 | None:
    """Zeros for :func:`_dense_runs` to fill, a row per entity number the store's span,
    where the store may be laid out as a chunker writes it: integer entities, no null,
    spanning few numbers (:data:`DENSE_SPAN`); else None."""
    entity = store[0]
    n = len(entity)
    if n == 0 or not stored.all():
        return None
    span = int(entity[-1]) - int(entity[0])
    if not 0 <= span <= DENSE_SPAN * n + DENSE_SLACK:
        return None
    return np.zeros((3, span + 1), dtype=np.int64)


@testable
def _dense_runs(entity: I64, chunk: I64, runs: I64) -> bool:
    """Per entity (a column of ``runs``: its offset from ``entity[0]``), its first row,
    first chunk index and row count (``runs``' three rows), in one pass, where the store
    is laid out as a chunker writes it: entities ascending, each one's chunk indexes
    consecutive from its first. False (``runs`` then meaningless) where it is not: an
    entity below the one before it or beyond ``runs``, or a chunk index that does not
    follow the one before it in the same entity."""
    low = entity[0]
    first, base, count = runs[0], runs[1], runs[2]
    for row in range(len(entity)):
        e, k = entity[row], chunk[row]
        if row > 0 and e == entity[row - 1]:
            if k != chunk[row - 1] + 1:
                return False
            count[e - low] += 1
        else:
            if (row > 0 and e < entity[row - 1]) or e - low >= len(first):
                return False
            first[e - low], base[e - low], count[e - low] = row, k, 1
    return True


@compiled
def _dense_probe(store: Keys, runs: I64, candidates: Keys, wanted: Bools, found: I64) -> int:
    """:func:`_probe` for a store laid out as chunkers write it (:func:`_dense_runs`
    fills ``runs``, :func:`_runs_room`'s zeros): a candidate's row is its entity's
    first row plus its chunk index's distance from the first one. How many candidates
    have none; -1 (``found`` then meaningless) where the store is not laid out so."""
    if not _dense_runs(store[0], store[3], runs):
        return -1
    low = store[0][0]
    first, base, count = runs[0], runs[1], runs[2]
    entity, chunk = candidates[0], candidates[3]
    lacking = 0
    for row in range(len(found)):
        at, out = entity[row] - low, -1
        if wanted[row] and 0 <= at < len(first):
            k = chunk[row] - base[at]
            if 0 <= k < count[at]:
                out = first[at] + k
        found[row] = out
        lacking += out < 0
    return lacking


def store_rows(
    entity: pl.Series, chunk: pl.Series, store_entity: pl.Series, store_chunk: pl.Series
) -> I64:
    """For each (``entity``, ``chunk``) row, the first row of the store's
    (``store_entity``, ``store_chunk``) with the same key, else -1 (a null part matches
    nothing). Entities are both integers or both strings. A store laid out as chunkers
    write it (:func:`_dense_runs`) is read by entity directly, on the calling thread
    (about 1 ms for 500k rows: less than starting the threads); any other through a
    hash table of its keys, on every CPU."""
    return store_rows_lacking(entity, chunk, store_entity, store_chunk)[0]


def store_rows_lacking(
    entity: pl.Series, chunk: pl.Series, store_entity: pl.Series, store_chunk: pl.Series
) -> tuple[I64, int]:
    """:func:`store_rows`, and how many rows have none (counted by the lookup)."""
    candidates, wanted, alive = _keys(entity, chunk)
    store, stored, kept = _keys(store_entity, store_chunk)
    room = _runs_room(store, stored)
    found = np.empty(len(wanted), dtype=np.int64)
    lacking = -1 if room is None else int(_dense_probe(store, room, candidates, wanted, found))
    if lacking < 0:
        built, _ = _table(store, stored, 1 << (2 * len(stored) + 1).bit_length())
        table = frozen(built, np.int64)

        def run(part: tuple[int, int]) -> None:
            _probe(table, store, candidates, wanted, part, found)

        in_parts(run, np.arange(len(wanted), dtype=np.int64), len(wanted))
        lacking = int(np.count_nonzero(found < 0))
    del alive, kept  # the buffers the addresses point into lived until here
    return found, lacking


@sample("_dense_probe")
def _sample_dense() -> None:
    """Compile the kernel ahead (:mod:`._ahead`): a store laid out as chunkers write it."""
    one = pl.Series([1])
    store_rows(one, one, one, one)


@sample("_table")
def _sample_table() -> None:
    """Compile the kernels ahead (:mod:`._ahead`): ``_table`` and ``_probe``, a store of
    string entities."""
    store_rows(pl.Series(["a"]), pl.Series([1]), pl.Series(["a"]), pl.Series([1]))


@sample("_probe")
def _sample_probe() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    _sample_table()
