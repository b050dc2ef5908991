"""Context metrics on postprocess blocks (SPEC 4, "Context metrics"): what reaches the
LLM, in ``block_rank`` order, per query.

With R the number of relevant judged documents (gain > 0):

* ``context_recall``: relevant documents with at least one block / R;
  ``context_recall_capped``: the same / min(R, max_blocks) (a context of max_blocks
  blocks cannot hold more);
* ``context_ndcg``: DCG over block ranks, each document's gain counted once, at its
  first block (discount log2(block_rank + 2)), / the ideal DCG over min(R, k)
  positions, k = max_blocks when given, else R (the ideal context holds every
  relevant document: a context is never rewarded for being short);
* ``chars_used`` (sum of ``char_count``); where the blocks have ``token_count``
  (postprocess with a tokenizer), also ``tokens_used``; ``budget_share``: the share of
  the context's budget used, in its own unit: ``chars_used / max_characters``, or
  ``tokens_used / max_tokens`` for a context budgeted in tokens;
* ``relevant_share``: characters of blocks of relevant documents / all characters;
  ``unjudged_share``: characters of blocks of documents without a judgement;
* ``duplicate_chars``: characters of the source documents that more than one block
  holds (from the chunk store's ``start_char``/``end_char``: each block covers its
  chunks' spans); null without offsets;
* ``first_relevant_rank`` and ``first_relevant_offset`` (characters of context before
  it); ``truncated_blocks``; ``blocks``;
* with span judgements, ``span_recall`` and ``span_precision``
  (:mod:`ragframe.evaluate._spans`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ragframe import schema as c
from ragframe.evaluate._lists import ideal_dcg, relevant_counts
from ragframe.evaluate._spans import span_columns, span_metrics

_GROUP_SPAN = 2**32
"""Larger than any character offset: a group's number times this, plus an offset, keeps
offsets of different groups apart in one running maximum."""


def _starts(columns: Sequence[str]) -> pl.Expr:
    """Whether a row starts a new run of equal ``columns`` (rows sorted by them)."""
    changed = pl.any_horizontal([pl.col(g).ne_missing(pl.col(g).shift(1)) for g in columns])
    return changed.fill_null(True)


def _covered(spans: pl.LazyFrame, group: list[str], key: list[str]) -> pl.LazyFrame:
    """Per ``key`` (a prefix of ``group``), the summed lengths of the unions of the
    ``[start_char, end_char)`` spans of each ``group``.

    No window: rows sorted by (group, start); a running maximum of the end over all rows,
    each group's ends lifted by its number times :data:`_GROUP_SPAN`, is the furthest end
    among the group's earlier spans."""
    start, end = pl.col(c.START_CHAR), pl.col(c.END_CHAR)
    ordered = spans.sort([*group, c.START_CHAR])
    first = _starts(group)
    number = first.cast(pl.Int64).cum_sum()
    lifted = number * _GROUP_SPAN + end
    before = pl.when(first.not_()).then(lifted.cum_max().shift(1) - number * _GROUP_SPAN)
    new = (end - pl.max_horizontal(start, before.fill_null(start))).clip(lower_bound=0)
    measured = ordered.with_columns(new.alias(c.T_LENGTH))  # over all rows, not per key
    return measured.group_by(key).agg(pl.col(c.T_LENGTH).sum())


def duplicate_chars(
    blocks: pl.LazyFrame, chunks: pl.LazyFrame, by: Sequence[str] = ()
) -> pl.LazyFrame:
    """``*by, query_id, duplicate_chars``: the characters blocks cover, less the
    characters of their documents covered at all (each repeat counts)."""
    key = [*by, c.QUERY_ID]
    pieces = blocks.select(
        *key,
        c.BLOCK_RANK,
        pl.col(c.ENTITY_ID).alias(c.DOC_ID),
        pl.col(c.CHUNK_INDEXES).alias(c.CHUNK_INDEX),
    ).explode(c.CHUNK_INDEX)
    offsets = chunks.select(c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR)
    spans = pieces.join(offsets, on=[c.DOC_ID, c.CHUNK_INDEX], how="inner")
    per_block = _covered(spans, [*key, c.BLOCK_RANK], key).rename({c.T_LENGTH: c.T_TOTAL})
    per_doc = _covered(spans, [*key, c.DOC_ID], key).rename({c.T_LENGTH: c.T_CHARS})
    both = per_block.join(per_doc, on=key, how="left")
    return both.select(*key, (pl.col(c.T_TOTAL) - pl.col(c.T_CHARS)).alias(c.DUPLICATE_CHARS))


def _tokens_used() -> pl.Expr:
    """The tokens of a query's blocks; null where none of them was counted (a sweep's
    configuration without a tokenizer, beside one with)."""
    count = pl.col(c.TOKEN_COUNT)
    return pl.when(count.is_not_null().any()).then(count.sum()).cast(pl.Int64)


def _per_query(rows: pl.LazyFrame, key: list[str], tokens: bool = False) -> pl.LazyFrame:
    """The sums over each query's blocks (rows sorted by ``key`` and block rank); with
    ``tokens``, their ``token_count`` too."""
    relevant = pl.col(c.GAIN) > 0
    chars = pl.col(c.CHAR_COUNT)
    starts = _starts(key)
    running = chars.cum_sum() - chars  # characters before, over all rows: less the key's
    offset = running - pl.when(starts).then(running).forward_fill()
    first = pl.struct(*key, c.ENTITY_ID).is_first_distinct()
    discount = (pl.col(c.BLOCK_RANK) + 2).cast(pl.Float64).log(2)
    return (
        rows.with_columns(first.alias(c.T_HEAD), offset.alias(c.T_POSITION))
        .group_by(key)
        .agg(
            pl.len().cast(pl.Int64).alias(c.BLOCKS),
            chars.sum().cast(pl.Int64).alias(c.CHARS_USED),
            pl.col(c.ENTITY_ID).filter(relevant).n_unique().cast(pl.Int64).alias(c.T_COUNT),
            (pl.col(c.GAIN) / discount).filter(pl.col(c.T_HEAD)).sum().alias(c.T_SIM),
            chars.filter(relevant).sum().alias(c.T_TOTAL),
            chars.filter(~pl.col(c.JUDGED)).sum().alias(c.T_LENGTH),
            pl.col(c.BLOCK_RANK).filter(relevant).min().alias(c.FIRST_RELEVANT_RANK),
            pl.col(c.T_POSITION).filter(relevant).first().alias(c.FIRST_RELEVANT_OFFSET),
            pl.col(c.TRUNCATED).sum().cast(pl.Int64).alias(c.TRUNCATED_BLOCKS),
            *([_tokens_used().alias(c.TOKENS_USED)] if tokens else []),
        )
    )


def _budget(value: int | str | None) -> pl.Expr | None:
    """A budget: a fixed number, a column of the budgets frame, or none."""
    if value is None:
        return None
    return pl.col(value) if isinstance(value, str) else pl.lit(value, dtype=pl.Int64)


def context_metrics(
    blocks: pl.LazyFrame,
    qrels: pl.LazyFrame,
    *,
    max_blocks: int | str | None = None,
    max_characters: int | str | None = None,
    chunks: pl.LazyFrame | None = None,
    by: Sequence[str] = (),
    budgets: pl.LazyFrame | None = None,
    max_tokens: int | str | None = None,
    in_tokens: str | None = None,
    counts_tokens: str | None = None,
    spans: pl.LazyFrame | None = None,
    span_store: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The context metrics of every query with blocks or judgements (see the module
    docstring). ``blocks`` as ``postprocess`` gives them; ``qrels`` with gains.

    ``by``: columns of ``blocks`` that tell apart several contexts of one query (a
    sweep's configuration): every query of ``qrels`` is then reported for each value of
    ``by`` in ``budgets``, a frame keyed by ``by`` whose columns the budgets may name
    (``max_blocks="max_blocks"``). Blocks with ``token_count`` also give
    ``tokens_used``. ``budget_share`` is against ``max_tokens`` when it is given (and
    the blocks have ``token_count``), else ``max_characters``; with ``in_tokens`` (a
    boolean column of ``budgets``), against the one each context's row names; with
    ``counts_tokens`` (another), ``tokens_used`` is null for the contexts whose tokens
    were not counted. With ``spans`` (span judgements, ids met), also ``span_recall``
    and ``span_precision`` (:mod:`ragframe.evaluate._spans`; the blocks' offsets from
    their own columns or ``span_store``)."""
    key = [*by, c.QUERY_ID]
    tokens = c.TOKEN_COUNT in blocks.collect_schema()
    judged = qrels.select(c.QUERY_ID, c.DOC_ID, c.GAIN, pl.lit(True).alias(c.JUDGED))
    rows = (
        blocks.select(
            *key,
            c.BLOCK_RANK,
            c.ENTITY_ID,
            c.CHAR_COUNT,
            c.TRUNCATED,
            *([c.TOKEN_COUNT] if tokens else []),
        )
        .join(
            judged, left_on=[c.QUERY_ID, c.ENTITY_ID], right_on=[c.QUERY_ID, c.DOC_ID], how="left"
        )
        .with_columns(pl.col(c.GAIN).fill_null(0.0), pl.col(c.JUDGED).fill_null(False))
        .sort(*key, c.BLOCK_RANK)
    )
    per_query = _per_query(rows, key, tokens)
    counts = relevant_counts(qrels)
    judged_queries = counts.select(c.QUERY_ID)
    if by:
        contexts = (budgets if budgets is not None else per_query).select(by).unique()
        judged_queries = contexts.join(judged_queries, how="cross")
    queries = pl.concat([judged_queries, per_query.select(key)], how="vertical").unique(
        maintain_order=True
    )
    table = queries.join(counts, on=c.QUERY_ID, how="left").join(per_query, on=key, how="left")
    if budgets is not None:
        table = table.join(budgets, on=list(by), how="left")
    blocks_cap = _budget(max_blocks)
    r = pl.col(c.N_RELEVANT).fill_null(0)
    want = table.select(
        *key,
        (pl.min_horizontal(r, blocks_cap) if blocks_cap is not None else r).alias(c.T_POSITION),
    )
    ideal = want.join(ideal_dcg(qrels), on=[c.QUERY_ID, c.T_POSITION], how="left").select(
        *key, pl.col(c.T_BEST).fill_null(0.0)
    )
    table = table.join(ideal, on=key, how="left")
    if chunks is not None:
        table = table.join(duplicate_chars(blocks, chunks, by), on=key, how="left")
    if spans is not None:
        judged_chars, covered = span_metrics(blocks, spans, span_store, by)
        table = table.join(judged_chars, on=c.QUERY_ID, how="left")
        table = table.join(covered, on=key, how="left")
    used = pl.col(c.CHARS_USED).fill_null(0)
    reached = pl.col(c.T_COUNT).fill_null(0).cast(pl.Float64)

    def ratio(value: pl.Expr, total: pl.Expr) -> pl.Expr:
        return pl.when(total > 0).then(value / total).otherwise(0.0)

    none = pl.lit(None, dtype=pl.Float64)
    capped = (
        ratio(reached, pl.min_horizontal(r, blocks_cap).cast(pl.Float64))
        if blocks_cap is not None
        else none
    )
    tokens_used = pl.col(c.TOKENS_USED) if tokens else None
    budget = _share(used, tokens_used, max_characters, max_tokens, in_tokens)
    duplicates = (
        pl.col(c.DUPLICATE_CHARS).fill_null(0).cast(pl.Int64)
        if chunks is not None
        else pl.lit(None, dtype=pl.Int64)
    )
    used_or_null = pl.when(used > 0).then(used.cast(pl.Float64))
    return table.select(
        *key,
        ratio(reached, r.cast(pl.Float64)).alias(c.CONTEXT_RECALL),
        capped.alias(c.CONTEXT_RECALL_CAPPED),
        ratio(pl.col(c.T_SIM).fill_null(0.0), pl.col(c.T_BEST)).alias(c.CONTEXT_NDCG),
        pl.col(c.BLOCKS).fill_null(0),
        used.alias(c.CHARS_USED),
        budget.alias(c.BUDGET_SHARE),
        *([] if tokens_used is None else [_counted(tokens_used, counts_tokens)]),
        (pl.col(c.T_TOTAL).fill_null(0) / used_or_null).alias(c.RELEVANT_SHARE),
        *([] if spans is None else span_columns(used)),
        (pl.col(c.T_LENGTH).fill_null(0) / used_or_null).alias(c.UNJUDGED_SHARE),
        duplicates.alias(c.DUPLICATE_CHARS),
        c.FIRST_RELEVANT_RANK,
        c.FIRST_RELEVANT_OFFSET,
        pl.col(c.TRUNCATED_BLOCKS).fill_null(0),
    )


def _counted(tokens_used: pl.Expr, counts_tokens: str | None) -> pl.Expr:
    """``tokens_used``, 0 for a query without blocks where tokens are counted (every
    context of :func:`ragframe.evaluate`; a sweep's with a tokenizer), else null."""
    filled = tokens_used.fill_null(0)
    if counts_tokens is None:
        return filled.alias(c.TOKENS_USED)
    return pl.when(pl.col(counts_tokens)).then(filled).alias(c.TOKENS_USED)


def _share(
    chars: pl.Expr,
    tokens: pl.Expr | None,
    max_characters: int | str | None,
    max_tokens: int | str | None,
    in_tokens: str | None,
) -> pl.Expr:
    """``budget_share``: the characters used of the character budget, or the tokens
    used of the token budget (see :func:`context_metrics`); null without a budget."""
    none = pl.lit(None, dtype=pl.Float64)
    chars_cap, tokens_cap = _budget(max_characters), _budget(max_tokens)
    of_chars = (chars / chars_cap).cast(pl.Float64) if chars_cap is not None else none
    if tokens is None or tokens_cap is None:
        return of_chars
    of_tokens = (tokens.fill_null(0) / tokens_cap).cast(pl.Float64)
    if in_tokens is None:
        return of_tokens
    return pl.when(pl.col(in_tokens)).then(of_tokens).otherwise(of_chars)
