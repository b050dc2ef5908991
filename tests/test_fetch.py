"""Tests for ragframe.fetch: SPEC section 2 reference cases, strategy boundaries, sizes,
blank queries, order, missing documents, unicode lengths, engines, engine == reference,
Cranfield, CLI."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe
from ragframe import (
    ConfigError,
    FetchConfig,
    HighlightConfig,
    PostprocessConfig,
    SchemaError,
    fetch,
    missing_documents,
)
from ragframe import schema as c
from ragframe.cli import main
from ragframe.reference.fetch import parse_length, reference_fetch
from tests.conftest import CRANFIELD
from tests.longtext import documents, queries

SMALL = FetchConfig(fulltext_threshold=30, fragment_size=18)


def _text(length: int, word: str = "lift") -> str:
    """Exactly ``length`` characters holding ``word`` near the middle."""
    head = "x " * (length // 4)
    text = head + word + " " + "x " * length
    return text[:length]


def _requests(rows: list[tuple[Any, str | None, Any]], rank: bool = False) -> pl.DataFrame:
    frame = pl.DataFrame(
        rows, schema={"query_id": pl.Int64, "query": pl.String, "doc_id": pl.Int64}, orient="row"
    )
    return frame.with_columns(pl.int_range(1, pl.len() + 1).alias("rank")) if rank else frame


def _docs(contents: dict[int, str | None], **extra: list[Any]) -> pl.DataFrame:
    return pl.DataFrame(
        {"doc_id": list(contents), "content": list(contents.values()), **extra},
        schema_overrides={"doc_id": pl.Int64, "content": pl.String},
    )


def _sizes(values: dict[int, Any], dtype: Any = None) -> pl.DataFrame:
    return pl.DataFrame(
        {"doc_id": list(values), "content_length": pl.Series(list(values.values()), dtype=dtype)}
    )


def _strategies(out: pl.LazyFrame) -> list[str]:
    return out.collect()["strategy"].to_list()


# --- config -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"fulltext_threshold": -1},
            "fulltext_threshold must be in [0, 4611686018427387904], got -1",
        ),
        (
            {"fulltext_threshold": "3000"},
            "fulltext_threshold must be an integer in [0, 4611686018427387904], got '3000'",
        ),
        ({"fragment_size": 10}, "fragment_size must be in [18, 4611686018427387904], got 10"),
        ({"scoring": "bm25"}, "scoring must be 'matches' or 'terms', got 'bm25'"),
    ],
    ids=["threshold", "threshold-str", "fragment", "scoring"],
)
def test_config_rejects_bad_values(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        FetchConfig(**kwargs)


def test_config_carries_the_highlighter_settings() -> None:
    cfg = FetchConfig(fragment_size=200, highlighter="unified", order="offset", scoring="terms")
    hc = cfg.highlight_config
    assert type(hc) is HighlightConfig
    assert hc == HighlightConfig(
        fragment_size=200, highlighter="unified", order="offset", scoring="terms"
    )
    assert FetchConfig().fulltext_threshold == 3000


# --- SPEC reference cases -----------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "strategy"),
    [(2999, "full"), (3000, "full"), (3001, "highlight"), (None, "full")],
    ids=["2999", "3000", "3001", "unknown"],
)
def test_threshold_boundaries(length: int | None, strategy: str) -> None:
    docs = _docs({1: _text(5000)})
    sizes = _sizes({1: length}, dtype=pl.Int64)
    assert _strategies(fetch(_requests([(1, "lift", 1)]), docs, sizes=sizes)) == [strategy]


def test_blank_query_with_huge_length_is_full() -> None:
    docs = _docs({1: _text(5000)})
    sizes = _sizes({1: 999999})
    reqs = _requests([(1, "", 1), (2, "   ", 1), (3, None, 1), (4, "\t\n\u3000", 1)])
    out = fetch(reqs, docs, sizes=sizes).collect()
    assert out["strategy"].to_list() == ["full"] * 4
    assert out["content"].to_list() == [_text(5000)] * 4


def test_small_big_small_keeps_order_and_highlights_only_big() -> None:
    docs = _docs({1: _text(100), 2: _text(99999), 3: _text(200)})
    reqs = _requests([(1, "lift", 1), (1, "lift", 2), (1, "lift", 3)])
    sizes = _sizes({1: 100, 2: 99999, 3: 200})
    out = fetch(reqs, docs, sizes=sizes).collect()
    assert out["doc_id"].to_list() == [1, 2, 3]
    assert out["strategy"].to_list() == ["full", "highlight", "full"]
    assert out["content"][0] == _text(100) and out["content"][2] == _text(200)
    assert "lift" in out["content"][1] and len(out["content"][1]) < 1100


def test_no_passage_falls_back_to_exactly_threshold_characters() -> None:
    docs = _docs({1: _text(99999, word="wing")})
    out = fetch(_requests([(1, "lift", 1)]), docs, sizes=_sizes({1: 99999})).collect()
    assert out["strategy"].to_list() == ["truncated_fallback"]
    assert out["content"][0] == _text(99999, word="wing")[:3000]
    assert len(out["content"][0]) == 3000


def test_query_without_word_tokens_falls_back() -> None:
    docs = _docs({1: _text(4000)})
    assert _strategies(fetch(_requests([(1, "?!", 1)]), docs)) == ["truncated_fallback"]


# --- sizes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "strategy"),
    [
        ("3001", "highlight"),
        (" 3001 ", "highlight"),
        ("3.001e3", "highlight"),
        ("+3001", "highlight"),
        ("3000", "full"),
        ("abc", "full"),
        ("", "full"),
        ("1_000_000", "full"),
        ("0x10000", "full"),
        ("nan", "full"),
        ("inf", "full"),
        ("\uff13\uff10\uff10\uff11", "full"),  # fullwidth digits
        (None, "full"),
    ],
)
def test_sizes_as_numeric_strings_and_garbage(value: str | None, strategy: str) -> None:
    docs = _docs({1: _text(5000)})
    sizes = _sizes({1: value}, dtype=pl.String)
    assert _strategies(fetch(_requests([(1, "lift", 1)]), docs, sizes=sizes)) == [strategy]
    assert (parse_length(value) is not None and parse_length(value) > 3000) == (
        strategy == "highlight"
    )  # type: ignore[operator]


def test_sizes_as_floats_and_documents_absent_from_sizes() -> None:
    docs = _docs({1: _text(5000), 2: _text(5000)})
    sizes = _sizes({1: 3000.5}, dtype=pl.Float64)
    reqs = _requests([(1, "lift", 1), (1, "lift", 2)])
    assert _strategies(fetch(reqs, docs, sizes=sizes)) == ["highlight", "full"]


def test_sizes_of_a_wrong_type_are_rejected() -> None:
    sizes = _sizes({1: True}, dtype=pl.Boolean)
    with pytest.raises(
        SchemaError,
        match="sizes: column 'content_length' has type Boolean; expected int or float or string",
    ):
        fetch(_requests([(1, "lift", 1)]), _docs({1: "x"}), sizes=sizes)


def test_lengths_from_content_count_characters_not_bytes() -> None:
    big, exact = "é" * 2000 + " lift " + "é" * 995, "é" * 2997 + " é" + "é"
    assert len(big) == 3001 and len(exact) == 3000
    docs = _docs({1: big, 2: exact})
    out = fetch(_requests([(1, "lift", 1), (1, "lift", 2)]), docs).collect()
    assert out["strategy"].to_list() == ["highlight", "full"]


# --- order, duplicates, missing documents -------------------------------------------


def test_order_is_kept_per_query_with_duplicates_and_many_queries() -> None:
    docs = _docs({i: _text(10 + i) for i in range(1, 6)})
    rows = [(q, "lift", d) for q in (30, 10, 20) for d in (5, 1, 5, 3)]
    out = fetch(_requests(rows), docs).collect()
    assert out.select("query_id", "doc_id").rows() == [(q, d) for q, _, d in rows]
    assert out["rank"].to_list() == [1, 2, 3, 4] * 3


def test_rank_column_orders_each_query() -> None:
    reqs = pl.DataFrame(
        {
            "query_id": [1, 2, 1, 1],
            "query": ["a"] * 4,
            "doc_id": [1, 2, 3, 1],
            "rank": [3, 1, 1, None],
        }
    )
    out = fetch(reqs, _docs({1: "a", 2: "b", 3: "c"})).collect()
    assert out.select("query_id", "doc_id", "rank").rows() == [
        (1, 3, 1),
        (1, 1, 3),
        (1, 1, None),
        (2, 2, 1),
    ]


def test_every_request_has_a_row_missing_documents_too() -> None:
    reqs = _requests([(1, "a", 1), (1, "a", 7), (2, "a", None), (2, "a", 1)])
    out = fetch(reqs, _docs({1: "a"}, title=["t"])).collect()
    assert out.select("query_id", "doc_id", "rank", "content", "strategy", "title").rows() == [
        (1, 1, 1, "a", "full", "t"),
        (1, 7, 2, None, "missing", None),
        (2, None, 1, None, "missing", None),
        (2, 1, 2, "a", "full", "t"),
    ]
    missing = missing_documents(reqs, _docs({1: "a"})).collect()
    assert missing.rows() == [(1, 7, 2), (2, None, 1)]
    assert c.STRATEGIES == ("full", "highlight", "truncated_fallback", "missing")


def test_a_missing_document_keeps_its_place_among_highlights() -> None:
    docs = _docs({1: _text(100), 2: _text(99999)})
    reqs = _requests([(1, "lift", 2), (1, "lift", 5), (1, "lift", 1)])
    out = fetch(reqs, docs).collect()
    assert out["strategy"].to_list() == ["highlight", "missing", "full"]
    assert out["content"].is_null().to_list() == [False, True, False]


def test_entity_id_is_an_alias_and_request_columns_pass_through() -> None:
    reqs = pl.DataFrame(
        {
            "query_id": [1, 1],
            "query": ["lift", "lift"],
            "entity_id": [2, 1],
            "block_rank": [0, 1],
            "ranking_score": [0.9, 0.5],
            "content": ["stale", "stale"],  # replaced by fetch's own column
        }
    )
    docs = _docs({1: "a", 2: "b"}, title=["t1", "t2"], block_rank=[7, 7])
    out = fetch(reqs, docs).collect()
    assert out.columns == [
        "query_id", "entity_id", "rank", "content", "strategy", "block_rank", "ranking_score",
        "title",
    ]  # fmt: skip
    assert out.row(0) == (1, 2, 1, "b", "full", 0, 0.9, "t2")
    assert missing_documents(reqs, docs).collect().columns == ["query_id", "entity_id", "rank"]
    assert out.equals(reference_fetch(reqs, docs), null_equal=True)


def test_document_fields_pass_through_except_clashing_names() -> None:
    docs = _docs({1: "a", 2: "b"}, title=["t1", "t2"], strategy=["x", "y"], url=["u1", "u2"])
    out = fetch(_requests([(1, "a", 2)]), docs).collect()
    assert out.columns == ["query_id", "doc_id", "rank", "content", "strategy", "title", "url"]
    assert out.row(0) == (1, 2, 1, "b", "full", "t2", "u2")


def test_null_content_is_empty_text() -> None:
    out = fetch(_requests([(1, "a", 1)]), _docs({1: None})).collect()
    assert out.select("content", "strategy").row(0) == ("", "full")


def test_string_doc_ids() -> None:
    reqs = pl.DataFrame({"query_id": ["q"], "query": ["lift"], "doc_id": ["d"]})
    docs = pl.DataFrame({"doc_id": ["d"], "content": [_text(4000)]})
    assert _strategies(fetch(reqs, docs)) == ["highlight"]


def test_missing_columns_are_named() -> None:
    with pytest.raises(
        SchemaError,
        match=re.escape(
            "requests: missing column 'query_id'; found: ['query_ids', 'query', 'doc_id']; "
            "did you mean 'query_ids'?"
        ),
    ):
        fetch(pl.DataFrame({"query_ids": [1], "query": ["a"], "doc_id": [1]}), _docs({1: "a"}))
    with pytest.raises(SchemaError, match=re.escape("sizes: missing column 'content_length'")):
        fetch(
            _requests([(1, "a", 1)]),
            _docs({1: "a"}),
            sizes=pl.DataFrame({"doc_id": [1], "length": [3]}),
        )


# --- engines and reference ----------------------------------------------------------


def _mixed(n_pairs: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    small = documents(14, 200, 2900, seed=seed)
    large = documents(6, 3500, 9000, seed=seed + 1).with_columns(pl.col("doc_id") + 100)
    docs = pl.concat([small, large])
    return queries(docs, n_pairs, 4, seed=seed), docs


@pytest.mark.parametrize("highlighter", ["fvh", "unified"])
def test_eager_lazy_streaming_agree_and_equal_reference(highlighter: str) -> None:
    reqs, docs = _mixed(60, seed=5)
    cfg = FetchConfig(highlighter=highlighter, fragment_size=300)  # type: ignore[arg-type]
    sizes = docs.select(
        "doc_id", pl.col("content").str.len_chars().cast(pl.String).alias("content_length")
    )
    lazy = fetch(reqs.lazy(), docs.lazy(), cfg, sizes=sizes.lazy())
    eager = fetch(reqs, docs, cfg, sizes=sizes).collect()
    assert eager.equals(lazy.collect())
    assert eager.equals(lazy.collect(engine="streaming"))
    assert eager.equals(lazy.collect(engine="in-memory"))
    assert eager.equals(
        fetch(reqs.to_arrow(), docs.to_arrow(), cfg, sizes=sizes.to_arrow()).collect()
    )
    assert eager.equals(reference_fetch(reqs, docs, cfg, sizes=sizes))
    assert set(eager["strategy"]) == {"full", "highlight", "truncated_fallback"}  # all reached


SAMPLE_WORDS = [
    "lift", "Lift", "LIFT'S", "wing", "東", "é", "😀", " ", "  ", "\n", ". ", "x", "'", ".", ",",
    "3", "3.5", "1,000", "_", "\u0301", "İ", "i", "\u03a3", "\u03c3", "カタカナ", "e.g.",
]  # fmt: skip
QUERIES = ["", " ", "lift", "wing 東", "zzz", "?", "lift's", "3", "İ \u03c3", "e.g", "カタカナ 3.5"]


@st.composite
def _fetch_cases(
    draw: st.DrawFn,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None, FetchConfig]:
    n_docs = draw(st.integers(1, 4))
    text = st.lists(st.sampled_from(SAMPLE_WORDS), max_size=40).map("".join)
    contents = {i: draw(st.one_of(st.none(), text)) for i in range(n_docs)}
    query = st.one_of(st.none(), st.sampled_from(QUERIES))
    rows = draw(
        st.lists(
            st.tuples(st.integers(0, 3), query, st.integers(0, n_docs)), min_size=1, max_size=10
        )
    )
    length = st.one_of(
        st.none(), st.integers(0, 60).map(str), st.sampled_from(["x", " 40 ", "1e1"])
    )
    sizes = None
    if draw(st.booleans()):
        sizes = _sizes({i: draw(length) for i in range(n_docs + 1)}, dtype=pl.String)
    cfg = FetchConfig(
        fulltext_threshold=draw(st.integers(0, 40)),
        fragment_size=draw(st.sampled_from([18, 30])),
        number_of_fragments=draw(st.integers(1, 3)),
        highlighter=draw(st.sampled_from(["fvh", "unified"])),
    )
    requests = _requests(rows).with_columns(pl.int_range(pl.len()).alias("block_rank"))
    if draw(st.booleans()):  # postprocess's name for the document column
        requests = requests.rename({"doc_id": "entity_id"})
    return requests, _docs(contents), sizes, cfg


@settings(max_examples=120, deadline=None)
@given(_fetch_cases())
def test_engine_equals_reference(
    case: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame | None, FetchConfig],
) -> None:
    reqs, docs, sizes, cfg = case
    engine = fetch(reqs, docs, cfg, sizes=sizes).collect()
    reference = reference_fetch(reqs, docs, cfg, sizes=sizes)
    assert engine.columns == reference.columns
    assert engine.rows() == reference.rows()
    assert engine.height == reqs.height


@pytest.mark.skipif(not CRANFIELD.is_dir(), reason="Cranfield data not available")
def test_cranfield_top5_engine_equals_reference() -> None:
    docs = pl.read_parquet(CRANFIELD / "docs.parquet")
    queries_ = pl.read_parquet(CRANFIELD / "queries.parquet").rename({"text": "query"})
    results = pl.read_parquet(CRANFIELD / "results_minilm.parquet")
    top = results.unique(["query_id", "doc_id"], keep="first", maintain_order=True)
    top = top.filter(pl.int_range(pl.len()).over("query_id") < 5)
    reqs = top.join(queries_.select("query_id", "query"), on="query_id").select(
        "query_id", "query", "doc_id", "rank"
    )
    cfg = FetchConfig(fulltext_threshold=800, fragment_size=300, number_of_fragments=2)
    engine = fetch(reqs, docs, cfg).collect()
    assert engine.height == reqs.height
    assert engine.equals(reference_fetch(reqs, docs, cfg))
    counts = dict(engine["strategy"].value_counts().rows())
    assert counts.get("highlight", 0) > 100 and counts.get("full", 0) > 100
    default = (
        fetch(reqs, docs)
        .collect()
        .join(docs.select("doc_id", "content"), on="doc_id", suffix="_doc")
    )
    long = default["content_doc"].str.len_chars() > 3000
    assert (default["strategy"] == "full").to_list() == (~long).to_list()


SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def test_postprocess_output_chains_into_fetch_on_cranfield() -> None:
    """Real chain: retrieved chunks -> postprocess blocks -> fetch, no renames by hand."""
    folder = SHARED / "data" / "cranfield"
    if not (folder / "results_minilm.parquet").is_file():
        pytest.skip(f"Cranfield fixture not found at {folder}")
    results = pl.read_parquet(folder / "results_minilm.parquet").filter(pl.col("query_id") <= 40)
    chunks = pl.read_parquet(folder / "chunks.parquet").rename({"doc_id": "entity_id"})
    docs = pl.read_parquet(folder / "docs.parquet")
    queries_ = pl.read_parquet(folder / "queries.parquet").select(
        "query_id", pl.col("text").alias("query")
    )
    cfg = PostprocessConfig(top_k=8, max_blocks=4, max_characters=4000)
    blocks = ragframe.postprocess(results.drop("rank"), cfg, chunks=chunks)
    requests = blocks.join(queries_.lazy(), on="query_id", maintain_order="left")
    out = fetch(requests, docs, FetchConfig(fulltext_threshold=500)).collect()
    block_frame = blocks.collect()
    assert out.height == block_frame.height > 100
    assert out.columns[:5] == ["query_id", "entity_id", "rank", "content", "strategy"]
    assert {"block_rank", "ranking_score", "text", "title"} <= set(out.columns)
    # each query's blocks in block_rank order, every block accounted for
    assert (
        out.select("query_id", "entity_id", "block_rank").rows()
        == block_frame.sort("query_id", "block_rank", maintain_order=True)
        .select("query_id", "entity_id", "block_rank")
        .rows()
    )
    assert set(out["strategy"]) <= {"full", "highlight", "truncated_fallback"}
    assert (out["strategy"] == "highlight").sum() > 10
    reference = reference_fetch(requests.collect(), docs, FetchConfig(fulltext_threshold=500))
    assert out.equals(reference)


# --- CLI ----------------------------------------------------------------------------


def test_cli_writes_output_and_prints_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reqs = _requests([(1, "lift", 1), (1, "lift", 2), (1, "wing", 3), (2, "lift", 9)])
    docs = _docs({1: _text(50), 2: _text(4000), 3: _text(5000)}, title=["a", "b", "c"])
    reqs.write_csv(tmp_path / "requests.csv")
    docs.write_parquet(tmp_path / "docs.parquet")
    out = tmp_path / "out" / "fetched.parquet"
    code = main(
        ["fetch", str(tmp_path / "requests.csv"), str(tmp_path / "docs.parquet"), "-o", str(out)]
    )
    captured = capsys.readouterr()
    assert code == 0
    result = pl.read_parquet(out)
    assert result["strategy"].to_list() == ["full", "highlight", "truncated_fallback", "missing"]
    assert re.search(r"full\s+1\n", captured.out) and re.search(
        r"truncated_fallback\s+1\n", captured.out
    )
    assert re.search(r"missing_documents\s+1\n", captured.out) and re.search(
        r"missing_ids\s+9\n", captured.out
    )
    assert "warning: 1 requested documents not in" in captured.err


def test_cli_sizes_and_options(tmp_path: Path) -> None:
    _requests([(1, "lift", 1)]).write_ndjson(tmp_path / "r.jsonl")
    _docs({1: _text(400)}).write_ipc(tmp_path / "d.arrow")
    _sizes({1: "401"}).write_csv(tmp_path / "s.csv")
    out = tmp_path / "o.csv"
    args = [
        "fetch",
        str(tmp_path / "r.jsonl"),
        str(tmp_path / "d.arrow"),
        "--sizes",
        str(tmp_path / "s.csv"),
    ]
    assert (
        main(
            [
                *args,
                "-o",
                str(out),
                "--threshold",
                "400",
                "--fragment-size",
                "40",
                "--highlighter",
                "unified",
            ]
        )
        == 0
    )
    assert pl.read_csv(out)["strategy"].to_list() == ["highlight"]


@pytest.mark.parametrize(
    ("scoring", "expected"),
    [([], "lift"), (["--scoring", "terms"], "lift wing"), (["--scoring", "matches"], "lift")],
    ids=["default", "terms", "matches"],
)
def test_cli_scoring(tmp_path: Path, scoring: list[str], expected: str) -> None:
    # one fragment: three "lift" (matches, the default, wins) or "lift" and "wing" (terms)
    content = "lift lift lift" + " " * 60 + "lift wing" + " " * 60
    _requests([(1, "lift wing", 1)]).write_csv(tmp_path / "r.csv")
    _docs({1: content}).write_parquet(tmp_path / "d.parquet")
    out = tmp_path / "o.parquet"
    options = ["--threshold", "10", "--fragment-size", "20", "--fragments", "1", *scoring]
    argv = ["fetch", str(tmp_path / "r.csv"), str(tmp_path / "d.parquet"), "-o", str(out)]
    assert main([*argv, *options]) == 0
    words = pl.read_parquet(out)["content"].str.extract_all(r"\w+").list.unique(maintain_order=True)
    assert " ".join(words[0]) == expected


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--threshold", "-5"],
            "error: fulltext_threshold must be in [0, 4611686018427387904], got -5\n",
        ),
        (
            ["--fragments", "0"],
            "error: number_of_fragments must be in [1, 4611686018427387904], got 0\n",
        ),
    ],
)
def test_cli_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    _requests([(1, "a", 1)]).write_csv(tmp_path / "r.csv")
    _docs({1: "a"}).write_csv(tmp_path / "d.csv")
    assert (
        main(
            [
                "fetch",
                str(tmp_path / "r.csv"),
                str(tmp_path / "d.csv"),
                "-o",
                str(tmp_path / "o.csv"),
                *extra,
            ]
        )
        == 2
    )
    assert capsys.readouterr().err == message


def test_cli_reports_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pl.DataFrame({"query_id": [1], "query": ["a"], "doc": [1]}).write_csv(tmp_path / "r.csv")
    _docs({1: "a"}).write_csv(tmp_path / "d.csv")
    code = main(
        ["fetch", str(tmp_path / "r.csv"), str(tmp_path / "d.csv"), "-o", str(tmp_path / "o.csv")]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "error: requests: missing column 'doc_id'; found: ['query_id', 'query', 'doc']; "
        "did you mean 'doc'?\n"
    )
    assert not (tmp_path / "o.csv").exists()
    code = main(
        [
            "fetch",
            str(tmp_path / "nope.csv"),
            str(tmp_path / "d.csv"),
            "-o",
            str(tmp_path / "o.txt"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith("error: input file not found: ")
