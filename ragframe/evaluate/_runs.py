"""Runs (SPEC 4, "List metrics"): the document ranking of retrieved chunks, ties by
first appearance or as trec_eval breaks them, and the ranks of the judged documents.
Run files in and out: :mod:`._runfiles`."""

from __future__ import annotations

from functools import partial
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.evaluate._ids import check_kind

Ties = Literal["input", "trec_eval"]
"""How documents of equal score are ranked: by first appearance in the input (the
default, as ranx and postprocess rank), or as trec_eval ranks them: by document id,
descending, compared as text byte by byte (``"d9"`` before ``"d10"``; integer ids by
their decimal text, as trec_eval reads them)."""
TIES = ("input", "trec_eval")


def check_ties(ties: object) -> Ties:
    """``ties`` when it is one of :data:`TIES`, else a :class:`ConfigError`."""
    if not isinstance(ties, str) or ties not in TIES:
        raise ConfigError(f"ties must be 'input' or 'trec_eval', got {ties!r}")
    return ties  # type: ignore[return-value]


def document_ranking(candidates: Any, *, ties: Ties = "input") -> pl.LazyFrame:
    """Each query's documents ranked: ``query_id, doc_id, score, rank`` (1-based).

    ``candidates`` are retrieved chunks (postprocess input: ``query_id``, ``entity_id``
    or ``doc_id``, ``similarity``, optional ``rerank_score``) or a run (``query_id``,
    ``doc_id``, ``score``). A document's score is its best chunk's ranking score
    (``rerank_score`` when not null, else ``similarity``; null as 0.0), never the last
    chunk's; documents are ranked by score, descending (NaN above every number), ties
    by first appearance in the input, or with ``ties="trec_eval"`` by document id,
    descending, as trec_eval breaks them (:data:`Ties`). Rows without a document are
    not ranked. Rows come in query order (nulls first), then rank order.

    Example:
        >>> import polars as pl
        >>> run = pl.DataFrame(
        ...     {"query_id": [1, 1, 1], "doc_id": [7, 3, 7], "similarity": [0.2, 0.5, 0.9]}
        ... )
        >>> document_ranking(run).collect().rows()
        [(1, 7, 0.9, 1), (1, 3, 0.5, 2)]
    """
    rows = ranking_rows(candidates, check_ties(ties))
    schema = rows.collect_schema()
    out = pl.Schema({**schema, c.RANK: pl.Int64()})
    return rows.map_batches(_ranked, schema=out)


def ranking_rows(candidates: Any, ties: Ties = "input") -> pl.LazyFrame:
    """The rows a ranking is made of, checked: ``query_id, doc_id, score`` (the ranking
    score, null as 0.0) of the rows with a document, in input order; with
    ``ties="trec_eval"``, grouped by query and, within one, by document id descending
    (as text), so that first appearance is trec_eval's tie order (a document's best
    score does not depend on the order of its rows)."""
    lf = c.to_lazy(candidates, "candidates")
    schema = lf.collect_schema()
    doc = c.ENTITY_ID if c.ENTITY_ID in schema and c.DOC_ID not in schema else c.DOC_ID
    c.require_columns(schema, [c.QUERY_ID, doc], "candidates")
    for name in (c.QUERY_ID, doc):
        check_kind(schema, name, "candidates")
    if c.SCORE in schema:
        names = [c.SCORE]
        score = pl.col(c.SCORE)
    else:
        c.require_columns(schema, [c.SIMILARITY], "candidates")
        names, score = [c.SIMILARITY], pl.col(c.SIMILARITY)
        if c.RERANK_SCORE in schema:
            names.append(c.RERANK_SCORE)
            score = pl.coalesce(c.RERANK_SCORE, c.SIMILARITY)
    for name in names:
        c.require_kind(schema, name, ["int", "float"], "candidates")
    rows = lf.select(
        c.QUERY_ID,
        pl.col(doc).alias(c.DOC_ID),
        score.cast(pl.Float64).fill_null(0.0).alias(c.SCORE),
    ).filter(pl.col(c.DOC_ID).is_not_null())
    if ties == "trec_eval":
        text = pl.col(c.DOC_ID).cast(pl.String)
        rows = rows.sort([pl.col(c.QUERY_ID), text], descending=[False, True], maintain_order=True)
    return rows


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
