"""Selection half of ``postprocess``: ranking, distinct top-K, adaptive threshold.

SPEC 1, rules 1-4, for every query at once. Ranking, the reachable prefix, the text
join and the threshold are Polars expressions. The walk "skip a candidate repeated by
an already-selected chunk, stop at top_k" runs in a compiled kernel
(:func:`ragframe._jit.walk`) over the whole reachable prefix: the prefix of each query's
ranking that the walk can reach before top_k chunks are surely selected (the first
candidate of an entity cannot be a repeat, whatever the text says). Only that prefix
needs text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._jit import walk
from ragframe.schema import TMP

ROW = f"{TMP}row"
SIM = f"{TMP}sim"
START = f"{TMP}start"
TYPE = f"{TMP}type"
ENTITY = f"{TMP}entity"
RANK = f"{TMP}rank"
_SURE = f"{TMP}sure"
_HASH = f"{TMP}hash"
_WALK = f"{TMP}walk"
_COUNT = "count"
_BEST = "best"


def signed_zero_free(expr: pl.Expr) -> pl.Expr:
    """``expr`` with -0.0 replaced by 0.0, so sorting ties them as the seed does."""
    return pl.when(expr == 0.0).then(0.0).otherwise(expr)


def _ranked(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Rules 1-2: ranking score, each candidate's row in the ranking (``RANK``: also its
    query's order) and whether it is its query's first (``START``)."""
    query = pl.col(c.QUERY_ID)  # never null: the first row starts a query too
    # a sort key, not a column; without rerank scores the similarity
    reranked = c.RERANK_SCORE in lf.collect_schema()
    score = signed_zero_free(pl.coalesce(c.RERANK_SCORE, SIM) if reranked else pl.col(SIM))
    return (
        lf.with_columns(pl.col(c.SIMILARITY).fill_null(0.0).alias(SIM))
        .drop(c.SIMILARITY)
        .sort([query, score], descending=[False, True], maintain_order=True)
        .with_row_index(RANK)  # cheaper than an int_range on the streaming engine
        .with_columns(pl.col(RANK).cast(pl.Int64), query.ne_missing(query.shift(1)).alias(START))
    )


def entity_key(typed: bool) -> list[str]:
    """The columns that tell entities apart: (entity, type), or the entity alone when
    the input has no ``entity_type`` (then every type is null)."""
    return [c.ENTITY_ID, c.ENTITY_TYPE] if typed else [c.ENTITY_ID]


def _reachable(ranked: pl.LazyFrame, top_k: int, typed: bool) -> pl.LazyFrame:
    """Keep the prefix of each query's order that the walk can reach.

    The first candidate of each (query, entity, type) (and any candidate without an
    entity) cannot be a repeat, so once top_k of them have passed, the walk has
    stopped. "First" is judged by a hash of the key over the whole frame (no window):
    a collision can only make a candidate not "sure", so the prefix grows; still exact.
    """
    key = pl.struct(c.QUERY_ID, *entity_key(typed)).hash()
    sure = pl.col(c.ENTITY_ID).is_null() | key.is_first_distinct()
    seen = pl.col(_SURE)  # sure rows before this one, over the whole frame
    before = seen - pl.when(START).then(seen).forward_fill()
    return (
        ranked.with_columns(sure.cast(pl.Int64).alias(_SURE))
        .with_columns((seen.cum_sum() - seen).alias(_SURE))
        .filter(before < top_k)
        .drop(_SURE)
    )


def _walk_kernel(top_k: int) -> Callable[[pl.Series], pl.Series]:
    """Rule 3 as a kernel over whole columns: per row, how many chunks its query
    selects (0: not selected) and the best similarity among them."""

    def kernel(batch: pl.Series) -> pl.Series:
        parts = batch.struct.unnest()
        count, best = walk(
            parts[c.TEXT],
            parts[RANK].to_numpy(),
            parts[START].to_numpy(),
            parts[SIM].to_numpy(),
            parts[c.ENTITY_ID],
            parts[c.ENTITY_TYPE],
            parts[_HASH].to_numpy().view(np.int64),
            top_k,
        )
        return pl.DataFrame({_COUNT: count, _BEST: best}).to_struct(batch.name)

    return kernel


def _walked(top_k: int, typed: bool) -> pl.Expr:
    """Rule 3 over the reachable rows (in any order): struct of ``_COUNT``, ``_BEST``."""
    inputs = pl.struct(
        c.TEXT,
        RANK,
        START,
        SIM,
        c.ENTITY_ID,
        c.ENTITY_TYPE,
        pl.struct(*entity_key(typed)).hash().alias(_HASH),
    )
    dtype = pl.Struct({_COUNT: pl.Int64, _BEST: pl.Float64})
    return inputs.map_batches(_walk_kernel(top_k), return_dtype=dtype)


def threshold_expr(selected: pl.Expr, top_k: int, min_similarity: float) -> pl.Expr:
    """Rule 4: the adaptive threshold, computed in the same order as the seed."""
    m = float(min_similarity)
    middle = pl.lit(m) * (0.6 + 0.6 * (selected - 1) / (top_k - 1)) if top_k > 1 else 0.0
    t = pl.when(selected <= 1).then(0.6 * m).when(selected >= top_k).then(1.2 * m)
    return t.otherwise(middle).clip(0.0, 1.0)


def group_key(zero: int | str, typed: bool) -> list[pl.Expr]:
    """Rule 5's group key beside the query: (type or "", entity or zero)."""
    return [
        (pl.col(c.ENTITY_TYPE).fill_null("") if typed else pl.lit("")).alias(TYPE),
        pl.col(c.ENTITY_ID).fill_null(zero).alias(ENTITY),
    ]


def kept_chunks(
    slim: pl.LazyFrame,
    texts: pl.LazyFrame,
    on: list[str],
    zero: int | str,
    top_k: int,
    min_similarity: float,
    typed: bool = True,
    absent: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with ``text`` and helper columns.

    ``slim`` holds the canonical candidates without text (with a ``ROW`` index when
    the text is inline);
    ``texts`` holds ``text`` keyed by ``on`` (``ROW``, or entity and chunk index for a
    chunk store). Text is joined to the reachable rows only, and normalized only where
    a chunk shares its group with another (repeats and merges need a partner).
    ``typed=False`` says every ``entity_type`` is null (the input has none); ``absent``
    adds the optional columns ``slim`` lacks (null literals), after the reach.
    """
    reach = (
        _reachable(_ranked(slim), top_k, typed)
        .join(texts, on=on, how="left")
        .with_columns(pl.col(c.TEXT).fill_null(""), *group_key(zero, typed), *absent)
    )
    walked = pl.col(_WALK).struct.field
    count, t = walked(_COUNT), threshold_expr(walked(_COUNT), top_k, min_similarity)
    # rule 4's fallback: the first selected chunk is the query's first candidate
    keep = (count > 0) & ((pl.col(SIM) >= t) | (pl.col(START) & (walked(_BEST) < t)))
    return reach.with_columns(_walked(top_k, typed).alias(_WALK)).filter(keep).drop(_WALK)
