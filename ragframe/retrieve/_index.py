"""The BM25 index of a chunk table: its vocabulary, each term's postings (the chunks that
hold it, in row order, with the term's frequency there) and each chunk's length in
tokens, built for the whole table at once, and saved to or loaded from Parquet.

Building: the chunk text is analyzed in blocks of whole chunks of about
:data:`BLOCK_BYTES` (the tokenizer's whole-block temporaries stay small); each block's
tokens become term ids (:mod:`._analysis`), then (chunk, term, frequency) pairs
(:func:`._kernels._postings.chunk_terms`); once every block is done, a counting sort by
term writes the postings (:func:`._kernels._postings.scatter`). Little text (one
block, at most :func:`._small.limit` bytes) is analyzed at once and its postings are
sorted by numpy instead (:func:`._small.postings`: no kernel to compile). Nothing runs
per chunk or per token in Python.

Lucene's statistics follow from it: ``docCount`` is the number of chunks with at least
one token (an empty chunk has no postings and no part in any statistic, as an empty
field in Lucene), ``sumTotalTermFreq`` the number of tokens, a term's ``docFreq`` the
length of its postings.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ragframe.errors import DataError, RagframeError
from ragframe.io import _atomic
from ragframe.retrieve import _small
from ragframe.retrieve._analysis import analyze
from ragframe.retrieve._norms import length_to_byte
from ragframe.retrieve._vocab import Vocabulary

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

BLOCK_BYTES = 1 << 24
"""Text analyzed at a time (whole chunks): 16 MiB."""
FORMAT = "ragframe-bm25-index"
VERSION = 1
ANALYZER = "lucene-8-standard-no-stop-words"
"""What the saved index says about itself (``terms.parquet``'s metadata)."""
FILES = ("terms.parquet", "postings.parquet", "chunks.parquet")


@dataclass(frozen=True, slots=True, eq=False)
class BM25Index:
    """A chunk table's BM25 index (Lucene 8's statistics; SPEC 6).

    Build it with :func:`build_index` (or let :func:`ragframe.retrieve` build it),
    keep it with :meth:`save`, read it back with :meth:`load`, and pass it to
    :func:`ragframe.retrieve` in place of the chunks.

    Attributes:
        chunks: the chunks' key and offset columns, one row per chunk, in the chunk
            table's order (row ``i`` is chunk ``i`` of the postings).
        vocabulary: the terms and their ids.
        offsets: term ``t``'s postings are ``docs[offsets[t]:offsets[t + 1]]``.
        docs: the chunk row of each posting (ascending within a term).
        freqs: the term's frequency in that chunk.
        lengths: each chunk's number of tokens (its norm is Lucene's one byte of it).
    """

    chunks: pl.DataFrame
    vocabulary: Vocabulary
    offsets: I64
    docs: I32
    freqs: I32
    lengths: I32

    @property
    def norms(self) -> U8:
        """Each chunk's length norm byte (``SmallFloat.intToByte4``)."""
        return length_to_byte(self.lengths)

    @property
    def doc_count(self) -> int:
        """Chunks with at least one token (Lucene's ``docCount``)."""
        return int(np.count_nonzero(self.lengths))

    @property
    def total_tokens(self) -> int:
        """All tokens (Lucene's ``sumTotalTermFreq``)."""
        return int(self.lengths.sum(dtype=np.int64))

    def doc_freqs(self) -> I64:
        """Each term's document frequency (in term id order)."""
        return np.diff(self.offsets)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to the folder ``path``, atomically: ``terms.parquet`` (the
        vocabulary and document frequencies, and what the index is, in its metadata),
        ``postings.parquet`` (chunk row and frequency, term by term) and
        ``chunks.parquet`` (the chunks' keys and lengths).

        Raises:
            RagframeError: ``path`` exists and is not an empty folder or an index, or
                cannot be written.
        """
        save_index(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BM25Index:
        """Read an index :meth:`save` wrote.

        Raises:
            DataError: ``path`` is not a ragframe BM25 index (of this version), or its
                files do not agree.
        """
        return load_index(path)


def _blocks(texts: pl.Series) -> list[tuple[int, int]]:
    """Row ranges of whole chunks of about :data:`BLOCK_BYTES` text each."""
    if texts.len() == 0:
        return []
    sizes = np.cumsum(texts.str.len_bytes().fill_null(0).to_numpy().astype(np.int64))
    marks = np.searchsorted(sizes, np.arange(BLOCK_BYTES, sizes[-1], BLOCK_BYTES), side="right")
    rows = np.unique(np.concatenate([[0], marks, [texts.len()]])).tolist()
    return list(pairwise(rows))


def build_index(
    chunks: pl.DataFrame, text: pl.Series, *, progress: bool | None = False
) -> BM25Index:
    """The index of ``text`` (one chunk per row; null is empty), with ``chunks`` (the
    key columns, as many rows) kept for the output; ``progress``: a bar over the chunks
    (None: where someone watches, as the dataset runs do)."""
    from ragframe._progress import Progress

    blocks = _blocks(text)
    with Progress("bm25 index", text.len(), len(blocks), "chunk", progress) as bar:
        if len(blocks) <= 1 and _small.is_small(int(text.str.len_bytes().sum() or 0)):
            return _small_index(chunks, text, bar)
        pairs, lengths, vocab = _pairs(text, blocks, bar)
    return _postings_of(chunks, vocab, pairs, lengths)


def _small_index(chunks: pl.DataFrame, text: pl.Series, bar: Any) -> BM25Index:
    """:func:`build_index` of little text, without the kernels (:mod:`._small`)."""
    vocab = Vocabulary()
    tokens = analyze(text, vocab, insert=True)
    offsets, docs, freqs = _small.postings(tokens.ids, tokens.starts, len(vocab))
    bar.advance(text.len(), terms=len(vocab))
    lengths = np.diff(tokens.starts).astype(np.int32)
    return BM25Index(chunks, vocab, offsets, docs, freqs, lengths)


def _pairs(
    text: pl.Series, blocks: list[tuple[int, int]], bar: Any
) -> tuple[list[tuple[int, I32, I32, I64]], I32, Vocabulary]:
    """Each block's (chunk, term, frequency) pairs, each chunk's length, the vocabulary."""
    from ragframe.retrieve._kernels import _postings

    vocab = Vocabulary()
    stamp = np.full(0, -1, dtype=np.int64)
    position = np.zeros(0, dtype=np.int64)
    lengths = np.zeros(text.len(), dtype=np.int32)
    pairs: list[tuple[int, I32, I32, I64]] = []
    for lo, hi in blocks:
        tokens = analyze(text.slice(lo, hi - lo), vocab, insert=True)
        lengths[lo:hi] = np.diff(tokens.starts)
        if len(vocab) > stamp.size:
            grow = max(len(vocab), 2 * stamp.size) - stamp.size
            stamp = np.concatenate([stamp, np.full(grow, -1, dtype=np.int64)])
            position = np.concatenate([position, np.zeros(grow, dtype=np.int64)])
        terms = np.empty(tokens.ids.size, dtype=np.int32)
        freqs = np.empty(tokens.ids.size, dtype=np.int32)
        counts = np.empty(hi - lo, dtype=np.int64)
        n = _postings.chunk_terms(
            tokens.ids, tokens.starts, lo, stamp, position, terms, freqs, counts
        )
        pairs.append((lo, terms[:n].copy(), freqs[:n].copy(), counts))
        bar.advance(hi - lo, terms=len(vocab))
    return pairs, lengths, vocab


def _postings_of(
    chunks: pl.DataFrame, vocab: Vocabulary, pairs: list[tuple[int, I32, I32, I64]], lengths: I32
) -> BM25Index:
    """The counting sort of every block's pairs by term: the postings."""
    from ragframe.retrieve._kernels import _postings

    df = np.zeros(len(vocab), dtype=np.int64)
    for _, terms, _, _ in pairs:
        df += np.bincount(terms, minlength=len(vocab))
    offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=offsets[1:])
    docs = np.empty(int(offsets[-1]), dtype=np.int32)
    tfs = np.empty(int(offsets[-1]), dtype=np.int32)
    cursor = offsets[:-1].copy()
    while pairs:
        lo, terms, freqs, counts = pairs.pop(0)
        _postings.scatter(terms, freqs, counts, lo, cursor, docs, tfs)
    return BM25Index(chunks, vocab, offsets, docs, tfs, lengths)


def _meta(index: BM25Index) -> dict[bytes, bytes]:
    info = {
        "format": FORMAT,
        "version": VERSION,
        "analyzer": ANALYZER,
        "chunks": index.chunks.height,
        "terms": len(index.vocabulary),
        "postings": int(index.docs.size),
    }
    return {b"ragframe": json.dumps(info).encode()}


def is_index(folder: Path) -> bool:
    """Whether ``folder`` holds an index :meth:`BM25Index.save` wrote."""
    try:
        meta = pq.read_schema(folder / FILES[0]).metadata or {}
    except (OSError, pa.ArrowException):
        return False
    return FORMAT.encode() in meta.get(b"ragframe", b"")


def save_index(index: BM25Index, path: str | os.PathLike[str]) -> None:
    """:meth:`BM25Index.save`."""
    shown = os.fspath(path)
    target = Path(os.path.realpath(path))
    if target.exists() and not target.is_dir():
        raise RagframeError(f"cannot write the index to {shown}: it is a file; expected a folder")
    if target.is_dir() and any(target.iterdir()) and not is_index(target):
        raise RagframeError(
            f"cannot write the index to {shown}: the folder holds other files; expected "
            "a new or empty folder, or a ragframe index to replace"
        )
    tmp = _atomic.new_directory(target)
    try:
        terms = pa.table(
            {"term": index.vocabulary.terms().to_arrow(), "doc_freq": index.doc_freqs()}
        )
        pq.write_table(terms.replace_schema_metadata(_meta(index)), tmp / FILES[0])
        postings = pa.table({"chunk": index.docs, "freq": index.freqs})
        pq.write_table(postings, tmp / FILES[1], compression="zstd")
        chunks = index.chunks.with_columns(pl.Series("__rf_length", index.lengths))
        chunks.write_parquet(tmp / FILES[2], compression="zstd")
        _atomic.commit_directory(tmp, target)
    except OSError as exc:
        _atomic.remove(tmp)
        raise RagframeError(f"cannot write the index to {shown}: {exc.strerror or exc}") from exc
    except BaseException:
        _atomic.remove(tmp)
        raise


def load_index(path: str | os.PathLike[str]) -> BM25Index:
    """:meth:`BM25Index.load`."""
    shown = os.fspath(path)
    folder = Path(path)
    if not is_index(folder):
        raise DataError(
            f"{shown} is not a ragframe BM25 index (expected a folder written by "
            f"BM25Index.save or 'ragframe retrieve --index', holding {', '.join(FILES)})"
        )
    info = json.loads((pq.read_schema(folder / FILES[0]).metadata or {})[b"ragframe"])
    if info.get("version") != VERSION:
        raise DataError(f"{shown}: index version {info.get('version')}; expected {VERSION}")
    terms = pl.read_parquet(folder / FILES[0])
    postings = pq.read_table(folder / FILES[1])
    chunks = pl.read_parquet(folder / FILES[2])
    offsets = np.zeros(terms.height + 1, dtype=np.int64)
    np.cumsum(terms["doc_freq"].to_numpy(), out=offsets[1:])
    docs = postings["chunk"].to_numpy().astype(np.int32, copy=False)
    freqs = postings["freq"].to_numpy().astype(np.int32, copy=False)
    lengths = chunks["__rf_length"].to_numpy().astype(np.int32, copy=False)
    if offsets[-1] != docs.size or chunks.height != info.get("chunks"):
        raise DataError(f"{shown}: the index files do not agree (a partial copy?)")
    if docs.size and (docs.min() < 0 or docs.max() >= chunks.height):
        raise DataError(f"{shown}: postings name chunks the index does not have")
    vocab = Vocabulary.of(terms["term"])
    return BM25Index(chunks.drop("__rf_length"), vocab, offsets, docs, freqs, lengths)
