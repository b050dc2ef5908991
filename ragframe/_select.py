"""Selection half of ``postprocess``: ranking, distinct top-K, adaptive threshold.

SPEC 1, rules 1-4, for every query at once. The walk "skip a candidate repeated by an
already-selected chunk, stop at top_k" is not sequential: containment and ``>=`` are
transitive, so a candidate is repeated exactly when *any* earlier-ranked candidate of
the same entity covers it. That is a self-join within (query, entity, type), limited to
the prefix of each query's ranking that the walk can reach before top_k chunks are
surely selected (the first candidate of an entity cannot be a repeat, whatever the text
says). Only that prefix needs text.
"""

from __future__ import annotations

import polars as pl

from ragframe import schema as c
from ragframe._overlap import contains_expr
from ragframe._text import normalize_expr
from ragframe.schema import TMP

ROW = f"{TMP}row"
SIM = f"{TMP}sim"
SCORE = f"{TMP}score"
POS = f"{TMP}pos"
NORM = f"{TMP}norm"
"""Normalized text (rule 7); null where no other chunk shares the group."""
TYPE = f"{TMP}type"
ENTITY = f"{TMP}entity"
_RANK = f"{TMP}sel_rank"
_KEEP = f"{TMP}keep"
_SURE = f"{TMP}sure"
_PARTNERED = f"{TMP}partnered"
_HIT = f"{TMP}hit"
ENTITY_KEY = (c.QUERY_ID, c.ENTITY_ID, c.ENTITY_TYPE)


def signed_zero_free(expr: pl.Expr) -> pl.Expr:
    """``expr`` with -0.0 replaced by 0.0, so sorting ties them as the seed does."""
    return pl.when(expr == 0.0).then(0.0).otherwise(expr)


def segment_index(key: str | pl.Expr) -> pl.Expr:
    """0-based row number within runs of equal ``key`` (rows sorted by key).

    The same as ``int_range(len()).over(key)`` on sorted rows, without hashing.
    """
    key = pl.col(key) if isinstance(key, str) else key
    row = pl.int_range(pl.len(), dtype=pl.Int64)
    starts = key.ne_missing(key.shift(1)) | (row == 0)
    return row - pl.when(starts).then(row).forward_fill()


def _ranked(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Rules 1-2: ranking score, and each candidate's position in its query's order."""
    return (
        lf.with_columns(pl.col(c.SIMILARITY).fill_null(0.0).alias(SIM))
        .with_columns(signed_zero_free(pl.coalesce(c.RERANK_SCORE, SIM)).alias(SCORE))
        .sort([c.QUERY_ID, SCORE], descending=[False, True], maintain_order=True)
        .with_columns(segment_index(c.QUERY_ID).alias(POS))
    )


def _reachable(ranked: pl.LazyFrame, top_k: int) -> pl.LazyFrame:
    """Keep the prefix of each query's order that the walk can reach.

    The first candidate of each entity (and any candidate without one) cannot be a
    repeat, so once top_k of them have passed, the walk has stopped.
    """
    # a hash collision can only make fewer candidates "sure": the prefix grows, still exact
    first = pl.struct(c.ENTITY_ID, c.ENTITY_TYPE).hash().is_first_distinct().over(c.QUERY_ID)
    sure = pl.col(c.ENTITY_ID).is_null() | first
    seen = pl.col(_SURE).cum_sum() - pl.col(_SURE)
    before = seen - pl.when(pl.col(POS) == 0).then(seen).forward_fill()
    return ranked.with_columns(sure.cast(pl.Int64).alias(_SURE)).filter(before < top_k).drop(_SURE)


def _repeated(reach: pl.LazyFrame) -> pl.LazyFrame:
    """Rule 3: ``ROW`` of every candidate covered by an earlier one."""
    cand = reach.filter(pl.col(c.ENTITY_ID).is_not_null() & (pl.col(NORM) != "")).select(
        *ENTITY_KEY, ROW, POS, SIM, NORM
    )
    return (
        cand.join(cand, on=list(ENTITY_KEY), suffix="_c", nulls_equal=True)
        .filter(
            (pl.col(POS) < pl.col(f"{POS}_c"))
            & (pl.col(SIM) >= pl.col(f"{SIM}_c"))
            & (pl.col(NORM).str.len_bytes() >= pl.col(f"{NORM}_c").str.len_bytes())
        )
        .with_columns(contains_expr(pl.col(NORM), pl.col(f"{NORM}_c"), words=True).alias(_HIT))
        .filter(_HIT)
        .select(pl.col(f"{ROW}_c").alias(ROW))
        .unique()
    )


def threshold_expr(selected: pl.Expr, top_k: int, min_similarity: float) -> pl.Expr:
    """Rule 4: the adaptive threshold, computed in the same order as the seed."""
    m = float(min_similarity)
    middle = pl.lit(m) * (0.6 + 0.6 * (selected - 1) / (top_k - 1)) if top_k > 1 else 0.0
    t = pl.when(selected <= 1).then(0.6 * m).when(selected >= top_k).then(1.2 * m)
    return t.otherwise(middle).clip(0.0, 1.0)


def group_key(zero: int | str) -> list[pl.Expr]:
    """Rule 5's group key beside the query: (type or "", entity or zero)."""
    return [
        pl.col(c.ENTITY_TYPE).fill_null("").alias(TYPE),
        pl.col(c.ENTITY_ID).fill_null(zero).alias(ENTITY),
    ]


def kept_chunks(
    slim: pl.LazyFrame,
    texts: pl.LazyFrame,
    on: list[str],
    zero: int | str,
    top_k: int,
    min_similarity: float,
) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with ``text`` and helper columns.

    ``slim`` holds the canonical candidates without text, with a ``ROW`` index;
    ``texts`` holds ``text`` keyed by ``on`` (``ROW``, or entity and chunk index for a
    chunk store). Text is joined to the reachable rows only, and normalized only where
    a chunk shares its group with another (repeats and merges need a partner).
    """
    partnered = pl.len().over(c.QUERY_ID, TYPE, ENTITY) > 1
    reach = (
        _reachable(_ranked(slim), top_k)
        .join(texts, on=on, how="left")
        .with_columns(pl.col(c.TEXT).fill_null(""), *group_key(zero))
        .with_columns(partnered.alias(_PARTNERED))
        .cache()
    )
    reach = (
        pl.concat(
            [
                reach.filter(_PARTNERED).with_columns(normalize_expr(pl.col(c.TEXT)).alias(NORM)),
                reach.filter(~pl.col(_PARTNERED)).with_columns(pl.lit(None, pl.String).alias(NORM)),
            ]
        )
        .drop(_PARTNERED)
        .sort(c.QUERY_ID, POS)
        .cache()  # read three times below: compute once
    )
    selected = (
        reach.join(_repeated(reach), on=ROW, how="anti")
        .sort(c.QUERY_ID, POS)
        .with_columns((segment_index(c.QUERY_ID) + 1).alias(_RANK))
        .filter(pl.col(_RANK) <= top_k)
    )
    n = pl.len().over(c.QUERY_ID)
    keep = pl.col(SIM) >= threshold_expr(n, top_k, min_similarity)
    fallback = ~pl.col(_KEEP).any().over(c.QUERY_ID) & (pl.col(_RANK) == 1)
    return (
        selected.with_columns(keep.alias(_KEEP)).filter(pl.col(_KEEP) | fallback).drop(_KEEP, _RANK)
    )
