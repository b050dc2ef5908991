"""The chunk store's dense layout test (``_store._runs``, one compiled pass) against
its definition in whole-array numpy, compiled and as plain Python."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe._kernels import _compile
from ragframe.postprocess._kernels import _store


def _defined(entity: np.ndarray, chunk: np.ndarray) -> np.ndarray | None:
    """The layout as defined: integer entities ascending, each one's chunk indexes
    consecutive from its first, spanning few numbers; per entity its first row, first
    chunk index and row count."""
    n = len(entity)
    if n == 0:
        return None
    low, high = int(entity[0]), int(entity[-1])
    if high - low > _store.DENSE_SPAN * n + _store.DENSE_SLACK or np.any(entity[1:] < entity[:-1]):
        return None
    same = entity[1:] == entity[:-1]
    if np.any(same & (chunk[1:] != chunk[:-1] + 1)):
        return None
    firsts = np.flatnonzero(np.r_[True, ~same])
    runs = np.zeros((high - low + 1, 3), dtype=np.int64)
    at = entity[firsts] - low
    runs[at, 0], runs[at, 1] = firsts, chunk[firsts]
    runs[at, 2] = np.diff(np.append(firsts, n))
    return runs


@st.composite
def layouts(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Stores laid out as chunkers write them, some then disturbed: an entity out of
    order, a chunk index skipped or repeated, a wide span."""
    entities = sorted(draw(st.lists(st.integers(-5, 40), min_size=0, max_size=12, unique=True)))
    entity: list[int] = []
    chunk: list[int] = []
    for e in entities:
        first = draw(st.integers(-2, 3))
        count = draw(st.integers(1, 4))
        entity += [e] * count
        chunk += list(range(first, first + count))
    if entity and draw(st.booleans()):
        at = draw(st.integers(0, len(entity) - 1))
        kind = draw(st.sampled_from(["entity", "chunk", "wide"]))
        if kind == "entity":
            entity[at] = draw(st.integers(-10, 60))
        elif kind == "chunk":
            chunk[at] += draw(st.sampled_from([-1, 1, 2]))
        else:
            entity[-1] += 10**7
    return np.array(entity, dtype=np.int64), np.array(chunk, dtype=np.int64)


def _runs(entity: np.ndarray, chunk: np.ndarray, python: bool) -> np.ndarray | None:
    none = np.zeros(0, dtype=np.int64)
    runs = _store._runs_room((entity, none, none, chunk), np.ones(len(entity), dtype=np.bool_))
    if runs is None:
        return None
    fill = _compile.marked_as(_store._dense_runs).function if python else _store._dense_runs
    return runs.T if fill(entity, chunk, runs) else None


@pytest.mark.parametrize("python", [False, True], ids=["compiled", "python"])
@given(layouts())
def test_runs_equal_their_definition(python: bool, layout: tuple[np.ndarray, np.ndarray]) -> None:
    found = _runs(*layout, python)
    expected = _defined(*layout)
    if expected is None:
        assert found is None
    else:
        assert found is not None and np.array_equal(found, expected)


def test_a_store_with_a_null_key_has_no_dense_layout() -> None:
    entity = np.array([1, 1, 2], dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    stored = np.array([True, False, True])
    assert _store._runs_room((entity, none, none, np.array([0, 1, 0])), stored) is None


@pytest.mark.parametrize("layout", ["dense", "hashed"])
@pytest.mark.parametrize("rows_in_python", ["0", "100000"], ids=["compiled", "python"])
def test_the_lookup_counts_the_rows_without_a_store_row(
    layout: str, rows_in_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(_compile.PYTHON_ROWS_ENV, rows_in_python)
    store_entity = [1, 1, 2, 5] if layout == "dense" else [5, 1, 1, 2]
    store_chunk = [0, 1, 0, 3] if layout == "dense" else [3, 0, 1, 0]
    entity = pl.Series([1, 2, 2, None, 5, 7, 1], dtype=pl.Int64)
    chunk = pl.Series([1, 0, 1, 0, 3, 0, 0], dtype=pl.Int64)
    found, lacking = _store.store_rows_lacking(
        entity, chunk, pl.Series(store_entity), pl.Series(store_chunk)
    )
    assert lacking == int((found < 0).sum()) == 3
    assert np.array_equal(found, _store.store_rows(entity, chunk, pl.Series(store_entity),
                                                   pl.Series(store_chunk)))  # fmt: skip
