"""Bad input through the ``ragframe`` commands: every case runs one command and checks
what a user sees.

Each case asserts the exit status; on failure, exactly one line on stderr, ``error:``
followed by a message that matches the case's pattern and names the user's value,
column or path; no traceback; nothing on stdout; and the output folder exactly as it
was (no partial output, no temporary file, the file already there untouched, its mode
kept). On success it asserts that every input query (or document) is accounted for in
the output, and again that no temporary is left. Cases run in-process through
:func:`ragframe.cli.main`; a few at the end run the real console script (tracebacks,
exit statuses, signals).
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest

from ragframe.cli import main
from ragframe.io import TEMP_MARK, read_table, write_table

Make = Callable[[Path], list[str]]
"""Writes a case's input files into a folder; returns the command's positional args."""

RESULTS = pl.DataFrame(
    {
        "query_id": [1, 1, 2, 3],
        "entity_id": [10, 10, 20, 30],
        "chunk_index": [0, 1, 0, 0],
        "text": ["alpha beta gamma", "delta epsilon", "zeta eta theta", "iota kappa"],
        "similarity": [0.9, 0.8, 0.7, 0.6],
    }
)
REQUESTS = pl.DataFrame({"query_id": [1, 2], "query": ["lift", "bravo"], "doc_id": [1, 2]})
DOCUMENTS = pl.DataFrame(
    {"doc_id": [1, 2], "content": ["alpha bravo lift golf " * 30, "short bravo text"]}
)
SECTIONS = pl.DataFrame(
    {
        "doc_id": [1, 1, 2],
        "section_index": [0, 1, 0],
        "text": ["first section text", "second section", "another document"],
        "title": ["One", "Two", "Three"],
    }
)
CONTENTS = pl.DataFrame({"doc_id": [1, 2], "content": ["some content " * 5, "more content"]})
BASE = {"postprocess": [], "fetch": [], "window": ["--window", "20"], "chunk": ["--window", "20"]}
"""Options every run of the command gets first (a case's own options come after and win)."""
HUGE = "20000000000000000000"


def table(df: pl.DataFrame, name: str) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        write_table(df, folder / name)
        return str(folder / name)

    return make


def raw(data: bytes | str, name: str) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        path = folder / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return str(path)

    return make


def truncated(df: pl.DataFrame, name: str, keep: float = 0.5) -> Callable[[Path], str]:
    def make(folder: Path) -> str:
        path = folder / name
        write_table(df, path)
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])
        return str(path)

    return make


def absent(name: str) -> Callable[[Path], str]:
    return lambda folder: str(folder / name)


def inputs(*parts: Callable[[Path], str]) -> Make:
    return lambda folder: [part(folder) for part in parts]


def results(df: pl.DataFrame = RESULTS, name: str = "results.parquet") -> Make:
    return inputs(table(df, name))


def fetch_inputs(
    requests: pl.DataFrame = REQUESTS, documents: pl.DataFrame = DOCUMENTS, fmt: str = "parquet"
) -> Make:
    return inputs(table(requests, f"requests.{fmt}"), table(documents, f"documents.{fmt}"))


def sections(df: pl.DataFrame = SECTIONS, name: str = "sections.parquet") -> Make:
    return inputs(table(df, name))


def contents(df: pl.DataFrame = CONTENTS, name: str = "documents.parquet") -> Make:
    return inputs(table(df, name))


GOOD: dict[str, Make] = {
    "postprocess": results(),
    "fetch": fetch_inputs(),
    "window": sections(),
    "chunk": contents(),
}


@dataclass(frozen=True)
class Case:
    """One command run. ``message`` is a regular expression matched at the start of the
    error line after ``error: `` (``{in}`` and ``{out}`` stand for the input and output
    folders); ``names`` must each appear in that line."""

    id: str
    command: str
    make: Make | None = None
    options: tuple[str, ...] = ()
    code: int = 2
    message: str = ""
    names: tuple[str, ...] = ()
    output: str = "result.parquet"
    base: bool = True
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())


def fail(
    id: str, command: str, message: str, *names: str, make: Make | None = None, **kw: object
) -> Case:
    return Case(id, command, make, message=message, names=names, **kw)  # type: ignore[arg-type]


def ok(id: str, command: str, make: Make | None = None, **kw: object) -> Case:
    return Case(id, command, make, code=0, **kw)  # type: ignore[arg-type]


def _opt(command: str, option: str, value: str, message: str, *names: str, **kw: object) -> Case:
    return fail(
        f"{command}-{option.lstrip('-')}={value or 'empty'}",
        command,
        message,
        *names,
        options=(option, value),
        **kw,
    )


def _not_an_integer(command: str, option: str, value: str) -> Case:
    spelled = rf"argument ([-\w]+/)?{option}(/[-\w]+)?"  # with any other spelling
    message = rf"{spelled}: expected an integer written in digits .*got {re.escape(repr(value))}"
    return _opt(command, option, value, message)


def _not_a_number(command: str, option: str, value: str) -> Case:
    message = rf"argument {option}: expected a number .*got {re.escape(repr(value))}"
    return _opt(command, option, value, message)


POSTPROCESS_INTS = [
    "--top-k",
    "--max-chunk-gap",
    "--max-blocks",
    "--max-characters",
    "--max-merged-block-characters",
]
FETCH_INTS = [
    "--threshold",
    "--fragment-size",
    "--fragments",
    "--boundary-max-scan",
    "--max-matches",
]

# --- parameters: the wrong form (parsed by the CLI) ----------------------------------
PARAMETER_FORMS = [
    _not_an_integer(cmd, option, value)
    for cmd, options in [("postprocess", POSTPROCESS_INTS), ("fetch", FETCH_INTS)]
    for option in options
    for value in ("2e19", "1.5", "ten")
] + [
    _not_an_integer("postprocess", "--top-k", ""),
    _not_an_integer("postprocess", "--top-k", "0x10"),
    _not_an_integer("window", "--window", "2e19"),
    _not_an_integer("window", "--window", "1.5"),
    _not_an_integer("window", "--overlap", "five"),
    _not_an_integer("chunk", "--window", "2e19"),
    _not_an_integer("chunk", "--overlap", "0.5"),
    _not_a_number("postprocess", "--min-similarity", "abc"),
    _not_a_number("postprocess", "--min-similarity", ""),
    _opt("postprocess", "--overlap", "words", r"argument --overlap: invalid choice: 'words'"),
    _opt("fetch", "--highlighter", "plain", r"argument --highlighter: invalid choice: 'plain'"),
    _opt("fetch", "--order", "random", r"argument --order: invalid choice: 'random'"),
    _opt("fetch", "--scoring", "bm25", r"argument --scoring: invalid choice: 'bm25'"),
    fail(
        "postprocess-unknown-option",
        "postprocess",
        r"unrecognized arguments: --topk 3",
        options=("--topk", "3"),
    ),
    fail(
        "chunk-missing-window",
        "chunk",
        r"the following arguments are required: --window",
        "--window",
        base=False,
    ),
    fail(
        "fetch-missing-documents",
        "fetch",
        r"the following arguments are required: DOCUMENTS",
        "DOCUMENTS",
        make=inputs(table(REQUESTS, "requests.parquet")),
    ),
]

# --- parameters: out of range (checked by the configs) --------------------------------
PARAMETER_RANGES = [
    _opt("postprocess", "--top-k", "0", r"top_k must be in \[1, \d+\], got 0", "top_k"),
    _opt("postprocess", "--top-k", "-3", r"top_k must be in \[1, \d+\], got -3", "top_k"),
    _opt(
        "postprocess",
        "--max-chunk-gap",
        "-1",
        r"max_chunk_gap must be in \[0, \d+\]",
        "max_chunk_gap",
    ),
    _opt("postprocess", "--max-blocks", "0", r"max_blocks must be in \[1, \d+\]", "max_blocks"),
    _opt("postprocess", "--max-characters", "0", r"max_characters must be in \[1, \d+\]"),
    _opt(
        "postprocess",
        "--max-merged-block-characters",
        "-1",
        r"max_merged_block_characters must be in \[1, \d+\]",
    ),
    _opt("postprocess", "--min-similarity", "1.5", r"min_similarity must be in \[0, 1\], got 1.5"),
    _opt("postprocess", "--min-similarity", "-0.1", r"min_similarity must be in \[0, 1\]"),
    _opt("postprocess", "--min-similarity", "nan", r"min_similarity must be in \[0, 1\], got nan"),
    _opt("postprocess", "--min-similarity", "inf", r"min_similarity must be in \[0, 1\], got inf"),
    _opt(
        "fetch",
        "--threshold",
        "-1",
        r"fulltext_threshold must be in \[0, \d+\]",
        "fulltext_threshold",
    ),
    _opt("fetch", "--fragment-size", "1", r"fragment_size must be in \[\d+, \d+\], got 1"),
    _opt("fetch", "--fragments", "0", r"number_of_fragments must be in \[1, \d+\], got 0"),
    _opt("fetch", "--boundary-max-scan", "-1", r"boundary_max_scan must be in \[0, \d+\]"),
    _opt("fetch", "--max-matches", "0", r"max_matches must be in \[1, \d+\], got 0"),
    _opt("window", "--window", "0", r"invalid window: window_chars=0", "window_chars"),
    _opt("window", "--window", "-5", r"invalid window: window_chars=-5"),
    _opt("window", "--overlap", "20", r"invalid window: .*overlap_chars=20", "overlap_chars"),
    _opt("window", "--overlap", "-1", r"invalid window: .*overlap_chars=-1"),
    _opt("chunk", "--window", "0", r"invalid window: window_chars=0"),
    _opt("chunk", "--overlap", "25", r"invalid window: .*overlap_chars=25"),
    _opt("window", "--overlap", "-" + HUGE, r"invalid window: .*overlap_chars=-" + HUGE),
] + [
    _opt(
        cmd,
        option,
        HUGE,
        r".*" + name + r".*(<=|in \[)",
        name,
        HUGE,
    )
    for cmd, option, name in [
        ("postprocess", "--top-k", "top_k"),
        ("postprocess", "--max-chunk-gap", "max_chunk_gap"),
        ("postprocess", "--max-characters", "max_characters"),
        ("postprocess", "--max-merged-block-characters", "max_merged_block_characters"),
        ("fetch", "--threshold", "fulltext_threshold"),
        ("window", "--window", "window_chars"),
        ("chunk", "--window", "window_chars"),
    ]
]

# --- input files: missing, not tables, empty, corrupt ---------------------------------
_HEADER = "query_id,entity_id,chunk_index,text,similarity\n"
_ROW = "1,10,0,alpha beta,0.9\n"
_JSON_ROW = '{"query_id":1,"entity_id":10,"chunk_index":0,"text":"alpha","similarity":0.9}\n'
FILES = (
    [
        fail(
            "postprocess-missing-file",
            "postprocess",
            r"input file not found: {in}/absent.parquet",
            make=inputs(absent("absent.parquet")),
        ),
        fail(
            "postprocess-input-directory",
            "postprocess",
            r"input directory has no table files: {in}/dir.parquet",
            make=lambda d: [str((d / "dir.parquet").mkdir() or d / "dir.parquet")],
        ),
        fail(
            "postprocess-input-extension",
            "postprocess",
            r"unsupported file extension '.txt' for {in}/results.txt",
            make=inputs(raw("x", "results.txt")),
        ),
        fail(
            "postprocess-input-no-extension",
            "postprocess",
            r"no file extension for {in}/results",
            make=inputs(raw("x", "results")),
        ),
        fail(
            "postprocess-missing-chunks",
            "postprocess",
            r"input file not found: {in}/chunks.parquet",
            make=inputs(table(RESULTS.drop("text"), "r.parquet")),
            options=(),
        ),
        fail(
            "fetch-missing-requests",
            "fetch",
            r"input file not found: {in}/requests.parquet",
            make=inputs(absent("requests.parquet"), table(DOCUMENTS, "documents.parquet")),
        ),
        fail("fetch-missing-sizes", "fetch", r"input file not found: {in}/sizes.csv"),
        fail(
            "window-missing-file",
            "window",
            r"input file not found: {in}/s.csv",
            make=inputs(absent("s.csv")),
        ),
        fail(
            "chunk-input-extension",
            "chunk",
            r"unsupported file extension '.xlsx'",
            make=inputs(raw("x", "d.xlsx")),
        ),
    ]
    + [
        fail(
            f"{cmd}-empty-{ext}",
            cmd,
            rf"cannot read {{in}}/empty.{ext}: the file is empty",
            make=inputs(raw(b"", f"empty.{ext}"))
            if cmd != "fetch"
            else inputs(raw(b"", f"empty.{ext}"), table(DOCUMENTS, "documents.parquet")),
        )
        for cmd in ("postprocess", "fetch", "window", "chunk")
        for ext in ("csv", "jsonl", "parquet", "arrow")
    ]
    + [
        fail(
            f"{cmd}-truncated-{ext}",
            cmd,
            rf"cannot (read|process) {{in}}/cut.{ext}",
            make=inputs(truncated(df, f"cut.{ext}")),
        )
        for cmd, df in [("postprocess", RESULTS), ("window", SECTIONS), ("chunk", CONTENTS)]
        for ext in ("parquet", "arrow")
    ]
    + [
        fail(
            "postprocess-csv-extra-field",
            "postprocess",
            r"cannot read {in}/r.csv: line 3: 6 fields, expected 5",
            make=inputs(raw(_HEADER + _ROW + "1,10,1,gamma,0.8,9\n", "r.csv")),
        ),
        fail(
            "postprocess-csv-missing-field",
            "postprocess",
            r"cannot read {in}/r.csv: line 4: 3 fields, expected 5",
            make=inputs(raw(_HEADER + _ROW + _ROW + "1,10,1\n", "r.csv")),
        ),
        fail(
            "postprocess-csv-bad-utf8",
            "postprocess",
            r"cannot read {in}/r.csv: line 3: invalid UTF-8 \(byte 0xe9.*the file must be UTF-8",
            make=inputs(raw(_HEADER.encode() + _ROW.encode() + b"1,10,1,caf\xe9,0.8\n", "r.csv")),
        ),
        fail(
            "postprocess-csv-bad-utf8-header",
            "postprocess",
            r"cannot read {in}/r.csv: line 1: invalid UTF-8",
            make=inputs(raw(b"query_id,t\xffext\n1,a\n", "r.csv")),
        ),
        fail(
            "postprocess-csv-duplicate-columns",
            "postprocess",
            r"cannot read {in}/r.csv: line 1: duplicate column names in the header: 'text'",
            make=inputs(raw(_HEADER.replace("similarity", "text") + _ROW, "r.csv")),
        ),
        fail(
            "postprocess-csv-unparsable-value",
            "postprocess",
            r"cannot read {in}/r.csv: line 202: column 'similarity' has 'high', expected .*f64",
            make=inputs(raw(_HEADER + _ROW * 200 + "1,10,1,x,high\n", "r.csv")),
        ),
        fail(
            "postprocess-csv-multiline-fields",
            "postprocess",
            r"cannot read {in}/r.csv: line 302: column 'similarity' has 'high'",
            make=inputs(
                raw(_HEADER + '1,10,0,"two\nlines",0.9\n' * 150 + "1,10,1,x,high\n", "r.csv")
            ),
        ),
        fail(
            "postprocess-jsonl-bad-json",
            "postprocess",
            r"cannot read {in}/r.jsonl: line 2: invalid JSON",
            make=inputs(raw(_JSON_ROW + '{"query_id": 1,\n', "r.jsonl")),
        ),
        fail(
            "postprocess-jsonl-not-object",
            "postprocess",
            r"cannot read {in}/r.jsonl: line 3: expected one JSON object per line, got a list",
            make=inputs(raw(_JSON_ROW * 2 + "[1, 2]\n", "r.jsonl")),
        ),
        fail(
            "postprocess-jsonl-bad-utf8",
            "postprocess",
            r"cannot read {in}/r.jsonl: line 1: invalid UTF-8 .*iconv",
            make=inputs(raw(_JSON_ROW.encode().replace(b"alpha", b"\xe9t\xe9"), "r.jsonl")),
        ),
        fail(
            "fetch-csv-bad-utf8-documents",
            "fetch",
            r"cannot read {in}/d.csv: line 2: invalid UTF-8",
            make=inputs(
                table(REQUESTS, "q.parquet"), raw(b"doc_id,content\n1,na\xefve\n", "d.csv")
            ),
        ),
        fail(
            "window-csv-duplicate-columns",
            "window",
            r"cannot read {in}/s.csv: line 1: duplicate",
            make=inputs(raw("doc_id,section_index,text,text\n1,0,a,b\n", "s.csv")),
        ),
        fail(
            "chunk-jsonl-bad-json",
            "chunk",
            r"cannot read {in}/d.jsonl: line 1: invalid JSON",
            make=inputs(raw('{"doc_id": 1, "content": "abc"\n', "d.jsonl")),
        ),
        # An empty CSV table has no values to infer types from: every column is a string.
        fail(
            "postprocess-csv-header-only",
            "postprocess",
            r"candidates: column '\w+' has type String",
            make=inputs(raw(_HEADER, "r.csv")),
        ),
        ok(
            "postprocess-csv-utf8-bom",
            "postprocess",
            inputs(raw(b"\xef\xbb\xbf" + (_HEADER + _ROW).encode(), "r.csv")),
        ),
    ]
)


# --- columns and values --------------------------------------------------------------
def _with(df: pl.DataFrame, **columns: object) -> pl.DataFrame:
    return df.with_columns(**columns)  # type: ignore[arg-type]


NAN, INF = float("nan"), float("inf")
COLUMNS = [
    fail(
        "postprocess-missing-query_id",
        "postprocess",
        r".*missing column 'query_id'",
        make=results(RESULTS.drop("query_id")),
    ),
    fail(
        "postprocess-missing-similarity",
        "postprocess",
        r".*missing column 'similarity'",
        make=results(RESULTS.drop("similarity")),
    ),
    fail(
        "postprocess-similarity-named-score",
        "postprocess",
        r".*missing column 'similarity'.*'score'",
        make=results(RESULTS.rename({"similarity": "score"})),
    ),
    fail(
        "postprocess-missing-text",
        "postprocess",
        r".*missing column 'text'",
        make=results(RESULTS.drop("text")),
    ),
    fail(
        "postprocess-similarity-string",
        "postprocess",
        r".*column 'similarity' has type String",
        make=results(_with(RESULTS, similarity=pl.col("similarity").cast(pl.String))),
    ),
    fail(
        "postprocess-text-int",
        "postprocess",
        r".*column 'text' has type Int32",
        make=results(_with(RESULTS, text=pl.lit(5))),
    ),
    fail(
        "postprocess-null-query_id",
        "postprocess",
        r".*query_id.*null",
        make=results(
            _with(
                RESULTS,
                query_id=pl.when(pl.int_range(4) == 2).then(None).otherwise(pl.col("query_id")),
            )
        ),
    ),
    fail(
        "postprocess-nan-similarity",
        "postprocess",
        r".*similarity.*(NaN|nan)",
        make=results(_with(RESULTS, similarity=pl.lit(NAN))),
    ),
    fail(
        "postprocess-inf-similarity",
        "postprocess",
        r".*similarity.*inf",
        make=results(_with(RESULTS, similarity=pl.lit(INF))),
    ),
    fail(
        "postprocess-nan-rerank",
        "postprocess",
        r".*rerank_score.*(NaN|nan)",
        make=results(_with(RESULTS, rerank_score=pl.Series([0.1, NAN, 0.3, 0.4]))),
    ),
    fail(
        "postprocess-nan-csv",
        "postprocess",
        r".*similarity.*(NaN|nan)",
        make=inputs(raw(_HEADER + "1,10,0,a,NaN\n", "r.csv")),
    ),
    fail(
        "postprocess-chunks-missing-text",
        "postprocess",
        r".*missing column 'text'",
        make=inputs(
            table(RESULTS.drop("text"), "r.parquet"), table(RESULTS.drop("text"), "c.parquet")
        ),
        options=(),
    ),
    fail(
        "fetch-requests-missing-query",
        "fetch",
        r".*missing column 'query'",
        make=fetch_inputs(REQUESTS.drop("query")),
    ),
    fail(
        "fetch-documents-missing-content",
        "fetch",
        r".*missing column 'content'",
        make=fetch_inputs(documents=DOCUMENTS.rename({"content": "body"})),
    ),
    fail(
        "fetch-doc_id-types-differ",
        "fetch",
        r".*doc_id",
        make=fetch_inputs(documents=_with(DOCUMENTS, doc_id=pl.col("doc_id").cast(pl.String))),
    ),
    fail(
        "window-missing-section_index",
        "window",
        r".*section_index",
        make=sections(SECTIONS.drop("section_index")),
    ),
    fail(
        "chunk-missing-content",
        "chunk",
        r".*content",
        make=contents(CONTENTS.rename({"content": "text"})),
    ),
    fail(
        "chunk-content-int",
        "chunk",
        r".*content.*Int32",
        make=contents(_with(CONTENTS, content=pl.lit(3))),
    ),
    ok(
        "postprocess-null-similarity",
        "postprocess",
        results(_with(RESULTS, similarity=pl.Series([0.9, None, 0.7, 0.6]))),
    ),
    ok("postprocess-empty-text", "postprocess", results(_with(RESULTS, text=pl.lit("")))),
    ok(
        "postprocess-null-text",
        "postprocess",
        results(_with(RESULTS, text=pl.Series(["a", None, None, "b"]))),
    ),
    ok("postprocess-duplicate-rows", "postprocess", results(pl.concat([RESULTS, RESULTS]))),
    ok(
        "postprocess-string-ids",
        "postprocess",
        results(_with(RESULTS, query_id=pl.col("query_id").cast(pl.String) + "-q")),
    ),
    ok(
        "postprocess-huge-text",
        "postprocess",
        results(_with(RESULTS, text=pl.lit("word " * 100_000))),
        options=("--max-characters", "500"),
    ),
    ok(
        "postprocess-odd-unicode",
        "postprocess",
        results(
            _with(
                RESULTS,
                text=pl.Series(
                    [
                        "e\u0301\u200d\U0001f600",
                        "\u202eRTL\x00nul",
                        "\ufeffbom \u00a0nbsp",
                        "\U00010348" * 50,
                    ]
                ),
            )
        ),
        options=("--max-characters", "30"),
    ),
    ok(
        "postprocess-odd-unicode-csv",
        "postprocess",
        inputs(raw(_HEADER + '1,10,0,"e\u0301 \U0001f600 ""quoted"", comma",0.9\n', "r.csv")),
    ),
    ok("postprocess-doc_id-alias", "postprocess", results(RESULTS.rename({"entity_id": "doc_id"}))),
    ok("postprocess-extra-columns", "postprocess", results(_with(RESULTS, note=pl.lit("kept")))),
    ok("fetch-missing-document", "fetch", fetch_inputs(_with(REQUESTS, doc_id=pl.Series([1, 99])))),
    ok("fetch-empty-query", "fetch", fetch_inputs(_with(REQUESTS, query=pl.lit("")))),
    ok(
        "fetch-null-content",
        "fetch",
        fetch_inputs(documents=_with(DOCUMENTS, content=pl.Series(["x", None]))),
    ),
    ok(
        "fetch-odd-unicode",
        "fetch",
        fetch_inputs(documents=_with(DOCUMENTS, content=pl.lit("\U0001f600 lift e\u0301 " * 400))),
        options=("--threshold", "100"),
    ),
    ok("window-empty-text", "window", sections(_with(SECTIONS, text=pl.lit("")))),
    ok("chunk-empty-content", "chunk", contents(_with(CONTENTS, content=pl.Series(["", "abc"])))),
    ok(
        "chunk-huge-unicode",
        "chunk",
        contents(_with(CONTENTS, content=pl.lit("\U0001f600e\u0301" * 50_000))),
        options=("--window", "1000", "--overlap", "10"),
    ),
]


# --- outputs: unwritable, odd, links (each fails before reading any input) -----------
def _out(command: str, id: str, output: str, message: str, *names: str) -> Case:
    return fail(f"{command}-{id}", command, message, *names, output=output)


OUTPUTS = [
    case
    for cmd in ("postprocess", "fetch", "window", "chunk")
    for case in (
        _out(
            cmd,
            "output-extension",
            "result.xlsx",
            r"unsupported file extension '.xlsx' for {out}/result.xlsx",
        ),
        _out(
            cmd,
            "output-directory",
            "existing.parquet",
            r"cannot write {out}/existing.parquet: it is a directory",
        ),
        _out(
            cmd,
            "output-parent-is-file",
            "kept.parquet/x.parquet",
            r"cannot write {out}/kept.parquet/x.parquet: {out}/kept.parquet is not a directory",
        ),
        _out(
            cmd,
            "output-proc",
            "/proc/ragframe-x.parquet",
            r"cannot write /proc/ragframe-x.parquet: cannot create a file in /proc",
        ),
    )
] + [
    _out("postprocess", "output-no-extension", "result", r"no file extension for {out}/result"),
    _out(
        "postprocess",
        "output-link-to-directory",
        "dirlink.parquet",
        r"cannot write {out}/dirlink.parquet: it is a directory",
    ),
    _out(
        "postprocess",
        "output-link-to-device",
        "null.parquet",
        r"cannot write {out}/null.parquet: not a regular file",
    ),
    ok("postprocess-output-missing-parents", "postprocess", output="new/deeper/result.parquet"),
    ok("postprocess-output-link", "postprocess", output="link.parquet"),
    ok("postprocess-output-dangling-link", "postprocess", output="dangling.parquet"),
    ok("postprocess-output-overwrite", "postprocess", output="kept.parquet"),
    ok("postprocess-output-csv", "postprocess", output="result.csv"),
    ok("fetch-output-jsonl", "fetch", output="result.jsonl"),
    ok("window-output-arrow", "window", output="result.arrow"),
    ok("chunk-output-overwrite", "chunk", output="kept.parquet"),
]

CASES = PARAMETER_FORMS + PARAMETER_RANGES + FILES + COLUMNS + OUTPUTS


def _prepare_output_folder(out: Path) -> None:
    """The output folder: a file to leave alone, a directory, links of each kind."""
    out.mkdir()
    kept = out / "kept.parquet"
    write_table(pl.DataFrame({"previous": [1]}), kept)
    kept.chmod(0o640)
    (out / "existing.parquet").mkdir()
    (out / "target").mkdir()
    (out / "dirlink.parquet").symlink_to(out / "target")
    (out / "link.parquet").symlink_to(out / "target" / "real.parquet")
    write_table(pl.DataFrame({"previous": [1]}), out / "target" / "real.parquet")
    (out / "target" / "real.parquet").chmod(0o600)
    (out / "dangling.parquet").symlink_to(out / "target" / "later.parquet")
    (out / "null.parquet").symlink_to("/dev/null")


def _snapshot(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under ``folder``: its mode and its bytes (or link target)."""
    found: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            found[str(path.relative_to(folder))] = (info.st_mode, os.readlink(path))
        elif path.is_file():
            found[str(path.relative_to(folder))] = (info.st_mode, path.read_bytes())
        else:
            found[str(path.relative_to(folder))] = (info.st_mode, "<dir>")
    return found


def _ids(paths: list[str], column: str) -> set[object]:
    return set(pl.concat([read_table(p).select(column) for p in paths])[column].to_list())


def _accounted(case: Case, args: list[str], target: Path, err: str) -> None:
    """Every input query (document) is in the output, or named in the warning."""
    out = read_table(target)
    if case.command == "postprocess":
        assert set(out["query_id"].to_list()) == _ids(args[:1], "query_id")
    elif case.command == "fetch":
        requests, documents = read_table(args[0]), read_table(args[1])
        # every request has a row, in request order; a missing document's says so
        assert out.select("query_id", "doc_id").equals(requests.select("query_id", "doc_id"))
        known = pl.col("doc_id").is_in(documents["doc_id"].implode())
        missing = requests.filter(~known)
        flagged = out.filter(pl.col("strategy") == "missing")
        assert flagged.select("query_id", "doc_id").equals(missing.select("query_id", "doc_id"))
        assert flagged["content"].is_null().all()
        for doc_id in missing["doc_id"].to_list():  # the warning names each missing one
            assert re.search(rf"warning: .*requested documents not in .*\b{doc_id}\b", err)
    elif case.command == "window":
        assert set(out["doc_id"].to_list()) == _ids(args, "doc_id")
    else:
        docs = read_table(args[0])
        assert set(out["doc_id"].to_list()) == set(
            docs.filter(pl.col("content") != "")["doc_id"].to_list()
        )


def _no_work(*args: object, **kwargs: object) -> None:
    raise AssertionError("computed before checking the output")


def _run_case(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    _prepare_output_folder(out)
    args = (case.make or GOOD[case.command])(source)
    if case.id == "fetch-missing-sizes":
        args += ["--sizes", str(source / "sizes.csv")]
    if case.id == "postprocess-missing-chunks":
        args += ["--chunks", str(source / "chunks.parquet")]
    if case.id == "postprocess-chunks-missing-text":
        args = [args[0], "--chunks", args[1]]
    target = out / case.output
    before = _snapshot(out)
    if case.code and "output" in case.id:  # an unwritable output fails before any work
        monkeypatch.setattr(pl, "collect_all", _no_work)
        monkeypatch.setattr(pl.LazyFrame, "collect", _no_work)
    code = main(
        [
            case.command,
            *args,
            "-o",
            str(target),
            *(BASE[case.command] if case.base else []),
            *case.options,
        ]
    )
    stdout, err = capsys.readouterr()
    assert "Traceback" not in stdout + err
    assert code == case.code, err
    after = _snapshot(out)
    assert not [name for name in after if TEMP_MARK in name], after
    if case.code:
        assert stdout == ""
        lines = err.splitlines()
        assert len(lines) == 1 and err.endswith("\n"), err
        pattern = case.message.replace("{in}", re.escape(str(source))).replace(
            "{out}", re.escape(str(out))
        )
        assert re.match("error: " + pattern, lines[0]), lines[0]
        for name in case.names:
            assert name in lines[0], (name, lines[0])
        assert after == before  # nothing written, nothing changed, modes kept
        return
    written = Path(os.path.realpath(target))
    assert written.is_file()
    _accounted(case, args, target, err)
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    assert changed <= {
        str(p.relative_to(out)) for p in [target, written, *target.parents] if out in p.parents
    }
    if case.output in {"kept.parquet", "link.parquet"}:
        assert stat.S_IMODE(written.stat().st_mode) == stat.S_IMODE(
            before[str(written.relative_to(out))][0]
        )
    if case.output in {"link.parquet", "dangling.parquet"}:
        assert target.is_symlink()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_case(case, tmp_path, capsys, monkeypatch)


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    for command in BASE:
        assert sum(c.command == command for c in CASES) >= 15, command


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_read_only_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code = main(
            ["postprocess", str(tmp_path / "absent.parquet"), "-o", str(folder / "x.parquet")]
        )
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(
        f"error: cannot write {folder}/x.parquet: cannot create a file in {folder}"
    )
    assert list(folder.iterdir()) == []


# --- the real console script ---------------------------------------------------------
def _command(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragframe.cli", *argv], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("argv", "first"),
    [
        (
            ["postprocess", "x.parquet", "-o", "y.parquet", "--top-k", "2e19"],
            "error: argument --top-k",
        ),
        (["postprocess"], "error: the following arguments are required"),
        (["nonsense"], "error: argument COMMAND: invalid choice: 'nonsense'"),
        ([], "error: the following arguments are required: COMMAND"),
        (
            ["chunk", "{contents}", "-o", "/proc/x.parquet", "--window", "5"],
            "error: cannot write /proc/x.parquet",
        ),
    ],
    ids=["float-int", "no-args", "unknown-command", "nothing", "proc"],
)
def test_console_script_one_line(argv: list[str], first: str, tmp_path: Path) -> None:
    write_table(CONTENTS, tmp_path / "contents.parquet")
    done = _command(*[a.format(contents=tmp_path / "contents.parquet") for a in argv])
    assert done.returncode == 2
    assert done.stderr.startswith(first), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_version() -> None:
    done = _command("--version")
    assert done.returncode == 0
    assert re.fullmatch(r"ragframe \S+ \(polars \S+, numba \S+, python \S+\)\n", done.stdout)


_SLOW = textwrap.dedent(
    """
    import sys, time
    import polars as pl
    from ragframe import io
    from ragframe.cli import main
    from ragframe import partition

    stage = sys.argv.pop(1)
    if stage == "compute":  # a Polars callback that takes long, as the kernels may
        part = partition.postprocess_blocks
        def wait(s):
            print("computing", flush=True)
            time.sleep(60)
            return s
        def slow(rows, config, chunks=None):
            rows = rows.lazy().with_columns(pl.col("query_id").map_batches(wait)).collect()
            return part(rows, config, chunks=chunks)
        partition.postprocess_blocks = slow
    else:  # a write that takes long, after part of the file is out
        def slow_write(df, path, fmt):
            with open(path, "wb") as handle:
                handle.write(b"partial")
            print("writing", flush=True)
            time.sleep(60)
        io._write = slow_write
    sys.exit(main())
    """
)


@pytest.mark.parametrize("stage", ["compute", "write"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_stops_at_once_with_one_line(
    tmp_path: Path, stage: str, sig: signal.Signals
) -> None:
    source, out = tmp_path / "r.parquet", tmp_path / "out"
    out.mkdir()
    write_table(RESULTS, source)
    argv = [
        sys.executable,
        "-c",
        _SLOW,
        stage,
        "postprocess",
        str(source),
        "-o",
        str(out / "b.parquet"),
    ]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == {"compute": "computing", "write": "writing"}[stage]
        if stage == "write":
            assert next(p.name for p in out.iterdir()).startswith(".b.parquet" + TEMP_MARK)
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 10  # not after the 60 s sleep
    assert proc.returncode == 128 + sig
    assert (
        err == {signal.SIGINT: "error: interrupted\n", signal.SIGTERM: "error: terminated\n"}[sig]
    )
    assert list(out.iterdir()) == []
