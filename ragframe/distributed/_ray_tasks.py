"""The Ray adapter's worker functions, Arrow batches in and out: reading Parquet pieces
with positions, the partition column, and one call of the partition contract per group
(all rows of one bucket: ``groupby(...).map_groups``). A group may carry the store rows
it needs beside its own (the joined store): both sides travel in one "envelope" schema,
a side marker telling them apart. Imports Ray only when called."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver import _parts as parts
from ragframe.driver._sources import PART, read_parquet

SIDE = c.TMP + "side"
"""0: the group's own rows (candidates, requests), 1: the store rows it needs."""
STORE = c.TMP + "s."
"""Prefix of the store's columns in the envelope."""


def resolve(value: Any) -> Any:
    """A broadcast value: fetched from the node's object store (zero copy for Arrow)."""
    import ray

    return ray.get(value) if isinstance(value, ray.ObjectRef) else value


def read_batch(batch: pa.Table, keyed: Callable[[pa.Table, int], pa.Table]) -> pa.Table:
    """The pieces named by ``batch`` (``path``, ``number``), each through ``keyed``
    (its rows' positions)."""
    got = []
    for path, number in zip(batch["path"].to_pylist(), batch["number"].to_pylist(), strict=True):
        got.append(keyed(read_parquet(path), number))
    return pa.concat_tables(got)


def envelope(batch: pa.Table, side: int, schema: pa.Schema) -> pa.Table:
    """``batch`` in the envelope ``schema`` (the other side's columns null)."""
    rows = parts.frame(batch)
    if side == 1:
        rows = rows.rename({n: STORE + n for n in rows.columns if n != PART})
    table = rows.with_columns(pl.lit(side, dtype=pl.Int8).alias(SIDE)).to_arrow()
    columns = [
        table[f.name] if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def envelope_schema(own: pa.Schema, store: pa.Schema) -> pa.Schema:
    """Both sides' columns (the store's prefixed), :data:`PART` once, and :data:`SIDE`."""
    fields = [*own, *(pa.field(STORE + f.name, f.type) for f in store if f.name != PART)]
    return pa.schema([*fields, pa.field(SIDE, pa.int8())])


def split(batch: pa.Table) -> tuple[pa.Table, pa.Table]:
    rows = parts.frame(batch)
    own = rows.filter(pl.col(SIDE) == 0).select(
        n for n in rows.columns if not n.startswith(STORE) and n != SIDE
    )
    store = rows.filter(pl.col(SIDE) == 1).select(n for n in rows.columns if n.startswith(STORE))
    return own.to_arrow(), store.rename(
        {n: n.removeprefix(STORE) for n in store.columns}
    ).to_arrow()


def numbered(table: pa.Table, number: int) -> pa.Table:
    """A partition's output with its number (:data:`PART`) on every row."""
    return table.append_column(PART, pa.array([number] * table.num_rows, pa.int64()))


def in_order(tables: list[pa.Table]) -> list[pa.Table]:
    """The :func:`numbered` outputs (blocks in whatever order Ray gives them) as one table
    per partition in partition order, the number gone: what the driver gathers is in
    the single-machine order where the partitions are (ranges of queries, positions)."""
    if not tables:
        return []
    rows = parts.frame(pa.concat_tables(tables, promote_options="default"))
    groups = rows.partition_by(PART, as_dict=True, maintain_order=True)
    return [groups[k].drop(PART).to_arrow() for k in sorted(groups)]
