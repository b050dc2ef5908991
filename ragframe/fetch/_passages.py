"""The highlighter's plan: documents -> tokens -> matches -> passages -> joined text.

Every function returns a LazyFrame; nothing is collected. Each needed document is
tokenized once, whatever the number of queries that ask for it (``fvh`` keeps only the
candidate tokens that may equal a term asked for in the document, see
:mod:`ragframe.fetch._terms`; ``unified`` keeps every run, for its sentences); matches
for all pairs come from one join of (pair, term) rows with (document, token) rows.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe.fetch._analysis import (
    ASCII_SPACE,
    ELLIPSIS,
    SENTENCE_TERMINATORS,
    java_lower,
    rust_char_class,
)
from ragframe.fetch._config import HighlightConfig
from ragframe.fetch._terms import candidate_schema, candidate_tokens
from ragframe.fetch._tokenize import run_schema, text_tokens, tokenize


def first_of_each(column: str) -> pl.Expr:
    """The first row of each value of ``column`` (nulls: one value), rows kept in order:
    ``unique(subset=column, keep="first", maintain_order=True)`` as a filter. The same
    rows; but the streaming engine, followed by a join, ran that ``unique`` over the
    documents' content ~50x slower (19 ms against 0.4 ms on 27 MB of text)."""
    return pl.col(column).is_first_distinct()


def needed_documents(work: pl.LazyFrame, documents: pl.LazyFrame) -> pl.LazyFrame:
    """``doc_id, content, __rf_length`` of the documents ``work`` asks for.

    The first row of a repeated ``doc_id`` wins; null content reads as "".
    """
    docs = documents.select(c.DOC_ID, pl.col(c.CONTENT).fill_null(""))
    docs = docs.filter(first_of_each(c.DOC_ID))
    docs = docs.join(work.select(c.DOC_ID).unique(), on=c.DOC_ID, how="semi")
    return docs.with_columns(pl.col(c.CONTENT).str.len_chars().cast(pl.Int64).alias(c.T_LENGTH))


def document_runs(docs: pl.LazyFrame) -> pl.LazyFrame:
    """One row per run (token or non-word run) with character offsets ``start, end``
    (:func:`ragframe.fetch._tokenize.tokenize`, over whole buffers)."""
    id_type = docs.collect_schema()[c.DOC_ID]
    kernel = partial(tokenize, words_only=False)
    return docs.select(c.DOC_ID, c.CONTENT).map_batches(kernel, schema=run_schema(id_type))


def document_candidates(docs: pl.LazyFrame, terms: pl.LazyFrame) -> pl.LazyFrame:
    """``doc_id, __rf_token, start, end``: the word tokens (lower-cased) that may equal
    one of the terms asked for in their document
    (:func:`ragframe.fetch._terms.candidate_tokens`)."""
    id_type = docs.collect_schema()[c.DOC_ID]
    asked = terms.group_by(c.DOC_ID).agg(pl.col(c.T_TERM).unique().alias(c.T_DOC_TERMS))
    frame = docs.select(c.DOC_ID, c.CONTENT).join(asked, on=c.DOC_ID)
    return frame.map_batches(candidate_tokens, schema=candidate_schema(id_type))


def _query_terms(queries: pl.DataFrame) -> pl.DataFrame:
    """``query, __rf_term, __rf_term_code``: the distinct lower-cased tokens of each
    (distinct) query, numbered from 0 in order of first appearance."""
    row, text = text_tokens(queries[c.QUERY])
    frame = pl.DataFrame({c.T_ROW: row, c.T_TERM: text}).with_columns(java_lower(pl.col(c.T_TERM)))
    frame = frame.unique(subset=[c.T_ROW, c.T_TERM], keep="first", maintain_order=True)
    row = frame[c.T_ROW].to_numpy()
    code = np.arange(row.size, dtype=np.int64) - np.searchsorted(row, row)
    return pl.DataFrame(
        {c.QUERY: queries[c.QUERY].gather(row), c.T_TERM: frame[c.T_TERM], c.T_TERM_CODE: code}
    )


def pair_terms(work: pl.LazyFrame) -> pl.LazyFrame:
    """``__rf_pair, doc_id, __rf_term, __rf_term_code``: the distinct lower-cased query
    tokens per pair (the same tokenizer as the documents'), numbered from 0 within the
    pair in order of first appearance. Each distinct query is tokenized once (a query
    asks for ten documents or so)."""
    queries = work.select(c.QUERY).unique()
    terms = queries.map_batches(
        _query_terms,
        schema={c.QUERY: pl.String(), c.T_TERM: pl.String(), c.T_TERM_CODE: pl.Int64()},
    )
    pairs = work.select(c.T_PAIR, c.DOC_ID, c.QUERY)
    return pairs.join(terms, on=c.QUERY).select(c.T_PAIR, c.DOC_ID, c.T_TERM, c.T_TERM_CODE).cache()


def pair_matches(terms: pl.LazyFrame, tokens: pl.LazyFrame, max_matches: int) -> pl.LazyFrame:
    """Matches of each pair's terms, sorted by position, the first ``max_matches`` kept.

    ``tokens`` has ``doc_id, __rf_token`` (lower-cased) and any columns to carry.
    """
    found = terms.join(tokens, left_on=[c.DOC_ID, c.T_TERM], right_on=[c.DOC_ID, c.T_TOKEN])
    found = found.sort(c.T_PAIR, c.START)
    return found.filter(pl.int_range(pl.len()).over(c.T_PAIR) < max_matches)


def top_passages(passages: pl.LazyFrame, config: HighlightConfig) -> pl.LazyFrame:
    """The ``number_of_fragments`` best passages per pair (ties: earlier first), in the
    configured order."""
    ranked = passages.sort([c.T_PAIR, c.SCORE, c.START], descending=[False, True, False])
    kept = ranked.filter(pl.int_range(pl.len()).over(c.T_PAIR) < config.number_of_fragments)
    if config.order == "offset":
        kept = kept.sort(c.T_PAIR, c.START)
    return kept


def _finish(texts: pl.Expr, last: pl.Expr) -> pl.Expr:
    """Join the passages; append "..." unless the last one ends (ASCII whitespace aside)
    with a sentence terminator. Every passage holds a word token, so the joined text
    ends as its last passage does: only that one is searched."""
    joined = texts.list.join(ELLIPSIS)
    terminal = f"[{rust_char_class(SENTENCE_TERMINATORS)}][{rust_char_class(ASCII_SPACE)}]*$"
    return pl.when(last.str.contains(terminal)).then(joined).otherwise(joined + ELLIPSIS)


def assemble(passages: pl.LazyFrame) -> pl.LazyFrame:
    """``__rf_pair, passages, highlight`` from one row per chosen passage (in order)."""
    spans = pl.struct(pl.col(c.START), pl.col(c.END), pl.col(c.SCORE).cast(pl.Float64))
    grouped = passages.group_by(c.T_PAIR, maintain_order=True).agg(
        spans.alias(c.PASSAGES),
        pl.col(c.T_FRAGMENT).alias(c.T_TEXTS),
        pl.col(c.T_FRAGMENT).last().alias(c.T_LAST),
    )
    highlight = _finish(pl.col(c.T_TEXTS), pl.col(c.T_LAST)).alias(c.HIGHLIGHT)
    return grouped.select(c.T_PAIR, c.PASSAGES, highlight)
