"""The steps of ``postprocess``, each reading only the parameters it needs, so that a
sweep can share a step among every configuration that agrees on them:

==============  ==============================================  ==========================
step            SPEC 1                                           parameters read
==============  ==============================================  ==========================
:func:`prepare`  input columns, text source, missing text        :data:`PREPARE_FIELDS`
:func:`select`   rules 1-4 (ranking, distinct top-K, threshold)  :data:`SELECT_FIELDS`
:func:`merge`    rules 5-9 (sort, group, merge, order blocks)    :data:`MERGE_FIELDS`
                 (and 10 with ``budgeted``: no text is written   (and the budget's two)
                 for the blocks it drops)
:func:`budget`   rule 10 (block and character budgets)           the budget's two
:func:`finish`   missing text's default: an error when collected  none
==============  ==============================================  ==========================
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ragframe import schema as c
from ragframe.postprocess import _inputs, _merge, _missing, _select, _texts
from ragframe.postprocess._budget import budget
from ragframe.postprocess._config import PostprocessConfig
from ragframe.schema import Frame, to_lazy

PREPARE_FIELDS = ("overlap", "missing_text")
SELECT_FIELDS = ("top_k", "min_similarity")
MERGE_FIELDS = ("max_chunk_gap", "max_merged_block_characters", "overlap")

__all__ = ["MERGE_FIELDS", "PREPARE_FIELDS", "SELECT_FIELDS", "budget"]


@dataclass(frozen=True)
class Prepared:
    """The candidates as every later step reads them."""

    slim: pl.LazyFrame
    """The canonical candidates, each with ``c.T_ROW``: the row of ``texts`` that holds
    its text (-1: none); with inline text (``texts`` None), the text itself."""
    texts: pl.LazyFrame | None
    """The chunk store (cached), read in place through ``c.T_ROW``; None: inline text."""
    zero: int | str
    """What a null entity reads as in the group key."""
    typed: bool
    """Whether the input has an ``entity_type`` column."""
    absent: list[pl.Expr]
    """Null literals for the optional columns the input lacks."""
    passthrough: list[str]
    """The input's other columns, carried from each block's first chunk."""
    missing: pl.LazyFrame | None
    """The candidates without text in the store, when that is an error."""


def prepare(candidates: Frame, chunks: Frame | None, config: PostprocessConfig) -> Prepared:
    """Check and canonicalize the candidates, and say where their text comes from."""
    offsets = config.overlap == "offsets"
    given = to_lazy(candidates, "candidates")
    typed = c.ENTITY_TYPE in given.collect_schema()  # else every type is null
    lf, passthrough = _inputs.canonical(given, chunks is not None, offsets)
    schema = lf.collect_schema()
    missing = None
    texts: pl.LazyFrame | None = None
    side = [c.TEXT, *(_inputs.OFFSETS if offsets else ())] if chunks is None else []
    if chunks is not None:  # each candidate's row of the store, from one lookup
        store, _, names = _inputs.chunk_store(to_lazy(chunks, "chunks"), schema, offsets)
        texts = store.cache()  # cached: the lookup, the walks and the merge read it
        lf = _texts.with_store_rows(lf, texts, names).cache()  # slim and missing read it
        if config.missing_text == "drop":
            lf = _missing.present(lf)
        elif config.missing_text == "error":
            missing = _missing.missing(lf)
    zero: int | str = "" if schema[c.ENTITY_ID] == pl.String else 0
    known = [name for name in _inputs.KNOWN if name in schema]
    slim = lf.select(c.T_ROW, *known, *side, *passthrough)  # passthrough rides along
    absent = _inputs.absent(schema)
    return Prepared(slim, texts, zero, typed, absent, passthrough, missing)


def select(prepared: Prepared, config: PostprocessConfig) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with their text."""
    p = prepared
    return _select.kept_chunks(
        p.slim, p.texts, p.zero, config.top_k, config.min_similarity, p.typed, p.absent
    )


def merge(
    prepared: Prepared, kept: pl.LazyFrame, config: PostprocessConfig, *, budgeted: bool = False
) -> pl.LazyFrame:
    """Rules 5-9: one row per block, each query's blocks in rule 9's order; with
    ``budgeted``, rule 10 too (the output's columns; only the blocks it keeps)."""
    cap = config.max_merged_block_characters
    gap, overlap = config.max_chunk_gap, config.overlap
    limits = (config.max_blocks, config.max_characters) if budgeted else None
    return _merge.blocks(
        kept, prepared.texts, gap, cap, overlap, prepared.passthrough, prepared.typed, limits
    )


def finish(prepared: Prepared, blocks: pl.LazyFrame) -> pl.LazyFrame:
    """The output, raising when collected if candidates lack text (the default)."""
    if prepared.missing is None:
        return blocks
    return _missing.guarded(blocks, prepared.missing)
