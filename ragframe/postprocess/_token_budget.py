"""Rule 10 in tokens (SPEC 1, "Budgets in tokens"): take blocks in rule 9's order up to
``max_blocks`` and ``max_tokens``, each block counted on its own text; the first block
alone may be truncated: to the longest prefix within the budget, then at rule 10's
whitespace and trimmed.

The longest prefix is found by bisection over prefix lengths in code points, in rounds
over every truncated block at once (one batch count per round): ``lo = 0``, ``hi =
len(text)`` (whose count is over the budget), and while ``hi - lo > 1`` the middle
length's prefix is counted, ``lo = mid`` when it fits, else ``hi = mid``; the prefix is
``text[:lo]``. (Counts nearly always grow with the prefix; where they do not,
bisection still ends on a prefix that fits, and the reference bisects the same way.)
Then rule 10's cut on that prefix: its length ``L`` plays the seed's ``r`` (positions
``L-1`` down to ``max(0, L-80) + 1``), and the result is Java-trimmed.

The budget is a guarantee: the output text is counted again, and where the cut and
trim made it count more than the budget (trimming a leading space re-tokenizes the
first word: ``" gumition"`` is one token fewer than ``"gumition"`` in cl100k), a second
bisection over ``L`` in ``[0, L]`` finds the longest ``L`` whose cut and trimmed text
fits, and that text is the block. ``token_count`` is always the output text's count."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe._arrow import string_addresses
from ragframe._kernels._compile import frozen
from ragframe.postprocess._budget import _WS_CLASS, TRIM_CHARS, TRUNCATE_WINDOW
from ragframe.postprocess._config import PostprocessConfig
from ragframe.postprocess._kernels._token_cut import truncations
from ragframe.tokens import _bpe
from ragframe.tokens._counters import I64, TokenCounter, count_texts


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


Probe = Callable[[pl.Expr, pl.Expr], pl.Expr]
"""The text a bisection counts at a length: ``(text, length) -> text``."""


def _prefix(text: pl.Expr, length: pl.Expr) -> pl.Expr:
    return text.str.slice(0, length)


def cut(text: pl.Expr, limit: pl.Expr) -> pl.Expr:
    """Rule 10's cut at a per-row ``limit`` (at most the text's length): at the last
    Java whitespace at positions ``max(0, limit - 80) + 1`` to ``limit - 1``, else at
    ``limit``; then Java-trim."""
    first = pl.max_horizontal(limit - TRUNCATE_WINDOW, 0) + 1  # the first position looked at
    window = text.str.slice(first, pl.max_horizontal(limit - first, 0))
    after = window.str.extract(f"[{_WS_CLASS}]([^{_WS_CLASS}]*)$", 1)
    at = pl.when(after.is_null()).then(limit).otherwise(limit - 1 - after.str.len_chars())
    return text.str.slice(0, at).str.strip_chars(TRIM_CHARS)


def _at(texts: pl.Series, lengths: I64, probe: Probe) -> pl.Series:
    """``probe`` of each text at its length."""
    frame = pl.DataFrame({"t": texts, "m": lengths}, schema={"t": pl.String, "m": pl.Int64})
    return frame.select(probe(pl.col("t"), pl.col("m"))).to_series()


def _bisect(texts: pl.Series, hi: I64, counter: TokenCounter, limit: int, probe: Probe) -> I64:
    """The largest length ``lo`` in ``[0, hi)`` at which ``probe``'s text fits in
    ``limit`` tokens, by bisection (``hi``'s does not fit), in rounds over every text."""
    lo, hi = np.zeros(len(texts), dtype=np.int64), hi.copy()
    while len(open_ := np.flatnonzero(hi - lo > 1)):
        mid = (lo[open_] + hi[open_]) // 2
        fits = count_texts(counter, _at(texts.gather(open_), mid, probe)) <= limit
        lo[open_[fits]] = mid[fits]
        hi[open_[~fits]] = mid[~fits]
    return lo


def truncated_in_kernels(
    column: pl.Series, counting: _bpe.Counting, limit: int, window: int
) -> tuple[I64, I64, I64]:
    """Rule 10's truncation in tokens of each text (each counting more than ``limit``;
    ``window``: the cut's look-back, see
    :func:`~ragframe.postprocess._kernels._token_cut.truncations`): the bytes
    ``[start, end)`` it keeps and their count; count -1 for a text the kernels do not
    count (not ASCII, or a piece over
    :data:`~ragframe.tokens._kernels._count.LONG_PIECE` bytes)."""
    n = len(column)
    out = np.zeros(3 * n, dtype=np.int64)
    if n == 0:
        return out[:0], out[:0], out[:0]
    address, length, owner = string_addresses(column.cast(pl.String))
    address, length = frozen(address, np.int64), frozen(length, np.int64)
    with counting.caches.taken() as cache:
        truncations(address, length, int(limit), int(window), counting.vocab, cache, out)
    del owner
    return out[:n], out[n : 2 * n], out[2 * n :]


def _truncate(texts: pl.Series, counter: TokenCounter, limit: int) -> tuple[pl.Series, I64]:
    """Each text truncated to ``limit`` tokens (module docstring) and its count; ASCII
    texts of an encoding the kernels count, in one compiled pass
    (:func:`truncated_in_kernels`, the same steps)."""
    counting = _bpe.kernel_vocab(counter)
    if counting is None:
        return _truncate_in_rounds(texts, counter, limit)
    start, end, counts = truncated_in_kernels(texts, counting, limit, TRUNCATE_WINDOW)
    frame = pl.DataFrame({"t": texts, "a": start, "b": end - start})
    out = frame.select(pl.col("t").str.slice(pl.col("a"), pl.col("b"))).to_series()
    rest = np.flatnonzero(counts < 0)  # not ASCII, or a piece too long: in rounds
    if len(rest):
        fixed, counts[rest] = _truncate_in_rounds(texts.gather(rest), counter, limit)
        out = out.scatter(rest, fixed)
    return out.alias(texts.name), counts


def _truncate_in_rounds(
    texts: pl.Series, counter: TokenCounter, limit: int
) -> tuple[pl.Series, I64]:
    """:func:`_truncate` by bisection in rounds over every text, one batch count each."""
    longest = _bisect(
        texts, texts.str.len_chars().cast(pl.Int64).to_numpy(), counter, limit, _prefix
    )
    out = _at(texts, longest, cut)
    counts = count_texts(counter, out)
    over = np.flatnonzero(counts > limit)  # the trim re-tokenized: the longest cut that fits
    if len(over):
        again = _bisect(texts.gather(over), longest[over], counter, limit, cut)
        fixed = _at(texts.gather(over), again, cut)
        out = out.scatter(over, fixed)
        counts[over] = count_texts(counter, fixed)
    return out, counts


def truncated(texts: pl.Expr, counter: TokenCounter, limit: int) -> pl.Expr:
    """Each non-null text truncated within ``limit`` tokens, with its token count
    (a struct of ``c.TEXT`` and ``c.TOKEN_COUNT``); null for a null text."""
    dtype = pl.Struct({c.TEXT: pl.String, c.TOKEN_COUNT: pl.Int64})

    def run(column: pl.Series) -> pl.Series:
        present = column.is_not_null()
        out, counts = _truncate(column.filter(present), counter, limit)
        rows = np.flatnonzero(present.to_numpy())
        text = pl.Series(c.TEXT, [None] * len(column), dtype=pl.String).scatter(rows, out)
        count = _filled(counts, present, c.TOKEN_COUNT)
        return pl.struct(text, count, eager=True).alias(column.name)

    return texts.map_batches(run, return_dtype=dtype)


def budget(blocks: pl.LazyFrame, config: PostprocessConfig, passthrough: list[str]) -> pl.LazyFrame:
    """Rule 10 in tokens on blocks in rule 9's order with their ``block_rank`` and, where
    the merge counted it, ``c.T_TOKENS`` (:func:`ragframe.postprocess._token_merge.blocks`)."""
    counter, cap = config.counter, config.max_tokens
    if counter is None:
        raise RuntimeError("internal error: a token budget without a tokenizer")
    rank, tokens, text = pl.col(c.BLOCK_RANK), pl.col(c.T_TOKENS), pl.col(c.TEXT)
    unknown = pl.when(tokens.is_null()).then(text)  # blocks of one chunk, not counted yet
    over = tokens > cap
    cut_text = pl.col(c.T_TEXT).struct.field(c.TEXT)
    return (
        blocks.filter(rank < config.max_blocks)
        .with_columns(pl.coalesce(tokens, counted(unknown, counter)).alias(c.T_TOKENS))
        .filter((tokens.cum_sum().over(c.QUERY_ID) <= cap) | (rank == 0))
        .with_columns(truncated(pl.when(over).then(text), counter, cap).alias(c.T_TEXT))
        .with_columns(
            pl.when(over).then(cut_text).otherwise(text).alias(c.TEXT),
            over.alias(c.TRUNCATED),
            pl.coalesce(pl.col(c.T_TEXT).struct.field(c.TOKEN_COUNT), tokens).alias(c.TOKEN_COUNT),
            pl.when(over)
            .then(cut_text.str.len_chars().cast(pl.Int64))
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
