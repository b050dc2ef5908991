"""``evaluate``: list and context metrics per query, every query accounted for; and
``summarize``: their means over the judged queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe._validate import first_row
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.evaluate._context import context_metrics
from ragframe.evaluate._ids import meeting
from ragframe.evaluate._inputs import budgets as checked_budgets
from ragframe.evaluate._inputs import context_blocks, cutoffs, meet_ids
from ragframe.evaluate._lists import list_metrics, relevant_counts, relevant_documents
from ragframe.evaluate._metrics import higher_is_better
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._runs import Ties, check_ties, ranking_rows, relevant_ranks
from ragframe.evaluate._span_levels import (
    Level,
    at_chunk_level,
    check_chunk_level,
    check_level,
    chunk_rows,
    span_store,
)
from ragframe.evaluate._spans import has_spans, split, store_of


def evaluate(
    qrels: Any,
    *,
    candidates: Any = None,
    blocks: Any = None,
    k: int | Sequence[int] = (10,),
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: Any = None,
    max_tokens: int | None = None,
    ties: Ties = "input",
    level: Level = "document",
) -> pl.LazyFrame:
    """Metrics per query: list metrics of the ranked ``candidates`` (documents ranked by
    their best chunk's score, see :func:`ragframe.evaluate.document_ranking`) and
    context metrics of the ``blocks`` (SPEC section 4).

    Every query of ``qrels``, ``candidates`` and ``blocks`` has a row. ``judged`` says
    whether it has judgements: a judged query without candidates or blocks scores 0;
    an unjudged one has null metrics and is not averaged (:func:`summarize` counts it).
    Ids meet as :mod:`ragframe.evaluate._ids` says: as they are when of one kind; an
    integer id matches exactly the string that writes it, and a string id that writes
    no integer plainly (``"0123"``, ``"d1"``) against integer ids is an error.

    Args:
        qrels: judgements (anything :func:`ragframe.read_qrels` reads; a frame with a
            ``gain`` column is used as it is).
        candidates: retrieved chunks (postprocess input) or a run (``query_id, doc_id,
            score``) for the list metrics.
        blocks: postprocess output for the context metrics, or fetch output (it has
            ``content``): then the content is measured, the text the LLM receives
            (``char_count`` is its length; blocks are in ``block_rank`` order, else
            ``rank`` order; a block is truncated when its strategy is
            ``truncated_fallback``; no ``duplicate_chars`` or ``tokens_used``).
        k: the cutoffs of the list metrics (``ndcg@k``, ``recall@k``, ``precision@k``,
            ``hit@k``); ``map`` and ``mrr`` use the whole ranking.
        max_blocks: the context's block budget (capped recall; the depth of
            ``context_ndcg``'s ideal, else every relevant document).
        max_characters: the context's character budget (``budget_share``).
        chunks: the chunk store with ``start_char``/``end_char``, for
            ``duplicate_chars``.
        max_tokens: the context's token budget, for blocks budgeted in tokens (they
            have ``token_count``): ``budget_share`` is then ``tokens_used / max_tokens``.
        ties: documents of equal score ranked by first appearance (``"input"``) or as
            trec_eval ranks them (``"trec_eval"``: by document id, descending, as text).
        level: what the list metrics rank: ``"document"`` (the default) or, with span
            judgements and ``chunks`` (the chunk store), ``"chunk"``: each chunk of the
            candidates (``chunk_index``) is an item, relevant when it overlaps a
            relevant span, with the best gain of those spans; ``recall@k`` and the ideal
            DCG count the relevant chunks of the store (a candidate the store lacks is
            not relevant; one without ``chunk_index`` is not ranked).

    Span judgements (``start_char``/``end_char``, SPEC 7; the rules are in
    :mod:`ragframe.evaluate._spans`): a document counts as its best span judges it in
    every document-level metric, and ``blocks`` also get ``span_recall`` and
    ``span_precision``, from the blocks' own ``start_char``/``end_char``, else their
    ``chunk_indexes`` in ``chunks``, else in the candidates when they have offsets (a
    ConfigError when none has them; null for fetch output, whose content is not the
    chunks' text). ``n_relevant`` counts relevant documents at either level.

    Returns:
        A LazyFrame, one row per query: ``query_id, n_relevant, judged``, then the list
        metrics and the context metrics asked for.

    Raises:
        ConfigError: neither ``candidates`` nor ``blocks`` is given, a bad ``k``, a
            budget that is not an integer >= 1, both budgets, a budget or ``chunks``
            without blocks (chunk level aside), ``chunks`` with fetch output, a bad
            ``ties`` or ``level``, span judgements with blocks that have no offsets.
        SchemaError: a required column is missing or has the wrong type.
        DataError: ids that cannot meet (see above), when collected.

    Example:
        >>> import polars as pl
        >>> qrels = pl.DataFrame({"query_id": [1], "doc_id": [7], "relevance": [1]})
        >>> run = pl.DataFrame({"query_id": [1, 1], "doc_id": [3, 7], "similarity": [0.9, 0.8]})
        >>> evaluate(qrels, candidates=run, k=1).collect()["mrr"].item()
        0.5
    """
    if candidates is None and blocks is None:
        raise ConfigError(
            "evaluate needs candidates (list metrics) or blocks (context metrics); got neither"
        )
    ks = cutoffs(k)
    check_ties(ties)
    check_level(level, candidates)
    budgets = checked_budgets(max_blocks, max_characters, max_tokens, blocks is not None)
    if chunks is not None and blocks is None and level == "document":
        raise ConfigError("chunks give the blocks' duplicate_chars; no blocks given")
    judged = judgements(qrels)
    spanned = has_spans(judged.columns)
    chunked = level == "chunk"
    if chunked:
        check_chunk_level(spanned, chunks)
    rows = None
    if candidates is not None:
        rows = chunk_rows(candidates) if chunked else ranking_rows(candidates, ties)
    context = context_blocks(blocks, chunks, budgets["max_tokens"]) if blocks is not None else None
    fetched = blocks is not None and c.CONTENT in c.to_lazy(blocks, "blocks").collect_schema()
    store = span_store(chunks, candidates) if spanned and (chunked or not fetched) else None
    given = [(f, n) for f, n in ((rows, c.DOC_ID), (context, c.ENTITY_ID)) if f is not None]
    judged, frames = meet_ids(judged, given, "candidates" if rows is not None else "blocks")
    if store is not None:
        doc, have = judged.schema[c.DOC_ID], store.collect_schema()[c.DOC_ID]
        store = store.with_columns(meeting(c.DOC_ID, doc, have, "chunks", "the qrels' doc_id"))
    judged, spans = split(judged)
    parts: list[pl.LazyFrame] = []
    ids: list[pl.LazyFrame] = []
    if rows is not None:
        rows = frames.pop(0)
        relevant = relevant_documents(judged)
        if chunked:
            rows, relevant = at_chunk_level(rows, spans, store, ties)
        found = relevant_ranks(rows, relevant)
        list_qrels = relevant.lazy() if chunked else judged.lazy()
        parts.append(list_metrics(found, list_qrels, ks).drop(c.N_RELEVANT))
        ids.append(found.select(c.QUERY_ID))
    if context is not None:
        context = frames.pop(0)
        parts.append(
            context_metrics(
                context,
                judged.lazy(),
                max_blocks=budgets["max_blocks"],
                max_characters=budgets["max_characters"],
                max_tokens=budgets["max_tokens"],
                chunks=None if chunks is None else _store(chunks),
                spans=None if spans is None or fetched else spans.lazy(),
                span_store=store,
            )
        )
        if spans is not None and fetched:
            parts[-1] = parts[-1].with_columns(
                pl.lit(None, dtype=pl.Float64).alias(n) for n in (c.SPAN_RECALL, c.SPAN_PRECISION)
            )
        ids.append(context.select(c.QUERY_ID))
    counts = relevant_counts(judged.lazy()).with_columns(pl.lit(True).alias(c.JUDGED))
    everyone = pl.concat([counts.select(c.QUERY_ID), *ids], how="vertical").unique(
        maintain_order=True
    )
    table_out = everyone.join(counts, on=c.QUERY_ID, how="left").with_columns(
        pl.col(c.JUDGED).fill_null(False)
    )
    for part in parts:
        table_out = table_out.join(part, on=c.QUERY_ID, how="left")
    return scored(table_out, [c.QUERY_ID])


def scored(table: pl.LazyFrame, key: Sequence[str]) -> pl.LazyFrame:
    """Every metric of ``table`` (``judged`` says which queries have judgements): a
    judged query without candidates or blocks scores 0, an unjudged one null; rows
    sorted by ``key``."""
    fixed = (*key, c.JUDGED, c.N_RELEVANT)
    metrics = [n for n in table.collect_schema() if n not in fixed]

    def value(name: str) -> pl.Expr:
        got = pl.col(name) if name in _NULLABLE else pl.col(name).fill_null(0)
        return pl.when(pl.col(c.JUDGED)).then(got).alias(name)

    return table.with_columns(value(n) for n in metrics).sort(key)


def evaluate_contexts(
    blocks: pl.LazyFrame, qrels: pl.DataFrame, settings: pl.DataFrame, chunks: Any
) -> pl.DataFrame:
    """The context metrics of many contexts of the same queries at once (a sweep's):
    ``blocks`` has a ``config`` column, ``settings`` one row per config with its
    ``max_blocks``, ``max_characters`` and ``max_tokens``, whether it is budgeted in
    tokens (:data:`IN_TOKENS`) and counts them (:data:`COUNTS_TOKENS`). Every judged
    query is reported for every config, as :func:`evaluate` reports it."""
    judged, (met_blocks,) = meet_ids(qrels, [(blocks, c.ENTITY_ID)], "candidates")
    judged, spans = split(judged)
    aligned = judged.lazy()
    by = [c.CONFIG]
    names = ["max_blocks", "max_characters", "max_tokens", IN_TOKENS, COUNTS_TOKENS]
    budgets = settings.lazy().select(c.CONFIG, *names)
    table = context_metrics(
        met_blocks,
        aligned,
        max_blocks="max_blocks",
        max_characters="max_characters",
        max_tokens="max_tokens",
        in_tokens=IN_TOKENS,
        counts_tokens=COUNTS_TOKENS,
        chunks=None if chunks is None else _store(chunks),
        by=by,
        budgets=budgets,
        spans=None if spans is None else spans.lazy(),
        span_store=None if spans is None or chunks is None else store_of(chunks),
    )
    counts = relevant_counts(aligned).with_columns(pl.lit(True).alias(c.JUDGED))
    table = table.join(counts, on=c.QUERY_ID, how="left").with_columns(
        pl.col(c.JUDGED).fill_null(False)
    )
    head = [c.CONFIG, c.QUERY_ID, c.N_RELEVANT, c.JUDGED]  # as evaluate orders them
    ordered = table.select(*head, pl.exclude(head))
    return scored(ordered, [c.CONFIG, c.QUERY_ID]).collect()


IN_TOKENS, COUNTS_TOKENS = c.TMP + "in_tokens", c.TMP + "counts_tokens"
"""A sweep's settings: whether a configuration's budget counts tokens, and whether its
blocks have token counts (a tokenizer)."""


def _store(chunks: Any) -> pl.LazyFrame:
    """The chunk store's offsets, ``doc_id`` named so (``entity_id`` accepted)."""
    store = c.to_lazy(chunks, "chunks")
    names = store.collect_schema()
    if c.ENTITY_ID in names and c.DOC_ID not in names:
        store = store.rename({c.ENTITY_ID: c.DOC_ID})
    needed = [c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR]
    c.require_columns(store.collect_schema(), needed, "chunks")
    return store


_NULLABLE = {
    c.TOKENS_USED,
    c.CONTEXT_RECALL_CAPPED,
    c.BUDGET_SHARE,
    c.RELEVANT_SHARE,
    c.UNJUDGED_SHARE,
    c.DUPLICATE_CHARS,
    c.FIRST_RELEVANT_RANK,
    c.FIRST_RELEVANT_OFFSET,
    c.SPAN_PRECISION,
}
"""Metrics that stay null where undefined (no budget given, no characters, no relevant
block) rather than 0."""


def summarize(per_query: Any) -> pl.DataFrame:
    """One row: ``queries``, ``judged``, ``unjudged``, and each metric's mean over the
    judged queries (as :func:`evaluate` gives them; a column that is not a metric,
    :mod:`ragframe.evaluate._metrics`, is not averaged).

    Raises:
        SchemaError: ``per_query`` lacks ``query_id`` or a boolean ``judged``, or holds
            several configurations of a sweep (its ``config`` column).
        DataError: a query has more than one row.
    """
    frame = c.to_lazy(per_query, "per_query").collect()
    c.require_columns(frame.schema, [c.QUERY_ID, c.JUDGED], "per_query")
    c.require_kind(frame.schema, c.JUDGED, ["bool"], "per_query")
    if c.CONFIG in frame.columns and frame[c.CONFIG].n_unique() > 1:
        raise SchemaError(
            "per_query holds several configurations of a sweep (its config column); "
            "summarize one configuration's rows, or read the sweep's summary"
        )
    repeated = frame[c.QUERY_ID].is_duplicated()
    if (first := first_row(repeated)) is not None:
        raise DataError(
            f"per_query: {int(repeated.sum())} rows share a query_id; first: row {first}: "
            f"{frame[c.QUERY_ID][first]!r}; expected one row per query (evaluate's output)"
        )
    metrics = [
        n
        for n, dt in frame.schema.items()
        if (dt.is_numeric() or dt == pl.Null) and higher_is_better(n) is not None
    ]
    judged = frame.filter(pl.col(c.JUDGED).fill_null(False))
    counts = {
        "queries": frame.height,
        "judged": judged.height,
        "unjudged": frame.height - judged.height,
    }
    means = judged.select(pl.col(metrics).cast(pl.Float64).mean()) if metrics else pl.DataFrame()
    return pl.DataFrame(counts).hstack(means) if means.width else pl.DataFrame(counts)
