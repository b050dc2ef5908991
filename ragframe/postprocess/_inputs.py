"""Input checks and canonical columns for ``postprocess``.

The schema is checked before any plan is built (missing columns, wrong types); value
checks (null query ids, NaN or infinite scores, null offsets) run inside the plan as
whole-column kernels, raising :class:`~ragframe.errors.DataError` when collected. An
input already in memory has its values tested when the plan is built: a clean column
is only cast there (its check could not fail), any other keeps its check in the plan,
so the error still comes when collected.
"""

from __future__ import annotations

from typing import NamedTuple, TypedDict, Unpack

import polars as pl

from ragframe import schema as c
from ragframe._validate import checked
from ragframe.errors import SchemaError
from ragframe.schema import TMP, require_columns, require_kind

OFFSETS = (c.START_CHAR, c.END_CHAR)
_KINDS = {
    c.QUERY_ID: ("int", "string"),
    c.ENTITY_ID: ("int", "string"),
    c.ENTITY_TYPE: ("string",),
    c.CHUNK_INDEX: ("int",),
    c.TEXT: ("string",),
    c.SIMILARITY: ("float", "int"),
    c.RERANK_SCORE: ("float", "int"),
    c.START_CHAR: ("int",),
    c.END_CHAR: ("int",),
}
"""Every candidate column postprocess reads, and the kinds of type each may have."""
KNOWN = tuple(n for n in _KINDS if n not in (c.TEXT, *OFFSETS))
"""Candidate columns used for ranking; ``text`` (and offsets) travel separately."""

OPTIONAL = {c.ENTITY_TYPE: pl.String, c.RERANK_SCORE: pl.Float64}
"""Optional candidate columns: all null when absent."""


def absent(given: pl.Schema) -> list[pl.Expr]:
    """Null literals for the optional columns the input lacks: added where first needed
    (on the reachable rows), not carried through the ranking sort."""
    return [pl.lit(None, dtype=dt).alias(n) for n, dt in OPTIONAL.items() if n not in given]


_NULL_HINTS = {
    c.QUERY_ID: " (every candidate belongs to a query)",
    c.SIMILARITY: " (use null for a missing score)",
    c.RERANK_SCORE: " (use null for a missing score)",
    c.START_CHAR: " (overlap='offsets' needs the offsets of every chunk)",
    c.END_CHAR: " (overlap='offsets' needs the offsets of every chunk)",
}
_PRESENT = (c.QUERY_ID, c.START_CHAR, c.END_CHAR)
"""Columns that may not hold nulls."""

RESERVED = tuple(n for n in c.BLOCK_COLUMNS if n not in (*KNOWN, c.TEXT))
"""Output columns an input column may not be named like (it would be passed through)."""


class Naming(TypedDict, total=False):
    """How :func:`~ragframe._validate.checked`'s error names what failed: ``shown``, the
    column as the user names it; ``key``, the query id column and its user name (the
    queries affected are counted and the first named)."""

    shown: str | None
    key: tuple[str, str] | None


def validated(
    name: str,
    dtype: pl.DataType | type[pl.DataType],
    what: str,
    given: pl.Series | None = None,
    **naming: Unpack[Naming],
) -> pl.Expr:
    """:func:`~ragframe._validate.checked` with postprocess's rule for column ``name``:
    nulls refused in query ids and offsets (:data:`_PRESENT`), with the hint of
    :data:`_NULL_HINTS` after what was expected. ``given``: its values, where the input
    is in memory (clean ones are only cast)."""
    hint = _NULL_HINTS.get(name, "")
    present = name in _PRESENT
    return checked(name, dtype, what, **naming, present=present, hint=hint, given=given)


def user_names(schema: pl.Schema) -> dict[str, str]:
    """Canonical column name -> the input's own (``doc_id`` where it stands for
    ``entity_id``)."""
    if c.ENTITY_ID not in schema and c.DOC_ID in schema:
        return {c.ENTITY_ID: c.DOC_ID}
    return {}


def _check_passthrough(passthrough: list[str], what: str) -> None:
    taken = [name for name in passthrough if name in RESERVED]
    if taken:
        raise SchemaError(
            f"{what}: column '{taken[0]}' is named like an output column; "
            f"output columns {list(RESERVED)} are reserved; "
            f"hint: rename it (e.g. to 'input_{taken[0]}')"
        )


def _aliased(lf: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.Schema]:
    schema = lf.collect_schema()
    if c.ENTITY_ID not in schema and c.DOC_ID in schema:
        lf = lf.rename({c.DOC_ID: c.ENTITY_ID})
        schema = lf.collect_schema()
    return lf, schema


def _check_kinds(schema: pl.Schema, what: str, names: dict[str, str] | None = None) -> None:
    """The kinds of the known columns; ``names``: canonical -> the input's own name,
    used in the message (``doc_id``)."""
    names = names or {}
    for name, kinds in _KINDS.items():
        if name in schema:
            shown = names.get(name, name)
            require_kind({shown: schema[name]}, shown, kinds, what)


def canonical(
    lf: pl.LazyFrame,
    has_store: bool,
    offsets: bool,
    frame: pl.DataFrame | None = None,
    rows: pl.Series | None = None,
) -> tuple[pl.LazyFrame, list[str]]:
    """Check the candidate schema; return canonical columns and passthrough names.

    The result has ``c.T_ROW`` (input order), the :data:`KNOWN` columns (the optional ones,
    :data:`OPTIONAL`, only when given: see :func:`absent`), ``text`` and the offsets
    unless a chunk store supplies them, and the passthrough columns. ``frame``: the
    input ``lf`` reads, where it is in memory: the values of its clean columns are
    checked now and the plan only casts them (their checks could not fail). ``rows``:
    the ``c.T_ROW`` to give the rows instead of their index (their rows of the chunk
    store, found when the plan is built).
    """
    names = user_names(lf.collect_schema())
    lf, schema = _aliased(lf)
    mine = [] if has_store else [c.TEXT, *(OFFSETS if offsets else ())]
    required = [c.QUERY_ID, c.ENTITY_ID, c.CHUNK_INDEX, c.SIMILARITY, *mine]
    require_columns(schema, required, "candidates", {c.ENTITY_ID: c.DOC_ID})
    clash = [n for n in (c.TEXT, *(OFFSETS if offsets else ())) if has_store and n in schema]
    if clash:
        raise SchemaError(
            f"candidates: has {clash} and a chunk store was given; expected one source "
            "(drop the columns or pass chunks=None)"
        )
    _check_kinds(schema, "candidates", names)
    reserved = [name for name in schema if name.startswith(TMP)]
    if reserved:
        raise SchemaError(
            f"candidates: column names starting with '{TMP}' are reserved: {reserved}"
        )
    used = {*KNOWN, c.TEXT, *(OFFSETS if offsets else ())}
    passthrough = [name for name in schema if name not in used]
    _check_passthrough(passthrough, "candidates")

    given = _Given(frame, names)
    if rows is None:
        numbered = lf.with_row_index(c.T_ROW)
    elif frame is None:
        numbered = lf.with_columns(rows)
    else:  # beside the input's own columns: a literal Series in the plan costs more
        numbered, _ = _aliased(frame.hstack([rows]).lazy())
    out = numbered.select(
        c.T_ROW, *_checked_columns(schema, has_store, offsets, given), *passthrough
    )
    return out, passthrough


class _Given(NamedTuple):
    """The in-memory input a plan reads (if it is), and its own column names."""

    frame: pl.DataFrame | None
    names: dict[str, str]
    """Canonical column name -> the input's own (:func:`user_names`)."""

    def column(self, name: str) -> pl.Series | None:
        """Column ``name`` of the input, where it is in memory."""
        return None if self.frame is None else self.frame[self.names.get(name, name)]


def _checked_columns(
    schema: pl.Schema, has_store: bool, offsets: bool, given: _Given
) -> list[pl.Expr]:
    """The canonical :data:`KNOWN` columns (and, without a store, the text side), each
    checked (:func:`validated`) and cast."""
    key = (c.QUERY_ID, c.QUERY_ID)
    column = given.column
    text_side = (
        []
        if has_store
        else [pl.col(c.TEXT).cast(pl.String), *_offset_exprs(offsets, "candidates", key, given)]
    )
    query = pl.String if schema[c.QUERY_ID] == pl.String else pl.Int64
    entity = pl.String if schema[c.ENTITY_ID] == pl.String else pl.Int64
    shown = given.names.get(c.ENTITY_ID)
    index = column(c.CHUNK_INDEX)
    chunk = validated(c.CHUNK_INDEX, pl.Int64, "candidates", index, key=key)
    scores = [n for n in (c.SIMILARITY, c.RERANK_SCORE) if n in schema]
    return [
        validated(c.QUERY_ID, query, "candidates", column(c.QUERY_ID)),
        validated(c.ENTITY_ID, entity, "candidates", column(c.ENTITY_ID), shown=shown, key=key),
        *([pl.col(c.ENTITY_TYPE).cast(pl.String)] if c.ENTITY_TYPE in schema else []),
        chunk if index is not None and not index.null_count() else chunk.fill_null(0),
        *(validated(n, pl.Float64, "candidates", column(n), key=key) for n in scores),
        *text_side,
    ]


def _offset_exprs(
    offsets: bool,
    what: str,
    key: tuple[str, str] | None = None,
    given: _Given | None = None,
) -> list[pl.Expr]:
    if not offsets:
        return []
    column = (given or _Given(None, {})).column
    return [validated(n, pl.Int64, what, column(n), key=key) for n in OFFSETS]
