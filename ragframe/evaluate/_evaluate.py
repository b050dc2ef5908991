"""``evaluate``: list and context metrics per query, every query accounted for; and
``summarize``: their means over the judged queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, SchemaError
from ragframe.evaluate._context import context_metrics
from ragframe.evaluate._lists import list_metrics, relevant_counts, relevant_documents
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._runs import ranking_rows, relevant_ranks


def _aligned(qrels: pl.DataFrame, query: pl.DataType, doc: pl.DataType | None) -> pl.DataFrame:
    """The qrels with ids cast to the evaluated frame's id types (integers and strings
    meet as strings)."""
    casts = []
    for name, dtype in ((c.QUERY_ID, query), (c.DOC_ID, doc)):
        if dtype is None or qrels.schema[name] == dtype:
            continue
        if dtype.is_integer() and qrels.schema[name].is_integer():
            casts.append(pl.col(name).cast(dtype))
        elif dtype == pl.String:
            casts.append(pl.col(name).cast(pl.String))
        else:
            raise SchemaError(
                f"qrels: column '{name}' has type {qrels.schema[name]} but the evaluated "
                f"frame's has {dtype}; expected the same kind (integers or strings)"
            )
    return qrels.with_columns(casts)


def _ks(k: int | Sequence[int]) -> list[int]:
    ks = [k] if isinstance(k, int) else list(k)
    if not ks or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in ks):
        raise ConfigError(f"k must be a positive integer or a list of them, got {k!r}")
    return sorted(set(ks))


def evaluate(
    qrels: Any,
    *,
    candidates: Any = None,
    blocks: Any = None,
    k: int | Sequence[int] = (10,),
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: Any = None,
) -> pl.LazyFrame:
    """Metrics per query: list metrics of the ranked ``candidates`` (documents ranked by
    their best chunk's score, see :func:`ragframe.evaluate.document_ranking`) and
    context metrics of the postprocess ``blocks`` (SPEC section 4).

    Every query of ``qrels``, ``candidates`` and ``blocks`` has a row. ``judged`` says
    whether it has judgements: a judged query without candidates or blocks scores 0;
    an unjudged one has null metrics and is not averaged (:func:`summarize` counts it).

    Args:
        qrels: judgements (anything :func:`ragframe.read_qrels` reads; a frame with a
            ``gain`` column is used as it is).
        candidates: retrieved chunks (postprocess input) or a run (``query_id, doc_id,
            score``) for the list metrics.
        blocks: postprocess output for the context metrics.
        k: the cutoffs of the list metrics (``ndcg@k``, ``recall@k``, ``precision@k``,
            ``hit@k``); ``map`` and ``mrr`` use the whole ranking.
        max_blocks: the context's block budget (capped recall, context nDCG depth).
        max_characters: the context's character budget (``budget_share``).
        chunks: the chunk store with ``start_char``/``end_char``, for
            ``duplicate_chars``.

    Returns:
        A LazyFrame, one row per query: ``query_id, n_relevant, judged``, then the list
        metrics and the context metrics asked for.

    Raises:
        ConfigError: neither ``candidates`` nor ``blocks`` is given, or a bad ``k``.
        SchemaError: a required column is missing or has the wrong type.

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
    ks = _ks(k)
    judged = judgements(qrels)
    parts: list[pl.LazyFrame] = []
    ids: list[pl.LazyFrame] = []
    if candidates is not None:
        rows = ranking_rows(candidates)
        schema = rows.collect_schema()
        aligned = _aligned(judged, schema[c.QUERY_ID], schema[c.DOC_ID])
        found = relevant_ranks(rows, relevant_documents(aligned))
        parts.append(list_metrics(found, aligned.lazy(), ks).drop(c.N_RELEVANT))
        ids.append(found.select(c.QUERY_ID))
    if blocks is not None:
        lf = c.to_lazy(blocks, "blocks")
        schema = lf.collect_schema()
        needed = [c.QUERY_ID, c.BLOCK_RANK, c.ENTITY_ID, c.CHAR_COUNT, c.TRUNCATED]
        c.require_columns(schema, needed, "blocks")
        aligned = _aligned(judged, schema[c.QUERY_ID], schema[c.ENTITY_ID])
        store = None if chunks is None else _store(chunks)
        parts.append(
            context_metrics(
                lf,
                aligned.lazy(),
                max_blocks=max_blocks,
                max_characters=max_characters,
                chunks=store,
            )
        )
        ids.append(lf.select(c.QUERY_ID))
    query_type = ids[0].collect_schema()[c.QUERY_ID]
    counts = relevant_counts(_aligned(judged, query_type, None).lazy()).with_columns(
        pl.lit(True).alias(c.JUDGED)
    )
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
    ``max_blocks`` and ``max_characters``. Every judged query is reported for every
    config, as :func:`evaluate` reports it."""
    schema = blocks.collect_schema()
    aligned = _aligned(qrels, schema[c.QUERY_ID], schema[c.ENTITY_ID]).lazy()
    by = [c.CONFIG]
    budgets = settings.lazy().select(c.CONFIG, "max_blocks", "max_characters")
    table = context_metrics(
        blocks,
        aligned,
        max_blocks="max_blocks",
        max_characters="max_characters",
        chunks=None if chunks is None else _store(chunks),
        by=by,
        budgets=budgets,
    )
    counts = relevant_counts(aligned).with_columns(pl.lit(True).alias(c.JUDGED))
    table = table.join(counts, on=c.QUERY_ID, how="left").with_columns(
        pl.col(c.JUDGED).fill_null(False)
    )
    head = [c.CONFIG, c.QUERY_ID, c.N_RELEVANT, c.JUDGED]  # as evaluate orders them
    ordered = table.select(*head, pl.exclude(head))
    return scored(ordered, [c.CONFIG, c.QUERY_ID]).collect()


def _store(chunks: Any) -> pl.LazyFrame:
    """The chunk store's offsets, ``doc_id`` named so (``entity_id`` accepted)."""
    store = c.to_lazy(chunks, "chunks")
    names = store.collect_schema()
    if c.ENTITY_ID in names and c.DOC_ID not in names:
        store = store.rename({c.ENTITY_ID: c.DOC_ID})
    c.require_columns(store.collect_schema(), [c.DOC_ID, c.START_CHAR, c.END_CHAR], "chunks")
    return store


_NULLABLE = {
    c.CONTEXT_RECALL_CAPPED,
    c.BUDGET_SHARE,
    c.RELEVANT_SHARE,
    c.UNJUDGED_SHARE,
    c.DUPLICATE_CHARS,
    c.FIRST_RELEVANT_RANK,
    c.FIRST_RELEVANT_OFFSET,
}
"""Metrics that stay null where undefined (no budget given, no characters, no relevant
block) rather than 0."""


def summarize(per_query: Any) -> pl.DataFrame:
    """One row: ``queries``, ``judged``, ``unjudged``, and each metric's mean over the
    judged queries (as :func:`evaluate` gives them)."""
    frame = c.to_lazy(per_query, "per_query").collect()
    c.require_columns(frame.schema, [c.QUERY_ID, c.JUDGED], "per_query")
    skip = (c.QUERY_ID, c.N_RELEVANT)
    metrics = [n for n, dt in frame.schema.items() if dt.is_numeric() and n not in skip]
    judged = frame.filter(pl.col(c.JUDGED))
    counts = {
        "queries": frame.height,
        "judged": judged.height,
        "unjudged": frame.height - judged.height,
    }
    means = judged.select(pl.col(metrics).cast(pl.Float64).mean()) if metrics else pl.DataFrame()
    return pl.DataFrame(counts).hstack(means) if means.width else pl.DataFrame(counts)
