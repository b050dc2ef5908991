"""The driver's side of a distributed run: the parts' tables put together in the
single-machine engine's order, the rows only the driver can give (judged queries no
partition has), the sweep's summary over every row, and the fetch request order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver._parts import frame, restored
from ragframe.evaluate import SweepResult, evaluate
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._sweep import (
    DEFAULT_METRICS,
    Grid,
    baseline_number,
    configurations,
    sweep_result,
    sweep_rows,
)
from ragframe.partition import fetch_order
from ragframe.postprocess import PostprocessConfig


def concat(tables: Iterable[pa.Table | pl.DataFrame]) -> pl.DataFrame:
    """The parts as one frame, in the order given."""
    frames = [frame(t) for t in tables]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame()


def blocks_table(tables: Iterable[pa.Table]) -> pl.DataFrame:
    """The postprocess parts as the single-machine output: by ``(query_id, block_rank)``."""
    return concat(tables).sort(c.QUERY_ID, c.BLOCK_RANK, maintain_order=True)


def fetch_table(tables: Iterable[pa.Table]) -> pl.DataFrame:
    """The fetch parts as the single-machine output: by request order, the column gone."""
    return concat(tables).sort(c.REQUEST_ORDER).drop(c.REQUEST_ORDER)


def request_order(keys: pl.DataFrame) -> pl.Series:
    """The fetch output position of each request (:func:`ragframe.partition.fetch_order`)
    from the requests' ``query_id`` (and ``rank``) in input order."""
    return fetch_order(restored(keys)).collect()[c.REQUEST_ORDER]


def empty_like(schema: pa.Schema) -> pl.DataFrame:
    """No rows, the columns of ``schema`` (the temporary ones dropped)."""
    return restored(schema.empty_table())


def evaluate_table(
    parts: Iterable[pa.Table],
    qrels: pl.DataFrame,
    schema: pa.Schema,
    *,
    blocks: bool,
    options: Mapping[str, Any],
) -> pl.DataFrame:
    """The evaluate parts plus a row for every judged query no partition had (scored as
    the single-machine engine scores it: from empty input), by ``query_id``."""
    seen = concat(parts)
    given: dict[str, Any] = {"blocks" if blocks else "candidates": empty_like(schema)}
    rest = evaluate(qrels, **given, **options).collect()
    if not seen.width:
        return rest
    rest = rest.join(seen.select(c.QUERY_ID), on=c.QUERY_ID, how="anti", maintain_order="left")
    return pl.concat([seen, rest], how="vertical").sort(c.QUERY_ID)


def sweep_table(
    parts: Iterable[pa.Table],
    grid: Grid,
    qrels: Any,
    schema: pa.Schema,
    *,
    chunks: pa.Schema | None = None,
    baseline: int | PostprocessConfig | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str = c.CHARS_USED,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
) -> SweepResult:
    """The :class:`~ragframe.evaluate.SweepResult` of the sweep parts: their rows plus
    those of judged queries no partition had, by ``(config, query_id)``; the summary
    computed here, from all rows, by the single-machine code."""
    configs, varied = configurations(grid)
    seen = concat(parts)
    store = None if chunks is None else empty_like(chunks)
    rest = sweep_rows(empty_like(schema), configs, varied, judgements(qrels), chunks=store)
    key = [c.CONFIG, c.QUERY_ID]
    if seen.width:
        rest = rest.join(seen.select(key), on=key, how="anti", maintain_order="left")
    rows = pl.concat([seen, rest], how="vertical") if seen.width else rest
    base = baseline_number(configs, baseline)
    return sweep_result(
        rows.sort(key), varied, base, metric=metric, cost=cost, metrics=metrics, seed=seed
    )
