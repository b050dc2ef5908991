"""Selection half of ``postprocess``: ranking, distinct top-K, adaptive threshold.

SPEC 1, rules 1-4, for every query at once, in one map over whole columns
(:func:`selection`): the candidates, then the text source's rows (the chunk store's,
or none for inline text), so each candidate's text is read in place. Ranking is a
compiled pass (:func:`ragframe.postprocess._rank.ranking`); the walk "skip a candidate
repeated by an already-selected chunk, stop at top_k" a compiled kernel
(:func:`ragframe.postprocess._kernels._walk.walk`); the threshold and the rest are
Polars expressions on the rows walked. The walk runs in two passes: first over each
query's first :func:`first_pass_width` candidates, then, only where some query needs
it (decided from the first pass's counts), over the reachable prefix
(:func:`_reachable`) of the few queries those do not fill.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._kernels._compile import F64, I64, Bools
from ragframe.postprocess._kernels._walk import Walked, walk
from ragframe.postprocess._rank import heads, ranking
from ragframe.postprocess._texts import Views, stacked

FIRST_PASS = 1.5
"""The first walk takes each query's first ``FIRST_PASS * top_k`` candidates: room for
a few repeats, so that few queries need the second (measured on the benchmark data:
1x leaves 4.3% of queries to the second pass; 1.5x ran fastest, 3x slowest)."""


def first_pass_width(top_k: int) -> int:
    """How many of each query's first candidates the first walk takes (>= top_k)."""
    return max(top_k, int(FIRST_PASS * top_k))


Rows = TypeVar("Rows", pl.DataFrame, pl.LazyFrame)


def _score(schema: pl.Schema) -> pl.Expr:
    """Rule 1's ranking score, as ``c.RANKING_SCORE``: the rerank score where given,
    else the similarity (null: 0.0)."""
    sim = pl.col(c.SIMILARITY).fill_null(0.0)
    score = pl.coalesce(c.RERANK_SCORE, sim) if c.RERANK_SCORE in schema else sim
    return score.alias(c.RANKING_SCORE)


def _started(rows: Rows) -> Rows:
    """Mark each query's first row in its order (``c.T_START``)."""
    return rows.with_columns((pl.col(c.T_POSITION) == 0).alias(c.T_START))


def entity_key(typed: bool) -> list[str]:
    """The columns that tell entities apart: (entity, type), or the entity alone when
    the input has no ``entity_type`` (then every type is null)."""
    return [c.ENTITY_ID, c.ENTITY_TYPE] if typed else [c.ENTITY_ID]


def _since_start(running: pl.Expr) -> pl.Expr:
    """A running value (over all rows, in ranking order) less its value on the query's
    first row: the same value counted from each query's start, without a window."""
    return running - pl.when(c.T_START).then(running).forward_fill()


def _reachable(ranked: Rows, top_k: int, typed: bool) -> Rows:
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


class Rules(NamedTuple):
    """What the selection reads besides the rows."""

    top_k: int
    min_similarity: float
    typed: bool
    """Whether the input has an ``entity_type`` column (else every type is null)."""
    zero: int | str
    """What a null entity reads as in the group key."""
    absent: Sequence[pl.Expr]
    """Null literals for the optional columns the input lacks."""


def _mask(n: int, at: I64) -> pl.Series:
    """A Boolean mask of ``n`` rows, set at ``at``: the rows a filter gathers
    (a filter by it reads each column chunk by chunk; Polars' gather across chunks
    took 3-4 times longer for numbers, ~40 times for the inline text). ``at``
    ascending: the rows come in that order."""
    mask = np.zeros(n, dtype=np.bool_)
    mask[at] = True
    return pl.Series(mask)


def _walk_columns(typed: bool) -> list[str]:
    """The columns :func:`_walked` reads."""
    return [c.T_ROW, c.T_SIM, *entity_key(typed)]


def _walked(
    rows: pl.DataFrame, rank: I64, start: Bools, more: Bools | None, text: pl.Series,
    rules: Rules,
) -> Walked:  # fmt: skip
    """Rules 3 and 4 over ``rows`` (with the :func:`_walk_columns`): whole queries, each
    a prefix of its ranking, their places ``rank`` and first rows ``start``; each one's
    text the row ``c.T_ROW`` of ``text`` (-1: none), read in place. ``more`` marks the
    rows of queries with more candidates (not kept when the walk leaves them short:
    :func:`ragframe.postprocess._kernels._walk.walk`)."""
    types = rows[c.ENTITY_TYPE] if rules.typed else None
    sim, entity, row = rows[c.T_SIM].to_numpy(), rows[c.ENTITY_ID], rows[c.T_ROW].to_numpy()
    limits = thresholds(rules.top_k, rules.min_similarity, min(rules.top_k, len(rank)))
    return walk(text, row, rank, start, sim, entity, types, None, rules.top_k, limits, more)


def threshold_expr(selected: pl.Expr, top_k: int, min_similarity: float) -> pl.Expr:
    """Rule 4: the adaptive threshold, computed in the same order as the seed."""
    m = float(min_similarity)
    middle = pl.lit(m) * (0.6 + 0.6 * (selected - 1) / (top_k - 1)) if top_k > 1 else 0.0
    t = pl.when(selected <= 1).then(0.6 * m).when(selected >= top_k).then(1.2 * m)
    return t.otherwise(middle).clip(0.0, 1.0)


@functools.lru_cache(maxsize=64)
def thresholds(top_k: int, min_similarity: float, most: int) -> F64:
    """Rule 4's threshold (:func:`threshold_expr`) for each count of selected chunks up
    to ``most``, for the walk to read: the expression's own doubles (read-only; kept
    for the next call with the same rules: a Polars select took ~0.8 ms a call in the
    engine's map)."""
    count = pl.int_range(most + 1, dtype=pl.Int64, eager=True)
    expr = threshold_expr(pl.lit(count), top_k, min_similarity)
    values = pl.select(expr).to_series().to_numpy().copy()
    values.flags.writeable = False
    return values


def group_key(zero: int | str, typed: bool) -> list[pl.Expr]:
    """Rule 5's group key beside the query: (type or "", entity or zero)."""
    return [
        (pl.col(c.ENTITY_TYPE).fill_null("") if typed else pl.lit("")).alias(c.T_TYPE),
        pl.col(c.ENTITY_ID).fill_null(zero).alias(c.T_ENTITY),
    ]


class Kept(NamedTuple):
    """Rows a walk keeps: their rows (ascending), places and first-row marks."""

    at: I64
    rank: I64
    start: Bools


def _walked_again(
    rows: pl.DataFrame, short: pl.DataFrame, text: pl.Series, rules: Rules, width: int
) -> Kept:
    """The second pass: the queries of ``short`` (each with its first row's rank in the
    whole ranking, ``c.T_BASE``) ranked again in full, in input order (the ranking's
    tie-break), and walked over their reachable prefix: the rows rules 3 and 4 keep
    there. A row's rank in the whole ranking is its query's first rank plus its
    position in the query."""
    at = pl.int_range(rows.height, dtype=pl.Int64).alias(c.T_AT)
    rest = rows.with_columns(at).filter(pl.col(c.QUERY_ID).is_in(short[c.QUERY_ID].implode()))
    places = ranking(rest[c.QUERY_ID], rest[c.RANKING_SCORE].to_numpy(), width)
    rest = rest.with_columns(pl.Series(c.T_POSITION, places.position)).join(
        short, on=c.QUERY_ID, how="left", maintain_order="left"
    )
    rest = rest.with_columns((pl.col(c.T_BASE) + pl.col(c.T_POSITION)).alias(c.T_RANK))
    reach = _reachable(_started(rest.sort(c.T_RANK)), rules.top_k, rules.typed)
    reach = reach.sort(c.T_AT)  # rows ascending, as the walk's gathers read them
    rank, start = reach[c.T_RANK].to_numpy(), reach[c.T_START].to_numpy()
    keep = _walked(reach, rank, start, None, text, rules).keep
    return Kept(reach[c.T_AT].to_numpy()[keep], rank[keep], start[keep])


def selected(rows: pl.DataFrame, text: pl.Series, rules: Rules) -> pl.DataFrame:
    """Rules 1-4 over ``rows``: the rows each query keeps (see :func:`selected_views`)."""
    return selected_views(rows, text, rules)[0]


def selected_views(
    rows: pl.DataFrame, text: pl.Series, rules: Rules
) -> tuple[pl.DataFrame, Views | None]:
    """Rules 1-4 over ``rows`` (the canonical candidates of whole queries, in input
    order, each with ``c.RANKING_SCORE`` (:func:`_score`), ``c.T_SIM`` and
    ``c.T_ROW``, its text's row of ``text``): the rows each query keeps, in input
    order, with ``c.T_RANK`` (the row's place in the whole ranking: queries ascending,
    each in its order), ``c.T_START``, the group key (:func:`group_key`) and the
    optional columns the input lacks.

    The first pass walks each query's first :func:`first_pass_width` candidates (found
    without sorting: :func:`ragframe.postprocess._rank.heads`): where it
    selects top_k of them, the walk stops there whatever follows, as it does unless
    repeats are common. The second walks again only the queries the first did not fill
    and that have more candidates, when there are any (:func:`_walked_again`). The
    walks gather only the columns they need at the rows they walk; the kept rows are
    gathered from ``rows`` once (:func:`_kept`).

    With the rows, where one walk found them all (no second), their texts' views as
    the walk read them (:data:`~ragframe.postprocess._texts.Views`), for the merge to
    read no view again; else None.
    """
    width = first_pass_width(rules.top_k)
    head, rank, start, more = heads(rows[c.QUERY_ID], rows[c.RANKING_SCORE], width)
    # only the columns the walk reads, at its rows (a filter: chunk by chunk, :func:`_mask`)
    mask = _mask(rows.height, head)
    first = pl.DataFrame([rows[name].filter(mask) for name in _walk_columns(rules.typed)])
    walked = _walked(first, rank, start, more, text, rules)
    keep = walked.keep
    kept = Kept(head[keep], rank[keep], start[keep])
    # the queries the first pass leaves short of top_k that have more candidates
    short = np.flatnonzero(start & more & (walked.picked < rules.top_k))
    if not len(short):  # decided from the counts: most runs never walk again
        views = (walked.address[keep], walked.length[keep], walked.alive)
        return _kept(rows, kept, rules, first.filter(pl.Series(keep))), views
    ids = rows[c.QUERY_ID].gather(head[short])
    bases = pl.DataFrame([ids, pl.Series(c.T_BASE, rank[short])])
    again = _walked_again(rows, bases, text, rules, width)
    both = [np.concatenate(pair) for pair in zip(kept, again, strict=True)]
    order = np.argsort(both[0], kind="stable")
    return _kept(rows, Kept(*(values[order] for values in both)), rules), None


def _kept(
    rows: pl.DataFrame, kept: Kept, rules: Rules, known: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The rows ``kept`` of ``rows``, with their places, first-row marks, group key and
    the optional columns the input lacks (the columns :func:`kept_schema` says). The
    columns of ``known`` (those rows' already) are taken from it, the others filtered
    from ``rows`` once each (chunk by chunk, :func:`_mask`)."""
    mask = _mask(rows.height, kept.at)
    have = {} if known is None else {name: known[name] for name in known.columns}
    columns = [
        have[name] if name in have else rows[name].filter(mask)
        for name in rows.columns
        if name != c.RANKING_SCORE
    ]
    places = [pl.Series(c.T_RANK, kept.rank), pl.Series(c.T_START, kept.start)]
    out = pl.DataFrame([*columns, *places]).rechunk()  # frame ops downstream would align them
    return out.hstack(_key_columns(out, rules))


def _key_columns(rows: pl.DataFrame, rules: Rules) -> list[pl.Series]:
    """:func:`group_key`'s columns and the absent ones for ``rows``, built as Series (a
    frame's ``with_columns`` runs the lazy engine: ~1.5 ms a call in the engine's map)."""
    n, entity = rows.height, rows[c.ENTITY_ID]
    if rules.typed:
        kind = rows[c.ENTITY_TYPE].fill_null("")
    else:
        kind = pl.Series([""], dtype=pl.String).new_from_index(0, n)
    if entity.null_count():
        entity = entity.fill_null(rules.zero)
    absent = pl.select(*rules.absent) if rules.absent else pl.DataFrame()
    return [
        kind.alias(c.T_TYPE),
        entity.alias(c.T_ENTITY),
        *(column.new_from_index(0, n) for column in absent.iter_columns()),
    ]


def kept_schema(rows: pl.Schema, rules: Rules) -> pl.Schema:
    """The columns :func:`selected` gives for rows with columns ``rows``."""
    empty = pl.LazyFrame(schema=rows).with_columns(
        pl.lit(0, dtype=pl.Int64).alias(c.T_RANK), pl.lit(False).alias(c.T_START)
    )
    return (
        empty.select(pl.all(), *group_key(rules.zero, rules.typed), *rules.absent)
        .drop(c.RANKING_SCORE)
        .collect_schema()
    )


def selection_rows(
    slim: pl.LazyFrame, texts: pl.LazyFrame | None, side: Sequence[str] = (c.TEXT,)
) -> pl.LazyFrame:
    """What :func:`selected` reads, as one frame: the candidates of ``slim`` (each with
    ``c.T_ROW``) with ``c.RANKING_SCORE`` and ``c.T_SIM`` (similarity read as rule 1
    reads it, null: 0.0), followed by the text source's columns ``side`` (the chunk
    store's rows; none for inline text, which the candidates carry). Not side by
    side: the streaming engine refuses frames of unequal lengths there."""
    scored = slim.with_columns(
        _score(slim.collect_schema()), pl.col(c.SIMILARITY).fill_null(0.0).alias(c.T_SIM)
    ).drop(c.SIMILARITY)
    return scored if texts is None else stacked(scored, texts, [pl.col(n) for n in side])


def rows_and_text(
    parts: pl.DataFrame, side: Sequence[str] | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A batch of :func:`selection_rows`: the candidates, and the text source's rows
    (``side``: its columns, stacked below the candidates; None: inline text, the
    candidates themselves, each one's ``c.T_ROW`` then its row of the batch)."""
    if side is None:  # not with_columns: a frame's runs the lazy engine (~2.5 ms in the map)
        at = pl.Series(c.T_ROW, np.arange(parts.height)).cast(parts.schema[c.T_ROW])
        rows = pl.DataFrame([at if name == c.T_ROW else parts[name] for name in parts.columns])
        return rows, rows
    n = parts.height - parts[c.T_ROW].null_count()  # the store's rows have no T_ROW
    # built from the columns: a frame's drop or select would first align the chunks of
    # every column, the source's texts too (the batch's columns are in chunks of
    # different lengths); left in their chunks (not made one: a copy of every column):
    # the selection gathers only the rows it reads, column by column (:func:`_mask`)
    rows = pl.DataFrame([parts[name].head(n) for name in parts.columns if name not in side])
    return rows, pl.DataFrame([parts[name].slice(n) for name in side])


def _selection_kernel(rules: Rules, in_source: bool) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """:func:`selected` over a batch of :func:`selection_rows`."""

    def kernel(batch: pl.DataFrame) -> pl.DataFrame:
        rows, source = rows_and_text(batch, [c.TEXT] if in_source else None)
        return selected(rows, source[c.TEXT], rules)

    return kernel


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
    ascending, each in ranking order); see :func:`selected`.

    ``slim`` holds the canonical candidates, each with ``c.T_ROW``, its text's row of
    ``texts`` (the chunk store: :mod:`ragframe.postprocess._texts`), or, without
    ``texts``, with its ``text``. ``typed=False`` says every ``entity_type`` is null
    (the input has none); ``absent`` adds the optional columns ``slim`` lacks (null
    literals).
    """
    rules = Rules(top_k, min_similarity, typed, zero, absent)
    rows = selection_rows(slim, texts)
    schema = rows.collect_schema()
    if texts is not None:  # the candidates' columns, without the store's text
        schema = pl.Schema({n: t for n, t in schema.items() if n != c.TEXT})
    kernel = _selection_kernel(rules, texts is not None)
    return rows.map_batches(kernel, schema=kept_schema(schema, rules))
