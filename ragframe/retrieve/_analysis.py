"""Text as Lucene's ``StandardAnalyzer`` without stop words analyzes it (SPEC 6): the
``StandardTokenizer`` tokens of :mod:`ragframe.fetch._tokenize` lower-cased one code
point at a time as Java does (:func:`ragframe.fetch._analysis.java_lower_tokens`), each
turned into its term's id in a :class:`Vocabulary`, for a whole column at once.

ASCII tokens are lower-cased by the vocabulary kernel while it hashes them, where they
lie in the column's buffer; only the tokens holding a multi-byte character become
strings, lower-cased by Polars with Java's rules.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe._arrow import content_buffer, string_bytes, strings
from ragframe.fetch._analysis import java_lower_tokens
from ragframe.fetch._tokenize import token_spans
from ragframe.retrieve._vocab import Vocabulary

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


class Tokens(NamedTuple):
    """The analyzed tokens of a column: row ``r``'s term ids are
    ``ids[starts[r]:starts[r + 1]]``, in text order (-1: a term the vocabulary lacks)."""

    ids: I32
    starts: I64


def analyze(texts: pl.Series, vocab: Vocabulary, *, insert: bool) -> Tokens:
    """The term ids of every token of every row of ``texts`` (nulls are empty), new
    terms added to ``vocab`` when ``insert``."""
    buf = content_buffer(texts)
    begin, end, lengths = token_spans(buf)
    starts = np.searchsorted(begin, buf.doc_bytes).astype(np.int64)
    multi = _multi_byte(buf.lead, begin, end)
    if not multi.size:
        ids = vocab.ids(buf.data, begin, lengths, lower=True, insert=insert)
        return Tokens(ids, starts)
    plain = np.ones(begin.size, dtype=bool)
    plain[multi] = False
    ids = np.empty(begin.size, dtype=np.int32)
    ids[plain] = vocab.ids(buf.data, begin[plain], lengths[plain], lower=True, insert=insert)
    lowered = java_lower_tokens(
        strings(buf.data, begin[multi], lengths[multi]), np.arange(multi.size)
    )
    data, offsets = string_bytes(lowered)
    ids[multi] = vocab.ids(data, offsets[:-1], np.diff(offsets), lower=False, insert=insert)
    return Tokens(ids, starts)


def _multi_byte(lead: I64, begin: I64, end: I64) -> I64:
    """The tokens (indexes, ascending, distinct) that hold a multi-byte character."""
    if not lead.size or not begin.size:
        return np.zeros(0, dtype=np.int64)
    token = np.searchsorted(begin, lead, side="right") - 1
    token = token[(token >= 0) & (lead < end[np.maximum(token, 0)])]
    return np.unique(token)
