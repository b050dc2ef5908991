"""Dask's rows as lists of delayed Arrow pieces, and the one move the driver asks of it:
rows into partitions by their partition column.

Each input piece (a Parquet file, a slice of a local table, a partition of a Dask frame)
is one task giving an Arrow table. Moving rows into ``n`` partitions is one step: each
piece's task cuts its rows by partition into ``n`` Arrow tables (one task, ``nout=n``),
and partition ``k``'s task concatenates piece ``k`` of every input piece, so partition
``k`` holds every row of number ``k``. No pandas frame, no sort, no index: the cut is
one Polars ``partition_by``; Dask moves the pieces between workers as Arrow buffers and
holds them as task results until their partition is made, so the workers hold the
whole input for a while: done so only when the input (estimated from the Parquet
footers) takes at most :data:`IN_MEMORY_SHARE` of the workers' memory limits. A larger
input, or one of unknown size (a Dask frame), goes through Dask's P2P shuffle
(``set_index`` on the partition column with the divisions ``0, 1, ..., n``), which
keeps the pieces on the workers' disks: the workers hold one partition at a time.
A store joined by key (one too large to broadcast) is two such moves: the candidates'
keys and the store's rows cut by the bucket of their key, joined bucket by bucket, and
the joined rows cut by their partition."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver._parts import frame
from ragframe.driver._sources import ENTITY, PART, is_path, local_table, parquet_input, read_parquet
from ragframe.partition import ROWS_PER_PARTITION, bucket

Keyed = Callable[[pa.Table, int], pa.Table]

BUCKET = c.TMP + "bucket"
"""The bucket of a join key (all rows of one key, on both sides, share it)."""
IN_MEMORY_SHARE = 0.25
"""Rows are moved in memory when their estimated size is at most this share of the
workers' memory limits summed (else by the P2P shuffle, on disk)."""


class Pieces(list[Any]):
    """Delayed Arrow pieces, their estimated size in memory (``None``: unknown) and
    row counts."""

    def __init__(
        self, pieces: Sequence[Any], nbytes: int | None, sizes: Sequence[int] | None = None
    ) -> None:
        super().__init__(pieces)
        self.nbytes = nbytes
        self.sizes = None if sizes is None else tuple(sizes)
        """Each piece's row count, where known without computing it."""


def _delayed() -> Any:
    from dask.delayed import delayed

    return delayed


def read_keyed(path: str, number: int, keyed: Keyed) -> pa.Table:
    """Piece ``number`` of an input: one Parquet file through ``keyed``."""
    return keyed(read_parquet(path), number)


def arrow_keyed(df: Any, number: int, keyed: Keyed) -> pa.Table:
    """Piece ``number`` of a Dask frame (a pandas partition) through ``keyed``."""
    table = df if isinstance(df, pa.Table) else pa.Table.from_pandas(df, preserve_index=False)
    return keyed(table, number)


def pieces_of(source: Any, keyed: Keyed) -> tuple[Pieces, pa.Schema, int | None]:
    """``source`` (Parquet files, one piece each; a local table, in slices; or a Dask
    frame, one piece per partition) as delayed pieces through ``keyed`` (their rows'
    positions), their schema, and the row count where known without reading."""
    delayed = _delayed()
    if is_path(source):
        given = parquet_input(source, keyed)
        read = delayed(read_keyed, pure=False)
        pieces = [read(path, i, keyed) for i, path in enumerate(given.files)]
        nbytes = parquet_bytes(given.files, given.schema)
        return Pieces(pieces, nbytes, given.rows), given.schema, given.count
    if isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        table = local_table(source)
        count = max(1, min(8, table.num_rows // ROWS_PER_PARTITION))
        place = delayed(keyed, pure=False)
        slices = table_slices(table, count)
        pieces = [place(part, i) for i, part in enumerate(slices)]
        sizes = [s.num_rows for s in slices]
        return Pieces(pieces, table.nbytes, sizes), keyed(table.slice(0, 0), 0).schema, None
    from ragframe.distributed._dask_tasks import arrow, dd

    if not isinstance(source, dd().DataFrame):
        raise TypeError(f"expected a dask DataFrame or Parquet paths, got {type(source).__name__}")
    place = delayed(arrow_keyed, pure=False)
    pieces = [place(part, i, keyed) for i, part in enumerate(source.to_delayed())]
    return Pieces(pieces, None), keyed(arrow(source._meta), 0).schema, None


def parquet_bytes(files: Sequence[str], schema: pa.Schema) -> int:
    """The estimated size in memory of ``files`` read as ``schema``: the fixed-width
    columns' widths times the rows, and the others' uncompressed sizes in the footers."""
    import pyarrow.parquet as pq

    fixed = {f.name: max(1, f.type.bit_width // 8) for f in schema if pa.types.is_primitive(f.type)}
    width = sum(fixed.values())
    total = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        total += meta.num_rows * width
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            columns = (group.column(i) for i in range(group.num_columns))
            total += sum(
                c.total_uncompressed_size for c in columns if c.path_in_schema not in fixed
            )
    return total


def mapped(pieces: Pieces, step: Callable[..., pa.Table], shared: dict[str, Any]) -> Pieces:
    """Every piece through ``step`` (the size taken as unchanged)."""
    apply = _delayed()(step, pure=False)
    return Pieces([apply(piece, **shared) for piece in pieces], pieces.nbytes)


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


def moved(pieces: Pieces, schema: pa.Schema, n: int, memory: int | None, by: str = PART) -> Pieces:
    """The delayed ``pieces`` (each with ``by``) moved into ``n`` delayed partitions:
    in memory (cut and concatenated) when they fit in :data:`IN_MEMORY_SHARE` of
    ``memory`` (the workers' memory limits summed; ``None``: Dask's local scheduler),
    else by Dask's P2P shuffle."""
    size = pieces.nbytes
    if memory is not None and (size is None or size > IN_MEMORY_SHARE * memory):
        return shuffled(pieces, schema, n, by)
    delayed = _delayed()
    if n == 1:
        return Pieces([delayed(concat, pure=False)(*pieces)], size)
    cuts = [delayed(cut, nout=n, pure=False)(piece, n, by) for piece in pieces]
    return Pieces([delayed(concat, pure=False)(*(c[k] for c in cuts)) for k in range(n)], size)


def shuffled(pieces: Pieces, schema: pa.Schema, n: int, by: str = PART) -> Pieces:
    """``pieces`` moved into ``n`` partitions by Dask's shuffle (on disk, P2P):
    ``set_index`` on ``by`` with the divisions ``0, 1, ..., n`` (Dask's documented
    guarantee: partition ``i`` holds every row whose ``by`` is ``i``)."""
    from ragframe.distributed._dask_tasks import dd, pandas

    delayed = _delayed()
    ddf = dd().from_delayed(
        [delayed(pandas, pure=False)(p) for p in pieces], meta=pandas(schema.empty_table())
    )
    nested = any(pa.types.is_nested(f.type) for f in schema)
    method = "tasks" if nested else None  # P2P cannot rebuild Arrow list dtypes (2026.8)
    moved = ddf.set_index(by, divisions=list(range(n + 1)), shuffle_method=method)
    back = delayed(from_indexed, pure=False)
    return Pieces([back(part, schema) for part in moved.to_delayed()], pieces.nbytes)


def from_indexed(df: Any, schema: pa.Schema) -> pa.Table:
    """A partition of :func:`shuffled` (its column ``by`` the index) as Arrow."""
    table = pa.Table.from_pandas(df.reset_index(), preserve_index=False)
    return table.select(schema.names).cast(schema)


def with_bucket(table: pa.Table, n: int, on: str = ENTITY) -> pa.Table:
    """``table`` with :data:`BUCKET`, the hash bucket of ``on`` (for a join by key)."""
    return frame(table).with_columns(bucket(n, on).alias(BUCKET)).to_arrow()


def joined(keys: pa.Table, store: pa.Table, on: list[str]) -> pa.Table:
    """One bucket's join: each distinct ``(partition, key)`` with its store rows."""
    wanted = frame(keys).drop(BUCKET).unique(maintain_order=True)
    rows = frame(store).drop(BUCKET)
    return wanted.join(rows, on=on, how="inner", maintain_order="left").to_arrow()


def join(
    keys: Pieces,
    store: Pieces,
    schemas: Sequence[pa.Schema],
    on: list[str],
    n: int,
    memory: int | None,
) -> Pieces:
    """The delayed ``store`` pieces' rows matching the delayed ``keys`` pieces (which
    carry :data:`PART`) on ``on``, moved into the ``n`` partitions of their keys
    (``schemas``: the keys', the store's)."""
    delayed = _delayed()
    put = delayed(with_bucket, pure=False)
    sides = []
    for side, schema in zip((keys, store), schemas, strict=True):
        marked = Pieces([put(p, n) for p in side], side.nbytes)
        sides.append(moved(marked, with_bucket(schema.empty_table(), 1).schema, n, memory, BUCKET))
    pairs = [delayed(joined, pure=False)(k, s, on) for k, s in zip(*sides, strict=True)]
    size = None if store.nbytes is None else store.nbytes + (keys.nbytes or 0)
    keyed, stored = schemas
    return moved(Pieces(pairs, size), joined_schema(keyed, stored, on), n, memory)


def joined_schema(keys: pa.Schema, store: pa.Schema, on: list[str]) -> pa.Schema:
    """The schema of :func:`joined`'s tables."""
    return joined(
        with_bucket(keys.empty_table(), 1), with_bucket(store.empty_table(), 1), on
    ).schema


def table_slices(table: pa.Table, pieces: int) -> list[pa.Table]:
    """``table`` cut into ``pieces`` slices of consecutive rows (input order kept)."""
    size = -(-table.num_rows // max(pieces, 1)) or 1
    return [table.slice(start, size) for start in range(0, max(table.num_rows, 1), size)]


def memory_of(workers: dict[str, Any]) -> int:
    """The workers' memory limits summed (a worker without one counts this machine's
    memory, as Dask's own default limit does)."""
    from distributed.system import MEMORY_LIMIT

    return sum(int(w.get("memory_limit") or MEMORY_LIMIT) for w in workers.values())
