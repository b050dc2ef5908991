"""The partition contract: a stage run partition by partition (whole queries each) equals
the one big call, row for row, on the Cranfield fixture."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe
from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.partition import (
    ORDER,
    bucket,
    evaluate_part,
    fetch_order,
    fetch_part,
    postprocess_part,
    sweep_part,
)
from tests.conftest import require_cranfield

CONFIG = ragframe.PostprocessConfig(top_k=8, max_blocks=4, max_characters=3000)


@pytest.fixture(scope="module")
def cranfield() -> dict[str, pl.DataFrame]:
    root = require_cranfield("results_minilm.parquet", "chunks.parquet", "docs.parquet")
    names = ("results_minilm", "chunks", "docs", "qrels", "queries")
    return {name: pl.read_parquet(root / f"{name}.parquet") for name in names}


def _parts(frame: pl.DataFrame, n: int) -> list[pl.DataFrame]:
    keyed = frame.with_columns(bucket(n))
    parts = keyed.partition_by("partition", include_key=False, maintain_order=True)
    assert len(parts) == n  # every partition has queries: the split is real
    return parts


@pytest.mark.parametrize("n", [1, 3, 7])
def test_postprocess_parts_equal_one_call(cranfield: dict[str, pl.DataFrame], n: int) -> None:
    results, chunks = cranfield["results_minilm"], cranfield["chunks"]
    whole = ragframe.postprocess(results, CONFIG, chunks=chunks).collect()
    tables = [postprocess_part(part, CONFIG, chunks=chunks) for part in _parts(results, n)]
    joined = pl.concat([pl.from_arrow(t) for t in tables])  # type: ignore[misc]
    assert_frame_equal(joined.sort(c.QUERY_ID, c.BLOCK_RANK), whole)


def test_postprocess_text_from_a_callable(cranfield: dict[str, pl.DataFrame]) -> None:
    """A large store is joined by key: the callable returns only the partition's rows."""
    results, chunks = cranfield["results_minilm"], cranfield["chunks"]
    seen: list[int] = []

    def needed(rows: pl.DataFrame) -> pl.DataFrame:
        keys = rows.select(c.DOC_ID, c.CHUNK_INDEX).unique()
        store = chunks.join(keys, on=[c.DOC_ID, c.CHUNK_INDEX], how="semi")
        seen.append(store.height)
        return store

    whole = ragframe.postprocess(results, CONFIG, chunks=chunks).collect()
    parts = [pl.from_arrow(postprocess_part(p, CONFIG, chunks=needed)) for p in _parts(results, 4)]
    assert_frame_equal(pl.concat(parts).sort(c.QUERY_ID, c.BLOCK_RANK), whole)  # type: ignore[arg-type]
    assert max(seen) < chunks.height  # no partition got the whole store


def test_fetch_parts_keep_request_order(cranfield: dict[str, pl.DataFrame]) -> None:
    queries = cranfield["queries"].select(c.QUERY_ID, pl.col("text").alias(c.QUERY))
    requests = (
        cranfield["results_minilm"]
        .filter(pl.col(c.RANK) <= 5)
        .join(queries, on=c.QUERY_ID, maintain_order="left")
        .select(c.QUERY_ID, c.QUERY, c.DOC_ID, c.RANK)
    )
    docs = cranfield["docs"].select(c.DOC_ID, c.CONTENT)
    config = ragframe.FetchConfig(fulltext_threshold=600)
    whole = ragframe.fetch(requests, docs, config).collect()
    ordered = fetch_order(requests).collect()
    by_doc = ordered.with_columns(bucket(5, c.DOC_ID))  # whole documents per partition
    parts = by_doc.partition_by("partition", include_key=False)
    tables = [pl.from_arrow(fetch_part(p, docs, config)) for p in parts]
    joined = pl.concat(tables).sort(ORDER).drop(ORDER)  # type: ignore[arg-type]
    assert_frame_equal(joined, whole)
    assert set(whole[c.STRATEGY]) >= {c.FULL, c.HIGHLIGHTED}  # both paths are exercised


def test_evaluate_parts_equal_one_call(cranfield: dict[str, pl.DataFrame]) -> None:
    qrels = ragframe.read_qrels(cranfield["qrels"], gain={1: 4, 2: 3, 3: 2, 4: 1, -1: 0})
    results = cranfield["results_minilm"]
    whole = ragframe.evaluate(qrels, candidates=results, k=[5, 10]).collect()
    parts = [
        pl.from_arrow(evaluate_part(qrels, candidates=p, k=[5, 10])) for p in _parts(results, 3)
    ]
    joined = pl.concat(parts).sort(c.QUERY_ID)  # type: ignore[arg-type]
    assert_frame_equal(joined, whole.filter(pl.col(c.QUERY_ID).is_in(results[c.QUERY_ID])))


def test_evaluate_part_of_a_partition_without_queries(cranfield: dict[str, pl.DataFrame]) -> None:
    """What a Dask or Ray worker hands over for a partition the hash left empty (and what
    the Dask driver checks the options on): a zero-row Arrow table. No rows come back,
    the columns of a full partition's; this panicked in Polars' streaming engine."""
    qrels = ragframe.read_qrels(cranfield["qrels"], gain={1: 4, 2: 3, 3: 2, 4: 1, -1: 0})
    results = cranfield["results_minilm"]
    blocks = ragframe.postprocess(results.head(200), CONFIG, chunks=cranfield["chunks"])
    inputs = {"candidates": results, "blocks": blocks.collect()}
    for name, rows in inputs.items():
        full = evaluate_part(qrels, **{name: rows.head(200).to_arrow()})
        empty = evaluate_part(qrels, **{name: rows.to_arrow().slice(0, 0)})
        assert full.num_rows > 0 and empty.num_rows == 0 and empty.schema == full.schema


def test_sweep_parts_equal_one_sweep(cranfield: dict[str, pl.DataFrame]) -> None:
    """Each partition's per-(config, query) rows are the sweep's rows of its queries;
    judged queries no partition has are the rows of a sweep over no candidates; the
    summary of all the rows is the sweep's."""
    from ragframe.evaluate._qrels import judgements
    from ragframe.evaluate._sweep import configurations, sweep_result, sweep_rows

    qrels = ragframe.read_qrels(cranfield["qrels"], gain={1: 4, 2: 3, 3: 2, 4: 1, -1: 0})
    results = cranfield["results_minilm"].filter(pl.col(c.QUERY_ID) % 5 != 0)
    grid = {"top_k": [5, 10], "max_blocks": [2, 4]}
    whole = ragframe.sweep(results, grid, qrels, chunks=cranfield["chunks"])
    parts = [
        pl.from_arrow(sweep_part(p, grid, qrels, chunks=cranfield["chunks"]))
        for p in _parts(results, 3)
    ]
    configs, varied = configurations(grid)
    empty = results.clear()
    rest = sweep_rows(empty, configs, varied, judgements(qrels), chunks=cranfield["chunks"])
    seen = pl.concat(parts)  # type: ignore[arg-type]
    rest = rest.join(seen.select(c.CONFIG, c.QUERY_ID), on=[c.CONFIG, c.QUERY_ID], how="anti")
    assert rest.height > 0  # judged queries without candidates: the driver's rows are real
    rows = pl.concat([seen, rest]).sort(c.CONFIG, c.QUERY_ID)
    assert_frame_equal(rows, whole.per_query)
    summary = sweep_result(rows, varied, 0).summary
    assert_frame_equal(summary, whole.summary)


def test_bucket_rejects_nonsense() -> None:
    with pytest.raises(ConfigError, match="partitions must be an integer >= 1, got 0"):
        bucket(0)
