"""The postings kernels: each chunk's distinct terms and their frequencies, then the
postings of every term (its chunks in row order, with the frequency), by a counting
sort, for the whole chunk table at once.

Why kernels: per chunk, "its distinct terms with counts" is a group-by on (chunk, term)
over every token, and "postings by term, chunks ascending" a sort of every (chunk,
term) pair: in Polars or numpy, a hash or a sort of tens of millions of keys. Here a
token's term is looked up in an array indexed by term (when did a chunk last hold it,
and where is its pair), and the postings are a counting sort (the document
frequencies are the counts), one pass that writes each pair once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ragframe.retrieve._kernels._jit import decorators

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

kernel, helper = decorators(__file__)


@kernel
def chunk_terms(
    ids: I32,
    token_starts: I64,
    first_chunk: int,
    stamp: I64,
    position: I64,
    terms: I32,
    freqs: I32,
    counts: I64,
) -> int:
    """Each chunk's distinct terms (in order of first appearance) and how often each
    occurs.

    Chunk ``first_chunk + c``'s tokens are ``ids[token_starts[c]:token_starts[c + 1]]``
    (term ids, none negative). Writes the (term, frequency) pairs of every chunk in
    chunk order to ``terms`` and ``freqs`` (room for one pair per token) and each
    chunk's pair count to ``counts``; returns the number of pairs. ``stamp[t]`` is the
    last chunk that held term ``t`` (-1: none yet; kept between blocks, so chunks are
    numbered globally) and ``position[t]`` its pair there: no sort, one lookup per
    token.
    """
    p = 0
    for c in range(counts.shape[0]):
        chunk = first_chunk + c
        first = p
        for i in range(token_starts[c], token_starts[c + 1]):
            t = ids[i]
            if stamp[t] != chunk:
                stamp[t] = chunk
                position[t] = p
                terms[p] = t
                freqs[p] = 1
                p += 1
            else:
                freqs[position[t]] += 1
        counts[c] = p - first
    return p


@kernel
def scatter(
    terms: I32, freqs: I32, counts: I64, first_chunk: int, cursor: I64, docs: I32, tfs: I32
) -> None:
    """Write one block's pairs into the postings: chunk ``first_chunk + c`` has the next
    ``counts[c]`` pairs of ``terms``/``freqs``; term ``t``'s next posting goes to
    ``cursor[t]`` (advanced). Blocks are written in chunk order, so each term's
    postings are ascending by chunk."""
    p = 0
    for c in range(counts.shape[0]):
        chunk = first_chunk + c
        for _ in range(counts[c]):
            t = terms[p]
            at = cursor[t]
            docs[at] = chunk
            tfs[at] = freqs[p]
            cursor[t] = at + 1
            p += 1
