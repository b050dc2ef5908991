"""Merge half of ``postprocess``: sort, group, remove overlap, build blocks.

SPEC 1, rules 5-8. Overlap removal runs per adjacent pair in the :mod:`_overlap`
kernel; splitting runs into size-capped blocks runs in the :mod:`_blocks` kernel; both
see whole columns. Everything else is Polars expressions.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ragframe import _blocks as k
from ragframe import _offsets as o
from ragframe import schema as c
from ragframe._overlap import contains_expr, cut_positions, overlap_lengths
from ragframe._select import ENTITY, NORM, POS, ROW, SIM, TYPE, segment_index
from ragframe._text import COLLAPSE_PATTERN
from ragframe.schema import TMP

SEQ = f"{TMP}seq"
FIRST_SEQ = f"{TMP}first_seq"
GROUP = f"{TMP}group"
BLOCK = f"{TMP}block"
_APP, _CUT, _KERNEL, _PAIR = f"{TMP}app", f"{TMP}cut", f"{TMP}kernel", f"{TMP}pair"
_PREV_TEXT, _PREV_NORM, _GAP_OK = f"{TMP}prev_text", f"{TMP}prev_norm", f"{TMP}gap_ok"
_SINGLE = f"{TMP}single"
_SIZE = f"{TMP}size"

# characters on which normalization and the seed's whitespace walk disagree
_NOT_PLAIN = (
    r"[\x00-\x08\x0E-\x1F\x{1680}\x{2000}-\x{2006}\x{2008}-\x{200A}"
    r"\x{2028}\x{2029}\x{205F}\x{3000}]"
)
_SEAM_WS = COLLAPSE_PATTERN.removesuffix("+")


def _prev(col: str) -> pl.Expr:
    """The previous row's value within the same group (rows sorted by group)."""
    return pl.when(pl.col(GROUP) == pl.col(GROUP).shift(1)).then(pl.col(col).shift(1))


def _overlap_cut(batch: pl.Series) -> pl.Series:
    """Kernel: for rows marked ``pair``, the cut position in ``text`` after the overlap
    with ``prev`` (-1: none); 0 for other rows."""
    parts = batch.struct.unnest()
    rows = np.flatnonzero(parts["pair"].fill_null(False).to_numpy())
    lengths = overlap_lengths(parts["prev"].gather(rows), parts["norm"].gather(rows))
    cuts = np.zeros(len(batch), dtype=np.int64)
    cuts[rows] = np.where(lengths > 0, cut_positions(parts["text"].gather(rows), lengths), -1)
    return pl.Series(batch.name, cuts, dtype=pl.Int64)


def _sequenced(kept: pl.LazyFrame) -> pl.LazyFrame:
    """Rule 5: sort by (entity, chunk index); a group is ordered by its first position."""
    return (
        kept.sort([c.QUERY_ID, ENTITY, c.CHUNK_INDEX, POS])
        .with_columns(segment_index(c.QUERY_ID).alias(SEQ))
        .with_columns(pl.len().over(c.QUERY_ID, TYPE, ENTITY).alias(_SIZE))
        .with_columns(
            pl.when(pl.col(_SIZE) > 1)
            .then(pl.col(SEQ).min().over(c.QUERY_ID, TYPE, ENTITY))
            .otherwise(pl.col(SEQ))
            .alias(FIRST_SEQ)
        )
    )


def _grouped(seq: pl.LazyFrame) -> pl.LazyFrame:
    """Rule 5: each group's chunks together, groups in first-seen order."""
    return seq.sort([c.QUERY_ID, FIRST_SEQ, SEQ]).with_columns(
        pl.struct(c.QUERY_ID, FIRST_SEQ).rle_id().alias(GROUP)
    )


def _gap_ok(max_gap: int) -> pl.Expr:
    """Rule 6: the chunk continues its predecessor's run (same group, small index gap)."""
    gap = pl.col(c.CHUNK_INDEX) - _prev(c.CHUNK_INDEX)
    return (gap <= max_gap).fill_null(False).alias(_GAP_OK)


def _pairwise(grouped: pl.LazyFrame, max_gap: int) -> pl.LazyFrame:
    """Rule 6-7 per adjacent pair: the text each chunk would append to its predecessor."""
    text = pl.col(c.TEXT)
    pair = pl.col(_GAP_OK) & (pl.col(_PREV_TEXT) != "") & (text != "")
    cut_input = pl.struct(
        pair.alias("pair"), pl.col(_PREV_NORM).alias("prev"), pl.col(NORM).alias("norm"), text
    )
    # the cut is 0 for a row that is no pair (its whole text), -1 for "\n" + whole text
    cut = pl.col(_CUT)
    app = pl.concat_str(
        pl.when(cut < 0).then(pl.lit("\n")).otherwise(pl.lit("")),
        pl.when(cut > 0).then(text.str.slice(cut)).otherwise(text),
    )
    return (
        grouped.with_columns(
            _gap_ok(max_gap),
            _prev(c.TEXT).alias(_PREV_TEXT),
            _prev(NORM).alias(_PREV_NORM),
        )
        .with_columns(
            pair.alias(_PAIR),
            cut_input.map_batches(_overlap_cut, return_dtype=pl.Int64, is_elementwise=True).alias(
                _CUT
            ),
        )
        .with_columns(app.alias(_APP))
    )


def _kernel_input() -> pl.Expr:
    """The block kernel's input; text tests run only on rows inside merge runs."""
    text, app, gap_ok = pl.col(c.TEXT), pl.col(_APP), pl.col(_GAP_OK)
    in_run = gap_ok | (
        gap_ok.shift(-1).fill_null(False) & (pl.col(GROUP) == pl.col(GROUP).shift(-1))
    )
    run_text, run_app = pl.when(in_run).then(text), pl.when(in_run).then(app)
    risky = (
        (pl.col(_PREV_TEXT) == "")
        | (pl.col(_PREV_NORM) == "")
        | contains_expr(pl.when(gap_ok).then(pl.col(NORM)).str.slice(1), pl.col(_PREV_NORM))
    )
    return pl.struct(
        pl.col(GROUP).alias(k.GROUP),
        gap_ok.alias(k.GAP_OK),
        text.str.len_chars().cast(pl.Int64).alias(k.RAW_LEN),
        app.str.len_chars().cast(pl.Int64).alias(k.APP_LEN),
        risky.fill_null(False).alias(k.RISKY),
        run_text.str.contains(_NOT_PLAIN).alias(k.NOT_PLAIN),
        run_app.str.contains(f"^[^{_SEAM_WS[1:-1]}]").alias(k.APP_HEAD),
        run_app.str.contains(f"{_SEAM_WS}$").alias(k.APP_TAIL),
        run_text.str.contains(f"{_SEAM_WS}$").alias(k.RAW_TAIL),
        run_text.alias(k.TEXT),
    )


def _single_blocks(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Blocks of one chunk (most of them): their fields are the chunk's own."""
    return rows.select(
        BLOCK,
        c.QUERY_ID,
        pl.col(TYPE).alias(c.ENTITY_TYPE),
        pl.col(ENTITY).alias(c.ENTITY_ID),
        pl.col(c.CHUNK_INDEX).alias(c.START_CHUNK_INDEX),
        pl.col(c.CHUNK_INDEX).alias(c.END_CHUNK_INDEX),
        c.TEXT,
        pl.col(SIM).alias(c.MAX_SIMILARITY),
        (pl.col(SIM) / 1).alias(c.AVG_SIMILARITY),
        pl.lit(1, dtype=pl.Int64).alias(c.SOURCE_CHUNK_COUNT),
        c.RERANK_SCORE,
        pl.coalesce(c.RERANK_SCORE, SIM).alias(c.RANKING_SCORE),
        pl.concat_list(c.CHUNK_INDEX).alias(c.CHUNK_INDEXES),
        ROW,
        FIRST_SEQ,
    )


def _merged_blocks(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Blocks of several chunks: concatenate appended texts, aggregate statistics."""
    rerank = pl.col(c.RERANK_SCORE).max()
    return rows.group_by(BLOCK).agg(
        pl.col(c.QUERY_ID).first(),
        pl.col(TYPE).first().alias(c.ENTITY_TYPE),
        pl.col(ENTITY).first().alias(c.ENTITY_ID),
        pl.col(c.CHUNK_INDEX).first().alias(c.START_CHUNK_INDEX),
        pl.col(c.CHUNK_INDEX).last().alias(c.END_CHUNK_INDEX),
        pl.col(_APP).str.join("").alias(c.TEXT),
        pl.col(SIM).max().alias(c.MAX_SIMILARITY),
        (pl.col(SIM).cum_sum().last() / pl.len()).alias(c.AVG_SIMILARITY),
        pl.len().cast(pl.Int64).alias(c.SOURCE_CHUNK_COUNT),
        rerank.alias(c.RERANK_SCORE),
        pl.coalesce(rerank, pl.col(SIM).max()).alias(c.RANKING_SCORE),
        pl.col(c.CHUNK_INDEX).alias(c.CHUNK_INDEXES),
        pl.col(ROW).first(),
        pl.col(FIRST_SEQ).first(),
    )


def blocks(kept: pl.LazyFrame, max_gap: int, cap: int, overlap: str = "text") -> pl.LazyFrame:
    """Rules 5-8: one row per block; (``FIRST_SEQ``, ``BLOCK``) orders blocks by group,
    then by position in the group.

    ``ROW`` is the input row of each block's first chunk. Row order is not kept. A chunk
    alone in its group is a block as it is; only groups of several chunks are merged.
    """
    seq = _sequenced(kept).cache()
    alone = _single_blocks(
        seq.filter(pl.col(_SIZE) == 1).with_columns(pl.lit(0, dtype=pl.Int64).alias(BLOCK))
    )
    merged = _merge_groups(seq.filter(pl.col(_SIZE) > 1), max_gap, cap, overlap)
    return pl.concat([alone, merged.select(alone.collect_schema().names())])


def _text_mode(grouped: pl.LazyFrame, max_gap: int, cap: int) -> pl.LazyFrame:
    """Seed overlap removal: block starts and each row's contribution ``_APP``."""
    return (
        _pairwise(grouped, max_gap)
        .with_columns(
            _kernel_input()
            .map_batches(k.block_kernel(cap), return_dtype=k.OUTPUT_DTYPE)
            .alias(_KERNEL)
        )
        .with_columns(
            pl.col(_KERNEL).struct.field(k.START).alias(k.START),
            pl.coalesce(pl.col(_KERNEL).struct.field(k.APP), pl.col(_APP)).alias(_APP),
        )
        .with_columns(
            pl.when(pl.col(k.START)).then(pl.col(c.TEXT)).otherwise(pl.col(_APP)).alias(_APP)
        )
    )


def _offsets_mode(grouped: pl.LazyFrame, max_gap: int, cap: int) -> pl.LazyFrame:
    """``overlap="offsets"``: block starts and contributions from character offsets."""
    text, cut = pl.col(c.TEXT), pl.col(_CUT)
    kernel_input = pl.struct(
        pl.col(GROUP).alias(k.GROUP),
        pl.col(_GAP_OK).alias(k.GAP_OK),
        text.str.len_chars().cast(pl.Int64).alias(k.RAW_LEN),
        pl.col(c.START_CHAR).alias(o.START_CHAR),
        pl.col(c.END_CHAR).alias(o.END_CHAR),
    )
    return (
        grouped.with_columns(_gap_ok(max_gap))
        .with_columns(
            kernel_input.map_batches(o.offsets_kernel(cap), return_dtype=o.OUTPUT_DTYPE).alias(
                _KERNEL
            )
        )
        .with_columns(
            pl.col(_KERNEL).struct.field(k.START).alias(k.START),
            pl.col(_KERNEL).struct.field(o.CUT).alias(_CUT),
        )
        .with_columns(
            pl.when(pl.col(k.START))
            .then(text)
            .when(cut < 0)
            .then(pl.concat_str(pl.lit("\n"), text))
            .otherwise(text.str.slice(cut))
            .alias(_APP)
        )
    )


def _merge_groups(seq: pl.LazyFrame, max_gap: int, cap: int, overlap: str) -> pl.LazyFrame:
    mode = _offsets_mode if overlap == "offsets" else _text_mode
    start = pl.col(k.START)
    rows = (
        mode(_grouped(seq), max_gap, cap)
        .with_columns(
            start.cum_sum().cast(pl.Int64).alias(BLOCK),
            (start & start.shift(-1).fill_null(True)).alias(_SINGLE),
        )
        .cache()
    )
    single = _single_blocks(rows.filter(pl.col(_SINGLE)))
    merged = _merged_blocks(rows.filter(~pl.col(_SINGLE)))
    return pl.concat([single, merged.select(single.collect_schema().names())])
