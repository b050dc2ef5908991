"""Seeded synthetic chunks and queries for the retrieval benchmarks.

Chunks of about 60 words and queries of 3 to 12 words, both drawn from one Zipf
distribution (exponent 1) over a pseudo-word vocabulary of syllables, so that frequent
words occur in most chunks, as real text's do (no stop words are removed: Lucene's
``StandardAnalyzer`` without stop words keeps them). Texts are built block by block
straight into Arrow string buffers (numpy gathers of the words' bytes), so a million
chunks take seconds and no Python string per chunk. Dense vectors: seeded normal
float32 rows, rounded to a few bits so that ties happen.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

VOCABULARY = 100_000
WORDS_PER_CHUNK = 60
_SYLLABLES = "ka lo mi ne ru ta so vi pe da gu zo re li an ex or tion ment ing al be".split()  # noqa: SIM905


def _vocabulary(rng: np.random.Generator) -> list[bytes]:
    seen: dict[bytes, None] = {}
    while len(seen) < VOCABULARY:
        count = rng.integers(1, 5, size=VOCABULARY)
        picks = rng.integers(0, len(_SYLLABLES), size=int(count.sum()))
        at = 0
        for n in count.tolist():
            seen.setdefault("".join(_SYLLABLES[i] for i in picks[at : at + n]).encode(), None)
            at += n
            if len(seen) == VOCABULARY:
                break
    return list(seen)


def _probabilities() -> npt.NDArray[np.float64]:
    weights = 1.0 / np.arange(1, VOCABULARY + 1)
    return weights / weights.sum()


def _texts(
    rng: np.random.Generator, lengths: npt.NDArray[np.int64], words: list[bytes]
) -> pa.Array:
    """One text per entry of ``lengths`` (its number of words), words joined by spaces."""
    data = np.frombuffer(b"".join(w + b" " for w in words), dtype=np.uint8)
    sizes = np.array([len(w) + 1 for w in words], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    picks = rng.choice(len(words), size=int(lengths.sum()), p=_probabilities())
    size = sizes[picks]
    ends = np.cumsum(size)
    byte = np.repeat(starts[picks] - (ends - size), size) + np.arange(int(ends[-1]))
    text = data[byte]
    last_word = np.cumsum(lengths) - 1
    offsets = np.concatenate([[0], ends[last_word]])
    text_ends = offsets[1:] - 1  # drop each text's trailing space
    keep = np.ones(text.size, dtype=bool)
    keep[text_ends] = False
    offsets = offsets - np.concatenate([[0], np.arange(1, lengths.size + 1)])
    return pa.LargeStringArray.from_buffers(
        lengths.size, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(text[keep])
    )


def chunks(n: int, *, seed: int = 7, block: int = 50_000) -> pl.DataFrame:
    """``doc_id, chunk_index, text``: ``n`` chunks of 40 to 80 words (60 on average),
    ten chunks per document."""
    rng = np.random.default_rng(seed)
    words = _vocabulary(rng)
    parts = []
    for lo in range(0, n, block):
        lengths = rng.integers(40, 81, size=min(block, n - lo)).astype(np.int64)
        parts.append(_texts(rng, lengths, words))
    text = pl.Series("text", pa.chunked_array(parts, type=pa.large_string()))
    return pl.DataFrame(
        {"doc_id": np.arange(n) // 10, "chunk_index": np.arange(n) % 10, "text": text}
    )


def queries(n: int, *, seed: int = 8) -> pl.DataFrame:
    """``query_id, text``: ``n`` queries of 3 to 12 words."""
    rng = np.random.default_rng(seed)
    words = _vocabulary(np.random.default_rng(7))
    lengths = rng.integers(3, 13, size=n).astype(np.int64)
    text = pl.Series("text", _texts(rng, lengths, words))
    return pl.DataFrame({"query_id": np.arange(n), "text": text})


def vectors(n: int, dims: int, *, seed: int) -> npt.NDArray[np.float32]:
    """``n`` seeded float32 vectors of ``dims``, rounded to multiples of 1/8 (ties)."""
    rng = np.random.default_rng(seed)
    out = rng.standard_normal((n, dims), dtype=np.float32)
    return np.round(out * 8) / np.float32(8)
