"""Selection half of ``postprocess``: ranking, distinct top-K, adaptive threshold.

SPEC 1, rules 1-4, for every query at once. Ranking, the reachable prefix, the text
join and the threshold are Polars expressions. The walk "skip a candidate repeated by
an already-selected chunk, stop at top_k" runs in a compiled kernel
(:func:`ragframe.postprocess._kernels._walk.walk`) over the reachable prefix: the
prefix of each query's
ranking that the walk can reach before top_k chunks are surely selected (the first
candidate of an entity cannot be a repeat, whatever the text says). Only that prefix
can need text, and it is joined in two passes: first to each query's first
:func:`first_pass_width` candidates, then to the whole prefix of the few queries those
do not fill.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe.postprocess._kernels._walk import walk
from ragframe.postprocess._rank import ranking
from ragframe.postprocess._texts import row_texts, stacked

FIRST_PASS = 1.5
"""The first walk takes each query's first ``FIRST_PASS * top_k`` candidates: room for
a few repeats, so that few queries need the second (measured on the benchmark data:
1x leaves 4.3% of queries to the second pass; 1.5x ran fastest, 3x slowest)."""


def first_pass_width(top_k: int) -> int:
    """How many of each query's first candidates the first walk takes (>= top_k)."""
    return max(top_k, int(FIRST_PASS * top_k))


def _scored(lf: pl.LazyFrame) -> pl.LazyFrame:
    """The similarity as rule 1 reads it (null: 0.0), as ``c.T_SIM``."""
    sim = pl.col(c.SIMILARITY).fill_null(0.0).alias(c.T_SIM)
    return lf.with_columns(sim).drop(c.SIMILARITY)


def _ranking_kernel(width: int, head: int | None) -> Callable[[pl.Series], pl.Series]:
    """:func:`ragframe.postprocess._rank.ranking` over whole columns."""

    def kernel(batch: pl.Series) -> pl.Series:
        parts = batch.struct.unnest()
        placed = ranking(parts[c.QUERY_ID], parts[c.RANKING_SCORE].to_numpy(), width, head)
        columns = {c.T_RANK: placed.rank, c.T_POSITION: placed.position, c.T_MORE: placed.more}
        return pl.DataFrame(columns).to_struct(batch.name)

    return kernel


def _placed(lf: pl.LazyFrame, width: int, head: int | None = None) -> pl.LazyFrame:
    """Rules 1-2 on scored rows (:func:`_scored`) in any order, without reordering them:
    each row's place in the whole ranking (``c.T_RANK``: queries ascending, each in its
    order), in its query's (``c.T_POSITION``) and whether its query has more than
    ``width`` rows (``c.T_MORE``); with ``head``, only each query's first ``head`` rows
    are placed (:func:`ragframe.postprocess._rank.ranking`)."""
    reranked = c.RERANK_SCORE in lf.collect_schema()
    score = pl.coalesce(c.RERANK_SCORE, c.T_SIM) if reranked else pl.col(c.T_SIM)
    dtype = pl.Struct({c.T_RANK: pl.Int64, c.T_POSITION: pl.Int64, c.T_MORE: pl.Boolean})
    places = pl.struct(c.QUERY_ID, score.alias(c.RANKING_SCORE)).map_batches(
        _ranking_kernel(width, head), return_dtype=dtype
    )
    return lf.with_columns(places.alias(c.T_KERNEL)).unnest(c.T_KERNEL)


def _started(lf: pl.LazyFrame) -> pl.LazyFrame:
    """Mark each query's first row in its order (``c.T_START``)."""
    return lf.with_columns((pl.col(c.T_POSITION) == 0).alias(c.T_START))


def entity_key(typed: bool) -> list[str]:
    """The columns that tell entities apart: (entity, type), or the entity alone when
    the input has no ``entity_type`` (then every type is null)."""
    return [c.ENTITY_ID, c.ENTITY_TYPE] if typed else [c.ENTITY_ID]


def _since_start(running: pl.Expr) -> pl.Expr:
    """A running value (over all rows, in ranking order) less its value on the query's
    first row: the same value counted from each query's start, without a window."""
    return running - pl.when(c.T_START).then(running).forward_fill()


def _reachable(ranked: pl.LazyFrame, top_k: int, typed: bool) -> pl.LazyFrame:
    """Keep the prefix of each query's order that the walk can reach (rows of whole
    queries, in ranking order).

    The first candidate of each (query, entity, type) (and any candidate without an
    entity) cannot be a repeat, so once top_k of them have passed, the walk has
    stopped. "First" is judged by a hash of the key over the whole frame (no window):
    a collision can only make a candidate not "sure", so the prefix grows; still exact.
    """
    key = pl.struct(c.QUERY_ID, *entity_key(typed)).hash()
    sure = pl.col(c.ENTITY_ID).is_null() | key.is_first_distinct()
    seen = pl.col(c.T_SURE)  # sure rows before this one, over the whole frame
    before = _since_start(seen)
    return (
        ranked.with_columns(sure.cast(pl.Int64).alias(c.T_SURE))
        .with_columns((seen.cum_sum() - seen).alias(c.T_SURE))
        .filter(before < top_k)
        .drop(c.T_SURE)
    )


def _walk_kernel(top_k: int, in_source: bool) -> Callable[[pl.Series], pl.Series]:
    """Rule 3 as a kernel over whole columns: per row, whether the walk selects it, and
    (on every row of its query) how many chunks the query selects and the best
    similarity among them. ``in_source``: the batch is the rows, then the text
    source's (:func:`ragframe.postprocess._texts.stacked`); those get no answer."""

    def kernel(batch: pl.Series) -> pl.Series:
        found = row_texts(batch.struct.unnest(), in_source)
        parts = found.rows
        selected, count, best = walk(
            found.address,
            found.length,
            parts[c.T_RANK].to_numpy(),
            parts[c.T_START].to_numpy(),
            parts[c.T_SIM].to_numpy(),
            parts[c.ENTITY_ID],
            parts[c.ENTITY_TYPE],
            parts[c.T_HASH].to_numpy().view(np.int64),
            top_k,
        )
        del found  # the texts were read in place until here
        columns = {c.T_SELECTED: selected, c.T_COUNT: count, c.T_BEST: best}
        rest = batch.len() - len(selected)
        return pl.DataFrame(columns).extend(pl.DataFrame(columns).clear(rest)).to_struct(batch.name)

    return kernel


def _walked(
    rows: pl.LazyFrame, texts: pl.LazyFrame | None, top_k: int, typed: bool
) -> pl.LazyFrame:
    """Rule 3 over rows in any order (whole queries, each a prefix of its ranking), their
    texts read in place (from ``texts``, the chunk store, or their own ``text``): the
    rows with ``c.T_WALK``, a struct of ``c.T_SELECTED``, ``c.T_COUNT``, ``c.T_BEST``."""
    inputs = pl.struct(
        c.T_ROW,
        c.TEXT,
        c.T_RANK,
        c.T_START,
        c.T_SIM,
        c.ENTITY_ID,
        c.ENTITY_TYPE,
        pl.struct(*entity_key(typed)).hash().alias(c.T_HASH),
    )
    dtype = pl.Struct({c.T_SELECTED: pl.Boolean, c.T_COUNT: pl.Int64, c.T_BEST: pl.Float64})
    walk_ = inputs.map_batches(_walk_kernel(top_k, texts is not None), return_dtype=dtype)
    if texts is None:
        return rows.with_columns(walk_.alias(c.T_WALK))
    both = stacked(rows, texts, [pl.col(c.TEXT)]).with_columns(walk_.alias(c.T_WALK))
    # cached before the filter: a consumer's filter pushed into it would walk again
    return both.cache().filter(pl.col(c.T_ROW).is_not_null())


def threshold_expr(selected: pl.Expr, top_k: int, min_similarity: float) -> pl.Expr:
    """Rule 4: the adaptive threshold, computed in the same order as the seed."""
    m = float(min_similarity)
    middle = pl.lit(m) * (0.6 + 0.6 * (selected - 1) / (top_k - 1)) if top_k > 1 else 0.0
    t = pl.when(selected <= 1).then(0.6 * m).when(selected >= top_k).then(1.2 * m)
    return t.otherwise(middle).clip(0.0, 1.0)


def group_key(zero: int | str, typed: bool) -> list[pl.Expr]:
    """Rule 5's group key beside the query: (type or "", entity or zero)."""
    return [
        (pl.col(c.ENTITY_TYPE).fill_null("") if typed else pl.lit("")).alias(c.T_TYPE),
        pl.col(c.ENTITY_ID).fill_null(zero).alias(c.T_ENTITY),
    ]


def kept_chunks(
    slim: pl.LazyFrame,
    texts: pl.LazyFrame | None,
    zero: int | str,
    top_k: int,
    min_similarity: float,
    typed: bool = True,
    absent: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with helper columns, in any order:
    ``c.T_RANK``, each row's place in the whole ranking, orders them (queries
    ascending, each in ranking order).

    ``slim`` holds the canonical candidates, each with ``c.T_ROW``, its text's row of
    ``texts`` (the chunk store: :mod:`ragframe.postprocess._texts`), or, without
    ``texts``, with its ``text``. ``typed=False`` says every ``entity_type`` is null
    (the input has none); ``absent`` adds the optional columns ``slim`` lacks (null
    literals), after the reach.

    Texts are read only where the walk may need them, in two passes. The first walks
    each query's first :func:`first_pass_width` candidates (their ``c.T_POSITION``,
    found without sorting the table: :func:`_placed`): where it selects top_k of them,
    the walk stops there whatever follows, as it does unless repeats are common. The
    second walks again only the queries the first did not fill and that have more
    candidates (``c.T_MORE``), ranked in full, over their reachable prefix
    (:func:`_reachable`). Texts are normalized only where a chunk shares its group with
    another (repeats and merges need a partner).
    """
    width = first_pass_width(top_k)
    # cached: the first pass and the queries walked again both read it
    ranked = _placed(_scored(slim), width, head=width).cache()

    def keyed(rows: pl.LazyFrame) -> pl.LazyFrame:
        return rows.with_columns(*group_key(zero, typed), *absent)

    walked = pl.col(c.T_WALK).struct.field
    count, t = walked(c.T_COUNT), threshold_expr(walked(c.T_COUNT), top_k, min_similarity)
    # rule 4's fallback: the first selected chunk is the query's first candidate
    keep = walked(c.T_SELECTED) & (
        (pl.col(c.T_SIM) >= t) | (pl.col(c.T_START) & (walked(c.T_BEST) < t))
    )
    # cached: both the kept rows and the list of queries to walk again read it
    head = _walked(
        keyed(_started(ranked.filter(pl.col(c.T_POSITION) < width))), texts, top_k, typed
    )
    head = head if texts is not None else head.cache()
    unfilled = pl.col(c.T_MORE) & (count < top_k)
    # each of those queries with its first row's rank in the whole ranking
    short = head.filter(pl.col(c.T_START) & unfilled).select(
        c.QUERY_ID, pl.col(c.T_RANK).alias(c.T_BASE)
    )
    # the candidates of those queries, in input order (the ranking's tie-break), ranked
    # again in full; a row's rank in the whole ranking is its query's first rank plus
    # its position in the query, so every kept row's c.T_RANK orders it among all
    rest = ranked.join(short, on=c.QUERY_ID, how="semi", maintain_order="left")
    rest = _placed(rest.drop(c.T_RANK, c.T_POSITION, c.T_MORE), width)
    rest = rest.join(short, on=c.QUERY_ID, how="left").with_columns(
        (pl.col(c.T_BASE) + pl.col(c.T_POSITION)).alias(c.T_RANK)
    )
    reach = _reachable(_started(rest.sort(c.T_RANK)), top_k, typed)  # few rows
    again = _walked(keyed(reach), texts, top_k, typed)
    done = head.filter(keep & ~unfilled)
    drop = [c.T_WALK, c.T_MORE, c.T_POSITION]
    again = again.filter(keep).select(done.collect_schema().names())  # same column order
    return pl.concat([done, again], how="vertical").drop(drop)
