"""The inputs of :func:`ragframe.retrieve`: their columns checked before any plan runs,
their values when the plan runs (before any index is built), and the output's schema.

Chunks: ``doc_id`` (or ``entity_id``), ``chunk_index``, ``text`` (for BM25, and for a
dense search that embeds the chunks), optional ``entity_type``, ``start_char`` and
``end_char`` (carried to the output), a vector column for a dense search that does not
embed them. Queries: ``query_id`` (never null, each once), ``text`` (for BM25 and to
embed them) or a vector column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import DataError, SchemaError
from ragframe.retrieve._config import RetrieveConfig
from ragframe.retrieve._index import BM25Index

Embed = Callable[[list[str]], Any]
"""A batch of texts in, a float32 matrix (one row per text) out."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a retrieval reads: the chunks (or a built index), the queries, and the names
    and types of the output's columns."""

    chunks: pl.LazyFrame | None
    index: BM25Index | None
    queries: pl.LazyFrame
    keys: list[str]
    """The chunks' columns the output carries: id, [entity_type,] chunk_index[, offsets]."""
    schema: pl.Schema
    """The output's."""
    chunk_text: bool
    query_text: bool


def _id_column(schema: pl.Schema, what: str) -> str:
    for name in (c.DOC_ID, c.ENTITY_ID):
        if name in schema:
            return name
    c.require_columns(schema, [c.DOC_ID], what, aliases={c.DOC_ID: c.ENTITY_ID})
    raise AssertionError  # pragma: no cover


def chunk_keys(schema: pl.Schema, what: str = "chunks") -> list[str]:
    """The key (and offset) columns the output carries, checked."""
    keys = [_id_column(schema, what)]
    if c.ENTITY_TYPE in schema:
        keys.append(c.ENTITY_TYPE)
    c.require_columns(schema, [c.CHUNK_INDEX], what)
    c.require_kind(schema, c.CHUNK_INDEX, ["int"], what)
    keys.append(c.CHUNK_INDEX)
    offsets = [n for n in (c.START_CHAR, c.END_CHAR) if n in schema]
    if len(offsets) == 1:
        raise SchemaError(
            f"{what}: has '{offsets[0]}' without its pair; expected both "
            f"'{c.START_CHAR}' and '{c.END_CHAR}', or neither"
        )
    keys += offsets
    return keys


def _needs(config: RetrieveConfig, embed: Embed | None, vectors: str, schema: pl.Schema) -> bool:
    """Whether the texts of a table are read: for BM25, or to embed them."""
    if "bm25" in config.methods:
        return True
    return vectors not in schema and embed is not None


def check(chunks: Any, queries: Any, config: RetrieveConfig, embed: Embed | None) -> Inputs:
    """Check the columns of both tables; raise :class:`SchemaError` naming the first
    problem."""
    index = chunks if isinstance(chunks, BM25Index) else None
    if index is not None and config.methods != ("bm25",):
        raise SchemaError(
            "a BM25Index serves method='bm25' only; pass the chunk table "
            "for a dense search or a fusion"
        )
    chunk_frame = None if index is not None else c.to_lazy(chunks, "chunks")
    chunk_schema = index.chunks.schema if index is not None else chunk_frame.collect_schema()  # type: ignore[union-attr]
    keys = chunk_keys(chunk_schema)
    chunk_text = index is None and _needs(config, embed, config.vectors, chunk_schema)
    if chunk_text:
        c.require_columns(chunk_schema, [c.TEXT], "chunks")
        c.require_kind(chunk_schema, c.TEXT, ["string"], "chunks")
    query_frame = c.to_lazy(queries, "queries")
    query_schema = query_frame.collect_schema()
    c.require_columns(query_schema, [c.QUERY_ID], "queries")
    query_text = _needs(config, embed, config.query_vectors, query_schema)
    if query_text:
        c.require_columns(query_schema, [c.TEXT], "queries")
        c.require_kind(query_schema, c.TEXT, ["string"], "queries")
    if "dense" in config.methods:
        _check_dense(chunk_schema, query_schema, config, embed)
    out = {c.QUERY_ID: query_schema[c.QUERY_ID]}
    out.update({name: chunk_schema[name] for name in keys})
    out.update({c.SIMILARITY: pl.Float64(), c.RANK: pl.Int64()})
    return Inputs(chunk_frame, index, query_frame, keys, pl.Schema(out), chunk_text, query_text)


def _check_dense(
    chunks: pl.Schema, queries: pl.Schema, config: RetrieveConfig, embed: Embed | None
) -> None:
    sides = (
        (chunks, config.vectors, "chunks", "vectors"),
        (queries, config.query_vectors, "queries", "query_vectors"),
    )
    for schema, name, what, option in sides:
        if name in schema:
            dtype = schema[name]
            inner = getattr(dtype, "inner", None)
            if not isinstance(dtype, pl.List | pl.Array) or not (inner and inner.is_numeric()):
                raise SchemaError(
                    f"{what}: vector column '{name}' has type {dtype}; expected a list or "
                    "array of float32 (numbers)"
                )
        elif embed is None:
            raise SchemaError(
                f"{what}: no vector column '{name}' and no embed function; a dense search "
                f"needs vectors: pass embed= (texts to vectors; the CLI's --model DIR) or a "
                f"column '{name}' (another name: {option}=, the CLI's --{option.replace('_', '-')})"
            )
        elif not callable(embed):
            raise SchemaError(
                f"embed must be callable (texts -> vectors), got {type(embed).__name__}"
            )


def checked_queries(queries: pl.DataFrame) -> pl.DataFrame:
    """``queries`` with its ids checked: none null, none twice."""
    ids = queries[c.QUERY_ID]
    if ids.null_count():
        row = int(ids.is_null().arg_true()[0])
        raise DataError(
            f"queries: column 'query_id' has {ids.null_count()} null values; "
            f"first: row {row}; expected an id on every query"
        )
    repeated = ids.is_duplicated()
    if repeated.any():
        first = ids.filter(repeated)[0]
        raise DataError(
            f"queries: query_id {first!r} appears {int((ids == first).sum())} times; "
            "expected each query once"
        )
    return queries


def blank(texts: pl.Series) -> pl.Series:
    """Which texts are null, empty or only whitespace (such a query has no rows)."""
    from ragframe.fetch._analysis import BLANK_CHARS

    return texts.is_null() | (texts.str.strip_chars(BLANK_CHARS).str.len_chars() == 0)
