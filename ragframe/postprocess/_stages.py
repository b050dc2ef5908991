"""The steps of ``postprocess``, each reading only the parameters it needs, so that a
sweep can share a step among every configuration that agrees on them:

==============  ==============================================  ==========================
step            SPEC 1                                           parameters read
==============  ==============================================  ==========================
:func:`prepare`  input columns, text source, missing text        :data:`PREPARE_FIELDS`
:func:`select`   rules 1-4 (ranking, distinct top-K, threshold)  :data:`SELECT_FIELDS`
:func:`merge`    rules 5-9 (sort, group, merge, order blocks)    :data:`MERGE_FIELDS`
                 (and 10 with ``budgeted``: in characters, no    (and the budget's two)
                 text is written for the blocks it drops)
:func:`budget`   rule 10 (block and character/token budgets)     the budget's two
:func:`finish`   missing text's default: an error when collected  none
==============  ==============================================  ==========================

``postprocess`` itself runs :func:`select` and :func:`merge` as one step,
:func:`blocks`: one map over whole columns, in which the rows the selection keeps go
straight to the merge's kernel (no frame between them, the texts read in place once).
A large batch whose queries come in order runs as two halves of whole queries, each on
a thread of its own with its kernels on that thread (:func:`_halves`): the glue between
the kernels, numpy and Polars calls that release the GIL, then runs on both CPUs too.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from ragframe import schema as c
from ragframe._kernels._parts import PARALLEL_ROWS, one_thread
from ragframe.postprocess import (
    _budget,
    _inputs,
    _merge,
    _missing,
    _select,
    _texts,
    _token_budget,
    _token_merge,
)
from ragframe.postprocess._config import PostprocessConfig
from ragframe.schema import Frame, in_memory, to_lazy

PREPARE_FIELDS = ("overlap", "missing_text")
SELECT_FIELDS = ("top_k", "min_similarity")
MERGE_FIELDS = (
    "max_chunk_gap",
    "max_merged_block_characters",
    "overlap",
    "length",
    "tokenizer",
    "max_block_tokens",
)

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
    candidates, chunks = in_memory(candidates), in_memory(chunks)  # Arrow: read once
    given = to_lazy(candidates, "candidates")
    typed = c.ENTITY_TYPE in given.collect_schema()  # else every type is null
    frame = candidates if isinstance(candidates, pl.DataFrame) else None  # in memory
    found = _texts.rows_now(frame, chunks)  # the store rows, where both are in memory
    rows = None if found is None else found[0]
    lf, passthrough = _inputs.canonical(given, chunks is not None, offsets, frame, rows)
    schema = lf.collect_schema()
    missing = None
    texts: pl.LazyFrame | None = None
    side = [c.TEXT, *(_inputs.OFFSETS if offsets else ())] if chunks is None else []
    if chunks is not None:  # each candidate's row of the store, from one lookup
        texts, lf, missing = _with_store(lf, found, chunks, schema, config)
    zero: int | str = "" if schema[c.ENTITY_ID] == pl.String else 0
    known = [name for name in _inputs.KNOWN if name in schema]
    slim = lf.select(c.T_ROW, *known, *side, *passthrough)  # passthrough rides along
    absent = _inputs.absent(schema)
    return Prepared(slim, texts, zero, typed, absent, passthrough, missing)


def _with_store(
    lf: pl.LazyFrame,
    found: tuple[pl.Series, int] | None,
    chunks: Frame,
    schema: pl.Schema,
    config: PostprocessConfig,
) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame | None]:
    """The chunk store (cached: the lookup, the walks and the merge read it), the
    candidates ``lf`` with their rows of it (``c.T_ROW``) as the missing-text policy
    leaves them, and those without text where that is an error. ``found``: their
    rows, found when the plan was built (:func:`._texts.rows_now`: ``lf`` has them),
    and how many candidates have none: when none lacks one, no policy has anything to
    do (no filter, no check in the plan)."""
    offsets = config.overlap == "offsets"
    texts = _texts.chunk_store(to_lazy(chunks, "chunks"), schema, offsets).cache()
    if found is None:
        lf = _texts.with_store_rows(lf, texts).cache()  # slim and missing read it
    elif found[1] == 0:  # every candidate has its text
        return texts, lf, None
    else:
        lf = lf.cache()
    if config.missing_text == "drop":
        return texts, _missing.present(lf), None
    return texts, lf, _missing.missing(lf) if config.missing_text == "error" else None


def select(prepared: Prepared, config: PostprocessConfig) -> pl.LazyFrame:
    """Rules 1-4: the chunks each query keeps, with their text."""
    p = prepared
    return _select.kept_chunks(
        p.slim, p.texts, p.zero, config.top_k, config.min_similarity, p.typed, p.absent
    )


def blocks(prepared: Prepared, config: PostprocessConfig) -> pl.LazyFrame:
    """Rules 1-10, the output's columns: :func:`select`, then :func:`merge` with
    ``budgeted``, as one map over the candidates followed by the text source's rows
    (:func:`_blocks_kernel`). With the cap in tokens, the two steps as they are."""
    p = prepared
    if config.length == "tokens" and config.counter is not None:
        return merge(p, select(p, config), config, budgeted=True)
    side = [c.TEXT, *(_inputs.OFFSETS if config.overlap == "offsets" else ())]
    rows = _select.selection_rows(p.slim, p.texts, side)
    columns = rows.collect_schema()
    if p.texts is not None:  # the candidates' columns, without the store's
        columns = pl.Schema({n: t for n, t in columns.items() if n not in side})
    kernel, schema = _blocks_kernel(p, config, columns, side)
    out = rows.map_batches(kernel, schema=schema)
    counter = config.counter
    return out if counter is None else _token_budget.with_token_counts(out, counter, p.passthrough)


def _blocks_kernel(
    p: Prepared, config: PostprocessConfig, columns: pl.Schema, side: list[str]
) -> tuple[Callable[[pl.DataFrame], pl.DataFrame], dict[str, pl.DataType]]:
    """The map of :func:`blocks` over a batch of
    :func:`ragframe.postprocess._select.selection_rows` (the candidates' ``columns``,
    then the text source's ``side``), and the schema of what it gives: the rows the
    selection keeps go straight to the merge's kernel, their texts read in place from
    the same source (no frame between the two, no text copied)."""
    rules = _select.Rules(config.top_k, config.min_similarity, p.typed, p.zero, p.absent)
    kept = pl.LazyFrame(schema=_select.kept_schema(columns, rules))
    the = _merge.kernel_inputs(kept, p.texts, config.overlap, p.passthrough)
    limits = (config.max_blocks, config.max_characters)
    gap, cap = config.max_chunk_gap, config.max_merged_block_characters
    stacked = side if p.texts is not None else None
    names = [*c.BLOCK_COLUMNS, *p.passthrough]

    def part(candidates: pl.DataFrame, source: pl.DataFrame) -> pl.DataFrame:
        chosen, views = _select.selected_views(candidates, source[c.TEXT], rules)
        if views is None and stacked is None:  # inline text: the chosen rows carry it
            found = _texts.row_texts(chosen, False, the.by_offsets)
        else:  # each row's text where the walk found it (or from the source's row)
            found = _texts.source_texts(chosen, source, the.by_offsets, views)
        return _merge._blocks_of(found, gap, cap, the.first, p.typed, limits).select(names)

    def kernel(batch: pl.DataFrame) -> pl.DataFrame:
        candidates, source = _select.rows_and_text(batch, stacked)
        cut = _halves(candidates)
        if cut is None:
            return part(candidates, source)
        halves = (candidates.slice(0, cut), candidates.slice(cut))

        def alone(half: pl.DataFrame) -> pl.DataFrame:
            with one_thread():
                return part(half, source)

        with ThreadPoolExecutor(2) as pool:
            return pl.concat(list(pool.map(alone, halves)))

    fields = {**the.fields, c.CHAR_COUNT: pl.Int64, c.TRUNCATED: pl.Boolean}
    return kernel, {name: fields[name] for name in names}


def _halves(candidates: pl.DataFrame) -> int | None:
    """Where to cut ``candidates`` in two halves of whole queries, queries ascending
    (each half's blocks then come before the next's), or None: fewer than four times
    :data:`~ragframe._kernels._parts.PARALLEL_ROWS` rows, or queries not in order.
    Each half runs the selection and the merge alone on a thread, its kernels on that
    thread (:func:`~ragframe._kernels._parts.one_thread`): on issue 27's workload, 2
    cores, the engine 66-76 -> 62-65 ms on the chunk store and 69-77 -> 63-65 inline
    (alternated processes), where the kernels on all CPUs left the steps between them
    on one."""
    query = candidates[c.QUERY_ID]
    if candidates.height < 4 * PARALLEL_ROWS or not query.is_sorted():
        return None
    cut = int(query.search_sorted(query[candidates.height // 2], side="right"))
    return cut if 0 < cut < candidates.height else None


def merge(
    prepared: Prepared, kept: pl.LazyFrame, config: PostprocessConfig, *, budgeted: bool = False
) -> pl.LazyFrame:
    """Rules 5-9: one row per block, each query's blocks in rule 9's order; with
    ``budgeted``, rule 10 too (the output's columns; only the blocks it keeps). In
    characters without a tokenizer, the budget is decided inside the merge (no text
    written for the blocks it drops); otherwise on the merged blocks (:func:`budget`)."""
    p = prepared
    gap, overlap, counter = config.max_chunk_gap, config.overlap, config.counter
    if config.length == "tokens" and counter is not None:  # the cap in tokens: its own path
        cap = config.max_block_tokens
        return _token_merge.blocks(
            kept, p.texts, gap, cap, counter, overlap, p.passthrough, p.typed,
            config if budgeted else None,
        )  # fmt: skip
    cap = config.max_merged_block_characters
    limits = (config.max_blocks, config.max_characters) if budgeted else None
    blocks = _merge.blocks(kept, p.texts, gap, cap, overlap, p.passthrough, p.typed, limits)
    if not budgeted or counter is None:
        return blocks
    return _token_budget.with_token_counts(blocks, counter, p.passthrough)


def budget(blocks: pl.LazyFrame, config: PostprocessConfig, passthrough: list[str]) -> pl.LazyFrame:
    """Rule 10 on :func:`merge`'s blocks (not ``budgeted``): in characters (the seed) or
    tokens; with a tokenizer, the output has each block's ``token_count``."""
    if config.length == "tokens":
        return _token_budget.budget(blocks, config, passthrough)
    out = _budget.budget(blocks, config, passthrough)
    counter = config.counter
    return out if counter is None else _token_budget.with_token_counts(out, counter, passthrough)


def finish(prepared: Prepared, blocks: pl.LazyFrame) -> pl.LazyFrame:
    """The output, raising when collected if candidates lack text (the default)."""
    if prepared.missing is None:
        return blocks
    return _missing.guarded(blocks, prepared.missing)
