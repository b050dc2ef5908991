"""Runs (SPEC 4, "List metrics"): the document ranking of retrieved chunks (ties by
first appearance, or as trec_eval breaks them), and runs in and out: one reader for
every source (TREC run files ``qid Q0 docid rank score tag``, tables, frames), and a
writer that writes only what the reader reads back."""

from __future__ import annotations

import os
from functools import partial
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe._validate import plural
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.evaluate import _files
from ragframe.evaluate._ids import IdMode, check_kind, parsed

Ties = Literal["input", "trec_eval"]
"""How documents of equal score are ranked: by first appearance in the input (the
default, as ranx and postprocess rank), or as trec_eval ranks them: by document id,
descending, compared as text byte by byte (``"d9"`` before ``"d10"``; integer ids by
their decimal text, as trec_eval reads them)."""
TIES = ("input", "trec_eval")
RUN_FIELDS = ["qid", "q0", "docid", "rank", "score", "tag"]
_WHITESPACE = r"[\s]"


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


def scan_run(source: Any, *, ids: IdMode = "as_written") -> pl.LazyFrame:
    """A run (or retrieved chunks) to rank, lazily: a frame as it is, or what
    :func:`read_run` reads from a path (a table is scanned, not read)."""
    if not isinstance(source, str | os.PathLike):
        if not isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
            raise SchemaError(
                "run must be a path (a file, glob, folder or '-') or a polars DataFrame/"
                f"LazyFrame or pyarrow Table, got {type(source).__name__}"
            )
        return _parsed_ids(c.to_lazy(source, "run"), ids, "run")
    found = _files.locate(source, "run", split=None, beir=False)
    if found.kind == "trec":
        return _trec_run(found, ids).lazy()
    strings = [c.QUERY_ID, c.DOC_ID, c.ENTITY_ID]
    return _parsed_ids(io.scan_table(found.given, strings=strings), ids, f"run {found.given}")


def _parsed_ids(lf: pl.LazyFrame, ids: IdMode, what: str) -> pl.LazyFrame:
    if ids == "as_written":
        return lf
    names = [n for n, t in lf.collect_schema().items() if n in _ID_NAMES and t == pl.String]

    def parse(values: pl.Series) -> pl.Series:
        return parsed(values, what, lambda row: f"row {row}")

    return lf.with_columns(pl.col(n).map_batches(parse, return_dtype=pl.Int64) for n in names)


_ID_NAMES = (c.QUERY_ID, c.DOC_ID, c.ENTITY_ID)


def read_run(source: Any, *, ids: IdMode = "as_written") -> pl.DataFrame:
    """A run as a frame, in source order.

    ``source`` is a path (a file, glob, folder or ``-``, read as
    :mod:`ragframe.evaluate._files` says) or a frame. A TREC run file (``qid Q0 docid
    rank score tag``, six fields a line, whitespace-separated) gives ``query_id,
    doc_id, rank, score, tag``; a table (Parquet, Arrow, CSV, JSON lines) its own
    columns, every one kept (``query_id``, ``doc_id`` or ``entity_id``, and ``score``
    or ``similarity`` are needed to rank it). Ids stay as written (a TREC file's and a
    CSV's are strings); ``ids="integers"`` parses string ids as integers.

    Raises:
        RagframeError: the source is missing or empty, or a TREC line has another
            number of fields, a rank that is not an integer or a score that is not a
            number, or repeats a (query, document) pair; the message names the file
            and line.
        SchemaError: a table lacks a column the ranking needs.

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp(), "run.txt")
        >>> _ = path.write_text("q1 Q0 0123 1 2.5 bm25")
        >>> read_run(path).row(0)
        ('q1', '0123', 1, 2.5, 'bm25')
    """
    _check_ids(ids)
    if isinstance(source, str | os.PathLike):
        found = _files.locate(source, "run", split=None, beir=False)
        if found.kind == "trec":
            return _trec_run(found, ids)
        strings = [c.QUERY_ID, c.DOC_ID, c.ENTITY_ID]
        table = io.read_table(found.given, strings=strings)
        if not table.height:
            raise DataError(f"run {found.given}: no rows; expected a ranking")
        frame = _parsed_ids(table.lazy(), ids, f"run {found.given}").collect()
    else:
        frame = scan_run(source, ids=ids).collect()
    ranking_rows(frame)  # the columns a ranking needs, checked
    return frame


def _check_ids(ids: object) -> None:
    if not isinstance(ids, str) or ids not in ("as_written", "integers"):
        raise ConfigError(f"ids must be 'as_written' or 'integers', got {ids!r}")


def _trec_run(found: _files.Found, ids: IdMode) -> pl.DataFrame:
    """The lines of TREC run files, checked: an integer rank, a number for a score, a
    (query, document) pair once."""
    rows = _files.records(found, RUN_FIELDS, "TREC run")
    rank = pl.col("rank").str.strip_chars().cast(pl.Int64, strict=False)
    score = pl.col("score").str.strip_chars().cast(pl.Float64, strict=False)
    typed = rows.with_columns(rank.alias(c.RANK), score.alias(c.SCORE))
    for name, expected in ((c.RANK, "an integer"), (c.SCORE, "a number")):
        bad = typed[name].is_null()
        if bad.any():
            first = int(bad.arg_true()[0])
            raise DataError(
                f"{_files.place(found, rows, '', first)}: {name} must be {expected}, got "
                f"{rows[name][first]!r} ({plural(int(bad.sum()), 'such line')})"
            )
    pair = pl.struct("qid", "docid")
    repeats = typed.select(~pair.is_first_distinct()).to_series()
    if repeats.any():
        at = int(repeats.arg_true()[0])
        query, doc = typed["qid"][at], typed["docid"][at]
        same = (pl.col("qid") == query) & (pl.col("docid") == doc)
        before = int(typed.with_row_index("__i").filter(same)["__i"][0])
        raise DataError(
            f"{_files.place(found, typed, '', at)}: query {query!r} lists document {doc!r} "
            f"again ({plural(int(repeats.sum()), 'such line')}; first listed at "
            f"{_files.place(found, typed, '', before)}); expected each document once a query"
        )
    frame = typed.select(
        pl.col("qid").alias(c.QUERY_ID), pl.col("docid").alias(c.DOC_ID), c.RANK, c.SCORE, "tag"
    )
    return _parsed_ids(frame.lazy(), ids, "run").collect()


def write_run(run: Any, path: str | os.PathLike[str], *, tag: str = "ragframe") -> None:
    """Write a ranking (``query_id, doc_id, rank, score``, e.g. :func:`document_ranking`)
    as a TREC run file, atomically: exactly what :func:`read_run` reads back.

    Raises:
        ConfigError: ``tag`` is empty or holds whitespace.
        SchemaError: a missing column, or one of the wrong type.
        DataError: a value a TREC run cannot hold: a null id, rank or score, an id that
            is empty or holds whitespace, a (query, document) pair listed twice.
        RagframeError: the destination cannot be written.
    """
    if not isinstance(tag, str) or not tag or any(ch.isspace() for ch in tag):
        raise ConfigError(
            f"tag must be a non-empty string without whitespace (a TREC run's last field), "
            f"got {tag!r}"
        )
    frame = c.to_lazy(run, "run").collect()
    c.require_columns(frame.schema, [c.QUERY_ID, c.DOC_ID, c.RANK, c.SCORE], "run")
    for name in (c.QUERY_ID, c.DOC_ID):
        check_kind(frame.schema, name, "run")
    c.require_kind(frame.schema, c.RANK, ["int"], "run")
    c.require_kind(frame.schema, c.SCORE, ["int", "float"], "run")
    _writable(frame)
    table = frame.select(
        c.QUERY_ID, pl.lit("Q0").alias("q0"), c.DOC_ID, c.RANK, c.SCORE, pl.lit(tag).alias("tag")
    )
    io.write_atomically(
        path,
        lambda tmp: table.write_csv(tmp, separator=" ", include_header=False, quote_style="never"),
    )


def _writable(frame: pl.DataFrame) -> None:
    """Raise :class:`DataError` on the first value :func:`read_run` would not read back."""
    for name in (c.QUERY_ID, c.DOC_ID, c.RANK, c.SCORE):
        nulls = frame[name].is_null()
        if nulls.any():
            first = int(nulls.arg_true()[0])
            rows = plural(int(nulls.sum()), "row")
            raise DataError(
                f"run: column '{name}' has null values on {rows}; first: row {first}; "
                "expected a value on every row of a TREC run"
            )
    for name in (c.QUERY_ID, c.DOC_ID):
        text = frame[name].cast(pl.String)
        bad = (text == "") | text.str.contains(_WHITESPACE)
        if bad.any():
            first = int(bad.arg_true()[0])
            rows = plural(int(bad.sum()), "row")
            raise DataError(
                f"run: column '{name}' has ids that are empty or hold whitespace on {rows}; "
                f"first: row {first}: {text[first]!r}; expected ids without whitespace (a "
                "TREC run's fields are separated by it)"
            )
    pair = pl.struct(c.QUERY_ID, c.DOC_ID)
    repeats = frame.select(~pair.is_first_distinct()).to_series()
    if repeats.any():
        first = int(repeats.arg_true()[0])
        count = int(repeats.sum())
        raise DataError(
            f"run: {plural(count, 'row')} repeat{'s' if count == 1 else ''} a (query_id, doc_id) "
            f"pair; first: row {first}: {frame[c.QUERY_ID][first]!r}, "
            f"{frame[c.DOC_ID][first]!r}; expected each document once a query "
            "(document_ranking gives that)"
        )
