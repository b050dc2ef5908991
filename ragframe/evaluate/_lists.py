"""List metrics on a document ranking (SPEC 4, "List metrics"), as trec_eval and ranx
compute them: nDCG@k (linear gains, log2 discount), recall@k, P@k, hit@k, MAP and MRR.

Per query, with R the number of relevant judged documents (gain > 0):
``precision@k`` = relevant in the first k / k; ``recall@k`` = relevant in the first k
/ R; ``hit@k`` = 1 if any relevant in the first k; ``ndcg@k`` = DCG@k / ideal DCG@k
with DCG = sum of gain / log2(rank + 1); ``map`` = sum over relevant retrieved of the
precision at its rank, / R; ``mrr`` = 1 / rank of the first relevant. A query without a
relevant document scores 0 everywhere (no division by zero).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ragframe import schema as c


def ideal_dcg(qrels: pl.LazyFrame) -> pl.LazyFrame:
    """Per (query, position), the ideal DCG up to that position: the query's relevant
    gains sorted descending. Columns ``query_id, position (1-based), ideal``."""
    relevant = qrels.filter(pl.col(c.GAIN) > 0).select(c.QUERY_ID, c.GAIN)
    ordered = relevant.sort([c.QUERY_ID, c.GAIN], descending=[False, True])
    discounted = pl.col(c.GAIN) / (pl.col(c.T_POSITION) + 1).cast(pl.Float64).log(2)
    return ordered.with_columns(_place_in_query().alias(c.T_POSITION)).with_columns(
        discounted.cum_sum().over(c.QUERY_ID).alias(c.T_BEST)
    )


def _place_in_query() -> pl.Expr:
    """A row's 1-based place in its query, for rows grouped by query: its row number
    less its query's first (runs of equal ids, no hashing as ``over`` would).

    The first row of each run is carried down by ``forward_fill``, not looked up by
    ``gather(rle_id())``: Polars' streaming engine (2.1) runs a gather by a column as a
    two-input node that, when its consumer finishes early (a join against an empty
    frame, as :func:`ragframe.partition.evaluate_part` does for a partition without
    queries), leaves its index input open, and the query panics
    (``pipe.send_state == PortState::Done``)."""
    query, row = pl.col(c.QUERY_ID), pl.int_range(pl.len(), dtype=pl.Int64)
    starts = query.ne_missing(query.shift()).fill_null(True)
    return row - pl.when(starts).then(row).forward_fill() + 1


def relevant_counts(qrels: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, n_relevant`` for every judged query (0 when none is relevant)."""
    return qrels.group_by(c.QUERY_ID).agg(
        (pl.col(c.GAIN) > 0).sum().cast(pl.Int64).alias(c.N_RELEVANT)
    )


def _ideals(ideal: pl.LazyFrame, ks: Sequence[int]) -> pl.LazyFrame:
    """``query_id`` and, per k, the ideal DCG at ``min(k, R)``: the largest at a position
    <= k (it only grows). Queries without a relevant document are not there."""
    position, best = pl.col(c.T_POSITION), pl.col(c.T_BEST)
    at = [pl.when(position <= k).then(best).max().alias(f"{c.T_BEST}{k}") for k in ks]
    return ideal.group_by(c.QUERY_ID).agg(at)


def relevant_documents(qrels: pl.DataFrame) -> pl.DataFrame:
    """``query_id, doc_id, gain`` of the relevant judged documents (gain > 0): all a
    ranking is looked up for."""
    return qrels.filter(pl.col(c.GAIN) > 0).select(c.QUERY_ID, c.DOC_ID, c.GAIN)


def list_metrics(found: pl.LazyFrame, qrels: pl.LazyFrame, ks: Sequence[int]) -> pl.LazyFrame:
    """The list metrics of every judged query, from the ranks of the relevant documents
    each retrieved (``found``: ``query_id, rank, gain, __rf_position`` as
    :func:`ragframe.evaluate._runs.relevant_ranks` gives them for
    :func:`relevant_documents`; ``qrels`` with gains). One row per query of ``qrels``;
    a query that retrieved no relevant document scores 0."""
    rank, gain = pl.col(c.RANK), pl.col(c.GAIN)
    rows = found.filter(rank.is_not_null())
    discount = (rank + 1).cast(pl.Float64).log(2)
    aggs = [
        (pl.col(c.T_POSITION) / rank).sum().alias(c.T_TOTAL),  # precision at each found
        rank.min().alias(c.T_RANK),
    ]
    for k in ks:
        top = rank <= k
        aggs.append(top.sum().cast(pl.Int64).alias(f"{c.T_COUNT}{k}"))
        aggs.append(pl.when(top).then(gain / discount).otherwise(0.0).sum().alias(f"{c.T_SIM}{k}"))
    per_query = rows.group_by(c.QUERY_ID).agg(aggs)
    counts = relevant_counts(qrels)
    table = counts.join(per_query, on=c.QUERY_ID, how="left")
    table = table.join(_ideals(ideal_dcg(qrels), ks), on=c.QUERY_ID, how="left")
    r = pl.col(c.N_RELEVANT)
    has = r > 0

    def share(value: pl.Expr, total: pl.Expr) -> pl.Expr:
        return pl.when(has & (total > 0)).then(value.fill_null(0) / total).otherwise(0.0)

    metrics = [
        share(pl.col(c.T_TOTAL), r.cast(pl.Float64)).alias(c.MAP),
        pl.when(pl.col(c.T_RANK).is_not_null())
        .then(1.0 / pl.col(c.T_RANK))
        .otherwise(0.0)
        .alias(c.MRR),
    ]
    for k in ks:
        hits = pl.col(f"{c.T_COUNT}{k}").fill_null(0)
        metrics += [
            share(pl.col(f"{c.T_SIM}{k}"), pl.col(f"{c.T_BEST}{k}")).alias(c.at_k("ndcg", k)),
            share(hits.cast(pl.Float64), r.cast(pl.Float64)).alias(c.at_k("recall", k)),
            (hits / k).cast(pl.Float64).alias(c.at_k("precision", k)),
            (hits > 0).cast(pl.Float64).alias(c.at_k("hit", k)),
        ]
    return table.select(c.QUERY_ID, c.N_RELEVANT, *metrics)
