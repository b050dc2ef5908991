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
from ragframe.postprocess import _inputs, _merge, _missing, _select
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
    """The canonical candidates without text (a row index when the text is inline)."""
    texts: pl.LazyFrame
    """Where the text is: the inline text by row, or the chunk store (cached)."""
    on: tuple[list[pl.Expr], list[str]]
    """The text join's key, over the candidates and as ``texts``' columns."""
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
    if chunks is None:
        side = [c.TEXT, *(_inputs.OFFSETS if offsets else ())]
        texts = lf.select(c.T_ROW, *side).cache()  # both walk passes join it
        on: tuple[list[pl.Expr], list[str]] = ([pl.col(c.T_ROW)], [c.T_ROW])
    else:
        store, key, names = _inputs.chunk_store(to_lazy(chunks, "chunks"), schema, offsets)
        texts, on = store.cache(), (key, names)  # cached: both walk passes join it
        if config.missing_text == "drop":
            lf = _missing.present(lf, texts, key, names)
        elif config.missing_text == "error":
            missing = _missing.missing(lf, texts, key, names)
    zero: int | str = "" if schema[c.ENTITY_ID] == pl.String else 0
    known = [name for name in _inputs.KNOWN if name in schema]
    row = [c.T_ROW] if chunks is None else []  # the key of inline text
    slim = lf.select(*row, *known, *passthrough)  # passthrough rides along
    absent = _inputs.absent(schema)
    return Prepared(slim, texts, on, zero, typed, absent, passthrough, missing)


def select(prepared: Prepared, config: PostprocessConfig) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with their text."""
    p = prepared
    return _select.kept_chunks(
        p.slim, p.texts, p.on, p.zero, config.top_k, config.min_similarity, p.typed, p.absent
    )


def merge(
    prepared: Prepared, kept: pl.LazyFrame, config: PostprocessConfig, *, budgeted: bool = False
) -> pl.LazyFrame:
    """Rules 5-9: one row per block, each query's blocks in rule 9's order; with
    ``budgeted``, rule 10 too (the output's columns; only the blocks it keeps)."""
    cap = config.max_merged_block_characters
    gap, overlap = config.max_chunk_gap, config.overlap
    limits = (config.max_blocks, config.max_characters) if budgeted else None
    return _merge.blocks(kept, gap, cap, overlap, prepared.passthrough, prepared.typed, limits)


def finish(prepared: Prepared, blocks: pl.LazyFrame) -> pl.LazyFrame:
    """The output, raising when collected if candidates lack text (the default)."""
    if prepared.missing is None:
        return blocks
    return _missing.guarded(blocks, prepared.missing)
