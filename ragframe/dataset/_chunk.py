"""``chunk`` over a dataset: consecutive documents in batches of about
``text_per_partition`` bytes of content, each batch's chunks written when done (a
document's chunks never depend on another document).

Parquet files are read batch by batch with Arrow's buffered reader (pages as needed,
so even a file of one huge row group is never read whole); other inputs by Polars'
streaming engine (:meth:`polars.LazyFrame.collect_batches`); an in-memory frame is
sliced.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ragframe import io
from ragframe import schema as c
from ragframe._progress import Progress
from ragframe.dataset._inputs import Input, file_bytes, row_count, stored_bytes
from ragframe.dataset._run import RunSummary, arrow_schema
from ragframe.window import WindowConfig, chunk

_READ_BUFFER = 1 << 20
_COLUMNS = [c.DOC_ID, c.CONTENT]


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
    text, rows = stored_bytes(documents, [c.CONTENT]), row_count(documents)
    parts = math.ceil(text / text_per_partition) if text else 1
    counts = {"documents": 0, "chunks": 0, "characters": 0}
    done = 0
    with (
        io.open_output(destination, arrow_schema(schema), fmt=fmt, pieces=parts) as sink,
        Progress("chunk", rows, parts, "docs", progress) as bar,
    ):
        for batch in _batches(documents, text_per_partition):
            out = chunk(batch, config).collect()
            sink.write(out)
            counts["documents"] += batch.height
            counts["chunks"] += out.height
            counts["characters"] += int(out[c.TEXT].str.len_chars().sum() or 0)
            done += 1
            bar.advance(batch.height, chunks=counts["chunks"])
    return RunSummary(os.fspath(destination), done, counts)


def _batches(documents: Input, per: int) -> Iterator[pl.DataFrame]:
    """The documents (``doc_id``, ``content``) in order, about ``per`` bytes of content
    at a time."""
    if documents.eager is not None:
        frame = documents.eager.select(_COLUMNS)
        size = max(int(frame.estimated_size()), 1)
        step = max(1, math.ceil(frame.height * per / size))
        for start in range(0, frame.height, step):
            yield frame.slice(start, step)
        return
    src = documents.source
    if src is not None and src.format == "parquet" and all(map(_has_columns, src.files)):
        for file in src.files:
            yield from _parquet_batches(file, per)
        return
    rows = documents.frame.select(pl.len()).collect().item()
    text = stored_bytes(documents, [c.CONTENT]) or per
    step = max(1, math.ceil(rows * per / max(text, 1)))
    yield from documents.frame.select(_COLUMNS).collect_batches(chunk_size=step)


def _has_columns(file: Path) -> bool:
    names = pq.read_schema(file).names
    return all(n in names for n in _COLUMNS)


def _parquet_batches(file: Path, per: int) -> Iterator[pl.DataFrame]:
    rows, text = file_bytes(file, [c.CONTENT])
    step = max(1, math.ceil(rows * per / max(text, 1)))
    reader = pq.ParquetFile(file, buffer_size=_READ_BUFFER, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=step, columns=_COLUMNS, use_threads=False):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        yield frame
