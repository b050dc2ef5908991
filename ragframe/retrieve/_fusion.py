"""Reciprocal rank fusion of several retrievers' results (SPEC 6, opt-in): a chunk's
fused score is the sum, over the lists it appears in, of ``1 / (rrf_k + rank)``.

At document level a list counts each document once, at the rank of its best chunk
among the list's documents (its distinct documents numbered 1, 2, ... in list order),
so a document with several chunks in a list gets one contribution from it, not one per
chunk; the fused row of a document is its best-ranked chunk in any list (ties: the
earlier retriever). Ties in the fused score: the lower chunk row.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe.retrieve._config import FusionLevel
from ragframe.retrieve._output import Hits, ranks

I64 = npt.NDArray[np.int64]


def document_codes(ids: pl.Series) -> I64:
    """A number per chunk, equal for chunks of one document; a null id is a document of
    its own."""
    codes = ids.rank("dense").cast(pl.Int64).to_numpy(allow_copy=True)
    nulls = ids.is_null().to_numpy()
    if nulls.any():
        codes = np.where(nulls, -1 - np.arange(ids.len()), codes)
    return np.asarray(codes, dtype=np.int64)


def _lists(results: list[Hits], level: FusionLevel, docs: I64 | None) -> pl.DataFrame:
    frames = []
    for method, hits in enumerate(results):
        frame = pl.DataFrame(
            {
                "q": hits.query,
                "chunk": hits.chunk.astype(np.int64),
                "rank": ranks(hits.query),
                "method": np.full(hits.query.size, method),
            }
        )
        if level == "document" and docs is not None:
            frame = (
                frame.with_columns(doc=docs[hits.chunk])
                .filter(pl.struct("q", "doc").is_first_distinct())
                .with_columns(rank=pl.int_range(1, pl.len() + 1).over("q"))
            )
        else:
            frame = frame.with_columns(doc=pl.col("chunk"))
        frames.append(frame)
    return pl.concat(frames)


def fuse(results: list[Hits], k: int, rrf_k: int, level: FusionLevel, docs: I64 | None) -> Hits:
    """The top ``k`` of each query by fused score."""
    lists = _lists(results, level, docs)
    fused = (
        lists.sort("q", "rank", "method")
        .group_by("q", "doc", maintain_order=True)
        .agg(
            pl.col("chunk").first(),
            (1.0 / (rrf_k + pl.col("rank"))).sum().alias("score"),
        )
        .sort(["q", "score", "chunk"], descending=[False, True, False])
        .filter(pl.int_range(pl.len()).over("q") < k)
    )
    return Hits(
        fused["q"].to_numpy().astype(np.int64),
        fused["chunk"].to_numpy().astype(np.int32),
        fused["score"].to_numpy(),
    )
