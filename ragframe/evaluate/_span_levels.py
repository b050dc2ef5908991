"""Span judgements in :func:`ragframe.evaluate` (SPEC 7): where the blocks' offsets come
from, and the list metrics at chunk level (``level="chunk"``: a chunk is relevant when
it overlaps a relevant span)."""

from __future__ import annotations

from typing import Any, Literal

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.evaluate._ids import check_kind
from ragframe.evaluate._runs import Ties, ranking_rows
from ragframe.evaluate._spans import SPAN_COLUMNS, chunk_judgements, chunk_key, store_of

Level = Literal["document", "chunk"]
"""What the list metrics rank: documents (by their best chunk, the default) or the
chunks themselves (span judgements and a chunk store needed)."""
LEVELS = ("document", "chunk")


def check_level(level: object, candidates: Any) -> None:
    """Raise :class:`ConfigError` unless ``level`` is one of :data:`LEVELS` (chunk level
    only with candidates)."""
    if not isinstance(level, str) or level not in LEVELS:
        raise ConfigError(f"level must be 'document' or 'chunk', got {level!r}")
    if level == "chunk" and candidates is None:
        raise ConfigError(
            "level='chunk' ranks the candidates' chunks (list metrics); no candidates given"
        )


def check_chunk_level(spanned: bool, chunks: Any) -> None:
    """Chunk level needs span judgements and the chunk store (its relevant chunks are
    the ones judged)."""
    if not spanned:
        raise ConfigError(
            "level='chunk': a chunk is relevant when it overlaps a relevant span; the qrels "
            "have no spans (start_char, end_char); expected span judgements"
        )
    if chunks is None:
        raise ConfigError(
            "level='chunk' needs the chunk store (chunks=: doc_id, chunk_index, start_char, "
            "end_char): its chunks that overlap a relevant span are the relevant ones judged"
        )


def span_store(chunks: Any, candidates: Any) -> pl.LazyFrame | None:
    """Where the blocks' chunks find their offsets: the chunk store, else the
    candidates when they have ``chunk_index``, ``start_char`` and ``end_char``, else
    none (blocks with their own offsets need none)."""
    if chunks is not None:
        return store_of(chunks)
    if candidates is None:
        return None
    lf = c.to_lazy(candidates, "candidates")
    if all(n in lf.collect_schema() for n in (c.CHUNK_INDEX, *SPAN_COLUMNS)):
        return store_of(lf)
    return None


def chunk_rows(candidates: Any) -> pl.LazyFrame:
    """The candidates a chunk-level ranking is made of: ``query_id, doc_id,
    chunk_index`` and their scores (as :func:`ranking_rows` reads them)."""
    lf = c.to_lazy(candidates, "candidates")
    schema = lf.collect_schema()
    doc = c.ENTITY_ID if c.ENTITY_ID in schema and c.DOC_ID not in schema else c.DOC_ID
    c.require_columns(schema, [c.QUERY_ID, doc, c.CHUNK_INDEX], "candidates (level='chunk')")
    for name in (c.QUERY_ID, doc):
        check_kind(schema, name, "candidates")
    c.require_kind(schema, c.CHUNK_INDEX, ["int"], "candidates")
    scores = [n for n in (c.SCORE, c.SIMILARITY, c.RERANK_SCORE) if n in schema]
    return lf.select(c.QUERY_ID, pl.col(doc).alias(c.DOC_ID), c.CHUNK_INDEX, *scores)


def at_chunk_level(
    rows: pl.LazyFrame, spans: pl.DataFrame | None, store: pl.LazyFrame | None, ties: Ties
) -> tuple[pl.LazyFrame, pl.DataFrame]:
    """The ranking rows with each chunk as the ranked item (its id: :func:`chunk_key`),
    and the relevant chunks (``query_id, doc_id, gain``, ids so written)."""
    if spans is None or store is None:  # checked before: see check_chunk_level
        raise ConfigError("level='chunk' needs span judgements and the chunk store")
    keyed = rows.with_columns(chunk_key(c.DOC_ID, c.CHUNK_INDEX).alias(c.DOC_ID))
    ranked = ranking_rows(keyed.drop(c.CHUNK_INDEX), ties)
    relevant = chunk_judgements(spans, store).select(
        c.QUERY_ID, chunk_key(c.DOC_ID, c.CHUNK_INDEX).alias(c.DOC_ID), c.GAIN
    )
    return ranked, relevant.collect()
