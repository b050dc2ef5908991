"""ragframe on Dask (the ``ragframe[dask]`` extra: ``pip install "dask[dataframe]"
distributed``): :func:`postprocess`, :func:`fetch`, :func:`evaluate` and :func:`sweep`
over Dask frames or Parquet files, equal to the single-machine engine row for row.

Each input row gets its position (piece, row); the rows are shuffled by the bucket of
their query (:func:`ragframe.partition.bucket`; for fetch, of their document) with
``set_index`` on the bucket and the divisions ``0, 1, ..., n``, so partition ``i`` holds
every row of bucket ``i``: whole queries. Each partition is sorted back to input order
and given to the partition contract (:mod:`ragframe.partition`), the single-machine
code. The chunk store (documents, for fetch) is broadcast, one copy per worker, when it
holds at most :data:`~ragframe.distributed._inputs.BROADCAST_LIMIT` bytes, else joined
by key: the candidates' keys meet the store in a Dask hash join and each partition gets
only the store rows it needs. Tasks lost with a worker are run again (``retries``); a
part is a pure function of its partition, so nothing is lost or doubled.

Everything runs on the current ``distributed`` client (or ``client=``; without one, on
Dask's local scheduler).

Example (a local cluster of worker processes)::

    from distributed import Client, LocalCluster
    from ragframe.distributed import dask as rd

    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    blocks = rd.postprocess("results.parquet", chunks="chunks.parquet", collect=True)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.distributed._dask_engine import DaskEngine
from ragframe.distributed._gathered import evaluated, swept
from ragframe.distributed._inputs import config_of, evaluate_options, local_table, one_input
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
    client: Any = None,
    retries: int = 2,
) -> Any:
    """:func:`ragframe.postprocess` on Dask.

    Args:
        candidates: a Dask frame or Parquet files (a path, folder, glob or list).
        config: as for :func:`ragframe.postprocess`.
        chunks: the chunk store: a Polars frame, Arrow table, Parquet files or a Dask
            frame.
        output: a folder: write the blocks there as a Parquet dataset (one part per
            partition, each sorted by ``(query_id, block_rank)``), atomically.
        collect: return one Polars frame equal to ``ragframe.postprocess(...).collect()``.
        partitions: the number of partitions (default: from the row count).
        broadcast: broadcast the store (``True``), join it by key (``False``), or
            decide by its size (``None``).
        client: a ``distributed.Client`` (default: the current one).
        retries: how often a failed or lost task runs again.

    Returns:
        A Dask frame of blocks (lazy), the Polars frame (``collect``) or the dataset's
        path (``output``).
    """
    cfg = config_of(config, PostprocessConfig)
    return run_written(
        "postprocess",
        DaskEngine(client, retries),
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
    client: Any = None,
    retries: int = 2,
) -> Any:
    """:func:`ragframe.fetch` on Dask: the requests shuffled by document, each part in
    request order (a ``request_order`` column: the single-machine output position;
    ``collect`` sorts by it and drops it). Arguments as for :func:`postprocess`;
    ``documents`` is the store, ``sizes`` is broadcast."""
    cfg = config_of(config, FetchConfig)
    sized = None if sizes is None else local_table(sizes)
    return run_written(
        "fetch",
        DaskEngine(client, retries),
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
    client: Any = None,
    retries: int = 2,
) -> pl.DataFrame:
    """:func:`ragframe.evaluate` on Dask, collected: one row per query (a small table,
    gathered on the driver), equal to ``ragframe.evaluate(...).collect()``. Takes
    ``candidates`` or ``blocks`` (Dask frames or Parquet files), one of them; ``qrels``
    and the chunk store's offsets are broadcast."""
    source, is_blocks = one_input(candidates, blocks)
    return evaluated(
        DaskEngine(client, retries),
        qrels,
        source,
        is_blocks,
        chunks,
        partitions,
        evaluate_options(k, max_blocks, max_characters, max_tokens, ties),
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
    client: Any = None,
    retries: int = 2,
) -> SweepResult:
    """:func:`ragframe.sweep` on Dask: each partition's per-(configuration, query) rows
    (:func:`ragframe.partition.sweep_part`), the summary computed on the driver from all
    of them by the single-machine code; equal to ``ragframe.sweep(...)``."""
    return swept(
        DaskEngine(client, retries),
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
