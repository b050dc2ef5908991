"""Tests for ragframe.window: WindowConfig, section rendering, assemble, windows, CLI."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragframe import ConfigError, SchemaError, WindowConfig, assemble, windows
from ragframe.cli import main

ALPHABET = "ab \n\téü日本語😀\u00a0"


def _config(window: int, overlap: int = 0) -> WindowConfig:
    return WindowConfig(window_chars=window, overlap_chars=overlap)


def _sections(rows: list[tuple[Any, Any, Any, Any]]) -> pl.DataFrame:
    """Rows of (doc_id, section_index, title, text)."""
    return pl.DataFrame(
        rows,
        schema={
            "doc_id": pl.Int64,
            "section_index": pl.Int64,
            "title": pl.String,
            "text": pl.String,
        },
        orient="row",
    )


def _one_doc(text: str) -> pl.DataFrame:
    return _sections([(1, 0, None, text)])


def _reference_windows(full: str, window: int, overlap: int) -> list[tuple[int, int, str]]:
    """Plain Python: (start, end, text) of every window, stopping at the end of full."""
    out, start = [], 0
    while full:
        end = min(start + window, len(full))
        out.append((start, end, full[start:end]))
        if end == len(full):
            break
        start += window - overlap
    return out


def _collect_everywhere(frame: Any, stage: Any, config: WindowConfig) -> pl.DataFrame:
    """Run ``stage`` eager (DataFrame input), lazy and streaming; all must agree."""
    eager = stage(frame, config).collect(engine="in-memory")
    lazy = stage(frame.lazy(), config).collect()
    streaming = stage(frame.lazy(), config).collect(engine="streaming")
    arrow = stage(frame.to_arrow(), config).collect()
    for other in (lazy, streaming, arrow):
        assert other.equals(eager)
    return eager


# --- config -------------------------------------------------------------------------


def test_config_step_and_defaults() -> None:
    assert _config(400, 100).step == 300
    assert WindowConfig(window_chars=5).overlap_chars == 0


def test_config_is_frozen() -> None:
    config = _config(4, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.window_chars = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("window", "overlap"),
    [(0, 0), (-3, 0), (5, 5), (5, 6), (5, -1)],
    ids=["window-zero", "window-negative", "overlap-equal", "overlap-larger", "overlap-negative"],
)
def test_config_out_of_range_names_both_values(window: int, overlap: int) -> None:
    expected = (
        f"invalid window: window_chars={window}, overlap_chars={overlap}; "
        "expected 1 <= window_chars <= 4611686018427387904 and 0 <= overlap_chars < window_chars"
    )
    with pytest.raises(ConfigError) as info:
        _config(window, overlap)
    assert str(info.value) == expected


@pytest.mark.parametrize(
    ("window", "overlap", "shown"),
    [
        (4.0, 1, "window_chars=4.0, overlap_chars=1"),
        (4, True, "window_chars=4, overlap_chars=True"),
    ],
    ids=["float", "bool"],
)
def test_config_non_int_names_both_values(window: Any, overlap: Any, shown: str) -> None:
    expected = (
        f"invalid window: {shown}; expected integers with "
        "1 <= window_chars <= 4611686018427387904 and 0 <= overlap_chars < window_chars"
    )
    with pytest.raises(ConfigError) as info:
        WindowConfig(window_chars=window, overlap_chars=overlap)
    assert str(info.value) == expected


# --- rendering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "text", "rendered"),
    [
        ("Intro", "body", "Intro\nbody"),
        (None, "body", "body"),
        ("", "body", "body"),
        (" ", "body", " \nbody"),
        ("Intro", None, "Intro\n"),
        ("Intro", "", "Intro\n"),
        (None, None, ""),
    ],
    ids=["title", "null-title", "empty-title", "blank-title", "null-text", "empty-text", "none"],
)
def test_render_section(title: str | None, text: str | None, rendered: str) -> None:
    out = assemble(_sections([(1, 0, title, text)]), _config(100)).collect()
    assert out.row(0) == (1, rendered, False)


def test_sections_ordered_by_index_ties_keep_input_order() -> None:
    frame = _sections([(1, 2, None, "c"), (1, 0, "T", "a"), (1, 2, None, "d"), (1, 1, None, "b")])
    out = assemble(frame, _config(100)).collect()
    assert out["text"].to_list() == ["T\na\n\nb\n\nc\n\nd"]


def test_title_column_is_optional() -> None:
    frame = pl.DataFrame({"doc_id": [1, 1], "section_index": [1, 0], "text": ["y", "x"]})
    assert assemble(frame, _config(100)).collect()["text"].to_list() == ["x\n\ny"]


def test_documents_in_first_appearance_order_and_string_ids() -> None:
    frame = pl.DataFrame(
        {"doc_id": ["b", "a", "b", None], "section_index": [0, 0, 1, 0], "text": list("xyzw")}
    )
    out = assemble(frame, _config(100)).collect()
    assert out.rows() == [("b", "x\n\nz", False), ("a", "y", False), (None, "w", False)]


# --- assemble: the seed's single window -----------------------------------------------


def test_assemble_fits_is_verbatim() -> None:
    out = _collect_everywhere(_one_doc("abcd"), assemble, _config(4))
    assert out.rows() == [(1, "abcd", False)]


def test_assemble_longer_is_exact_prefix() -> None:
    frame = _sections([(1, 0, "Título", "日本語😀 text"), (1, 1, None, "more")])
    out = _collect_everywhere(frame, assemble, _config(10))
    assert out.rows() == [(1, "Título\n日本語", True)]


def test_assemble_no_sections_gives_empty_text() -> None:
    frame = _sections([(1, None, None, None), (2, 0, None, "x"), (2, None, "ignored", "ignored")])
    out = _collect_everywhere(frame, assemble, _config(3))
    assert out.rows() == [(1, "", False), (2, "x", False)]


# --- windows --------------------------------------------------------------------------


def test_windows_example_from_the_brief() -> None:
    out = _collect_everywhere(_one_doc("abcdefghij"), windows, _config(4, 2))
    assert out.columns == ["doc_id", "window_index", "start_char", "end_char", "text"]
    assert out.rows() == [
        (1, 0, 0, 4, "abcd"),
        (1, 1, 2, 6, "cdef"),
        (1, 2, 4, 8, "efgh"),
        (1, 3, 6, 10, "ghij"),
    ]


@pytest.mark.parametrize(
    ("length", "window", "overlap", "count"),
    [
        (0, 4, 2, 0),
        (1, 4, 2, 1),
        (4, 4, 2, 1),
        (5, 4, 2, 2),
        (6, 4, 2, 2),
        (7, 4, 2, 3),
        (10, 4, 0, 3),
        (10, 1, 0, 10),
        (400, 400, 100, 1),
        (401, 400, 100, 2),
        (700, 400, 100, 2),
        (701, 400, 100, 3),
    ],
    ids=lambda v: str(v),
)
def test_window_count_and_last_window(length: int, window: int, overlap: int, count: int) -> None:
    out = windows(_one_doc("x" * length), _config(window, overlap)).collect()
    assert out.height == count
    if count:
        assert out["end_char"][-1] == length
        assert out["start_char"].to_list() == [i * (window - overlap) for i in range(count)]


def test_empty_document_has_no_windows() -> None:
    frame = _sections([(1, 0, None, ""), (2, None, None, None), (3, 0, None, "abc")])
    out = windows(frame, _config(2, 1)).collect()
    assert out["doc_id"].to_list() == [3, 3]


def test_windows_unicode_offsets_are_characters() -> None:
    full = "Ça 日本語 😀👍🏽 naïve"
    out = _collect_everywhere(_one_doc(full), windows, _config(5, 2))
    expected = _reference_windows(full, 5, 2)
    assert out.select("start_char", "end_char", "text").rows() == expected


def test_windows_long_non_ascii_document_uses_blocks_exactly() -> None:
    full = ("é日😀abc " * 900)[:6001]
    frame = _sections([(1, 0, None, full), (2, 0, None, "plain ascii " * 500)])
    out = _collect_everywhere(frame, windows, _config(10, 3))
    for doc_id, text in ((1, full), (2, "plain ascii " * 500)):
        got = out.filter(pl.col("doc_id") == doc_id).select("start_char", "end_char", "text")
        assert got.rows() == _reference_windows(text, 10, 3)


# --- properties -----------------------------------------------------------------------

texts = st.text(alphabet=ALPHABET, max_size=60)
section_rows = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 4), st.none() | texts, st.none() | texts),
    max_size=12,
)


@st.composite
def window_configs(draw: st.DrawFn) -> WindowConfig:
    window = draw(st.integers(1, 12))
    return _config(window, draw(st.integers(0, window - 1)))


def _reference_full(rows: list[tuple[int, int, str | None, str | None]]) -> dict[int, str]:
    docs: dict[int, list[tuple[int, str]]] = {}
    for doc_id, index, title, text in rows:
        body = text or ""
        docs.setdefault(doc_id, []).append((index, f"{title}\n{body}" if title else body))
    return {d: "\n\n".join(t for _, t in sorted(s, key=lambda p: p[0])) for d, s in docs.items()}


@settings(max_examples=150, deadline=None)
@given(rows=section_rows, config=window_configs())
def test_windows_match_reference_and_rebuild_full(
    rows: list[tuple[int, int, str | None, str | None]], config: WindowConfig
) -> None:
    out = windows(_sections(rows), config).collect()
    w, o = config.window_chars, config.overlap_chars
    for doc_id, full in _reference_full(rows).items():
        got = out.filter(pl.col("doc_id") == doc_id)
        assert got.select("start_char", "end_char", "text").rows() == _reference_windows(full, w, o)
        assert got["window_index"].to_list() == list(range(got.height))
        parts = got["text"].to_list()
        assert all(len(p) <= w for p in parts)
        for prev, cur in itertools.pairwise(parts):
            assert len(cur) > o and prev[len(prev) - o :] == cur[:o]
        ends, starts = got["end_char"].to_list(), got["start_char"].to_list()
        assert all(end - start == o for end, start in zip(ends, starts[1:], strict=False))
        rebuilt = "".join([parts[0], *(p[o:] for p in parts[1:])]) if parts else ""
        assert rebuilt == full


@settings(max_examples=100, deadline=None)
@given(rows=section_rows, window=st.integers(1, 40))
def test_assemble_is_bounded_prefix(
    rows: list[tuple[int, int, str | None, str | None]], window: int
) -> None:
    out = assemble(_sections(rows), _config(window)).collect()
    expected = [(d, f[:window], len(f) > window) for d, f in _reference_full(rows).items()]
    assert out.rows() == expected


# --- schema errors --------------------------------------------------------------------


def test_missing_column_fails_before_collect() -> None:
    frame = pl.LazyFrame({"doc_id": [1], "section": [0], "text": ["x"]})
    with pytest.raises(SchemaError, match="missing column 'section_index'"):
        windows(frame, _config(3))


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("section_index", ["0"], "column 'section_index' has type String; expected int"),
        ("text", [1], "column 'text' has type Int64; expected string"),
        ("title", [2.0], "column 'title' has type Float64; expected string"),
        ("doc_id", [1.5], "column 'doc_id' has type Float64; expected int or string"),
    ],
    ids=["index-string", "text-int", "title-float", "doc-float"],
)
def test_wrong_dtype(column: str, values: list[Any], message: str) -> None:
    data: dict[str, list[Any]] = {"doc_id": [1], "section_index": [0], "text": ["x"]}
    data[column] = values
    for stage in (windows, assemble):
        with pytest.raises(SchemaError, match=message):
            stage(pl.DataFrame(data), _config(3))


def test_not_a_frame() -> None:
    with pytest.raises(SchemaError, match="sections must be a polars DataFrame"):
        windows([{"doc_id": 1}], _config(3))


# --- CLI ------------------------------------------------------------------------------


def _write(frame: pl.DataFrame, path: Path) -> None:
    {".parquet": frame.write_parquet, ".csv": frame.write_csv, ".jsonl": frame.write_ndjson}[
        path.suffix
    ](path)


def _read(path: Path) -> pl.DataFrame:
    readers = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".jsonl": pl.read_ndjson}
    return readers[path.suffix](path)


@pytest.mark.parametrize("ext", [".parquet", ".csv", ".jsonl"])
def test_cli_window(tmp_path: Path, ext: str, capsys: pytest.CaptureFixture[str]) -> None:
    frame = _sections([(1, 0, "T", "abcdef"), (1, 1, None, "gh"), (2, 0, None, "xy")])
    source, target = tmp_path / f"sections{ext}", tmp_path / f"out{ext}"
    _write(frame, source)
    argv = ["window", str(source), "-o", str(target), "--window", "4", "--overlap", "1"]
    assert main(argv) == 0
    expected = windows(frame, _config(4, 1)).collect()
    assert _read(target).equals(expected)
    printed = capsys.readouterr().out
    assert "documents" in printed and "windows" in printed and "characters" in printed


def test_cli_window_single(tmp_path: Path) -> None:
    frame = _sections([(1, 0, "T", "abcdef"), (2, 0, None, "xy")])
    source, target = tmp_path / "s.parquet", tmp_path / "o.jsonl"
    frame.write_parquet(source)
    assert main(["window", str(source), "-o", str(target), "--window", "4", "--single"]) == 0
    assert _read(target).rows() == [(1, "T\nab", True), (2, "xy", False)]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--window", "3", "--overlap", "3"], "error: invalid window: window_chars=3"),
        (["--window", "3", "--single", "--overlap", "-1"], "error: invalid window"),
    ],
    ids=["overlap-equal", "negative-overlap"],
)
def test_cli_window_errors_exit_2_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    source = tmp_path / "s.parquet"
    _one_doc("abc").write_parquet(source)
    assert main(["window", str(source), "-o", str(tmp_path / "out" / "o.parquet"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["s.parquet"]


def test_cli_window_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "s.csv"
    pl.DataFrame({"doc_id": [1], "text": ["x"]}).write_csv(source)
    assert main(["window", str(source), "-o", str(tmp_path / "o.csv"), "--window", "3"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: sections: missing column 'section_index'; found: ['doc_id', 'text']\n")
    assert not (tmp_path / "o.csv").exists()
