"""Exact dense search (SPEC 6): every query's k nearest chunks by inner product, cosine
or L2, in blocks of queries and chunks, so memory is the vectors plus one block of
scores, never queries x chunks.

Vectors come from a column (a fixed-size array or list of numbers, read as float32) or
from ``embed``, called on batches of texts. Per block, one float32 matrix product
(numpy's BLAS), then the top-k kernel (:mod:`._kernels._topk`) merges the block into
each query's best, ties to the lower chunk row. Cosine is the inner product of the
normalized vectors; L2's similarity is minus the squared distance,
``-(|q|^2 + |c|^2 - 2 q.c)`` in float32 (as FAISS computes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe.errors import DataError, SchemaError
from ragframe.retrieve._config import Metric
from ragframe.retrieve._output import Hits
from ragframe.retrieve._parts import in_parts, threads

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]

CHUNK_BLOCK = 32_768
"""Chunks per block of scores (with ``block_size`` queries: the scores' memory)."""


def column_vectors(frame: pl.DataFrame, name: str, what: str) -> tuple[list[F32], Flags]:
    """The vectors of column ``name`` as float32 matrices, one per piece of the column
    (views of its memory, not copies, where it is already float32 without nulls), and
    which rows have one (a null vector is a row of zeros).

    Raises:
        DataError: vectors of different lengths, or values that are null, NaN or
            infinite; the message names the first row.
    """
    column = frame[name]
    present = column.is_not_null().to_numpy()
    if isinstance(column.dtype, pl.List):
        lengths = column.list.len()
        dims = lengths.drop_nulls().unique()
        if dims.len() > 1:
            row = int((lengths != lengths.drop_nulls()[0]).fill_null(False).arg_true()[0])
            raise DataError(
                f"{what}: vectors in '{name}' have {dims.len()} different lengths "
                f"({sorted(dims.to_list())[:5]}); first differing: row {row} with "
                f"{lengths[row]}; expected one length"
            )
        width = int(dims[0]) if dims.len() else 0
        column = column.cast(pl.Array(pl.Float32, width))
    else:
        column = column.cast(pl.Array(pl.Float32, getattr(column.dtype, "size", 0)))
    width = int(getattr(column.dtype, "size", 0))
    pieces, at = [], 0
    for n in column.chunk_lengths():
        matrix = np.asarray(column.slice(at, n).to_numpy(), dtype=np.float32).reshape(-1, width)
        here = present[at : at + n]
        if not here.all():
            matrix = matrix.copy()
            matrix[~here] = 0.0
        _check_finite(matrix, here, at, name, what)
        pieces.append(matrix)
        at += n
    return pieces or [np.zeros((0, width), dtype=np.float32)], present


def _check_finite(vectors: F32, present: Flags, first: int, name: str, what: str) -> None:
    bad = ~np.isfinite(vectors).all(axis=1) & present
    if bad.any():
        row = first + int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{what}: vector column '{name}' has NaN, infinite or null values in "
            f"{int(bad.sum())} vectors; first: row {row}; expected finite numbers"
        )


def embedded(
    texts: pl.Series, embed: Callable[[list[str]], Any], batch_size: int, what: str
) -> F32:
    """``embed`` applied to ``texts`` (nulls as "") in batches of ``batch_size``.

    Raises:
        DataError: ``embed`` returned something that is not one row of numbers per
            text, of the same width every time, all finite.
    """
    values = texts.fill_null("").to_list()
    parts: list[F32] = []
    width = -1
    for lo in range(0, len(values), batch_size):
        batch = values[lo : lo + batch_size]
        out = embed(batch)
        try:
            matrix = np.asarray(out, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"embed returned {type(out).__name__} for {what}; expected a float32 matrix ({exc})"
            ) from exc
        if (
            matrix.ndim != 2
            or matrix.shape[0] != len(batch)
            or (width >= 0 and matrix.shape[1] != width)
        ):
            expected = f"({len(batch)}, {width if width >= 0 else 'dims'})"
            raise DataError(
                f"embed returned shape {matrix.shape} for a batch of {len(batch)} "
                f"{what} texts; expected {expected}: one row of the same width per text"
            )
        width = matrix.shape[1]
        if not np.isfinite(matrix).all():
            raise DataError(
                f"embed returned NaN or infinite values for {what} "
                f"(batch starting at row {lo}); expected finite numbers"
            )
        parts.append(matrix)
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)


def _normalized(vectors: F32, present: Flags, what: str) -> F32:
    norms = np.linalg.norm(vectors, axis=1)
    zero = (norms == 0) & present
    if zero.any():
        raise DataError(
            f"{what}: {int(zero.sum())} zero vectors (first: row "
            f"{int(np.flatnonzero(zero)[0])}) have no cosine; expected non-zero vectors"
        )
    scale = np.where(norms == 0, np.float32(1.0), norms).astype(np.float32)
    out: F32 = (vectors / scale[:, None]).astype(np.float32, copy=False)
    return out


def _block_scores(queries: F32, chunks: F32, metric: Metric, q_norms: F32, c_norms: F32) -> F32:
    scores: F32 = queries @ chunks.T
    if metric == "l2":
        scores *= np.float32(2.0)
        scores -= q_norms[:, None]
        scores -= c_norms[None, :]
    return scores


def search(
    chunks: list[F32], queries: F32, present: Flags, k: int, metric: Metric, block_size: int
) -> Hits:
    """Every present query's top ``k`` chunks (all queries x all chunks, exactly);
    ``chunks``: the chunk vectors, piece by piece, in row order."""
    from ragframe.retrieve._kernels import _topk

    total = sum(piece.shape[0] for piece in chunks)
    if metric == "cosine":  # the chunks normalized block by block: never copied whole
        _no_zero_chunks(chunks)
        queries = _normalized(queries, present, "queries")
    rows = np.flatnonzero(present)
    queries = np.ascontiguousarray(queries[rows])
    n, k = queries.shape[0], min(k, total)
    heap_scores = np.zeros((n, k), dtype=np.float32)
    heap_rows = np.zeros((n, k), dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    q_norms = np.einsum("ij,ij->i", queries, queries)
    for lo in range(0, n, block_size):
        hi = min(n, lo + block_size)
        for first, part in _blocks(chunks):
            if metric == "cosine":
                part = _normalized(part, np.ones(part.shape[0], dtype=bool), "chunks")
            c_norms = np.einsum("ij,ij->i", part, part)
            block = _block_scores(queries[lo:hi], part, metric, q_norms[lo:hi], c_norms)

            def merge(a: int, b: int, block: F32 = block, first: int = first, lo: int = lo) -> None:
                _topk.merge_block(
                    block[a - lo : b - lo], first, a, b, heap_scores, heap_rows, sizes
                )

            in_parts(merge, lo, hi, max(1, -(-(hi - lo) // threads())))
    _topk.ordered(heap_scores, heap_rows, sizes)
    keep = np.arange(k)[None, :] < sizes[:, None]
    return Hits(np.repeat(rows, sizes), heap_rows[keep].astype(np.int32), heap_scores[keep])


def _blocks(pieces: list[F32]) -> Iterator[tuple[int, F32]]:
    """Blocks of at most :data:`CHUNK_BLOCK` chunks, with the row of their first."""
    at = 0
    for piece in pieces:
        for lo in range(0, piece.shape[0], CHUNK_BLOCK):
            yield at + lo, piece[lo : lo + CHUNK_BLOCK]
        at += piece.shape[0]


def _no_zero_chunks(pieces: list[F32]) -> None:
    for first, part in _blocks(pieces):
        zero = np.flatnonzero(np.einsum("ij,ij->i", part, part) == 0)
        if zero.size:
            raise DataError(
                f"chunks: zero vectors (first: row {first + int(zero[0])}) have no cosine; "
                "expected non-zero vectors"
            )


def check_width(width: int, queries: F32) -> None:
    """Query vectors must be as wide as the chunks'."""
    if queries.shape[0] and width and queries.shape[1] != width:
        raise SchemaError(
            f"chunk vectors have {width} dimensions, query vectors {queries.shape[1]}; "
            "expected the same"
        )
