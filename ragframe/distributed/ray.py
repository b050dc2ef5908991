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
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.distributed._gathered import evaluated, swept
from ragframe.distributed._inputs import config_of, evaluate_options, local_table, one_input
from ragframe.distributed._ray_engine import RayEngine
from ragframe.driver._run import run_written
from ragframe.evaluate import SweepResult
from ragframe.evaluate._runs import Ties
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid
from ragframe.fetch import FetchConfig
from ragframe.postprocess import PostprocessConfig

__all__ = ["evaluate", "fetch", "postprocess", "sweep"]


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
    return run_written(
        "postprocess",
        RayEngine(retries),
        candidates,
        {"config": cfg},
        store=chunks,
        broadcast=broadcast,
        partitions=partitions,
        output=output,
        collect=collect,
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
    cfg = config_of(config, FetchConfig)
    sized = None if sizes is None else local_table(sizes)
    return run_written(
        "fetch",
        RayEngine(retries),
        requests,
        {"config": cfg, "sizes": sized},
        store=documents,
        broadcast=broadcast,
        partitions=partitions,
        output=output,
        collect=collect,
    )


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
    source, is_blocks = one_input(candidates, blocks)
    options = evaluate_options(k, max_blocks, max_characters, max_tokens, ties)
    return evaluated(RayEngine(retries), qrels, source, is_blocks, chunks, partitions, options)


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
    return swept(
        RayEngine(retries),
        candidates,
        grid,
        qrels,
        chunks=chunks,
        baseline=baseline,
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=seed,
        partitions=partitions,
        broadcast=broadcast,
    )
