"""Bad span judgements (SPEC 7, issue 28) through ``read_qrels``, ``evaluate`` and the
``evaluate`` command, checked as :mod:`tests.test_bad_input_evaluate` checks its
cases: the exact exception class, a one-line message without Polars internals that
starts as expected, the input folder untouched; a command exits 2 with one ``error:``
line, nothing on stdout, no traceback, no output written.

Decided here: span and document judgements are not mixed in one qrels (a row with a
null offset is an error, not a document judgement); without ``documents`` a span is
not checked against its document (a span past the end judges characters no block
covers); repeated and overlapping spans are accepted (their union counts).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe as rf
from ragframe import ConfigError, DataError, RagframeError, SchemaError
from ragframe.cli import main
from tests.test_bad_input_api import POLARS_INTERNALS
from tests.test_bad_input_cli import _snapshot

SPANS = pl.DataFrame(
    {
        "query_id": [1, 1, 2, 3],
        "doc_id": [10, 10, 20, 30],
        "start_char": [0, 5, 0, 2],
        "end_char": [4, 9, 3, 2],
        "relevance": [1, 2, 1, 0],
    }
)
"""Query 3 is judged by an empty, not relevant span only."""
DOCUMENTS = pl.DataFrame({"doc_id": [10, 20, 30], "text": ["abcdefghij", "xyz", "uvw"]})
BLOCKS = pl.DataFrame(
    {
        "query_id": [1, 1, 2, 4],
        "block_rank": [0, 1, 0, 0],
        "entity_id": [10, 10, 20, 40],
        "char_count": [4, 4, 3, 5],
        "truncated": [False] * 4,
        "start_char": [0, 6, 0, 0],
        "end_char": [4, 10, 3, 5],
    }
)
CANDIDATES = pl.DataFrame(
    {"query_id": [1, 1], "doc_id": [10, 10], "chunk_index": [0, 1], "score": [2.0, 1.0]}
)
STORE = pl.DataFrame(
    {"doc_id": [10, 10], "chunk_index": [0, 1], "start_char": [0, 5], "end_char": [5, 10]}
)


def _with(**columns: list[Any]) -> pl.DataFrame:
    return SPANS.with_columns(pl.Series(k, v) for k, v in columns.items())


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[Path], Any]
    error: type[RagframeError]
    message: str


def qrels(id: str, frame: pl.DataFrame, error: type, message: str, **kw: Any) -> Case:
    return Case(f"read_qrels-{id}", lambda d: rf.read_qrels(frame, **kw), error, message)


def qrels_csv(id: str, text: str, error: type, message: str, **kw: Any) -> Case:
    def call(folder: Path) -> Any:
        path = folder / f"{id}.csv"
        path.write_text(text)
        return rf.read_qrels(path, **kw)

    return Case(f"read_qrels-csv-{id}", call, error, message)


def evaluate(id: str, error: type, message: str, **kw: Any) -> Case:
    def call(folder: Path) -> Any:
        options = dict(kw)
        return rf.evaluate(options.pop("qrels", rf.read_qrels(SPANS)), **options).collect()

    return Case(f"evaluate-{id}", call, error, message)


_HINT = r".*0 <= start_char <= end_char"
_HEADER = "query_id,doc_id,start_char,end_char,relevance\n"
CASES = [
    qrels("start-after-end", _with(start_char=[0, 10, 0, 2]), DataError,
          r"qrels: 1 span with start_char > end_char; first: row 1: doc_id 10, start_char 10, "
          r"end_char 9" + _HINT),
    qrels("negative", _with(start_char=[-1, 5, 0, 2]), DataError,
          r"qrels: 1 span with a negative offset; first: row 0" + _HINT),
    qrels("negative-end", _with(start_char=[-3, 5, 0, 2], end_char=[-1, 9, 3, 2]), DataError,
          r"qrels: 1 span with a negative offset"),
    qrels("null-end", _with(end_char=[None, 9, 3, 2]), DataError,
          r"qrels: 1 span judgement without start_char or end_char \(null\); first: row 0.*"
          r"span and document judgements are not mixed"),
    qrels("null-start", _with(start_char=[0, None, None, 2]), DataError,
          r"qrels: 2 span judgements without start_char or end_char"),
    qrels("start-only", SPANS.drop("end_char"), SchemaError,
          r"qrels: column 'start_char' without 'end_char'"),
    qrels("end-only", SPANS.drop("start_char"), SchemaError,
          r"qrels: column 'end_char' without 'start_char'"),
    qrels("float-offsets", _with(start_char=[0.0, 5.0, 0.0, 2.0]), SchemaError,
          r"qrels: column 'start_char' has type Float64; expected int"),
    qrels("string-offsets", _with(end_char=["4", "9", "3", "2"]), SchemaError,
          r"qrels: column 'end_char' has type String"),
    qrels("past-document", SPANS, DataError,
          r"qrels: 1 span past the end of its document; first: row 1: doc_id 10, start_char 5, "
          r"end_char 9, the document has 8 characters",
          documents=DOCUMENTS.with_columns(pl.Series("text", ["abcdefgh", "xyz", "uvw"]))),
    qrels("past-char-count", SPANS, DataError, r"qrels: 1 span past the end of its document",
          documents=pl.DataFrame({"doc_id": [10, 20, 30], "char_count": [10, 2, 3]})),
    qrels("unknown-document", SPANS, DataError,
          r"qrels: 1 judgement on 1 document the documents lack; first: row 3: doc_id 30",
          documents=DOCUMENTS.head(2)),
    qrels("documents-no-text", SPANS, SchemaError,
          r"documents: no column 'text' or 'char_count'", documents=DOCUMENTS.drop("text")),
    qrels("documents-repeated", SPANS, DataError, r"documents: 2 rows share a doc_id",
          documents=pl.concat([DOCUMENTS, DOCUMENTS.head(1)])),
    qrels("documents-int", SPANS, SchemaError, r"documents must be a path or a polars",
          documents=3),
    qrels_csv("start-after-end", _HEADER + "q1,d1,9,3,1\n", DataError,
              r"qrels: 1 span with start_char > end_char; first: {in}/start-after-end.csv: "
              r"row 0: doc_id 'd1', start_char 9, end_char 3"),
    qrels_csv("blank-offset", _HEADER + "q1,d1,0,3,1\nq1,d1,,3,1\n",
              DataError, r"qrels: 1 span judgement without start_char or end_char"),
    evaluate("blocks-without-offsets", ConfigError,
             r"span judgements: span_recall and span_precision need the blocks' offsets",
             blocks=BLOCKS.drop("start_char", "end_char")),
    evaluate("bad-level", ConfigError, r"level must be 'document' or 'chunk', got 'passage'",
             candidates=CANDIDATES, level="passage"),
    evaluate("chunk-without-store", ConfigError, r"level='chunk' needs the chunk store",
             candidates=CANDIDATES, level="chunk"),
    evaluate("chunk-document-qrels", ConfigError, r"level='chunk': .*the qrels have no spans",
             qrels=rf.read_qrels(SPANS.drop("start_char", "end_char").unique(
                 ["query_id", "doc_id"], keep="first", maintain_order=True)),
             candidates=CANDIDATES, chunks=STORE, level="chunk"),
    evaluate("judged-frame-start-after-end", DataError,
             r"qrels: 1 span with start_char > end_char",
             qrels=rf.read_qrels(SPANS).with_columns(pl.Series("start_char", [5, 5, 0, 2])),
             blocks=BLOCKS),
]  # fmt: skip


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_bad_spans_give_one_clear_error(case: Case, tmp_path: Path) -> None:
    before = _snapshot(tmp_path)
    with pytest.raises(RagframeError) as info:
        case.call(tmp_path)
    error = info.value
    assert type(error) is case.error, f"{type(error).__name__}: {error}"
    message = str(error)
    assert "\n" not in message, message
    assert not POLARS_INTERNALS.search(message), message
    pattern = case.message.replace("{in}", re.escape(str(tmp_path)))
    assert re.match(pattern, message), f"{message!r} does not match {pattern!r}"
    made = {p.name for p in tmp_path.iterdir()} - set(before)
    assert made <= {f"{case.id.rsplit('-csv-', 1)[-1]}.csv"}


def test_accepted_spans_account_for_every_query() -> None:
    """Repeated and overlapping spans, offsets of other integer types, spans past the end
    without ``documents`` (unchecked): every judged query and every query with blocks
    is reported; query 4 (blocks, no judgements) is unjudged, query 3 (no relevant
    character) has span_recall 0."""
    spans = pl.concat([SPANS, SPANS.head(1)]).with_columns(
        pl.col("start_char").cast(pl.UInt32), pl.col("end_char").cast(pl.Int32)
    )
    judged = rf.read_qrels(spans.with_columns(pl.Series("end_char", [4, 90, 3, 2, 4])))
    out = rf.evaluate(judged, blocks=BLOCKS, max_characters=100).collect().sort("query_id")
    assert out["query_id"].to_list() == [1, 2, 3, 4]
    assert out["judged"].to_list() == [True, True, True, False]
    recall = out["span_recall"].to_list()
    assert recall[0] == pytest.approx(8 / 89) and recall[1:] == [1.0, 0.0, None]
    assert rf.read_qrels(SPANS, documents=DOCUMENTS).height == 4


def _cli(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    (tmp_path / "q.csv").write_text(text)
    BLOCKS.write_parquet(tmp_path / "blocks.parquet")
    out = tmp_path / "out"
    out.mkdir()
    argv = ["evaluate", str(tmp_path / "blocks.parquet"), "--qrels", str(tmp_path / "q.csv")]
    code = main([*argv, "-o", str(out / "m.parquet")])
    stdout, err = capsys.readouterr()
    assert "Traceback" not in stdout + err
    return code, stdout, err


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("1,10,9,3,1", r"error: qrels: 1 span with start_char > end_char; first: .*q.csv: row 1"),
        ("1,10,-2,3,1", r"error: qrels: 1 span with a negative offset"),
        ("1,10,,3,1", r"error: qrels.*without start_char or end_char"),
    ],
)
def test_the_command_prints_one_error_line(
    rows: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = _cli(
        tmp_path, f"query_id,doc_id,start_char,end_char,relevance\n1,10,0,4,1\n{rows}\n", capsys
    )
    assert code == 2 and stdout == ""
    assert len(err.splitlines()) == 1 and re.match(message, err), err
    assert not list((tmp_path / "out").iterdir())


def test_the_command_reports_span_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(
        tmp_path, "query_id,doc_id,start_char,end_char,relevance\n1,10,0,8,1\n", capsys
    )
    assert code == 0, err
    got = pl.read_parquet(tmp_path / "out" / "m.parquet").sort("query_id")
    assert got["span_recall"][0] == pytest.approx(6 / 8)
    assert got["span_precision"][0] == pytest.approx(6 / 8)
