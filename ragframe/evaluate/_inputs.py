"""What :func:`ragframe.evaluate` reads, checked before any plan runs: the cutoffs,
the budgets, the blocks (postprocess output as it is, fetch output as the content it
sends) and the ids of the judgements and the evaluated frames, met as
:mod:`._ids` says."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._validate import check_int
from ragframe.errors import ConfigError
from ragframe.evaluate._ids import check_kind, meeting, met, target


def cutoffs(k: object) -> list[int]:
    """The cutoffs: a positive integer or a non-empty list of them."""
    values: Any = [k] if isinstance(k, numbers.Integral) else k
    listed = isinstance(values, Sequence | np.ndarray) and not isinstance(values, str | bytes)
    if not listed or not len(values) or not all(map(_cutoff, values)):
        raise ConfigError(f"k must be a positive integer or a list of them, got {k!r}")
    return sorted({int(v) for v in values})


def _cutoff(value: object) -> bool:
    integral = isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)
    return integral and int(value) >= 1  # type: ignore[call-overload]


def budgets(
    max_blocks: object, max_characters: object, max_tokens: object, blocks: bool
) -> dict[str, int | None]:
    """The context's budgets, checked (each None or an integer >= 1; characters or
    tokens, not both; only with blocks)."""
    found: dict[str, int | None] = {}
    for name, value in (
        ("max_blocks", max_blocks),
        ("max_characters", max_characters),
        ("max_tokens", max_tokens),
    ):
        found[name] = None if value is None else check_int(name, value, 1)
        if value is not None and not blocks:
            raise ConfigError(f"{name} is a budget of the context's blocks; no blocks given")
    if found["max_characters"] is not None and found["max_tokens"] is not None:
        raise ConfigError(
            "max_characters and max_tokens: budget_share is against one budget; give the "
            "one the context was cut to (max_tokens for blocks budgeted in tokens)"
        )
    return found


def meet_ids(
    qrels: pl.DataFrame, frames: list[tuple[pl.LazyFrame, str]], what: str
) -> tuple[pl.DataFrame, list[pl.LazyFrame]]:
    """The judgements and the evaluated frames (each with its document column) with
    ids of one type per column (:mod:`ragframe.evaluate._ids`): the frames' own when
    the kinds agree, integers where one side has integers."""
    schemas = [f.collect_schema() for f, _ in frames]
    query = target([*(s[c.QUERY_ID] for s in schemas), qrels.schema[c.QUERY_ID]])
    doc = target(
        [*(s[n] for s, (_, n) in zip(schemas, frames, strict=True)), qrels.schema[c.DOC_ID]]
    )
    judged = qrels.with_columns(
        met(qrels[c.QUERY_ID], query, "qrels", f"the {what}' query_id"),
        met(qrels[c.DOC_ID], doc, "qrels", f"the {what}' document ids"),
    )
    out = []
    for (frame, name), schema in zip(frames, schemas, strict=True):
        out.append(
            frame.with_columns(
                meeting(c.QUERY_ID, query, schema[c.QUERY_ID], what, "the qrels' query_id"),
                meeting(name, doc, schema[name], what, "the qrels' doc_id"),
            )
        )
    return judged, out


def context_blocks(blocks: Any, chunks: Any, max_tokens: int | None) -> pl.LazyFrame:
    """The blocks context metrics read, checked: postprocess output as it is, fetch
    output (``content``) as the content it sends (see :func:`evaluate`)."""
    lf = c.to_lazy(blocks, "blocks")
    schema = lf.collect_schema()
    if c.CONTENT in schema:
        return _fetched(lf, schema, chunks)
    needed = [c.QUERY_ID, c.BLOCK_RANK, c.ENTITY_ID, c.CHAR_COUNT, c.TRUNCATED]
    c.require_columns(schema, needed, "blocks")
    for name in (c.BLOCK_RANK, c.CHAR_COUNT):
        c.require_kind(schema, name, ["int"], "blocks")
    c.require_kind(schema, c.TRUNCATED, ["bool"], "blocks")
    for name in (c.QUERY_ID, c.ENTITY_ID):
        check_kind(schema, name, "blocks")
    if chunks is not None:
        c.require_columns(schema, [c.CHUNK_INDEXES], "blocks (for duplicate_chars)")
    if max_tokens is not None:
        c.require_columns(schema, [c.TOKEN_COUNT], "blocks (budgeted in tokens)")
    return lf


def _fetched(lf: pl.LazyFrame, schema: pl.Schema, chunks: Any) -> pl.LazyFrame:
    """Fetch output as blocks of the content it sends."""
    if chunks is not None:
        raise ConfigError(
            "chunks with fetch output: the chunk store's offsets are the blocks', not the "
            "fetched content's; leave chunks out (fetch output has no duplicate_chars)"
        )
    doc = c.ENTITY_ID if c.ENTITY_ID in schema else c.DOC_ID
    order = c.BLOCK_RANK if c.BLOCK_RANK in schema else c.RANK
    c.require_columns(schema, [c.QUERY_ID, doc, order, c.CONTENT], "blocks (fetch output)")
    c.require_kind(schema, c.CONTENT, ["string"], "blocks (fetch output)")
    c.require_kind(schema, order, ["int"], "blocks (fetch output)")
    for name in (c.QUERY_ID, doc):
        check_kind(schema, name, "blocks (fetch output)")
    position = (
        pl.col(c.BLOCK_RANK)
        if order == c.BLOCK_RANK
        else pl.col(c.RANK).rank("ordinal").over(c.QUERY_ID).cast(pl.Int64) - 1
    )
    if c.STRATEGY in schema:
        truncated = pl.col(c.STRATEGY) == c.TRUNCATED_FALLBACK
    elif c.TRUNCATED in schema:
        truncated = pl.col(c.TRUNCATED)
    else:
        truncated = pl.lit(False)
    return lf.select(
        c.QUERY_ID,
        position.alias(c.BLOCK_RANK),
        pl.col(doc).alias(c.ENTITY_ID),
        pl.col(c.CONTENT).str.len_chars().fill_null(0).cast(pl.Int64).alias(c.CHAR_COUNT),
        truncated.fill_null(False).alias(c.TRUNCATED),
    )
