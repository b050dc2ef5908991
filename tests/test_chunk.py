"""Tests for ragframe.chunk: windows over raw documents, Cranfield reproduction, CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragframe import SchemaError, WindowConfig, chunk, windows
from ragframe.cli import main
from ragframe.window import _slide
from tests.conftest import require_cranfield

ALPHABET = "ab \n\téü日本語😀\u00a0"
COLUMNS = ["doc_id", "chunk_index", "start_char", "end_char", "text"]


def _config(window: int, overlap: int = 0) -> WindowConfig:
    return WindowConfig(window_chars=window, overlap_chars=overlap)


def _docs(contents: list[str | None], ids: list[Any] | None = None) -> pl.DataFrame:
    return pl.DataFrame(
        {"doc_id": ids if ids is not None else list(range(len(contents))), "content": contents},
        schema_overrides={"content": pl.String},
    )


def _reference_chunks(docs: pl.DataFrame, window: int, overlap: int) -> list[tuple[Any, ...]]:
    """Plain Python slicing loop: the rows ``chunk`` must produce."""
    rows: list[tuple[Any, ...]] = []
    for doc_id, content in docs.select("doc_id", "content").iter_rows():
        text, start, index = content or "", 0, 0
        while text:
            end = min(start + window, len(text))
            rows.append((doc_id, index, start, end, text[start:end]))
            if end == len(text):
                break
            start, index = start + window - overlap, index + 1
    return rows


def _collect_everywhere(frame: pl.DataFrame, config: WindowConfig) -> pl.DataFrame:
    eager = chunk(frame, config).collect(engine="in-memory")
    for other in (
        chunk(frame.lazy(), config).collect(),
        chunk(frame.lazy(), config).collect(engine="streaming"),
        chunk(frame.to_arrow(), config).collect(),
    ):
        assert other.equals(eager)
    return eager


def test_chunk_columns_offsets_and_dtypes() -> None:
    out = _collect_everywhere(_docs(["abcdefghij"]), _config(4, 2))
    assert out.schema == pl.Schema(
        {
            "doc_id": pl.Int64,
            "chunk_index": pl.Int64,
            "start_char": pl.Int64,
            "end_char": pl.Int64,
            "text": pl.String,
        }
    )
    assert out.rows() == [
        (0, 0, 0, 4, "abcd"),
        (0, 1, 2, 6, "cdef"),
        (0, 2, 4, 8, "efgh"),
        (0, 3, 6, 10, "ghij"),
    ]


def test_empty_and_null_documents_have_no_chunks() -> None:
    out = chunk(_docs(["", None, "xyz"]), _config(2)).collect()
    assert out.rows() == [(2, 0, 0, 2, "xy"), (2, 1, 2, 3, "z")]


def test_extra_columns_are_dropped_and_string_ids_kept() -> None:
    docs = pl.DataFrame({"title": ["t"], "doc_id": ["d1"], "content": ["abc"], "n": [1]})
    out = chunk(docs, _config(5)).collect()
    assert out.columns == COLUMNS
    assert out.rows() == [("d1", 0, 0, 3, "abc")]


def test_duplicate_doc_ids_are_separate_documents() -> None:
    out = chunk(_docs(["ab", "cd"], ids=[7, 7]), _config(5)).collect()
    assert out.rows() == [(7, 0, 0, 2, "ab"), (7, 0, 0, 2, "cd")]


def test_chunk_equals_windows_over_one_untitled_section() -> None:
    docs = _docs(["Ça 日本語 😀 " * 40, "plain " * 70, ""])
    sections = docs.select(
        "doc_id", pl.lit(0).alias("section_index"), pl.col("content").alias("text")
    )
    config = _config(37, 11)
    from_windows = windows(sections, config).collect().rename({"window_index": "chunk_index"})
    assert chunk(docs, config).collect().equals(from_windows)


def test_unicode_offsets_are_code_points() -> None:
    docs = _docs(["naïve 😀👍🏽 日本語 text", ("é日😀abc " * 700)[:4001], "ascii only " * 300])
    out = _collect_everywhere(docs, _config(9, 4))
    assert out.rows() == _reference_chunks(docs, 9, 4)


@settings(max_examples=150, deadline=None)
@given(
    contents=st.lists(st.none() | st.text(alphabet=ALPHABET, max_size=300), max_size=6),
    window=st.integers(1, 25),
    data=st.data(),
)
def test_chunks_match_python_loop(contents: list[str | None], window: int, data: Any) -> None:
    overlap = data.draw(st.integers(0, window - 1))
    docs = _docs(contents)
    out = chunk(docs, _config(window, overlap)).collect()
    assert out.rows() == _reference_chunks(docs, window, overlap)
    for doc_id, content in enumerate(contents):
        parts = out.filter(pl.col("doc_id") == doc_id)["text"].to_list()
        rebuilt = "".join([parts[0], *(p[overlap:] for p in parts[1:])]) if parts else ""
        assert rebuilt == (content or "")


@settings(max_examples=150, deadline=None)
@given(
    contents=st.lists(st.text(alphabet=ALPHABET, max_size=200), max_size=4),
    window=st.integers(1, 12),
    data=st.data(),
)
def test_smallest_blocks_match_python_loop(contents: list[str], window: int, data: Any) -> None:
    """Non-ASCII texts are cut into blocks; shrink them to the smallest that is valid."""
    overlap = data.draw(st.integers(0, window - 1))
    docs = _docs(["é" + c for c in contents])
    with mock.patch.object(_slide, "_block_bytes", lambda w: 4 * w + 4):
        out = chunk(docs, _config(window, overlap)).collect()
    assert out.rows() == _reference_chunks(docs, window, overlap)


@pytest.mark.parametrize(
    ("text", "window", "overlap"),
    [
        ("😀" * 9000, 1024, 1),
        ("😀" * 3000, 2000, 1999),
        ("a" + "日" * 5000 + "é" * 5000, 700, 300),
        ("x" * 3000 + "é", 100, 0),
    ],
    ids=["emoji-tight", "emoji-step-1", "cjk-accents", "ascii-then-accent"],
)
def test_long_non_ascii_documents(text: str, window: int, overlap: int) -> None:
    docs = _docs([text, "ascii " * 2000])
    out = _collect_everywhere(docs, _config(window, overlap))
    assert out.rows() == _reference_chunks(docs, window, overlap)


@settings(max_examples=60, deadline=None)
@given(
    runs=st.lists(st.tuples(st.integers(0, 1500), st.sampled_from("éü日本😀\u00a0")), max_size=6),
    window=st.integers(1, 600),
    data=st.data(),
)
def test_long_mostly_ascii_documents_match_python_loop(
    runs: list[tuple[int, str]], window: int, data: Any
) -> None:
    """Long ASCII stretches with a few non-ASCII characters: ASCII runs are skipped."""
    overlap = data.draw(st.integers(0, window - 1))
    text = "".join("x" * n + ch for n, ch in runs)
    docs = _docs([text, "y" * 700, text[::-1]])
    out = chunk(docs, _config(window, overlap)).collect()
    assert out.rows() == _reference_chunks(docs, window, overlap)


def test_sliced_and_multi_chunk_input() -> None:
    """The kernel reads Arrow buffers directly: offsets and several chunks must hold."""
    contents = ["é" * 30 + "abc" * 50, "short", "", "x" * 40, "日本語" * 9, "z", "ü"]
    docs = _docs([*contents, None] * 3)
    pieces = pl.concat([docs[1:8], docs[8:13], docs[13:]], rechunk=False)
    assert pieces["content"].n_chunks() == 3
    for frame in (pieces, _docs(contents * 3)[5:17]):
        out = _collect_everywhere(frame, _config(7, 3))
        assert out.rows() == _reference_chunks(frame, 7, 3)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"id": [1], "content": ["x"]}, "documents: missing column 'doc_id'"),
        ({"doc_id": [1], "text": ["x"]}, "documents: missing column 'content'"),
        ({"doc_id": [1], "content": [3]}, "column 'content' has type Int64; expected string"),
        ({"doc_id": [True], "content": ["x"]}, "column 'doc_id' has type Boolean"),
    ],
    ids=["no-doc-id", "no-content", "content-int", "doc-id-bool"],
)
def test_schema_errors_before_collect(data: dict[str, list[Any]], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        chunk(pl.LazyFrame(data), _config(3))


# --- Cranfield ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cranfield() -> Path:
    return require_cranfield("docs.parquet", "chunks.parquet")


def test_reproduces_cranfield_chunks_exactly(cranfield: Path) -> None:
    docs = pl.read_parquet(cranfield / "docs.parquet")
    expected = pl.read_parquet(cranfield / "chunks.parquet")
    out = _collect_everywhere(docs, _config(400, 100))
    assert out.equals(expected)


# --- CLI ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst"), [(".parquet", ".csv"), (".csv", ".jsonl"), (".jsonl", ".parquet")]
)
def test_cli_chunk_formats(
    tmp_path: Path, src: str, dst: str, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _docs(["abcdefghij", "", "日本語😀"], ids=[3, 4, 5])
    source, target = tmp_path / f"docs{src}", tmp_path / f"chunks{dst}"
    {".parquet": docs.write_parquet, ".csv": docs.write_csv, ".jsonl": docs.write_ndjson}[src](
        source
    )
    argv = ["chunk", str(source), "-o", str(target), "--window", "4", "--overlap", "1"]
    assert main(argv) == 0
    read = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}[dst]
    assert read(target).rows() == _reference_chunks(docs, 4, 1)
    printed = capsys.readouterr().out
    assert "documents" in printed and "chunks" in printed and "characters" in printed


def test_cli_chunk_cranfield(tmp_path: Path, cranfield: Path) -> None:
    target = tmp_path / "chunks.parquet"
    argv = ["chunk", str(cranfield / "docs.parquet"), "-o", str(target)]
    assert main([*argv, "--window", "400", "--overlap", "100"]) == 0
    assert pl.read_parquet(target).equals(pl.read_parquet(cranfield / "chunks.parquet"))


@pytest.mark.parametrize(
    ("name", "extra", "message"),
    [
        ("d.parquet", ["--window", "0"], "error: invalid window: window_chars=0, overlap_chars=0"),
        ("missing.parquet", ["--window", "4"], "error: input file not found"),
        ("d.txt", ["--window", "4"], "error: unsupported file extension '.txt'"),
        ("bad.csv", ["--window", "4"], "error: documents: column 'content' has type Int64"),
    ],
    ids=["bad-window", "missing-input", "bad-extension", "bad-dtype"],
)
def test_cli_chunk_errors_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, extra: list[str], message: str
) -> None:
    _docs(["abc"]).write_parquet(tmp_path / "d.parquet")
    (tmp_path / "d.txt").write_text("doc_id,content\n1,abc\n")
    pl.DataFrame({"doc_id": [1], "content": [5]}).write_csv(tmp_path / "bad.csv")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "chunks.parquet"
    assert main(["chunk", str(tmp_path / name), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_cli_chunk_unreadable_input_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "broken.parquet"
    source.write_bytes(b"not a parquet file")
    assert main(["chunk", str(source), "-o", str(tmp_path / "o.parquet"), "--window", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert not (tmp_path / "o.parquet").exists()


def test_cli_chunk_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "d.parquet"
    _docs(["abc"]).write_parquet(source)
    (tmp_path / "file").write_text("not a folder")
    target = tmp_path / "file" / "chunks.parquet"
    assert main(["chunk", str(source), "-o", str(target), "--window", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write {target}") and err.count("\n") == 1
