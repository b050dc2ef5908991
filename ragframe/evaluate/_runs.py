"""Runs (SPEC 4, "List metrics"): the document ranking of retrieved chunks, and TREC run
files in and out (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import RagframeError
from ragframe.evaluate._qrels import typed_ids, whitespace_fields
from ragframe.io import write_atomically


def document_ranking(candidates: Any) -> pl.LazyFrame:
    """Each query's documents ranked: ``query_id, doc_id, score, rank`` (1-based).

    ``candidates`` are retrieved chunks (postprocess input: ``query_id``, ``entity_id``
    or ``doc_id``, ``similarity``, optional ``rerank_score``) or a run (``query_id``,
    ``doc_id``, ``score``). A document's score is its best chunk's ranking score
    (``rerank_score`` when not null, else ``similarity``; null as 0.0), never the last
    chunk's; documents are ranked by score, descending, ties by first appearance in
    the input. Rows without a document are not ranked.
    """
    lf = c.to_lazy(candidates, "candidates")
    schema = lf.collect_schema()
    doc = c.ENTITY_ID if c.ENTITY_ID in schema and c.DOC_ID not in schema else c.DOC_ID
    c.require_columns(schema, [c.QUERY_ID, doc], "candidates")
    if c.SCORE in schema:
        score = pl.col(c.SCORE)
    else:
        c.require_columns(schema, [c.SIMILARITY], "candidates")
        score = pl.col(c.SIMILARITY)
        if c.RERANK_SCORE in schema:
            score = pl.coalesce(c.RERANK_SCORE, c.SIMILARITY)
    rows = lf.select(
        c.QUERY_ID,
        pl.col(doc).alias(c.DOC_ID),
        score.cast(pl.Float64).fill_null(0.0).alias(c.SCORE),
    ).with_row_index(c.T_ROW)
    docs = (
        rows.filter(pl.col(c.DOC_ID).is_not_null())
        .group_by(c.QUERY_ID, c.DOC_ID)
        .agg(pl.col(c.SCORE).max(), pl.col(c.T_ROW).min())
        .sort([c.QUERY_ID, c.SCORE, c.T_ROW], descending=[False, True, False])
        .drop(c.T_ROW)
        .with_row_index(c.T_POSITION)
    )
    # a row's place in its query: its row number less its query's first (no window sort)
    first = pl.col(c.T_POSITION).min().over(c.QUERY_ID)
    rank = (pl.col(c.T_POSITION) - first + 1).cast(pl.Int64)
    return docs.with_columns(rank.alias(c.RANK)).drop(c.T_POSITION)


def read_run(path: str | os.PathLike[str]) -> pl.DataFrame:
    """A TREC run file as ``query_id, doc_id, rank, score, tag`` (ids integers when
    they all are, else strings), in file order.

    Raises:
        RagframeError: the file is missing or a line is not ``qid Q0 docid rank score tag``.
    """
    path = Path(path)
    if not path.is_file():
        raise RagframeError(f"run not found: {os.fspath(path)}")
    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    frame = whitespace_fields(path, names)
    typed = frame.select(
        "line_number",
        pl.col("qid").alias(c.QUERY_ID),
        pl.col("docid").alias(c.DOC_ID),
        pl.col("rank").cast(pl.Int64, strict=False).alias(c.RANK),
        pl.col("score").cast(pl.Float64, strict=False).alias(c.SCORE),
        pl.col("tag"),
    )
    bad = typed.filter(pl.col(c.RANK).is_null() | pl.col(c.SCORE).is_null())
    if bad.height:
        raise RagframeError(
            f"{os.fspath(path)}, line {bad['line_number'][0]}: rank must be an integer and "
            f"score a number ({bad.height} such lines)"
        )
    return typed_ids(typed.drop("line_number"))


def write_run(run: Any, path: str | os.PathLike[str], *, tag: str = "ragframe") -> None:
    """Write a ranking (``query_id, doc_id, rank, score``, e.g. :func:`document_ranking`)
    as a TREC run file, atomically.

    Raises:
        RagframeError: the destination cannot be written.
    """
    frame = c.to_lazy(run, "run").collect()
    c.require_columns(frame.schema, [c.QUERY_ID, c.DOC_ID, c.RANK, c.SCORE], "run")
    table = frame.select(
        c.QUERY_ID, pl.lit("Q0").alias("q0"), c.DOC_ID, c.RANK, c.SCORE, pl.lit(tag).alias("tag")
    )
    write_atomically(
        path,
        lambda tmp: table.write_csv(tmp, separator=" ", include_header=False, quote_style="never"),
    )
