"""The Dask engine's plumbing: Dask imported only when called, Arrow tables as the
Arrow-backed pandas frames Dask's frames hold and back, and the worker task over Arrow
tables (the rows' moves are :mod:`._dask_pieces`')."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ragframe.driver._sources import require


def dd() -> Any:
    """``dask.dataframe``, or an error naming the extra."""
    require("distributed", "dask")
    return require("dask.dataframe", "dask")


def pandas(table: pa.Table) -> Any:
    """An Arrow table as a pandas frame of Arrow-backed columns (types kept exactly)."""
    import pandas as pd

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def arrow(df: Any) -> pa.Table:
    """A pandas partition as Arrow (its index dropped)."""
    if isinstance(df, pa.Table):
        return df
    return pa.Table.from_pandas(df, preserve_index=False)


def task(work: Callable[..., pa.Table]) -> Callable[..., pa.Table]:
    """``work`` over Arrow tables, called with the pandas partitions Dask hands over."""

    def run(*args: Any, **kwargs: Any) -> pa.Table:
        return work(*(arrow(a) if _is_pandas(a) else a for a in args), **kwargs)

    run.__name__ = run.__qualname__ = f"ragframe-{work.__name__}"
    return run


def _is_pandas(value: Any) -> bool:
    return type(value).__module__.startswith("pandas") and hasattr(value, "columns")
