"""Where each candidate's text is, without a join: a row of the text source.

The text source is the input's own text (with its offsets), one row per candidate, or
the chunk store (first row per key). Each candidate carries ``c.T_ROW``: the row of the
source that holds its text (its own row for inline text; for a store, the row with its
(entity, chunk index), found by a compiled hash lookup,
:func:`ragframe.postprocess._kernels._store.store_rows`; -1 when the store has none).
A kernel that needs text gets the candidates it works on followed by the source's text
column (:func:`stacked`: one frame, so one map over whole columns sees both) and reads
each candidate's text in place through its row (:func:`split`). A Polars join would
copy every text it carries (the streaming engine gathers the strings) and, for the
missing-text check, probe every candidate once more; the lookup is one pass that finds
both the text and the candidates without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, cast

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._arrow import string_addresses
from ragframe._kernels._buffers import row_views
from ragframe._kernels._compile import I64, int64s
from ragframe.postprocess import _inputs
from ragframe.postprocess._kernels._store import store_rows, store_rows_lacking
from ragframe.schema import require_columns, require_kind


def chunk_store(store: pl.LazyFrame, candidates: pl.Schema, offsets: bool) -> pl.LazyFrame:
    """The chunk store as the lookup reads it, checked at once (its columns and their
    kinds): ``entity_id`` (as the candidates' type), ``chunk_index``, ``text`` (and the
    offsets), every row in order. No key is built and no repeat dropped: the lookup
    (:func:`with_store_rows`) takes the first row of a key that repeats."""
    store, schema = _inputs._aliased(store)
    need = [c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT, *(_inputs.OFFSETS if offsets else ())]
    require_columns(schema, need, "chunks")
    kind = ("string",) if candidates[c.ENTITY_ID] == pl.String else ("int",)
    require_kind(schema, c.ENTITY_ID, kind, "chunks")
    _inputs._check_kinds(schema.__class__({n: schema[n] for n in need[1:]}), "chunks")
    return store.select(
        pl.col(c.ENTITY_ID).cast(candidates[c.ENTITY_ID]),
        pl.col(c.CHUNK_INDEX).cast(pl.Int64),
        pl.col(c.TEXT).cast(pl.String),
        *_inputs._offset_exprs(offsets, "chunks"),
    )


def stacked(rows: pl.LazyFrame, texts: pl.LazyFrame, columns: Sequence[pl.Expr]) -> pl.LazyFrame:
    """``rows`` (each with a ``c.T_ROW``) followed by the text source's ``columns``, all
    its rows in order; each side's other columns null there."""
    return pl.concat([rows, texts.select(columns)], how="diagonal")


def split(parts: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A :func:`stacked` batch: the rows, then the text source's rows."""
    rows = int(parts.height - parts[c.T_ROW].null_count())
    return parts.head(rows), parts.slice(rows)


def _looked_up(batch: pl.Series) -> pl.Series:
    """The stacked keys' lookup: the candidates' store rows (only theirs)."""
    rows, store = split(batch.struct.unnest())
    found = store_rows(
        rows[c.ENTITY_ID], rows[c.CHUNK_INDEX], store[c.ENTITY_ID], store[c.CHUNK_INDEX]
    )
    return pl.Series(batch.name, found)


def with_store_rows(candidates: pl.LazyFrame, store: pl.LazyFrame) -> pl.LazyFrame:
    """``candidates`` (with ``c.T_ROW``, ``entity_id`` and ``chunk_index``), in order,
    their ``c.T_ROW`` now the first row of ``store`` (:func:`chunk_store`) with their
    key, or -1 (a null entity has none). Only the keys are stacked for the lookup; its
    answer is put beside the candidates (cached: read twice). Where the candidates and
    the store are in memory, :func:`rows_now` finds the same rows with no plan."""
    given = candidates.cache()
    keys = given.select(c.T_ROW, c.ENTITY_ID, c.CHUNK_INDEX)
    key = pl.struct(c.T_ROW, c.ENTITY_ID, c.CHUNK_INDEX)
    found = stacked(keys, store, [pl.col(c.ENTITY_ID), pl.col(c.CHUNK_INDEX)]).select(
        key.map_batches(_looked_up, return_dtype=pl.Int64).alias(c.T_ROW)
    )
    order = candidates.collect_schema().names()
    return pl.concat([given.drop(c.T_ROW), found], how="horizontal").select(order)


def rows_now(candidates: pl.DataFrame | None, chunks: object) -> tuple[pl.Series, int] | None:
    """:func:`with_store_rows`'s ``c.T_ROW``, found when the plan is built, where the
    candidates and the store (``chunks``) are both in memory (DataFrames) and their keys
    already have the types the plan reads (integer entities as Int64, or strings, the
    same on both sides; Int64 chunk indexes): the same lookup, nothing left to the plan
    and no cast that could fail. None otherwise (the lookup is then the plan's, after
    the checks that say what is wrong with the inputs). With the rows, how many
    candidates have none."""
    if candidates is None or not isinstance(chunks, pl.DataFrame):
        return None
    keys = [_keys_of(frame) for frame in (candidates, chunks)]
    if any(key is None for key in keys):
        return None
    (mine, index), (theirs, stored) = cast(list[tuple[pl.Series, pl.Series]], keys)
    if mine.dtype not in (pl.Int64, pl.String) or theirs.dtype != mine.dtype:
        return None
    if index.dtype != pl.Int64 or stored.dtype != pl.Int64:
        return None
    if index.null_count():
        index = index.fill_null(0)  # a null chunk index reads 0
    found, lacking = store_rows_lacking(mine, index, theirs, stored)
    return pl.Series(c.T_ROW, found), lacking


def _keys_of(frame: pl.DataFrame) -> tuple[pl.Series, pl.Series] | None:
    """``frame``'s entity (``doc_id`` where it stands for it) and chunk index; None
    where it lacks one (the checks say so later)."""
    entity = _inputs.user_names(frame.schema).get(c.ENTITY_ID, c.ENTITY_ID)
    if entity not in frame.schema or c.CHUNK_INDEX not in frame.schema:
        return None
    return frame[entity], frame[c.CHUNK_INDEX]


Views = tuple[I64, I64, object]
"""Rows' texts as a kernel found them: addresses, byte lengths, and what owns the memory
they point into (:class:`RowTexts`' three)."""


class RowTexts(NamedTuple):
    """The rows of a kernel's batch and where their texts are (see :func:`row_texts`)."""

    rows: pl.DataFrame
    address: I64
    """Each row's text: its UTF-8 bytes' address (read in place) ..."""
    length: I64
    """... and byte length (0: no text)."""
    offsets: tuple[I64, I64] | None
    """Each row's ``start_char`` and ``end_char``, when asked for."""
    alive: object
    """Owns the memory the addresses point into: keep it while they are read."""


def row_texts(parts: pl.DataFrame, in_source: bool, offsets: bool = False) -> RowTexts:
    """A kernel's batch: its rows and their texts, read in place. ``in_source``: the
    batch is :func:`stacked` (each row's text in the source's row ``c.T_ROW``; -1 for
    none: ""); else each row carries its ``text`` (and offsets). Null text reads ""."""
    if not in_source:
        address, length, cells = string_addresses(parts[c.TEXT])
        given = (int64s(parts[c.START_CHAR]), int64s(parts[c.END_CHAR])) if offsets else None
        return RowTexts(parts, address, length, given, cells)
    return source_texts(*split(parts), offsets)


def source_texts(
    rows: pl.DataFrame,
    source: pl.DataFrame,
    offsets: bool = False,
    views: Views | None = None,
) -> RowTexts:
    """:func:`row_texts` of rows and their text source given apart (each row's text in
    the source's row ``c.T_ROW``; -1 for none: ""). ``views``: where the caller has
    read them already (the selection's walk), the rows' texts' addresses and byte
    lengths, and what owns their memory (no second pass over the source's views)."""
    row = rows[c.T_ROW].to_numpy()
    address, length, arrays = (
        views if views is not None else row_views(source[c.TEXT], row)  # these rows' only
    )
    found = None
    if offsets:
        found = (_at(int64s(source[c.START_CHAR]), row), _at(int64s(source[c.END_CHAR]), row))
    return RowTexts(rows, address, length, found, arrays)


def _at(values: I64, row: I64) -> I64:
    """``values[row]``, 0 where ``row`` is -1 (no source row)."""
    if not len(values):
        return np.zeros(len(row), dtype=np.int64)
    return np.where(row >= 0, values[np.maximum(row, 0)], 0)
