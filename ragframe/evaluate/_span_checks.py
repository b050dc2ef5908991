"""Span judgements checked (SPEC 7; :func:`ragframe.read_qrels`): offsets on every
row, never negative, never reversed; and, when the documents are given, every judged
document known and every span within its text."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe._validate import first_row, plural
from ragframe.errors import DataError, SchemaError
from ragframe.evaluate._ids import check_kind, met, target

Place = Callable[[int], str]
"""Where a row of the judgements came from, as a message names it."""
_SPAN_HINT = (
    "span judgements need 0 <= start_char <= end_char (code-point offsets into the "
    "document's text, end exclusive)"
)


def _row(frame: pl.DataFrame, at: int) -> str:
    start, end = frame[c.START_CHAR][at], frame[c.END_CHAR][at]
    return f"doc_id {frame[c.DOC_ID][at]!r}, start_char {start!r}, end_char {end!r}"


def checked_spans(frame: pl.DataFrame, place: Place) -> pl.DataFrame:
    """``frame`` (span judgements whose columns are checked) with Int64 offsets, or a
    :class:`DataError` naming the first row whose offsets are null, negative or
    reversed."""
    start, end = frame[c.START_CHAR], frame[c.END_CHAR]
    missing = start.is_null() | end.is_null()
    if (at := first_row(missing)) is not None:
        raise DataError(
            f"qrels: {plural(int(missing.sum()), 'span judgement')} without start_char or "
            f"end_char (null); first: {place(at)}: {_row(frame, at)}; expected both offsets "
            "on every row: a row without them would be a document judgement, and span and "
            "document judgements are not mixed in one qrels (hint: judge a whole document "
            "as the span from 0 to its length, or evaluate document judgements apart)"
        )
    checks = (
        ((start < 0) | (end < 0), "a negative offset"),
        (start > end, "start_char > end_char"),
    )
    for bad, what in checks:
        if (at := first_row(bad)) is not None:
            raise DataError(
                f"qrels: {plural(int(bad.sum()), 'span')} with {what}; first: {place(at)}: "
                f"{_row(frame, at)}; {_SPAN_HINT}"
            )
    return frame.with_columns(pl.col(c.START_CHAR, c.END_CHAR).cast(pl.Int64))


def _lengths(documents: Any) -> pl.DataFrame:
    """``doc_id, char_count`` of the documents (from ``text`` or ``char_count``), one
    row per document."""
    if isinstance(documents, str | os.PathLike):
        frame = io.read_table(documents, strings=[c.DOC_ID])
    elif isinstance(documents, pl.DataFrame | pl.LazyFrame | pa.Table):
        frame = c.to_lazy(documents, "documents").collect()
    else:
        raise SchemaError(
            "documents must be a path or a polars DataFrame/LazyFrame or pyarrow Table "
            f"(doc_id, and text or char_count), got {type(documents).__name__}"
        )
    what = "documents"
    c.require_columns(frame.schema, [c.DOC_ID], what)
    check_kind(frame.schema, c.DOC_ID, what)
    if c.TEXT in frame.columns:
        c.require_kind(frame.schema, c.TEXT, ["string"], what)
        length = pl.col(c.TEXT).str.len_chars().fill_null(0).cast(pl.Int64)
    elif c.CHAR_COUNT in frame.columns:
        c.require_kind(frame.schema, c.CHAR_COUNT, ["int"], what)
        length = pl.col(c.CHAR_COUNT).cast(pl.Int64)
    else:
        raise SchemaError(
            f"documents: no column 'text' or 'char_count'; found: {frame.columns}; expected "
            "each document's text (or its length in code points)"
        )
    lengths = frame.select(c.DOC_ID, length.alias(c.CHAR_COUNT))
    repeated = lengths[c.DOC_ID].is_duplicated()
    if (at := first_row(repeated)) is not None:
        raise DataError(
            f"documents: {plural(int(repeated.sum()), 'row')} share a doc_id; first: row "
            f"{at}: {lengths[c.DOC_ID][at]!r}; expected one row per document (its whole "
            "text, as the spans' offsets count it)"
        )
    return lengths


def known_documents(frame: pl.DataFrame, documents: Any, place: Place) -> None:
    """Raise a :class:`DataError` unless every judged document is among ``documents``
    and, for span judgements, every span ends within its document's text."""
    lengths = _lengths(documents)
    dtype = target([frame.schema[c.DOC_ID], lengths.schema[c.DOC_ID]])
    docs = met(frame[c.DOC_ID], dtype, "qrels", "the documents' doc_id")
    known = lengths.with_columns(met(lengths[c.DOC_ID], dtype, "documents", "the qrels' doc_id"))
    looked = pl.DataFrame({c.DOC_ID: docs}).join(
        known, on=c.DOC_ID, how="left", maintain_order="left"
    )
    unknown = looked[c.CHAR_COUNT].is_null()
    if (at := first_row(unknown)) is not None:
        count = docs.filter(unknown).n_unique()
        raise DataError(
            f"qrels: {plural(int(unknown.sum()), 'judgement')} on "
            f"{plural(count, 'document')} the documents lack; first: {place(at)}: doc_id "
            f"{frame[c.DOC_ID][at]!r}; expected judgements of the given documents only"
        )
    if c.END_CHAR not in frame.columns:
        return
    past = frame[c.END_CHAR] > looked[c.CHAR_COUNT]
    if (at := first_row(past)) is not None:
        raise DataError(
            f"qrels: {plural(int(past.sum()), 'span')} past the end of its document; first: "
            f"{place(at)}: {_row(frame, at)}, the document has {looked[c.CHAR_COUNT][at]} "
            f"characters; {_SPAN_HINT}"
        )
