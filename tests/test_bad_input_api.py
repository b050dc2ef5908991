"""Bad input through the Python API (issue 12, item 16, the API half).

Each case calls one public function (``postprocess``, ``fetch``, ``highlight``,
``windows``, ``assemble``, ``chunk``, the configs) with one bad input and checks:

* the exception's exact class;
* its message: one line, no Polars internals, and its start as expected (naming the
  user's value or column and what was expected);
* every input query is accounted for: an error rejects the whole call (no partial
  result), and a data error names the first offending ``query_id`` and how many rows
  and queries are affected; a case that is accepted returns every input query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe import ConfigError, DataError, RagframeError, SchemaError

BIG = 20_000_000_000_000_000_000
MAX = 4611686018427387904  # 2**62

CANDS = pl.DataFrame(
    {
        "query_id": [7, 7, 8, 9],
        "entity_id": [1, 1, 2, 3],
        "chunk_index": [0, 1, 0, 0],
        "text": ["alpha beta", "gamma delta", "epsilon", "zeta"],
        "similarity": [0.9, 0.8, 0.7, 0.6],
    }
)
QUERIES = {7, 8, 9}
DOCS = pl.DataFrame({"doc_id": [1, 2], "content": ["wings lift the plane " * 20, "short"]})
REQS = pl.DataFrame({"query_id": [7, 8], "query": ["lift", "wings"], "doc_id": [1, 2]})
SECTIONS = pl.DataFrame({"doc_id": [1, 1], "section_index": [0, 1], "text": ["abc", "defg"]})
RAW = pl.DataFrame({"doc_id": [1, 2], "content": ["abcdefghij", "xyz"]})

POLARS_INTERNALS = re.compile(
    r"This error occurred|Resolved plan|python_udf|conversion from|Traceback|"
    r"polars\.exceptions|ComputeError|InvalidOperationError|DuplicateError|"
    r"OverflowError|numba|object has no attribute"
)


def _cands(**columns: Any) -> pl.DataFrame:
    """:data:`CANDS` with some columns replaced (a value list or a Series)."""
    return CANDS.with_columns(
        [v if isinstance(v, pl.Series) else pl.Series(k, v) for k, v in columns.items()]
    )


def _post(data: Any, config: Any = None, **kw: Any) -> Callable[[], Any]:
    return lambda: rf.postprocess(data, config, **kw)


@dataclass(frozen=True)
class Case:
    call: Callable[[], Any]
    error: type[RagframeError]
    message: str
    """The message's start (``re.escape``-d), or, with ``regex``, a pattern matched at
    its start."""
    regex: bool = False
    first_query: Any = None
    """The first offending query id the message must name (data errors)."""


def _config_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    post = {
        "top_k": 1,
        "max_chunk_gap": 0,
        "max_blocks": 1,
        "max_characters": 1,
        "max_merged_block_characters": 1,
    }
    for name, low in post.items():
        for label, value in (("huge", BIG), ("just_over", MAX + 1), ("below", low - 1)):
            cases[f"postprocess-{name}-{label}"] = Case(
                _post(CANDS, {name: value}),
                ConfigError,
                f"{name} must be in [{low}, {MAX}], got {value}",
            )
        cases[f"postprocess-{name}-float"] = Case(
            lambda name=name: rf.PostprocessConfig(**{name: 2e19}),
            ConfigError,
            f"{name} must be an integer in [{low}, {MAX}], got 2e+19",
        )
    fetch = {
        "fulltext_threshold": 0,
        "fragment_size": 18,
        "number_of_fragments": 1,
        "boundary_max_scan": 0,
        "max_matches": 1,
    }
    for name, low in fetch.items():
        cases[f"fetch-{name}-huge"] = Case(
            lambda name=name: rf.fetch(REQS, DOCS, {name: BIG}),
            ConfigError,
            f"{name} must be in [{low}, {MAX}], got {BIG}",
        )
        cases[f"fetch-{name}-bool"] = Case(
            lambda name=name: rf.FetchConfig(**{name: True}),
            ConfigError,
            f"{name} must be an integer in [{low}, {MAX}], got True",
        )
    return cases


CASES: dict[str, Case] = {
    **_config_cases(),
    # --- other config problems ---------------------------------------------------------
    "min_similarity-numpy-nan": Case(
        lambda: rf.PostprocessConfig(min_similarity=np.float64(math.nan)),
        ConfigError,
        "min_similarity must be in [0, 1], got nan",
    ),
    "top_k-numpy-bool": Case(
        lambda: rf.PostprocessConfig(top_k=np.bool_(True)),
        ConfigError,
        f"top_k must be an integer in [1, {MAX}], got True",
    ),
    "postprocess-dict-unknown-key": Case(
        _post(CANDS, {"topk": 3}),
        ConfigError,
        "PostprocessConfig has no field 'topk'; fields: ['top_k',",
    ),
    "postprocess-config-list": Case(
        _post(CANDS, [3]),
        ConfigError,
        "config must be a PostprocessConfig or a mapping of its fields, got list",
    ),
    "postprocess-config-of-another-stage": Case(
        _post(CANDS, rf.FetchConfig()),
        ConfigError,
        "config must be a PostprocessConfig or a mapping of its fields, got FetchConfig",
    ),
    "fetch-dict-unknown-key": Case(
        lambda: rf.fetch(REQS, DOCS, {"threshold": 5}),
        ConfigError,
        "FetchConfig has no field 'threshold'",
    ),
    "highlight-dict-fetch-only-key": Case(
        lambda: rf.highlight(REQS, DOCS, {"fulltext_threshold": 5}),
        ConfigError,
        "HighlightConfig has no field 'fulltext_threshold'",
    ),
    "window-huge": Case(
        lambda: rf.windows(SECTIONS, rf.WindowConfig(window_chars=BIG)),
        ConfigError,
        f"invalid window: window_chars={BIG}, overlap_chars=0; expected 1 <= window_chars <= {MAX}",
    ),
    "chunk-window-2e19-float": Case(
        lambda: rf.chunk(RAW, {"window_chars": 2e19}),
        ConfigError,
        "invalid window: window_chars=2e+19, overlap_chars=0; expected integers",
    ),
    "chunk-dict-missing-window": Case(
        lambda: rf.chunk(RAW, {"overlap_chars": 1}),
        ConfigError,
        "WindowConfig needs ['window_chars']",
    ),
    "assemble-dict-misspelt": Case(
        lambda: rf.assemble(SECTIONS, {"window": 4}),
        ConfigError,
        "WindowConfig has no field 'window'; fields: ['window_chars', 'overlap_chars']; "
        "did you mean 'window_chars'?",
    ),
    # --- columns: missing (synonyms), mistyped, reserved --------------------------------
    "postprocess-score-for-similarity": Case(
        _post(CANDS.rename({"similarity": "score"})),
        SchemaError,
        "candidates: missing column 'similarity'; found: ['query_id', 'entity_id', "
        "'chunk_index', 'text', 'score']; did you mean 'score'?",
    ),
    "postprocess-cosine-for-similarity": Case(
        _post(CANDS.rename({"similarity": "cosine"})),
        SchemaError,
        r"candidates: missing column 'similarity'; found: \[.*\]; did you mean 'cosine'\?$",
        regex=True,
    ),
    "postprocess-qid-for-query_id": Case(
        _post(CANDS.rename({"query_id": "qid"})),
        SchemaError,
        r"candidates: missing column 'query_id'; found: \[.*\]; did you mean 'qid'\?$",
        regex=True,
    ),
    "postprocess-id-for-query_id": Case(
        _post(CANDS.rename({"query_id": "id"})),
        SchemaError,
        r"candidates: missing column 'query_id'; .*did you mean 'id'\?$",
        regex=True,
    ),
    "postprocess-docid-for-entity_id": Case(
        _post(CANDS.rename({"entity_id": "DocID"})),
        SchemaError,
        r"candidates: missing column 'entity_id' \(or 'doc_id'\); .*did you mean 'DocID'\?$",
        regex=True,
    ),
    "postprocess-document_id-for-entity_id": Case(
        _post(CANDS.rename({"entity_id": "document_id"})),
        SchemaError,
        r"candidates: missing column 'entity_id' \(or 'doc_id'\); .*'document_id'\?$",
        regex=True,
    ),
    "postprocess-chunk_id-for-chunk_index": Case(
        _post(CANDS.rename({"chunk_index": "chunk_id"})),
        SchemaError,
        r"candidates: missing column 'chunk_index'; .*did you mean 'chunk_id'\?$",
        regex=True,
    ),
    "postprocess-position-for-chunk_index": Case(
        _post(CANDS.rename({"chunk_index": "position"})),
        SchemaError,
        r"candidates: missing column 'chunk_index'; .*did you mean 'position'\?$",
        regex=True,
    ),
    "postprocess-content-for-text": Case(
        _post(CANDS.rename({"text": "content"})),
        SchemaError,
        r"candidates: missing column 'text'; .*did you mean 'content'\?$",
        regex=True,
    ),
    "postprocess-passage-for-text": Case(
        _post(CANDS.rename({"text": "passage"})),
        SchemaError,
        r"candidates: missing column 'text'; .*did you mean 'passage'\?$",
        regex=True,
    ),
    "postprocess-doc_id-float": Case(
        _post(CANDS.rename({"entity_id": "doc_id"}).with_columns(pl.col("doc_id") * 1.0)),
        SchemaError,
        "candidates: column 'doc_id' has type Float64; expected int or string",
    ),
    "postprocess-similarity-string": Case(
        _post(_cands(similarity=["0.9", "0.8", "0.7", "0.6"])),
        SchemaError,
        "candidates: column 'similarity' has type String; expected float or int",
    ),
    "postprocess-passthrough-block_rank": Case(
        _post(CANDS.with_columns(block_rank=pl.lit(1))),
        SchemaError,
        "candidates: column 'block_rank' is named like an output column; output columns "
        "['block_rank',",
    ),
    "postprocess-passthrough-char_count": Case(
        _post(CANDS.with_columns(char_count=pl.lit(1))),
        SchemaError,
        "candidates: column 'char_count' is named like an output column",
    ),
    "postprocess-passthrough-truncated": Case(
        _post(CANDS.with_columns(truncated=pl.lit(False))),
        SchemaError,
        "candidates: column 'truncated' is named like an output column",
    ),
    "postprocess-private-prefix": Case(
        _post(CANDS.with_columns(__rf_row=pl.lit(1))),
        SchemaError,
        "candidates: column names starting with '__rf_' are reserved: ['__rf_row']",
    ),
    "postprocess-text-and-store": Case(
        _post(CANDS, chunks=CANDS.select("entity_id", "chunk_index", "text")),
        SchemaError,
        "candidates: has ['text'] and a chunk store was given",
    ),
    "postprocess-store-content-for-text": Case(
        _post(
            CANDS.drop("text"),
            chunks=CANDS.select("entity_id", "chunk_index", pl.col("text").alias("content")),
        ),
        SchemaError,
        r"chunks: missing column 'text'; .*did you mean 'content'\?$",
        regex=True,
    ),
    "postprocess-offsets-missing": Case(
        _post(CANDS, {"overlap": "offsets"}),
        SchemaError,
        "candidates: missing column 'start_char'",
    ),
    "postprocess-list-input": Case(
        _post([{"query_id": 1}]),
        SchemaError,
        "candidates must be a polars DataFrame/LazyFrame or a pyarrow Table, got list",
    ),
    "fetch-qid-for-query_id": Case(
        lambda: rf.fetch(REQS.rename({"query_id": "qid"}), DOCS),
        SchemaError,
        r"requests: missing column 'query_id'; .*did you mean 'qid'\?$",
        regex=True,
    ),
    "fetch-query_id-not-suggested-as-query": Case(
        lambda: rf.fetch(REQS.drop("query_id"), DOCS),
        SchemaError,
        r"requests: missing column 'query_id'; found: \['query', 'doc_id'\]$",
        regex=True,
    ),
    "fetch-docid-for-doc_id": Case(
        lambda: rf.fetch(REQS.rename({"doc_id": "docid"}), DOCS),
        SchemaError,
        r"requests: missing column 'doc_id'; .*did you mean 'docid'\?$",
        regex=True,
    ),
    "fetch-text-for-content": Case(
        lambda: rf.fetch(REQS, DOCS.rename({"content": "text"})),
        SchemaError,
        r"documents: missing column 'content'; .*did you mean 'text'\?$",
        regex=True,
    ),
    "fetch-doc_id-kinds-differ": Case(
        lambda: rf.fetch(REQS.with_columns(pl.col("doc_id").cast(pl.String)), DOCS),
        SchemaError,
        "column 'doc_id' has type String in requests but Int64 in documents",
    ),
    "highlight-question-for-query": Case(
        lambda: rf.highlight(REQS.rename({"query": "question"}), DOCS),
        SchemaError,
        r"pairs: missing column 'query'; .*did you mean 'question'\?$",
        regex=True,
    ),
    "windows-section-for-section_index": Case(
        lambda: rf.windows(SECTIONS.rename({"section_index": "section"}), {"window_chars": 3}),
        SchemaError,
        r"sections: missing column 'section_index'; .*did you mean 'section'\?$",
        regex=True,
    ),
    "assemble-content-for-text": Case(
        lambda: rf.assemble(SECTIONS.rename({"text": "content"}), {"window_chars": 3}),
        SchemaError,
        r"sections: missing column 'text'; .*did you mean 'content'\?$",
        regex=True,
    ),
    "chunk-text-for-content": Case(
        lambda: rf.chunk(RAW.rename({"content": "text"}), {"window_chars": 3}),
        SchemaError,
        r"documents: missing column 'content'; .*did you mean 'text'\?$",
        regex=True,
    ),
    "chunk-content-int": Case(
        lambda: rf.chunk(RAW.with_columns(content=pl.lit(5)), {"window_chars": 3}),
        SchemaError,
        "documents: column 'content' has type Int32; expected string",
    ),
    # --- values (raised when collected) -------------------------------------------------
    "postprocess-nan-similarity": Case(
        _post(_cands(similarity=[0.9, 0.8, math.nan, 0.6])),
        DataError,
        "candidates: column 'similarity' has NaN or infinite values on 1 row in 1 query; "
        "first: row 2 (query_id 8): nan; expected finite numbers (use null for a missing "
        "score)",
        first_query=8,
    ),
    "postprocess-inf-similarity-two-queries": Case(
        _post(_cands(similarity=[0.9, math.inf, -math.inf, -math.inf])),
        DataError,
        "candidates: column 'similarity' has NaN or infinite values on 3 rows in 3 "
        "queries; first: row 1 (query_id 7): inf",
        first_query=7,
    ),
    "postprocess-inf-rerank_score": Case(
        _post(_cands(rerank_score=[None, None, None, math.inf])),
        DataError,
        "candidates: column 'rerank_score' has NaN or infinite values on 1 row in 1 "
        "query; first: row 3 (query_id 9): inf",
        first_query=9,
    ),
    "postprocess-string-query-nan": Case(
        _post(_cands(query_id=["q7", "q7", "q8", "q9"], similarity=[0.9, math.nan, 0.7, 0.6])),
        DataError,
        "candidates: column 'similarity' has NaN or infinite values on 1 row in 1 query; "
        "first: row 1 (query_id 'q7'): nan",
        first_query="'q7'",
    ),
    "postprocess-null-query_id": Case(
        _post(_cands(query_id=[7, None, None, 9])),
        DataError,
        "candidates: column 'query_id' has null values on 2 rows; first: row 1; expected "
        "a value on every row (every candidate belongs to a query)",
    ),
    "postprocess-uint64-entity-too-large": Case(
        _post(_cands(entity_id=pl.Series("entity_id", [1, 2**63 + 5, 2, 3], dtype=pl.UInt64))),
        DataError,
        "candidates: column 'entity_id' has values outside the range of Int64 on 1 row in "
        "1 query; first: row 1 (query_id 7): 9223372036854775813; expected integers in "
        "[-9223372036854775808, 9223372036854775807] (hint: cast larger ids to strings)",
        first_query=7,
    ),
    "postprocess-uint64-doc_id-too-large": Case(
        _post(
            _cands(entity_id=pl.Series("entity_id", [1, 1, 2, 2**64 - 1], dtype=pl.UInt64)).rename(
                {"entity_id": "doc_id"}
            )
        ),
        DataError,
        "candidates: column 'doc_id' has values outside the range of Int64 on 1 row in 1 "
        "query; first: row 3 (query_id 9): 18446744073709551615",
        first_query=9,
    ),
    "postprocess-uint64-query_id-too-large": Case(
        _post(_cands(query_id=pl.Series("query_id", [7, 7, 2**63, 9], dtype=pl.UInt64))),
        DataError,
        "candidates: column 'query_id' has values outside the range of Int64 on 1 row; "
        "first: row 2: 9223372036854775808",
    ),
    "postprocess-null-start_char": Case(
        _post(_cands(start_char=[0, None, 0, 0], end_char=[10, 11, 7, 4]), {"overlap": "offsets"}),
        DataError,
        "candidates: column 'start_char' has null values on 1 row in 1 query; first: row 1 "
        "(query_id 7); expected a value on every row (overlap='offsets' needs the offsets",
        first_query=7,
    ),
    "fetch-uint64-doc_id-too-large": Case(
        lambda: rf.fetch(REQS.with_columns(pl.Series("doc_id", [1, 2**63], dtype=pl.UInt64)), DOCS),
        DataError,
        "requests: column 'doc_id' has values outside the range of Int64 on 1 row; first: "
        "row 1: 9223372036854775808",
    ),
}


def _outcome(call: Callable[[], Any]) -> Any:
    out = call()
    return out.collect() if isinstance(out, pl.LazyFrame) else out


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_gives_one_clear_line(case: Case) -> None:
    with pytest.raises(RagframeError) as info:
        _outcome(case.call)
    error = info.value
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    message = str(error)
    assert "\n" not in message, message
    assert not POLARS_INTERNALS.search(message), message
    pattern = case.message if case.regex else re.escape(case.message)
    assert re.match(pattern, message), f"{message!r} does not start with {case.message!r}"
    if case.first_query is not None:
        assert f"query_id {case.first_query})" in message
        assert re.search(r"on \d+ rows?", message)


# --- accepted: every input query comes out ------------------------------------------

REQUESTED = set(REQS["query_id"])


def _collected(call: Callable[[], pl.LazyFrame]) -> Callable[[], pl.DataFrame]:
    return lambda: call().collect()


ACCEPTED: dict[str, tuple[Callable[[], pl.DataFrame], set[int]]] = {
    "postprocess-dict-config": (_collected(lambda: rf.postprocess(CANDS, {"top_k": 3})), QUERIES),
    "postprocess-numpy-config": (
        _collected(
            lambda: rf.postprocess(
                CANDS, rf.PostprocessConfig(top_k=np.int64(3), min_similarity=np.float32(0.5))
            )
        ),
        QUERIES,
    ),
    "postprocess-largest-values": (
        _collected(
            lambda: rf.postprocess(
                CANDS,
                dict.fromkeys(("top_k", "max_blocks", "max_characters", "max_chunk_gap"), MAX),
            )
        ),
        QUERIES,
    ),
    "postprocess-uint64-small-ids": (
        _collected(
            lambda: rf.postprocess(
                CANDS.with_columns(pl.col("query_id", "entity_id").cast(pl.UInt64))
            )
        ),
        QUERIES,
    ),
    "postprocess-doc_id": (
        _collected(lambda: rf.postprocess(CANDS.rename({"entity_id": "doc_id"}))),
        QUERIES,
    ),
    "fetch-dict-config": (
        _collected(lambda: rf.fetch(REQS, DOCS, {"fulltext_threshold": 10})),
        REQUESTED,
    ),
    "fetch-largest-values": (
        _collected(lambda: rf.fetch(REQS, DOCS, {"fulltext_threshold": MAX, "max_matches": MAX})),
        REQUESTED,
    ),
    "highlight-dict-config": (
        _collected(lambda: rf.highlight(REQS, DOCS, {"fragment_size": 18})),
        REQUESTED,
    ),
}


@pytest.mark.parametrize(("call", "queries"), list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_accepted_input_keeps_every_query(
    call: Callable[[], pl.DataFrame], queries: set[int]
) -> None:
    assert set(call()["query_id"].cast(pl.Int64)) == queries


def test_numpy_values_are_stored_as_python_numbers() -> None:
    cfg = rf.PostprocessConfig(top_k=np.int64(3), min_similarity=np.float32(0.5))
    assert type(cfg.top_k) is int and type(cfg.min_similarity) is float
    assert cfg == rf.PostprocessConfig(top_k=3, min_similarity=0.5)
    window = rf.WindowConfig(window_chars=np.int32(4), overlap_chars=np.uint8(1))
    assert (type(window.window_chars), window.step) == (int, 3)


def test_a_dict_config_equals_the_config() -> None:
    cfg = {"top_k": 1, "max_blocks": 1}
    assert (
        rf.postprocess(CANDS, cfg)
        .collect()
        .equals(rf.postprocess(CANDS, rf.PostprocessConfig(**cfg)).collect())
    )
    chunks = rf.chunk(RAW, {"window_chars": 4, "overlap_chars": 1}).collect()
    assert chunks.equals(rf.chunk(RAW, rf.WindowConfig(window_chars=4, overlap_chars=1)).collect())


def test_chunk_window_at_the_largest_value_gives_one_chunk_per_document() -> None:
    out = rf.chunk(RAW, {"window_chars": MAX}).collect()
    assert out["text"].to_list() == ["abcdefghij", "xyz"]


def test_data_errors_count_over_the_whole_column_in_every_engine() -> None:
    many = pl.DataFrame(
        {
            "query_id": np.arange(300_000) // 3,
            "entity_id": np.arange(300_000),
            "chunk_index": 0,
            "text": "x",
            "similarity": np.where(np.arange(300_000) % 1000 == 999, np.nan, 0.5),
        }
    )
    for engine in ("in-memory", "streaming"):
        with pytest.raises(DataError) as info:
            rf.postprocess(many.lazy()).collect(engine=engine)  # type: ignore[call-overload]
        assert str(info.value).startswith(
            "candidates: column 'similarity' has NaN or infinite values on 300 rows in 300 "
            "queries; first: row 999 (query_id 333): nan"
        )


def test_the_suite_is_big_enough() -> None:
    assert len(CASES) + len(ACCEPTED) >= 60
