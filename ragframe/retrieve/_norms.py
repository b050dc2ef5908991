"""Lucene's one-byte length norm (``SmallFloat.intToByte4`` and its decoding) and the
BM25 norm cache that Lucene 8's ``BM25Similarity`` builds from it, in numpy, as
Lucene computes them (float32 where Lucene uses ``float``).

The encoding: lengths below :data:`FREE` are their own byte; a longer length ``n``
keeps, of ``n - FREE``, its four most significant bits (the first one implicit) and its
bit length, as a tiny float: three mantissa bits and the exponent above them, so every
length up to 2**31 - 1 fits a byte and decodes to the largest such float not above it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]

FREE = 24
"""Lengths below this are stored exactly: 255 less the code of the largest int
(``2**31 - 1``: bit length 31, so exponent 27 + 1, mantissa 7: code 231)."""


def _int4(x: I64) -> I64:
    """Lucene's ``longToInt4`` of non-negative ``x``: exact below 8, else three mantissa
    bits under the exponent (bit length - 3)."""
    _, bit_length = np.frexp(x.astype(np.float64))  # exact below 2**53
    shift = np.maximum(bit_length.astype(np.int64) - 4, 0)
    coded = ((x >> shift) & 7) | ((shift + 1) << 3)
    return np.where(bit_length < 4, x, coded)


def length_to_byte(lengths: npt.ArrayLike) -> U8:
    """``SmallFloat.intToByte4`` of each length (0 to 2**31 - 1).

    Example:
        >>> length_to_byte([0, 23, 24, 60, 1000]).tolist()
        [0, 23, 24, 49, 87]
    """
    n = np.asarray(lengths, dtype=np.int64)
    if n.size and (n.min() < 0 or n.max() > 2**31 - 1):
        raise ValueError("a length must be in 0 .. 2**31 - 1")
    coded = np.where(n < FREE, n, FREE + _int4(np.maximum(n - FREE, 0)))
    return coded.astype(np.uint8)


def byte_to_length(codes: npt.ArrayLike) -> I64:
    """``SmallFloat.byte4ToInt`` of each byte: the length it stands for.

    Example:
        >>> byte_to_length([0, 23, 24, 49, 87]).tolist()
        [0, 23, 24, 60, 984]
    """
    i = np.asarray(codes, dtype=np.int64) & 0xFF
    x = np.maximum(i - FREE, 0)
    bits, shift = x & 7, (x >> 3) - 1
    decoded = np.where(shift < 0, bits, (bits | 8) << np.maximum(shift, 0))
    return np.where(i < FREE, i, FREE + decoded)


LENGTHS = byte_to_length(np.arange(256)).astype(np.float32)
"""Lucene's ``LENGTH_TABLE``: the length each norm byte stands for, as a float."""


def norm_cache(k1: float, b: float, average_length: np.float32) -> F32:
    """Lucene 8's per-norm-byte cache, ``1 / (k1 * ((1 - b) + b * length / avgdl))``,
    each operation in float32 in Lucene's order."""
    k1_, b_, one = np.float32(k1), np.float32(b), np.float32(1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cache: F32 = one / (k1_ * ((one - b_) + b_ * LENGTHS / np.float32(average_length)))
    return cache


def average_length(total_tokens: int, chunks_with_tokens: int) -> np.float32:
    """Lucene's ``avgdl``: ``(float) (sumTotalTermFreq / (double) docCount)``."""
    if chunks_with_tokens == 0:
        return np.float32(1.0)
    return np.float32(total_tokens / chunks_with_tokens)


def idf(doc_freq: I64, chunks_with_tokens: int) -> F32:
    """Lucene 8's ``idf``: ``(float) log(1 + (docCount - df + 0.5) / (df + 0.5))``,
    computed in float64 and rounded to float32."""
    df = doc_freq.astype(np.float64)
    out: F32 = np.log(1.0 + (chunks_with_tokens - df + 0.5) / (df + 0.5)).astype(np.float32)
    return out
