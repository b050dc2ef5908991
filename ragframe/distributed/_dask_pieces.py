"""Dask's rows as lists of delayed Arrow pieces, and the one move the driver asks of it:
rows into partitions by their partition column.

Each input piece (a Parquet file, a slice of a local table, a partition of a Dask frame)
is one task giving an Arrow table. Moving rows into ``n`` partitions is one step: each
piece's task cuts its rows by partition into ``n`` Arrow tables (one task, ``nout=n``),
and partition ``k``'s task concatenates piece ``k`` of every input piece, so partition
``k`` holds every row of number ``k``. No pandas frame, no sort, no index: the cut is
one Polars ``partition_by``; Dask moves the pieces between workers as Arrow buffers and
holds them as task results (spilled to disk past its memory target, as any result).
A store joined by key (one too large to broadcast) is two such moves: the candidates'
keys and the store's rows cut by the bucket of their key, joined bucket by bucket, and
the joined rows cut by their partition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.dataset._run import ROWS_PER_PARTITION
from ragframe.distributed._inputs import (
    ENTITY,
    PART,
    is_path,
    local_table,
    parquet_files,
    parquet_rows,
    read_parquet,
)
from ragframe.distributed._parts import frame
from ragframe.partition import bucket

Keyed = Callable[[pa.Table, int], pa.Table]


def _delayed() -> Any:
    from dask import delayed

    return delayed


def read_keyed(path: str, number: int, keyed: Keyed) -> pa.Table:
    """Piece ``number`` of an input: one Parquet file through ``keyed``."""
    return keyed(read_parquet(path), number)


def arrow_keyed(df: Any, number: int, keyed: Keyed) -> pa.Table:
    """Piece ``number`` of a Dask frame (a pandas partition) through ``keyed``."""
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    return keyed(table, number)


def pieces_of(source: Any, keyed: Keyed) -> tuple[list[Any], pa.Schema, int | None]:
    """``source`` (Parquet files, one piece each; a local table, in slices; or a Dask
    frame, one piece per partition) as delayed pieces through ``keyed`` (their rows'
    positions), their schema, and the row count where known without reading."""
    delayed = _delayed()
    if is_path(source):
        files = parquet_files(source)
        empty = pl.DataFrame(schema=pl.read_parquet_schema(files[0])).to_arrow()
        read = delayed(read_keyed, pure=False)
        pieces = [read(path, i, keyed) for i, path in enumerate(files)]
        return pieces, keyed(empty, 0).schema, sum(parquet_rows(files))
    if isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        table = local_table(source)
        count = max(1, min(8, table.num_rows // ROWS_PER_PARTITION))
        place = delayed(keyed, pure=False)
        pieces = [place(part, i) for i, part in enumerate(table_slices(table, count))]
        return pieces, keyed(table.slice(0, 0), 0).schema, None
    from ragframe.distributed._dask_tasks import arrow, dd

    if not isinstance(source, dd().DataFrame):
        raise TypeError(f"expected a dask DataFrame or Parquet paths, got {type(source).__name__}")
    place = delayed(arrow_keyed, pure=False)
    pieces = [place(part, i, keyed) for i, part in enumerate(source.to_delayed())]
    return pieces, keyed(arrow(source._meta), 0).schema, None


def cut(table: pa.Table, n: int, by: str = PART) -> tuple[pa.Table, ...]:
    """``table``'s rows cut into ``n`` tables: table ``k`` holds the rows whose ``by``
    is ``k``, in their order in ``table``."""
    rows = frame(table)
    groups = rows.partition_by(by, as_dict=True, maintain_order=True) if rows.height else {}
    empty = rows.clear()
    found = {int(key[0]): group for key, group in groups.items()}
    if set(found) - set(range(n)):
        raise ValueError(f"partition numbers outside 0..{n - 1}: {sorted(set(found))[:5]}")
    return tuple(found.get(k, empty).to_arrow() for k in range(n))


def concat(*pieces: pa.Table) -> pa.Table:
    """One partition from its pieces (one per input piece, in input order), in one
    chunk per column (the partition function's kernels read whole buffers)."""
    return pa.concat_tables(pieces, promote_options="default").combine_chunks()


def moved(pieces: Sequence[Any], n: int, by: str = PART) -> list[Any]:
    """The delayed ``pieces`` (each with ``by``) moved into ``n`` delayed partitions."""
    delayed = _delayed()
    if n == 1:
        return [delayed(concat, pure=False)(*pieces)]
    cuts = [delayed(cut, nout=n, pure=False)(piece, n, by) for piece in pieces]
    return [delayed(concat, pure=False)(*(c[k] for c in cuts)) for k in range(n)]


def with_bucket(table: pa.Table, n: int, on: str = ENTITY) -> pa.Table:
    """``table`` with :data:`BUCKET`, the hash bucket of ``on`` (for a join by key)."""
    return frame(table).with_columns(bucket(n, on).alias(BUCKET)).to_arrow()


BUCKET = "__ragframe_bucket"
"""The bucket of a join key (all rows of one key, on both sides, share it)."""


def joined(keys: pa.Table, store: pa.Table, on: list[str]) -> pa.Table:
    """One bucket's join: each distinct ``(partition, key)`` with its store rows."""
    wanted = frame(keys).drop(BUCKET).unique(maintain_order=True)
    rows = frame(store).drop(BUCKET)
    return wanted.join(rows, on=on, how="inner", maintain_order="left").to_arrow()


def join(keys: Sequence[Any], store: Sequence[Any], on: list[str], n: int) -> list[Any]:
    """The delayed ``store`` pieces' rows matching the delayed ``keys`` pieces (which
    carry :data:`PART`) on ``on``, moved into the ``n`` partitions of their keys."""
    delayed = _delayed()
    buckets = max(n, 1)
    sides = [
        moved([delayed(with_bucket, pure=False)(p, buckets) for p in side], buckets, BUCKET)
        for side in (keys, store)
    ]
    pairs = [delayed(joined, pure=False)(k, s, on) for k, s in zip(*sides, strict=True)]
    return moved(pairs, n)


def joined_schema(keys: pa.Schema, store: pa.Schema, on: list[str]) -> pa.Schema:
    """The schema of :func:`joined`'s tables."""
    empty = [with_bucket(s.empty_table(), 1) for s in (keys, store)]
    return joined(*empty, on).schema


def table_slices(table: pa.Table, pieces: int) -> list[pa.Table]:
    """``table`` cut into ``pieces`` slices of consecutive rows (input order kept)."""
    size = -(-table.num_rows // max(pieces, 1)) or 1
    return [table.slice(start, size) for start in range(0, max(table.num_rows, 1), size)]
