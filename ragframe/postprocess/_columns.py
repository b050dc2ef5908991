"""Columns of a kernel's batch taken at rows by index, as the merge's outputs need them:
numbers by numpy where Polars' gather of a few tens of thousands of rows costs several
numpy ones, a column of nulls without reading it."""

from __future__ import annotations

import numpy as np
import polars as pl

from ragframe._kernels._compile import F64, I64

NUMPY_NUMBERS = frozenset(
    {pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64}
    | {pl.Float32, pl.Float64}
)
"""The Polars number types numpy holds as they are (not ``Int128``, not decimals)."""


def gathered(column: pl.Series, rows: I64) -> pl.Series:
    """``column[rows]``: numbers without nulls by numpy, a column of nulls as nulls, only
    the others by Polars (a Polars gather of 45k rows costs several numpy ones)."""
    if column.dtype in NUMPY_NUMBERS and not column.null_count():
        return pl.Series(column.name, column.to_numpy()[rows])
    if column.null_count() == len(column) and len(rows):
        return column.new_from_index(0, len(rows))
    return column.gather(rows)


def floats(column: pl.Series, rows: I64) -> F64:
    """``column[rows]`` as float64 numbers, nulls as NaN (a column of nulls read in no
    pass: reranking is optional)."""
    if column.null_count() == len(column):
        return np.full(len(rows), np.nan)
    return column.cast(pl.Float64).to_numpy()[rows]
