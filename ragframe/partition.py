"""The partition contract: one stage over one partition of whole queries, as Arrow in and
Arrow out, by the same code path as the single-machine engine.

Every way of running ragframe on more data than one call holds -- the local dataset
runner, Dask, Ray -- cuts the input into partitions and calls these functions on each:

==========================  ===============================  ============================
function                    a partition holds                output of the partitions
==========================  ===============================  ============================
:func:`postprocess_part`    every candidate of its queries   concatenated, then sorted by
                                                             ``(query_id, block_rank)``,
                                                             equal the one big call
:func:`fetch_part`          any requests (each is            concatenated in the order of
                            independent); best every         :data:`ORDER` columns
                            request of its documents         (see :func:`fetch_order`)
:func:`evaluate_part`       every candidate/block of its     concatenated: one row per
                            queries; qrels may be all        query of the partition
:func:`sweep_part`          every candidate of its queries;  concatenated, sorted by
                            qrels may be all                 ``(config, query_id)``: the
                                                             sweep's ``per_query``; the
                                                             summary from all of them
==========================  ===============================  ============================

:func:`postprocess_blocks` is :func:`postprocess_part` as a Polars frame (the local
runner converts it to Arrow on its writer's thread, or writes it with Polars).

A partition never splits a query: :func:`bucket` names the partition of each query (a
hash of ``query_id``, the same on every process of one Polars version), and an engine
that shuffles or groups by it guarantees whole queries.

The text a partition needs comes from a :data:`TextSource`: a frame (a small store,
broadcast; or a lazy Parquet scan, read where the partition runs), or a callable that
receives the partition's rows and returns the store rows they need (a large store,
joined by key by the engine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.schema import Frame, to_lazy

if TYPE_CHECKING:
    from ragframe.evaluate._sweep import Grid
    from ragframe.fetch import FetchConfig
    from ragframe.postprocess import PostprocessConfig

# Each part function imports its own stage when called: a fetch run never loads
# postprocess (and its compiled kernels) or evaluate.

TextSource: TypeAlias = Frame | Callable[[pl.DataFrame], Frame]
"""Where a partition's text comes from: a frame, or ``rows -> the store rows they need``."""

ROWS_PER_PARTITION = 2_000_000
"""Candidate rows per partition, on every engine (the local dataset runs, Dask, Ray): a
partition is processed in one call, in memory (about 200 MiB per million rows)."""
ORDER = c.REQUEST_ORDER
"""The request's global position, which :func:`fetch_order` adds before partitioning (a
passthrough column, so the name is public)."""

__all__ = [
    "ORDER",
    "TextSource",
    "bucket",
    "evaluate_part",
    "fetch_order",
    "fetch_part",
    "postprocess_blocks",
    "postprocess_part",
    "sweep_part",
]


def bucket(partitions: int, column: str | pl.Expr = c.QUERY_ID) -> pl.Expr:
    """The partition (``0 .. partitions-1``) of each row, a hash of its query id:
    equal ids, equal partitions, so a partition holds whole queries.

    Example:
        >>> frame = pl.DataFrame({"query_id": [5, 6, 5]})
        >>> parts = frame.select(bucket(4)).to_series().to_list()
        >>> parts[0] == parts[2] and all(0 <= p < 4 for p in parts)
        True
    """
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ConfigError(f"partitions must be an integer >= 1, got {partitions!r}")
    expr = pl.col(column) if isinstance(column, str) else column
    return (expr.hash(seed=0) % partitions).cast(pl.UInt32).alias("partition")


def _rows(data: Frame) -> pl.DataFrame:
    frame = to_lazy(data, "partition")
    return frame.collect() if isinstance(frame, pl.LazyFrame) else frame


def _text(source: TextSource | None, rows: pl.DataFrame) -> Frame | None:
    if source is None or isinstance(source, (pl.DataFrame, pl.LazyFrame, pa.Table)):
        return source
    return source(rows)


def postprocess_part(
    candidates: Frame,
    config: PostprocessConfig | Mapping[str, Any] | None = None,
    *,
    chunks: TextSource | None = None,
) -> pa.Table:
    """:func:`ragframe.postprocess` of one partition holding every candidate of its
    queries, collected: the blocks of those queries, exactly as in one big call.

    Example:
        >>> rows = pl.DataFrame({"query_id": [1, 2], "entity_id": [7, 8],
        ...     "chunk_index": [0, 0], "text": ["a", "b"], "similarity": [0.9, 0.8]})
        >>> postprocess_part(rows).column("text").to_pylist()
        ['a', 'b']
    """
    return postprocess_blocks(candidates, config, chunks=chunks).to_arrow()


def postprocess_blocks(
    candidates: Frame,
    config: PostprocessConfig | Mapping[str, Any] | None = None,
    *,
    chunks: TextSource | None = None,
) -> pl.DataFrame:
    """:func:`postprocess_part` as a Polars frame, for a runner that writes it with
    Polars or converts it to Arrow where it writes (the local dataset runner: on its
    writer's thread, off the partitions' path).

    Example:
        >>> rows = pl.DataFrame({"query_id": [1, 2], "entity_id": [7, 8],
        ...     "chunk_index": [0, 0], "text": ["a", "b"], "similarity": [0.9, 0.8]})
        >>> postprocess_blocks(rows)["text"].to_list()
        ['a', 'b']
    """
    rows = _rows(candidates)
    from ragframe.postprocess import postprocess

    return postprocess(rows, config, chunks=_text(chunks, rows)).collect()


def fetch_order(requests: Frame) -> pl.LazyFrame:
    """The requests with :data:`ORDER`, their global output position (SPEC 2: queries
    in order of first appearance, then ``rank``, then row order), to add before the
    requests are partitioned; sort the concatenated parts by it and drop it.

    Example:
        >>> reqs = pl.DataFrame({"query_id": [1, 2, 1], "query": ["a"] * 3,
        ...     "doc_id": [4, 5, 6], "rank": [2, 1, 1]})
        >>> fetch_order(reqs).collect()[ORDER].to_list()
        [1, 2, 0]
    """
    lf = to_lazy(requests, "requests").with_row_index(ORDER)
    names = lf.collect_schema().names()
    first = pl.col(ORDER).min().over(c.QUERY_ID)
    rank = [pl.col(c.RANK)] if c.RANK in names else []
    keys = [first, *rank, pl.col(ORDER)]
    order = pl.int_range(pl.len(), dtype=pl.UInt32).sort_by(keys, nulls_last=True)
    return lf.with_columns(order.arg_sort().cast(pl.UInt32).alias(ORDER))  # the inverse


def fetch_part(
    requests: Frame,
    documents: TextSource,
    config: FetchConfig | Mapping[str, Any] | None = None,
    *,
    sizes: Frame | None = None,
) -> pa.Table:
    """:func:`ragframe.fetch` of one partition of requests, collected; an :data:`ORDER`
    column (from :func:`fetch_order`) rides along as a passthrough column.

    Example:
        >>> docs = pl.DataFrame({"doc_id": [1], "content": ["short"]})
        >>> reqs = pl.DataFrame({"query_id": [7], "query": ["x"], "doc_id": [1]})
        >>> fetch_part(reqs, docs).column("strategy").to_pylist()
        ['full']
    """
    rows = _rows(requests)
    docs = _text(documents, rows)
    if docs is None:
        raise ConfigError("fetch_part needs documents (a frame or a callable), got None")
    from ragframe.fetch import fetch

    return fetch(rows, docs, config, sizes=sizes).collect().to_arrow()


def evaluate_part(
    qrels: Any,
    *,
    candidates: Frame | None = None,
    blocks: Frame | None = None,
    k: int | Sequence[int] = (10,),
    **options: Any,
) -> pa.Table:
    """:func:`ragframe.evaluate` of one partition holding every candidate (or block) of
    its queries: one row per query **of the partition** (the qrels may hold every
    query; the others are left to the partitions that have them, or, for judged
    queries no partition has, to one call with empty inputs).

    Example:
        >>> qrels = pl.DataFrame({"query_id": [1, 2], "doc_id": [7, 8], "relevance": [1, 1]})
        >>> run = pl.DataFrame({"query_id": [1], "doc_id": [7], "similarity": [0.9]})
        >>> evaluate_part(qrels, candidates=run, k=1).column("query_id").to_pylist()
        [1]
    """
    cands, blks = (_rows(f) if f is not None else None for f in (candidates, blocks))
    given = [g for g in (cands, blks) if g is not None]
    if not given:
        raise ConfigError("evaluate_part needs candidates or blocks; got neither")
    queries = pl.concat([g.select(c.QUERY_ID) for g in given], how="vertical_relaxed").unique()
    from ragframe.evaluate import evaluate

    out = evaluate(qrels, candidates=cands, blocks=blks, k=k, **options)
    out = out.join(queries.lazy(), on=c.QUERY_ID, how="semi", maintain_order="left")
    return out.collect().to_arrow()


def sweep_part(
    candidates: Frame,
    grid: Grid,
    qrels: Any,
    *,
    chunks: TextSource | None = None,
) -> pa.Table:
    """The sweep's per-(configuration, query) rows (:attr:`ragframe.evaluate.SweepResult.
    per_query`) of one partition holding every candidate of its queries: those queries'
    rows only (judged queries no partition has are left, as in :func:`evaluate_part`, to
    one call with empty candidates). The summary needs every row:
    :func:`ragframe.evaluate._sweep.sweep_result` of the concatenated parts.

    Example:
        >>> qrels = pl.DataFrame({"query_id": [1, 2], "doc_id": [7, 8], "relevance": [1, 1]})
        >>> rows = pl.DataFrame({"query_id": [1, 1], "entity_id": [7, 3],
        ...     "chunk_index": [0, 0], "text": ["a", "b"], "similarity": [0.9, 0.8]})
        >>> out = pl.from_arrow(sweep_part(rows, {"max_blocks": [1, 2]}, qrels))
        >>> out.select("config", "query_id", "context_recall").rows()
        [(0, 1, 1.0), (1, 1, 1.0)]
    """
    rows = _rows(candidates)
    from ragframe.evaluate._qrels import judgements
    from ragframe.evaluate._sweep import configurations, sweep_rows

    configs, varied = configurations(grid)
    text = _text(chunks, rows)
    out = sweep_rows(rows, configs, varied, judgements(qrels), chunks=text)
    queries = rows.select(c.QUERY_ID).unique()
    return out.join(queries, on=c.QUERY_ID, how="semi", maintain_order="left").to_arrow()
