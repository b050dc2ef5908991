"""Input checks and canonical columns for ``postprocess``.

The schema is checked before any plan is built (missing columns, wrong types); value
checks (null query ids, NaN or infinite scores, null offsets) run inside the plan as
whole-column kernels, raising :class:`~ragframe.errors.DataError` when collected.
"""

from __future__ import annotations

from typing import TypedDict, Unpack

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
    name: str, dtype: pl.DataType | type[pl.DataType], what: str, **naming: Unpack[Naming]
) -> pl.Expr:
    """:func:`~ragframe._validate.checked` with postprocess's rule for column ``name``:
    nulls refused in query ids and offsets (:data:`_PRESENT`), with the hint of
    :data:`_NULL_HINTS` after what was expected."""
    hint = _NULL_HINTS.get(name, "")
    return checked(name, dtype, what, **naming, present=name in _PRESENT, hint=hint)


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


def canonical(lf: pl.LazyFrame, has_store: bool, offsets: bool) -> tuple[pl.LazyFrame, list[str]]:
    """Check the candidate schema; return canonical columns and passthrough names.

    The result has ``c.T_ROW`` (input order), the :data:`KNOWN` columns (the optional ones,
    :data:`OPTIONAL`, only when given: see :func:`absent`), ``text`` and the offsets
    unless a chunk store supplies them, and the passthrough columns.
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

    key = (c.QUERY_ID, c.QUERY_ID)
    text_side = (
        []
        if has_store
        else [pl.col(c.TEXT).cast(pl.String), *_offset_exprs(offsets, "candidates", key)]
    )
    entity = pl.String if schema[c.ENTITY_ID] == pl.String else pl.Int64
    shown = names.get(c.ENTITY_ID)
    out = lf.with_row_index(c.T_ROW).select(
        c.T_ROW,
        validated(
            c.QUERY_ID, pl.String if schema[c.QUERY_ID] == pl.String else pl.Int64, "candidates"
        ),
        validated(c.ENTITY_ID, entity, "candidates", shown=shown, key=key),
        *([pl.col(c.ENTITY_TYPE).cast(pl.String)] if c.ENTITY_TYPE in schema else []),
        validated(c.CHUNK_INDEX, pl.Int64, "candidates", key=key).fill_null(0),
        validated(c.SIMILARITY, pl.Float64, "candidates", key=key),
        *(
            [validated(c.RERANK_SCORE, pl.Float64, "candidates", key=key)]
            if c.RERANK_SCORE in schema
            else []
        ),
        *([] if has_store else text_side),
        *passthrough,
    )
    return out, passthrough


def _offset_exprs(offsets: bool, what: str, key: tuple[str, str] | None = None) -> list[pl.Expr]:
    return [validated(n, pl.Int64, what, key=key) for n in OFFSETS] if offsets else []


def store_key(entity_dtype: pl.DataType) -> list[pl.Expr]:
    """The chunk store join key over ``entity_id`` and ``chunk_index``, as expressions
    for either side. Integer entities: one Int128, entity * 2**64 + chunk index + 2**63,
    distinct for distinct pairs (one-column joins and duplicate checks are cheaper than
    two-column ones); string entities: both columns. Null parts give a null key (it
    matches nothing, as a null in a two-column key)."""
    if entity_dtype == pl.String:
        return [pl.col(c.ENTITY_ID), pl.col(c.CHUNK_INDEX)]
    entity = pl.col(c.ENTITY_ID).cast(pl.Int128)
    return [entity * 2**64 + (pl.col(c.CHUNK_INDEX).cast(pl.Int128) + 2**63)]


def _first_rows(key: pl.Series) -> pl.Series:
    """Whether each row holds the first occurrence of its key (one Int128 column, or a
    struct of entity and chunk index). A store sorted by key (the usual case: chunkers
    write documents in order) has its repeats next to each other, so a row is first
    where its key differs from the previous row's; otherwise Polars'
    ``is_first_distinct`` decides (a hash of every key)."""
    if key.dtype == pl.Int128:
        if key.is_sorted():  # nulls first: null equals null, as in is_first_distinct
            return key.ne_missing(key.shift(1)) | (pl.int_range(len(key), eager=True) == 0)
        return key.is_first_distinct()
    entity, chunk = key.struct.field(c.ENTITY_ID), key.struct.field(c.CHUNK_INDEX)
    if not entity.has_nulls() and not chunk.has_nulls():
        same = entity == entity.shift(1)
        later = (entity > entity.shift(1)) | (same & (chunk >= chunk.shift(1)))
        if later.slice(1).all():  # sorted by (entity, chunk index)
            return (~(same & (chunk == chunk.shift(1)))).fill_null(True)
    return key.is_first_distinct()


def chunk_store(
    store: pl.LazyFrame, candidates: pl.Schema, offsets: bool
) -> tuple[pl.LazyFrame, list[pl.Expr], list[str]]:
    """The chunk store, keyed like the candidates; the first row wins per key.

    Returns the store (its key, ``text`` and the offsets), then the key as expressions
    over the candidates and the store's key columns, for a join (:func:`store_key`).
    """
    store, schema = _aliased(store)
    need = [c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT, *(OFFSETS if offsets else ())]
    require_columns(schema, need, "chunks")
    kind = ("string",) if candidates[c.ENTITY_ID] == pl.String else ("int",)
    require_kind(schema, c.ENTITY_ID, kind, "chunks")
    _check_kinds(schema.__class__({n: schema[n] for n in need[1:]}), "chunks")
    key = store_key(candidates[c.ENTITY_ID])  # unnamed: Polars takes no alias in a join key
    names = [c.ENTITY_ID, c.CHUNK_INDEX] if len(key) > 1 else [c.T_KEY]
    typed = store.select(
        pl.col(c.ENTITY_ID).cast(candidates[c.ENTITY_ID]),
        pl.col(c.CHUNK_INDEX).cast(pl.Int64),
        pl.col(c.TEXT).cast(pl.String),
        *_offset_exprs(offsets, "chunks"),
    )
    named = (k.alias(n) for k, n in zip(key, names, strict=True))
    keyed = typed.select(*named, c.TEXT, *(OFFSETS if offsets else ()))
    whole = pl.struct(*names) if len(names) > 1 else pl.col(names[0])
    first = whole.map_batches(_first_rows, return_dtype=pl.Boolean)
    return keyed.filter(first), key, names
