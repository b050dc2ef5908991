"""Missing text (SPEC 1, "Missing text"): candidates whose (entity, chunk index) has no
row in the chunk store.

A data problem, never silent. Found by the lookup that finds every candidate's row of
the store (:func:`ragframe.postprocess._texts.with_store_rows`; a null entity matches
nothing, so it has no text either); by default the plan raises
:class:`~ragframe.errors.DataError` when collected (:func:`guarded`),
``missing_text="drop"`` filters them away before ranking, and ``"empty"`` gives them no
text.
"""

from __future__ import annotations

import polars as pl

from ragframe import schema as c
from ragframe.errors import DataError

SHOWN = 5
"""Keys the error names."""

_FIELDS = (c.QUERY_ID, c.ENTITY_ID, c.CHUNK_INDEX)
_CHECK = c.TMP + "missing_text"


MESSAGE = (
    "chunks: {count} candidate(s) in {queries} query(ies) have no text in the chunk store; "
    "first keys (entity_id, chunk_index): {keys}; expected a store row for every candidate "
    "(missing_text='empty' treats them as empty text, 'drop' drops them)"
)
"""The error: how many candidates (and queries) miss text, and ``keys``, the first
:data:`SHOWN` (entity_id, chunk_index) keys as a Python list of pairs, ``...`` last where
there are more (:func:`_first_keys`)."""


def _first_keys(keys: pl.DataFrame) -> str:
    """``keys`` (entity and chunk index columns, in input order) as :data:`MESSAGE`
    names them: the first :data:`SHOWN` rows' tuples written as Python writes a list."""
    shown = repr(keys.head(SHOWN).rows())
    return shown if keys.height <= SHOWN else shown[:-1] + ", ...]"


def missing(candidates: pl.LazyFrame) -> pl.LazyFrame:
    """The candidates the store lacks, in input order: ``query_id``, ``entity_id`` and
    ``chunk_index``, from candidates whose ``c.T_ROW`` is their row of the store, -1
    for none (:func:`ragframe.postprocess._texts.with_store_rows`)."""
    return candidates.filter(pl.col(c.T_ROW) < 0).select(*_FIELDS)


def present(candidates: pl.LazyFrame) -> pl.LazyFrame:
    """``missing_text="drop"``: the candidates the store has, in input order."""
    return candidates.filter(pl.col(c.T_ROW) >= 0)


def _raise_any(rows: pl.Series) -> pl.Series:
    """Raise the error when there are rows; else all false (nothing to keep)."""
    if len(rows):
        parts = rows.struct.unnest()
        keys = _first_keys(parts.select(c.ENTITY_ID, c.CHUNK_INDEX))
        queries = parts[c.QUERY_ID].n_unique()
        raise DataError(MESSAGE.format(count=len(rows), queries=queries, keys=keys))
    return pl.Series(rows.name, [], dtype=pl.Boolean)


def guarded(out: pl.LazyFrame, lacking: pl.LazyFrame) -> pl.LazyFrame:
    """``out``, raising :class:`DataError` when collected if ``lacking`` (from
    :func:`missing`) has rows: ``out`` followed by no rows that a check over all of
    ``lacking`` at once must pass first."""
    check = pl.struct(*_FIELDS).map_batches(_raise_any, return_dtype=pl.Boolean)
    schema = out.collect_schema()
    nothing = (
        lacking.select(check.alias(_CHECK))
        .filter(_CHECK)  # literals alone would make one row: broadcast, then select
        .with_columns(pl.lit(None, dtype=dtype).alias(name) for name, dtype in schema.items())
        .select(schema.names())
    )
    return pl.concat([out, nothing], how="vertical")


def counts(lacking: pl.LazyFrame) -> pl.LazyFrame:
    """One row: ``candidates`` and ``queries`` that miss text (for summaries)."""
    return lacking.select(
        pl.len().cast(pl.Int64).alias("candidates"),
        pl.col(c.QUERY_ID).n_unique().cast(pl.Int64).alias("queries"),
    )
