"""``postprocess(overlap="offsets")``: exact merging by ``start_char``/``end_char``.

The peers' cases (engine and reference), a size cap restarting a block before a chunk
that the previous block contains, chunks made by ``ragframe.chunk`` merging back into
their document exactly (unicode included), and the Cranfield fixture merged in both
modes with every text-mode difference classified and pinned.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe import WindowConfig, chunk
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig
from tests.conftest import Runner, assert_same_rows, cand, frame, run_engine, run_reference

CRANFIELD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"


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
