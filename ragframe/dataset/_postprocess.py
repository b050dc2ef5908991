"""``postprocess`` over a dataset: partitions of whole queries in turn, each block
written as soon as its partition is done."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import io
from ragframe import schema as c
from ragframe.dataset._run import STORE_IN_MEMORY, RunSummary, Written, arrow_schema, spill_place
from ragframe.driver import STAGES, run_stage
from ragframe.driver._inputs import Input, row_count, stored_bytes
from ragframe.driver._local import LocalEngine
from ragframe.errors import DataError, RagframeError
from ragframe.postprocess import (
    PostprocessConfig,
    load_kernels_ahead,
    missing_text_counts,
    postprocess,
)

COUNTS = (
    "queries",
    "candidates",
    "missing_text_candidates",
    "missing_text_queries",
    "blocks",
    "characters",
    "truncated",
)
"""What :attr:`RunSummary.counts` holds for postprocess (0 each for an empty input)."""


def run(
    candidates: Input,
    store: Input | None,
    destination: str | os.PathLike[str],
    config: PostprocessConfig,
    *,
    rows_per_partition: int,
    progress: bool | None,
    fmt: str | None,
) -> RunSummary:
    """Postprocess ``candidates`` into ``destination`` partition by partition (the
    driver's stage on the local engine)."""
    plan = postprocess(candidates.frame, config, chunks=store.frame if store else None)
    schema = plan.collect_schema()  # bad columns fail here, before any work
    io.check_output(destination)
    load_kernels_ahead(row_count(candidates))  # while the store and the first partition are read
    out = _Blocks(
        destination,
        arrow_schema(schema),
        fmt,
        progress,
        config=config,
        candidates=candidates,
        store=store,
    )
    used, whole = _store(store) if store is not None else (None, None)
    with LocalEngine(out, rows_per_partition, spill_place(destination)) as engine:
        ran = run_stage(
            STAGES["postprocess"],
            engine,
            candidates,
            options={"config": config},
            store=used,
            broadcast=whole,
            checked=True,
        )
        spilled = engine.spilled
    return RunSummary(os.fspath(destination), ran.plan.partitions, dict(out.totals), spilled)


def _store(store: Input) -> tuple[Input, bool]:
    """The store's columns postprocess reads, and whether it is held whole: a store in
    memory (given so, or read once when at most :data:`STORE_IN_MEMORY`) is given
    whole: the engine joins the text of only the rows that need it, and a semi-join
    first would copy the text it keeps. A larger store is scanned for each partition's
    keys (a streaming semi-join on entity and chunk index), so only those rows are
    held."""
    names = store.frame.collect_schema().names()
    own = c.ENTITY_ID if c.ENTITY_ID in names else c.DOC_ID
    used = [n for n in (own, c.CHUNK_INDEX, c.TEXT, c.START_CHAR, c.END_CHAR) if n in names]
    size = stored_bytes(store, used)
    whole = store.eager is not None or (size is not None and size <= STORE_IN_MEMORY)
    return Input(store.frame.select(used), store.source, store.eager), whole


class _Blocks(Written):
    """The output of a postprocess run, its progress bar and its counts. Candidates
    without text are counted where they are allowed; by default (an error) a run that
    goes on has none, and the error counts the whole input's."""

    what = "postprocess"

    def __init__(
        self, *args: Any, config: PostprocessConfig, candidates: Input, store: Input | None
    ) -> None:
        super().__init__(*args)
        self.candidates, self.store = candidates, store
        self.counted = store is not None and config.missing_text != "error"
        self.totals: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))  # all, even for no rows

    def done(self, rows: pl.DataFrame, store: Any, out: pa.Table) -> None:
        lacking, lacking_queries = _lacking(rows, store) if self.counted else (0, 0)
        blocks = pl.from_arrow(out.select([c.CHAR_COUNT, c.TRUNCATED]))
        assert isinstance(blocks, pl.DataFrame)
        self.totals.update(
            queries=rows[c.QUERY_ID].n_unique(),
            candidates=rows.height,
            missing_text_candidates=lacking,
            missing_text_queries=lacking_queries,
            blocks=blocks.height,
            characters=int(blocks[c.CHAR_COUNT].sum()),
            truncated=int(blocks[c.TRUNCATED].sum()),
        )
        self.advance(rows.height, queries=self.totals["queries"], blocks=self.totals["blocks"])

    def failed(self, rows: pl.DataFrame, store: Any, error: RagframeError) -> RagframeError:
        if not isinstance(error, DataError) or self.store is None or self.counted:
            return error
        here = _lacking(rows, store)[0]
        return _everywhere(error, self.candidates, self.store, here) if here else error


def _lacking(rows: pl.DataFrame, needed: pl.DataFrame | None) -> tuple[int, int]:
    found = missing_text_counts(rows, needed).collect().row(0)
    return int(found[0]), int(found[1])


def _everywhere(exc: DataError, candidates: Input, store: Input, here: int) -> DataError:
    """The missing-text error of one partition, with the whole input's counts when
    other partitions lack text too."""
    found = missing_text_counts(candidates.frame, store.frame).collect(engine="streaming")
    count, queries = found.row(0)
    if count == here:
        return exc
    return DataError(f"{exc}; in the whole input: {count} candidate(s) in {queries} query(ies)")
