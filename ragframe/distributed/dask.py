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

Example:
    >>> import polars as pl
    >>> from ragframe.distributed import dask as rd
    >>> rows = pl.DataFrame({"query_id": [1, 2], "entity_id": [7, 8],
    ...     "chunk_index": [0, 0], "text": ["a", "b"], "similarity": [0.9, 0.8]})
    >>> import dask.dataframe as dd
    >>> frame = dd.from_pandas(rows.to_pandas(), npartitions=2)
    >>> rd.postprocess(frame, collect=True)["text"].to_list()  # doctest: +SKIP
    ['a', 'b']
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.distributed import _dask_tasks as t
from ragframe.distributed import _gather, _output
from ragframe.distributed import _parts as parts
from ragframe.distributed._inputs import (
    POS,
    broadcast_store,
    local_table,
    offsets_of,
    one_input,
    partition_count,
    require,
)
from ragframe.errors import ConfigError
from ragframe.evaluate import SweepResult
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid, configurations
from ragframe.fetch import FetchConfig
from ragframe.postprocess import PostprocessConfig

__all__ = ["evaluate", "fetch", "postprocess", "sweep"]


class _Run:
    """The client (or none: Dask's local scheduler), its workers and the retries."""

    def __init__(self, client: Any, retries: int) -> None:
        require("distributed", "dask")
        from distributed import get_client

        if client is None:
            try:
                client = get_client()
            except ValueError:
                client = None
        self.client, self.retries = client, retries
        found = len(client.scheduler_info()["workers"]) if client is not None else 0
        self.workers = found or os.cpu_count() or 1

    def share(self, value: Any) -> Any:
        """``value`` as one task of the graph: sent to the scheduler once, copied to each
        worker that needs it once, and, unlike scattered data, made again from the graph
        if the workers holding it are lost."""
        if value is None:
            return None
        dask = _dask()

        return dask.delayed(value, pure=True)

    def compute(self, objects: Sequence[Any]) -> list[Any]:
        """Compute the delayed ``objects`` (lost tasks run again, ``retries`` times)."""
        if self.client is None:
            dask = _dask()

            return list(dask.compute(*objects))
        with warnings.catch_warnings():  # a broadcast store is in the graph on purpose
            warnings.filterwarnings("ignore", "Sending large graph", UserWarning)
            futures = self.client.compute(list(objects), retries=self.retries)
        return list(self.client.gather(futures))


def _dask() -> Any:
    return require("dask", "dask")


def _delayed(function: Any) -> Any:
    dask = _dask()

    return dask.delayed(t.task(function), pure=True)


def _store(run: _Run, store: Any, broadcast: bool | None) -> tuple[Any, pa.Table | None]:
    """The store to broadcast (shared, and an empty copy) or ``None`` (join by key)."""
    if store is None:
        return None, None
    if not broadcast_store(store, broadcast):
        return None, None
    table = local_table(store)
    return run.share(table), table.slice(0, 0)


def _finish(
    run: _Run, tables: list[Any], empty: pa.Table, output: Any, collect: bool, stage: str
) -> Any:
    """The parts as a Dask frame, as one Polars frame in the single-machine order
    (``collect``), or written to the Parquet dataset ``output`` (its path returned)."""
    dask = _dask()

    if collect:
        got = run.compute(tables)
        return _gather.fetch_table(got) if stage == "fetch" else _gather.blocks_table(got)
    if output is not None:
        target = _output.check_folder(output)
        temp = _output.temporary_folder(target)
        try:
            write = dask.delayed(_output.write_part, pure=True)
            run.compute([write(table, os.fspath(temp), i) for i, table in enumerate(tables)])
        except BaseException:
            _output.discard(temp)
            raise
        _output.publish(temp, target)
        return os.fspath(target)
    dd = t.dd()
    as_pandas = dask.delayed(t.pandas, pure=True)
    return dd.from_delayed([as_pandas(table) for table in tables], meta=t.pandas(empty))


def _config(config: Any, kind: type) -> Any:
    if isinstance(config, kind):
        return config
    if config is None or isinstance(config, Mapping):
        return kind(**(config or {}))
    raise ConfigError(f"expected a {kind.__name__} or a mapping, got {type(config).__name__}")


def _candidates(run: _Run, candidates: Any, partitions: int | None) -> tuple[Any, Any, int]:
    """The candidates keyed by query bucket, shuffled, and the partition count."""
    frame, rows = t.frame_of(candidates)
    n = partitions or partition_count(rows, frame.npartitions, run.workers)
    keyed = t.keyed(frame, n, c.QUERY_ID)
    return keyed, t.by_part(keyed, n), n


def _chunk_parts(run: _Run, chunks: Any, keyed: Any, n: int, broadcast: bool | None) -> Any:
    """Per partition, the chunk store argument: the shared store, its joined rows, or
    ``None``; and an empty store with its columns (to check the schema up front)."""
    shared, empty = _store(run, chunks, broadcast)
    if chunks is None or shared is not None:
        return [shared] * n, empty
    store, _ = t.frame_of(chunks, parts.keyed_store)
    joined = t.joined_store(keyed, store, n)
    return t.delayed_parts(joined), t.schema(joined).empty_table()


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
    cfg = _config(config, PostprocessConfig)
    run = _Run(client, retries)
    keyed, shuffled, n = _candidates(run, candidates, partitions)
    stores, empty_store = _chunk_parts(run, chunks, keyed, n, broadcast)
    empty = parts.postprocess_piece(t.schema(shuffled).empty_table(), cfg, empty_store)
    work = _delayed(parts.postprocess_piece)
    tables = [work(p, cfg, s) for p, s in zip(t.delayed_parts(shuffled), stores, strict=True)]
    return _finish(run, tables, empty, output, collect, "postprocess")


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
    cfg = _config(config, FetchConfig)
    run = _Run(client, retries)
    frame, rows = t.frame_of(requests)
    n = partitions or partition_count(rows, frame.npartitions, run.workers)
    ordered = _with_request_order(run, frame)
    keyed = t.keyed(ordered, n, c.DOC_ID)
    shuffled = t.by_part(keyed, n)
    shared, empty_docs = _store(run, documents, broadcast)
    docs: Sequence[Any] = [shared] * n
    if shared is None:
        store, _ = t.frame_of(documents, parts.store_positioned)
        docs_by_part = t.shuffled(store, n, c.DOC_ID)
        docs, empty_docs = t.delayed_parts(docs_by_part), t.schema(docs_by_part).empty_table()
    sized = None if sizes is None else local_table(sizes)
    empty = parts.fetch_piece(t.schema(shuffled).empty_table(), empty_docs, cfg, sized)
    work, shared_sizes = _delayed(parts.fetch_piece), run.share(sized)
    tables = [
        work(p, d, cfg, shared_sizes) for p, d in zip(t.delayed_parts(shuffled), docs, strict=True)
    ]
    return _finish(run, tables, empty, output, collect, "fetch")


def _with_request_order(run: _Run, frame: Any) -> Any:
    """The requests with ``request_order``, computed on the driver from their
    ``query_id`` (and ``rank``) in input order."""
    names = [n for n in (c.QUERY_ID, c.RANK) if n in frame.columns]
    (keys,) = run.compute([frame[[*names, POS]]])
    table = t.arrow(keys)
    order = _gather.request_order(parts.frame(table).sort(POS))
    positions = parts.frame(table).select(pl.col(POS).sort())
    lookup = positions.with_columns(order).to_arrow()
    meta = t.pandas(parts.with_order(t.schema(frame).empty_table(), lookup.slice(0, 0)))
    work, shared = _delayed(parts.with_order), run.share(lookup)
    pieces = [work(p, shared) for p in t.delayed_parts(frame)]
    return t.dd().from_delayed([_delayed(t.pandas)(p) for p in pieces], meta=meta)


def evaluate(
    qrels: Any,
    *,
    candidates: Any = None,
    blocks: Any = None,
    k: int | Sequence[int] = (10,),
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: Any = None,
    partitions: int | None = None,
    client: Any = None,
    retries: int = 2,
) -> pl.DataFrame:
    """:func:`ragframe.evaluate` on Dask, collected: one row per query (a small table,
    gathered on the driver), equal to ``ragframe.evaluate(...).collect()``. Takes
    ``candidates`` or ``blocks`` (Dask frames or Parquet files), one of them; ``qrels``
    and the chunk store's offsets are broadcast."""
    source, is_blocks = one_input(candidates, blocks)
    run = _Run(client, retries)
    judged = judgements(qrels)
    _, shuffled, _n = _candidates(run, source, partitions)
    options = {"k": k, "max_blocks": max_blocks, "max_characters": max_characters}
    offsets = offsets_of(chunks)
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    empty = t.schema(shuffled).empty_table()
    parts.evaluate_piece(empty, judged, is_blocks, options, empty_offsets)  # bad input fails here
    work, shared, store = _delayed(parts.evaluate_piece), run.share(judged), run.share(offsets)
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
    cost: str = c.CHARS_USED,
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
    run = _Run(client, retries)
    judged = judgements(qrels)
    keyed, shuffled, n = _candidates(run, candidates, partitions)
    stores, empty_store = _chunk_parts(run, chunks, keyed, n, broadcast)
    empty = t.schema(shuffled).empty_table()
    work, shared = _delayed(parts.sweep_piece), run.share(judged)
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
