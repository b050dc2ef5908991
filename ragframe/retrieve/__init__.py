"""retrieve: every query against every chunk at once (SPEC section 6), returning the
candidate table that ``postprocess``, ``evaluate`` and ``sweep`` take (SPEC 1).

BM25 scores exactly as Lucene 8's ``BM25Similarity`` with ``StandardAnalyzer`` without
stop words; dense search is exact (every query against every chunk, in blocks); several
retrievers are fused by reciprocal rank.

Where each rule of SPEC section 6 lives:

==================================  =====================================================
Parameters                          :mod:`._config` (:class:`RetrieveConfig`)
Inputs, checked before any work     :mod:`._inputs`
BM25: analysis                      :mod:`._analysis` (the StandardTokenizer of
                                    :mod:`ragframe.fetch._tokenize`, Java lower-casing),
                                    :mod:`._vocab` (term ids)
      index (statistics, postings,  :mod:`._index` (:class:`BM25Index`), norms and the
      Parquet), one-byte norms      norm cache :mod:`._norms`
      queries and scoring           :mod:`._bm25`, kernel :mod:`._kernels._search`
Dense search                        :mod:`._dense`, kernel :mod:`._kernels._topk`
Top k of either search (ties)       kernel :mod:`._kernels._heap` (one bounded heap)
Fusion (opt-in)                     :mod:`._fusion`
Output, unmatched queries           :mod:`._output`
==================================  =====================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe.errors import DataError
from ragframe.retrieve import _bm25, _dense
from ragframe.retrieve._config import FusionLevel, Method, Metric, RetrieveConfig, resolve
from ragframe.retrieve._embed import sentence_transformer
from ragframe.retrieve._fusion import document_codes, fuse
from ragframe.retrieve._index import BM25Index, build_index
from ragframe.retrieve._inputs import Embed, Inputs, blank, check, checked_queries, chunk_keys
from ragframe.retrieve._output import Hits, candidates, unmatched_queries

__all__ = [
    "BM25Index",
    "Embed",
    "FusionLevel",
    "Method",
    "Metric",
    "RetrieveConfig",
    "bm25_index",
    "retrieve",
    "sentence_transformer",
    "unmatched_queries",
]


def retrieve(
    chunks: Any,
    queries: Any,
    config: RetrieveConfig | Mapping[str, Any] | None = None,
    *,
    embed: Embed | None = None,
    progress: bool | None = False,
    **options: Any,
) -> pl.LazyFrame:
    """Every query's ``k`` best chunks, as the candidate table of SPEC 1.

    Needs, in ``chunks``: ``doc_id`` (or ``entity_id``), ``chunk_index``, ``text``
    (null is empty) and, for a dense search without ``embed``, a vector column;
    optional ``entity_type``, ``start_char`` and ``end_char`` are carried along. In
    ``queries``: ``query_id`` (never null, each once) and ``text`` (or, dense, a vector
    column). ``chunks`` may be a :class:`BM25Index` (built once, saved, loaded) for BM25.

    Gives, one row per (query, chunk), queries in their input order, best chunk first:
    ``query_id``, the chunks' id column, ``entity_type`` (when the chunks have it),
    ``chunk_index``, ``start_char`` and ``end_char`` (when they have them),
    ``similarity`` (the score: BM25's, the dense similarity, or the fused one), ``rank``
    (1 = best). Ties go to the chunk earlier in the chunk table. A query that matches
    nothing (none of its terms is in any chunk; no text; a null vector) has no rows:
    :func:`unmatched_queries` lists such queries.

    BM25 (the default) is Lucene 8's ``BM25Similarity(k1, b)`` over ``StandardAnalyzer``
    without stop words, each token of the query an OR clause (a repeated token counts
    again, as Lucene's query parser makes it a boost), scores and order equal to
    Lucene's (float32, the one-byte length norm).

    Args:
        chunks: the chunk table (Polars frame or lazy frame, pyarrow table) or a
            :class:`BM25Index`.
        queries: the query table.
        config: a :class:`RetrieveConfig` (or a mapping of its fields).
        embed: for a dense search, a function from a list of texts to a float32 matrix
            (one row per text), called in batches of ``batch_size``; texts without a
            vector column are embedded with it (see :func:`sentence_transformer`).
        progress: a bar while the BM25 index is built (None: where someone watches).
        **options: fields of :class:`RetrieveConfig` (``k=``, ``method=``, ...),
            replacing those of ``config``.

    Returns:
        A LazyFrame: nothing runs until it is collected (then the inputs are read,
        the index is built and every query is searched).

    Raises:
        ConfigError: a parameter out of range (``k=0``, an unknown method, ...).
        SchemaError: a missing column or one of the wrong type, at once.
        DataError: when collected: null or repeated query ids, vectors of mixed
            lengths, NaN, an ``embed`` that returns the wrong shape.

    Example:
        >>> import polars as pl
        >>> import ragframe as rf
        >>> chunks = pl.DataFrame({
        ...     "doc_id": [1, 1, 2], "chunk_index": [0, 1, 0],
        ...     "text": ["wing lift", "the wing body", "shock waves"],
        ... })
        >>> queries = pl.DataFrame({"query_id": ["q1", "q2"], "text": ["wing", "??"]})
        >>> out = rf.retrieve(chunks, queries, k=2).collect()
        >>> out.select("query_id", "doc_id", "chunk_index", "rank").rows()
        [('q1', 1, 0, 1), ('q1', 1, 1, 2)]
        >>> rf.unmatched_queries(out, queries).collect()["query_id"].to_list()
        ['q2']
    """
    config = resolve(config, options)
    inputs = check(chunks, queries, config, embed)
    return pl.defer(lambda: _run(inputs, config, embed, progress), schema=inputs.schema)


def bm25_index(chunks: Any, *, progress: bool | None = False) -> BM25Index:
    """The BM25 index of a chunk table (``doc_id`` or ``entity_id``, ``chunk_index``,
    ``text``; null text is empty), built at once, to search many query sets, or to
    :meth:`BM25Index.save` and :meth:`BM25Index.load`.

    Args:
        chunks: the chunk table (Polars frame or lazy frame, pyarrow table); its
            ``entity_type``, ``start_char`` and ``end_char`` are kept for the output.
        progress: a bar over the chunks (None: where someone watches).

    Returns:
        The index: pass it to :func:`retrieve` in place of the chunks.

    Raises:
        SchemaError: a missing column or one of the wrong type.

    Example:
        >>> import polars as pl
        >>> chunks = pl.DataFrame({"doc_id": [1], "chunk_index": [0], "text": ["Wing lift"]})
        >>> bm25_index(chunks).vocabulary.terms().to_list()
        ['wing', 'lift']
    """
    frame = c.to_lazy(chunks, "chunks")
    schema = frame.collect_schema()
    keys = chunk_keys(schema)
    c.require_columns(schema, [c.TEXT], "chunks")
    c.require_kind(schema, c.TEXT, ["string"], "chunks")
    table = frame.select(*keys, c.TEXT).collect()
    return build_index(table.select(keys), table[c.TEXT], progress=progress)


def _run(
    inputs: Inputs, config: RetrieveConfig, embed: Embed | None, progress: bool | None
) -> pl.DataFrame:
    query_columns = [c.QUERY_ID, *([c.TEXT] if inputs.query_text else [])]
    if "dense" in config.methods and config.query_vectors in inputs.queries.collect_schema():
        query_columns.append(config.query_vectors)
    queries = checked_queries(inputs.queries.select(list(dict.fromkeys(query_columns))).collect())
    chunks = _chunks(inputs, config)
    keys = inputs.index.chunks if inputs.index is not None else chunks.select(inputs.keys)
    results = [
        _search(method, inputs, config, embed, progress, chunks, queries)
        for method in config.methods
    ]
    if len(results) == 1:
        hits = results[0]
    else:
        docs = document_codes(keys[inputs.keys[0]]) if config.fusion == "document" else None
        hits = fuse(results, config.k, config.rrf_k, config.fusion, docs)
    return candidates(hits, queries[c.QUERY_ID], keys.select(inputs.keys), inputs.schema)


def _chunks(inputs: Inputs, config: RetrieveConfig) -> pl.DataFrame:
    if inputs.chunks is None:
        return pl.DataFrame()
    schema = inputs.chunks.collect_schema()
    columns = [*inputs.keys, *([c.TEXT] if inputs.chunk_text else [])]
    if "dense" in config.methods and config.vectors in schema:
        columns.append(config.vectors)
    return inputs.chunks.select(list(dict.fromkeys(columns))).collect()


def _search(
    method: str,
    inputs: Inputs,
    config: RetrieveConfig,
    embed: Embed | None,
    progress: bool | None,
    chunks: pl.DataFrame,
    queries: pl.DataFrame,
) -> Hits:
    if method == "bm25":
        index = inputs.index
        if index is None:
            index = build_index(chunks.select(inputs.keys), chunks[c.TEXT], progress=progress)
        return _bm25.search(index, queries[c.TEXT], config.depth, config.k1, config.b)
    if config.vectors in chunks.columns:
        chunk_vectors, present = _dense.column_vectors(chunks, config.vectors, "chunks")
        if not present.all():
            row = int(np.flatnonzero(~present)[0])
            raise DataError(
                f"chunks: vector column '{config.vectors}' has {int((~present).sum())} null "
                f"vectors; first: row {row}; expected a vector on every chunk"
            )
    else:
        assert embed is not None  # checked with the columns
        chunk_vectors = [_dense.embedded(chunks[c.TEXT], embed, config.batch_size, "chunk")]
    width = chunk_vectors[0].shape[1]
    if config.query_vectors in queries.columns:
        pieces, asked = _dense.column_vectors(queries, config.query_vectors, "queries")
        query_vectors = np.concatenate(pieces)
    else:
        assert embed is not None  # checked with the columns
        asked = ~blank(queries[c.TEXT]).to_numpy()
        texts = queries[c.TEXT].filter(pl.Series(asked))
        found = _dense.embedded(texts, embed, config.batch_size, "query")
        _dense.check_width(width, found)
        query_vectors = np.zeros((queries.height, found.shape[1]), dtype=np.float32)
        query_vectors[asked] = found
    _dense.check_width(width, query_vectors)
    return _dense.search(
        chunk_vectors, query_vectors, asked, config.depth, config.metric, config.block_size
    )
