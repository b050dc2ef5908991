"""Context metrics on postprocess blocks (SPEC 4, "Context metrics"): what reaches the
LLM, in ``block_rank`` order, per query.

With R the number of relevant judged documents (gain > 0):

* ``context_recall``: relevant documents with at least one block / R;
  ``context_recall_capped``: the same / min(R, max_blocks) (a context of max_blocks
  blocks cannot hold more);
* ``context_ndcg``: DCG over block ranks, each document's gain counted once, at its
  first block (discount log2(block_rank + 2)), / the ideal DCG over min(R, k)
  positions, k = max_blocks when given, else the query's number of blocks;
* ``chars_used`` (sum of ``char_count``) and ``budget_share`` (/ max_characters);
* ``relevant_share``: characters of blocks of relevant documents / all characters;
  ``unjudged_share``: characters of blocks of documents without a judgement;
* ``duplicate_chars``: characters of the source documents that more than one block
  holds (from the chunk store's ``start_char``/``end_char``: each block covers its
  chunks' spans); null without offsets;
* ``first_relevant_rank`` and ``first_relevant_offset`` (characters of context before
  it); ``truncated_blocks``; ``blocks``.
"""

from __future__ import annotations

import polars as pl

from ragframe import schema as c
from ragframe.evaluate._lists import ideal_dcg, relevant_counts


def _covered(spans: pl.LazyFrame, group: list[str]) -> pl.LazyFrame:
    """Per ``group``, the length of the union of its ``[start_char, end_char)`` spans."""
    start, end = pl.col(c.START_CHAR), pl.col(c.END_CHAR)
    ordered = spans.sort([*group, c.START_CHAR])
    before = end.cum_max().shift(1).over(group)  # the furthest end among earlier spans
    new = (end - pl.max_horizontal(start, before.fill_null(start))).clip(lower_bound=0)
    return ordered.group_by(group).agg(new.sum().alias(c.T_LENGTH))


def duplicate_chars(blocks: pl.LazyFrame, chunks: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, duplicate_chars``: the characters blocks cover, less the characters
    of their documents covered at all (each repeated character counts each repeat)."""
    pieces = blocks.select(
        c.QUERY_ID,
        c.BLOCK_RANK,
        pl.col(c.ENTITY_ID).alias(c.DOC_ID),
        pl.col(c.CHUNK_INDEXES).alias(c.CHUNK_INDEX),
    ).explode(c.CHUNK_INDEX)
    offsets = chunks.select(c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR)
    spans = pieces.join(offsets, on=[c.DOC_ID, c.CHUNK_INDEX], how="inner")
    per_block = (
        _covered(spans, [c.QUERY_ID, c.BLOCK_RANK])
        .group_by(c.QUERY_ID)
        .agg(pl.col(c.T_LENGTH).sum().alias(c.T_TOTAL))
    )
    per_doc = (
        _covered(spans, [c.QUERY_ID, c.DOC_ID])
        .group_by(c.QUERY_ID)
        .agg(pl.col(c.T_LENGTH).sum().alias(c.T_CHARS))
    )
    both = per_block.join(per_doc, on=c.QUERY_ID, how="left")
    return both.select(c.QUERY_ID, (pl.col(c.T_TOTAL) - pl.col(c.T_CHARS)).alias(c.DUPLICATE_CHARS))


def context_metrics(
    blocks: pl.LazyFrame,
    qrels: pl.LazyFrame,
    *,
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """The context metrics of every query with blocks or judgements (see the module
    docstring). ``blocks`` as ``postprocess`` gives them; ``qrels`` with gains."""
    judged = qrels.select(c.QUERY_ID, c.DOC_ID, c.GAIN, pl.lit(True).alias(c.JUDGED))
    rows = (
        blocks.select(c.QUERY_ID, c.BLOCK_RANK, c.ENTITY_ID, c.CHAR_COUNT, c.TRUNCATED)
        .join(
            judged, left_on=[c.QUERY_ID, c.ENTITY_ID], right_on=[c.QUERY_ID, c.DOC_ID], how="left"
        )
        .with_columns(pl.col(c.GAIN).fill_null(0.0), pl.col(c.JUDGED).fill_null(False))
        .sort(c.QUERY_ID, c.BLOCK_RANK)
    )
    relevant = pl.col(c.GAIN) > 0
    chars = pl.col(c.CHAR_COUNT)
    first = pl.struct(c.QUERY_ID, c.ENTITY_ID).is_first_distinct()
    offset = (chars.cum_sum() - chars).over(c.QUERY_ID)
    discount = (pl.col(c.BLOCK_RANK) + 2).cast(pl.Float64).log(2)
    per_query = (
        rows.with_columns(first.alias(c.T_HEAD), offset.alias(c.T_POSITION))
        .group_by(c.QUERY_ID)
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
        )
    )
    counts = relevant_counts(qrels)
    queries = pl.concat(
        [counts.select(c.QUERY_ID), per_query.select(c.QUERY_ID)], how="vertical"
    ).unique(maintain_order=True)
    table = queries.join(counts, on=c.QUERY_ID, how="left").join(
        per_query, on=c.QUERY_ID, how="left"
    )
    k = pl.lit(max_blocks, dtype=pl.Int64) if max_blocks else pl.col(c.BLOCKS).fill_null(0)
    want = table.select(
        c.QUERY_ID,
        pl.min_horizontal(pl.col(c.N_RELEVANT).fill_null(0), k).alias(c.T_POSITION),
    )
    ideal = want.join(ideal_dcg(qrels), on=[c.QUERY_ID, c.T_POSITION], how="left").select(
        c.QUERY_ID, pl.col(c.T_BEST).fill_null(0.0)
    )
    table = table.join(ideal, on=c.QUERY_ID, how="left")
    if chunks is not None:
        table = table.join(duplicate_chars(blocks, chunks), on=c.QUERY_ID, how="left")
    r = pl.col(c.N_RELEVANT).fill_null(0)
    used = pl.col(c.CHARS_USED).fill_null(0)
    reached = pl.col(c.T_COUNT).fill_null(0).cast(pl.Float64)

    def ratio(value: pl.Expr, total: pl.Expr) -> pl.Expr:
        return pl.when(total > 0).then(value / total).otherwise(0.0)

    capped = (
        ratio(reached, pl.min_horizontal(r, max_blocks).cast(pl.Float64))
        if max_blocks
        else pl.lit(None, dtype=pl.Float64)
    )
    budget = (
        (used / max_characters).cast(pl.Float64)
        if max_characters
        else pl.lit(None, dtype=pl.Float64)
    )
    duplicates = (
        pl.col(c.DUPLICATE_CHARS).fill_null(0).cast(pl.Int64)
        if chunks is not None
        else pl.lit(None, dtype=pl.Int64)
    )
    used_or_null = pl.when(used > 0).then(used.cast(pl.Float64))
    return table.select(
        c.QUERY_ID,
        ratio(reached, r.cast(pl.Float64)).alias(c.CONTEXT_RECALL),
        capped.alias(c.CONTEXT_RECALL_CAPPED),
        ratio(pl.col(c.T_SIM).fill_null(0.0), pl.col(c.T_BEST)).alias(c.CONTEXT_NDCG),
        pl.col(c.BLOCKS).fill_null(0),
        used.alias(c.CHARS_USED),
        budget.alias(c.BUDGET_SHARE),
        (pl.col(c.T_TOTAL).fill_null(0) / used_or_null).alias(c.RELEVANT_SHARE),
        (pl.col(c.T_LENGTH).fill_null(0) / used_or_null).alias(c.UNJUDGED_SHARE),
        duplicates.alias(c.DUPLICATE_CHARS),
        c.FIRST_RELEVANT_RANK,
        c.FIRST_RELEVANT_OFFSET,
        pl.col(c.TRUNCATED_BLOCKS).fill_null(0),
    )
