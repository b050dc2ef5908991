"""Rule 10, the budget: take blocks in rule 9's order up to ``max_blocks`` and
``max_characters``; the first block alone may be truncated, exactly as the seed cuts
(SPEC 1, rule 10).

``postprocess`` decides it inside the merge (:func:`within_budget` on the blocks'
ranks and running lengths, before any text is written; the cut by
:func:`ragframe.postprocess._kernels._pieces.truncated`), so no text is written for a
block the budget drops. :func:`budget` decides it over a frame of merged blocks, for a
sweep that budgets one merge many ways.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe.postprocess._config import PostprocessConfig

JAVA_WHITESPACE: frozenset[str] = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
"""Characters for which Java's ``Character.isWhitespace`` is true: the ASCII controls
``\\t \\n \\x0B \\f \\r \\x1C-\\x1F``, the space, and the Unicode space, line and
paragraph separators except the no-break spaces U+00A0, U+2007, U+202F."""
TRIM_CHARS = "".join(chr(code) for code in range(0x21))
"""Characters ``String.trim()`` strips: U+0000 to U+0020."""
TRUNCATE_WINDOW = 80
"""Rule 10 looks for whitespace at positions ``r - 1`` down to, not including,
``max(0, r - 80)``: position 0 is never looked at."""

_WS_CLASS = "".join(f"\\x{{{ord(ch):04X}}}" for ch in sorted(JAVA_WHITESPACE))


def within_budget(
    block_rank: npt.NDArray[np.int64],
    running: npt.NDArray[np.int64],
    max_blocks: int,
    max_characters: int,
) -> npt.NDArray[np.bool_]:
    """Which blocks rule 10 takes, from each block's rank in its query (rule 9's order)
    and the running length of its query's blocks up to it: the first ``max_blocks``
    while the total stays within ``max_characters``; a query's first block always
    (truncated when longer: the seed takes it cut, and stops)."""
    first: npt.NDArray[np.bool_] = block_rank == 0
    fits: npt.NDArray[np.bool_] = (block_rank < max_blocks) & ((running <= max_characters) | first)
    return fits


def _truncate_expr(text: pl.Expr, limit: int) -> pl.Expr:
    """Rule 10's cut: at ``limit``, or at the last whitespace at positions
    ``max(0, limit - 80) + 1`` to ``limit - 1``; then Java-trim."""
    first = max(0, limit - TRUNCATE_WINDOW) + 1  # the first position looked at
    window = text.str.slice(first, max(0, limit - first))
    after = window.str.extract(f"[{_WS_CLASS}]([^{_WS_CLASS}]*)$", 1)
    cut = pl.when(after.is_null()).then(limit).otherwise(limit - 1 - after.str.len_chars())
    return text.str.slice(0, cut).str.strip_chars(TRIM_CHARS)


def budget(blocks: pl.LazyFrame, config: PostprocessConfig, passthrough: list[str]) -> pl.LazyFrame:
    """Rule 10 on blocks in rule 9's order, with their ``block_rank`` and running length
    (as :func:`ragframe.postprocess._merge.blocks` gives them): the block and character budgets."""
    length = pl.col(c.T_CHARS)
    rank = pl.col(c.BLOCK_RANK)
    fits = (rank < config.max_blocks) & ((pl.col(c.T_TOTAL) <= config.max_characters) | (rank == 0))
    truncated = length > config.max_characters
    # only the rare truncated block pays for the cut: every other row cuts ""
    cut = _truncate_expr(
        pl.when(truncated).then(c.TEXT).otherwise(pl.lit("")), config.max_characters
    )
    return (
        blocks.filter(fits)
        .with_columns(pl.when(truncated).then(cut).otherwise(c.TEXT).alias(c.TEXT))
        .with_columns(
            truncated.alias(c.TRUNCATED),
            pl.when(truncated)
            .then(pl.col(c.TEXT).str.len_chars().cast(pl.Int64))
            .otherwise(length)
            .alias(c.CHAR_COUNT),
        )
        .select(*c.BLOCK_COLUMNS, *passthrough)
    )
