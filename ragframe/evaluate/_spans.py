"""Span judgements (SPEC 7): judgements of character spans of documents, which stay
valid whatever the chunking.

A span judgement is ``query_id, doc_id, start_char, end_char, relevance``: the
characters ``[start_char, end_char)`` of the document's text (code points, end
exclusive). The rules, per query:

* **Relevant characters**: a character of a document is relevant when a span of the
  query covering it has a gain > 0 (after the ``gain`` mapping); overlapping, nested
  or repeated spans count each character once (their union); a span of gain <= 0
  makes nothing relevant, nor takes anything away; a zero-length span covers nothing.
* **What a block covers**: the characters of its chunks' spans (from the chunk
  store's ``start_char``/``end_char``, by ``entity_id`` and ``chunk_indexes``), or its
  own ``start_char``/``end_char`` when the blocks have them; at most ``char_count`` of
  them, the first in document order (a truncated block holds a prefix).
* ``span_recall`` = relevant characters covered by at least one block (each counted
  once, however many blocks cover it) / relevant characters judged; 0 when none is
  judged relevant. ``span_precision`` = the same relevant characters / the characters
  in the context (``chars_used``, the sum of the blocks' ``char_count``: text repeated
  by overlapping blocks counts each time it is sent, so a repeat lowers it); null
  without characters.
* **Documents**: a document's judgement, for every document-level metric, is its best
  span's: the highest gain, with the highest grade giving it.
* **Chunks** (``level="chunk"``): a chunk is relevant when it overlaps (shares at
  least one character with) a relevant span; its gain is the best gain of those
  spans. The relevant chunks judged are those of the chunk store.

Every union and intersection is one sweep over interval end points for all groups
at once: rows sorted by group then position, a running sum of +1 (start) and -1
(end) per interval kind; each group's deltas sum to 0, so one running sum over every
row is each group's own. A piece between two end points is covered by a kind when its
running count is > 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, SchemaError

SPAN_COLUMNS = (c.START_CHAR, c.END_CHAR)
_POS, _DR, _DC = c.TMP + "pos", c.TMP + "dr", c.TMP + "dc"
_LEN, _BLOCK = c.TMP + "piece", c.TMP + "block"
_RELEVANT, _COVERED = c.TMP + "relevant_chars", c.TMP + "covered_chars"


def has_spans(columns: Sequence[str]) -> bool:
    """Whether judgements with these columns are span judgements (either offset)."""
    return any(n in columns for n in SPAN_COLUMNS)


def split(judged: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """The document judgements (``query_id, doc_id, relevance, gain``) and, for span
    judgements, the spans themselves; a document's judgement is its best span's."""
    if not has_spans(judged.columns):
        return judged, None
    gain = pl.col(c.GAIN)
    aggs = [gain.max()]
    if c.RELEVANCE in judged.columns:
        aggs.insert(0, pl.col(c.RELEVANCE).filter(gain == gain.max()).max())
    docs = judged.group_by(c.QUERY_ID, c.DOC_ID, maintain_order=True).agg(aggs)
    return docs, judged


def check_frame(schema: pl.Schema, what: str) -> None:
    """Both offsets, integers (a frame of span judgements taken as it is)."""
    present = [n for n in SPAN_COLUMNS if n in schema]
    if len(present) == 1:
        (other,) = set(SPAN_COLUMNS) - set(present)
        raise SchemaError(
            f"{what}: column '{present[0]}' without '{other}'; span judgements need both "
            "start_char and end_char (code-point offsets into the document, end exclusive)"
        )
    for name in SPAN_COLUMNS:
        c.require_kind(schema, name, ["int"], what)


def _events(spans: pl.LazyFrame, group: list[str], delta: str, other: str) -> pl.LazyFrame:
    """+1 at each span's start, -1 at its end, in column ``delta`` (``other``: 0)."""
    start, end = pl.col(c.START_CHAR).cast(pl.Int64), pl.col(c.END_CHAR).cast(pl.Int64)
    one = pl.lit(1, dtype=pl.Int64)
    zero = pl.lit(0, dtype=pl.Int64)
    at_start = spans.select(*group, start.alias(_POS), one.alias(delta), zero.alias(other))
    at_end = spans.select(*group, end.alias(_POS), (-one).alias(delta), zero.alias(other))
    return pl.concat([at_start, at_end], how="vertical").select(*group, _POS, _DR, _DC)


def _pieces(events: pl.LazyFrame, group: list[str]) -> pl.LazyFrame:
    """The sweep: each event row with the length up to its group's next end point and
    the running counts of both kinds (``_DR``, ``_DC`` become counts)."""
    ordered = events.sort([*group, _POS])
    starts = pl.any_horizontal([pl.col(g).ne_missing(pl.col(g).shift(1)) for g in group])
    last = starts.fill_null(True).shift(-1).fill_null(True)
    length = pl.when(last).then(0).otherwise(pl.col(_POS).shift(-1) - pl.col(_POS))
    return ordered.with_columns(
        length.cast(pl.Int64).alias(_LEN), pl.col(_DR).cum_sum(), pl.col(_DC).cum_sum()
    )


def relevant_spans(spans: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, doc_id, start_char, end_char`` of the spans that make characters
    relevant (gain > 0, not empty)."""
    start, end = pl.col(c.START_CHAR), pl.col(c.END_CHAR)
    keep = (pl.col(c.GAIN) > 0) & (end > start)
    return spans.filter(keep).select(c.QUERY_ID, c.DOC_ID, c.START_CHAR, c.END_CHAR)


def relevant_chars(spans: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, relevant_chars``: the characters judged relevant, per query with
    judgements (0 for one without a relevant span)."""
    group = [c.QUERY_ID, c.DOC_ID]
    pieces = _pieces(_events(relevant_spans(spans), group, _DR, _DC), group)
    per_query = pieces.group_by(c.QUERY_ID).agg(
        pl.col(_LEN).filter(pl.col(_DR) > 0).sum().alias(_RELEVANT)
    )
    queries = spans.select(c.QUERY_ID).unique()
    return queries.join(per_query, on=c.QUERY_ID, how="left").with_columns(
        pl.col(_RELEVANT).fill_null(0)
    )


def block_offsets(blocks: pl.LazyFrame, store: pl.LazyFrame | None, key: list[str]) -> pl.LazyFrame:
    """``*key, doc_id, start_char, end_char``: the characters each block covers,
    as disjoint pieces (see the module docstring; at most ``char_count`` per block)."""
    schema = blocks.collect_schema()
    doc = pl.col(c.ENTITY_ID).alias(c.DOC_ID)
    block = [*key, _BLOCK]
    numbered = blocks.with_row_index(_BLOCK)
    if all(n in schema for n in SPAN_COLUMNS):
        spans = numbered.select(*block, doc, c.CHAR_COUNT, c.START_CHAR, c.END_CHAR)
    elif store is not None:
        pieces = numbered.select(
            *block, doc, c.CHAR_COUNT, pl.col(c.CHUNK_INDEXES).alias(c.CHUNK_INDEX)
        ).explode(c.CHUNK_INDEX)
        offsets = store.select(c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR)
        spans = pieces.join(offsets, on=[c.DOC_ID, c.CHUNK_INDEX], how="inner").drop(c.CHUNK_INDEX)
    else:
        raise ConfigError(
            "span judgements: span_recall and span_precision need the blocks' offsets; "
            "the blocks have no start_char/end_char and no chunk store was given (hint: "
            "pass chunks=, the chunk table or the candidates with start_char/end_char)"
        )
    spans = spans.filter(pl.col(c.END_CHAR) > pl.col(c.START_CHAR))
    group = [*block, c.DOC_ID]
    ends = _events(spans, group, _DC, _DR)
    counts = spans.group_by(block).agg(pl.col(c.CHAR_COUNT).first())
    pieces = _pieces(ends, group).filter((pl.col(_DC) > 0) & (pl.col(_LEN) > 0))
    before = pl.col(_LEN).cum_sum().over(block) - pl.col(_LEN)
    keep = (pl.col(c.CHAR_COUNT) - before).clip(0, pl.col(_LEN))
    clipped = pieces.join(counts, on=block, how="left").with_columns(keep.alias(_LEN))
    return clipped.filter(pl.col(_LEN) > 0).select(
        *key,
        c.DOC_ID,
        pl.col(_POS).alias(c.START_CHAR),
        (pl.col(_POS) + pl.col(_LEN)).alias(c.END_CHAR),
    )


def covered_chars(
    blocks: pl.LazyFrame, spans: pl.LazyFrame, store: pl.LazyFrame | None, by: Sequence[str]
) -> pl.LazyFrame:
    """``*by, query_id, covered_chars``: the relevant characters the blocks of each
    context cover (each once), for the contexts with blocks on a relevant document."""
    key = [*by, c.QUERY_ID]
    covered = block_offsets(blocks, store, key)
    pairs = covered.select(*key, c.DOC_ID).unique()
    relevant = relevant_spans(spans).join(pairs, on=[c.QUERY_ID, c.DOC_ID], how="inner")
    group = [*key, c.DOC_ID]
    events = pl.concat(
        [_events(relevant, group, _DR, _DC), _events(covered, group, _DC, _DR)], how="vertical"
    )
    both = (pl.col(_DR) > 0) & (pl.col(_DC) > 0)
    return _pieces(events, group).group_by(key).agg(pl.col(_LEN).filter(both).sum().alias(_COVERED))


def span_metrics(
    blocks: pl.LazyFrame, spans: pl.LazyFrame, store: pl.LazyFrame | None, by: Sequence[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The relevant characters judged per query, and those each context covers (see
    :func:`relevant_chars`, :func:`covered_chars`), for :func:`span_columns`."""
    return relevant_chars(spans), covered_chars(blocks, spans, store, by)


def span_columns(used: pl.Expr) -> list[pl.Expr]:
    """``span_recall`` and ``span_precision`` of a table joined with both frames of
    :func:`span_metrics` (``used``: the context's characters)."""
    judged = pl.col(_RELEVANT).fill_null(0)
    hit = pl.col(_COVERED).fill_null(0)
    recall = pl.when(judged > 0).then(hit / judged).otherwise(0.0)
    precision = pl.when(used > 0).then(hit / used.cast(pl.Float64))
    return [
        recall.cast(pl.Float64).alias(c.SPAN_RECALL),
        precision.cast(pl.Float64).alias(c.SPAN_PRECISION),
    ]


def chunk_judgements(spans: pl.DataFrame, store: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, doc_id, chunk_index, gain``: each chunk of the store that overlaps a
    relevant span of a query, with the best gain among those spans."""
    relevant = spans.lazy().filter(
        (pl.col(c.GAIN) > 0) & (pl.col(c.END_CHAR) > pl.col(c.START_CHAR))
    )
    chunks = store.select(
        c.DOC_ID,
        c.CHUNK_INDEX,
        pl.col(c.START_CHAR).alias(c.T_START),
        pl.col(c.END_CHAR).alias(c.T_LAST),
    ).unique([c.DOC_ID, c.CHUNK_INDEX], keep="first", maintain_order=True)
    overlap = pl.max_horizontal(c.START_CHAR, c.T_START) < pl.min_horizontal(c.END_CHAR, c.T_LAST)
    met = relevant.select(c.QUERY_ID, c.DOC_ID, c.START_CHAR, c.END_CHAR, c.GAIN).join(
        chunks, on=c.DOC_ID, how="inner"
    )
    return (
        met.filter(overlap)
        .group_by(c.QUERY_ID, c.DOC_ID, c.CHUNK_INDEX, maintain_order=True)
        .agg(pl.col(c.GAIN).max())
    )


def chunk_key(doc: str | pl.Expr, index: str | pl.Expr) -> pl.Expr:
    """One id per chunk (``doc_id`` and ``chunk_index`` written as one string), so that
    chunk-level list metrics rank chunks as document-level ones rank documents."""
    doc_text = (pl.col(doc) if isinstance(doc, str) else doc).cast(pl.String)
    index_text = (pl.col(index) if isinstance(index, str) else index).cast(pl.String)
    return pl.concat_str([doc_text, index_text], separator="\x1f")


def store_of(chunks: Any) -> pl.LazyFrame:
    """The chunk store's ``doc_id, chunk_index, start_char, end_char`` (``entity_id``
    accepted for ``doc_id``), checked."""
    store = c.to_lazy(chunks, "chunks")
    names = store.collect_schema()
    if c.ENTITY_ID in names and c.DOC_ID not in names:
        store = store.rename({c.ENTITY_ID: c.DOC_ID})
    needed = [c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR]
    schema = store.collect_schema()
    c.require_columns(schema, needed, "chunks")
    for name in (c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR):
        c.require_kind(schema, name, ["int"], "chunks")
    return store.select(needed)
