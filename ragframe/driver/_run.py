"""The one code path: a stage's input planned into partitions, its store brought to
each partition, the input checked, the partition function run by the engine, and the
output committed (:mod:`._commit`) or handed back."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ragframe.driver import _commit
from ragframe.driver import _parts as parts
from ragframe.driver._engine import Engine, Rows
from ragframe.driver._plan import Plan, consecutive, piece_counts, plan, query_counts
from ragframe.driver._sources import (
    CHUNK,
    ENTITY,
    broadcast_store,
    is_path,
    local_table,
    parquet_files,
    positioned,
)
from ragframe.driver._stages import Stage
from ragframe.driver._store_files import StoreFiles
from ragframe.driver._work import work


@dataclass(frozen=True)
class Ran:
    """What a run gave back: the outputs (or the folder, or the engine's lazy frame),
    the partitions' schema, the store's (None without one) and the plan."""

    result: Any
    schema: pa.Schema
    store: pa.Schema | None
    plan: Plan
    empty: pa.Table | None
    """The output of an empty partition (its schema is the output's; None: not run)."""


def run_stage(
    stage: Stage,
    engine: Engine,
    source: Any,
    *,
    options: Mapping[str, Any],
    store: Any = None,
    broadcast: bool | None = None,
    partitions: int | None = None,
    output: str | os.PathLike[str] | None = None,
    lazy: bool = False,
    checked: bool = False,
) -> Ran:
    """Run ``stage`` on ``engine`` over ``source`` (``store``: its chunk store or
    documents; ``options``: the piece function's keyword arguments, shared with every
    worker). With ``output`` (a folder), every worker writes its part
    there and the folder is committed whole; else the outputs (or, ``lazy``, the
    engine's frame of them) are handed back. The input is checked by running the stage
    on an empty partition first, unless ``checked`` (the caller built the stage's whole
    plan over it already, as the local runs do for their output's schema). The output
    folder is checked first, before any input is read (as the CLI checks it)."""
    target = None if output is None else _commit.check_folder(output)
    rows = engine.rows(source, positioned)
    if stage.prepare is not None:
        rows = stage.prepare(engine, rows)
    shared_store, store_rows, empty_store = _store(engine, store, broadcast, stage)
    planned = getattr(engine, "planned", None)
    if planned is not None:  # the engine reads its own partitions (local: in turn)
        the_plan, own = planned(rows, stage.key, stage.consecutive, partitions)
        keyed = own
    else:

        def counts(step: Any = query_counts) -> pa.Table:
            return engine.gather(engine.then(rows, step))

        if stage.consecutive:
            pieces = functools.partial(counts, piece_counts)
            the_plan = consecutive(rows.sizes, partitions, engine.workers, pieces)
        else:
            the_plan = plan(
                source, stage.key, rows.count, rows.partitions, partitions, engine.workers, counts
            )
        keyed = engine.then(rows, the_plan.step)
        own = engine.partition(keyed, the_plan.partitions)
    side = None
    if store_rows is not None:
        side = _side(engine, stage, keyed, store_rows, the_plan)
        empty_store = side.empty()
    empty = None if checked else stage.piece(keyed.empty(), empty_store, **options)  # bad input
    shared = {name: engine.share(value) for name, value in options.items()}
    shared.update(stage=stage.name, store=shared_store)
    store_schema = None if empty_store is None else parts.restored(empty_store).to_arrow().schema
    if target is None:
        result = engine.run(work, own, side, shared, empty if lazy else None)
        return Ran(result, keyed.schema, store_schema, the_plan, empty)
    with _commit.parts_folder(target) as temp:
        engine.run(work, own, side, {**shared, "folder": os.fspath(temp)}, None)
        _commit.commit(temp, target)
    return Ran(os.fspath(target), keyed.schema, store_schema, the_plan, empty)


def _store(
    engine: Engine, store: Any, broadcast: bool | None, stage: Stage
) -> tuple[Any, Rows | None, pa.Table | None]:
    """The store shared whole (and an empty copy), or as rows to join or bucket."""
    if store is None:
        return None, None, None
    if broadcast_store(store, broadcast):
        if is_path(store):  # read by each worker, never by the driver
            files = StoreFiles.of(parquet_files(store))
            return engine.share(files), None, files.empty()
        table = getattr(engine, "whole", local_table)(store)
        return engine.share(table), None, table.slice(0, 0)
    keyed = parts.keyed_store if stage.joined else parts.store_positioned
    return None, engine.rows(store, keyed), None


def _side(engine: Engine, stage: Stage, keyed: Rows, store: Rows, the_plan: Plan) -> Rows:
    """The store rows each partition needs: joined by key with the partition's keys,
    or bucketed by document like the rows."""
    n = the_plan.partitions
    if stage.joined:
        keys = engine.then(keyed, parts.store_keys)
        return engine.join(keys, store, [ENTITY, CHUNK], n)
    return engine.partition(engine.then(store, the_plan.step), n)


def run_written(
    name: str,
    engine: Engine,
    source: Any,
    options: Mapping[str, Any],
    *,
    store: Any,
    broadcast: bool | None,
    partitions: int | None,
    output: str | os.PathLike[str] | None,
    collect: bool,
) -> Any:
    """Stage ``name`` as the engines' public functions give it: the written folder's
    path (``output``), one Polars frame in the single-machine order (``collect``), or
    the engine's lazy frame of the parts."""
    from ragframe.driver._stages import STAGES

    stage = STAGES[name]
    ran = run_stage(
        stage,
        engine,
        source,
        options=options,
        store=store,
        broadcast=broadcast,
        partitions=partitions,
        output=output,
        lazy=not collect,
    )
    if collect and output is None and stage.gather is not None:
        return stage.gather(ran.result or [ran.empty])  # no partition gave rows: empty
    return ran.result
