"""The stages a driver runs, one entry each: the partition function (what runs on a
worker, :mod:`ragframe.driver._parts`: the partition contract of
:mod:`ragframe.partition`), what a partition holds whole, the stage's store and how a
store too large to broadcast reaches a partition. Adding a stage is one entry here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ragframe import schema as c
from ragframe.driver import _parts as parts


@dataclass(frozen=True)
class Stage:
    """One stage the driver runs."""

    name: str
    piece: Callable[..., pa.Table]
    """``piece(rows, store, **options)``: one partition's output."""
    key: str
    """What a partition holds whole: ``query_id`` (query ranges) or ``doc_id`` (a hash
    bucket of documents)."""
    joined: bool = True
    """A store not broadcast is joined by its key (chunks: ``(entity, chunk index)``);
    else bucketed by :attr:`key` like the rows (documents)."""
    consecutive: bool = False
    """Whether a partition holds consecutive whole documents, in input order (chunk),
    not a hash bucket of them."""
    ordered: bool = False
    """Whether each part is sorted by ``request_order`` (fetch), not by :attr:`key`."""
    prepare: Callable[[Any, Any], Any] | None = None
    """``prepare(engine, rows)``: the driver's step before partitioning (fetch's
    request order)."""
    gather: Callable[[list[pa.Table]], Any] | None = None
    """The outputs as one frame in the single-machine order (``collect=True``)."""


def _postprocess(rows: pa.Table, store: pa.Table | None, *, config: Any) -> pa.Table:
    return parts.postprocess_piece(rows, config, store)


def _fetch(
    rows: pa.Table, store: pa.Table | None, *, config: Any, sizes: pa.Table | None = None
) -> pa.Table:
    assert store is not None  # fetch always has its documents
    return parts.fetch_piece(rows, store, config, sizes)


def _evaluate(
    rows: pa.Table, store: pa.Table | None, *, qrels: Any, blocks: bool, options: Any
) -> pa.Table:
    return parts.evaluate_piece(rows, qrels, blocks, options, store)


def _sweep(
    rows: pa.Table, store: pa.Table | None, *, configs: Sequence[Any], qrels: Any
) -> pa.Table:
    return parts.sweep_piece(rows, configs, qrels, store)


def _chunk(rows: pa.Table, store: pa.Table | None, *, config: Any) -> pa.Table:
    from ragframe.window import chunk

    return chunk(parts.restored(rows), config).collect().to_arrow()


def _select(table: pa.Table, names: Sequence[str]) -> pa.Table:
    return table.select(list(names))


def request_order(engine: Any, rows: Any) -> Any:
    """Fetch's driver step: every request's ``request_order`` (its single-machine output
    position, :func:`ragframe.partition.fetch_order`) from the requests' ``query_id``
    (and ``rank``) in input order, looked up by position on the workers."""
    import polars as pl

    from ragframe.driver._sources import POS
    from ragframe.partition import fetch_order

    names = [n for n in (c.QUERY_ID, c.RANK) if n in rows.schema.names]
    keys = parts.frame(engine.gather(engine.then(rows, _select, names=[*names, POS]))).sort(POS)
    order = fetch_order(parts.restored(keys)).collect()[c.REQUEST_ORDER]  # not the gathers'
    lookup = keys.select(pl.col(POS)).with_columns(order).to_arrow()  # (they load evaluate)
    return engine.then(rows, parts.with_order, lookup=engine.share(lookup))


def _blocks(tables: list[pa.Table]) -> Any:
    from ragframe.driver._gather import blocks_table

    return blocks_table(tables)


def _fetched(tables: list[pa.Table]) -> Any:
    from ragframe.driver._gather import fetch_table

    return fetch_table(tables)


def _chunks(tables: list[pa.Table]) -> Any:
    """The chunk parts (partitions of consecutive documents, in order) as one frame."""
    import polars as pl

    return pl.concat([parts.frame(t) for t in tables], how="vertical")


STAGES: dict[str, Stage] = {
    "postprocess": Stage("postprocess", _postprocess, c.QUERY_ID, gather=_blocks),
    "fetch": Stage(
        "fetch",
        _fetch,
        c.DOC_ID,
        joined=False,
        ordered=True,
        prepare=request_order,
        gather=_fetched,
    ),
    "chunk": Stage("chunk", _chunk, c.DOC_ID, consecutive=True, gather=_chunks),
    "evaluate": Stage("evaluate", _evaluate, c.QUERY_ID),
    "sweep": Stage("sweep", _sweep, c.QUERY_ID),
}
"""Every stage the driver runs."""
