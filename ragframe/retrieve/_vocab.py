"""The vocabulary: every distinct term (lower-cased token) of the chunks and its id,
grown block by block by the compiled hash table of :mod:`._kernels._vocab`, or, while
the work is small (:mod:`._small`), kept as a Polars Series of the terms and joined to:
the same ids either way, so a vocabulary moves from one form to the other as calls
grow."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe._arrow import series, string_bytes
from ragframe.retrieve import _small

U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


def _grown(array: npt.NDArray[np.generic], size: int, fill: int = 0) -> npt.NDArray[np.generic]:
    out = np.full(size, fill, dtype=array.dtype)
    out[: array.size] = array
    return out


class Vocabulary:
    """Terms and their ids (0, 1, ... in order of first appearance): a Series of the
    terms while calls are small (:mod:`._small`), else the compiled hash table."""

    def __init__(self) -> None:
        self._terms: pl.Series | None = pl.Series("term", [], pl.String)
        """The terms in id order while the Series is the vocabulary's form, else None."""
        self._table: _Table | None = None
        """The hash table once it is the vocabulary's form, else None."""

    def __len__(self) -> int:
        return len(self._terms) if self._terms is not None else len(self._as_table())

    def ids(self, data: U8, starts: I64, lengths: I64, *, lower: bool, insert: bool) -> I32:
        """The id of each term ``data[starts[i]:starts[i] + lengths[i]]`` (ASCII
        capitals lower-cased when ``lower``): new terms get new ids when ``insert``,
        else -1. Once the table is the form (a large call), it stays."""
        if self._terms is not None and _small.is_small(starts.size + len(self._terms)):
            ids, self._terms = _small.term_ids(
                self._terms, data, starts, lengths, lower=lower, insert=insert
            )
            return ids
        return self._as_table().ids(data, starts, lengths, lower=lower, insert=insert)

    def terms(self, name: str = "term") -> pl.Series:
        """Every term, in id order."""
        return self._terms.alias(name) if self._terms is not None else self._as_table().terms(name)

    def _as_table(self) -> _Table:
        """The table, made from the Series the first time a call is large."""
        if self._table is None:
            assert self._terms is not None
            self._table, self._terms = _Table.of(self._terms), None
        return self._table

    @classmethod
    def of(cls, terms: pl.Series) -> Vocabulary:
        """The vocabulary whose ids are the positions of ``terms`` (distinct strings)."""
        vocab = cls()
        if _small.is_small(terms.len()):
            if terms.is_duplicated().any():
                raise ValueError("the terms of an index are not distinct")
            vocab._terms = terms.cast(pl.String).alias("term")
        else:
            vocab._table, vocab._terms = _Table.of(terms), None
        return vocab


class _Table:
    """The compiled form: an open-addressing hash table of the terms' bytes
    (:mod:`._kernels._vocab`)."""

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
    def of(cls, terms: pl.Series) -> _Table:
        """The table whose ids are the positions of ``terms`` (distinct strings)."""
        vocab = cls()
        data, offsets = string_bytes(terms)
        ids = vocab.ids(data, offsets[:-1], np.diff(offsets), lower=False, insert=True)
        if ids.size and not np.array_equal(ids, np.arange(ids.size, dtype=np.int32)):
            raise ValueError("the terms of an index are not distinct")
        return vocab
