"""Tokenize every document at once: a numpy kernel over the content column's UTF-8 buffer.

Why a kernel: the expression route (``str.extract_all`` of runs, explode, running sums
of ``len_chars``) builds every run as a separate string before knowing whether it is a
token, and was the dominant cost of highlighting. Here the content column's Arrow
buffer is decoded to code points with a few whole-array numpy operations, each code
point is classified through a table, and token edges come from comparing neighbours:
no Python runs per row, document or token. Offsets are characters (code points).

The classification table is built once from Python's own ``re`` (``\\w``, plus the
ideograph ranges of :mod:`ragframe.fetch._analysis`), so the engine and the reference
implementation tokenize alike by construction.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import content_buffer, strings
from ragframe.fetch._analysis import IDEOGRAPHS_PY

NON_WORD, WORD, IDEOGRAPH = 0, 1, 2

Ints = npt.NDArray[np.int64]


@cache
def classes() -> npt.NDArray[np.uint8]:
    """Class of every code point: 0 non-word, 1 word (``\\w``), 2 ideograph."""
    points = np.arange(0x110000, dtype=np.uint32)
    points[0xD800:0xE000] = 0x20  # surrogates cannot be encoded; they are not words
    text = points.astype("<u4").tobytes().decode("utf-32-le")

    def marked(pattern: str) -> npt.NDArray[np.bool_]:
        subbed = re.sub(pattern, "\x01", text).encode("utf-32-le")
        flags: npt.NDArray[np.bool_] = np.equal(np.frombuffer(subbed, dtype="<u4"), 1)
        flags[1] = False  # U+0001 itself is neither
        return flags

    table = np.zeros(0x110000, dtype=np.uint8)
    table[marked(r"\w")] = WORD
    table[marked(f"[{IDEOGRAPHS_PY}]")] = IDEOGRAPH
    return table


def char_width(lead: npt.NDArray[np.uint8]) -> Ints:
    """UTF-8 length of the characters whose lead bytes are ``lead``."""
    return np.where(lead >= 0xF0, 4, np.where(lead >= 0xE0, 3, 2)).astype(np.int64)


def code_points(data: npt.NDArray[np.uint8], lead: Ints) -> Ints:
    """Code points of the multi-byte characters whose lead bytes are at ``lead``."""
    first = data[lead].astype(np.int64)
    b1, b2, b3 = (data.take(lead + k, mode="clip").astype(np.int64) & 0x3F for k in (1, 2, 3))
    two = ((first & 0x1F) << 6) | b1
    three = ((first & 0x0F) << 12) | (b1 << 6) | b2
    four = ((first & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3
    points = np.where(first >= 0xF0, four, np.where(first >= 0xE0, three, two))
    return np.minimum(points, 0x10FFFF)


def _byte_classes(
    data: npt.NDArray[np.uint8], cont: npt.NDArray[np.bool_], lead: Ints
) -> npt.NDArray[np.uint8]:
    """The class of the character each byte belongs to."""
    table = classes()
    kind = table[data]  # right for ASCII bytes; fixed below for multi-byte characters
    if lead.size:
        kind[lead] = table[code_points(data, lead)]
        for _ in range(3):  # continuation bytes take their lead's class (<= 3 per char)
            follow = np.flatnonzero(cont[1:]) + 1
            kind[follow] = kind[follow - 1]
    return kind


def _edges(
    kind: npt.NDArray[np.uint8], cont: npt.NDArray[np.bool_], doc_bytes: Ints, words_only: bool
) -> tuple[Ints, Ints]:
    """Byte start and end (exclusive) of every run, or of every token if ``words_only``."""
    cut = np.ones(kind.size + 1, dtype=bool)  # cut[i]: a run starts or ends before byte i
    np.not_equal(kind[1:], kind[:-1], out=cut[1:-1])
    ideo = kind == IDEOGRAPH
    cut[1:-1] |= ideo[1:]
    cut[1:-1] &= ~cont[1:]  # never inside a character (its bytes share one class)
    cut[doc_bytes] = True
    if not words_only:
        bounds = np.flatnonzero(cut)
        return bounds[:-1], bounds[1:]
    word = kind != NON_WORD
    starts = np.flatnonzero(cut[:-1] & word)
    ends = np.flatnonzero(cut[1:] & word) + 1
    return starts, ends


def chars(positions: Ints, cont_at: Ints) -> Ints:
    """Character index of byte ``positions`` (bytes minus continuation bytes before)."""
    if not cont_at.size:
        return positions
    return positions - np.searchsorted(cont_at, positions)


def run_schema(id_type: pl.DataType) -> dict[str, pl.DataType]:
    """The columns :func:`tokenize` returns."""
    return {
        c.DOC_ID: id_type,
        c.T_RUN: pl.String(),
        c.START: pl.Int64(),
        c.END: pl.Int64(),
        c.T_IS_WORD: pl.Boolean(),
    }


def tokenize(docs: pl.DataFrame, words_only: bool) -> pl.DataFrame:
    """``doc_id, __rf_run, start, end, __rf_is_word``: the runs of every document.

    ``docs`` holds ``doc_id`` and ``content`` (no nulls). Runs are tokens (a
    word-character run, or one ideograph) and, unless ``words_only``, the non-word runs
    between them; their text is as in the document (not lower-cased).
    """
    buf = content_buffer(docs[c.CONTENT])
    data, doc_bytes, cont_at = buf.data, buf.doc_bytes, buf.cont_at
    cont = np.zeros(data.size, dtype=bool)
    cont[cont_at] = True
    kind = _byte_classes(data, cont, buf.lead)
    starts, ends = _edges(kind, cont, doc_bytes, words_only)
    doc = np.searchsorted(doc_bytes, starts, side="right") - 1
    first_char = chars(doc_bytes, cont_at)[doc]
    text = strings(data, starts, ends - starts, c.T_RUN)
    return pl.DataFrame(
        {
            c.DOC_ID: docs[c.DOC_ID].gather(doc),
            c.T_RUN: text,
            c.START: chars(starts, cont_at) - first_char,
            c.END: chars(ends, cont_at) - first_char,
            c.T_IS_WORD: kind[starts] != NON_WORD,
        },
        schema=run_schema(docs.schema[c.DOC_ID]),
    )
