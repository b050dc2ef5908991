"""ragframe on Dask (the ``ragframe[dask]`` extra: ``pip install "dask[dataframe]"
distributed``): :func:`postprocess`, :func:`fetch`, :func:`chunk`, :func:`evaluate` and
:func:`sweep` over Dask frames or Parquet files, equal to the single-machine engine row for row.

Each input row gets its position (piece, row); the rows are shuffled by the bucket of
their query (:func:`ragframe.partition.bucket`; for fetch, of their document) with
``set_index`` on the bucket and the divisions ``0, 1, ..., n``, so partition ``i`` holds
every row of bucket ``i``: whole queries. Each partition is sorted back to input order
and given to the partition contract (:mod:`ragframe.partition`), the single-machine
code. The chunk store (documents, for fetch) is broadcast, one copy per worker, when it
holds at most :data:`~ragframe.driver._sources.BROADCAST_LIMIT` bytes, else joined
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

from typing import Any

from ragframe.distributed._dask_engine import DaskEngine
from ragframe.distributed._public import CHUNK, EVALUATE, FETCH, POSTPROCESS, SWEEP

__all__ = ["chunk", "evaluate", "fetch", "postprocess", "sweep"]


def _engine(*, client: Any = None, retries: int = 2) -> DaskEngine:
    """The engine a call runs on (its keyword-only parameters end every function's)."""
    return DaskEngine(client, retries)


postprocess = POSTPROCESS.on(
    _engine,
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
    """,
)
fetch = FETCH.on(
    _engine,
    """:func:`ragframe.fetch` on Dask: the requests shuffled by document, each part in
    request order (a ``request_order`` column: the single-machine output position;
    ``collect`` sorts by it and drops it). Arguments as for :func:`postprocess`;
    ``documents`` is the store, ``sizes`` is broadcast.""",
)
evaluate = EVALUATE.on(
    _engine,
    """:func:`ragframe.evaluate` on Dask, collected: one row per query (a small table,
    gathered on the driver), equal to ``ragframe.evaluate(...).collect()``. Takes
    ``candidates`` or ``blocks`` (Dask frames or Parquet files), one of them; ``qrels``
    and the chunk store's offsets are broadcast.""",
)
sweep = SWEEP.on(
    _engine,
    """:func:`ragframe.sweep` on Dask: each partition's per-(configuration, query) rows
    (:func:`ragframe.partition.sweep_part`), the summary computed on the driver from all
    of them by the single-machine code; equal to ``ragframe.sweep(...)``.""",
)
chunk = CHUNK.on(
    _engine,
    """:func:`ragframe.chunk` on Dask: partitions of consecutive documents (ranges of
    input positions of about equal row counts, cut from the Parquet footers' row counts,
    else from a count of each piece's rows), so the parts, in order, hold the chunks in
    the single-machine order (documents in input order, chunks ascending) and
    ``collect`` equals ``ragframe.chunk(...).collect()``. ``documents``: a Dask frame,
    Parquet files or a Polars/Arrow frame; ``config``: a :class:`ragframe.WindowConfig` or
    its fields as a mapping; ``output``, ``collect``, ``partitions`` as for
    :func:`postprocess`. Returns a Dask frame of chunks (lazy), the Polars frame
    (``collect``) or the written dataset's path (``output``).""",
)
