"""``fetch`` over a dataset: requests partitioned by document, each partition reading
only its own documents, the outputs put back in request order.

The requests are read whole (they are small: ids and the query) and numbered by
:func:`ragframe.partition.fetch_order` (their global output position). Requests go to
partition ``bucket(doc_id)``, so every document is read, tokenized and highlighted in
one partition only; each partition semi-joins the documents it needs (a streaming
scan of the documents). A partition's output, sorted by position, is written to a
temporary Parquet file with small row groups; the output is then written range of
positions by range (each range read from every temporary file, row-group statistics
skipping the rest), so neither the documents nor the output are ever held whole.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragframe import io
from ragframe import schema as c
from ragframe._progress import Progress
from ragframe.dataset._run import RunSummary, arrow_schema, spill_place
from ragframe.driver._inputs import Input, stored_bytes
from ragframe.errors import SchemaError
from ragframe.fetch import FetchConfig, fetch
from ragframe.fetch._strategy import request_key
from ragframe.io import _atomic
from ragframe.io._sinks import parquet_options
from ragframe.partition import ORDER, bucket, fetch_order, fetch_part

ROW_GROUP = 4096
"""Rows per row group of a partition's temporary output (the unit a range reads)."""
_PART, _ID = c.TMP + "partition", c.TMP + "doc"


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
    ordered = fetch_order(requests.frame).collect()
    text = stored_bytes(documents, [c.CONTENT])
    if text is None:
        text = documents.frame.select(pl.col(c.CONTENT).str.len_bytes().sum()).collect().item()
    parts = max(1, math.ceil((text or 0) / text_per_partition))
    run = _Run(ordered, documents, sizes, config, parts)
    with (
        io.open_output(destination, arrow_schema(schema), fmt=fmt, pieces=parts) as sink,
        Progress("fetch", ordered.height, parts, "requests", progress) as bar,
    ):
        if parts == 1:
            sink.write(_ordered(run.part(0)))
            bar.advance(ordered.height, **run.counts)
        else:
            with _folder(destination) as folder:
                files, sizes_out = run.spill(folder, bar)
                for piece in _merged(files, ordered.height, sizes_out, text_per_partition):
                    sink.write(piece)
    counts = {"requests": ordered.height, "rows": run.rows}
    counts.update({name: run.counts[name] for name in c.STRATEGIES})
    return RunSummary(os.fspath(destination), parts, counts, parts > 1, run.missing_ids())


class _Run:
    """The partitions of one fetch run and what they found."""

    def __init__(
        self,
        ordered: pl.DataFrame,
        documents: Input,
        sizes: Input | None,
        config: FetchConfig,
        n: int,
    ) -> None:
        self.key = request_key(ordered.schema)
        self.dtype: pl.DataType = (
            pl.String() if ordered.schema[self.key] == pl.String else pl.Int64()
        )
        ids = pl.col(self.key).cast(self.dtype, strict=False)
        self.requests = ordered.with_columns(bucket(n, ids).alias(_PART)) if n > 1 else ordered
        self.documents, self.config, self.n = documents, config, n
        self.sizes = sizes.frame.collect() if sizes is not None else None
        self.counts: Counter[str] = Counter()
        """Rows per strategy."""
        self.rows = 0
        self.missing: list[pl.DataFrame] = []

    def part(self, k: int) -> pa.Table:
        """Partition ``k``'s output (unsorted); its counts added."""
        reqs = self.requests
        if self.n > 1:
            reqs = reqs.filter(pl.col(_PART) == k).drop(_PART)
        docs: c.Frame = self.documents.frame
        sizes = self.sizes
        if self.n > 1:
            wanted = reqs.lazy().select(pl.col(self.key).cast(self.dtype, strict=False).alias(_ID))
            docs = _needed(docs, wanted, self.dtype).collect(engine="streaming")
            sizes = None if sizes is None else _needed(sizes.lazy(), wanted, self.dtype).collect()
        table = fetch_part(reqs, docs, self.config, sizes=sizes)
        found = pl.from_arrow(table.select([c.STRATEGY, ORDER, self.key]))
        assert isinstance(found, pl.DataFrame)
        self.counts.update(dict(found[c.STRATEGY].value_counts().iter_rows()))
        self.rows += table.num_rows
        self.missing.append(found.filter(pl.col(c.STRATEGY) == c.MISSING).drop(c.STRATEGY))
        return table

    def spill(self, folder: Path, bar: Progress) -> tuple[list[Path], list[int]]:
        """Each partition's output, sorted by position, into ``folder``; the files and
        the bytes of content each holds."""
        files, held = [], []
        for k in range(self.n):
            table = _sorted(self.part(k))
            files.append(folder / f"part-{k:05d}.parquet")
            options = parquet_options(table.schema)
            pq.write_table(table, files[-1], row_group_size=ROW_GROUP, **options)
            held.append(pc.sum(pc.binary_length(table.column(c.CONTENT))).as_py() or 0)
            bar.advance(table.num_rows, **self.counts)
        return files, held

    def missing_ids(self) -> list[Any]:
        """The distinct ids of requested documents not found, in request order."""
        if not self.missing:
            return []
        rows = pl.concat(self.missing).sort(ORDER)
        return rows[self.key].unique(maintain_order=True).to_list()


def _needed(frame: pl.LazyFrame, wanted: pl.LazyFrame, dtype: pl.DataType) -> pl.LazyFrame:
    on = pl.col(c.DOC_ID).cast(dtype, strict=False)
    return frame.join(wanted.unique(), left_on=on, right_on=_ID, how="semi", maintain_order="left")


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by(ORDER)


def _ordered(table: pa.Table) -> pa.Table:
    return _sorted(table).drop_columns([ORDER])


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
