"""The candidate table of SPEC 1 from every query's hits: ``query_id``, the chunks' key
columns, ``similarity``, ``rank`` (1 = best), the chunks' offsets; and the queries that
got no row."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


class Hits(NamedTuple):
    """Every query's top chunks: query row, chunk row and score, query by query
    (ascending), best first (ties: the lower chunk row)."""

    query: I64
    chunk: I32
    score: F32 | F64


def ranks(query: I64) -> I64:
    """1, 2, ... within each run of equal ``query`` (grouped, ascending)."""
    if not query.size:
        return np.zeros(0, dtype=np.int64)
    starts = np.searchsorted(query, query, side="left")
    return np.arange(query.size, dtype=np.int64) - starts + 1


def candidates(
    hits: Hits, query_ids: pl.Series, keys: pl.DataFrame, schema: pl.Schema
) -> pl.DataFrame:
    """The output rows of ``hits`` (``keys``: the chunks' key columns, by chunk row)."""
    frame = keys[hits.chunk] if keys.width else pl.DataFrame()
    columns = {
        c.QUERY_ID: query_ids.gather(hits.query),
        **{name: frame[name] for name in keys.columns},
        c.SIMILARITY: hits.score.astype(np.float64),
        c.RANK: ranks(hits.query),
    }
    return pl.DataFrame(columns, schema=schema)


def unmatched_queries(retrieved: Any, queries: Any) -> pl.LazyFrame:
    """The queries of ``queries`` that have no row in ``retrieved`` (the output of
    :func:`ragframe.retrieve`): they matched no chunk (BM25: none of their terms is in
    any chunk, or they have none) or had no text or vector. Every column of
    ``queries``, in its order.

    Example:
        >>> import polars as pl
        >>> got = pl.DataFrame({"query_id": [1], "doc_id": [3]})
        >>> asked = pl.DataFrame({"query_id": [1, 2], "text": ["lift", "??"]})
        >>> unmatched_queries(got, asked).collect()["query_id"].to_list()
        [2]
    """
    found = c.to_lazy(retrieved, "retrieved").select(c.QUERY_ID).unique()
    asked = c.to_lazy(queries, "queries")
    c.require_columns(asked.collect_schema(), [c.QUERY_ID], "queries")
    return asked.join(found, on=c.QUERY_ID, how="anti", maintain_order="left")
