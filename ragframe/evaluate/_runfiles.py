"""Run files in and out (SPEC 4): one reader for every source (TREC run files ``qid Q0
docid rank score tag``, tables, frames; a file, glob, folder or ``-``), ids as written,
and a writer that writes only what the reader reads back."""

from __future__ import annotations

import os
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe._validate import first_row, plural
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.evaluate import _files
from ragframe.evaluate._ids import IdMode, check_kind, parsed
from ragframe.evaluate._runs import ranking_rows

RUN_FIELDS = ["qid", "q0", "docid", "rank", "score", "tag"]
_WHITESPACE = r"[\s]"


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
        if (first := first_row(bad)) is not None:
            raise DataError(
                f"{_files.place(found, rows, '', first)}: {name} must be {expected}, got "
                f"{rows[name][first]!r} ({plural(int(bad.sum()), 'such line')})"
            )
    pair = pl.struct("qid", "docid")
    repeats = typed.select(~pair.is_first_distinct()).to_series()
    if (at := first_row(repeats)) is not None:
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
        if (first := first_row(nulls)) is not None:
            rows = plural(int(nulls.sum()), "row")
            raise DataError(
                f"run: column '{name}' has null values on {rows}; first: row {first}; "
                "expected a value on every row of a TREC run"
            )
    for name in (c.QUERY_ID, c.DOC_ID):
        text = frame[name].cast(pl.String)
        bad = (text == "") | text.str.contains(_WHITESPACE)
        if (first := first_row(bad)) is not None:
            rows = plural(int(bad.sum()), "row")
            raise DataError(
                f"run: column '{name}' has ids that are empty or hold whitespace on {rows}; "
                f"first: row {first}: {text[first]!r}; expected ids without whitespace (a "
                "TREC run's fields are separated by it)"
            )
    pair = pl.struct(c.QUERY_ID, c.DOC_ID)
    repeats = frame.select(~pair.is_first_distinct()).to_series()
    if (first := first_row(repeats)) is not None:
        count = int(repeats.sum())
        raise DataError(
            f"run: {plural(count, 'row')} repeat{'s' if count == 1 else ''} a (query_id, doc_id) "
            f"pair; first: row {first}: {frame[c.QUERY_ID][first]!r}, "
            f"{frame[c.DOC_ID][first]!r}; expected each document once a query "
            "(document_ranking gives that)"
        )
