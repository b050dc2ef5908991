"""Selection half of ``postprocess``: ranking, distinct top-K, adaptive threshold.

SPEC 1, rules 1-4, for every query at once. The walk "skip a candidate repeated by an
already-selected chunk, stop at top_k" is not sequential: containment and ``>=`` are
transitive, so a candidate is repeated exactly when *any* earlier-ranked candidate of
the same entity covers it. That is a self-join within (query, entity, type), limited to
the prefix of each query's ranking that the walk can reach before top_k chunks are
surely selected (a candidate with no earlier same-entity candidate of similarity >= its
own cannot be repeated, whatever the text says). Only that prefix needs text.
"""

from __future__ import annotations

import polars as pl

from ragframe import schema as c
from ragframe._text import normalize_expr
from ragframe.schema import TMP

ROW = f"{TMP}row"
SIM = f"{TMP}sim"
SCORE = f"{TMP}score"
POS = f"{TMP}pos"
NORM = f"{TMP}norm"
_RANK = f"{TMP}sel_rank"
_KEEP = f"{TMP}keep"
_SURE = f"{TMP}sure"
ENTITY_KEY = (c.QUERY_ID, c.ENTITY_ID, c.ENTITY_TYPE)


def signed_zero_free(expr: pl.Expr) -> pl.Expr:
    """``expr`` with -0.0 replaced by 0.0, so sorting ties them as the seed does."""
    return pl.when(expr == 0.0).then(0.0).otherwise(expr)


def _ranked(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Rule 1-2: ranking score, and each candidate's position in its query's order."""
    return (
        lf.with_row_index(ROW)
        .with_columns(pl.col(c.SIMILARITY).fill_null(0.0).alias(SIM))
        .with_columns(signed_zero_free(pl.coalesce(c.RERANK_SCORE, SIM)).alias(SCORE))
        .sort([c.QUERY_ID, SCORE, ROW], descending=[False, True, False])
        .with_columns(pl.int_range(pl.len()).over(c.QUERY_ID).alias(POS))
    )


def _reachable(ranked: pl.LazyFrame, top_k: int) -> pl.LazyFrame:
    """Drop candidates the walk cannot reach: top_k sure selections come before them."""
    covered = pl.col(SIM).cum_max().shift(1).over(ENTITY_KEY)
    sure = pl.col(c.ENTITY_ID).is_null() | covered.is_null() | (covered < pl.col(SIM))
    before = (pl.col(_SURE).cum_sum() - pl.col(_SURE)).over(c.QUERY_ID)
    return ranked.with_columns(sure.cast(pl.Int64).alias(_SURE)).filter(before < top_k).drop(_SURE)


def _repeated(reach: pl.LazyFrame) -> pl.LazyFrame:
    """Rule 3: (query, position) of every candidate covered by an earlier one."""
    cand = reach.filter(pl.col(c.ENTITY_ID).is_not_null() & (pl.col(NORM) != "")).select(
        *ENTITY_KEY, POS, SIM, NORM
    )
    padded = pl.concat_str(pl.lit(" "), pl.col(NORM), pl.lit(" "))
    padded_c = pl.concat_str(pl.lit(" "), pl.col(f"{NORM}_c"), pl.lit(" "))
    return (
        cand.join(cand, on=list(ENTITY_KEY), suffix="_c", nulls_equal=True)
        .filter(
            (pl.col(POS) < pl.col(f"{POS}_c"))
            & (pl.col(SIM) >= pl.col(f"{SIM}_c"))
            & padded.str.contains(padded_c, literal=True)
        )
        .select(c.QUERY_ID, pl.col(f"{POS}_c").alias(POS))
        .unique()
    )


def threshold_expr(selected: pl.Expr, top_k: int, min_similarity: float) -> pl.Expr:
    """Rule 4: the adaptive threshold, computed in the same order as the seed."""
    m = float(min_similarity)
    middle = pl.lit(m) * (0.6 + 0.6 * (selected - 1) / (top_k - 1)) if top_k > 1 else 0.0
    t = pl.when(selected <= 1).then(0.6 * m).when(selected >= top_k).then(1.2 * m)
    return t.otherwise(middle).clip(0.0, 1.0)


def kept_chunks(
    lf: pl.LazyFrame, top_k: int, min_similarity: float, store: pl.LazyFrame | None
) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with ``text`` and helper columns."""
    reach = _reachable(_ranked(lf), top_k)
    if store is not None:
        reach = reach.join(
            store, on=[c.ENTITY_ID, c.CHUNK_INDEX], how="left", maintain_order="left"
        ).with_columns(pl.col(c.TEXT).fill_null(""))
    reach = reach.with_columns(normalize_expr(pl.col(c.TEXT)).alias(NORM))
    selected = (
        reach.join(_repeated(reach), on=[c.QUERY_ID, POS], how="anti")
        .sort([c.QUERY_ID, POS])
        .with_columns(pl.int_range(1, pl.len() + 1).over(c.QUERY_ID).alias(_RANK))
        .filter(pl.col(_RANK) <= top_k)
    )
    n = pl.len().over(c.QUERY_ID)
    keep = pl.col(SIM) >= threshold_expr(n, top_k, min_similarity)
    fallback = ~pl.col(_KEEP).any().over(c.QUERY_ID) & (pl.col(_RANK) == 1)
    return (
        selected.with_columns(keep.alias(_KEEP)).filter(pl.col(_KEEP) | fallback).drop(_KEEP, _RANK)
    )
