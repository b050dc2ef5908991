"""The ``unified`` highlighter: sentence-bounded passages scored with BM25.

Rules, per pair (after Lucene's ``UnifiedHighlighter`` and ``PassageScorer``):

1. Sentences: a non-word run ends a sentence when it holds ``. ! ?`` followed later in
   the run by ASCII whitespace, or holds the CJK ``U+3002 U+FF01 U+FF1F``, or holds a blank line
   (:data:`ragframe.fetch._analysis.SENTENCE_END_RUST`); the text's last run ends the last one.
2. Pieces: a sentence longer than ``fragment_size`` is split at run boundaries; a run
   belongs to piece ``(run.start - sentence.start) // fragment_size``. A passage is one
   piece, from its first run's start to its last run's end, with ASCII whitespace
   trimmed from both edges.
3. Matches as in ``"fvh"`` (the first ``max_matches`` in text order). With
   ``k1 = 1.2, b = 0.75, pivot = 87``, ``n = 1 + len(content) / pivot`` and ``df(t)`` the
   term's matches in the document, ``weight(t) = (k1 + 1) * ln(1 + (n + 0.5) /
   (df(t) + 0.5))``; a passage with ``f(t)`` matches of each term scores
   ``(1 + 1 / ln(pivot + start)) * sum_t weight(t) * f(t) / (f(t) + k1 * ((1 - b) +
   b * (length / pivot)))``. Passages without matches are never chosen.
"""

from __future__ import annotations

import polars as pl

from ragframe import schema as c
from ragframe.fetch._analysis import ASCII_SPACE, SENTENCE_END_RUST, java_lower
from ragframe.fetch._config import HighlightConfig
from ragframe.fetch._passages import pair_matches, top_passages

K1, B, PIVOT = 1.2, 0.75, 87.0


def _with_pieces(runs: pl.LazyFrame, fragment_size: int) -> pl.LazyFrame:
    ends = ~pl.col(c.T_IS_WORD) & pl.col(c.T_RUN).str.contains(SENTENCE_END_RUST)
    before = ends.cast(pl.Int64).cum_sum().over(c.DOC_ID) - ends.cast(pl.Int64)
    runs = runs.with_columns(before.alias(c.T_SENTENCE))
    first = pl.col(c.START).min().over(c.DOC_ID, c.T_SENTENCE)
    return runs.with_columns(((pl.col(c.START) - first) // fragment_size).alias(c.T_PIECE))


def _trimmed(run: pl.Expr, is_word: pl.Expr, side: str) -> pl.Expr:
    stripped = (
        run.str.strip_chars_start(ASCII_SPACE)
        if side == "start"
        else run.str.strip_chars_end(ASCII_SPACE)
    )
    cut = run.str.len_chars().cast(pl.Int64) - stripped.str.len_chars().cast(pl.Int64)
    return pl.when(is_word).then(pl.lit(0, pl.Int64)).otherwise(cut)


def _passage_spans(pieces: pl.LazyFrame) -> pl.LazyFrame:
    """``doc_id, sentence, piece, start, end`` of every passage (trimmed)."""
    spans = pieces.group_by(c.DOC_ID, c.T_SENTENCE, c.T_PIECE).agg(
        pl.col(c.START).min(),
        pl.col(c.END).max(),
        _trimmed(pl.col(c.T_RUN), pl.col(c.T_IS_WORD), "start")
        .sort_by(c.START)
        .first()
        .alias(c.T_TRIM_START),
        _trimmed(pl.col(c.T_RUN), pl.col(c.T_IS_WORD), "end")
        .sort_by(c.START)
        .last()
        .alias(c.T_TRIM_END),
    )
    return spans.select(
        c.DOC_ID,
        c.T_SENTENCE,
        c.T_PIECE,
        (pl.col(c.START) + pl.col(c.T_TRIM_START)).alias(c.START),
        (pl.col(c.END) - pl.col(c.T_TRIM_END)).alias(c.END),
    )


def _score(length: pl.Expr) -> pl.Expr:
    docs = 1.0 + length.cast(pl.Float64) / PIVOT
    weight = (K1 + 1.0) * (1.0 + (docs + 0.5) / (pl.col(c.T_DOC_FREQ) + 0.5)).log()
    plen = (pl.col(c.END) - pl.col(c.START)).cast(pl.Float64)
    freq = pl.col(c.T_FREQ).cast(pl.Float64)
    return weight * freq / (freq + K1 * ((1.0 - B) + B * (plen / PIVOT)))


def unified_passages(
    work: pl.LazyFrame,
    docs: pl.LazyFrame,
    runs: pl.LazyFrame,
    terms: pl.LazyFrame,
    config: HighlightConfig,
) -> pl.LazyFrame:
    """``__rf_pair, start, end, score, __rf_fragment``: the chosen passages, in order."""
    pieces = _with_pieces(runs, config.fragment_size)
    tokens = pieces.filter(c.T_IS_WORD).select(
        c.DOC_ID,
        java_lower(pl.col(c.T_RUN)).alias(c.T_TOKEN),
        c.START,
        c.T_SENTENCE,
        c.T_PIECE,
    )
    matches = pair_matches(terms, tokens, config.max_matches)
    matches = matches.with_columns(pl.len().over(c.T_PAIR, c.T_TERM).alias(c.T_DOC_FREQ))
    per_term = matches.group_by(c.T_PAIR, c.DOC_ID, c.T_SENTENCE, c.T_PIECE, c.T_TERM).agg(
        pl.len().alias(c.T_FREQ), pl.col(c.T_DOC_FREQ).first()
    )
    per_term = per_term.join(_passage_spans(pieces), on=[c.DOC_ID, c.T_SENTENCE, c.T_PIECE])
    per_term = per_term.join(docs.select(c.DOC_ID, c.T_LENGTH), on=c.DOC_ID)
    norm = 1.0 + 1.0 / (PIVOT + pl.col(c.START).cast(pl.Float64)).log()
    scored = per_term.group_by(c.T_PAIR, c.DOC_ID, c.START, c.END).agg(
        (_score(pl.col(c.T_LENGTH)).sum() * norm.first()).alias(c.SCORE)
    )
    chosen = top_passages(scored, config).with_row_index(c.T_ORDER)
    chosen = chosen.join(docs.select(c.DOC_ID, c.CONTENT), on=c.DOC_ID)
    text = pl.col(c.CONTENT).str.slice(pl.col(c.START), pl.col(c.END) - pl.col(c.START))
    chosen = chosen.with_columns(text.alias(c.T_FRAGMENT)).sort(c.T_ORDER)
    return chosen.select(c.T_PAIR, c.START, c.END, c.SCORE, c.T_FRAGMENT)
