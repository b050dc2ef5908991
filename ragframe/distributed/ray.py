"""ragframe on Ray Data (the ``ragframe[ray]`` extra: ``pip install "ray[data]"``):
:func:`postprocess`, :func:`fetch`, :func:`evaluate` and :func:`sweep` over Ray
datasets or Parquet files, equal to the single-machine engine row for row.

Each input row gets its position; the rows get the bucket of their query
(:func:`ragframe.partition.bucket`; for fetch, of their document) and are grouped by it
with ``groupby(bucket).map_groups(...)``, Ray's documented guarantee that one call sees
every row of a group: whole queries, a few million rows per call (never one call per
query: that is hundreds of times slower). Each group is sorted back to input order and
given to the partition contract (:mod:`ragframe.partition`), the single-machine code.
The store is broadcast (``ray.put``: one copy per node, read in place) when it holds at
most :data:`~ragframe.distributed._inputs.BROADCAST_LIMIT` bytes, else joined by key
(``Dataset.join``, a hash join) and the rows each group needs travel in the group's
batch. Ray runs a task lost with its worker again (``retries``); a part is a pure
function of its group, so nothing is lost or doubled.

Runs on the connected Ray cluster (``ray.init(address=...)`` first), else starts a
local one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.distributed import _gather
from ragframe.distributed import _parts as parts
from ragframe.distributed import _ray_tasks as rt
from ragframe.distributed._inputs import (
    POS,
    config_of,
    evaluate_options,
    local_table,
    offsets_of,
    one_input,
    partition_count,
)
from ragframe.distributed._ray_run import (
    candidates_by_query,
    chunk_side,
    data_of,
    grouped,
    ray_module,
    run,
    store_arg,
    tables,
    with_part,
    workers,
)
from ragframe.evaluate import SweepResult
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._runs import Ties
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid, chosen, configurations
from ragframe.fetch import FetchConfig
from ragframe.postprocess import PostprocessConfig

__all__ = ["evaluate", "fetch", "postprocess", "sweep"]
Step = Callable[[pa.Table], pa.Table]


def postprocess(
    candidates: Any,
    config: PostprocessConfig | Mapping[str, Any] | None = None,
    *,
    chunks: Any = None,
    output: str | os.PathLike[str] | None = None,
    collect: bool = False,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> Any:
    """:func:`ragframe.postprocess` on Ray; arguments as in
    :func:`ragframe.distributed.dask.postprocess` (``candidates``: a Ray dataset or
    Parquet files). Returns a Ray dataset of blocks (lazy; each block one bucket's,
    sorted by ``(query_id, block_rank)``), the Polars frame (``collect``) or the
    written dataset's path (``output``)."""
    cfg = config_of(config, PostprocessConfig)
    keyed, n = candidates_by_query(candidates, partitions)
    shared, side, empty_store = chunk_side(chunks, keyed, n, broadcast)
    parts.postprocess_piece(keyed.empty(), cfg, empty_store)  # bad input fails here
    return run(
        keyed,
        side,
        output,
        collect,
        "postprocess",
        retries,
        work=parts.postprocess_piece,
        store_name="chunks",
        store=shared,
        config=cfg,
    )


def fetch(
    requests: Any,
    documents: Any,
    config: FetchConfig | Mapping[str, Any] | None = None,
    *,
    sizes: Any = None,
    output: str | os.PathLike[str] | None = None,
    collect: bool = False,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> Any:
    """:func:`ragframe.fetch` on Ray, the requests grouped by document bucket, each
    part in request order (``request_order``, the single-machine output position;
    ``collect`` sorts by it and drops it). Arguments as for :func:`postprocess`."""
    ray = ray_module()
    cfg = config_of(config, FetchConfig)
    data = data_of(requests)
    names = [n for n in (c.QUERY_ID, c.RANK) if n in data.schema.names]
    keys = _gather.concat(tables(data.ds.select_columns([*names, POS]))).sort(POS)
    order = _gather.request_order(keys)
    lookup = keys.select(POS).with_columns(order).to_arrow()
    shared_lookup = ray.put(lookup)

    def ordered(batch: pa.Table) -> pa.Table:
        return rt.with_order(batch, shared_lookup)

    count = data.rows if data.rows is not None else keys.height
    n = partitions or partition_count(count, 1, workers())
    keyed = with_part(data.then(ordered), n, c.DOC_ID)
    shared, empty_docs = store_arg(documents, broadcast)
    side = None
    if shared is None:
        side = with_part(data_of(documents, _same), n, c.DOC_ID)
        empty_docs = parts.restored(side.empty()).to_arrow()
    sized = None if sizes is None else local_table(sizes)
    parts.fetch_piece(keyed.empty(), empty_docs, cfg, sized)  # bad input fails here
    return run(
        keyed,
        side,
        output,
        collect,
        "fetch",
        retries,
        work=parts.fetch_piece,
        store_name="documents",
        store=shared,
        config=cfg,
        sizes=None if sized is None else ray.put(sized),
    )


def _same(table: pa.Table) -> pa.Table:
    return table


def evaluate(
    qrels: Any,
    *,
    candidates: Any = None,
    blocks: Any = None,
    k: int | Sequence[int] = (10,),
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: Any = None,
    max_tokens: int | None = None,
    ties: Ties = "input",
    partitions: int | None = None,
    retries: int = 3,
) -> pl.DataFrame:
    """:func:`ragframe.evaluate` on Ray, collected (see
    :func:`ragframe.distributed.dask.evaluate`)."""
    ray = ray_module()
    source, is_blocks = one_input(candidates, blocks)
    judged = judgements(qrels)
    keyed, _ = candidates_by_query(source, partitions)
    options = evaluate_options(k, max_blocks, max_characters, max_tokens, ties)
    offsets = offsets_of(chunks)
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    parts.evaluate_piece(keyed.empty(), judged, is_blocks, options, empty_offsets)
    ds = grouped(
        keyed,
        None,
        retries,
        work=parts.evaluate_piece,
        store_name="chunks",
        store=None if offsets is None else ray.put(offsets),
        qrels=ray.put(judged),
        blocks=is_blocks,
        options=options,
    )
    return _gather.evaluate_table(
        tables(ds),
        judged,
        keyed.schema,
        blocks=is_blocks,
        options={**options, "chunks": empty_offsets},
    )


def sweep(
    candidates: Any,
    grid: Grid,
    qrels: Any,
    *,
    chunks: Any = None,
    baseline: int | PostprocessConfig | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> SweepResult:
    """:func:`ragframe.sweep` on Ray (see :func:`ragframe.distributed.dask.sweep`)."""
    ray = ray_module()
    configs, _ = configurations(grid)
    metric, cost, metrics = chosen(configs, metric, cost, metrics)
    judged = judgements(qrels)
    keyed, n = candidates_by_query(candidates, partitions)
    shared, side, empty_store = chunk_side(chunks, keyed, n, broadcast)
    ds = grouped(
        keyed,
        side,
        retries,
        work=parts.sweep_piece,
        store_name="chunks",
        store=shared,
        configs=configs,
        qrels=ray.put(judged),
    )
    store_schema = None if empty_store is None else parts.restored(empty_store).to_arrow().schema
    return _gather.sweep_table(
        tables(ds),
        configs,
        judged,
        keyed.schema,
        chunks=store_schema,
        baseline=baseline,
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=seed,
    )
