"""``fetch`` over a dataset: the driver's fetch stage on the local engine, requests
partitioned by document, each partition reading only its own documents, the outputs
put back in request order.

The requests are read whole (they are small: ids and the query) and numbered by the
driver with :func:`ragframe.partition.fetch_order` (their global output position).
Requests go to partition ``bucket(doc_id)``, so every document is read, tokenized and
highlighted in one partition only; each partition semi-joins the documents it needs (a
streaming scan of the documents). A partition's output, sorted by position, is written
to a temporary Parquet file with small row groups; the output is then written range of
positions by range (each range read from every temporary file, row-group statistics
skipping the rest), so neither the documents nor the output are ever held whole.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragframe import io
from ragframe import schema as c
from ragframe.dataset._run import RunSummary, Written, arrow_schema, spill_place
from ragframe.driver import STAGES, run_stage
from ragframe.driver._inputs import Input, stored_bytes
from ragframe.driver._local import LocalEngine
from ragframe.errors import SchemaError
from ragframe.fetch import FetchConfig, fetch
from ragframe.fetch._strategy import request_key
from ragframe.io import _atomic
from ragframe.io._sinks import parquet_options
from ragframe.partition import ORDER

ROW_GROUP = 4096
"""Rows per row group of a partition's temporary output (the unit a range reads)."""


def run(
    requests: Input,
    documents: Input,
    sizes: Input | None,
    destination: str | os.PathLike[str],
    config: FetchConfig,
    *,
    text_per_partition: int,
    progress: bool | None,
    fmt: str | None,
) -> RunSummary:
    """Fetch every request into ``destination``, partition by partition."""
    plan = fetch(requests.frame, documents.frame, config, sizes=sizes.frame if sizes else None)
    schema = plan.collect_schema()  # bad columns fail here, before any work
    if ORDER in requests.frame.collect_schema():
        raise SchemaError(
            f"requests: column '{ORDER}' is reserved for the request order of a dataset run; "
            "rename it"
        )
    io.check_output(destination)
    given = requests.eager if requests.eager is not None else requests.frame.collect()
    text = stored_bytes(documents, [c.CONTENT])
    if text is None:
        text = documents.frame.select(pl.col(c.CONTENT).str.len_bytes().sum()).collect().item()
    parts = max(1, math.ceil((text or 0) / text_per_partition))
    out = _Fetched(destination, arrow_schema(schema), fmt, progress)
    out.requests, out.per, out.key = given.height, text_per_partition, request_key(given.schema)
    options = {"config": config, "sizes": sizes.frame.collect() if sizes is not None else None}
    with LocalEngine(out, text_per_partition, spill_place(destination)) as engine:
        run_stage(
            STAGES["fetch"],
            engine,
            Input(given.lazy(), eager=given),
            options=options,
            store=documents,
            broadcast=False,
            partitions=parts,
            checked=True,
        )
    counts = {"requests": given.height, "rows": out.rows}
    counts.update({name: out.counts[name] for name in c.STRATEGIES})
    return RunSummary(os.fspath(destination), parts, counts, parts > 1, out.missing_ids())


class _Fetched(Written):
    """The output of a fetch run (in request order), its progress bar and its counts."""

    what, unit = "fetch", "requests"
    requests = per = parts = 0
    key = c.DOC_ID

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counts: Counter[str] = Counter()
        """Rows per strategy."""
        self.rows = 0
        self.missing: list[pl.DataFrame] = []

    @contextlib.contextmanager
    def opened(self, partitions: int, rows: int | None) -> Iterator[Callable[[Any], object]]:
        """One partition: its output sorted, written; more: each partition's output
        spilled, then written a range of request order at a time."""
        self.parts = partitions
        with super().opened(partitions, self.requests) as write:
            if partitions == 1:
                yield lambda table: write(_sorted(table).drop_columns([ORDER]))
                return
            with _folder(self.destination) as folder:
                files: list[Path] = []
                held: list[int] = []
                yield lambda table: _spill(table, folder, files, held)
                for piece in _merged(files, self.requests, held, self.per):
                    write(piece)

    def done(self, rows: pl.DataFrame, store: Any, out: pa.Table) -> None:
        found = pl.from_arrow(out.select([c.STRATEGY, ORDER, self.key]))
        assert isinstance(found, pl.DataFrame)
        self.counts.update(dict(found[c.STRATEGY].value_counts().iter_rows()))
        self.rows += out.num_rows
        self.missing.append(found.filter(pl.col(c.STRATEGY) == c.MISSING).drop(c.STRATEGY))
        self.advance(self.requests if self.parts == 1 else out.num_rows, **self.counts)

    def missing_ids(self) -> list[Any]:
        """The distinct ids of requested documents not found, in request order."""
        if not self.missing:
            return []
        rows = pl.concat(self.missing).sort(ORDER)
        return rows[self.key].unique(maintain_order=True).to_list()


def _spill(table: pa.Table, folder: Path, files: list[Path], held: list[int]) -> None:
    """One partition's output, sorted by position, into ``folder`` (and the bytes of
    content it holds)."""
    table = _sorted(table)
    files.append(folder / f"part-{len(files):05d}.parquet")
    pq.write_table(table, files[-1], row_group_size=ROW_GROUP, **parquet_options(table.schema))
    held.append(pc.sum(pc.binary_length(table.column(c.CONTENT))).as_py() or 0)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by(ORDER)


@contextlib.contextmanager
def _folder(destination: str | os.PathLike[str]) -> Iterator[Path]:
    folder = _atomic.temp_name(spill_place(destination))
    _atomic.WRITING.add(folder)
    try:
        folder.mkdir(parents=True)
        yield folder
    finally:
        _atomic.remove(folder)


def _merged(files: list[Path], total: int, held: list[int], per: int) -> Iterator[pa.Table]:
    """The partitions' outputs in request order, a range of positions at a time."""
    ranges = max(1, math.ceil(sum(held) / per))
    scan = pl.scan_parquet(files, hive_partitioning=False)
    step = math.ceil(total / ranges) if total else 1
    for low in range(0, total, step):
        piece = scan.filter(pl.col(ORDER).is_between(low, low + step - 1)).collect()
        yield piece.sort(ORDER).drop(ORDER).to_arrow()
