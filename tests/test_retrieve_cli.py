"""``ragframe retrieve``: the command gives the library's rows, saves and reloads the
index, names unmatched queries, and fails with one ``error:`` line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.cli import main

CHUNKS = pl.DataFrame(
    {
        "doc_id": [1, 1, 2],
        "chunk_index": [0, 1, 0],
        "text": ["Wing lift and drag", "the wing body", "shock waves"],
        "vector": [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]],
    }
)
QUERIES = pl.DataFrame(
    {
        "query_id": [7, 8, 9],
        "text": ["wing", "shock", "zebra"],
        "vector": [[1.0, 0.1], [0.0, 1.0], [1.0, 1.0]],
    }
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    chunks, queries = tmp_path / "chunks.parquet", tmp_path / "queries.parquet"
    CHUNKS.write_parquet(chunks)
    QUERIES.write_parquet(queries)
    return chunks, queries


def test_the_command_gives_the_librarys_rows_and_names_unmatched_queries(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chunks, queries = files
    out = tmp_path / "out.parquet"
    assert (
        main(["retrieve", str(chunks), "--queries", str(queries), "-o", str(out), "--k", "2"]) == 0
    )
    assert pl.read_parquet(out).equals(rf.retrieve(CHUNKS, QUERIES, k=2).collect())
    captured = capsys.readouterr()
    assert "warning: 1 queries matched no chunk: 9" in captured.err
    assert "unmatched_queries  1" in captured.out


def test_the_index_is_saved_and_searched_again(files: tuple[Path, Path], tmp_path: Path) -> None:
    chunks, queries = files
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    index = tmp_path / "index"
    argv = ["--queries", str(queries), "-q"]
    assert main(["retrieve", str(chunks), *argv, "-o", str(first), "--index", str(index)]) == 0
    assert main(["retrieve", str(index), *argv, "-o", str(second)]) == 0
    assert pl.read_parquet(first).equals(pl.read_parquet(second))


def test_dense_and_fusion_from_the_command(files: tuple[Path, Path], tmp_path: Path) -> None:
    chunks, queries = files
    out = tmp_path / "d.parquet"
    argv = ["retrieve", str(chunks), "--queries", str(queries), "-o", str(out), "--metric", "ip"]
    assert main([*argv, "--method", "dense", "--k", "1"]) == 0
    assert pl.read_parquet(out)["doc_id"].to_list() == [1, 2, 1]
    assert main([*argv, "--method", "bm25,dense"]) == 0
    fused = pl.read_parquet(out)
    assert fused.filter(pl.col("query_id") == 9).height == 3  # dense found it what BM25 did not
    np.testing.assert_allclose(fused["similarity"].max(), 2 / 61)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--k", "0"], "error: k must be in"),
        (["--k", "2.5"], "error: argument --k"),
        (["--method", "dense"], "error: chunks: vector column 'vector'"),
        (["--method", "dense", "--vectors", "vec"], "no vector column 'vec'"),
        (["--method", "bm25,dense", "--index", "idx"], "--index saves a BM25 index"),
        (["--model", "no/such/model", "--method", "dense"], "is not a folder holding"),
    ],
)
def test_bad_command_lines_print_one_error_line(
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    chunks, queries = files
    if extra == ["--method", "dense"]:  # vectors of two lengths
        bad = CHUNKS.with_columns(vector=pl.Series([[1.0], [0.5, 0.5], [0.0, 1.0]]))
        bad.write_parquet(chunks)
        message = "error: chunks: vectors in 'vector' have 2 different lengths"
    out = tmp_path / "x.parquet"
    assert main(["retrieve", str(chunks), "--queries", str(queries), "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists()
