"""Column names, in one place, and input checks shared by every stage.

Temporary columns use the private prefix :data:`TMP` and never leak into output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.errors import SchemaError, did_you_mean

TMP = "__rf_"

# candidates (postprocess input)
QUERY_ID = "query_id"
ENTITY_ID = "entity_id"
DOC_ID = "doc_id"
ENTITY_TYPE = "entity_type"
CHUNK_INDEX = "chunk_index"
TEXT = "text"
SIMILARITY = "similarity"
RERANK_SCORE = "rerank_score"
START_CHAR = "start_char"
END_CHAR = "end_char"

# postprocess output
BLOCK_RANK = "block_rank"
START_CHUNK_INDEX = "start_chunk_index"
END_CHUNK_INDEX = "end_chunk_index"
MAX_SIMILARITY = "max_similarity"
AVG_SIMILARITY = "avg_similarity"
SOURCE_CHUNK_COUNT = "source_chunk_count"
RANKING_SCORE = "ranking_score"
CHAR_COUNT = "char_count"
TRUNCATED = "truncated"
CHUNK_INDEXES = "chunk_indexes"

BLOCK_COLUMNS: tuple[str, ...] = (
    QUERY_ID,
    BLOCK_RANK,
    ENTITY_TYPE,
    ENTITY_ID,
    START_CHUNK_INDEX,
    END_CHUNK_INDEX,
    TEXT,
    MAX_SIMILARITY,
    AVG_SIMILARITY,
    SOURCE_CHUNK_COUNT,
    RERANK_SCORE,
    RANKING_SCORE,
    CHAR_COUNT,
    TRUNCATED,
    CHUNK_INDEXES,
)

# fetch
QUERY = "query"
RANK = "rank"
CONTENT = "content"
CONTENT_LENGTH = "content_length"
STRATEGY = "strategy"
PASSAGES = "passages"
HIGHLIGHT = "highlight"

# window / chunk
SECTION_INDEX = "section_index"
TITLE = "title"
WINDOW_INDEX = "window_index"

Frame = pl.DataFrame | pl.LazyFrame | pa.Table


def to_lazy(data: Any, what: str) -> pl.LazyFrame:
    """Accept a Polars DataFrame/LazyFrame or a pyarrow Table; return a LazyFrame."""
    if isinstance(data, pl.LazyFrame):
        return data
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(data).lazy()  # type: ignore[union-attr]
    raise SchemaError(
        f"{what} must be a polars DataFrame/LazyFrame or a pyarrow Table, got {type(data).__name__}"
    )


def require_columns(schema: Mapping[str, Any], names: Iterable[str], what: str) -> None:
    """Raise :class:`SchemaError` naming the first missing column of ``names``."""
    found = list(schema)
    for name in names:
        if name not in schema:
            raise SchemaError(
                f"{what}: missing column '{name}'; found: {found}{did_you_mean(name, found)}"
            )


def _kind(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype == pl.String:
        return "string"
    if dtype == pl.Boolean:
        return "bool"
    if dtype == pl.Null:
        return "null"
    return "other"


def require_kind(
    schema: Mapping[str, pl.DataType], name: str, kinds: Iterable[str], what: str
) -> None:
    """Raise :class:`SchemaError` unless column ``name`` has one of ``kinds``.

    Kinds are ``int``, ``float``, ``string``, ``bool``; an all-null column (dtype
    ``Null``) is accepted everywhere.
    """
    allowed = tuple(kinds)
    kind = _kind(schema[name])
    if kind == "null" or kind in allowed:
        return
    raise SchemaError(
        f"{what}: column '{name}' has type {schema[name]}; expected {' or '.join(allowed)}"
    )
