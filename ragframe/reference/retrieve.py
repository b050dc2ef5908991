"""Plain per-query reference implementation of BM25 retrieval (SPEC section 6).

The test oracle, not the engine: for each query it scores every chunk, one at a time,
with the formulas of Lucene 8's ``BM25Similarity`` written out here (float32 where
Lucene computes in ``float``, via numpy's float32 scalars; the clause scores summed in
Python floats, as Lucene sums them in double), and sorts. It imports nothing from the
engine: tokens are :mod:`ragframe.reference._analysis`'s.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import polars as pl

from ragframe.reference._analysis import java_lower, tokens

FREE_LENGTHS = 24
"""Lengths below this are their own norm byte."""


def norm_byte(length: int) -> int:
    """Lucene's ``SmallFloat.intToByte4``: a length below 24 is its own byte; a longer
    one keeps, of ``length - 24``, its bit length and the three bits after its first."""
    if length < FREE_LENGTHS:
        return length
    rest = length - FREE_LENGTHS
    bits = rest.bit_length()
    if bits < 4:
        return FREE_LENGTHS + rest
    shift = bits - 4
    return FREE_LENGTHS + (((rest >> shift) & 7) | ((shift + 1) << 3))


def byte_length(byte: int) -> int:
    """Lucene's ``SmallFloat.byte4ToInt``: the length a norm byte stands for."""
    if byte < FREE_LENGTHS:
        return byte
    code = byte - FREE_LENGTHS
    shift = (code >> 3) - 1
    mantissa = code & 7
    return FREE_LENGTHS + (mantissa if shift < 0 else (mantissa | 8) << shift)


def analyzed(text: str | None) -> list[str]:
    """``StandardAnalyzer`` without stop words: the tokens, lower-cased as Java does."""
    plain = text or ""
    return [java_lower(plain[s:e]) for s, e in tokens(plain)]


def _score(
    weight: np.float32, tf: int, length: int, k1: np.float32, b: np.float32, avgdl: np.float32
) -> np.float32:
    """One term's score in one chunk, as Lucene 8 computes it in float."""
    one = np.float32(1.0)
    decoded = np.float32(byte_length(norm_byte(length)))
    with np.errstate(divide="ignore"):  # k1 = 0: an infinite inverse, the score is the weight
        norm_inverse = one / (k1 * ((one - b) + b * decoded / avgdl))
    return weight - weight / (one + np.float32(tf) * norm_inverse)


def retrieve_reference(
    chunks: pl.DataFrame, queries: pl.DataFrame, *, k: int = 10, k1: float = 1.2, b: float = 0.75
) -> list[dict[str, Any]]:
    """Each query's ``k`` best chunks by Lucene 8's BM25, one query and one chunk at a
    time: one dict per row (``query_id``, the chunks' ``doc_id``/``entity_id``,
    ``chunk_index``, ``similarity``, ``rank``), queries in input order, best first,
    ties to the earlier chunk. A query that matches no chunk has no rows.
    """
    key = "doc_id" if "doc_id" in chunks.columns else "entity_id"
    docs = [Counter(analyzed(text)) for text in chunks["text"].to_list()]
    lengths = [sum(d.values()) for d in docs]
    doc_count = sum(1 for n in lengths if n)
    total = sum(lengths)
    avgdl = np.float32(total / doc_count) if doc_count else np.float32(1.0)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(d.keys())
    k1_, b_ = np.float32(k1), np.float32(b)
    ids, chunk_indexes = chunks[key].to_list(), chunks["chunk_index"].to_list()
    out: list[dict[str, Any]] = []
    for query_id, text in zip(
        queries["query_id"].to_list(), queries["text"].to_list(), strict=True
    ):
        clauses = Counter(analyzed(text))  # a repeated token: one clause, boosted
        hits = []
        for row, doc in enumerate(docs):
            total_score, matched = 0.0, False
            for term, count in clauses.items():
                if term not in doc:
                    continue
                matched = True
                n = df[term]
                idf = np.float32(math.log(1 + (doc_count - n + 0.5) / (n + 0.5)))
                weight = np.float32(count) * idf
                total_score += float(_score(weight, doc[term], lengths[row], k1_, b_, avgdl))
            if matched:
                hits.append((float(np.float32(total_score)), row))
        hits.sort(key=lambda hit: (-hit[0], hit[1]))
        for rank, (score, row) in enumerate(hits[:k], start=1):
            out.append(
                {
                    "query_id": query_id,
                    key: ids[row],
                    "chunk_index": chunk_indexes[row],
                    "similarity": score,
                    "rank": rank,
                }
            )
    return out
