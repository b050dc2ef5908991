"""Evaluate and sweep on any engine (:mod:`ragframe.driver`): each partition's rows
gathered on the driver (small tables) and completed there by the single-machine code
(:mod:`._gather`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.distributed import _gather
from ragframe.distributed._inputs import offsets_of
from ragframe.driver import STAGES, Engine, run_stage
from ragframe.evaluate import SweepResult
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._sweep import DEFAULT_METRICS, Grid, chosen, configurations
from ragframe.postprocess import PostprocessConfig


def evaluated(
    engine: Engine,
    qrels: Any,
    source: Any,
    is_blocks: bool,
    chunks: Any,
    partitions: int | None,
    options: Mapping[str, Any],
) -> pl.DataFrame:
    """:func:`ragframe.evaluate` on ``engine``, collected: one row per query, equal to
    ``ragframe.evaluate(...).collect()``; ``qrels`` and the store's offsets broadcast."""
    judged = judgements(qrels)
    offsets = offsets_of(chunks)
    ran = run_stage(
        STAGES["evaluate"],
        engine,
        source,
        options={"qrels": judged, "blocks": is_blocks, "options": options},
        store=offsets,
        broadcast=True,
        partitions=partitions,
    )
    empty_offsets = None if offsets is None else offsets.slice(0, 0)
    return _gather.evaluate_table(
        ran.result,
        judged,
        ran.schema,
        blocks=is_blocks,
        options={**options, "chunks": empty_offsets},
    )


def swept(
    engine: Engine,
    candidates: Any,
    grid: Grid,
    qrels: Any,
    *,
    chunks: Any = None,
    baseline: int | PostprocessConfig | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
    partitions: int | None = None,
    broadcast: bool | None = None,
) -> SweepResult:
    """:func:`ragframe.sweep` on ``engine``: each partition's per-(configuration, query)
    rows, the summary computed on the driver from all of them; equal to
    ``ragframe.sweep(...)``."""
    configs, _ = configurations(grid)
    metric, cost, metrics = chosen(configs, metric, cost, metrics)
    judged = judgements(qrels)
    ran = run_stage(
        STAGES["sweep"],
        engine,
        candidates,
        options={"configs": configs, "qrels": judged},
        store=chunks,
        broadcast=broadcast,
        partitions=partitions,
    )
    return _gather.sweep_table(
        ran.result,
        configs,
        judged,
        ran.schema,
        chunks=ran.store,
        baseline=baseline,
        metric=metric,
        cost=cost,
        metrics=metrics,
        seed=seed,
    )
