"""Tests for ragframe.highlight: config, token rules, Lucene FVH rules, unified mode,
unicode offsets, engines, schema errors, engine == per-pair reference, quality bar."""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragframe import ConfigError, HighlightConfig, SchemaError, highlight
from ragframe._arrow import content_buffer, strings
from ragframe.fetch import _classes
from ragframe.fetch._analysis import java_lower as engine_lower
from ragframe.fetch._classes import FIRST_MIDDLE, MIDDLE, MIDDLE_SPAN, WORDISH, classes
from ragframe.fetch._terms import candidate_tokens
from ragframe.fetch._tokenize import text_tokens, token_bytes, tokenize
from ragframe.reference._analysis import java_lower, query_terms, runs
from ragframe.reference._analysis import tokens as reference_tokens
from ragframe.reference.fetch import (
    boundary_end,
    boundary_start,
    fvh_fragments,
    highlight_pair,
    reference_highlight,
)
from ragframe.schema import T_DOC_TERMS as TERMS
from tests.longtext import documents, queries

UNICODE_SAMPLE = "Héllo wörld 東京大学 ab_c 3.5 İSTANBUL ΟΔΟΣ ½ x\u0301y 😀ok ｶﾀｶﾅ ひらがな 𠀋x"
TRICKY = (
    "prandtl's O'Neil's ab'cd' 'quoted' rock'n'roll l\u2019avion a''b a'1 e.g. m.i.t. U.S.A "
    "foo.bar a.b.c. 2.71 1,000 1,000.5 1.000,5 7,225,226 1.2.3 .5 5. 3.5x 3,5x 1.5e3 a1.5 "
    "1e-5 a.1 1.a x.2y 2y.x 1.5a.b r.a.e.101 foo..bar a,b 1,a 10-3 a-b a/b x_y a_1 _a a_ __ "
    "x2y H2O 3d abc123def 12abc $100 50% M=2.5 3:1 a:b a·b (a) [12] http://x.y/z "
    "user@host.com café cafe\u0301 \u0301x a\u200db a\u00adb naïve ﬁne Straße \u212aelvin "
    "İstanbul ISTANBUL ΟΔΟΣ Σίσυφος ǅ ½ ² x² 日本語abc ひらがな カタカナ123 ｶﾀｶﾅ 한국어 ภาษาไทย "
    "\u05d0\"\u05d1 \u05d0' \uff11\uff12\uff13 \uff21\uff22\uff23 ٣٤٥ 😀 a😀b 👍🏽 🇫🇷🇩🇪🇮 "
    + "x" * 300
    + " "
    + "y" * 255
)
"""StandardTokenizer's edges (the rules observed on Lucene, /work/lucene_findings.md)."""


def _docs(*contents: str | None) -> pl.DataFrame:
    return pl.DataFrame(
        {"doc_id": list(range(1, len(contents) + 1)), "content": list(contents)},
        schema={"doc_id": pl.Int64, "content": pl.String},
    )


def _pairs(rows: list[tuple[str | None, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"query": pl.String, "doc_id": pl.Int64}, orient="row")


def _one(query: str, content: str, **config: Any) -> dict[str, Any]:
    cfg = HighlightConfig(**config)
    out = highlight(_pairs([(query, 1)]), _docs(content), cfg).collect()
    row: dict[str, Any] = out.row(0, named=True)
    return row


def _spans(row: dict[str, Any]) -> list[tuple[int, int, float]] | None:
    if row["passages"] is None:
        return None
    return [(p["start"], p["end"], p["score"]) for p in row["passages"]]


# --- config -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fragment_size": 17}, "fragment_size must be in [18, 4611686018427387904], got 17"),
        (
            {"fragment_size": 1.5},
            "fragment_size must be an integer in [18, 4611686018427387904], got 1.5",
        ),
        (
            {"number_of_fragments": 0},
            "number_of_fragments must be in [1, 4611686018427387904], got 0",
        ),
        (
            {"boundary_max_scan": -1},
            "boundary_max_scan must be in [0, 4611686018427387904], got -1",
        ),
        (
            {"max_matches": True},
            "max_matches must be an integer in [1, 4611686018427387904], got True",
        ),
        ({"highlighter": "plain"}, "highlighter must be 'fvh' or 'unified', got 'plain'"),
        ({"order": "none"}, "order must be 'score' or 'offset', got 'none'"),
        ({"boundary_chars": None}, "boundary_chars must be a string, got NoneType"),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else "",
)
def test_config_rejects_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        HighlightConfig(**kwargs)


def test_config_defaults_are_fess() -> None:
    cfg = HighlightConfig()
    assert (cfg.fragment_size, cfg.number_of_fragments, cfg.order) == (1000, 5, "score")
    assert (cfg.boundary_chars, cfg.boundary_max_scan, cfg.max_matches) == ("\t\n\x13 ", 20, 256)
    assert (cfg.highlighter, cfg.scoring) == ("fvh", "matches")


# --- token rules --------------------------------------------------------------------


def _engine_tokens(text: str) -> list[str]:
    _, found = text_tokens(pl.Series([text]))
    return found.to_list()


def _reference_tokens(text: str) -> list[str]:
    return [text[s:e] for s, e in reference_tokens(text)]


@pytest.mark.parametrize("text", [UNICODE_SAMPLE, TRICKY], ids=["unicode", "tricky"])
def test_engine_and_reference_tokenize_alike(text: str) -> None:
    assert _engine_tokens(text) == _reference_tokens(text)
    covered = runs(text)
    assert "".join(text[s:e] for s, e, _ in covered) == text
    engine = tokenize(pl.DataFrame({"doc_id": [1], "content": [text]}), False)
    assert engine.select("start", "end", "__rf_is_word").rows() == covered


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "prandtl's O'Neil's rock'n'roll l\u2019avion",
            ["prandtl's", "O'Neil's", "rock'n'roll", "l\u2019avion"],
        ),
        ("'quoted' ab'cd' a''b a'1", ["quoted", "ab'cd", "a", "b", "a", "1"]),
        ("e.g. m.i.t. U.S.A foo.bar a.b.c.", ["e.g", "m.i.t", "U.S.A", "foo.bar", "a.b.c"]),
        ("2.71 1,000 1,000.5 7,225,226 1.2.3", ["2.71", "1,000", "1,000.5", "7,225,226", "1.2.3"]),
        (
            "a.1 1.a x.2y 2y.x 1.5a.b r.a.e.101",
            ["a", "1", "1", "a", "x", "2y", "2y.x", "1.5a.b", "r.a.e", "101"],
        ),
        ("a,b 1,a foo..bar .5 5.", ["a", "b", "1", "a", "foo", "bar", "5", "5"]),
        ("x2y H2O 3d 3.5x 1e-5", ["x2y", "H2O", "3d", "3.5x", "1e", "5"]),
        ("x_y a_1 _a a_ __", ["x_y", "a_1", "_a", "a_"]),
        (
            "a-b a/b $100 50% M=2.5 3:1 a:b",
            ["a", "b", "a", "b", "100", "50", "M", "2.5", "3", "1", "a:b"],
        ),
        ("http://x.y/z user@host.com", ["http", "x.y", "z", "user", "host.com"]),
        (
            "x\u0301y cafe\u0301 \u0301x a\u200db a\u00adb",
            ["x\u0301y", "cafe\u0301", "x", "a\u200db", "a\u00adb"],
        ),
        (
            "½ ² x² \uff21\uff22\uff23 \uff11\uff12\uff13",
            ["x", "\uff21\uff22\uff23", "\uff11\uff12\uff13"],
        ),
        (
            "日本語 ひらがな カタカナ123 한국어 ภาษาไทย",
            ["日", "本", "語", "ひ", "ら", "が", "な", "カタカナ", "123", "한국어", "ภาษาไทย"],
        ),
        ("a😀b 👍🏽 🇫🇷", ["a", "😀", "b", "👍🏽", "🇫🇷"]),
    ],
)
def test_tokens_are_lucene_standard_tokenizer_tokens(text: str, expected: list[str]) -> None:
    assert _reference_tokens(text) == expected
    assert _engine_tokens(text) == expected


def test_tokens_longer_than_255_characters_are_split() -> None:
    assert reference_tokens("a" * 300) == [(0, 255), (255, 300)]
    assert [len(t) for t in _engine_tokens("a" * 600 + " b")] == [255, 255, 90, 1]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("İstanbul", "istanbul"),  # Java: U+0130 -> 'i' (Python's lower() gives "i\u0307")
        ("ΟΔΟΣ", "οδοσ"),  # no final-sigma rule
        ("ǅ \u212aelvin Straße", "ǆ kelvin straße"),
        ("I\u0307", "i\u0307"),
    ],
)
def test_lower_casing_is_per_code_point_as_java(text: str, expected: str) -> None:
    assert java_lower(text) == expected
    assert pl.select(engine_lower(pl.lit(text))).item() == expected


def test_query_terms_lowercase_distinct_and_split_ideographs() -> None:
    assert query_terms("Wing wing WING, 東京 café!") == ["wing", "東", "京", "café"]
    assert query_terms("Prandtl's e.g. 3.5 İstanbul") == ["prandtl's", "e.g", "3.5", "istanbul"]
    assert query_terms("?!") == []
    assert query_terms(None) == []


# --- Lucene rules, on the reference building blocks --------------------------------


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        ("hello world and more", 8, 6),  # moves left to just after the space
        ("x" * 40, 30, 30),  # no boundary within 20: stays
        ("x" * 40, 10, 0),  # scan reaches the start of the text: 0
        ("x" * 40, 20, 0),
        ("x" * 40, 0, 0),
    ],
)
def test_boundary_start(text: str, start: int, expected: int) -> None:
    assert boundary_start(text, start, "\t\n\x13 ", 20) == expected


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("hello world", 2, 5),  # moves right onto the space
        ("x" * 40, 3, 3),  # no boundary within 20: stays
        ("hello", 9, 5),  # past the end: the end
        ("ab\x13cd", 0, 2),  # U+0013 is a boundary character
        ("Tails steer wings abcdefghij.", 18, 29),  # the scan reaches the end of the text
        ("x" * 39, 20, 39),  # the end within the 20 characters scanned: the end
        ("x" * 40, 20, 20),  # just out of reach: stays
    ],
)
def test_boundary_end(text: str, end: int, expected: int) -> None:
    assert boundary_end(text, end, "\t\n\x13 ", 20) == expected


def test_fvh_fragments_cover_and_recentre() -> None:
    matches = [("t", 0, 3), ("t", 10, 13), ("t", 100, 103)]
    assert fvh_fragments(matches, 20) == [(0, 20, 2.0), (92, 112, 1.0)]  # Lucene's
    # opt-in "terms": distinct terms, then matches / (cap + 1)
    assert fvh_fragments(matches, 20, "terms") == [(0, 20, 1 + 2 / 257), (92, 112, 1 + 1 / 257)]


def test_fvh_skips_a_match_that_starts_inside_the_previous_fragment() -> None:
    assert fvh_fragments([("t", 0, 3), ("t", 19, 24)], 20, "matches") == [(0, 20, 1.0)]


# --- engine behaviour ---------------------------------------------------------------


def test_fvh_engine_matches_the_hand_worked_fragments() -> None:
    content = "abc" + "." * 7 + "abc" + "." * 87 + "abc" + "." * 50
    row = _one("ABC", content, fragment_size=20, boundary_chars="", scoring="matches")
    assert _spans(row) == [(0, 20, 2.0), (92, 112, 1.0)]
    # the second fragment ends with "." (a sentence terminator): no "..." appended
    assert row["highlight"] == content[0:20] + "..." + content[92:112]


@pytest.mark.parametrize(
    ("query", "content", "size", "expected"),
    [
        ("tails", "Tails steer wings abcdefghij.", 18, [(0, 29)]),
        ("flow", "flow " + "x " * 497 + "end.", 1000, [(0, 1003)]),
        ("istanbul", "İstanbul is big", 1000, [(0, 15)]),
        ("οδοσ", "ΟΔΟΣ is a road", 1000, [(0, 14)]),
        ("prandtl", "Prandtl's number", 1000, None),
        ("prandtl's", "Prandtl's number", 1000, [(0, 16)]),
        ("3", "a 3.5 b", 1000, None),
        ("ΟΔΟΣ", "οδος", 1000, None),
    ],
    ids=[
        "end-18",
        "end-1000",
        "dotted-i",
        "sigma",
        "possessive",
        "possessive-term",
        "number",
        "final-sigma",
    ],
)
def test_issue_cases_match_lucene(
    query: str, content: str, size: int, expected: list[tuple[int, int]] | None
) -> None:
    row = _one(query, content, fragment_size=size)
    spans = _spans(row)
    assert (None if spans is None else [(s, e) for s, e, _ in spans]) == expected
    found = highlight_pair(query, content, HighlightConfig(fragment_size=size))
    assert (None if found is None else [(s, e) for s, e, _ in found[0]]) == expected


def test_no_match_gives_null() -> None:
    assert _one("zebra", "wings and tails")["highlight"] is None
    assert _one("?!", "wings and tails")["passages"] is None


def test_ellipsis_is_not_appended_after_a_sentence_terminator() -> None:
    assert _one("wings", "Wings lift.", fragment_size=18)["highlight"] == "Wings lift."
    assert _one("wings", "Wings lift", fragment_size=18)["highlight"] == "Wings lift..."
    assert _one("翼", "翼は揚力を生む。", fragment_size=18)["highlight"] == "翼は揚力を生む。"
    assert _one("wings", "Wings lift!  \n", fragment_size=18)["highlight"] == "Wings lift!  \n"


def test_order_score_then_offset() -> None:
    content = "lift " + "x" * 60 + " lift lift " + "y" * 60
    by_score = _spans(_one("lift", content, fragment_size=20, scoring="matches"))
    by_offset = _spans(_one("lift", content, fragment_size=20, order="offset", scoring="matches"))
    assert by_score is not None and by_offset is not None
    assert [s[2] for s in by_score] == [2.0, 1.0]
    assert by_offset == sorted(by_score)


def test_number_of_fragments_and_ties_keep_earlier() -> None:
    content = " ".join(["wing " + "z" * 40] * 6)
    spans = _spans(_one("wing", content, fragment_size=20, number_of_fragments=3))
    assert spans is not None and len(spans) == 3
    assert [s[0] for s in spans] == sorted(s[0] for s in spans)


def test_max_matches_caps_matches_in_text_order() -> None:
    content = " ".join(["wing" + " " * 40] * 5)
    spans = _spans(_one("wing", content, fragment_size=20, max_matches=2))
    assert spans is not None and len(spans) == 2 and spans[-1][0] < 60


def test_offsets_are_characters_not_bytes() -> None:
    content = "😀😀 東京の翼 café " + "é" * 30 + " café wing"
    row = _one("café WING", content, fragment_size=18, number_of_fragments=5, order="offset")
    spans = _spans(row)
    assert spans is not None
    for start, end, _ in spans:
        assert "café" in content[start:end] or "wing" in content[start:end]
    assert row["highlight"].split("...")[0] == content[spans[0][0] : spans[0][1]]


def test_unified_mode_gives_whole_sentences() -> None:
    content = "Wings make lift. Tails steer the plane! Engines push. 翼は揚力。次の文"
    row = _one("tails plane 揚力", content, highlighter="unified", order="offset")
    texts = [content[p["start"] : p["end"]] for p in row["passages"]]
    assert texts == ["Tails steer the plane!", "翼は揚力。"]
    assert row["highlight"] == "Tails steer the plane!...翼は揚力。"


def test_unified_mode_splits_long_sentences_at_run_boundaries() -> None:
    content = "word " * 30 + "target " + "word " * 30
    row = _one("target", content, highlighter="unified", fragment_size=50)
    # runs starting in [150, 200) form piece 3: "target" (150) .. "word" (197-201)
    assert [(p["start"], p["end"]) for p in row["passages"]] == [(150, 201)]


def test_pairs_keep_order_duplicates_nulls_and_extra_columns() -> None:
    pairs = pl.DataFrame(
        {
            "query": ["lift", None, "lift", "drag", "lift"],
            "doc_id": [2, 1, 2, 1, 9],
            "note": ["a", "b", "c", "d", "e"],
        }
    )
    out = highlight(pairs, _docs("drag here", "lift there"), HighlightConfig()).collect()
    assert out["note"].to_list() == ["a", "b", "c", "d", "e"]
    assert out["highlight"].to_list() == [
        "lift there...",
        None,
        "lift there...",
        "drag here...",
        None,
    ]


def test_documents_first_row_wins_and_null_content_is_empty() -> None:
    docs = pl.DataFrame({"doc_id": [1, 1, 2], "content": ["lift one", "lift two", None]})
    out = highlight(_pairs([("lift", 1), ("lift", 2)]), docs).collect()
    assert out["highlight"].to_list() == ["lift one...", None]


def test_string_doc_ids_and_mixed_int_widths() -> None:
    docs = pl.DataFrame({"doc_id": ["a"], "content": ["lift"]})
    pairs = pl.DataFrame({"query": ["lift"], "doc_id": ["a"]})
    assert highlight(pairs, docs).collect()["highlight"][0] == "lift..."
    docs32 = _docs("lift").with_columns(pl.col("doc_id").cast(pl.Int32))
    assert highlight(_pairs([("lift", 1)]), docs32).collect()["highlight"][0] == "lift..."


@pytest.mark.parametrize("mode", ["fvh", "unified"])
def test_eager_lazy_streaming_and_arrow_agree(mode: str) -> None:
    docs = documents(6, 3000, 6000, seed=3)
    pairs = queries(docs, 12, 3, seed=3).select("query", "doc_id")
    cfg = HighlightConfig(highlighter=mode, fragment_size=200)  # type: ignore[arg-type]
    lazy = highlight(pairs.lazy(), docs.lazy(), cfg)
    eager = highlight(pairs, docs, cfg).collect()
    assert eager.equals(lazy.collect())
    assert eager.equals(lazy.collect(engine="streaming"))
    assert eager.equals(lazy.collect(engine="in-memory"))
    assert eager.equals(highlight(pairs.to_arrow(), docs.to_arrow(), cfg).collect())
    assert eager["highlight"].is_not_null().sum() >= 3


# --- schema errors ------------------------------------------------------------------


def test_missing_column_is_named() -> None:
    with pytest.raises(
        SchemaError,
        match=re.escape("documents: missing column 'content'; found: ['doc_id', 'text']"),
    ):
        highlight(_pairs([("a", 1)]), pl.DataFrame({"doc_id": [1], "text": ["a"]}))


def test_doc_id_kinds_must_agree() -> None:
    docs = pl.DataFrame({"doc_id": ["1"], "content": ["a"]})
    with pytest.raises(
        SchemaError, match="column 'doc_id' has type Int64 in pairs but String in documents"
    ):
        highlight(_pairs([("a", 1)]), docs)


def test_query_must_be_text() -> None:
    pairs = pl.DataFrame({"query": [1], "doc_id": [1]})
    with pytest.raises(SchemaError, match="pairs: column 'query' has type Int64; expected string"):
        highlight(pairs, _docs("a"))


# --- candidate tokens (the fvh prefilter) -------------------------------------------

EDGE_TEXTS = [
    UNICODE_SAMPLE,
    "wing",  # documents ending in a token shorter than 8 bytes, back to back
    "Wings",
    "",
    "WINGSPANNED wingspan Wingspans WINGS_1 wing",
    "東京x é\u212aelvin KELVIN",
    "a😀b x_y_z 123456789 ab",
]


def _candidate_frame(texts: list[str], terms: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {"doc_id": list(range(len(texts))), "content": texts, TERMS: [terms] * len(texts)},
        schema_overrides={TERMS: pl.List(pl.String)},
    )


def test_token_bytes_are_the_tokenizer_tokens() -> None:
    docs = _candidate_frame(EDGE_TEXTS * 2, [])
    starts, ends = token_bytes(content_buffer(docs["content"]))
    data = content_buffer(docs["content"]).data
    got = [bytes(data[s:e]).decode() for s, e in zip(starts, ends, strict=True)]
    assert got == tokenize(docs.select("doc_id", "content"), True)["__rf_run"].to_list()


def test_ascii_byte_arithmetic_agrees_with_the_class_table() -> None:
    """The kernel tells ASCII word bytes and middle-character candidates by arithmetic;
    both must agree with the ``Word_Break`` classes of :mod:`ragframe.fetch._wordbreak`."""
    from ragframe.fetch import _tokenize as tk
    from ragframe.fetch import _wordbreak as wb

    ascii_ = bytes(range(1, 0x80)).decode()
    cls = classes(content_buffer(pl.Series([ascii_])))
    flags = tk._word_flags(cls, np.empty(len(ascii_) + 1, dtype=np.uint8))[0][1:-1]
    table = wb.table()[1:0x80]
    assert (flags == WORDISH[table]).all()
    middle = np.flatnonzero(MIDDLE[wb.table()[:0x80]])
    assert ((middle >= FIRST_MIDDLE) & (middle < FIRST_MIDDLE + MIDDLE_SPAN)).all()


@given(
    st.text(st.characters(max_codepoint=127), max_size=64).map(str.encode),
    st.lists(st.tuples(st.integers(0, 64), st.integers(0, 16)), max_size=12),
)
@example(b"abcdefghijklmnopqrstuvwxyz0123456789", [(0, 5), (2, 3), (10, 12), (20, 13), (30, 6)])
def test_token_strings_are_the_bytes_they_point_at(data: bytes, pieces: list[Any]) -> None:
    """Candidate and fragment text are views of a buffer (inline when at most 12 bytes,
    read as masked 4-byte words); values near the buffer's end, short and long ones,
    must hold exactly their bytes."""
    pieces = [(min(at, len(data)), size) for at, size in pieces]
    pieces = [(at, min(size, len(data) - at)) for at, size in pieces]
    begin = np.array([at for at, _ in pieces], dtype=np.int64)
    size = np.array([n for _, n in pieces], dtype=np.int64)
    found = strings(np.frombuffer(data, dtype=np.uint8), begin, size)
    assert found.cast(pl.Binary).to_list() == [data[at : at + n] for at, n in pieces]
    arrow = found.to_arrow(compat_level=pl.CompatLevel.newest())
    views = np.frombuffer(arrow.buffers()[1], dtype=np.uint8).reshape(-1, 16)[: len(pieces)]
    for view, n in zip(views, size.tolist(), strict=True):  # inline: zero after the value
        assert n > 12 or not view[4 + n :].any()


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["\u05d0'"], ["\u05d0'"]),
        (["b\u05d0'"], ["b\u05d0'"]),
        (["x", "\u05d0'"], ["x", "\u05d0'"]),
        (["\u05d0'\u0301 x"], ["\u05d0'\u0301", "x"]),
    ],
    ids=["alone", "one-run", "second-doc", "mark-after"],
)
def test_hebrew_letter_keeps_its_quote_in_a_buffer_of_one_run(
    texts: list[str], expected: list[str]
) -> None:
    """WB7a held only when the buffer had two runs or more (tokens from real Lucene)."""
    buf = content_buffer(_docs(*texts)["content"])
    starts, ends = token_bytes(buf)
    got = [bytes(buf.data[s:e]).decode() for s, e in zip(starts, ends, strict=True)]
    assert got == expected


@pytest.mark.parametrize(
    "texts",
    [
        ["b", "\u0301a"],
        ["b", "\u0301'"],
        ["\u05d0", "\u0301\u05d0'"],
        ["x\U0001f1eb", "\U0001f1eb\U0001f1f7"],
        ["\U0001f1eb\U0001f1eb\U0001f1eb", "\U0001f1eb\U0001f1eb", "a"],
        ["e.", "\u0301b", "1,", "\u00ad2"],
    ],
    ids=["mark", "mark-quote", "hebrew", "regional", "regional-pairs", "middle"],
)
def test_each_document_is_tokenized_as_if_alone(texts: list[str]) -> None:
    """A document starting with an Extend character (or a Regional Indicator) got the
    character before it from the previous document: Lucene tokenizes each text alone."""
    whole = token_bytes(content_buffer(_docs(*texts)["content"]))
    starts, ends, offset = [], [], 0
    for text in texts:
        s, e = token_bytes(content_buffer(_docs(text)["content"]))
        starts += (s + offset).tolist()
        ends += (e + offset).tolist()
        offset += len(text.encode())
    assert (whole[0].tolist(), whole[1].tolist()) == (starts, ends)


@pytest.mark.parametrize("dense", [0, 10**9], ids=["sparse", "dense"])
def test_class_lookups_sparse_and_dense_give_the_same_tokens(
    dense: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _docs(*(EDGE_TEXTS * 2), TRICKY, UNICODE_SAMPLE)
    expected = token_bytes(content_buffer(docs["content"]))
    monkeypatch.setattr(_classes, "DENSE", dense)
    got = token_bytes(content_buffer(docs["content"]))
    assert all((a == b).all() for a, b in zip(got, expected, strict=True))


@pytest.mark.parametrize(
    "terms",
    [["wing"], ["wingspan", "wings_1"], ["kelvin", "東"], ["123456789", "ab", "b"], []],
    ids=["short", "long", "unicode", "digits", "none"],
)
def test_candidates_hold_every_match(terms: list[str]) -> None:
    docs = _candidate_frame(EDGE_TEXTS * 2, terms)
    runs = tokenize(docs.select("doc_id", "content"), True)
    wanted = runs.filter(pl.col("__rf_run").str.to_lowercase().is_in(terms))
    found = candidate_tokens(docs).join(wanted, on=["doc_id", "start", "end"], how="semi")
    assert found.height == wanted.height
    assert candidate_tokens(_candidate_frame(["。", "½"], terms)).height == 0  # no token at all
    # ASCII tokens that cannot match are dropped
    assert "wingspanned" not in candidate_tokens(docs)["__rf_token"].to_list()


def test_candidate_tokens_are_lower_cased_as_java_does() -> None:
    """The kernel lower-cases ASCII tokens alone and the non-ASCII ones by Java's rules."""
    texts = [*EDGE_TEXTS, "\u0130STANBUL ΟΔΟΣ Wing \u212aELVIN x\u0130x"]
    docs = _candidate_frame(texts, ["istanbul", "kelvin", "wing", "οδοσ"])
    got = candidate_tokens(docs)
    content = dict(enumerate(texts))
    expected = [
        java_lower(content[d][s:e]) for d, s, e in got.select("doc_id", "start", "end").rows()
    ]
    assert got["__rf_token"].to_list() == expected
    assert {"istanbul", "kelvin", "wing", "οδοσ", "xix"} <= set(expected)


# --- engine == reference ------------------------------------------------------------

WORDS = [
    "wing",
    "Wing",
    "WINGS",
    "lift",
    "东",
    "京",
    "café",
    "ΟΔΟΣ",
    "\u03c3",  # final-sigma rules when lower-casing
    "İ",
    "x_1",
    "3",
    "½",
    "😀",
    "Wingspan",  # long words sharing a prefix: the candidate filter keys 8 bytes
    "WINGSPANS",
    "wingspanned",
    "\u212aelvin",  # Kelvin sign: lower-cases to the ASCII "kelvin"
    "kelvin",
    "prandtl's",  # StandardTokenizer's edges: apostrophes, dots, commas, underscores
    "O'NEIL'S",
    "'",
    "e.g.",
    "U.S.A",
    "2.71",
    "1,000",
    "3.5x",
    "a.1",
    "_",
    "x\u0301",  # combining mark
    "\u0301",
    "カタカナ",
    "ｶﾀｶﾅ",
    "한국어",
    "ภาษา",
    '\u05d0"\u05d1',
    "ǅ",
    "ΣΊΣΥΦΟΣ",
    "İSTANBUL",
    "istanbul",
    "x" * 260,  # split at 255
    "🇫🇷🇩",
]
SEPARATORS = [
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\x13",
    ". ",
    "! ",
    "?",
    "。",
    ", ",
    "-",
    "\u3000",
    "\u00a0",
    "",  # words back to back
    "'",
    ".",
    ",",
    ":",
    "_",
    "\u200d",
]


@st.composite
def _texts(draw: st.DrawFn, max_items: int = 120) -> str | None:
    if draw(st.integers(0, 15)) == 0:
        return draw(st.sampled_from([None, "", "   "]))
    items = draw(
        st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=max_items)
    )
    return "".join(w + s for w, s in items)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame, HighlightConfig]:
    n_docs = draw(st.integers(1, 4))
    contents = [draw(_texts()) for _ in range(n_docs)]
    queries_ = draw(st.lists(_texts(max_items=3), min_size=1, max_size=3))
    rows = draw(
        st.lists(
            st.tuples(st.sampled_from(queries_), st.integers(0, n_docs + 1)), min_size=1, max_size=8
        )
    )
    cfg = HighlightConfig(
        fragment_size=draw(st.sampled_from([18, 25, 60, 200])),
        scoring=draw(st.sampled_from(["matches", "terms"])),
        number_of_fragments=draw(st.integers(1, 4)),
        highlighter=draw(st.sampled_from(["fvh", "unified"])),
        order=draw(st.sampled_from(["score", "offset"])),
        boundary_chars=draw(st.sampled_from(["\t\n\x13 ", "", " .", "-", "。\u3000"])),
        boundary_max_scan=draw(st.sampled_from([0, 3, 20])),
        max_matches=draw(st.sampled_from([1, 5, 256])),
    )
    return _pairs(rows), _docs(*contents), cfg


def _comparable(frame: pl.DataFrame) -> list[tuple[Any, ...]]:
    out = []
    for row in frame.iter_rows(named=True):
        spans = row["passages"]
        key = (
            None if spans is None else [(p["start"], p["end"], round(p["score"], 9)) for p in spans]
        )
        out.append((row["query"], row["doc_id"], key, row["highlight"]))
    return out


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_engine_equals_reference(case: tuple[pl.DataFrame, pl.DataFrame, HighlightConfig]) -> None:
    pairs, docs, cfg = case
    engine = highlight(pairs, docs, cfg).collect()
    assert _comparable(engine) == _comparable(reference_highlight(pairs, docs, cfg))


# --- quality bar on real long text --------------------------------------------------


@functools.cache
def _long_text() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The real long text of the quality bars (made once: both bars read it)."""
    docs = documents(40, 5000, 50000, seed=11)
    return docs, queries(docs, 120, 3, seed=11)


@functools.cache
def _lowered_tokens(content: str) -> tuple[tuple[int, int, str], ...]:
    """The reference's tokens of ``content`` (start, end, lowered), once per text."""
    return tuple((s, e, java_lower(content[s:e])) for s, e in reference_tokens(content))


def _best_window_terms(content: str, terms: set[str], width: int) -> int:
    hits = [h for h in _lowered_tokens(content) if h[2] in terms]
    best = 0
    for i, (start, _, _) in enumerate(hits):
        inside = set()
        for _, end, term in hits[i:]:  # in text order: the ends only grow
            if end > start + width:
                break
            inside.add(term)
        best = max(best, len(inside))
    return best


def _quality_failures(
    config: HighlightConfig, docs: pl.DataFrame | None = None, pairs: pl.DataFrame | None = None
) -> tuple[int, int]:
    """(pairs whose highlight holds fewer distinct query terms than the best
    1,000-character window of the document, pairs with a match), by default on real
    long text."""
    if docs is None or pairs is None:
        docs, pairs = _long_text()
    out = highlight(pairs, docs, config).collect()
    contents = dict(zip(docs["doc_id"], docs["content"], strict=True))
    failures = checked = 0
    for row in out.iter_rows(named=True):
        terms = set(query_terms(row["query"]))
        best = _best_window_terms(contents[row["doc_id"]], terms, 1000)
        text = row["highlight"] or ""
        got = {java_lower(text[s:e]) for s, e in reference_tokens(text)} & terms
        failures += len(got) < best
        checked += best > 0
    return failures, checked


_FILLER = "plain words between the matches keep them apart here "  # 53 characters


def _crowded(frequent: int, rare_region: bool) -> str:
    """Six regions of ``frequent`` x "lift", 1,500 characters apart, then (when
    ``rare_region``) one region with "lift drag": one match of each term."""
    gap = _FILLER * 30
    regions = [" ".join(["lift"] * frequent) + " "] * 6 + (["lift drag "] if rare_region else [])
    return gap + gap.join(regions) + gap


def test_quality_bar_holds_for_terms_scoring() -> None:
    # the opt-in scoring="terms" (distinct terms first) misses no term on any pair
    failures, checked = _quality_failures(HighlightConfig(scoring="terms"))
    assert checked >= 60
    assert failures == 0


def test_quality_of_the_unified_mode() -> None:
    # sentence-bounded passages cannot always hold the best window's terms
    failures, checked = _quality_failures(HighlightConfig(highlighter="unified"))
    assert checked >= 60 and failures <= checked // 20


def test_match_count_scoring_lets_a_frequent_term_crowd_out_a_rarer_one() -> None:
    # Lucene's SimpleFieldFragList (the default) scores by match count: six fragments of
    # three "lift" each outrank the one fragment holding "lift drag", so the five kept
    # miss "drag", which the best 1,000-character window holds; scoring="terms" keeps it.
    # Fixed text: documents 1 and 2 are crowded; 3 ties (two "lift" per region, as many
    # matches as "lift drag": the earlier fragments win, still a miss); in 4 the rare
    # region outranks one "lift" per region; 5 has no rare region (nothing to miss).
    contents = [_crowded(3, True), _crowded(9, True), _crowded(2, True), _crowded(1, True)]
    docs = _docs(*contents, _crowded(3, False))
    pairs = pl.DataFrame({"query": ["lift drag"] * 5, "doc_id": [1, 2, 3, 4, 5]})
    assert _quality_failures(HighlightConfig(), docs, pairs) == (3, 5)
    assert _quality_failures(HighlightConfig(scoring="matches"), docs, pairs) == (3, 5)
    assert _quality_failures(HighlightConfig(scoring="terms"), docs, pairs) == (0, 5)


def test_reference_pair_api() -> None:
    found = highlight_pair("lift", "Wings lift.", HighlightConfig(fragment_size=18))
    assert found == ([(0, 11, 1.0)], "Wings lift.")  # Lucene's match count
    terms = HighlightConfig(fragment_size=18, scoring="terms")
    assert highlight_pair("lift", "Wings lift.", terms) == ([(0, 11, 1 + 1 / 257)], "Wings lift.")
    assert highlight_pair(None, "Wings lift.") is None


def test_arrow_table_input() -> None:
    table = pa.table({"query": ["lift"], "doc_id": [1]})
    assert highlight(table, _docs("lift")).collect()["highlight"][0] == "lift..."
