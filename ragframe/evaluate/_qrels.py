"""Relevance judgements in (SPEC 4, "qrels"): frames, TREC qrels files, BEIR folders,
and the grade-to-gain mapping."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import RagframeError, SchemaError
from ragframe.io import read_table

Gain = Mapping[int, float] | Callable[[pl.Expr], pl.Expr] | None
"""How grades become gains: a mapping (grades it lacks gain 0), an expression builder,
or None (gain = grade for grades > 0, else 0)."""

QRELS_SCHEMA = {c.QUERY_ID: pl.String, c.DOC_ID: pl.String, c.RELEVANCE: pl.Int64}


def whitespace_fields(path: Path, names: list[str]) -> pl.DataFrame:
    """The whitespace-separated fields of a text file's non-blank lines, as strings;
    a line with fewer fields than ``names`` is an error naming its line number."""
    try:
        lines = pl.Series("line", path.read_text(encoding="utf-8").splitlines())
    except UnicodeDecodeError as exc:
        raise RagframeError(f"{os.fspath(path)}: not UTF-8 text ({exc.reason})") from exc
    frame = pl.DataFrame(lines).with_row_index("line_number", offset=1)
    frame = frame.filter(pl.col("line").str.strip_chars() != "")
    parts = pl.col("line").str.strip_chars().str.replace_all(r"\s+", " ").str.split(" ")
    frame = frame.with_columns(parts.alias("fields"))
    short = frame.filter(pl.col("fields").list.len() < len(names))
    if short.height:
        number, line = short["line_number"][0], short["line"][0]
        raise RagframeError(
            f"{os.fspath(path)}, line {number}: expected {len(names)} fields "
            f"({' '.join(names)}), got {line!r}"
        )
    return frame.select(
        "line_number", *(pl.col("fields").list.get(i).alias(n) for i, n in enumerate(names))
    )


def _trec_qrels(path: Path) -> pl.DataFrame:
    """``qid 0 docid rel`` lines, whitespace separated."""
    frame = whitespace_fields(path, ["qid", "iter", "docid", "rel"])
    rel = pl.col("rel").cast(pl.Int64, strict=False)
    bad = frame.filter(rel.is_null())
    if bad.height:
        raise RagframeError(
            f"{os.fspath(path)}, line {bad['line_number'][0]}: relevance must be an integer, "
            f"got {bad['rel'][0]!r} ({bad.height} such lines)"
        )
    return frame.select(
        pl.col("qid").alias(c.QUERY_ID), pl.col("docid").alias(c.DOC_ID), rel.alias(c.RELEVANCE)
    )


def _beir(folder: Path, split: str) -> pl.DataFrame:
    """A BEIR folder's ``qrels/<split>.tsv`` (``query-id corpus-id score``, a header)."""
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        found = sorted(p.name for p in (folder / "qrels").glob("*.tsv"))
        raise RagframeError(f"BEIR folder {os.fspath(folder)}: no qrels/{split}.tsv; found {found}")
    frame = pl.read_csv(path, separator="\t", infer_schema=False)
    names = frame.columns
    if len(names) < 3:
        raise RagframeError(f"{os.fspath(path)}: expected query-id, corpus-id, score columns")
    return frame.select(
        pl.col(names[0]).alias(c.QUERY_ID),
        pl.col(names[1]).alias(c.DOC_ID),
        pl.col(names[2]).cast(pl.Int64).alias(c.RELEVANCE),
    )


def typed_ids(frame: pl.DataFrame) -> pl.DataFrame:
    """Ids as integers when every id of a column is an integer, else strings."""
    out = frame
    for name in (c.QUERY_ID, c.DOC_ID):
        column = out[name]
        if column.dtype == pl.String:
            number = column.cast(pl.Int64, strict=False)
            if number.null_count() == column.null_count():
                out = out.with_columns(number.alias(name))
    return out


def _gain(grade: pl.Expr, gain: Gain) -> pl.Expr:
    if gain is None:
        return pl.when(grade > 0).then(grade.cast(pl.Float64)).otherwise(0.0)
    if callable(gain):
        return gain(grade).cast(pl.Float64)
    keys = list(gain)
    values = [float(gain[k]) for k in keys]
    mapped = grade.replace_strict(keys, values, default=0.0, return_dtype=pl.Float64)
    return pl.when(mapped > 0).then(mapped).otherwise(0.0)


def read_qrels(source: Any, *, gain: Gain = None, split: str = "test") -> pl.DataFrame:
    """Relevance judgements as ``query_id, doc_id, relevance, gain``.

    ``source`` is a frame (``query_id``, ``doc_id``, ``relevance``), a TREC qrels file
    (``qid 0 docid rel``), a table file ragframe reads (Parquet, CSV, ...) with those
    columns, or a BEIR folder (``qrels/<split>.tsv``). Ids stay integers when they all
    are, else strings. Grades <= 0 (-1 included) are judged not relevant; a null grade
    is unjudged and the row is dropped. ``gain`` turns grades into gains (the gain of
    a relevant document; <= 0 means not relevant): None keeps the grade; a mapping
    such as Cranfield's ``{1: 4, 2: 3, 3: 2, 4: 1}`` (where 1 is best) gives the
    grades it lacks gain 0.

    Raises:
        SchemaError: a frame lacks a column.
        RagframeError: a file cannot be read or parsed.

    Example:
        >>> import polars as pl
        >>> q = pl.DataFrame({"query_id": [1, 1], "doc_id": [5, 6], "relevance": [1, -1]})
        >>> read_qrels(q, gain={1: 4})["gain"].to_list()
        [4.0, 0.0]
    """
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.is_dir():
            frame = _beir(path, split)
        elif not path.is_file():
            raise RagframeError(f"qrels not found: {os.fspath(path)}")
        elif path.suffix.lower() in (".parquet", ".pq", ".arrow", ".ipc", ".feather", ".csv"):
            frame = read_table(path)
        else:
            frame = _trec_qrels(path)
    else:
        frame = c.to_lazy(source, "qrels").collect()
    c.require_columns(frame.schema, [c.QUERY_ID, c.DOC_ID, c.RELEVANCE], "qrels")
    c.require_kind(frame.schema, c.RELEVANCE, ["int", "float"], "qrels")
    frame = typed_ids(frame.select(c.QUERY_ID, c.DOC_ID, c.RELEVANCE))
    if frame[c.QUERY_ID].null_count() or frame[c.DOC_ID].null_count():
        raise SchemaError("qrels: query_id and doc_id must not be null")
    frame = frame.filter(pl.col(c.RELEVANCE).is_not_null())
    grade = pl.col(c.RELEVANCE)
    return frame.with_columns(grade.cast(pl.Int64), _gain(grade, gain).alias(c.GAIN)).unique(
        [c.QUERY_ID, c.DOC_ID], keep="last", maintain_order=True
    )


def judgements(qrels: Any) -> pl.DataFrame:
    """``qrels`` as :func:`read_qrels` gives them: a frame that already has a ``gain``
    column is taken as it is, anything else is read."""
    if isinstance(qrels, pl.DataFrame) and c.GAIN in qrels.columns:
        return qrels
    return read_qrels(qrels)
