"""ragframe on Ray Data (the ``ragframe[ray]`` extra: ``pip install "ray[data]"``):
:func:`postprocess`, :func:`fetch`, :func:`chunk`, :func:`evaluate` and :func:`sweep`
over Ray datasets or Parquet files, equal to the single-machine engine row for row.

Each input row gets its position; the rows get the bucket of their query
(:func:`ragframe.partition.bucket`; for fetch, of their document) and are grouped by it
with ``groupby(bucket).map_groups(...)``, Ray's documented guarantee that one call sees
every row of a group: whole queries, a few million rows per call (never one call per
query: that is hundreds of times slower). Each group is sorted back to input order and
given to the partition contract (:mod:`ragframe.partition`), the single-machine code.
The store is broadcast (``ray.put``: one copy per node, read in place) when it holds at
most :data:`~ragframe.driver._sources.BROADCAST_LIMIT` bytes, else joined by key
(``Dataset.join``, a hash join) and the rows each group needs travel in the group's
batch. Ray runs a task lost with its worker again (``retries``); a part is a pure
function of its group, so nothing is lost or doubled.

Runs on the connected Ray cluster (``ray.init(address=...)`` first), else starts a
local one.
"""

from __future__ import annotations

from ragframe.distributed._public import CHUNK, EVALUATE, FETCH, POSTPROCESS, SWEEP
from ragframe.distributed._ray_engine import RayEngine

__all__ = ["chunk", "evaluate", "fetch", "postprocess", "sweep"]


def _engine(*, retries: int = 3) -> RayEngine:
    """The engine a call runs on (its keyword-only parameters end every function's)."""
    return RayEngine(retries)


postprocess = POSTPROCESS.on(
    _engine,
    """:func:`ragframe.postprocess` on Ray; arguments as in
    :func:`ragframe.distributed.dask.postprocess` (``candidates``: a Ray dataset or
    Parquet files). Returns a Ray dataset of blocks (lazy; each block one bucket's,
    sorted by ``(query_id, block_rank)``), the Polars frame (``collect``) or the
    written dataset's path (``output``).""",
)
fetch = FETCH.on(
    _engine,
    """:func:`ragframe.fetch` on Ray, the requests grouped by document bucket, each
    part in request order (``request_order``, the single-machine output position;
    ``collect`` sorts by it and drops it). Arguments as for :func:`postprocess`.""",
)
evaluate = EVALUATE.on(
    _engine,
    """:func:`ragframe.evaluate` on Ray, collected (see
    :func:`ragframe.distributed.dask.evaluate`).""",
)
sweep = SWEEP.on(
    _engine,
    """:func:`ragframe.sweep` on Ray (see :func:`ragframe.distributed.dask.sweep`).""",
)
chunk = CHUNK.on(
    _engine,
    """:func:`ragframe.chunk` on Ray: partitions of consecutive documents, in order (see
    :func:`ragframe.distributed.dask.chunk`); ``documents``: a Ray dataset, Parquet
    files or a Polars/Arrow frame. Returns a Ray dataset of chunks (lazy), the Polars
    frame (``collect``) or the written dataset's path (``output``).""",
)
