"""Seeded synthetic retrieval output for the benchmarks.

Realistic shape, not realistic meaning: a corpus of documents made of sentences over a
Zipf-distributed pseudo-word vocabulary, cut into 400-character windows with 100
characters of overlap (the usual chunker), and per query 100 retrieved chunks: 25
documents with a run of 4 chunk indexes each (adjacent, sometimes with a gap of 2, so
merging and overlap removal happen), similarities rounded to 3 decimals (ties), rows in
rank order. Everything comes from one ``numpy`` generator seeded by ``seed``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl

WINDOW, OVERLAP = 400, 100
DOCS_PER_QUERY, RUN = 25, 4
_SYLLABLES = "ka lo mi ne ru ta so vi pe da gu zo re li an ex or tion ment ing al".split()  # noqa: SIM905


@dataclass(frozen=True)
class Retrieval:
    """Candidates without text, the chunk store, and candidates with text inline."""

    results: pl.DataFrame  # query_id, doc_id, chunk_index, similarity, rank
    chunks: pl.DataFrame  # doc_id, chunk_index, start_char, end_char, text
    inline: pl.DataFrame  # results + text

    @property
    def rows(self) -> int:
        return self.results.height


def _sentences(rng: np.random.Generator, count: int) -> list[str]:
    words = ["".join(rng.choice(_SYLLABLES, size=rng.integers(1, 4))) for _ in range(3000)]
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    out = []
    for _ in range(count):
        chosen = rng.choice(len(words), size=rng.integers(6, 24), p=weights)
        sentence = " ".join(words[i] for i in chosen)
        out.append(sentence[0].upper() + sentence[1:] + rng.choice([". ", ". ", ".\n", "? "]))
    return out


def _documents(rng: np.random.Generator, count: int) -> pl.DataFrame:
    sentences = np.array(_sentences(rng, 4000), dtype=object)
    lengths = rng.integers(12, 40, size=count)  # sentences per document
    picks = rng.integers(0, len(sentences), size=int(lengths.sum()))
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    content = ["".join(sentences[picks[a:b]]) for a, b in itertools.pairwise(bounds)]
    return pl.DataFrame({"doc_id": np.arange(1, count + 1), "content": content})


def _chunks(docs: pl.DataFrame) -> pl.DataFrame:
    step = WINDOW - OVERLAP
    n = pl.col("content").str.len_chars()
    count = ((n - OVERLAP - 1).clip(lower_bound=0) // step + 1).alias("count")
    return (
        docs.with_columns(count)
        .with_columns(pl.int_ranges(0, pl.col("count")).alias("chunk_index"))
        .explode("chunk_index")
        .with_columns((pl.col("chunk_index") * step).alias("start_char"))
        .with_columns(pl.min_horizontal(pl.col("start_char") + WINDOW, n).alias("end_char"))
        .select(
            "doc_id",
            "chunk_index",
            "start_char",
            "end_char",
            pl.col("content").str.slice(pl.col("start_char"), WINDOW).alias("text"),
        )
    )


def _results(rng: np.random.Generator, chunk_counts: np.ndarray, queries: int) -> pl.DataFrame:
    usable = np.flatnonzero(chunk_counts >= RUN + 1) + 1  # doc ids with room for a run
    docs = rng.choice(usable, size=(queries, DOCS_PER_QUERY))
    starts = rng.integers(0, chunk_counts[docs - 1] - RUN)
    offsets = np.arange(RUN) + (rng.random((queries, DOCS_PER_QUERY, RUN)) < 0.15).cumsum(-1)
    index = np.minimum(starts[..., None] + offsets, chunk_counts[docs - 1, None] - 1)
    base = rng.beta(4, 3, size=(queries, DOCS_PER_QUERY, 1))
    sim = np.round(np.clip(base + rng.normal(0, 0.05, size=index.shape), 0, 1), 3)
    frame = pl.DataFrame(
        {
            "query_id": np.repeat(np.arange(1, queries + 1), DOCS_PER_QUERY * RUN),
            "doc_id": np.repeat(docs.ravel(), RUN),
            "chunk_index": index.ravel(),
            "similarity": sim.ravel(),
        }
    )
    ranked = frame.sort(["query_id", "similarity"], descending=[False, True], maintain_order=True)
    return ranked.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))


def generate(queries: int, *, documents: int = 20_000, seed: int = 42) -> Retrieval:
    """Retrieval output for ``queries`` queries x 100 candidates (``RUN`` x 25 docs)."""
    rng = np.random.default_rng(seed)
    docs = _documents(rng, documents)
    chunks = _chunks(docs)
    counts = chunks.group_by("doc_id").len().sort("doc_id")["len"].to_numpy()
    results = _results(rng, counts, queries)
    inline = results.join(
        chunks.select("doc_id", "chunk_index", "text"),
        on=["doc_id", "chunk_index"],
        how="left",
        maintain_order="left",
    )
    return Retrieval(results=results, chunks=chunks, inline=inline)
