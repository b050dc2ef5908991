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
from ragframe.distributed import _dask_tasks as t
from ragframe.distributed import _gather
from ragframe.distributed import _parts as parts
from ragframe.distributed._dask_run import (
    Run,
    candidates_by_query,
    chunk_parts,
    delayed,
    finish,
    store_arg,
    with_request_order,
)
from ragframe.distributed._inputs import (
    config_of,
    evaluate_options,
    local_table,
    offsets_of,
    one_input,
    partition_count,
)
from ragframe.evaluate import SweepResult
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._runs import Ties
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid, chosen, configurations
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
    run = Run(client, retries)
    keyed, shuffled, n = candidates_by_query(run, candidates, partitions)
    stores, empty_store = chunk_parts(run, chunks, keyed, n, broadcast)
    empty = parts.postprocess_piece(t.schema(shuffled).empty_table(), cfg, empty_store)
    work = delayed(parts.postprocess_piece)
    tables = [work(p, cfg, s) for p, s in zip(t.delayed_parts(shuffled), stores, strict=True)]
    return finish(run, tables, empty, output, collect, "postprocess")


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
    run = Run(client, retries)
    frame, rows = t.frame_of(requests)
    n = partitions or partition_count(rows, frame.npartitions, run.workers)
    ordered = with_request_order(run, frame)
    keyed = t.keyed(ordered, n, c.DOC_ID)
    shuffled = t.by_part(keyed, n)
    shared, empty_docs = store_arg(run, documents, broadcast)
    docs: Sequence[Any] = [shared] * n
    if shared is None:
        store, _ = t.frame_of(documents, parts.store_positioned)
        docs_by_part = t.shuffled(store, n, c.DOC_ID)
        docs, empty_docs = t.delayed_parts(docs_by_part), t.schema(docs_by_part).empty_table()
    sized = None if sizes is None else local_table(sizes)
    empty = parts.fetch_piece(t.schema(shuffled).empty_table(), empty_docs, cfg, sized)
    work, shared_sizes = delayed(parts.fetch_piece), run.share(sized)
    tables = [
        work(p, d, cfg, shared_sizes) for p, d in zip(t.delayed_parts(shuffled), docs, strict=True)
    ]
    return finish(run, tables, empty, output, collect, "fetch")


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
    run = Run(client, retries)
    judged = judgements(qrels)
    _, shuffled, _n = candidates_by_query(run, source, partitions)
    options = evaluate_options(k, max_blocks, max_characters, max_tokens, ties)
    offsets = offsets_of(chunks)
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    empty = t.schema(shuffled).empty_table()
    parts.evaluate_piece(empty, judged, is_blocks, options, empty_offsets)  # bad input fails here
    work, shared, store = delayed(parts.evaluate_piece), run.share(judged), run.share(offsets)
    tables = run.compute(
        [work(p, shared, is_blocks, options, store) for p in t.delayed_parts(shuffled)]
    )
    return _gather.evaluate_table(
        tables, judged, empty.schema, blocks=is_blocks, options={**options, "chunks": empty_offsets}
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
    configs, _ = configurations(grid)
    metric, cost, metrics = chosen(configs, metric, cost, metrics)
    run = Run(client, retries)
    judged = judgements(qrels)
    keyed, shuffled, n = candidates_by_query(run, candidates, partitions)
    stores, empty_store = chunk_parts(run, chunks, keyed, n, broadcast)
    empty = t.schema(shuffled).empty_table()
    work, shared = delayed(parts.sweep_piece), run.share(judged)
    pieces = zip(t.delayed_parts(shuffled), stores, strict=True)
    tables = run.compute([work(p, configs, shared, s) for p, s in pieces])
    store_schema = None if empty_store is None else parts.restored(empty_store).to_arrow().schema
    return _gather.sweep_table(
        tables,
        configs,
        judged,
        empty.schema,
        chunks=store_schema,
        baseline=baseline,
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=seed,
    )
