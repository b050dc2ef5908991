"""Every column name, in one place (inputs, outputs, strategy values, temporaries), and
the input checks shared by every stage.

Temporary columns (``T_*``) use the private prefix :data:`TMP` and never leak into
output; each name has one meaning wherever it is used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.errors import SchemaError, did_you_mean

# candidates (postprocess input)
QUERY_ID = "query_id"
ENTITY_ID = "entity_id"
DOC_ID = "doc_id"
ENTITY_TYPE = "entity_type"
CHUNK_INDEX = "chunk_index"
TEXT = "text"
SIMILARITY = "similarity"
RERANK_SCORE = "rerank_score"
START_CHAR = "start_char"
END_CHAR = "end_char"

# postprocess output
BLOCK_RANK = "block_rank"
START_CHUNK_INDEX = "start_chunk_index"
END_CHUNK_INDEX = "end_chunk_index"
MAX_SIMILARITY = "max_similarity"
AVG_SIMILARITY = "avg_similarity"
SOURCE_CHUNK_COUNT = "source_chunk_count"
RANKING_SCORE = "ranking_score"
CHAR_COUNT = "char_count"
TRUNCATED = "truncated"
CHUNK_INDEXES = "chunk_indexes"

BLOCK_COLUMNS: tuple[str, ...] = (
    QUERY_ID,
    BLOCK_RANK,
    ENTITY_TYPE,
    ENTITY_ID,
    START_CHUNK_INDEX,
    END_CHUNK_INDEX,
    TEXT,
    MAX_SIMILARITY,
    AVG_SIMILARITY,
    SOURCE_CHUNK_COUNT,
    RERANK_SCORE,
    RANKING_SCORE,
    CHAR_COUNT,
    TRUNCATED,
    CHUNK_INDEXES,
)
TOKEN_COUNT = "token_count"
"""A block's length in tokens: an output column when a tokenizer is set, right after
``char_count`` (:data:`TOKEN_BLOCK_COLUMNS`)."""
TOKEN_BLOCK_COLUMNS: tuple[str, ...] = (
    *BLOCK_COLUMNS[: BLOCK_COLUMNS.index(CHAR_COUNT) + 1],
    TOKEN_COUNT,
    *BLOCK_COLUMNS[BLOCK_COLUMNS.index(CHAR_COUNT) + 1 :],
)

# fetch
QUERY = "query"
RANK = "rank"
CONTENT = "content"
CONTENT_LENGTH = "content_length"
STRATEGY = "strategy"
PASSAGES = "passages"
"""The chosen passages: a list of ``{start, end, score}``."""
HIGHLIGHT = "highlight"
"""The passages joined with "..." (also the ``highlight`` strategy's content)."""
START = "start"
END = "end"
"""Character offsets of a passage (also of tokens, runs and fragments inside the
highlighter's frames)."""
SCORE = "score"
REQUEST_ORDER = "request_order"
"""A request's global output position, added before requests are partitioned
(:func:`ragframe.partition.fetch_order`)."""

# fetch strategy values (the ``strategy`` column)
FULL = "full"
HIGHLIGHTED = "highlight"
TRUNCATED_FALLBACK = "truncated_fallback"
MISSING = "missing"
"""The requested document is not in the documents table: null content."""
STRATEGIES: tuple[str, ...] = (FULL, HIGHLIGHTED, TRUNCATED_FALLBACK, MISSING)

# window / chunk
SECTION_INDEX = "section_index"
TITLE = "title"
WINDOW_INDEX = "window_index"

# evaluate: qrels and per-query metrics
RELEVANCE = "relevance"
"""A judgement's grade (<= 0: judged not relevant)."""
GAIN = "gain"
"""A judged document's gain (> 0: relevant)."""
JUDGED = "judged"
"""Whether a query has judgements (only judged queries are averaged)."""
N_RELEVANT = "n_relevant"
MAP = "map"
MRR = "mrr"
AT_K = ("ndcg", "recall", "precision", "hit")
"""List metrics taken at a cutoff k, named ``"<metric>@<k>"`` (:func:`at_k`)."""
CONTEXT_RECALL = "context_recall"
CONTEXT_RECALL_CAPPED = "context_recall_capped"
CONTEXT_NDCG = "context_ndcg"
BLOCKS = "blocks"
CHARS_USED = "chars_used"
BUDGET_SHARE = "budget_share"
TOKENS_USED = "tokens_used"
"""The tokens of a query's blocks (from ``token_count``, where the blocks have it)."""
TOKEN_BUDGET_SHARE = "token_budget_share"
RELEVANT_SHARE = "relevant_share"
UNJUDGED_SHARE = "unjudged_share"
DUPLICATE_CHARS = "duplicate_chars"
FIRST_RELEVANT_RANK = "first_relevant_rank"
FIRST_RELEVANT_OFFSET = "first_relevant_offset"
TRUNCATED_BLOCKS = "truncated_blocks"
SPAN_RECALL = "span_recall"
"""Relevant characters (span judgements) the context covers / those judged."""
SPAN_PRECISION = "span_precision"
"""Relevant characters (span judgements) the context covers / its characters."""
CONFIG = "config"
"""A sweep's configuration number (0-based, in grid order)."""


def at_k(metric: str, k: int) -> str:
    """The column of a list metric at cutoff ``k``: ``at_k("ndcg", 10) == "ndcg@10"``."""
    return f"{metric}@{k}"


# temporary columns, private to a plan
TMP = "__rf_"
"""The prefix of every temporary column; input columns may not use it."""
T_ROW = TMP + "row"
"""A row's number in its input (postprocess candidates, fetch requests)."""
T_SIM = TMP + "sim"
"""A candidate's similarity, null read as 0.0."""
T_START = TMP + "start"
"""Whether a row is its query's first in ranking order."""
T_TYPE = TMP + "type"
"""The group key's entity type (null read as "")."""
T_ENTITY = TMP + "entity"
"""The group key's entity (null read as 0 or "")."""
T_RANK = TMP + "rank"
"""A candidate's place in the whole ranking (queries ascending, then ranking order)."""
T_SURE = TMP + "sure"
T_HASH = TMP + "hash"
T_HEAD = TMP + "head"
"""Whether a candidate is among its query's first ones (the first walk)."""
T_MORE = TMP + "more"
"""Whether a query has candidates past the first walk's."""
T_POSITION = TMP + "position"
T_AT = TMP + "at"
"""A row's place in the batch a kernel works on."""
T_BASE = TMP + "base"
T_WALK = TMP + "walk"
T_SELECTED = TMP + "selected"
T_COUNT = TMP + "count"
T_BEST = TMP + "best"
T_KERNEL = TMP + "kernel"
T_TOTAL = TMP + "total"
"""The running length of a query's blocks, up to and with this one (rule 10)."""
T_CHARS = TMP + "chars"
"""A block's length in code points."""
T_TOKENS = TMP + "tokens"
"""A block's length in tokens (null: not counted yet)."""
T_TEXT = TMP + "text"
T_LENGTH = TMP + "length"
T_FULL_TEXT = TMP + "full_text"
"""A document's sections rendered and joined."""
T_FIRST_ROW = TMP + "first_row"
T_CONTENT_LENGTH = TMP + "content_length"
T_PLANNED = TMP + "planned"
"""Whether a request is planned for highlighting."""
T_FOUND = TMP + "found"
"""Whether a request's document is in the documents table."""
T_PAIR = TMP + "pair"
T_TOKEN = TMP + "token"
T_TERM = TMP + "term"
T_TERM_CODE = TMP + "term_code"
T_FRAGMENT = TMP + "fragment"
T_TEXTS = TMP + "texts"
T_LAST = TMP + "last"
T_DOC_TERMS = TMP + "doc_terms"
T_RUN = TMP + "run"
T_IS_WORD = TMP + "is_word"
T_ORDER = TMP + "order"
T_SENTENCE = TMP + "sentence"
T_PIECE = TMP + "piece"
T_FREQ = TMP + "freq"
T_DOC_FREQ = TMP + "doc_freq"
T_TRIM_START = TMP + "trim_start"
T_TRIM_END = TMP + "trim_end"

Frame = pl.DataFrame | pl.LazyFrame | pa.Table

SYNONYMS: dict[str, tuple[str, ...]] = {
    QUERY_ID: ("qid", "queryid", "query_no", "question_id", "topic_id", "q_id", "id"),
    ENTITY_ID: (DOC_ID, "document_id", "docid", "docno", "doc", "entity", "pid", "id"),
    DOC_ID: (ENTITY_ID, "document_id", "docid", "docno", "doc", "document", "pid", "id"),
    CHUNK_INDEX: ("chunk_id", "chunk", "chunk_idx", "chunk_no", "chunk_number", "position"),
    SIMILARITY: ("score", "cosine", "cosine_similarity", "sim", "similarity_score", "relevance"),
    RERANK_SCORE: ("rerank", "reranker_score", "rerank_similarity", "cross_encoder_score"),
    ENTITY_TYPE: ("doc_type", "document_type", "type", "kind"),
    TEXT: ("content", "passage", "chunk_text", "contents", "body", "snippet"),
    CONTENT: ("text", "contents", "body", "document_text", "full_text", "passage"),
    QUERY: ("query_text", "question", "q", "text"),
    SECTION_INDEX: ("section", "section_id", "section_no", "section_number", "position"),
    CONTENT_LENGTH: ("length", "content_len", "doc_length", "size", "chars"),
}
"""Names people use for each input column, most likely first: a missing column's
did-you-mean suggests one of these when the input has it."""


def in_memory(data: Any) -> Any:
    """A pyarrow Table or RecordBatch as a Polars DataFrame (in memory, as it was: its
    values can be read when a plan is built); anything else as it is."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return pl.from_arrow(data)
    return data


def to_lazy(data: Any, what: str) -> pl.LazyFrame:
    """Accept a Polars DataFrame/LazyFrame or a pyarrow Table; return a LazyFrame."""
    if isinstance(data, pl.LazyFrame):
        return data
    data = in_memory(data)  # a pyarrow Table or RecordBatch: a DataFrame
    if isinstance(data, pl.DataFrame):
        return data.lazy()
    raise SchemaError(
        f"{what} must be a polars DataFrame/LazyFrame or a pyarrow Table, got {type(data).__name__}"
    )


def require_columns(
    schema: Mapping[str, Any],
    names: Iterable[str],
    what: str,
    aliases: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`SchemaError` naming the first missing column of ``names``.

    The message lists the columns found and suggests the one most likely meant (a
    synonym of the missing name, :data:`SYNONYMS`, or a close spelling), never one of
    the other required columns. ``aliases``: another accepted name of a column, said in
    the message (``entity_id`` -> ``doc_id``).
    """
    names = list(names)
    found = list(schema)
    spare = [n for n in found if n not in names]
    for name in names:
        if name not in schema:
            alias = (aliases or {}).get(name)
            also = f" (or '{alias}')" if alias else ""
            hint = did_you_mean(name, spare, SYNONYMS.get(name, ()), taken=SYNONYMS)
            raise SchemaError(f"{what}: missing column '{name}'{also}; found: {found}{hint}")


def _kind(dtype: pl.DataType) -> str:
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype == pl.String:
        return "string"
    if dtype == pl.Boolean:
        return "bool"
    if dtype == pl.Null:
        return "null"
    return "other"


def require_kind(
    schema: Mapping[str, pl.DataType], name: str, kinds: Iterable[str], what: str
) -> None:
    """Raise :class:`SchemaError` unless column ``name`` has one of ``kinds``.

    Kinds are ``int``, ``float``, ``string``, ``bool``; an all-null column (dtype
    ``Null``) is accepted everywhere.
    """
    allowed = tuple(kinds)
    kind = _kind(schema[name])
    if kind == "null" or kind in allowed:
        return
    raise SchemaError(
        f"{what}: column '{name}' has type {schema[name]}; expected {' or '.join(allowed)}"
    )
