"""The Ray adapter's driver side: Ray started or connected, datasets with their Arrow
schemas, the bucket column, the grouping (with the joined store's rows in an envelope),
broadcast values, and the groups turned into a dataset, a Polars frame or a written
dataset."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.distributed import _gather, _output
from ragframe.distributed import _parts as parts
from ragframe.distributed import _ray_tasks as rt
from ragframe.distributed._inputs import (
    CHUNK,
    ENTITY,
    PART,
    broadcast_store,
    is_path,
    local_table,
    parquet_files,
    parquet_rows,
    parquet_schema,
    partition_count,
    positioned,
    require,
)

Step = Callable[[pa.Table], pa.Table]


def ray_module() -> Any:
    """``ray`` (started locally unless connected), or an error naming the extra."""
    ray = require("ray", "ray")
    require("ray.data", "ray")
    if not ray.is_initialized():
        ray.init(log_to_driver=False, include_dashboard=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


class Data:
    """A dataset, the Arrow schema of its batches, and its row count where known."""

    def __init__(self, ds: Any, schema: pa.Schema, rows: int | None = None) -> None:
        self.ds, self.schema, self.rows = ds, schema, rows
        self.partitions = 1

    def then(self, step: Step, **kwargs: Any) -> Data:
        """Every batch through ``step`` (its schema from an empty batch)."""
        ds = self.ds.map_batches(
            rt.apply, batch_format="pyarrow", fn_kwargs={"function": step}, **kwargs
        )
        out = Data(ds, step(self.schema.empty_table()).schema, self.rows)
        out.partitions = self.partitions
        return out

    def empty(self) -> pa.Table:
        return self.schema.empty_table()


def base_schema(ds: Any) -> pa.Schema:
    found = ds.schema()
    return pa.schema(getattr(found, "base_schema", found))


def data_of(source: Any, store: Step | None = None) -> Data:
    """``source`` (Parquet files, one block each; or a Ray dataset) with each row's
    position (:data:`POS`; a store's: :data:`STORE_POS`, then ``store``)."""
    ray = ray_module()
    keyed = positioned if store is None else parts.store_positioned
    if is_path(source):
        files = parquet_files(source)
        items = [{"path": f, "number": i} for i, f in enumerate(files)]
        ds = ray.data.from_items(items, override_num_blocks=len(files)).map_batches(
            rt.read_batch, batch_size=1, batch_format="pyarrow", fn_kwargs={"keyed": keyed}
        )
        empty = pl.DataFrame(schema=parquet_schema(files[0])).to_arrow()
        data = Data(ds, keyed(empty, 0).schema, sum(parquet_rows(files)))
    elif isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        table = keyed(local_table(source), 0)
        data = Data(ray.data.from_arrow(table), table.schema, table.num_rows)
    elif isinstance(source, ray.data.Dataset):
        blocks = source.to_arrow_refs()  # in the dataset's order, as Ray gives it
        place = ray.remote(keyed)
        placed = [place.remote(block, i) for i, block in enumerate(blocks)]
        schema = keyed(base_schema(source).empty_table(), 0).schema
        data = Data(ray.data.from_arrow_refs(placed), schema)
    else:
        raise TypeError(f"expected a Ray dataset or Parquet paths, got {type(source).__name__}")
    return data if store is None else data.then(store)


def with_part(data: Data, n: int, on: str) -> Data:
    def step(batch: pa.Table) -> pa.Table:
        return parts.with_part(batch, n, on)

    keyed = data.then(step)
    keyed.partitions = n
    return keyed


def n_groups(data: Data) -> int:
    """The shuffle's partitions: as many as buckets."""
    return data.partitions


def grouped(own: Data, side: Data | None, retries: int, **fn_kwargs: Any) -> Any:
    """Group ``own`` (with :data:`PART`; and the ``side`` rows it needs, in the
    envelope) by the bucket, each group through :func:`._ray_tasks.run_group`."""
    ds = own.ds
    if side is not None:
        schema = rt.envelope_schema(own.schema, side.schema)
        wrap = [
            d.ds.map_batches(
                rt.envelope, batch_format="pyarrow", fn_kwargs={"side": i, "schema": schema}
            )
            for i, d in enumerate((own, side))
        ]
        ds = wrap[0].union(wrap[1])
    return ds.groupby(PART, num_partitions=n_groups(own)).map_groups(
        rt.run_group,
        batch_format="pyarrow",
        fn_kwargs={"joined": side is not None, **fn_kwargs},
        max_retries=retries,
    )


def tables(ds: Any) -> list[pa.Table]:
    ray = ray_module()
    return [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows or t.num_columns]


def run(
    own: Data,
    side: Data | None,
    output: Any,
    collect: bool,
    stage: str,
    retries: int,
    **fn_kwargs: Any,
) -> Any:
    """The groups' output: a dataset, one Polars frame (``collect``), or a Parquet
    dataset written to ``output`` (its path returned)."""
    if output is not None:
        target = _output.check_folder(output)
        temp = _output.temporary_folder(target)
        try:
            tables(grouped(own, side, retries, folder=os.fspath(temp), **fn_kwargs))
        except BaseException:
            _output.discard(temp)
            raise
        _output.publish(temp, target)
        return os.fspath(target)
    ds = grouped(own, side, retries, **fn_kwargs)
    if not collect:
        return ds
    got = tables(ds)
    return _gather.fetch_table(got) if stage == "fetch" else _gather.blocks_table(got)


def store_arg(store: Any, broadcast: bool | None) -> tuple[Any, pa.Table | None]:
    """The store put in the object store (and an empty copy), or ``None``: join it."""
    if store is None or not broadcast_store(store, broadcast):
        return None, None
    table = local_table(store)
    return ray_module().put(table), table.slice(0, 0)


def candidates_by_query(candidates: Any, partitions: int | None) -> tuple[Data, int]:
    data = data_of(candidates)
    count = data.rows if data.rows is not None else data.ds.count()
    n = partitions or partition_count(count, 1, workers())
    return with_part(data, n, c.QUERY_ID), n


def workers() -> int:
    return int(ray_module().cluster_resources().get("CPU", os.cpu_count() or 1))


def chunk_side(
    chunks: Any, keyed: Data, n: int, broadcast: bool | None
) -> tuple[Any, Data | None, pa.Table | None]:
    """The broadcast chunk store, or the rows of it each group needs (joined by key)."""
    shared, empty = store_arg(chunks, broadcast)
    if chunks is None or shared is not None:
        return shared, None, empty
    store = data_of(chunks, parts.store_key)
    keys = keyed.then(parts.store_keys)
    rows = keys.ds.join(store.ds, "inner", num_partitions=n, on=(ENTITY, CHUNK))
    schema = pa.schema([*keys.schema, *(f for f in store.schema if f.name not in (ENTITY, CHUNK))])
    return None, Data(rows, schema), parts.restored(schema.empty_table()).to_arrow()
