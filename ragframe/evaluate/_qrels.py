"""Relevance judgements in (SPEC 4, "qrels"): one reader for every source (frames,
tables, TREC and BEIR files; a file, glob, folder or standard input), checked, ids as
written; and the grade-to-gain mapping."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe._validate import first_row, plural
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.evaluate import _files
from ragframe.evaluate._ids import IdMode, check_kind, parsed
from ragframe.evaluate._span_checks import checked_spans, known_documents
from ragframe.evaluate._spans import SPAN_COLUMNS, check_frame, has_spans

Gain = Mapping[int, float] | Callable[[pl.Expr], pl.Expr] | None
"""How grades become gains: a mapping (grades it lacks gain 0), an expression builder,
or None (gain = grade for grades > 0, else 0)."""
Duplicates = Literal["error", "first", "last", "max"]
"""What a repeated (query_id, doc_id) judgement does: an error naming it (the default),
or one judgement kept, at the pair's first place, with the first, last or highest
grade."""
DUPLICATES = ("error", "first", "last", "max")
IDS = ("as_written", "integers")
_COLUMNS = [c.QUERY_ID, c.DOC_ID, c.RELEVANCE]
_TREC = ["qid", "iter", "docid", "rel"]


def check_gain(gain: object) -> None:
    """Raise :class:`ConfigError` unless ``gain`` is a :data:`Gain`."""
    if gain is None or (callable(gain) and not isinstance(gain, type)):
        return
    if not isinstance(gain, Mapping):
        raise ConfigError(
            "gain must be a mapping of grades to gains (e.g. {1: 4, 2: 3}), a function of "
            f"a Polars expression, or None; got {type(gain).__name__}"
        )
    if not gain:
        raise ConfigError("gain: the mapping is empty; expected grades and their gains")
    for grade, value in gain.items():
        if isinstance(grade, bool) or not isinstance(grade, numbers.Integral):
            raise ConfigError(f"gain: grades must be integers, got {grade!r} (e.g. {{1: 4}})")
        real = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not real or not math.isfinite(float(value)):
            raise ConfigError(f"gain: grade {grade} must map to a finite number, got {value!r}")


def _gain(grade: pl.Expr, gain: Gain) -> pl.Expr:
    if gain is None:
        return pl.when(grade > 0).then(grade.cast(pl.Float64)).otherwise(0.0)
    if callable(gain):
        built = gain(grade)
        if not isinstance(built, pl.Expr):
            raise ConfigError(
                f"gain: the function must return a Polars expression, got {type(built).__name__}"
            )
        return built.cast(pl.Float64)
    keys = [int(k) for k in gain]
    values = [float(gain[k]) for k in gain]
    mapped = grade.replace_strict(keys, values, default=0.0, return_dtype=pl.Float64)
    return pl.when(mapped > 0).then(mapped).otherwise(0.0)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        shown = " or ".join(repr(a) for a in allowed)
        raise ConfigError(f"{name} must be {shown}, got {value!r}")


def read_qrels(
    source: Any,
    *,
    gain: Gain = None,
    split: str | None = None,
    ids: IdMode = "as_written",
    duplicates: Duplicates = "error",
    documents: Any = None,
) -> pl.DataFrame:
    """Relevance judgements as ``query_id, doc_id, relevance, gain``, in source order;
    span judgements as ``query_id, doc_id, start_char, end_char, relevance, gain``.

    ``source`` is a frame (``query_id``, ``doc_id``, ``relevance``) or a path: a file,
    a glob, a folder or ``-`` (standard input), holding tables with those columns
    (Parquet, Arrow, CSV, JSON lines; a Parquet folder may be a hive dataset), TREC
    qrels files (``qid iter docid rel`` per line) or BEIR ``.tsv`` files (a header,
    then ``query-id corpus-id score``); a folder holding ``qrels/`` is a BEIR folder
    (its ``qrels/<split>.tsv``). :mod:`ragframe.evaluate._files` says how each is
    told and read.

    Ids stay as written: a text file's ids are strings (``0123`` stays ``0123``, and
    query ``01`` is not query ``1``), a table's keep their type (a CSV's are read as
    strings); ``ids="integers"`` parses string ids as integers instead. Grades are
    integers; <= 0 (-1 included) is judged not relevant; a row whose grade is null
    holds no judgement and is left out. ``gain`` turns grades into gains (the gain of
    a relevant document; <= 0 means not relevant): None keeps the grade; a mapping such
    as Cranfield's ``{1: 4, 2: 3, 3: 2, 4: 1}`` (where 1 is best) gives the grades it
    lacks gain 0. A pair judged twice is an error naming both places unless
    ``duplicates`` says which grade to keep (``"first"``, ``"last"``, ``"max"``).

    Span judgements (SPEC 7): a table (or frame) with ``start_char`` and ``end_char``
    (code-point offsets into the document's text, end exclusive) judges those
    characters; how :func:`ragframe.evaluate` counts them is in
    :mod:`ragframe.evaluate._spans`. Every row needs both offsets (integers, 0 <=
    start_char <= end_char): a row without them would be a document judgement, and
    the two are not mixed in one qrels (a whole document is the span from 0 to its
    length). Spans may overlap, nest, repeat or be empty (``duplicates`` is for
    document judgements only). With ``documents`` (``doc_id`` and ``text``, or
    ``char_count``: a table, frame or path), every judged document must be there and
    every span must end within its text; without, spans are not checked against the
    documents (a span past a document's end judges characters no block can cover).

    Args:
        source: the judgements (see above).
        gain: grades to gains (see above).
        split: the BEIR split (default ``test``); only for a BEIR folder.
        ids: ``"as_written"`` (the default) or ``"integers"``.
        duplicates: ``"error"`` (the default), ``"first"``, ``"last"`` or ``"max"``.
        documents: the judged documents, to check the judgements against (see above).

    Raises:
        SchemaError: a missing column, or one of the wrong type (one offset without the
            other).
        DataError: a null id, a grade that is not an integer, a repeated pair; a span
            with a null or negative offset, start_char > end_char, past its document's
            end, or on a document ``documents`` lacks.
        RagframeError: a file that cannot be read (empty, short or long lines, a BEIR
            file without its header), naming the file and line.
        ConfigError: a bad ``gain``, ``split``, ``ids`` or ``duplicates``.

    Example:
        >>> import polars as pl
        >>> q = pl.DataFrame({"query_id": [1, 1], "doc_id": [5, 6], "relevance": [1, -1]})
        >>> read_qrels(q, gain={1: 4})["gain"].to_list()
        [4.0, 0.0]
    """
    check_gain(gain)
    _choice("ids", ids, IDS)
    _choice("duplicates", duplicates, DUPLICATES)
    if split is not None and not isinstance(split, str):
        raise ConfigError(f"split must be a string (a BEIR split, e.g. 'test'), got {split!r}")
    frame, found, given = _read(source, split)
    spans = has_spans(frame.columns)
    frame = _checked(frame, found, given, ids, spans)
    if spans:
        frame = checked_spans(frame, lambda row: _files.place(found, frame, given, row))
    else:
        frame = _one_each(frame, found, given, duplicates)
    if documents is not None:
        known_documents(frame, documents, lambda row: _files.place(found, frame, given, row))
    grade = pl.col(c.RELEVANCE)
    offsets = list(SPAN_COLUMNS) if spans else []
    try:
        out = frame.select(c.QUERY_ID, c.DOC_ID, *offsets, grade, _gain(grade, gain).alias(c.GAIN))
    except pl.exceptions.PolarsError as exc:
        raise ConfigError(f"gain: the function's expression failed: {exc}") from None
    bad = out[c.GAIN].is_nan() | out[c.GAIN].is_infinite()
    if bad.any():
        raise DataError(f"gain: {int(bad.sum())} gains are NaN or infinite; expected numbers")
    return out


def _read(source: Any, split: str | None) -> tuple[pl.DataFrame, _files.Found | None, str]:
    """The raw judgements (string grades for text files), where they came from."""
    if isinstance(source, str | os.PathLike):
        found = _files.locate(source, "qrels", split=split, beir=True)
        if found.kind == "table":
            table = io.read_table(found.given, strings=[c.QUERY_ID, c.DOC_ID])
            if not table.height:
                raise DataError(f"qrels {found.given}: no judgements (0 rows)")
            return table.with_row_index(c.T_ROW), None, found.given
        if found.kind == "beir":
            rows = _files.beir_records(found)
            names = {"query-id": c.QUERY_ID, "corpus-id": c.DOC_ID, "score": c.RELEVANCE}
            return _grades(rows.rename(names), found), found, found.given
        rows = _files.records(found, _TREC, "TREC qrels")
        named = rows.rename({"qid": c.QUERY_ID, "docid": c.DOC_ID, "rel": c.RELEVANCE})
        return _grades(named.drop("iter"), found), found, found.given
    if split is not None:
        raise ConfigError("split is for a BEIR folder (qrels/<split>.tsv); qrels is a frame")
    if not isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        raise SchemaError(
            "qrels must be a path (a file, glob, folder or '-') or a polars DataFrame/"
            f"LazyFrame or pyarrow Table, got {type(source).__name__}"
        )
    return c.to_lazy(source, "qrels").collect().with_row_index(c.T_ROW), None, ""


def _grades(rows: pl.DataFrame, found: _files.Found) -> pl.DataFrame:
    """Text grades as integers; one that is not is an error naming its line."""
    grade = pl.col(c.RELEVANCE).str.strip_chars(_files.WHITESPACE).cast(pl.Int64, strict=False)
    typed = rows.with_columns(grade)
    bad = typed[c.RELEVANCE].is_null()
    if (first := first_row(bad)) is not None:
        raise DataError(
            f"{_files.place(found, rows, '', first)}: relevance must be an integer, got "
            f"{rows[c.RELEVANCE][first]!r} ({plural(int(bad.sum()), 'such line')})"
        )
    return typed


def _checked(
    frame: pl.DataFrame, found: _files.Found | None, given: str, ids: IdMode, spans: bool
) -> pl.DataFrame:
    """Columns and values checked, rows without a grade left out, ids parsed when
    asked; with ``spans``, the offsets kept (their values: :func:`checked_spans`)."""
    what = f"qrels {given}" if given else "qrels"  # row-level messages name the place
    c.require_columns(frame.schema, _COLUMNS, what)
    for name in (c.QUERY_ID, c.DOC_ID):
        check_kind(frame.schema, name, what)
    c.require_kind(frame.schema, c.RELEVANCE, ["int", "float"], what)
    if spans:
        check_frame(frame.schema, what)
    extra = [n for n in (_files.FILE, _files.LINE, c.T_ROW) if n in frame.columns]
    frame = frame.select(*_COLUMNS, *(SPAN_COLUMNS if spans else ()), *extra)
    for name in (c.QUERY_ID, c.DOC_ID):
        nulls = frame[name].is_null()
        if (first := first_row(nulls)) is not None:
            raise DataError(
                f"qrels: column '{name}' has null values on {plural(int(nulls.sum()), 'row')}; "
                f"first: {_files.place(found, frame, given, first)}; expected an id on every row"
            )
    frame = frame.filter(pl.col(c.RELEVANCE).is_not_null())
    grade = frame[c.RELEVANCE]
    if grade.dtype.is_float():
        bad = ~(grade.is_finite() & (grade == grade.floor()))
        if (first := first_row(bad)) is not None:
            raise DataError(
                f"qrels: column 'relevance' has grades that are not integers on "
                f"{plural(int(bad.sum()), 'row')}; first: "
                f"{_files.place(found, frame, given, first)}: {grade[first]!r}; expected "
                "integer grades"
            )
    frame = frame.with_columns(pl.col(c.RELEVANCE).cast(pl.Int64))
    if ids == "integers":
        for name in (c.QUERY_ID, c.DOC_ID):
            here = frame

            def place(row: int, here: pl.DataFrame = here) -> str:
                return _files.place(found, here, given, row)

            frame = frame.with_columns(parsed(frame[name], "qrels", place))
    return frame


def _one_each(
    frame: pl.DataFrame, found: _files.Found | None, given: str, duplicates: Duplicates
) -> pl.DataFrame:
    """One judgement per (query_id, doc_id): a repeat is an error, or the pair keeps
    its first place and the grade ``duplicates`` names."""
    pair = pl.struct(c.QUERY_ID, c.DOC_ID)
    first = frame.select(pair.is_first_distinct()).to_series()
    if first.all():
        return frame
    grade = pl.col(c.RELEVANCE)
    if duplicates == "error":
        repeats = ~first
        at = int(repeats.arg_true()[0])
        query, doc, again = frame.row(at)[:3]
        same = (pl.col(c.QUERY_ID) == query) & (pl.col(c.DOC_ID) == doc)
        before = int(frame.with_row_index("__i").filter(same)["__i"][0])
        other = frame.select((grade != grade.first().over(pair)) & ~first).to_series().sum()
        count = int(repeats.sum())
        raise DataError(
            f"qrels: {plural(count, 'judgement')} repeat{'s' if count == 1 else ''} a (query_id, "
            f"doc_id) judged before ({other} with another grade); first: "
            f"{_files.place(found, frame, given, at)}: query_id {query!r}, doc_id {doc!r}, "
            f"relevance {again}, judged {frame[c.RELEVANCE][before]} at "
            f"{_files.place(found, frame, given, before)}; expected one judgement per pair "
            "(hint: duplicates='max', 'first' or 'last' keeps one)"
        )
    kept = {"first": grade.first(), "last": grade.last(), "max": grade.max()}[duplicates]
    return frame.with_columns(kept.over(pair)).filter(first)


def judgements(qrels: Any) -> pl.DataFrame:
    """``qrels`` as :func:`read_qrels` gives them: a frame that already has a ``gain``
    column is taken as it is (its columns checked), anything else is read."""
    if isinstance(qrels, pl.DataFrame) and c.GAIN in qrels.columns:
        c.require_columns(qrels.schema, [c.QUERY_ID, c.DOC_ID, c.GAIN], "qrels")
        for name in (c.QUERY_ID, c.DOC_ID):
            check_kind(qrels.schema, name, "qrels")
        c.require_kind(qrels.schema, c.GAIN, ["int", "float"], "qrels")
        if has_spans(qrels.columns):
            check_frame(qrels.schema, "qrels")
            return checked_spans(qrels, lambda row: f"row {row}")
        return qrels
    return read_qrels(qrels)
