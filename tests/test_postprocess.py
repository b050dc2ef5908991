"""ragframe.postprocess: SPEC section 1 cases, config checks, bad input, execution modes.

Tests taking the ``run`` fixture run twice: through the reference and through the engine.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl
import pytest

import ragframe
from ragframe import schema as c
from ragframe.errors import ConfigError, DataError, SchemaError
from ragframe.postprocess import PostprocessConfig
from ragframe.postprocess._select import first_pass_width, threshold_expr
from ragframe.reference.postprocess import adaptive_threshold
from tests.conftest import (
    Runner,
    assert_same_rows,
    cand,
    config,
    frame,
    run_engine,
    run_reference,
    with_chunk_text,
)

# --- SPEC section 1 reference cases (the seed's own tests) -----------------------------


def test_selection_keeps_top_k_by_score_across_input_order(run: Runner) -> None:
    rows = [
        cand(1, "best", 0.90),
        cand(2, "second", 0.70),
        cand(3, "below adaptive", 0.55),
        cand(4, "top from later input", 0.95),
    ]
    out = run(frame(rows), config(3, 0.5, 1, 3, 5000, 2000))
    assert [r[c.ENTITY_ID] for r in out] == [4, 1, 2]
    assert [r[c.TEXT] for r in out] == ["top from later input", "best", "second"]
    assert [r[c.BLOCK_RANK] for r in out] == [0, 1, 2]


def test_all_below_threshold_keeps_only_the_first_selected(run: Runner) -> None:
    rows = [cand(1, "weak", 0.20), cand(2, "weaker", 0.10)]
    out = run(frame(rows), config(2, 0.9))
    assert [(r[c.ENTITY_ID], r[c.TEXT]) for r in out] == [(1, "weak")]


def test_adjacent_chunks_merge_with_overlap_removed(run: Runner) -> None:
    rows = [
        cand(1, "Intro text before. Shared overlap phrase for removal", 0.90, 0),
        cand(1, "Shared overlap phrase for removal and unique second.", 0.80, 1),
    ]
    (block,) = run(frame(rows), config(5, 0.1, 1, 3, 5000, 2000))
    assert block[c.TEXT] == (
        "Intro text before. Shared overlap phrase for removal and unique second."
    )
    assert block[c.START_CHUNK_INDEX] == 0
    assert block[c.END_CHUNK_INDEX] == 1
    assert block[c.SOURCE_CHUNK_COUNT] == 2
    assert block[c.CHUNK_INDEXES] == [0, 1]
    assert block[c.MAX_SIMILARITY] == 0.90
    assert block[c.AVG_SIMILARITY] == (0.90 + 0.80) / 2
    assert block[c.RERANK_SCORE] is None
    assert block[c.RANKING_SCORE] == 0.90
    assert block[c.CHAR_COUNT] == len(block[c.TEXT])
    assert block[c.TRUNCATED] is False


def test_chunks_beyond_the_gap_make_separate_blocks(run: Runner) -> None:
    rows = [cand(1, "first", 0.90, 0), cand(1, "third", 0.80, 3)]
    out = run(frame(rows), config(5, 0.1, 1, 5, 5000, 2000))
    assert [(r[c.TEXT], r[c.START_CHUNK_INDEX], r[c.END_CHUNK_INDEX]) for r in out] == [
        ("first", 0, 0),
        ("third", 3, 3),
    ]


def test_character_budget_truncates_the_first_block_and_stops(run: Runner) -> None:
    rows = [
        cand(1, "This text is longer than twenty characters.", 0.90),
        cand(2, "This block should be excluded.", 0.80),
    ]
    (block,) = run(frame(rows), config(5, 0.1, 1, 1, 20, 2000))
    assert len(block[c.TEXT]) <= 20
    assert block[c.TEXT] == "This text is longer"
    assert block[c.CHAR_COUNT] == 19
    assert block[c.TRUNCATED] is True


def test_merged_block_size_limit_splits_blocks(run: Runner) -> None:
    rows = [
        cand(1, "First chunk has enough text.", 0.90, 0),
        cand(1, "Second chunk has enough text.", 0.80, 1),
    ]
    out = run(frame(rows), config(5, 0.1, 1, 5, 5000, 30))
    assert [r[c.TEXT] for r in out] == [
        "First chunk has enough text.",
        "Second chunk has enough text.",
    ]


# --- more rules, both implementations ---------------------------------------------------


def test_gap_of_one_appends_newline_when_no_overlap(run: Runner) -> None:
    rows = [cand(1, "alpha", 0.9, 0), cand(1, "beta", 0.8, 1)]
    (block,) = run(frame(rows), config(5, 0.1, 1, 5, 5000, 2000))
    assert block[c.TEXT] == "alpha\nbeta"


def test_repeated_text_in_same_entity_is_skipped(run: Runner) -> None:
    rows = [
        cand(1, "the quick brown fox jumps", 0.9, 0),
        cand(1, "brown  fox", 0.8, 5),
        cand(1, "row", 0.7, 6),  # not at a word boundary: kept
        cand(2, "brown fox", 0.6, 0),  # other entity: kept
    ]
    out = run(frame(rows), config(10, 0.1, 0, 10, 5000, 2000))
    assert sorted((r[c.ENTITY_ID], r[c.TEXT]) for r in out) == [
        (1, "row"),
        (1, "the quick brown fox jumps"),
        (2, "brown fox"),
    ]


def test_rerank_score_orders_blocks(run: Runner) -> None:
    rows = [
        cand(1, "one", 0.9, rerank_score=None),
        cand(2, "two", 0.5, rerank_score=3.0),
        cand(3, "three", 0.6, rerank_score=-1.0),
    ]
    out = run(frame(rows), config(5, 0.1))
    assert [r[c.ENTITY_ID] for r in out] == [2, 1, 3]
    assert [r[c.RANKING_SCORE] for r in out] == [3.0, 0.9, -1.0]
    assert [r[c.RERANK_SCORE] for r in out] == [3.0, None, -1.0]


def test_duplicate_rows_count_once(run: Runner) -> None:
    rows = [cand(1, "same text here", 0.8, 2)] * 3
    (block,) = run(frame(rows), config(5, 0.1))
    assert block[c.SOURCE_CHUNK_COUNT] == 1
    assert block[c.TEXT] == "same text here"


def test_several_queries_come_out_sorted_by_query_id(run: Runner) -> None:
    rows = [cand(1, "b", 0.5, query_id=7), cand(1, "a", 0.5, query_id=3)]
    out = run(frame(rows), config(5, 0.1))
    assert [(r[c.QUERY_ID], r[c.BLOCK_RANK], r[c.TEXT]) for r in out] == [
        (3, 0, "a"),
        (7, 0, "b"),
    ]


def test_string_ids(run: Runner) -> None:
    rows = [
        cand("doc-b", "bee", 0.7, query_id="q2"),
        cand(None, "none", 0.9, query_id="q1"),
        cand("doc-a", "aye", 0.8, query_id="q1"),
    ]
    df = frame(rows, query_id=pl.String(), entity_id=pl.String())
    out = run(df, config(5, 0.1))
    assert [(r[c.QUERY_ID], r[c.ENTITY_ID], r[c.TEXT]) for r in out] == [
        ("q1", None, "none"),  # no entity: null stays null (it groups as "")
        ("q1", "doc-a", "aye"),
        ("q2", "doc-b", "bee"),
    ]


def test_nulls_take_their_documented_defaults(run: Runner) -> None:
    rows = [cand(None, None, None, None, entity_type=None)]
    (block,) = run(frame(rows), config(5, 0.1))
    assert block[c.ENTITY_ID] is None  # rule 8: as in the input, not the group key 0
    assert block[c.ENTITY_TYPE] is None
    assert block[c.TEXT] == ""
    assert block[c.START_CHUNK_INDEX] == 0
    assert block[c.MAX_SIMILARITY] == 0.0


def test_passthrough_columns_come_from_each_blocks_first_chunk(run: Runner) -> None:
    rows = [
        cand(1, "second half", 0.9, 1, title="B", url="u1"),
        cand(1, "first half", 0.5, 0, title="A", url="u0"),
        cand(2, "other", 0.7, 0, title="C", url=None),
    ]
    out = run(frame(rows), config(5, 0.1, 1, 5, 5000, 2000))
    assert [(r[c.ENTITY_ID], r["title"], r["url"]) for r in out] == [
        (1, "A", "u0"),
        (2, "C", None),
    ]


# --- config validation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"top_k": 0}, "top_k must be in [1, 4611686018427387904], got 0"),
        ({"top_k": 1.5}, "top_k must be an integer in [1, 4611686018427387904], got 1.5"),
        ({"top_k": True}, "top_k must be an integer in [1, 4611686018427387904], got True"),
        ({"min_similarity": 1.5}, "min_similarity must be in [0, 1], got 1.5"),
        ({"min_similarity": -0.1}, "min_similarity must be in [0, 1], got -0.1"),
        ({"min_similarity": math.nan}, "min_similarity must be in [0, 1], got nan"),
        ({"min_similarity": "0.5"}, "min_similarity must be a number in [0, 1], got '0.5'"),
        ({"max_chunk_gap": -1}, "max_chunk_gap must be in [0, 4611686018427387904], got -1"),
        ({"max_blocks": 0}, "max_blocks must be in [1, 4611686018427387904], got 0"),
        ({"max_characters": 0}, "max_characters must be in [1, 4611686018427387904], got 0"),
        (
            {"max_merged_block_characters": 0},
            "max_merged_block_characters must be in [1, 4611686018427387904], got 0",
        ),
        (
            {"max_blocks": None},
            "max_blocks must be an integer in [1, 4611686018427387904], got None",
        ),
        ({"overlap": "bytes"}, "overlap must be 'text' or 'offsets', got 'bytes'"),
    ],
    ids=lambda v: str(v) if isinstance(v, dict) else "",
)
def test_invalid_config_is_rejected(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        PostprocessConfig(**kwargs)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("kwargs", "selected", "threshold"),
    [
        ({"top_k": 1, "min_similarity": 0.5}, 1, 0.3),
        ({"top_k": 5, "min_similarity": 0.5}, 0, 0.3),
        ({"top_k": 5, "min_similarity": 0.5}, 5, 0.6),
        ({"top_k": 5, "min_similarity": 0.5}, 3, 0.5 * (0.6 + 0.6 * 2 / 4)),
        ({"top_k": 5, "min_similarity": 1.0}, 5, 1.0),
    ],
    ids=["top_k_1", "none", "full", "between", "clamped"],
)
def test_adaptive_threshold(kwargs: dict[str, Any], selected: int, threshold: float) -> None:
    """Rule 4's formula, in the reference and in the engine's expression."""
    cfg = PostprocessConfig(**kwargs)
    assert adaptive_threshold(selected, cfg.top_k, cfg.min_similarity) == threshold
    expr = threshold_expr(pl.lit(selected), cfg.top_k, cfg.min_similarity)
    assert pl.select(expr).item() == pytest.approx(threshold, abs=1e-15)


@pytest.mark.parametrize(
    "cfg",
    [config(1, 0.0, 0, 1, 1, 1), config(1, 1.0), config(2**62, 1.0, 2**62, 2**62, 2**62, 2**62)],
    ids=["lowest", "min_similarity_1", "highest"],
)
def test_config_at_its_edges_runs_and_obeys_its_limits(cfg: PostprocessConfig) -> None:
    rows = frame(MIXED)
    got = run_engine(rows, cfg)
    assert_same_rows(got, run_reference(rows, cfg))
    per_query: dict[Any, list[int]] = {}
    for r in got:
        per_query.setdefault(r[c.QUERY_ID], []).append(r[c.CHAR_COUNT])
    assert sorted(per_query) == [1, 2, 3]  # every query keeps a block
    assert all(
        len(n) <= cfg.max_blocks and sum(n) <= cfg.max_characters for n in per_query.values()
    )


# --- bad input (engine) -----------------------------------------------------------------

GOOD = [cand(1, "alpha", 0.9), cand(2, "beta", 0.8, 1)]


def _engine(df: Any, **kw: Any) -> pl.LazyFrame:
    out = ragframe.postprocess(df, PostprocessConfig(), **kw)
    assert isinstance(out, pl.LazyFrame)
    return out


@pytest.mark.parametrize("missing", [c.QUERY_ID, c.CHUNK_INDEX, c.TEXT, c.SIMILARITY])
def test_missing_column_is_a_schema_error(missing: str) -> None:
    df = frame(GOOD).drop(missing)
    with pytest.raises(SchemaError) as exc:
        _engine(df)  # raised while building the plan, not at collect
    assert str(exc.value) == f"candidates: missing column '{missing}'; found: {df.columns}"


def test_missing_column_suggests_a_close_name() -> None:
    df = frame(GOOD).rename({c.SIMILARITY: "similarities"})
    with pytest.raises(SchemaError) as exc:
        _engine(df)
    assert str(exc.value) == (
        f"candidates: missing column 'similarity'; found: {df.columns}; "
        "did you mean 'similarities'?"
    )


def test_missing_entity_id_is_a_schema_error() -> None:
    df = frame(GOOD).drop(c.ENTITY_ID)
    with pytest.raises(SchemaError, match="missing column 'entity_id'"):
        _engine(df)


@pytest.mark.parametrize(
    ("column", "dtype", "expected"),
    [
        (c.SIMILARITY, pl.String(), "float or int"),
        (c.RERANK_SCORE, pl.String(), "float or int"),
        (c.TEXT, pl.Int64(), "string"),
        (c.CHUNK_INDEX, pl.Float64(), "int"),
        (c.ENTITY_TYPE, pl.Int64(), "string"),
        (c.ENTITY_ID, pl.Float64(), "int or string"),
        (c.QUERY_ID, pl.Float64(), "int or string"),
    ],
)
def test_wrong_dtype_is_a_schema_error(column: str, dtype: pl.DataType, expected: str) -> None:
    df = frame([cand(1, "7", 0.5, 1, entity_type="3", rerank_score=0.5)])
    df = df.with_columns(pl.col(column).cast(dtype))
    with pytest.raises(SchemaError) as exc:
        _engine(df)
    assert str(exc.value) == f"candidates: column '{column}' has type {dtype}; expected {expected}"


def test_unsupported_input_type_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="candidates must be a polars DataFrame"):
        _engine([cand(1, "a", 0.5)])


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("column", [c.SIMILARITY, c.RERANK_SCORE])
def test_non_finite_scores_are_a_data_error(column: str, value: float) -> None:
    rows = [cand(1, "a", 0.5, rerank_score=1.0), cand(2, "b", 0.5, rerank_score=1.0)]
    bad = pl.when(pl.col(c.ENTITY_ID) == 2).then(value).otherwise(pl.col(column))
    df = frame(rows).with_columns(bad.alias(column))
    lf = _engine(df)
    with pytest.raises(DataError, match=column):
        lf.collect()


def test_null_query_id_is_a_data_error() -> None:
    df = frame([cand(1, "a", 0.5), cand(1, "b", 0.5, query_id=None)])
    lf = _engine(df)
    with pytest.raises(DataError, match="query_id"):
        lf.collect()


@pytest.mark.parametrize("runner", [run_reference, run_engine], ids=["reference", "engine"])
def test_empty_input_gives_no_blocks(runner: Any) -> None:
    df = frame([cand(1, "a", 0.5, entity_type="t", rerank_score=0.1)]).clear()
    assert runner(df) == []


def test_empty_input_keeps_the_output_schema() -> None:
    df = frame([cand(1, "a", 0.5, title="x")]).clear()
    out = _engine(df).collect()
    assert out.height == 0
    assert out.columns[: len(c.BLOCK_COLUMNS)] == list(c.BLOCK_COLUMNS)
    assert "title" in out.columns


def test_all_null_typed_columns_are_accepted() -> None:
    df = pl.DataFrame(
        {
            c.QUERY_ID: [1, 1],
            c.ENTITY_ID: [None, None],
            c.CHUNK_INDEX: [None, None],
            c.TEXT: [None, None],
            c.SIMILARITY: [None, None],
        }
    )
    assert run_engine(df) == run_reference(df)


@pytest.mark.parametrize(
    "texts",
    [
        ["a" * 400_000],
        ["😀" * 100_000, "a" * 10],
        ["b" + "a" * 400_000, "a" * 400_000],
        ["😀" * 100_000, "x😀" * 100_000],
    ],
    ids=["alone_400k_ascii", "then_short_100k_emoji", "two_400k_ascii", "two_100k_emoji"],
)
def test_very_long_chunks(texts: list[str]) -> None:
    df = frame([cand(1, t, 0.9 - i / 10, i) for i, t in enumerate(texts)])
    assert_same_rows(run_engine(df), run_reference(df))


def test_huge_unicode_text() -> None:
    piece = "naïve café 東京の夜 Ωmega \u00a0ünïcödé 😀 \u2003x\n"
    big = piece * 5000
    rows = [
        cand(1, big, 0.9, 0),
        cand(1, big[-3000:] + "tail 末尾", 0.8, 1),
        cand(2, "😀" * 100_000, 0.7, 0),
    ]
    for cfg in (config(5, 0.1, 1, 5, 10**7, 10**7), config(5, 0.1, 1, 5, 1000, 10**7)):
        want = run_reference(frame(rows), cfg)
        assert_same_rows(run_engine(frame(rows), cfg), want)
        assert all(r[c.CHAR_COUNT] == len(r[c.TEXT]) for r in want)


# --- inputs and execution modes ---------------------------------------------------------

MIXED = [
    cand(10, "Intro text before. Shared overlap phrase for removal", 0.90, 0, query_id=2),
    cand(10, "Shared overlap phrase for removal and unique second.", 0.80, 1, query_id=2),
    cand(11, "another document", 0.85, 4, query_id=2, rerank_score=0.1),
    cand(None, "no entity", 0.6, None, query_id=2),
    cand(20, "first", 0.70, 0, query_id=1, entity_type="faq"),
    cand(20, "third", 0.75, 2, query_id=1, entity_type="faq"),
    cand(20, "  ", 0.75, 3, query_id=1),
    cand(12, None, 0.75, 3, query_id=1),
    cand(12, "x" * 300, 0.5, 4, query_id=3),
]


def test_eager_lazy_and_streaming_agree() -> None:
    df = frame(MIXED, title=pl.String())
    cfg = config(4, 0.2, 1, 3, 200, 100)
    want = run_reference(df, cfg)
    for data in (df, df.lazy(), df.to_arrow()):
        for engine in ("in-memory", "streaming"):
            assert_same_rows(run_engine(data, cfg, engine=engine), want)


def test_output_columns_and_order() -> None:
    df = frame(MIXED).with_columns(pl.lit("t").alias("title"))
    out = _engine(df).collect()
    assert out.columns == [*c.BLOCK_COLUMNS, "title"]
    assert out[c.CHUNK_INDEXES].dtype.is_nested()
    assert out.sort(c.QUERY_ID, c.BLOCK_RANK, maintain_order=True).equals(out)


def test_doc_id_is_an_alias_of_entity_id() -> None:
    """The engine on ``doc_id`` input equals the reference on ``entity_id`` input (the
    reference never sees ``doc_id``), and the output names the column ``entity_id``."""
    df = frame(MIXED)
    got = run_engine(df.rename({c.ENTITY_ID: c.DOC_ID}), config(5, 0.1))
    assert_same_rows(got, run_reference(df, config(5, 0.1)))
    assert {r[c.ENTITY_ID] for r in got} - {0, None} == {10, 11, 12, 20}  # 0/None: no entity
    assert all(c.DOC_ID not in r for r in got)


def _split_store(rows: list[dict[str, Any]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    df = frame(rows)
    store = (
        df.select(c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT)
        .drop_nulls([c.ENTITY_ID, c.CHUNK_INDEX])
        .unique([c.ENTITY_ID, c.CHUNK_INDEX], keep="first", maintain_order=True)
    )
    return df.drop(c.TEXT), store


def test_chunk_store_equals_prejoined_text() -> None:
    """Late materialization changes nothing: the store's text joined up front gives the
    same blocks (MIXED's candidate without an entity finds no text: "empty" lets it be
    empty, as the pre-join does)."""
    results, store = _split_store(MIXED)
    extra = pl.DataFrame({c.ENTITY_ID: [99], c.CHUNK_INDEX: [0], c.TEXT: ["never asked for"]})
    store = pl.concat([store, extra])
    cfg = config(4, 0.2, 1, 3, 200, 100, missing_text="empty")
    want = run_reference(with_chunk_text(results, store), cfg)
    assert_same_rows(run_reference(results, cfg, chunks=store), want)
    assert_same_rows(run_engine(results, cfg, chunks=store), want)
    assert_same_rows(run_engine(results.lazy(), cfg, chunks=store.lazy()), want)


@pytest.mark.parametrize("mode", ["empty", "drop"])
def test_chunk_store_with_doc_id_and_missing_chunks(mode: str) -> None:
    results, store = _split_store(MIXED)
    store = store.filter(pl.col(c.CHUNK_INDEX) != 1).rename({c.ENTITY_ID: c.DOC_ID})
    results = results.rename({c.ENTITY_ID: c.DOC_ID})
    cfg = config(5, 0.1, missing_text=mode)
    assert_same_rows(
        run_engine(results, cfg, chunks=store), run_reference(results, cfg, chunks=store)
    )


@pytest.mark.parametrize("ids", [pl.Int64, pl.String])
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_chunk_store_first_row_wins_where_a_key_repeats(ids: type[pl.DataType], order: str) -> None:
    """A repeated (entity, chunk index) in the store: its first row gives the text,
    whether the store is sorted by key (repeats side by side) or not. Keys at the ends
    of the integer range and null keys (which match nothing, and sort first) included."""
    big, small = 2**63 - 1, -(2**63)
    store = pl.DataFrame(
        {
            c.ENTITY_ID: [None, 7, small, small, 7, 7, 7, big, big],
            c.CHUNK_INDEX: [0, None, big, big, 0, 1, 1, small, 0],
            c.TEXT: ["n", "m", "s first", "s second", "a", "b first", "b second", "x", "y"],
        },
        schema={c.ENTITY_ID: pl.Int64, c.CHUNK_INDEX: pl.Int64, c.TEXT: pl.String},
    )
    first = "first"
    if order == "shuffled":  # repeats apart, each "second" row before its "first"
        store, first = store[[6, 1, 3, 8, 2, 5, 0, 4, 7]], "second"
    results = pl.DataFrame(
        {
            c.QUERY_ID: [1, 1, 1, 2, 2],
            c.ENTITY_ID: [small, 7, big, 7, big],
            c.CHUNK_INDEX: [big, 1, small, 0, 0],
            c.SIMILARITY: [0.9, 0.8, 0.7, 0.6, 0.5],
        }
    )
    results, store = (f.with_columns(pl.col(c.ENTITY_ID).cast(ids)) for f in (results, store))
    if order == "sorted" and ids == pl.String:  # sorted as strings (null keys dropped)
        store = store.drop_nulls().sort(c.ENTITY_ID, c.CHUNK_INDEX, maintain_order=True)
    cfg = config(5, 0.0, 0, 5, 10_000, 10_000)
    got = run_engine(results, cfg, chunks=store)
    assert_same_rows(got, run_reference(results, cfg, chunks=store))
    texts = sorted(row[c.TEXT] for row in got)
    assert texts == sorted(["a", "x", "y", f"b {first}", f"s {first}"])


# --- overlap="offsets" (opt-in, SPEC 3: exact by start_char/end_char) --------------------


def _windows(content: str, width: int, step: int) -> list[tuple[int, int]]:
    spans, start = [], 0
    while True:
        spans.append((start, min(start + width, len(content))))
        if start + width >= len(content):
            return spans
        start += step


def test_offsets_mode_rebuilds_the_document_exactly() -> None:
    content = "The quick  brown fox\n\njumps over the lazy dog. Ünïcode 東京 \t end. " * 6
    rows = [
        cand(1, content[s:e], 0.9, i, start_char=s, end_char=e)
        for i, (s, e) in enumerate(_windows(content, 60, 40))
    ]
    cfg = PostprocessConfig(
        overlap="offsets", top_k=100, max_merged_block_characters=10**6, max_characters=10**6
    )
    (block,) = run_engine(frame(rows), cfg)
    assert block[c.TEXT] == content


# --- the walk's two passes -------------------------------------------------------------


def test_walk_goes_past_the_first_top_k_candidates_when_one_is_a_repeat(run: Runner) -> None:
    """The engine first walks each query's first few candidates (first_pass_width); a
    query they do not fill (here repeats among them) is walked again over its whole
    reach. Query 2 is filled by its first two; query 3 is not, but has nothing more."""
    assert first_pass_width(2) <= 4  # query 1's fifth candidate is past the first pass
    rows = [
        cand(1, "shared words here", 0.9, 0, query_id=1),
        cand(1, "shared words", 0.8, 1, query_id=1),  # repeats of the first
        cand(1, "words here", 0.8, 2, query_id=1),
        cand(1, "shared", 0.8, 3, query_id=1),
        cand(2, "another document", 0.7, 0, query_id=1),  # only reached by the second pass
        cand(1, "alpha", 0.9, 0, query_id=2),
        cand(2, "beta", 0.8, 0, query_id=2),
        cand(3, "gamma", 0.7, 0, query_id=2),  # beyond top_k: never selected
        cand(1, "solo text", 0.9, 0, query_id=3),
        cand(1, "solo", 0.8, 1, query_id=3),  # a repeat, and the query ends
    ]
    cfg = config(2, 0.0, 0, 10, 10_000, 10_000)
    out = run(frame(rows), cfg)
    assert_same_rows(run_engine(frame(rows), cfg), run_reference(frame(rows), cfg))
    picked = {(r[c.QUERY_ID], r[c.TEXT]) for r in out}
    assert picked == {
        (1, "shared words here"),
        (1, "another document"),
        (2, "alpha"),
        (2, "beta"),
        (3, "solo text"),
    }
