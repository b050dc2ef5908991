"""A truncated or corrupted Parquet input, a file or one part of a dataset: the library
raises a :class:`DataError` naming the file and saying it is not a readable Parquet
file; the command prints exactly that one ``error:`` line (no traceback), exits with 2
and writes nothing. A footer that is cut or overwritten is found before any work (every
footer is read up front); pages that are damaged behind a whole footer are found when
they are read, and the file that holds them is then named, on every engine."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from ragframe import io
from ragframe.cli import main
from ragframe.dataset import chunk_dataset, fetch_dataset, postprocess_dataset
from ragframe.errors import DataError
from tests import clusters

RESULTS = pl.DataFrame(
    {
        "query_id": [q for q in range(400) for _ in range(3)],
        "entity_id": list(range(1200)),
        "chunk_index": [0, 1, 2] * 400,
        "text": [f"text of candidate {i} " * 4 for i in range(1200)],
        "similarity": [1.0 - i / 1200 for i in range(1200)],
    }
)
DOCUMENTS = pl.DataFrame(
    {"doc_id": list(range(300)), "content": [f"document {i} about lift " * 20 for i in range(300)]}
)
REQUESTS = pl.DataFrame(
    {"query_id": list(range(300)), "query": ["lift"] * 300, "doc_id": list(range(300))}
)
SECTIONS = pl.DataFrame(
    {
        "doc_id": [d for d in range(300) for _ in range(2)],
        "section_index": [0, 1] * 300,
        "text": [f"section text {i} " * 8 for i in range(600)],
    }
)
QRELS = pl.DataFrame({"query_id": [0, 1], "doc_id": [0, 3], "relevance": [1, 1]})
MESSAGE = "not a readable Parquet file"


def truncated(path: Path) -> None:
    """The second half cut off (the footer with it)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def footer(path: Path) -> None:
    """The footer's length and magic overwritten."""
    data = bytearray(path.read_bytes())
    data[-8:] = b"\x00\xff" * 4
    path.write_bytes(bytes(data))


def pages(path: Path) -> None:
    """Every column chunk's pages overwritten, the footer left whole: only reading the
    rows finds it."""
    meta = pq.read_metadata(path)
    data = bytearray(path.read_bytes())
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for j in range(group.num_columns):
            column = group.column(j)
            start = column.dictionary_page_offset or column.data_page_offset
            data[start : start + column.total_compressed_size] = b"\x55" * (
                column.total_compressed_size
            )
    path.write_bytes(bytes(data))


def not_parquet(path: Path) -> None:
    path.write_text("query_id,text\n1,this is CSV text in a .parquet file\n")


DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": truncated,
    "footer": footer,
    "pages": pages,
    "not-parquet": not_parquet,
}


def damaged(folder: Path, df: pl.DataFrame, name: str, damage: str, layout: str) -> tuple[str, str]:
    """``df`` written as ``name`` (a file) or as a directory of two parts, the second
    damaged; returns (the input path, the damaged file)."""
    if layout == "file":
        path = folder / f"{name}.parquet"
        df.write_parquet(path)
        DAMAGES[damage](path)
        return str(path), str(path)
    root = folder / name
    root.mkdir()
    half = df.height // 2
    df.slice(0, half).write_parquet(root / "part-00000.parquet")
    bad = root / "part-00001.parquet"
    df.slice(half).write_parquet(bad)
    DAMAGES[damage](bad)
    return str(root), str(bad)


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


CASES = [(d, layout) for d in DAMAGES for layout in ("file", "dataset")]
IDS = [f"{d}-{layout}" for d, layout in CASES]


# --- the library -------------------------------------------------------------------


@pytest.mark.parametrize(("damage", "layout"), CASES, ids=IDS)
def test_postprocess_dataset_names_the_file(tmp_path: Path, damage: str, layout: str) -> None:
    given, bad = damaged(tmp_path, RESULTS, "results", damage, layout)
    before = _listing(tmp_path)
    out = tmp_path / "blocks.parquet"
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE} \(.+\); expected"):
        postprocess_dataset(given, out, rows_per_partition=300, progress=False)
    assert _listing(tmp_path) == before  # no output, no temporary, no spill


@pytest.mark.parametrize(("damage", "layout"), CASES, ids=IDS)
def test_chunk_store_names_the_file(tmp_path: Path, damage: str, layout: str) -> None:
    store = RESULTS.select("entity_id", "chunk_index", "text")
    given, bad = damaged(tmp_path, store, "chunks", damage, layout)
    results = tmp_path / "results.parquet"
    RESULTS.drop("text").write_parquet(results)
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE}"):
        postprocess_dataset(results, tmp_path / "b.parquet", chunks=given, progress=False)
    assert not (tmp_path / "b.parquet").exists()


@pytest.mark.parametrize(("damage", "layout"), CASES, ids=IDS)
def test_fetch_and_chunk_datasets_name_the_file(tmp_path: Path, damage: str, layout: str) -> None:
    given, bad = damaged(tmp_path, DOCUMENTS, "documents", damage, layout)
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE}"):
        fetch_dataset(REQUESTS, given, tmp_path / "f.parquet", progress=False)
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE}"):
        chunk_dataset(given, tmp_path / "c.parquet", {"window_chars": 50}, progress=False)
    assert not (tmp_path / "f.parquet").exists() and not (tmp_path / "c.parquet").exists()


@pytest.mark.parametrize(("damage", "layout"), CASES, ids=IDS)
def test_read_table_names_the_file(tmp_path: Path, damage: str, layout: str) -> None:
    given, bad = damaged(tmp_path, RESULTS, "results", damage, layout)
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE}"):
        io.read_table(given)


@pytest.mark.parametrize("damage", ["truncated", "footer", "not-parquet"])
def test_scan_reads_every_footer_up_front(tmp_path: Path, damage: str) -> None:
    """A damaged footer of any part fails the scan itself, before any plan runs (the
    first part, whose schema Polars reads, is whole)."""
    given, bad = damaged(tmp_path, RESULTS, "results", damage, "dataset")
    with pytest.raises(DataError, match=rf"^cannot read {bad}: {MESSAGE}"):
        io.scan_table(given)


def test_whole_files_still_read(tmp_path: Path) -> None:
    """The checks cost nothing in behaviour: a whole dataset reads as before."""
    root = tmp_path / "results"
    root.mkdir()
    RESULTS.slice(0, 600).write_parquet(root / "part-00000.parquet")
    RESULTS.slice(600).write_parquet(root / "part-00001.parquet")
    assert io.read_table(root).equals(RESULTS)


# --- the command line --------------------------------------------------------------


def _args(command: str, given: str, folder: Path) -> list[str]:
    if command == "postprocess":
        return ["postprocess", given]
    if command == "fetch":
        requests = folder / "requests.parquet"
        REQUESTS.write_parquet(requests)
        return ["fetch", str(requests), given]
    if command == "window":
        return ["window", given, "--window-chars", "40"]
    if command == "chunk":
        return ["chunk", given, "--window-chars", "40"]
    qrels = folder / "qrels.parquet"
    QRELS.write_parquet(qrels)
    return ["evaluate", given, "--qrels", str(qrels)]


INPUTS = {
    "postprocess": RESULTS,
    "fetch": DOCUMENTS,
    "window": SECTIONS,
    "chunk": DOCUMENTS,
    "evaluate": RESULTS.rename({"entity_id": "doc_id"}),
}
CLI_CASES = [
    (command, damage, layout)
    for command in INPUTS
    for damage, layout in [("truncated", "file"), ("pages", "file"), ("footer", "dataset")]
] + [(command, "pages", "dataset") for command in INPUTS]


@pytest.mark.parametrize(
    ("command", "damage", "layout"), CLI_CASES, ids=["-".join(case) for case in CLI_CASES]
)
def test_command_prints_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, damage: str, layout: str
) -> None:
    given, bad = damaged(tmp_path, INPUTS[command], "input", damage, layout)
    args = _args(command, given, tmp_path)
    before = _listing(tmp_path)
    code = main([*args, "-o", str(tmp_path / "out" / "result.parquet"), "-q"])
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"error: cannot read {bad}: {MESSAGE} ("), lines[0]
    assert captured.out == ""
    assert _listing(tmp_path) == before


def _console(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "RAY_DISABLE_USAGE_STATS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "ragframe.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("engine", ["dask", clusters.RAY_SLOW])
@pytest.mark.parametrize(("damage", "layout"), [("footer", "dataset"), ("pages", "dataset")])
def test_engine_command_prints_one_error_line(
    tmp_path: Path, engine: str, damage: str, layout: str
) -> None:
    """On Dask and Ray the worker that reads the damaged part names it; the command
    prints that one error line (the engines' own log lines aside: none is an
    ``error:`` line or a traceback)."""
    pytest.importorskip("distributed" if engine == "dask" else "ray")
    given, bad = damaged(tmp_path, RESULTS, "results", damage, layout)
    before = _listing(tmp_path)
    out = tmp_path / "blocks.parquet"
    done = _console(["postprocess", given, "-o", str(out), "--engine", engine], tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]] and errors[0].startswith(f"error: cannot read {bad}: {MESSAGE}")
    assert "Traceback" not in done.stderr, done.stderr
    assert _listing(tmp_path) == before
