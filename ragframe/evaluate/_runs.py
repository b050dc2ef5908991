"""Runs (SPEC 4, "List metrics"): the document ranking of retrieved chunks, and TREC run
files in and out (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

import os
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
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
    chunk's; documents are ranked by score, descending (NaN above every number), ties
    by first appearance in the input. Rows without a document are not ranked. Rows
    come in query order (nulls first), then rank order.

    Example:
        >>> import polars as pl
        >>> run = pl.DataFrame(
        ...     {"query_id": [1, 1, 1], "doc_id": [7, 3, 7], "similarity": [0.2, 0.5, 0.9]}
        ... )
        >>> document_ranking(run).collect().rows()
        [(1, 7, 0.9, 1), (1, 3, 0.5, 2)]
    """
    rows = ranking_rows(candidates)
    schema = rows.collect_schema()
    out = pl.Schema({**schema, c.RANK: pl.Int64()})
    return rows.map_batches(_ranked, schema=out)


def ranking_rows(candidates: Any) -> pl.LazyFrame:
    """The rows a ranking is made of, checked: ``query_id, doc_id, score`` (the ranking
    score, null as 0.0) of the rows with a document, in input order."""
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
    )
    return rows.filter(pl.col(c.DOC_ID).is_not_null())


def relevant_ranks(
    rows: pl.LazyFrame, relevant: pl.DataFrame, *, count_up_to: int | None = None
) -> pl.LazyFrame:
    """``query_id, rank, gain, __rf_position``: each document of ``relevant``
    (``query_id, doc_id, gain``, ids of the types of ``rows``, :func:`ranking_rows`)
    that its query retrieved, at its rank in :func:`document_ranking`, and its place
    among those its query retrieved (1-based, by rank; a document judged twice is
    there twice, as a join has it); a row with null rank, gain and place for a query
    that retrieved none of them, so that every ranked query is there. Rows come in
    query then rank order. Nothing else of the ranking is built (``count_up_to``: see
    :data:`ragframe.evaluate._ranking.COUNT_UP_TO`, the default)."""
    wanted = relevant.filter(pl.col(c.QUERY_ID).is_not_null() & pl.col(c.DOC_ID).is_not_null())
    query = rows.collect_schema()[c.QUERY_ID]
    types = {c.QUERY_ID: query, c.RANK: pl.Int64(), c.GAIN: pl.Float64(), c.T_POSITION: pl.Int64()}
    schema = pl.Schema(types)
    from ragframe.evaluate._ranking import COUNT_UP_TO  # numba: at first use, not for --help

    limit = COUNT_UP_TO if count_up_to is None else count_up_to
    kernel = partial(_found, relevant=wanted, count_up_to=limit)
    return rows.map_batches(kernel, schema=schema)


def _grouped(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` sorted by query, stably (within a query, rows keep their input order:
    the tie rule's "first"); left as it is when already sorted (no sort's gathers)."""
    if frame[c.QUERY_ID].is_sorted():
        return frame
    return frame.sort(c.QUERY_ID, maintain_order=True)


def _starts(query: pl.Series) -> npt.NDArray[np.int64]:
    """Where each run of equal ``query`` values begins, and the length at the end."""
    if not query.len():
        return np.zeros(1, np.int64)
    if query.dtype.is_integer() and not query.null_count():
        values = query.to_numpy()  # numpy compares without building a mask Series
        begins = np.flatnonzero(values[1:] != values[:-1]) + 1
    else:
        begins = np.flatnonzero(query.ne_missing(query.shift()).to_numpy()[1:]) + 1
    return np.concatenate([[0], begins, [query.len()]]).astype(np.int64)


def _keys(*docs: pl.Series) -> list[npt.NDArray[np.int64]]:
    """Document ids as ``Int64`` keys, equal exactly when the ids are, across all of
    ``docs`` (one type): an integer id itself (a ``UInt64``'s bits), any other its
    dense rank among them all."""
    if docs[0].dtype == pl.UInt64:
        return [d.reinterpret(signed=True).to_numpy() for d in docs]
    if docs[0].dtype.is_integer():
        return [d.cast(pl.Int64).to_numpy() for d in docs]
    ranks = pl.concat(docs).rank("dense").cast(pl.Int64).to_numpy()
    bounds = np.cumsum([0, *(d.len() for d in docs)])
    return [ranks[a:b] for a, b in pairwise(bounds)]


def _ranked(frame: pl.DataFrame) -> pl.DataFrame:
    """:func:`document_ranking` of :func:`ranking_rows`' rows."""
    frame = _grouped(frame)
    (key,) = _keys(frame[c.DOC_ID])
    starts = _starts(frame[c.QUERY_ID])
    from ragframe.evaluate._ranking import rank_documents  # numba: at first use

    rows, best, rank = rank_documents(starts, key, frame[c.SCORE].to_numpy())
    taken: pl.DataFrame = frame.select(c.QUERY_ID, c.DOC_ID)[rows]
    return taken.with_columns(pl.Series(c.SCORE, best), pl.Series(c.RANK, rank))


def _found(frame: pl.DataFrame, relevant: pl.DataFrame, count_up_to: int) -> pl.DataFrame:
    """:func:`relevant_ranks` of :func:`ranking_rows`' rows."""
    from ragframe.evaluate._ranking import relevant_ranks as relevant_ranks_kernel  # numba

    frame = _grouped(frame)
    starts = _starts(frame[c.QUERY_ID])
    heads = frame[c.QUERY_ID].gather(starts[:-1])
    segments = heads.to_frame().with_row_index(c.T_POSITION)
    # each wanted document beside its query's place among the ranked queries, in order
    wanted = relevant.join(segments, on=c.QUERY_ID, maintain_order="left").sort(
        c.T_POSITION, maintain_order=True
    )
    places = wanted[c.T_POSITION].to_numpy()
    bounds = np.searchsorted(places, np.arange(heads.len() + 1)).astype(np.int64)
    key, wanted_key = _keys(frame[c.DOC_ID], wanted[c.DOC_ID])
    query, rank, place, entry = relevant_ranks_kernel(
        starts, key, frame[c.SCORE].to_numpy(), bounds, wanted_key, count_up_to
    )
    found = pl.DataFrame({c.RANK: rank, c.T_POSITION: place, c.T_ROW: entry})
    found = found.select(pl.all().replace(-1, None))  # -1: the row of a query that found none
    return found.select(
        heads.gather(query).alias(c.QUERY_ID),
        c.RANK,
        wanted[c.GAIN].cast(pl.Float64).gather(found[c.T_ROW]).alias(c.GAIN),
        c.T_POSITION,
    )


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
