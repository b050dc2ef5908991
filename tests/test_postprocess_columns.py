"""The merge's gathers of a batch's columns at rows (:mod:`ragframe.postprocess._columns`)
equal Polars' own, for every kind of column a passthrough may be."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from ragframe.postprocess._columns import NUMPY_NUMBERS, floats, gathered

KINDS = [*sorted(NUMPY_NUMBERS, key=str), pl.Int128, pl.String, pl.Boolean, pl.Decimal(10, 2)]


@given(
    kind=st.sampled_from(KINDS),
    values=st.lists(st.one_of(st.none(), st.integers(0, 100)), max_size=12),
    data=st.data(),
)
def test_gathered_equals_polars_gather(
    kind: pl.DataType, values: list[int | None], data: st.DataObject
) -> None:
    """Same values, nulls, type and name as ``Series.gather``, rows repeated or in any
    order; a column of nulls too (one null row, all of them, none at all)."""
    raw = pl.Series("col", values, dtype=pl.Int64)
    column = raw.cast(pl.String) if kind == pl.String else raw.cast(kind)
    rows = np.array(
        data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=15)) if values else [],
        dtype=np.int64,
    )
    got, want = gathered(column, rows), column.gather(rows)
    assert got.name == want.name and got.dtype == want.dtype
    assert got.equals(want), (got, want)


@given(values=st.lists(st.one_of(st.none(), st.floats(-5, 5)), max_size=12), data=st.data())
def test_floats_read_nulls_as_nan(values: list[float | None], data: st.DataObject) -> None:
    """Float64 numbers at the rows, a null as NaN (a column of nulls: all NaN)."""
    column = pl.Series("s", values, dtype=pl.Float32)
    rows = np.array(
        data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=15)) if values else [],
        dtype=np.int64,
    )
    want = [np.nan if values[r] is None else float(np.float32(values[r])) for r in rows]
    got = floats(column, rows)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float64))
