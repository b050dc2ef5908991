"""The Dask engine's move of rows into partitions (:mod:`ragframe.distributed._dask_pieces`):
the cut puts every row in its partition in input order; an input that fits the workers'
memory is moved in memory, a larger one (or one of unknown size) by the P2P shuffle;
both give the single-process output, with the chunk store broadcast or joined by key,
from Parquet files and from a Dask frame."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import ragframe
from ragframe.distributed import _dask_pieces as dp
from ragframe.driver._sources import PART, positioned
from tests import clusters

CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)
SHARES_DASK_CLUSTER = True  # leaves the workers alone: tests/clusters.py


@given(st.integers(1, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1)))))
def test_the_cut_puts_every_row_in_its_partition_in_input_order(
    case: tuple[int, list[int]],
) -> None:
    n, parts = case
    table = pl.DataFrame(
        {PART: parts, "row": range(len(parts))}, schema={PART: pl.Int64, "row": pl.Int64}
    )
    cuts = dp.cut(table.to_arrow(), n)
    assert len(cuts) == n
    for k, piece in enumerate(cuts):
        expected = table.filter(pl.col(PART) == k)
        assert_frame_equal(pl.from_arrow(piece), expected)  # type: ignore[arg-type]
    assert pl.from_arrow(dp.concat(*cuts)).height == len(parts)  # type: ignore[union-attr]


def test_the_cut_refuses_a_partition_number_it_was_not_given() -> None:
    table = pa.table({PART: pa.array([0, 3], pa.int64())})
    with pytest.raises(ValueError, match=r"outside 0\.\.1"):
        dp.cut(table, 2)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str, pl.DataFrame]:
    """50,000 candidates in random row order over three files (queries split across
    them), the chunk store, and the single-process output."""
    from benchmarks._generate import generate

    data = generate(500, documents=1_000, seed=3)
    rows = data.results[np.random.default_rng(1).permutation(data.results.height)]
    root = tmp_path_factory.mktemp("pieces")
    files = []
    for i, (a, b) in enumerate(itertools.pairwise([0, 7_000, 31_000, rows.height])):
        files.append(os.fspath(root / f"r-{i}.parquet"))
        rows.slice(a, b - a).write_parquet(files[-1])
    store = os.fspath(root / "chunks.parquet")
    data.chunks.write_parquet(store)
    whole = ragframe.postprocess(pl.scan_parquet(files), CONFIG, chunks=pl.scan_parquet(store))
    return files, store, whole.collect()


@pytest.fixture(scope="module")
def client(dask_cluster: Any) -> Iterator[Any]:
    yield from clusters.dask_client(dask_cluster)


def _tasks(pieces: dp.Pieces) -> set[str]:
    """The names of the tasks making ``pieces`` (``cut-<token>`` -> ``cut``)."""
    keys = {k for p in pieces for k in dict(p.__dask_graph__())}
    return {str(k[0] if isinstance(k, tuple) else k).split("-", 1)[0] for k in keys}


def test_an_input_is_moved_in_memory_only_when_it_fits(
    inputs: tuple[list[str], str, pl.DataFrame],
) -> None:
    pytest.importorskip("dask.dataframe")
    files = inputs[0]
    pieces, schema, count = dp.pieces_of(files, positioned)
    assert count == 50_000 and pieces.nbytes is not None
    real = sum(pl.read_parquet(f).estimated_size() for f in files) + count * 8  # + positions
    assert real / 2 <= pieces.nbytes <= real * 2  # the footers' estimate
    with_part = dp.mapped(pieces, _with_part, {})
    fits = dp.moved(with_part, schema.append(pa.field(PART, pa.int64())), 3, pieces.nbytes * 4)
    assert "cut" in _tasks(fits) and not any("shuffle" in t for t in _tasks(fits))
    big = dp.moved(with_part, schema.append(pa.field(PART, pa.int64())), 3, pieces.nbytes * 3)
    assert "cut" not in _tasks(big) and any("shuffle" in t for t in _tasks(big)), _tasks(big)


def _with_part(table: pa.Table) -> pa.Table:
    return table.append_column(PART, pa.array(np.arange(table.num_rows) % 3, pa.int64()))


@pytest.mark.parametrize("move", ["in memory", "p2p"])
def test_both_moves_give_the_single_process_output(
    move: str,
    inputs: tuple[list[str], str, pl.DataFrame],
    client: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from ragframe.distributed import dask as rd

    files, store, whole = inputs
    monkeypatch.setattr(dp, "IN_MEMORY_SHARE", 1.0 if move == "in memory" else 0.0)
    for broadcast in (True, False):
        got = rd.postprocess(
            files, CONFIG, chunks=store, collect=True, partitions=4, broadcast=broadcast
        )
        assert_frame_equal(got, whole)
    written = rd.postprocess(files, CONFIG, chunks=store, output=tmp_path / "out", partitions=2)
    parts = sorted(Path(written).glob("part-*.parquet"))
    assert len(parts) == 2
    assert_frame_equal(pl.read_parquet(parts), whole)  # the parts in order: the output


def test_a_dask_frame_input_gives_the_single_process_output(
    inputs: tuple[list[str], str, pl.DataFrame], client: Any
) -> None:
    import dask.dataframe as dd
    import pandas as pd

    from ragframe.distributed import dask as rd

    files, store, whole = inputs
    frame = pl.read_parquet(files).to_arrow().to_pandas(types_mapper=pd.ArrowDtype)
    source = dd.from_pandas(frame, npartitions=3, sort=False)
    got = rd.postprocess(source, CONFIG, chunks=store, collect=True, broadcast=False)
    assert_frame_equal(got, whole)
