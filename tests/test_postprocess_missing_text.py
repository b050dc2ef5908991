"""Missing text (SPEC 1, "Missing text"): a candidate the chunk store lacks is a data
error by default, empty text or dropped on request, and counted in the CLI summary."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import ragframe
from ragframe import schema as c
from ragframe.cli import main
from ragframe.errors import ConfigError, DataError
from ragframe.io import write_table
from ragframe.postprocess import PostprocessConfig, missing_text_counts
from tests.conftest import assert_same_rows, cand, config, frame, run_engine, run_reference

STORE = pl.DataFrame(
    {
        c.ENTITY_ID: [1, 1, 2, 3],
        c.CHUNK_INDEX: [0, 1, 0, 0],
        c.TEXT: ["one zero", "one one", "two zero", None],
    }
)
CANDIDATES = frame(
    [
        cand(9, None, 0.99, 0, query_id=1),  # missing, ranked first
        cand(1, None, 0.90, 0, query_id=1),
        cand(1, None, 0.80, 1, query_id=1),
        cand(1, None, 0.70, 7, query_id=2),  # missing
        cand(None, None, 0.60, 0, query_id=2),  # no entity: never in a store
        cand(3, None, 0.50, None, query_id=3),  # null chunk index reads as 0; null text
    ]
).drop(c.TEXT)
WANT = "chunks: 3 candidate(s) in 2 query(ies) have no text in the chunk store"


def _message(error: BaseException) -> str:
    return str(error).splitlines()[0]  # the engine's error may carry Polars' context


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
@pytest.mark.parametrize("kind", ["frame", "lazy"])
def test_missing_text_is_a_data_error_by_default(engine: str, kind: str) -> None:
    data = CANDIDATES.lazy() if kind == "lazy" else CANDIDATES
    store = STORE.lazy() if kind == "lazy" else STORE
    plan = ragframe.postprocess(data, PostprocessConfig(), chunks=store)  # nothing raised yet
    with pytest.raises(DataError) as engine_error:
        plan.collect(engine=engine)
    with pytest.raises(ValueError) as reference_error:
        run_reference(CANDIDATES, PostprocessConfig(), chunks=STORE)
    message = _message(engine_error.value)
    assert message == _message(reference_error.value)
    assert message.startswith(WANT)
    assert "first keys (entity_id, chunk_index): [(9, 0), (1, 7), (None, 0)]" in message


def test_the_error_names_the_first_five_keys_in_input_order() -> None:
    rows = [cand(100 + i, None, 0.5, i, query_id=i % 3) for i in range(8)]
    df = frame(rows).drop(c.TEXT)
    with pytest.raises(DataError) as error:
        run_engine(df, PostprocessConfig(), chunks=STORE)
    keys = ", ".join(f"({100 + i}, {i})" for i in range(5))
    assert "8 candidate(s) in 3 query(ies)" in str(error.value)
    assert f"[{keys}, ...]" in str(error.value)


def test_the_error_writes_string_keys_as_the_reference_does() -> None:
    """Keys with quotes, a backslash and a line break: written as Python writes them,
    the same as the reference's message, ``...`` after the first five."""
    names = ["it's", 'say "hi"', "back\\slash", "two\nlines", "plain", "sixth"]
    rows = [cand(name, None, 0.5, i, query_id=i) for i, name in enumerate(names)]
    df = frame(rows, **{c.ENTITY_ID: pl.String()})
    df = df.drop(c.TEXT)
    store = STORE.with_columns(pl.col(c.ENTITY_ID).cast(pl.String))
    with pytest.raises(DataError) as engine_error:
        run_engine(df, PostprocessConfig(), chunks=store)
    with pytest.raises(ValueError) as reference_error:
        run_reference(df, PostprocessConfig(), chunks=store)
    message = str(engine_error.value)
    assert _message(engine_error.value) == _message(reference_error.value)
    shown = ", ".join(f"({name!r}, {i})" for i, name in enumerate(names[:5]))
    assert f"first keys (entity_id, chunk_index): [{shown}, ...];" in message


def test_a_complete_store_raises_nothing() -> None:
    df = CANDIDATES.filter(pl.col(c.ENTITY_ID).is_in([1, 3]) & (pl.col(c.QUERY_ID) != 2))
    got = run_engine(df, PostprocessConfig(), chunks=STORE)
    assert_same_rows(got, run_reference(df, PostprocessConfig(), chunks=STORE))
    assert [r[c.TEXT] for r in got] == ["one zero\none one", ""]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
@pytest.mark.parametrize("mode", ["empty", "drop"])
@pytest.mark.parametrize("ids", [pl.Int64, pl.String])
def test_empty_and_drop_equal_the_reference(engine: str, mode: str, ids: pl.DataType) -> None:
    df, store = (f.with_columns(pl.col(c.ENTITY_ID).cast(ids)) for f in (CANDIDATES, STORE))
    cfg = config(5, 0.0, 1, 5, 5000, 2000, missing_text=mode)
    want = run_reference(df, cfg, chunks=store)
    assert_same_rows(run_engine(df, cfg, chunks=store, engine=engine), want)


def test_drop_happens_before_ranking_and_empty_takes_a_place() -> None:
    """top_k 1: "empty" selects the missing candidate (ranked first) as an empty
    chunk; "drop" never sees it, so the next candidate is selected."""
    df = CANDIDATES.filter(pl.col(c.QUERY_ID) == 1)
    texts = {}
    for mode in ("empty", "drop"):
        cfg = config(1, 0.0, 1, 5, 5000, 2000, missing_text=mode)
        rows = run_engine(df, cfg, chunks=STORE)
        assert_same_rows(rows, run_reference(df, cfg, chunks=STORE))
        texts[mode] = [(r[c.ENTITY_ID], r[c.TEXT]) for r in rows]
    assert texts == {"empty": [(9, "")], "drop": [(1, "one zero")]}


def test_dropping_every_candidate_of_a_query_leaves_it_without_blocks() -> None:
    cfg = PostprocessConfig(missing_text="drop")
    df = CANDIDATES.filter(pl.col(c.QUERY_ID) == 2)
    assert run_engine(df, cfg, chunks=STORE) == run_reference(df, cfg, chunks=STORE) == []


def test_offsets_mode_with_missing_chunks_equals_reference() -> None:
    store = STORE.with_columns(
        pl.lit(0).alias(c.START_CHAR), pl.col(c.TEXT).str.len_chars().fill_null(0).alias(c.END_CHAR)
    )
    for mode in ("empty", "drop"):
        cfg = config(5, 0.0, 1, 5, 5000, 2000, overlap="offsets", missing_text=mode)
        got = run_engine(CANDIDATES, cfg, chunks=store)
        assert_same_rows(got, run_reference(CANDIDATES, cfg, chunks=store))


def test_without_a_store_missing_text_is_not_read() -> None:
    df = frame([cand(1, "inline", 0.5)])
    assert [r[c.TEXT] for r in run_engine(df, PostprocessConfig())] == ["inline"]


def test_missing_text_counts() -> None:
    assert missing_text_counts(CANDIDATES, STORE).collect().row(0) == (3, 2)
    assert missing_text_counts(CANDIDATES, None).collect().row(0) == (0, 0)
    complete = CANDIDATES.filter(pl.col(c.ENTITY_ID).is_in([1, 2]) & (pl.col(c.QUERY_ID) == 1))
    assert missing_text_counts(complete.lazy(), STORE.lazy()).collect().row(0) == (0, 0)


def test_an_unknown_policy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="missing_text must be 'error', 'empty' or 'drop'"):
        PostprocessConfig(missing_text="ignore")  # type: ignore[arg-type]


# --- the CLI ---------------------------------------------------------------------------


def _summary(out: str, key: str) -> str:
    match = re.search(rf"^\s+{key}\s+(.*)$", out, re.MULTILINE)
    assert match, out
    return match.group(1)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    results, chunks = tmp_path / "results.parquet", tmp_path / "chunks.parquet"
    write_table(CANDIDATES, results)
    write_table(STORE, chunks)
    return results, chunks


@pytest.mark.parametrize("mode", ["empty", "drop"])
def test_cli_counts_missing_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    results, chunks = _files(tmp_path)
    argv: list[Any] = [results, "--chunks", chunks, "-o", tmp_path / "b.parquet"]
    assert main(["postprocess", *map(str, argv), "--missing-text", mode]) == 0
    out = capsys.readouterr().out
    assert _summary(out, "missing text") == f"3 candidates in 2 queries (missing_text={mode})"


def test_cli_missing_text_is_an_error_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, chunks = _files(tmp_path)
    target = tmp_path / "b.parquet"
    assert main(["postprocess", str(results), "--chunks", str(chunks), "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + WANT), err
    assert not target.exists()


def test_cli_reports_no_missing_text_for_a_complete_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results, chunks = tmp_path / "results.parquet", tmp_path / "chunks.parquet"
    write_table(CANDIDATES.filter(pl.col(c.ENTITY_ID) == 1, pl.col(c.QUERY_ID) == 1), results)
    write_table(STORE, chunks)
    argv = [str(results), "--chunks", str(chunks), "-o", str(tmp_path / "b.parquet")]
    assert main(["postprocess", *argv]) == 0
    out = capsys.readouterr().out
    assert _summary(out, "missing text") == "0 candidates in 0 queries (missing_text=error)"
