"""The vocabulary: every distinct term (lower-cased token) of the chunks and its id,
grown block by block by the compiled hash table of :mod:`._kernels._vocab`."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe._arrow import series, string_bytes

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


def _grown(array: npt.NDArray[np.generic], size: int, fill: int = 0) -> npt.NDArray[np.generic]:
    out = np.full(size, fill, dtype=array.dtype)
    out[: array.size] = array
    return out


class Vocabulary:
    """Terms and their ids (0, 1, ... in order of first appearance)."""

    def __init__(self) -> None:
        self.table: I32 = np.full(1 << 12, -1, dtype=np.int32)
        self.hashes = np.zeros(1 << 11, dtype=np.uint64)
        self.term_starts: I64 = np.zeros((1 << 11) + 1, dtype=np.int64)
        self.term_data: U8 = np.zeros(1 << 14, dtype=np.uint8)
        self.sizes: I64 = np.zeros(2, dtype=np.int64)
        """Terms and bytes in use."""

    def __len__(self) -> int:
        return int(self.sizes[0])

    def _reserve(self, terms: int, data: int) -> None:
        """Room for ``terms`` more terms of ``data`` more bytes (doubling)."""
        from ragframe.retrieve._kernels import _vocab

        need = int(self.sizes[0]) + terms
        if need + 1 > self.hashes.size:
            size = max(need + 1, 2 * self.hashes.size)
            self.hashes = _grown(self.hashes, size)  # type: ignore[assignment]
            self.term_starts = _grown(self.term_starts, size + 1)  # type: ignore[assignment]
        if int(self.sizes[1]) + data > self.term_data.size:
            self.term_data = _grown(
                self.term_data, max(int(self.sizes[1]) + data, 2 * self.term_data.size)
            )  # type: ignore[assignment]
        if 2 * need > self.table.size:
            width = self.table.size
            while 2 * need > width:
                width *= 2
            self.table = np.full(width, -1, dtype=np.int32)
            _vocab.rehash(self.hashes, int(self.sizes[0]), self.table)

    def ids(self, data: U8, starts: I64, lengths: I64, *, lower: bool, insert: bool) -> I32:
        """The id of each term ``data[starts[i]:starts[i] + lengths[i]]`` (ASCII
        capitals lower-cased when ``lower``): new terms get new ids when ``insert``,
        else -1."""
        from ragframe.retrieve._kernels import _vocab

        out = np.empty(starts.size, dtype=np.int32)
        if insert:
            self._reserve(starts.size, int(lengths.sum()))
        _vocab.intern(
            data, starts, lengths, lower, insert, self.table, self.hashes,
            self.term_data, self.term_starts, self.sizes, out,
        )  # fmt: skip
        return out

    def terms(self, name: str = "term") -> pl.Series:
        """Every term, in id order (a copy of the vocabulary's bytes)."""
        n, used = int(self.sizes[0]), int(self.sizes[1])
        offsets = pa.py_buffer(self.term_starts[: n + 1].copy())
        data = pa.py_buffer(self.term_data[:used].copy())
        return series(name, pa.LargeStringArray.from_buffers(n, offsets, data))

    @classmethod
    def of(cls, terms: pl.Series) -> Vocabulary:
        """The vocabulary whose ids are the positions of ``terms`` (distinct strings)."""
        vocab = cls()
        data, offsets = string_bytes(terms)
        ids = vocab.ids(data, offsets[:-1], np.diff(offsets), lower=False, insert=True)
        if ids.size and not np.array_equal(ids, np.arange(ids.size, dtype=np.int32)):
            raise ValueError("the terms of an index are not distinct")
        return vocab
