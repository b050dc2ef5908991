"""Query-relevant passages for every (query, document) pair at once (SPEC section 2.1).

Two highlighters, both computed for all pairs by one lazy plan, each document tokenized
once however many queries ask for it:

* ``"fvh"`` (default): the Lucene FastVectorHighlighter as Fess configures it
  (``SimpleFragListBuilder``, ``ScoreOrderFragmentsBuilder``, ``SimpleBoundaryScanner``).
  Rules, per pair:

  1. Query terms are the distinct lower-cased tokens of the query; matches are the
     document's tokens equal to a term (Lucene's ``StandardTokenizer``, UAX #29, see
     :mod:`ragframe.fetch._tokenize`; lower-cased per code point as Java does, see
     :mod:`ragframe.fetch._analysis`).
     Only the first ``max_matches`` matches in text order are considered (the phrase
     limit: 256 by default, OpenSearch's ``phrase_limit``; Lucene's own is unlimited).
  2. Fragments (Lucene's ``BaseFragListBuilder`` with margin 6): walk matches in order,
     ``start_offset = 0``. A match starting before ``start_offset`` is skipped. Else it
     opens a fragment: ``span_start = max(first.start - 6, start_offset)``,
     ``span_end = max(first.end, span_start + fragment_size)``; the following matches
     whose end is ``<= span_end`` join it. With ``match_len = last.end - first.start``
     the fragment is re-centred: ``start = max(first.start - max(0, (fragment_size -
     match_len) // 2), start_offset)``, ``end = start + max(match_len, fragment_size)``,
     and ``start_offset = end``. Its score is, by default (``scoring="matches"``), its
     number of matches (Lucene's ``SimpleFieldFragList``, what Fess's search engine
     does); or, opt-in ``scoring="terms"``, its number of distinct query terms plus
     ``matches / (max_matches + 1)`` (distinct terms first, then matches), so that a
     frequent term cannot crowd a rarer one out of the chosen fragments.
  3. The ``number_of_fragments`` best fragments by score are kept (ties: earlier first),
     ordered by score (``order="score"``, Fess) or by position (``order="offset"``).
  4. Edges move to boundary characters (``SimpleBoundaryScanner``): the start moves left
     to just after the nearest boundary character among the ``boundary_max_scan``
     characters before it, or to 0 when the scan reaches the start of the text, else
     stays; the end moves right onto the nearest boundary character among the
     ``boundary_max_scan`` characters from it, or to the end of the text when the scan
     reaches it (Lucene scans the text followed by a space), else stays; an end past
     the text is the text's end.
* ``"unified"``: sentence-bounded, BM25-scored passages (Lucene ``UnifiedHighlighter``
  style, ``PassageScorer`` with k1=1.2, b=0.75, pivot=87). See :mod:`ragframe.fetch._unified`.

Both: the chosen passages are joined with ``"..."`` and ``"..."`` is appended unless the
text ends (ASCII whitespace aside) with ``. ! ?`` or the CJK ``U+3002 U+FF01 U+FF1F``.
No match gives null (no-match size 0). Offsets and lengths are Unicode code points
(Lucene counts UTF-16 units; they agree on text without characters outside the BMP).
The token classes come from a newer Unicode database than Lucene 8.7's (Unicode 9):
characters assigned or re-classified since may tokenize differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe._validate import checked
from ragframe.errors import SchemaError
from ragframe.fetch._config import HighlightConfig, as_highlight_config
from ragframe.fetch._fvh import fvh_passages
from ragframe.fetch._passages import (
    assemble,
    document_candidates,
    document_runs,
    needed_documents,
    pair_terms,
)
from ragframe.fetch._unified import unified_passages


def highlight(
    pairs: c.Frame,
    documents: c.Frame,
    config: HighlightConfig | Mapping[str, Any] | None = None,
) -> pl.LazyFrame:
    """The query-relevant passages of each (query, document) pair, on their own.

    Needs ``pairs``: ``query`` (string), ``doc_id``; any other columns pass through,
    rows keep their order, duplicates are kept. ``documents``: ``doc_id``, ``content``
    (the first row of a repeated ``doc_id`` wins). Adds ``passages`` (list of
    ``{start, end, score}``, character offsets into the content, in the chosen order)
    and ``highlight`` (the passages joined); both null when nothing matched, when the
    query has no word token, or when the document is missing.

    Args:
        pairs: one row per (query, document) pair.
        documents: the documents' text.
        config: a :class:`HighlightConfig` or a :class:`~ragframe.FetchConfig`, or a
            mapping of :class:`HighlightConfig` fields.

    Returns:
        A LazyFrame: ``pairs``' columns plus ``passages`` and ``highlight``.

    Raises:
        SchemaError: a required column is missing or has the wrong type.

    Example:
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1], "content": ["Wings lift. Tails steer."]})
        >>> pairs = pl.DataFrame({"query": ["tails"], "doc_id": [1]})
        >>> highlight(pairs, docs, HighlightConfig(fragment_size=18)).collect()["highlight"][0]
        'lift. Tails steer.'
    """
    cfg = as_highlight_config(config)
    lf_pairs = c.to_lazy(pairs, "pairs")
    lf_docs = c.to_lazy(documents, "documents")
    id_type = check_highlight_inputs(lf_pairs.collect_schema(), lf_docs.collect_schema(), "pairs")
    key = [c.QUERY, c.DOC_ID]
    lf_pairs = lf_pairs.with_columns(id_column(lf_pairs.collect_schema(), id_type, "pairs"))
    lf_docs = lf_docs.with_columns(id_column(lf_docs.collect_schema(), id_type, "documents"))
    work = lf_pairs.select(key).drop_nulls().unique(maintain_order=True)
    found = passages_per_pair(work.with_row_index(c.T_PAIR), lf_docs, cfg)
    return lf_pairs.join(found, on=key, how="left", maintain_order="left")


def passages_per_pair(
    work: pl.LazyFrame, documents: pl.LazyFrame, config: HighlightConfig
) -> pl.LazyFrame:
    """``query, doc_id, passages, highlight`` for the pairs of ``work`` with a match.

    ``work`` has ``__rf_pair`` (unique), ``query`` and ``doc_id``; ``documents`` has
    ``doc_id`` of the same type as ``work``'s, and ``content``.
    """
    work = work.cache()  # the plan reads these more than once: each computed once
    docs = needed_documents(work, documents).cache()
    terms = pair_terms(work)
    if config.highlighter == "fvh":
        chosen = fvh_passages(work, docs, document_candidates(docs, terms), terms, config)
    else:
        chosen = unified_passages(work, docs, document_runs(docs), terms, config)
    found = assemble(chosen)
    return work.join(found, on=c.T_PAIR, how="inner").drop(c.T_PAIR)


def check_highlight_inputs(pairs: pl.Schema, documents: pl.Schema, what: str) -> pl.DataType:
    """Check the columns of ``pairs`` (named ``what``) and ``documents``.

    Returns:
        The type both ``doc_id`` columns are cast to (Int64 or String).

    Raises:
        SchemaError: a column is missing or mistyped, or the ``doc_id`` types differ.
    """
    c.require_columns(pairs, [c.QUERY, c.DOC_ID], what)
    c.require_columns(documents, [c.DOC_ID, c.CONTENT], "documents")
    c.require_kind(pairs, c.QUERY, ["string"], what)
    c.require_kind(documents, c.CONTENT, ["string"], "documents")
    return doc_id_type(pairs, documents, what)


def doc_id_type(left: pl.Schema, documents: pl.Schema, what: str) -> pl.DataType:
    """Int64 when both ``doc_id`` columns are integers, String when both are strings."""
    c.require_kind(left, c.DOC_ID, ["int", "string"], what)
    c.require_kind(documents, c.DOC_ID, ["int", "string"], "documents")
    kinds = {dt for dt in (left[c.DOC_ID], documents[c.DOC_ID]) if dt != pl.Null}
    if all(dt.is_integer() for dt in kinds):
        return pl.Int64()
    if all(dt == pl.String for dt in kinds):
        return pl.String()
    raise SchemaError(
        f"column 'doc_id' has type {left[c.DOC_ID]} in {what} but {documents[c.DOC_ID]} "
        "in documents; expected the same kind (both integers or both strings); "
        "hint: cast one of them"
    )


_LOSSLESS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.Null)
"""``doc_id`` types that cast to Int64 without losing a value."""


def id_column(schema: pl.Schema, id_type: pl.DataType, what: str) -> pl.Expr:
    """``doc_id`` cast to ``id_type``: a plain cast where no value can be lost, else
    checked over the whole column (:func:`ragframe._validate.checked`: a UInt64 id
    beyond Int64 is a DataError). The check reads the whole column at once, and the
    plan reads the documents several times: only the types that need it pay for it."""
    dtype = schema[c.DOC_ID]
    if dtype == id_type or (id_type == pl.Int64 and dtype in _LOSSLESS):
        return pl.col(c.DOC_ID).cast(id_type)
    return checked(c.DOC_ID, id_type, what)
