"""Differential property tests: the engine equals the reference, row for row, exactly.

Texts are windows of one random base text per example (so containment and overlaps of
20+ characters are common), perturbed with every whitespace the rules care about.
Example counts come from the hypothesis profile in ``conftest.py``
(``HYPOTHESIS_PROFILE=thorough`` for a long run).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragframe
from ragframe import schema as c
from ragframe._kernels import _parts
from ragframe.errors import DataError
from ragframe.postprocess import PostprocessConfig
from tests.conftest import assert_same_rows, cand, config, frame, run_engine, run_reference

WORDS = [
    "a", "the", "fox", "alpha", "beta", "gamma", "naïve", "café", "über", "Ωmega",
    "東京", "データ", "处理", "x", "e\u0301", "shared", "overlap", "phrase", "😀",
    "a.b", "(x)*", "[^$]", "\\d+", "a|b?",
]  # fmt: skip
JAVA_KEPT = [
    "\x1c", "\x1d", "\x1e", "\x1f", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003",
    "\u2004", "\u2005", "\u2006", "\u2008", "\u2009", "\u200a", "\u2028", "\u2029",
    "\u205f", "\u3000",
]  # fmt: skip
"""Java whitespace that normalization keeps (only ``[ \\t\\n\\x0B\\f\\r]`` runs collapse;
the trim strips \\x1c-\\x1f only at the ends)."""
NO_BREAK = ["\u00a0", "\u2007", "\u202f"]
"""Spaces that are no Java whitespace."""
COLLAPSED = [" ", "\t", "\n", "\x0b", "\x0c", "\r"]
SEPARATORS = [
    " ", " ", " ", "  ", "\t", "\n", "\x0b", "\x0c", "\r", "\r\n", " \t\n\x0b\x0c\r ",
    " \u00a0 ", "\x01", "", ", ", ". ", "-", "\u2000 \t", " \u3000", "\x1c\x1d",
    *JAVA_KEPT, *NO_BREAK,
]  # fmt: skip
WHITESPACE = [*COLLAPSED, *JAVA_KEPT, *NO_BREAK, "\x01", "\x00"]
SCORES = [-0.25, 0.0, 0.05, 0.1, 0.18, 0.3, 0.36, 0.5, 0.6, 0.6 * 0.5, 0.7, 0.9, 1.0, 1.5]
_RUN = re.compile(r"[ \t\n\x0B\f\r]+")


def _runs() -> st.SearchStrategy[str]:
    """A whitespace run of mixed classes (Java whitespace kept or collapsed, no-break
    spaces), often empty."""
    return st.text(st.sampled_from(WHITESPACE), max_size=4)


@st.composite
def base_texts(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)),
                           min_size=1, max_size=60))  # fmt: skip
    return "".join(w + s for w, s in tokens)


@st.composite
def windowing(draw: st.DrawFn, chunks: int = 7) -> tuple[str, int, int]:
    """A base text, a window width and a step; overlaps of 20+ characters are common,
    and the base is repeated until every chunk index has a full window."""
    base = draw(base_texts())
    width = draw(st.integers(1, 120))
    overlap = draw(st.one_of(st.integers(20, 60), st.integers(0, width)))
    step = max(1, width - overlap)
    needed = (chunks - 1) * step + width
    return base * -(-needed // len(base)), step, width


@st.composite
def seam_texts(draw: st.DrawFn, previous: str) -> str:
    """A chunk that starts with the end of ``previous`` (20+ normalized characters when
    ``previous`` has them), with whitespace quirks at the seam: the shared part's
    collapsible runs respelled, leading whitespace, a run of mixed classes after it
    (rule 7's walk may stop after its first character), then new text."""
    start = draw(st.integers(max(0, len(previous) - 60), max(0, len(previous) - 20)))
    shared = previous[start:]
    if draw(st.booleans()):
        shared = _RUN.sub(lambda _: draw(st.sampled_from(["\t", " \n ", "  ", "\r\n"])), shared)
    tail = draw(st.sampled_from(["", "X", "tail words", "\u00a0end", "😀 x"]))
    return draw(_runs()) + shared + draw(_runs()) + tail


@st.composite
def chunk_texts(draw: st.DrawFn, base: str, index: int, step: int, width: int) -> str | None:
    """Text of chunk ``index``: mostly its sliding window of ``base``, sometimes not."""
    kinds = ["window"] * 4 + ["perturbed", "slice", "edge", "random", "seam", "seam"]
    kind = draw(st.sampled_from(kinds))
    window = base[index * step : index * step + width]
    if kind == "window":
        return window
    if kind == "perturbed":
        sep = draw(st.sampled_from([" ", "\n\n", "\t \r\n", "\x0b", "\u00a0", "\u2000 "]))
        return draw(_runs()) + _RUN.sub(sep, window) + draw(_runs())
    if kind == "slice":
        start = draw(st.integers(0, len(base)))
        return base[start : start + draw(st.integers(0, 2 * width))]
    if kind == "seam":  # the end of the previous chunk's window, then more
        previous = base[max(0, index - 1) * step : max(0, index - 1) * step + width]
        return draw(seam_texts(previous))
    if kind == "edge":
        blank = [None, "", " ", " \t\n ", "\u00a0", "\x01", "\x0b\x0c", "\u2003", "\x1c "]
        return draw(st.sampled_from(blank))
    letters = [*WHITESPACE, *WHITESPACE, "a", "b", "é", "東", "😀"]
    return draw(st.text(st.sampled_from(letters), max_size=30))


@st.composite
def candidate_frames(draw: st.DrawFn) -> pl.DataFrame:
    """Several queries of adversarial candidates, canonical column names."""
    string_ids = draw(st.booleans())
    base, step, width = draw(windowing())
    with_type = draw(st.booleans())
    with_rerank = draw(st.booleans())
    with_title = draw(st.booleans())
    entities = [None, 0, 1, 2, 3] if not string_ids else [None, "", "a", "b", "B"]
    query_ids = draw(st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True))
    scores = st.one_of(st.sampled_from(SCORES), st.floats(-1, 2, allow_nan=False))
    rows: list[dict[str, Any]] = []
    for q in query_ids:
        for _ in range(draw(st.integers(1, 10))):
            chunk_index = draw(st.one_of(st.none(), st.integers(0, 6)))
            row = {
                c.QUERY_ID: f"q{q}" if string_ids else q,
                c.ENTITY_ID: draw(st.sampled_from(entities)),
                c.CHUNK_INDEX: chunk_index,
                c.TEXT: draw(chunk_texts(base, chunk_index or 0, step, width)),
                c.SIMILARITY: draw(st.one_of(st.none(), scores)),
            }
            if with_type:
                row[c.ENTITY_TYPE] = draw(st.sampled_from([None, "", "doc", "faq"]))
            if with_rerank:
                row[c.RERANK_SCORE] = draw(st.one_of(st.none(), st.none(), scores))
            if with_title:
                row["title"] = draw(st.one_of(st.none(), st.text(max_size=5)))
            rows.append(row)
            if draw(st.integers(0, 9)) == 0:
                rows.append(dict(row))  # an exact duplicate
    ids = pl.String() if string_ids else pl.Int64()
    return frame(draw(st.permutations(rows)), query_id=ids, entity_id=ids)


def _edge(values: list[int]) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(values), st.integers(values[0], values[-1]))


configs = st.builds(
    PostprocessConfig,
    top_k=_edge([1, 2, 3, 5, 20]),
    min_similarity=st.one_of(st.sampled_from([0.0, 0.1, 0.3, 0.5, 1.0]), st.floats(0, 1)),
    max_chunk_gap=_edge([0, 1, 2, 7]),
    max_blocks=_edge([1, 2, 3, 10]),
    max_characters=st.one_of(st.integers(1, 80), _edge([1, 2, 20, 50, 100, 10_000])),
    max_merged_block_characters=_edge([1, 20, 40, 100, 10_000]),
)
"""Every parameter, with its edges (top_k 1, gap 0, budgets of 1) drawn often, and
``max_characters`` within rule 10's 80-position look-back half the time."""


@given(candidate_frames(), configs, st.sampled_from(["in-memory", "streaming"]))
def test_engine_equals_reference(df: pl.DataFrame, cfg: PostprocessConfig, engine: str) -> None:
    assert_same_rows(run_engine(df, cfg, engine=engine), run_reference(df, cfg))


@given(candidate_frames(), configs, st.integers(2, 5))
def test_kernels_in_parts_equal_reference(
    df: pl.DataFrame, cfg: PostprocessConfig, threads: int
) -> None:
    """Large inputs run the walk and the merge in parts on several threads; force tiny
    parts (a part holds whole queries for the walk, whole groups for the merge)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_parts, "PARALLEL_ROWS", 1)
        patch.setattr(_parts, "_threads", lambda: threads)
        assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


@given(candidate_frames(), configs)
def test_every_query_gets_a_block(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    """Nothing is lost silently: each query with candidates has block 0, and only then."""
    out = ragframe.postprocess(df, cfg).collect()
    assert sorted(out[c.QUERY_ID].unique().to_list()) == sorted(df[c.QUERY_ID].unique().to_list())
    firsts = out.filter(pl.col(c.BLOCK_RANK) == 0)
    assert firsts.height == df[c.QUERY_ID].n_unique()
    per_query = out.group_by(c.QUERY_ID).agg(pl.len(), pl.col(c.CHAR_COUNT).sum())
    assert (per_query["len"] <= cfg.max_blocks).all()
    assert (per_query[c.CHAR_COUNT] <= cfg.max_characters).all()


@given(candidate_frames(), configs, st.sampled_from(["frame", "lazy", "arrow", "doc_id"]))
def test_input_kinds_equal_reference(df: pl.DataFrame, cfg: PostprocessConfig, kind: str) -> None:
    if kind == "doc_id":
        df = df.rename({c.ENTITY_ID: c.DOC_ID})
    data = {"lazy": df.lazy(), "arrow": df.to_arrow()}.get(kind, df)
    assert_same_rows(run_engine(data, cfg), run_reference(df, cfg))


@st.composite
def merge_heavy(draw: st.DrawFn) -> pl.DataFrame:
    """One entity, consecutive windows of one text: overlap removal on every pair."""
    count = draw(st.integers(1, 8))
    base, step, width = draw(windowing(count))
    rows = [
        {
            c.QUERY_ID: 1,
            c.ENTITY_ID: 1,
            c.CHUNK_INDEX: i,
            c.TEXT: draw(chunk_texts(base, i, step, width)),
            c.SIMILARITY: draw(st.sampled_from([0.5, 0.7, 0.9])),
        }
        for i in range(count)
    ]
    return frame(draw(st.permutations(rows)))


@given(merge_heavy(), st.integers(0, 2), st.sampled_from([1, 30, 60, 200, 100_000]))
def test_overlap_removal_equals_reference(df: pl.DataFrame, gap: int, block_chars: int) -> None:
    cfg = PostprocessConfig(
        top_k=20,
        min_similarity=0.0,
        max_chunk_gap=gap,
        max_blocks=20,
        max_characters=100_000,
        max_merged_block_characters=block_chars,
    )
    assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


@st.composite
def seam_chains(draw: st.DrawFn) -> pl.DataFrame:
    """One entity, each chunk starting with the end of the one before (the shared part
    often ending in a Java whitespace that normalization keeps, a run of mixed classes
    after it): rule 7's walk at every seam, blank chunks in between."""
    words = st.lists(st.sampled_from(WORDS), min_size=4, max_size=12)
    texts = [" ".join(draw(words)) + draw(st.sampled_from(["", *JAVA_KEPT, *NO_BREAK]))]
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.integers(0, 5)) == 0:
            texts.append(draw(st.sampled_from(["", " ", "\u2003", "\t\u3000 ", "\u00a0"])))
            continue
        kept = draw(st.sampled_from(["", *JAVA_KEPT]))  # the next seam ends in it
        texts.append(draw(seam_texts(texts[-1])) + kept)
    rows = [cand(1, text, draw(st.sampled_from([0.5, 0.9])), i) for i, text in enumerate(texts)]
    return frame(draw(st.permutations(rows)))


@st.composite
def flat_chains(draw: st.DrawFn) -> pl.DataFrame:
    """One entity, overlapping windows of an ASCII text mostly without whitespace runs
    (the overlap search's fast path for such texts, ``_text.plain``), windows often
    starting or ending at whitespace, so a block's text may gain a run where a chunk
    joins it (a newline when no overlap is found), or a byte that is not ASCII."""
    words = ["a", "the", "fox", "alpha", "beta", "x", "a.b", "shared", "overlap", "(x)*"]
    separators = [" ", " ", " ", "\n", "", "  ", "\t", "\u00e9", "\x1c", " \n"]
    pairs = st.tuples(st.sampled_from(words), st.sampled_from(separators))
    base = "".join(w + s for w, s in draw(st.lists(pairs, min_size=6, max_size=40)))
    rows, start = [], 0
    while start < len(base) and len(rows) < 8:
        width = draw(st.integers(18, 70))
        rows.append(cand(1, base[start : start + width], 0.5 + 0.1 * (len(rows) % 3), len(rows)))
        start += max(1, width - draw(st.integers(0, 45)))  # overlaps of 0-45 characters
    return frame(draw(st.permutations(rows)))


@given(
    st.one_of(seam_chains(), flat_chains()), st.sampled_from([1, 40, 100_000]), st.integers(1, 80)
)
def test_seams_equal_reference(df: pl.DataFrame, block_chars: int, budget: int) -> None:
    """Every seam merged (and, with a small budget, the result truncated); also seams of
    texts without runs (:func:`flat_chains`)."""
    for max_characters in (100_000, budget):
        cfg = config(20, 0.0, 1, 20, max_characters, block_chars)
        assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


MISSING_TEXT = st.sampled_from(["error", "empty", "drop"])


@given(candidate_frames(), configs, MISSING_TEXT, st.integers(0, 3))
def test_chunk_store_equals_reference(
    df: pl.DataFrame, cfg: PostprocessConfig, missing_text: str, holes: int
) -> None:
    """Late materialization, with a store that lacks some candidates' chunks (every
    ``holes``-th key, and those of candidates without an entity): each policy as the
    reference has it, the error message included."""
    cfg = replace(cfg, missing_text=missing_text)
    store = (
        df.select(c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT)
        .drop_nulls([c.ENTITY_ID, c.CHUNK_INDEX])
        .unique([c.ENTITY_ID, c.CHUNK_INDEX], keep="first", maintain_order=True)
    )
    if holes:
        store = store.filter(pl.int_range(pl.len()) % (holes + 1) != holes)
    results = df.drop(c.TEXT)
    try:
        want = run_reference(results, cfg, chunks=store)
    except ValueError as error:
        with pytest.raises(DataError) as raised:
            run_engine(results, cfg, chunks=store)
        assert str(raised.value).splitlines()[0] == str(error)
        return
    assert_same_rows(run_engine(results, cfg, chunks=store), want)


# --- overlap="offsets" ------------------------------------------------------------------


@st.composite
def offset_frames(draw: st.DrawFn) -> pl.DataFrame:
    """Sliding windows with their offsets, some chunks contained in others, some with
    gaps, a few whose text disagrees with the offsets; several entities and queries."""
    base, step, width = draw(windowing())
    rows: list[dict[str, Any]] = []
    for q in draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)):
        for _ in range(draw(st.integers(1, 10))):
            index = draw(st.integers(0, 6))
            start, end = index * step, index * step + width
            if draw(st.integers(0, 4)) == 0:  # a sub-span: contained in its window
                start = draw(st.integers(start, end))
                end = draw(st.integers(start, end))
            text = base[start:end] if draw(st.integers(0, 9)) else draw(st.text(max_size=9))
            rows.append(
                {
                    c.QUERY_ID: q,
                    c.ENTITY_ID: draw(st.sampled_from([1, 2, 3])),
                    c.CHUNK_INDEX: index,
                    c.TEXT: text,
                    c.SIMILARITY: draw(st.sampled_from(SCORES)),
                    c.START_CHAR: start,
                    c.END_CHAR: end,
                }
            )
    return frame(draw(st.permutations(rows)))


offset_configs = configs.map(lambda cfg: replace(cfg, overlap="offsets"))


@given(offset_frames(), offset_configs, st.sampled_from(["in-memory", "streaming"]))
def test_offsets_mode_equals_reference(
    df: pl.DataFrame, cfg: PostprocessConfig, engine: str
) -> None:
    assert_same_rows(run_engine(df, cfg, engine=engine), run_reference(df, cfg))


@given(offset_frames(), offset_configs)
def test_offsets_mode_with_chunk_store_equals_reference(
    df: pl.DataFrame, cfg: PostprocessConfig
) -> None:
    key = [c.ENTITY_ID, c.CHUNK_INDEX]
    store = df.select(*key, c.TEXT, c.START_CHAR, c.END_CHAR).unique(
        key, keep="first", maintain_order=True
    )
    results = df.drop(c.TEXT, c.START_CHAR, c.END_CHAR)
    want = run_reference(results, cfg, chunks=store)
    assert_same_rows(run_engine(results, cfg, chunks=store), want)
