"""The Dask adapter's worker tasks and plumbing: pandas partitions (Arrow-backed) in,
Arrow out, and the frames the adapter builds (inputs with positions, the partition
column, the shuffle). Imports Dask only when called."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.driver import _parts as parts
from ragframe.driver._sources import (
    PART,
    is_path,
    local_table,
    parquet_files,
    parquet_rows,
    parquet_schema,
    positioned,
    read_parquet,
    read_piece,
    require,
)
from ragframe.partition import ROWS_PER_PARTITION


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


def _read(path: str, number: int, keyed: Callable[[pa.Table, int], pa.Table]) -> Any:
    return pandas(keyed(read_parquet(path), number))


def _read_positioned(path: str, number: int) -> Any:
    return pandas(read_piece(path, number))


def _positioned(
    df: Any, keyed: Callable[[pa.Table, int], pa.Table], partition_info: Any = None
) -> Any:
    number = 0 if partition_info is None else int(partition_info["number"])
    return pandas(keyed(arrow(df), number))


def frame_of(
    source: Any, keyed: Callable[[pa.Table, int], pa.Table] = positioned
) -> tuple[Any, int | None]:
    """A Dask frame of ``source`` (Parquet files, one partition each; or a Dask frame)
    with each row's position (``keyed``: :func:`positioned` for candidates and requests,
    :func:`~ragframe.driver._parts.keyed_store` for a store), and its row count
    where the files' footers tell it."""
    ddf = dd()
    if is_path(source):
        files = parquet_files(source)
        empty = pl.DataFrame(schema=parquet_schema(files[0])).to_arrow()
        meta = pandas(keyed(empty, 0))
        numbers = list(range(len(files)))
        if keyed is positioned:
            return ddf.from_map(_read_positioned, files, numbers, meta=meta), sum(
                parquet_rows(files)
            )
        made = ddf.from_map(_read, files, numbers, keyed=keyed, meta=meta)
        return made, sum(parquet_rows(files))
    if isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        table = local_table(source)
        pieces = max(1, min(8, table.num_rows // ROWS_PER_PARTITION))
        source = ddf.from_pandas(pandas(table), npartitions=pieces, sort=False)
    if not isinstance(source, ddf.DataFrame):
        raise TypeError(f"expected a dask DataFrame or Parquet paths, got {type(source).__name__}")
    meta = pandas(keyed(arrow(source._meta), 0))
    return source.map_partitions(_positioned, keyed, meta=meta), None


def schema(ddf: Any) -> pa.Schema:
    """The Arrow schema of a Dask frame's partitions."""
    return arrow(ddf._meta).schema


def _with_part(df: Any, partitions: int, on: str) -> Any:
    return pandas(parts.with_part(arrow(df), partitions, on))


def _keys(df: Any) -> Any:
    return pandas(parts.store_keys(arrow(df)))


def keyed(ddf: Any, partitions: int, on: str) -> Any:
    """``ddf`` with :data:`PART`, the bucket of its ``on`` column."""
    meta = _with_part(ddf._meta, partitions, on)
    return ddf.map_partitions(_with_part, partitions, on, meta=meta)


def shuffled(ddf: Any, partitions: int, on: str) -> Any:
    """``ddf`` shuffled by the bucket of its ``on`` column (:func:`by_part`)."""
    return by_part(keyed(ddf, partitions, on), partitions)


def by_part(ddf: Any, partitions: int) -> Any:
    """``ddf`` (with :data:`PART`) shuffled so partition ``i`` holds exactly the rows of
    bucket ``i``: ``set_index`` on the bucket with the divisions ``0, 1, ...,
    partitions`` (Dask's documented guarantee: equal index values share a partition, and
    partition ``i`` holds the values in ``[i, i + 1)``)."""
    nested = any(pa.types.is_nested(f.type) for f in schema(ddf))
    method = "tasks" if nested else None  # P2P cannot rebuild Arrow list dtypes (2026.8)
    return ddf.set_index(PART, divisions=list(range(partitions + 1)), shuffle_method=method)


def joined_store(shuffled_keys_from: Any, store: Any, partitions: int) -> Any:
    """The chunk store rows each partition needs (the shuffle-join): the candidates'
    distinct keys joined with the keyed store by ``(entity, chunk index)`` (a Dask hash
    join), then set on the partition like the candidates."""
    from ragframe.driver._sources import CHUNK, ENTITY

    keys = shuffled_keys_from.map_partitions(_keys, meta=_keys(shuffled_keys_from._meta))
    rows = keys.merge(store, on=[ENTITY, CHUNK], how="inner")
    return by_part(rows, partitions)


def task(work: Callable[..., pa.Table]) -> Callable[..., pa.Table]:
    """``work`` over Arrow tables, called with the pandas partitions Dask hands over."""

    def run(*args: Any, **kwargs: Any) -> pa.Table:
        return work(*(arrow(a) if _is_pandas(a) else a for a in args), **kwargs)

    run.__name__ = run.__qualname__ = f"ragframe-{work.__name__}"
    return run


def _is_pandas(value: Any) -> bool:
    return type(value).__module__.startswith("pandas") and hasattr(value, "columns")


def delayed_parts(ddf: Any) -> Sequence[Any]:
    """The partitions of ``ddf`` as Dask delayed objects."""
    return list(ddf.to_delayed())
