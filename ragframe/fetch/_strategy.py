"""SPEC 2, rules 1-6: each request's strategy (full text, passages, truncated full
text), its content, and the request order kept; requests whose document is missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import polars as pl

from ragframe import schema as c
from ragframe._validate import as_config
from ragframe.fetch._analysis import ASCII_SPACE, BLANK_CHARS
from ragframe.fetch._config import FetchConfig
from ragframe.fetch._highlight import (
    check_highlight_inputs,
    doc_id_type,
    id_column,
    passages_per_pair,
)
from ragframe.fetch._passages import first_of_each

Strategy = Literal["full", "highlight", "truncated_fallback", "missing"]

_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"


def _with_order(requests: pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
    """Add the row number, the first row of each query and, if absent, a 1-based rank."""
    frame = requests.with_row_index(c.T_ROW)
    if c.RANK not in schema:
        rank = pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over(c.QUERY_ID)
        frame = frame.with_columns(rank.alias(c.RANK))
    return frame.with_columns(pl.col(c.T_ROW).min().over(c.QUERY_ID).alias(c.T_FIRST_ROW))


def _parse_length(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Integers, floats and numeric strings as Float64; anything else null (unknown)."""
    number: pl.Expr = column.cast(pl.Float64)
    if dtype == pl.String:
        text = column.str.strip_chars(ASCII_SPACE)
        number = pl.when(text.str.contains(_NUMBER)).then(text.cast(pl.Float64, strict=False))
    return pl.when(number.is_finite()).then(number)


def _lengths(
    docs: pl.LazyFrame, sizes: Any, id_type: pl.DataType, doc_schema: pl.Schema
) -> pl.LazyFrame:
    """``doc_id, __rf_content_length``: from ``sizes`` when given, else the content."""
    if sizes is None:
        length = pl.col(c.CONTENT).str.len_chars().cast(pl.Float64)
        return docs.select(c.DOC_ID, length.alias(c.T_CONTENT_LENGTH))
    frame = c.to_lazy(sizes, "sizes")
    schema = frame.collect_schema()
    c.require_columns(schema, [c.DOC_ID, c.CONTENT_LENGTH], "sizes")
    c.require_kind(schema, c.CONTENT_LENGTH, ["int", "float", "string"], "sizes")
    doc_id_type(schema, doc_schema, "sizes")
    length = _parse_length(pl.col(c.CONTENT_LENGTH), schema[c.CONTENT_LENGTH])
    frame = frame.select(id_column(schema, id_type, "sizes"), length.alias(c.T_CONTENT_LENGTH))
    return frame.filter(first_of_each(c.DOC_ID))


def _planned(threshold: int) -> pl.Expr:
    query = pl.col(c.QUERY)
    blank = query.is_null() | (query.str.strip_chars(BLANK_CHARS).str.len_chars() == 0)
    big = pl.col(c.T_CONTENT_LENGTH).is_not_null() & (pl.col(c.T_CONTENT_LENGTH) > threshold)
    return pl.col(c.T_FOUND).is_not_null() & ~blank & big


def _content_and_strategy(threshold: int) -> list[pl.Expr]:
    missing = pl.col(c.T_FOUND).is_null()
    full = ~pl.col(c.T_PLANNED)
    found = pl.col(c.HIGHLIGHT).is_not_null()
    content = (
        pl.when(missing)
        .then(pl.lit(None, pl.String))
        .when(full)
        .then(pl.col(c.CONTENT))
        .when(found)
        .then(pl.col(c.HIGHLIGHT))
        .otherwise(pl.col(c.CONTENT).str.slice(0, threshold))
    )
    strategy = (
        pl.when(missing)
        .then(pl.lit(c.MISSING))
        .when(full)
        .then(pl.lit(c.FULL))
        .when(found)
        .then(pl.lit(c.HIGHLIGHTED))
        .otherwise(pl.lit(c.TRUNCATED_FALLBACK))
    )
    return [content.alias(c.CONTENT), strategy.alias(c.STRATEGY)]


def request_key(schema: pl.Schema) -> str:
    """The requests' document column: ``doc_id``, else its alias ``entity_id`` (the
    name postprocess writes), so that postprocess output chains into fetch as it is."""
    if c.DOC_ID not in schema and c.ENTITY_ID in schema:
        return c.ENTITY_ID
    c.require_columns(schema, [c.DOC_ID], "requests")
    return c.DOC_ID


class _Inputs(NamedTuple):
    requests: pl.LazyFrame
    """Ordered, the document column named ``doc_id``."""
    documents: pl.LazyFrame
    """Deduplicated, ``__rf_found`` added."""
    id_type: pl.DataType
    key: str
    """The requests' own name for the document column."""
    extra: list[str]
    """The columns passed through: the requests' own, then the documents'."""
    doc_schema: pl.Schema


def _prepare(requests: c.Frame, documents: c.Frame) -> _Inputs:
    """Check the inputs; return ordered requests, deduplicated documents, the doc_id
    type, the requests' key name and the columns passed through."""
    req, docs = c.to_lazy(requests, "requests"), c.to_lazy(documents, "documents")
    req_schema, doc_schema = req.collect_schema(), docs.collect_schema()
    c.require_columns(req_schema, [c.QUERY_ID], "requests")
    key = request_key(req_schema)
    if key != c.DOC_ID:
        req = req.rename({key: c.DOC_ID})
        req_schema = req.collect_schema()
    id_type = check_highlight_inputs(req_schema, doc_schema, "requests")
    req = req.drop([n for n in (c.CONTENT, c.STRATEGY, c.HIGHLIGHT) if n in req_schema])
    req = _with_order(req.with_columns(id_column(req_schema, id_type, "requests")), req_schema)
    docs = docs.with_columns(
        id_column(doc_schema, id_type, "documents"), pl.col(c.CONTENT).fill_null("")
    )
    docs = docs.filter(first_of_each(c.DOC_ID))
    docs = docs.with_columns(pl.lit(True).alias(c.T_FOUND))
    taken = {*_HEAD, c.QUERY, c.HIGHLIGHT, key}
    own = [n for n in req_schema if n not in taken and not n.startswith(c.TMP)]
    extra = own + [n for n in doc_schema if n not in {*taken, *own} and not n.startswith(c.TMP)]
    docs = docs.select(c.DOC_ID, *extra[len(own) :], c.CONTENT, c.T_FOUND)
    return _Inputs(req, docs, id_type, key, extra, doc_schema)


_HEAD = (c.QUERY_ID, c.DOC_ID, c.RANK, c.CONTENT, c.STRATEGY)


def fetch(
    requests: c.Frame,
    documents: c.Frame,
    config: FetchConfig | Mapping[str, Any] | None = None,
    *,
    sizes: c.Frame | None = None,
) -> pl.LazyFrame:
    """The LLM content of every requested (query, document) pair.

    Rules (SPEC section 2), per pair: ``full`` when the query is null, empty or
    whitespace-only, or the content length is unknown, or it is <= ``fulltext_threshold``;
    else ``highlight`` (the passages of :func:`ragframe.highlight`), or, when no passage
    is found, ``truncated_fallback`` (the first ``fulltext_threshold`` characters).
    Lengths come from ``sizes`` (integers, floats or numeric strings; anything else,
    and a document absent from ``sizes``, is unknown), else from the documents' content,
    in characters (code points). Rows keep each query's request order (by ``rank``,
    then row order; queries in order of first appearance); duplicates are kept.

    Every request has a row: one whose document is not in ``documents`` (or whose
    ``doc_id`` is null) has strategy ``missing`` and null content, in its place;
    :func:`missing_documents` lists them (the CLI reports their count and ids).

    Needs ``requests``: ``query_id``, ``query`` (string), ``doc_id`` (int or string;
    or its alias ``entity_id``, as postprocess writes it), optional ``rank``; any other
    columns (``block_rank``, scores, ``text``, ...) pass through; ``documents``:
    ``doc_id``, ``content`` (string), other columns pass through (the first row of a
    repeated ``doc_id`` wins); ``sizes``: ``doc_id``, ``content_length``. Output:
    ``query_id, doc_id, rank, content, strategy`` (``entity_id`` in place of ``doc_id``
    when the requests call it so: the requests' own name is kept, so postprocess output
    chains in and out without renames), then the requests' other columns except
    ``query`` (request columns named ``content``, ``strategy`` or ``highlight`` are
    replaced), then the documents' other columns not already there.

    Args:
        requests: the documents chosen for each query's context.
        documents: the documents' text.
        config: thresholds and highlighter settings, a :class:`FetchConfig` or a
            mapping of its fields (defaults: Fess's).
        sizes: ``content_length`` per ``doc_id`` from the search phase.

    Returns:
        A LazyFrame, one row per request.

    Raises:
        ConfigError: ``config`` is neither a config nor a mapping of its fields.
        SchemaError: a required column is missing or has the wrong type.
        DataError: an integer ``doc_id`` too large for Int64 (when collected).

    Example:
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1, 2], "content": ["short", "long " * 5]})
        >>> reqs = pl.DataFrame({"query_id": [7, 7], "query": ["long", "long"], "doc_id": [2, 1]})
        >>> out = fetch(reqs, docs, FetchConfig(fulltext_threshold=10, fragment_size=18))
        >>> out.collect()["strategy"].to_list()
        ['highlight', 'full']
    """
    cfg = as_config(config, FetchConfig)
    inputs = _prepare(requests, documents)
    docs = inputs.documents
    # In output order from the start: the joins below keep the left side's order, so no
    # sort moves the content later (the streaming engine copied every string it sorted).
    req = inputs.requests.sort([c.T_FIRST_ROW, c.RANK, c.T_ROW], nulls_last=True)
    lengths = _lengths(docs, sizes, inputs.id_type, inputs.doc_schema)
    pairs = req.join(docs, on=c.DOC_ID, how="left", maintain_order="left")
    pairs = pairs.join(lengths, on=c.DOC_ID, how="left", maintain_order="left")
    pairs = pairs.with_columns(_planned(cfg.fulltext_threshold).alias(c.T_PLANNED))
    work = pairs.filter(c.T_PLANNED).select(c.QUERY, c.DOC_ID)
    work = work.unique(maintain_order=True)  # one order: the plan reads it more than once
    found = passages_per_pair(work.with_row_index(c.T_PAIR), docs, cfg.highlight_config)
    found = found.select(c.QUERY, c.DOC_ID, c.HIGHLIGHT)
    pairs = pairs.join(found, on=[c.QUERY, c.DOC_ID], how="left", maintain_order="left")
    pairs = pairs.with_columns(_content_and_strategy(cfg.fulltext_threshold))
    out = pairs.select(*_HEAD, *inputs.extra)
    return out.rename({c.DOC_ID: inputs.key}) if inputs.key != c.DOC_ID else out


def missing_documents(requests: c.Frame, documents: c.Frame) -> pl.LazyFrame:
    """The requests whose document is not in ``documents`` (null ``doc_id`` included).

    :func:`fetch` has no row for them; this is the diagnostics table to report them.

    Returns:
        A LazyFrame ``query_id, doc_id, rank`` in request order.

    Example:
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1], "content": ["x"]})
        >>> reqs = pl.DataFrame({"query_id": [1, 1], "query": ["a", "a"], "doc_id": [1, 9]})
        >>> missing_documents(reqs, docs).collect()["doc_id"].to_list()
        [9]
    """
    inputs = _prepare(requests, documents)
    req, docs = inputs.requests, inputs.documents
    gone = req.join(docs.select(c.DOC_ID), on=c.DOC_ID, how="anti", maintain_order="left")
    gone = gone.sort([c.T_FIRST_ROW, c.RANK, c.T_ROW], nulls_last=True)
    return gone.select(c.QUERY_ID, pl.col(c.DOC_ID).alias(inputs.key), c.RANK)
