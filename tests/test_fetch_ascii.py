"""The compiled pass over ASCII-only documents (:mod:`ragframe.fetch._ascii`) finds the
tokens the numpy tokenizer finds and keeps the candidates its filter keeps, compiled
and as plain Python, in one part or several."""

from __future__ import annotations

import os
import string
from typing import Any
from unittest import mock

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe._arrow import content_buffer
from ragframe._kernels import _compile
from ragframe.fetch import _classes, _terms
from ragframe.fetch import _wordbreak as wb
from ragframe.fetch._classes import HIGH, UNDERSCORE, WORDISH, byte_table, pair_table
from ragframe.fetch._tokenize import MAX_TOKEN, token_bytes

ASCII_EDGES = [
    "prandtl's O'Neil's ab'cd' 'quoted' rock'n'roll a''b a'1 e.g. m.i.t. U.S.A foo.bar",
    'a.b.c. 2.71 1,000 1,000.5 1.000,5 7,225,226 1.2.3 .5 5. 3.5x 3,5x 1.5e3 a1.5 a"b 1;2',
    "1e-5 a.1 1.a x.2y 2y.x 1.5a.b r.a.e.101 foo..bar a,b 1,a 10-3 a-b a/b x_y a_1 _a a_ __",
    "x2y H2O 3d abc123def 12abc $100 50% M=2.5 3:1 a:b (a) [12] http://x.y/z user@host.com",
    "_ __ ___ a__ __a _1_ 1_ _._ a_.b a._b \t\n\r\x0b\x0c end.",
    "x" * 600 + " " + "y" * 255 + " " + "z" * 256 + "_" * 300 + " " + "_" * 300,
    "",
    "wing",
    "WINGSPANNED wingspan Wingspans WINGS_1 wing",
    "q" * 64,
    "wing " * 25 + "win",
    "e.g" * 42 + "ab",
]
"""The ASCII cases of the tokenizer's edge texts, long tokens (cut every 255), and texts
that end a 64-byte block (the kernel's unit) inside a token."""

_ALPHABET = "abAB01_.,:;'\" \n-x/#"


def _frame(texts: list[str], terms: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "doc_id": range(len(texts)),
            "content": texts,
            "__rf_doc_terms": [terms] * len(texts),
        },
        schema_overrides={"__rf_doc_terms": pl.List(pl.String)},
    )


def _both(texts: list[str], terms: list[str], every: bool = False) -> tuple[list[Any], list[Any]]:
    """(kernel, numpy) candidates of ``texts``: ``doc, token, start, end`` rows."""
    docs = _frame(texts, terms)
    table, bits = _terms._term_table(docs["__rf_doc_terms"])
    if every:  # every slot marked: the candidates are all the tokens
        table[:] = True
    rows = np.arange(len(texts))
    got = _terms._ascii_candidates(docs["content"], rows, table, bits)
    want = _terms._block_candidates(docs["content"], rows, table, bits)

    def rows_of(block: _terms._Block) -> list[Any]:
        items = zip(block.doc, block.tokens, block.start, block.end, strict=True)
        return [(int(d), t, int(s), int(e)) for d, t, s, e in items]

    assert got.multi.size == 0
    return rows_of(got), rows_of(want)


def test_ascii_word_bytes_all_join_pairwise() -> None:
    """What the kernel's inner loop takes for granted: every two ASCII word bytes (letters,
    digits, ``_``) join, and ``_`` is the one ASCII ``ExtendNumLet``."""
    classes = byte_table()[:HIGH]
    word = np.unique(classes[WORDISH[classes]])
    assert pair_table()[(word[:, None] * wb.COUNT + word[None, :]).ravel()].all()
    assert np.flatnonzero(classes == wb.EXTENDNUMLET).tolist() == [UNDERSCORE]


def test_ascii_word_and_middle_bytes_are_the_kernels_ranges() -> None:
    """What the kernel computes by arithmetic on 8 bytes at once: the ASCII word bytes are
    ``[0-9A-Za-z_]``, and every ASCII middle character is in its middle range."""
    classes = byte_table()[:HIGH]
    word = "".join(chr(b) for b in range(HIGH) if WORDISH[classes[b]])
    assert word == string.digits + string.ascii_uppercase + "_" + string.ascii_lowercase
    middle = np.flatnonzero(_classes.MIDDLE[classes])
    first, span = _classes.FIRST_MIDDLE, _classes.MIDDLE_SPAN
    assert middle.min() >= first and middle.max() < first + span


def test_ascii_edges_give_the_numpy_tokenizers_tokens() -> None:
    got, want = _both(ASCII_EDGES, [], every=True)
    assert got == want
    starts, _ = token_bytes(content_buffer(pl.Series(ASCII_EDGES)))
    assert len(got) == starts.size  # every token, none filtered
    assert max(e - s for _, _, s, e in got) == MAX_TOKEN
    assert "y" * MAX_TOKEN in [t for _, t, _, _ in got] and "__" not in [t for _, t, _, _ in got]


@pytest.mark.parametrize("terms", [["wing"], ["wingspan", "wings_1", "e.g"], ["1,000", "a"], []])
def test_ascii_candidates_equal_the_numpy_filters(terms: list[str]) -> None:
    got, want = _both(ASCII_EDGES * 3, terms)
    assert got == want


@given(
    st.lists(st.text(alphabet=_ALPHABET, max_size=200), min_size=1, max_size=6),
    st.lists(st.text(alphabet="abAB01_.'", min_size=1, max_size=10), max_size=4),
)
def test_random_ascii_text_equals_the_numpy_path(texts: list[str], terms: list[str]) -> None:
    """Texts of up to a few 64-byte blocks (the kernel's unit), tokens across blocks;
    the kernel compiled (and, on these few rows, as plain Python)."""
    for rows in ("0", str(10**9)):
        with mock.patch.dict(os.environ, {_compile.PYTHON_ROWS_ENV: rows}):
            got, want = _both(texts, [t.lower() for t in terms])
            assert got == want
            got, want = _both(texts, [], every=True)
            assert got == want


def test_plain_python_form_equals_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _both(ASCII_EDGES, ["wing", "e.g", "a"])
    monkeypatch.setenv(_compile.PYTHON_ROWS_ENV, str(10**9))
    monkeypatch.setattr(_compile, "_PYTHON_DONE", [0])
    assert _both(ASCII_EDGES, ["wing", "e.g", "a"]) == compiled
    assert compiled[0] == compiled[1]


def test_documents_split_over_threads_give_the_same_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = ASCII_EDGES * 5 + ["Héllo wing"]  # ASCII and not: both paths in one frame
    docs = _frame(texts, ["wing", "e.g", "x_y"])
    one = _terms.candidate_tokens(docs).sort("doc_id", "start")  # numpy path: small input
    monkeypatch.setattr(_terms, "KERNEL_BYTES", 0)  # the compiled pass, small as they are
    monkeypatch.setattr(_terms, "_cpus", lambda: 3)
    several = _terms.candidate_tokens(docs).sort("doc_id", "start")
    assert several.equals(one)
    assert set(one["doc_id"]) >= {0, len(texts) - 1}


@given(
    st.lists(st.text(alphabet="ab .!\n", max_size=80), min_size=1, max_size=5),
    st.data(),
)
def test_ascii_documents_read_in_place_give_the_same_edges(texts: list[str], data: Any) -> None:
    """The boundary scan over ASCII documents read in place (short ones inline in their
    views, long ones in the data buffers) equals the scan over their bytes end to end."""
    from ragframe.fetch import _boundary

    spans = [sorted(data.draw(st.lists(st.integers(0, len(t)), max_size=3)) * 2) for t in texts]
    docs = pl.DataFrame(
        {
            "content": texts,
            "__rf_order": [[100 * i + k for k in range(len(s) // 2)] for i, s in enumerate(spans)],
            "start": [s[0::2] for s in spans],
            "end": [[e + 5 for e in s[1::2]] for s in spans],
        },
        schema_overrides={"__rf_order": pl.List(pl.UInt32)},
    )
    stop = np.array([ord(ch) for ch in " .!\u3002"], dtype=np.int64)  # one not a byte
    for scan in (0, 1, 4, 30):
        got = _boundary._ascii_edges(docs, stop, scan).sort("__rf_order")
        assert got.equals(_boundary._edges(docs, stop, scan).sort("__rf_order"))
