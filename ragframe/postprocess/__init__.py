"""postprocess: chunk post-processing for every query at once (SPEC section 1, seed
``RagChunkPostProcessor``), one lazy Polars plan.

Where each rule of SPEC section 1 lives:

====================================  ===================================================
Input columns, aliases, chunk store   :mod:`._inputs` (schema checks, ``doc_id`` alias,
                                      store key and dedupe); each candidate's text,
                                      read in place, no join: :mod:`._texts`
Missing text                          :mod:`._missing` (error, empty, drop), found by
                                      the store lookup of :mod:`._texts`
Parameters                            :mod:`._config` (:class:`PostprocessConfig`)
1. ranking score, 2. order            :mod:`._rank` (no sort of the table; none at all
                                      for presorted input), in-query sort
                                      :mod:`._kernels._order`
3. distinct top-K                     :mod:`._select` (reach, text join, two passes);
                                      kernel :mod:`._kernels._walk`, containment
                                      :mod:`._kernels._contains`
4. adaptive threshold                 :mod:`._select` (``threshold_expr``)
5. sort and group                     :mod:`._merge` (``merge_order``); in-query sort
                                      :mod:`._kernels._order`
6. merge, block size cap              :mod:`._merge` (wrapper); kernel
                                      :mod:`._kernels._merge`
7. remove_overlap                     :mod:`._kernels._overlap` (on UTF-8 helpers of
                                      :mod:`._kernels._text`)
8. block fields                       :mod:`._kernels._merge` and :mod:`._merge`
9. order blocks                       :mod:`._merge` (``_rule9_order``)
10. budget, truncation                :mod:`._budget` (decided inside the merge's
                                      wrapper, before any text is written; the cut
                                      :mod:`._kernels._pieces`)
Budgets in tokens                     tokenizers :mod:`ragframe.tokens`; rules 5-9 with
(``length="tokens"``)                 the cap in tokens :mod:`._token_merge`; rule 10
                                      in tokens :mod:`._token_budget`
                                      (:mod:`._kernels._token_cut`); ``cl100k_base``
                                      counted in the kernels :mod:`ragframe.tokens._bpe`
                                      (the merge's kernel calls them)
====================================  ===================================================

Compiled kernels and their cache: :mod:`._kernels` (see its docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ragframe._validate import as_config
from ragframe.postprocess import _inputs, _missing, _stages, _texts
from ragframe.postprocess._config import (
    LengthMode,
    MissingTextPolicy,
    OverlapMode,
    PostprocessConfig,
)
from ragframe.schema import Frame, to_lazy
from ragframe.tokens._counters import TokenCounter, token_counter

__all__ = [
    "LengthMode",
    "MissingTextPolicy",
    "OverlapMode",
    "PostprocessConfig",
    "TokenCounter",
    "load_kernels_ahead",
    "missing_text_counts",
    "postprocess",
    "token_counter",
]


def postprocess(
    candidates: Frame,
    config: PostprocessConfig | Mapping[str, Any] | None = None,
    *,
    chunks: Frame | None = None,
) -> pl.LazyFrame:
    """Turn retrieved chunks into context blocks, for every query at once.

    Per query (``query_id``): distinct top-K by ranking score, the adaptive similarity
    threshold, sort and group by document, merge adjacent chunks removing the overlap
    they share, cap block size, then the block and character budgets -- exactly as the
    seed ``RagChunkPostProcessor`` (SPEC section 1), as one lazy Polars plan.

    Args:
        candidates: one row per retrieved chunk: ``query_id`` (int or string, never
            null), ``entity_id`` or its alias ``doc_id`` (int or string; null = no
            entity), ``chunk_index`` (int; null = 0), ``similarity`` (number; null =
            0.0), ``text`` (string; null = "", optional when ``chunks`` is given),
            optional ``entity_type`` (string) and ``rerank_score`` (number). Any other
            column is passed through from the first chunk of each block. Row order is
            the tie-break. A polars DataFrame/LazyFrame or a pyarrow Table.
        config: the parameters: a :class:`PostprocessConfig` or a mapping of its fields
            (``{"top_k": 3}``); defaults to ``PostprocessConfig()``.
        chunks: optional chunk store ``(entity_id|doc_id, chunk_index, text)``; its text
            is joined only to the candidates that need it (late materialization). The
            first row wins where a key repeats. A candidate without a row there (a null
            ``entity_id`` has none) follows ``config.missing_text``.

    Returns:
        A LazyFrame with one row per block, sorted by ``query_id`` then ``block_rank``:
        ``query_id, block_rank, entity_type, entity_id, start_chunk_index,
        end_chunk_index, text, max_similarity, avg_similarity, source_chunk_count,
        rerank_score, ranking_score, char_count, truncated, chunk_indexes`` and the
        passthrough columns; with a tokenizer, ``token_count`` (the block text's own
        count) after ``char_count``. ``entity_type``/``entity_id`` are those of the group's
        first chunk as they were in the input: a null stays null (grouping reads it as
        "" and 0, or "" for string ids); without an ``entity_type`` column it is null.
        Lengths are Unicode code points.

    Raises:
        ConfigError: ``config`` is neither a config nor a mapping of its fields.
        SchemaError: a required column is missing or has the wrong type, or a
            passthrough column is named like an output column (at once).
        DataError: when collected: null ``query_id``, NaN or infinite scores, ids too
            large for Int64 (the message counts the rows and queries and names the
            first); with ``chunks`` and ``missing_text="error"`` (the default),
            candidates the store lacks.

    Example:
        >>> import polars as pl
        >>> rows = pl.DataFrame({
        ...     "query_id": [1, 1], "entity_id": [7, 7], "chunk_index": [0, 1],
        ...     "text": ["Intro text before. Shared overlap phrase for removal",
        ...              "Shared overlap phrase for removal and unique second."],
        ...     "similarity": [0.9, 0.8]})
        >>> postprocess(rows).collect()["text"].to_list()
        ['Intro text before. Shared overlap phrase for removal and unique second.']
    """
    config = as_config(config, PostprocessConfig)
    prepared = _stages.prepare(candidates, chunks, config)  # inputs, text source
    blocks = _stages.blocks(prepared, config)  # rules 1-4, then 5-10 on the rows kept
    return _stages.finish(prepared, blocks)  # missing text: an error by default


def missing_text_counts(candidates: Frame, chunks: Frame | None) -> pl.LazyFrame:
    """How many candidates have no row in the chunk store, and in how many queries
    (SPEC 1, "Missing text"): one row, ``candidates`` and ``queries`` (both 0 without a
    store). The keys are read as :func:`postprocess` reads them.

    Example:
        >>> import polars as pl
        >>> rows = pl.DataFrame({"query_id": [1, 1, 2], "entity_id": [7, 7, 8],
        ...     "chunk_index": [0, 1, 0], "similarity": [0.9, 0.8, 0.7]})
        >>> store = pl.DataFrame({"entity_id": [7], "chunk_index": [0], "text": ["a"]})
        >>> missing_text_counts(rows, store).collect().row(0)
        (2, 2)
    """
    if chunks is None:
        return pl.LazyFrame({"candidates": [0], "queries": [0]})
    lf, _ = _inputs.canonical(to_lazy(candidates, "candidates"), True, False)
    store = _texts.chunk_store(to_lazy(chunks, "chunks"), lf.collect_schema(), False)
    return _missing.counts(_missing.missing(_texts.with_store_rows(lf, store)))


def load_kernels_ahead(rows: int | None = None) -> None:
    """Start loading the compiled kernels every :func:`postprocess` call runs, from the
    on-disk cache, on a background thread (once per process), so that a run reading
    its input meanwhile finds them loaded: about 0.4 s saved where that reading, in
    Polars, leaves the interpreter free. Nothing is loaded when the cache lacks any of
    them (the first run compiles them as it needs them), nor for ``rows`` candidates
    few enough that the kernels run as plain Python (``$RAGFRAME_PYTHON_ROWS``, 2,000
    by default). Optional: every call loads what it needs anyway.
    """
    from ragframe._kernels import _compile, _preload

    if rows is None or rows > _compile.python_rows():
        _preload.load_in_background()
