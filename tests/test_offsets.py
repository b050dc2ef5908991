"""``postprocess(overlap="offsets")``: exact merging by ``start_char``/``end_char``.

The peers' cases (engine and reference), a size cap restarting a block before a chunk
that the previous block contains, chunks made by ``ragframe.chunk`` merging back into
their document exactly (unicode included), and the Cranfield fixture merged in both
modes with every text-mode difference classified and pinned.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe import WindowConfig, chunk
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig
from tests.conftest import (
    CRANFIELD,
    Runner,
    assert_same_rows,
    cand,
    frame,
    run_engine,
    run_reference,
)


def _offsets(**kwargs: Any) -> PostprocessConfig:
    """Offsets mode, merging everything adjacent unless ``kwargs`` says otherwise."""
    settings: dict[str, Any] = {
        "top_k": 50,
        "min_similarity": 0.0,
        "max_blocks": 50,
        "max_characters": 10**6,
        "max_merged_block_characters": 10**6,
        "overlap": "offsets",
    }
    return PostprocessConfig(**{**settings, **kwargs})


def _spans(*chunks: tuple[str, int]) -> pl.DataFrame:
    """Chunks ``(text, start_char)`` of entity 1, chunk_index 0, 1, 2, ...; end_char =
    start + len(text)."""
    return frame(
        cand(1, text, 0.9, index, start_char=start, end_char=start + len(text))
        for index, (text, start) in enumerate(chunks)
    )


def _texts(rows: list[dict[str, Any]]) -> list[str]:
    return [row[c.TEXT] for row in rows]


# --- the peers' cases ------------------------------------------------------------------


def test_peer_case_overlapping_words(run: Runner) -> None:
    df = _spans(("foo bar", 0), ("bar baz", 4), ("baz 123", 8))
    assert _texts(run(df, _offsets())) == ["foo bar baz 123"]


def test_peer_case_contained_chunk(run: Runner) -> None:
    """ "cd" lies inside "abcdefgh": it appends nothing; "efghij" appends "ij"."""
    df = _spans(("abcdefgh", 0), ("cd", 2), ("efghij", 4))
    (block,) = run(df, _offsets())
    assert block[c.TEXT] == "abcdefghij"
    assert block[c.CHUNK_INDEXES] == [0, 1, 2]
    assert block[c.SOURCE_CHUNK_COUNT] == 3


def test_gap_in_offsets_keeps_the_separator(run: Runner) -> None:
    """Adjacent chunk indexes whose offsets leave a gap: "\\n" + the whole chunk."""
    df = _spans(("foo bar", 0), ("qux", 10), ("qux quux", 10))
    assert _texts(run(df, _offsets())) == ["foo bar\nqux quux"]


def test_gap_in_chunk_index_starts_a_new_block(run: Runner) -> None:
    rows = [
        cand(1, "foo bar", 0.9, 0, start_char=0, end_char=7),
        cand(1, "bar baz", 0.9, 3, start_char=4, end_char=11),
    ]
    assert _texts(run(frame(rows), _offsets())) == ["foo bar", "bar baz"]


@pytest.mark.parametrize(
    ("cap", "want"),
    [
        # "abcdefgh" alone is over the cap, so even "cd" (contained, appends nothing)
        # restarts the block; the new block ends at 4, so "ef" (contained in the
        # *previous* block) must append "ef" -- not nothing.
        (7, ["abcdefgh", "cdef"]),
        (5, ["abcdefgh", "cdef"]),
        # "cd" appends nothing and fits; "ef" is contained in the block: one block
        (8, ["abcdefgh"]),
        (10**6, ["abcdefgh"]),
    ],
)
def test_cap_restart_before_a_chunk_contained_in_the_previous_block(
    run: Runner, cap: int, want: list[str]
) -> None:
    df = _spans(("abcdefgh", 0), ("cd", 2), ("ef", 4))
    assert _texts(run(df, _offsets(max_merged_block_characters=cap))) == want


@pytest.mark.parametrize(
    ("cap", "want"),
    [
        (8, ["abcdefgh", "efghij"]),  # "cd" fits (appends nothing); "ij" would not
        (9, ["abcdefgh", "efghij"]),
        (10, ["abcdefghij"]),
        (3, ["abcdefgh", "cd", "efghij"]),
    ],
)
def test_cap_splits_the_contained_peer_case(run: Runner, cap: int, want: list[str]) -> None:
    df = _spans(("abcdefgh", 0), ("cd", 2), ("efghij", 4))
    assert _texts(run(df, _offsets(max_merged_block_characters=cap))) == want


def test_cap_restart_then_contained_chunks_across_groups_and_queries() -> None:
    """The same restart in many groups at once (the kernel redoes only those groups),
    next to groups that need no redo; engine == reference, row for row."""
    rows = []
    for query in range(3):
        for entity in range(1, 6):
            spans = [("abcdefgh", 0), ("cd", 2), ("ef", 4), ("efghij", 4), ("j", 9)]
            if entity % 2:
                spans = [("foo bar", 0), ("bar baz", 4), ("baz 123", 8)]
            rows += [
                cand(entity, t, 0.9, i, query_id=query, start_char=s, end_char=s + len(t))
                for i, (t, s) in enumerate(spans)
            ]
    df = frame(rows)
    for cap in (5, 7, 8, 12, 10**6):
        cfg = _offsets(max_merged_block_characters=cap)
        assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


# --- chunk -> postprocess(offsets) gives the document back ------------------------------

UNICODE_TEXT = (
    "Crème brûlée à la façon de Zoë — naïve coöperation.\n\n"
    "東京都の天気は晴れ、気温は二十度です。数据处理很快。"
    " Emoji 😀🚀👍🏽 and flags 🇫🇷, combining e\u0301 and a\u0308. "
    "\tTabs,\u00a0no-break\u00a0spaces,\u2003em space, \r\nCRLF lines.\n"
) * 3


def _merge_chunks(
    documents: pl.DataFrame, window: int, overlap: int, runner: Runner
) -> list[dict[str, Any]]:
    """Chunk ``documents``, retrieve every chunk of every document for one query, and
    merge them by offsets with the chunk table as the store.

    Ranking by ``rerank_score`` walks the chunks in order while ``similarity`` rises
    along that walk, so no chunk is ever dropped as a repeat of an earlier-ranked one
    (SPEC rule 3 needs the earlier one's similarity to be >= the candidate's)."""
    store = chunk(documents, WindowConfig(window_chars=window, overlap_chars=overlap)).collect()
    n = max(store.height, 1)
    results = store.select(
        pl.lit(1).alias(c.QUERY_ID),
        c.DOC_ID,
        c.CHUNK_INDEX,
        (pl.int_range(pl.len()) / n).alias(c.SIMILARITY),
        (-pl.int_range(pl.len()).cast(pl.Float64)).alias(c.RERANK_SCORE),
    )
    cfg = _offsets(top_k=n, max_blocks=max(documents.height, 1))
    return runner(results, cfg, chunks=store)


@pytest.mark.parametrize(
    ("window", "overlap"),
    [(400, 100), (60, 20), (50, 0), (7, 6), (1, 0), (2, 1), (33, 32), (10_000, 100)],
)
def test_chunks_merge_back_into_the_document(run: Runner, window: int, overlap: int) -> None:
    contents = [UNICODE_TEXT, "short", "x" * 97, UNICODE_TEXT[::-1]]
    documents = pl.DataFrame({c.DOC_ID: [10, 20, 30, 40], "content": contents})
    blocks = _merge_chunks(documents, window, overlap, run)
    assert sorted((b[c.ENTITY_ID], b[c.TEXT]) for b in blocks) == sorted(
        zip([10, 20, 30, 40], contents, strict=True)
    )
    for block in blocks:
        assert block[c.SOURCE_CHUNK_COUNT] == len(block[c.CHUNK_INDEXES])
        assert block[c.CHUNK_INDEXES] == list(range(len(block[c.CHUNK_INDEXES])))


def test_text_mode_is_not_exact_on_the_same_chunks() -> None:
    """Why offsets mode exists: the seed's text matching cannot see that a window ended
    inside a whitespace run (or that the overlap is under 20 characters)."""
    documents = pl.DataFrame({c.DOC_ID: [1], "content": [UNICODE_TEXT]})
    store = chunk(documents, WindowConfig(window_chars=60, overlap_chars=10)).collect()
    results = store.select(
        pl.lit(1).alias(c.QUERY_ID),
        c.DOC_ID,
        c.CHUNK_INDEX,
        (pl.int_range(pl.len()) / store.height).alias(c.SIMILARITY),
        (-pl.int_range(pl.len()).cast(pl.Float64)).alias(c.RERANK_SCORE),
    )
    text_cfg = replace(_offsets(top_k=store.height), overlap="text")
    (block,) = run_engine(results, text_cfg, chunks=store)
    assert block[c.TEXT] != UNICODE_TEXT


ALPHABET = "ab \n\t\r\u00a0\u2003éüñ日本語数据😀🚀\u0301"


@given(
    st.lists(st.text(ALPHABET, min_size=1, max_size=300), min_size=1, max_size=3),
    st.integers(1, 80),
    st.data(),
)
def test_chunks_merge_back_into_the_document_property(
    contents: list[str], window: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, window - 1), label="overlap")
    documents = pl.DataFrame({c.DOC_ID: list(range(len(contents))), "content": contents})
    for runner in (run_engine, run_reference):
        blocks = _merge_chunks(documents, window, overlap, runner)
        assert {b[c.ENTITY_ID]: b[c.TEXT] for b in blocks} == dict(enumerate(contents))
        assert len(blocks) == len(contents)


# --- Cranfield: offsets mode vs the seed's text mode ------------------------------------

MERGE_ALL = {
    "top_k": 50,
    "min_similarity": 0.0,
    "max_chunk_gap": 1,
    "max_blocks": 50,
    "max_characters": 10**6,
    "max_merged_block_characters": 10**6,
}
MODES = {mode: PostprocessConfig(**MERGE_ALL, overlap=mode) for mode in ("text", "offsets")}
Rows = list[dict[str, Any]]


@pytest.fixture(scope="module")
def cranfield() -> tuple[pl.DataFrame, pl.DataFrame, dict[int, str]]:
    if not (CRANFIELD / "results_minilm.parquet").is_file():
        pytest.skip(f"Cranfield fixture not found at {CRANFIELD}")
    results = pl.read_parquet(CRANFIELD / "results_minilm.parquet")
    chunks = pl.read_parquet(CRANFIELD / "chunks.parquet")
    docs = pl.read_parquet(CRANFIELD / "docs.parquet").select(c.DOC_ID, "content")
    return results, chunks, dict(docs.iter_rows())


@pytest.fixture(scope="module")
def merged(cranfield: tuple[pl.DataFrame, pl.DataFrame, dict[int, str]]) -> dict[str, Rows]:
    results, chunks, _ = cranfield
    return {mode: run_engine(results, cfg, chunks=chunks) for mode, cfg in MODES.items()}


@pytest.mark.parametrize("mode", list(MODES))
def test_cranfield_engine_equals_reference(
    cranfield: tuple[pl.DataFrame, pl.DataFrame, dict[int, str]],
    merged: dict[str, Rows],
    mode: str,
) -> None:
    results, chunks, _ = cranfield
    assert_same_rows(merged[mode], run_reference(results, MODES[mode], chunks=chunks))


def _spans_of(chunks: pl.DataFrame) -> dict[tuple[int, int], tuple[int, int, str]]:
    key = (c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR, c.TEXT)
    return {(d, i): (s, e, t) for d, i, s, e, t in chunks.select(key).iter_rows()}


def test_cranfield_offsets_blocks_are_document_substrings(
    cranfield: tuple[pl.DataFrame, pl.DataFrame, dict[int, str]], merged: dict[str, Rows]
) -> None:
    _, chunks, content = cranfield
    spans = _spans_of(chunks)
    blocks = merged["offsets"]
    # the configuration merges a lot: 9,132 blocks, 1,564 of them from 2..7 chunks
    assert len(blocks) == 9132
    assert Counter(b[c.SOURCE_CHUNK_COUNT] for b in blocks) == {
        1: 7568, 2: 1169, 3: 282, 4: 77, 5: 27, 6: 8, 7: 1
    }  # fmt: skip
    for b in blocks:
        doc = b[c.ENTITY_ID]
        start = spans[doc, b[c.START_CHUNK_INDEX]][0]
        end = spans[doc, b[c.END_CHUNK_INDEX]][1]
        assert b[c.CHUNK_INDEXES] == list(range(b[c.START_CHUNK_INDEX], b[c.END_CHUNK_INDEX] + 1))
        assert b[c.TEXT] == content[doc][start:end]


_TRAILING_RUN = re.compile(r"[ \t\n\x0B\f\r]+$")
_SEAM_KIND = {" ": "space", "\n": "newline", "  ": "two spaces"}


def _text_mode_from_offsets(
    block: dict[str, Any], spans: dict[tuple[int, int], tuple[int, int, str]]
) -> tuple[str, tuple[str, ...]]:
    """What the seed's text matching makes of a block, predicted from the exact one.

    At every seam, text mode finds the full 100-character overlap, but normalization
    trims the *trailing* whitespace run of the block text, so the matched overlap ends
    before it; the seed keeps "the separator after the overlap", i.e. the next chunk's
    copy of that run, and the run is doubled. Returns the predicted text and the kinds
    of doubled runs."""
    doc, indexes = block[c.ENTITY_ID], block[c.CHUNK_INDEXES]
    _, end, text = spans[doc, indexes[0]]
    kinds: list[str] = []
    for index in indexes[1:]:
        start, next_end, next_text = spans[doc, index]
        run = _TRAILING_RUN.search(text)
        doubled = run.group() if run else ""
        if doubled:
            kinds.append(_SEAM_KIND[doubled])
        text += doubled + next_text[end - start :]
        end = next_end
    return text, tuple(sorted(kinds))


def test_cranfield_text_mode_differences_are_all_classified(
    cranfield: tuple[pl.DataFrame, pl.DataFrame, dict[int, str]], merged: dict[str, Rows]
) -> None:
    """Text mode and offsets mode give the same blocks (same chunks, statistics and
    order) and the same text for all but 294 of the 9,132 blocks.

    Every difference has one reason: the window before a seam ends in a whitespace run
    (the 400-character window cut right after a space or a line break). The seed's
    normalization trims that run from the block before matching, the overlap it finds
    ends just before the run, and the kept separator brings the run again: text mode
    doubles it (one or two extra characters per such seam). No other reason occurs on
    Cranfield: no seam falls back to "\n" + whole chunk (every overlap is 100 raw
    characters, well over the 20 normalized ones the seed needs, and whitespace runs
    that straddle the next window's start or lie inside the overlap normalize alike on
    both sides), and no match is longer than the true overlap."""
    _, chunks, _ = cranfield
    spans = _spans_of(chunks)
    text_rows, offset_rows = merged["text"], merged["offsets"]
    assert len(text_rows) == len(offset_rows)
    reasons: Counter[tuple[str, ...]] = Counter()
    seams: Counter[str] = Counter()
    for text_block, exact in zip(text_rows, offset_rows, strict=True):
        assert {k: v for k, v in text_block.items() if k not in (c.TEXT, c.CHAR_COUNT)} == {
            k: v for k, v in exact.items() if k not in (c.TEXT, c.CHAR_COUNT)
        }
        predicted, kinds = _text_mode_from_offsets(exact, spans)
        assert text_block[c.TEXT] == predicted  # nothing else differs, anywhere
        seams.update(kinds)
        if text_block[c.TEXT] != exact[c.TEXT]:
            reasons[kinds] += 1
            assert text_block[c.CHAR_COUNT] == exact[c.CHAR_COUNT] + sum(
                {"space": 1, "newline": 1, "two spaces": 2}[k] for k in kinds
            )
        else:
            assert not kinds  # a doubled run always shows
    assert reasons == {
        # one seam whose earlier window ends with a single space: "the  same"
        ("space",): 227,
        # one seam whose earlier window ends with a line break: "plane and\n\nturbulent"
        ("newline",): 54,
        # one seam whose earlier window ends with the two spaces after a sentence's
        # " ." (the collection's "word .  next" style): four spaces in text mode
        ("two spaces",): 4,
        # two such seams in one block
        ("space", "space"): 4,
        ("newline", "space"): 3,
        ("newline", "newline"): 2,
    }
    assert sum(reasons.values()) == 294
    # per seam: 303 doubled runs among the merged seams
    assert seams == {"space": 238, "newline": 61, "two spaces": 4}
