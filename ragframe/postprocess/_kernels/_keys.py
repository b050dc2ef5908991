"""The walk's entity keys as its kernel reads them (:mod:`._walk`): the values each row's
(entity, type) is compared by, a hash of each for its table, and which entities are
null. Python, run once per walk over whole columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe._arrow import string_addresses
from ragframe._kernels._compile import I64, Bools, frozen, int64s

WalkKeys = tuple[I64, I64, I64, bool, Bools, I64, I64]
"""What the walk compares entities by: number, string bytes' addresses and lengths,
whether any type is given, the types' validity, addresses and lengths."""


def nulls(column: pl.Series) -> Bools:
    """Whether each value of ``column`` is null (no pass over a column without any)."""
    if column.null_count():
        return column.is_null().to_numpy()
    return np.zeros(len(column), dtype=np.bool_)


MIXER = -7046029254386353131
"""An odd 64-bit multiplier, 2**64 over the golden ratio (``0x9E3779B97F4A7C15`` as an
int64), that mixes entity keys into hashes: the walk's own for integer entities
(:func:`~._walk._hash_of`) and :func:`key_hashes`' types."""
_MIX = np.int64(MIXER).view(np.uint64)


def key_hashes(entity: pl.Series, entity_type: pl.Series | None) -> I64:
    """A hash of each row's (entity, type) for the walk's table (any hash serves: the
    walk verifies keys, :func:`~._walk._same_key`): Polars' hashes, the type's mixed in; none
    for integer entities without types (the walk mixes the value itself,
    :func:`~._walk._hash_of`: Polars' struct hash took ~1.3 ms for 120k rows)."""
    if entity_type is None and entity.dtype.is_integer():
        return np.zeros(0, dtype=np.int64)
    with np.errstate(over="ignore"):
        h = entity.hash().to_numpy()
        if entity_type is not None:
            h = h ^ (entity_type.hash().to_numpy() * _MIX)
        mixed: I64 = (h ^ (h >> np.uint64(29))).view(np.int64)
        return mixed


def walk_keys(entity: pl.Series, entity_type: pl.Series | None) -> tuple[WalkKeys, list[Any]]:
    """What :func:`~._walk._same_key` compares: the entity (numbers or string bytes) and the
    type (validity and bytes; nothing when every type is null or there is none)."""
    none = np.zeros(0, dtype=np.int64)
    alive: list[Any] = []
    if entity.dtype == pl.String:
        number = none
        e_address, e_length, kept = string_addresses(entity)
        alive.append(kept)
    else:
        number = int64s(entity)
        e_address, e_length = none, none
    typed = entity_type is not None and entity_type.null_count() < len(entity_type)
    if entity_type is not None and typed:
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
