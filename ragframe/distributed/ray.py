"""ragframe on Ray Data (the ``ragframe[ray]`` extra: ``pip install "ray[data]"``):
:func:`postprocess`, :func:`fetch`, :func:`evaluate` and :func:`sweep` over Ray
datasets or Parquet files, equal to the single-machine engine row for row.

Each input row gets its position; the rows get the bucket of their query
(:func:`ragframe.partition.bucket`; for fetch, of their document) and are grouped by it
with ``groupby(bucket).map_groups(...)``, Ray's documented guarantee that one call sees
every row of a group: whole queries, a few million rows per call (never one call per
query: that is hundreds of times slower). Each group is sorted back to input order and
given to the partition contract (:mod:`ragframe.partition`), the single-machine code.
The store is broadcast (``ray.put``: one copy per node, read in place) when it holds at
most :data:`~ragframe.distributed._inputs.BROADCAST_LIMIT` bytes, else joined by key
(``Dataset.join``, a hash join) and the rows each group needs travel in the group's
batch. Ray runs a task lost with its worker again (``retries``); a part is a pure
function of its group, so nothing is lost or doubled.

Runs on the connected Ray cluster (``ray.init(address=...)`` first), else starts a
local one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
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
    POS,
    broadcast_store,
    is_path,
    local_table,
    offsets_of,
    one_input,
    parquet_files,
    parquet_rows,
    partition_count,
    positioned,
    require,
)
from ragframe.errors import ConfigError
from ragframe.evaluate import SweepResult
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid, configurations
from ragframe.fetch import FetchConfig
from ragframe.postprocess import PostprocessConfig

__all__ = ["evaluate", "fetch", "postprocess", "sweep"]
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


def _config(config: Any, kind: type) -> Any:
    if isinstance(config, kind):
        return config
    if config is None or isinstance(config, Mapping):
        return kind(**(config or {}))
    raise ConfigError(f"expected a {kind.__name__} or a mapping, got {type(config).__name__}")


class _Data:
    """A dataset, the Arrow schema of its batches, and its row count where known."""

    def __init__(self, ds: Any, schema: pa.Schema, rows: int | None = None) -> None:
        self.ds, self.schema, self.rows = ds, schema, rows
        self.partitions = 1

    def then(self, step: Step, **kwargs: Any) -> _Data:
        """Every batch through ``step`` (its schema from an empty batch)."""
        ds = self.ds.map_batches(
            rt.apply, batch_format="pyarrow", fn_kwargs={"function": step}, **kwargs
        )
        out = _Data(ds, step(self.schema.empty_table()).schema, self.rows)
        out.partitions = self.partitions
        return out

    def empty(self) -> pa.Table:
        return self.schema.empty_table()


def _base_schema(ds: Any) -> pa.Schema:
    found = ds.schema()
    return pa.schema(getattr(found, "base_schema", found))


def data_of(source: Any, store: Step | None = None) -> _Data:
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
        empty = pl.DataFrame(schema=pl.read_parquet_schema(files[0])).to_arrow()
        data = _Data(ds, keyed(empty, 0).schema, sum(parquet_rows(files)))
    elif isinstance(source, pl.DataFrame | pl.LazyFrame | pa.Table):
        table = keyed(local_table(source), 0)
        data = _Data(ray.data.from_arrow(table), table.schema, table.num_rows)
    elif isinstance(source, ray.data.Dataset):
        blocks = source.to_arrow_refs()  # in the dataset's order, as Ray gives it
        place = ray.remote(keyed)
        placed = [place.remote(block, i) for i, block in enumerate(blocks)]
        schema = keyed(_base_schema(source).empty_table(), 0).schema
        data = _Data(ray.data.from_arrow_refs(placed), schema)
    else:
        raise TypeError(f"expected a Ray dataset or Parquet paths, got {type(source).__name__}")
    return data if store is None else data.then(store)


def _part(data: _Data, n: int, on: str) -> _Data:
    def step(batch: pa.Table) -> pa.Table:
        return parts.with_part(batch, n, on)

    keyed = data.then(step)
    keyed.partitions = n
    return keyed


def n_groups(data: _Data) -> int:
    """The shuffle's partitions: as many as buckets."""
    return data.partitions


def _grouped(own: _Data, side: _Data | None, retries: int, **fn_kwargs: Any) -> Any:
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


def _tables(ds: Any) -> list[pa.Table]:
    ray = ray_module()
    return [t for t in ray.get(ds.to_arrow_refs()) if t.num_rows or t.num_columns]


def _run(
    own: _Data,
    side: _Data | None,
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
            _tables(_grouped(own, side, retries, folder=os.fspath(temp), **fn_kwargs))
        except BaseException:
            _output.discard(temp)
            raise
        _output.publish(temp, target)
        return os.fspath(target)
    ds = _grouped(own, side, retries, **fn_kwargs)
    if not collect:
        return ds
    got = _tables(ds)
    return _gather.fetch_table(got) if stage == "fetch" else _gather.blocks_table(got)


def _store(store: Any, broadcast: bool | None) -> tuple[Any, pa.Table | None]:
    """The store put in the object store (and an empty copy), or ``None``: join it."""
    if store is None or not broadcast_store(store, broadcast):
        return None, None
    table = local_table(store)
    return ray_module().put(table), table.slice(0, 0)


def _candidates(candidates: Any, partitions: int | None) -> tuple[_Data, int]:
    data = data_of(candidates)
    count = data.rows if data.rows is not None else data.ds.count()
    n = partitions or partition_count(count, 1, _workers())
    return _part(data, n, c.QUERY_ID), n


def _workers() -> int:
    return int(ray_module().cluster_resources().get("CPU", os.cpu_count() or 1))


def _chunk_side(
    chunks: Any, keyed: _Data, n: int, broadcast: bool | None
) -> tuple[Any, _Data | None, pa.Table | None]:
    """The broadcast chunk store, or the rows of it each group needs (joined by key)."""
    shared, empty = _store(chunks, broadcast)
    if chunks is None or shared is not None:
        return shared, None, empty
    store = data_of(chunks, parts.store_key)
    keys = keyed.then(parts.store_keys)
    rows = keys.ds.join(store.ds, "inner", num_partitions=n, on=(ENTITY, CHUNK))
    schema = pa.schema([*keys.schema, *(f for f in store.schema if f.name not in (ENTITY, CHUNK))])
    return None, _Data(rows, schema), parts.restored(schema.empty_table()).to_arrow()


def postprocess(
    candidates: Any,
    config: PostprocessConfig | Mapping[str, Any] | None = None,
    *,
    chunks: Any = None,
    output: str | os.PathLike[str] | None = None,
    collect: bool = False,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> Any:
    """:func:`ragframe.postprocess` on Ray; arguments as in
    :func:`ragframe.distributed.dask.postprocess` (``candidates``: a Ray dataset or
    Parquet files). Returns a Ray dataset of blocks (lazy; each block one bucket's,
    sorted by ``(query_id, block_rank)``), the Polars frame (``collect``) or the
    written dataset's path (``output``)."""
    cfg = _config(config, PostprocessConfig)
    keyed, n = _candidates(candidates, partitions)
    shared, side, empty_store = _chunk_side(chunks, keyed, n, broadcast)
    parts.postprocess_piece(keyed.empty(), cfg, empty_store)  # bad input fails here
    return _run(
        keyed,
        side,
        output,
        collect,
        "postprocess",
        retries,
        work=parts.postprocess_piece,
        store_name="chunks",
        store=shared,
        config=cfg,
    )


def fetch(
    requests: Any,
    documents: Any,
    config: FetchConfig | Mapping[str, Any] | None = None,
    *,
    sizes: Any = None,
    output: str | os.PathLike[str] | None = None,
    collect: bool = False,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> Any:
    """:func:`ragframe.fetch` on Ray, the requests grouped by document bucket, each
    part in request order (``request_order``, the single-machine output position;
    ``collect`` sorts by it and drops it). Arguments as for :func:`postprocess`."""
    ray = ray_module()
    cfg = _config(config, FetchConfig)
    data = data_of(requests)
    names = [n for n in (c.QUERY_ID, c.RANK) if n in data.schema.names]
    keys = _gather.concat(_tables(data.ds.select_columns([*names, POS]))).sort(POS)
    order = _gather.request_order(keys)
    lookup = keys.select(POS).with_columns(order).to_arrow()
    shared_lookup = ray.put(lookup)

    def ordered(batch: pa.Table) -> pa.Table:
        return rt.with_order(batch, shared_lookup)

    count = data.rows if data.rows is not None else keys.height
    n = partitions or partition_count(count, 1, _workers())
    keyed = _part(data.then(ordered), n, c.DOC_ID)
    shared, empty_docs = _store(documents, broadcast)
    side = None
    if shared is None:
        side = _part(data_of(documents, _same), n, c.DOC_ID)
        empty_docs = parts.restored(side.empty()).to_arrow()
    sized = None if sizes is None else local_table(sizes)
    parts.fetch_piece(keyed.empty(), empty_docs, cfg, sized)  # bad input fails here
    return _run(
        keyed,
        side,
        output,
        collect,
        "fetch",
        retries,
        work=parts.fetch_piece,
        store_name="documents",
        store=shared,
        config=cfg,
        sizes=None if sized is None else ray.put(sized),
    )


def _same(table: pa.Table) -> pa.Table:
    return table


def evaluate(
    qrels: Any,
    *,
    candidates: Any = None,
    blocks: Any = None,
    k: int | Sequence[int] = (10,),
    max_blocks: int | None = None,
    max_characters: int | None = None,
    chunks: Any = None,
    partitions: int | None = None,
    retries: int = 3,
) -> pl.DataFrame:
    """:func:`ragframe.evaluate` on Ray, collected (see
    :func:`ragframe.distributed.dask.evaluate`)."""
    ray = ray_module()
    source, is_blocks = one_input(candidates, blocks)
    judged = judgements(qrels)
    keyed, _ = _candidates(source, partitions)
    options = {"k": k, "max_blocks": max_blocks, "max_characters": max_characters}
    offsets = offsets_of(chunks)
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    parts.evaluate_piece(keyed.empty(), judged, is_blocks, options, empty_offsets)
    ds = _grouped(
        keyed,
        None,
        retries,
        work=parts.evaluate_piece,
        store_name="chunks",
        store=None if offsets is None else ray.put(offsets),
        qrels=ray.put(judged),
        blocks=is_blocks,
        options=options,
    )
    return _gather.evaluate_table(
        _tables(ds),
        judged,
        keyed.schema,
        blocks=is_blocks,
        options={**options, "chunks": empty_offsets},
    )


def sweep(
    candidates: Any,
    grid: Grid,
    qrels: Any,
    *,
    chunks: Any = None,
    baseline: int | PostprocessConfig | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str = c.CHARS_USED,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
    partitions: int | None = None,
    broadcast: bool | None = None,
    retries: int = 3,
) -> SweepResult:
    """:func:`ragframe.sweep` on Ray (see :func:`ragframe.distributed.dask.sweep`)."""
    ray = ray_module()
    configs, _ = configurations(grid)
    judged = judgements(qrels)
    keyed, n = _candidates(candidates, partitions)
    shared, side, empty_store = _chunk_side(chunks, keyed, n, broadcast)
    ds = _grouped(
        keyed,
        side,
        retries,
        work=parts.sweep_piece,
        store_name="chunks",
        store=shared,
        configs=configs,
        qrels=ray.put(judged),
    )
    store_schema = None if empty_store is None else parts.restored(empty_store).to_arrow().schema
    return _gather.sweep_table(
        _tables(ds),
        configs,
        judged,
        keyed.schema,
        chunks=store_schema,
        baseline=baseline,
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=seed,
    )
