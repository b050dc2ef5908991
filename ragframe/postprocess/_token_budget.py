"""Rule 10 in tokens (SPEC 1, "Budgets in tokens"): take blocks in rule 9's order up to
``max_blocks`` and ``max_tokens``, each block counted on its own text; the first block
alone may be truncated: to the longest prefix within the budget, then at rule 10's
whitespace and trimmed.

The longest prefix is found by bisection over prefix lengths in code points, in rounds
over every truncated block at once (one batch count per round): ``lo = 0``, ``hi =
len(text)`` (whose count is over the budget), and while ``hi - lo > 1`` the middle
length's prefix is counted, ``lo = mid`` when it fits, else ``hi = mid``; the prefix is
``text[:lo]``. Counts grow with the prefix for every real tokenizer almost always; where
they do not, bisection still gives a prefix that fits (the reference bisects the same
way). Then rule 10's cut on that prefix: its length ``L`` plays the seed's ``r``
(positions ``L-1`` down to ``max(0, L-80) + 1``), and the result is Java-trimmed and
counted again (``token_count`` is always the output text's own count).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe.postprocess._budget import _WS_CLASS, TRIM_CHARS, TRUNCATE_WINDOW
from ragframe.postprocess._config import PostprocessConfig
from ragframe.postprocess._tokens import I64, TokenCounter, count_texts


def _filled(values: I64, present: pl.Series, name: str) -> pl.Series:
    """``values`` at the rows where ``present``, null elsewhere."""
    mask = present.to_numpy()
    out = np.zeros(len(mask), dtype=np.int64)
    out[mask] = values
    return pl.Series(name, out, dtype=pl.Int64).scatter(np.flatnonzero(~mask), None)


def counted(texts: pl.Expr, counter: TokenCounter) -> pl.Expr:
    """Each non-null text's token count (null: null), the whole column in one batch."""

    def count(column: pl.Series) -> pl.Series:
        present = column.is_not_null()
        return _filled(count_texts(counter, column.filter(present)), present, column.name)

    return texts.map_batches(count, return_dtype=pl.Int64)


def _bisect(texts: pl.Series, counter: TokenCounter, limit: int) -> I64:
    """The bisection's prefix length of each text (module docstring), in rounds."""
    lo = np.zeros(len(texts), dtype=np.int64)
    hi = texts.str.len_chars().cast(pl.Int64).to_numpy().copy()
    while True:
        open_ = np.flatnonzero(hi - lo > 1)
        if not len(open_):
            return lo
        mid = (lo[open_] + hi[open_]) // 2
        heads = pl.DataFrame({"t": texts.gather(open_), "m": mid})
        prefixes = heads.select(pl.col("t").str.slice(0, pl.col("m"))).to_series()
        fits = count_texts(counter, prefixes) <= limit  # one batch per round
        lo[open_[fits]] = mid[fits]
        hi[open_[~fits]] = mid[~fits]


def longest_prefix(texts: pl.Expr, counter: TokenCounter, limit: int) -> pl.Expr:
    """The length of the longest prefix of each non-null text within ``limit`` tokens,
    by bisection (module docstring); null for a null text."""

    def prefix(column: pl.Series) -> pl.Series:
        present = column.is_not_null()
        return _filled(_bisect(column.filter(present), counter, limit), present, column.name)

    return texts.map_batches(prefix, return_dtype=pl.Int64)


def cut(text: pl.Expr, limit: pl.Expr) -> pl.Expr:
    """Rule 10's cut at a per-row ``limit`` (at most the text's length): at the last
    Java whitespace at positions ``max(0, limit - 80) + 1`` to ``limit - 1``, else at
    ``limit``; then Java-trim."""
    first = pl.max_horizontal(limit - TRUNCATE_WINDOW, 0) + 1  # the first position looked at
    window = text.str.slice(first, pl.max_horizontal(limit - first, 0))
    after = window.str.extract(f"[{_WS_CLASS}]([^{_WS_CLASS}]*)$", 1)
    at = pl.when(after.is_null()).then(limit).otherwise(limit - 1 - after.str.len_chars())
    return text.str.slice(0, at).str.strip_chars(TRIM_CHARS)


def budget(blocks: pl.LazyFrame, config: PostprocessConfig, passthrough: list[str]) -> pl.LazyFrame:
    """Rule 10 in tokens on blocks in rule 9's order with their ``block_rank`` and, where
    the merge counted it, ``c.T_TOKENS`` (:func:`ragframe.postprocess._token_merge.blocks`)."""
    counter, cap = config.counter, config.max_tokens
    if counter is None:
        raise RuntimeError("internal error: a token budget without a tokenizer")
    rank, tokens, text = pl.col(c.BLOCK_RANK), pl.col(c.T_TOKENS), pl.col(c.TEXT)
    unknown = pl.when(tokens.is_null()).then(text)  # blocks of one chunk, not counted yet
    truncated = tokens > cap
    return (
        blocks.filter(rank < config.max_blocks)
        .with_columns(pl.coalesce(tokens, counted(unknown, counter)).alias(c.T_TOKENS))
        .filter((tokens.cum_sum().over(c.QUERY_ID) <= cap) | (rank == 0))
        .with_columns(longest_prefix(pl.when(truncated).then(text), counter, cap).alias(c.T_LENGTH))
        .with_columns(
            pl.when(truncated).then(cut(text, pl.col(c.T_LENGTH))).otherwise(text).alias(c.TEXT),
            truncated.alias(c.TRUNCATED),
        )
        .with_columns(
            pl.coalesce(counted(pl.when(truncated).then(text), counter), tokens).alias(
                c.TOKEN_COUNT
            ),
            pl.when(truncated)
            .then(text.str.len_chars().cast(pl.Int64))
            .otherwise(pl.col(c.T_CHARS))
            .alias(c.CHAR_COUNT),
        )
        .select(*c.TOKEN_BLOCK_COLUMNS, *passthrough)
    )


def with_token_counts(
    blocks: pl.LazyFrame, counter: TokenCounter, passthrough: list[str]
) -> pl.LazyFrame:
    """Character-mode output with each block's ``token_count`` (one batch)."""
    return blocks.with_columns(counted(pl.col(c.TEXT), counter).alias(c.TOKEN_COUNT)).select(
        *c.TOKEN_BLOCK_COLUMNS, *passthrough
    )
