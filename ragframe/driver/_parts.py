"""What runs on a worker, Arrow in and Arrow out, for any engine: the partition
contract (:mod:`ragframe.partition`) after the input order is restored, and the small
steps around the shuffle (the partition column, the chunk store's join keys)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver._sources import CHUNK, ENTITY, PART, POS, STORE_POS, TEMPORARY
from ragframe.partition import (
    bucket,
    evaluate_part,
    fetch_part,
    postprocess_part,
    sweep_part,
)

if TYPE_CHECKING:  # annotations only: a fetch or chunk run loads no postprocess
    from ragframe.fetch import FetchConfig
    from ragframe.postprocess import PostprocessConfig


def frame(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """An Arrow table as a Polars frame (zero copy where Arrow allows)."""
    if isinstance(table, pl.DataFrame):
        return table
    out = pl.from_arrow(table)
    assert isinstance(out, pl.DataFrame)
    return out


def restored(table: pa.Table | pl.DataFrame) -> pl.DataFrame:
    """A partition in input order (by :data:`POS`, else by :data:`STORE_POS`), without
    the temporary columns: what the single-machine engine would have seen of it."""
    rows = frame(table)
    by = [n for n in (POS, STORE_POS) if n in rows.columns][:1]
    if by:
        rows = rows.sort(by)
    return rows.drop([n for n in TEMPORARY if n in rows.columns])


def with_part(table: pa.Table, partitions: int, on: str) -> pa.Table:
    """``table`` with :data:`PART`, the bucket of its ``on`` column (``doc_id`` stands
    for a missing ``entity_id`` and the reverse)."""
    rows = frame(table)
    column = on if on in rows.columns else _alias(on)
    return rows.with_columns(bucket(partitions, column).alias(PART)).to_arrow()


def _alias(name: str) -> str:
    return {c.ENTITY_ID: c.DOC_ID, c.DOC_ID: c.ENTITY_ID}.get(name, name)


def _entity(names: Sequence[str]) -> str:
    return c.ENTITY_ID if c.ENTITY_ID in names else c.DOC_ID


def store_keys(candidates: pa.Table) -> pa.Table:
    """The distinct ``(partition, entity, chunk index)`` the candidates look up in the
    chunk store (a null chunk index means 0; a null entity finds nothing)."""
    rows = frame(candidates)
    entity = pl.col(_entity(rows.columns))
    keys = rows.select(
        pl.col(PART),
        _key_type(entity, rows.schema[_entity(rows.columns)]).alias(ENTITY),
        pl.col(c.CHUNK_INDEX).cast(pl.Int64).fill_null(0).alias(CHUNK),
    )
    return keys.drop_nulls(ENTITY).unique().to_arrow()


def keyed_store(store: pa.Table, number: int) -> pa.Table:
    """Piece ``number`` of the chunk store with :data:`STORE_POS` and its join key."""
    return store_key(store_positioned(store, number))


def store_key(store: pa.Table) -> pa.Table:
    """The chunk store with its join key (entity, chunk index) as the candidates have it."""
    rows = frame(store)
    entity = _entity(rows.columns)
    return rows.with_columns(
        _key_type(pl.col(entity), rows.schema[entity]).alias(ENTITY),
        pl.col(c.CHUNK_INDEX).cast(pl.Int64).alias(CHUNK),
    ).to_arrow()


def store_positioned(store: pa.Table, number: int) -> pa.Table:
    """Piece ``number`` of a document store with :data:`STORE_POS` (its order kept)."""
    index = pl.int_range(pl.len(), dtype=pl.Int64) + (number << 32)
    return frame(store).with_columns(index.alias(STORE_POS)).to_arrow()


def with_order(requests: pa.Table, lookup: pa.Table) -> pa.Table:
    """The requests with ``request_order``, looked up by :data:`POS` in ``lookup`` (every
    request's position, sorted, and its order) by binary search."""
    rows, table = frame(requests), frame(lookup)
    at = table[POS].search_sorted(rows[POS], side="left")
    order = table[c.REQUEST_ORDER].cast(pl.UInt32).gather(at) if rows.height else None
    column = order if order is not None else pl.Series(c.REQUEST_ORDER, [], pl.UInt32)
    return rows.with_columns(column.alias(c.REQUEST_ORDER)).to_arrow()


def _key_type(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    return expr.cast(pl.String if dtype == pl.String else pl.Int64)


def _store(store: pa.Table | None) -> pl.DataFrame | None:
    """A broadcast store as it is; a joined one's rows once each, in store order (a
    store row several input pieces asked for arrives once per piece)."""
    if store is None:
        return None
    rows = frame(store)
    if STORE_POS in rows.columns:
        rows = rows.unique(STORE_POS, keep="first")
    return restored(rows)


def postprocess_piece(
    candidates: pa.Table, config: PostprocessConfig, chunks: pa.Table | None = None
) -> pa.Table:
    """:func:`ragframe.partition.postprocess_part` of a partition (the chunk store
    broadcast whole, or the partition's rows of it)."""
    return postprocess_part(restored(candidates), config, chunks=_store(chunks))


def fetch_piece(
    requests: pa.Table,
    documents: pa.Table,
    config: FetchConfig,
    sizes: pa.Table | None = None,
) -> pa.Table:
    """:func:`ragframe.partition.fetch_part` of a partition of whole documents' requests
    (:data:`ragframe.partition.ORDER` rides along), sorted by that order."""
    sized = None if sizes is None else frame(sizes)
    out = fetch_part(restored(requests), _store(documents), config, sizes=sized)
    return frame(out).sort(c.REQUEST_ORDER).to_arrow()


def evaluate_piece(
    table: pa.Table,
    qrels: pl.DataFrame,
    blocks: bool,
    options: Mapping[str, Any],
    chunks: pa.Table | None = None,
) -> pa.Table:
    """:func:`ragframe.partition.evaluate_part` of a partition of whole queries (the
    chunk store's offsets broadcast)."""
    rows = restored(table)
    given: dict[str, Any] = {"blocks": rows} if blocks else {"candidates": rows}
    return evaluate_part(qrels, **given, chunks=_store(chunks), **options)


def sweep_piece(
    candidates: pa.Table,
    configs: Sequence[PostprocessConfig],
    qrels: pl.DataFrame,
    chunks: pa.Table | None = None,
) -> pa.Table:
    """:func:`ragframe.partition.sweep_part` of a partition of whole queries."""
    return sweep_part(restored(candidates), list(configs), qrels, chunks=_store(chunks))
