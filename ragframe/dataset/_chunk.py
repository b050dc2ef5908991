"""``chunk`` over a dataset: the driver's chunk stage on the local engine, partitions of
consecutive documents of about ``text_per_partition`` bytes of content
(:mod:`ragframe.driver._batches`), each partition's chunks written when done (a
document's chunks never depend on another document)."""

from __future__ import annotations

import os
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ragframe import io
from ragframe import schema as c
from ragframe.dataset._run import RunSummary, Written, arrow_schema, spill_place
from ragframe.driver import STAGES, run_stage
from ragframe.driver._inputs import Input
from ragframe.driver._local import LocalEngine
from ragframe.window import WindowConfig, chunk


def run(
    documents: Input,
    destination: str | os.PathLike[str],
    config: WindowConfig,
    *,
    text_per_partition: int,
    progress: bool | None,
    fmt: str | None,
) -> RunSummary:
    """Chunk every document into ``destination``, batch by batch."""
    schema = chunk(documents.frame, config).collect_schema()  # bad columns fail here
    io.check_output(destination)
    out = _Chunks(destination, arrow_schema(schema), fmt, progress)
    with LocalEngine(out, text_per_partition, spill_place(destination)) as engine:
        ran = run_stage(
            STAGES["chunk"], engine, documents, options={"config": config}, checked=True
        )
    return RunSummary(os.fspath(destination), ran.result, out.counts)


class _Chunks(Written):
    """The output of a chunk run, its progress bar and its counts."""

    what, unit = "chunk", "docs"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counts = {"documents": 0, "chunks": 0, "characters": 0}

    def done(self, rows: pl.DataFrame, store: Any, out: pa.Table) -> None:
        self.counts["documents"] += rows.height
        self.counts["chunks"] += out.num_rows
        self.counts["characters"] += int(pc.sum(pc.utf8_length(out.column(c.TEXT))).as_py() or 0)
        self.advance(rows.height, chunks=self.counts["chunks"])
