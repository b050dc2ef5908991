"""Partitions of consecutive whole documents, in input order, of about ``per`` bytes of
content each (chunk's: a document's chunks never depend on another document).

Parquet files are read batch by batch with Arrow's buffered reader (pages as needed,
so even a file of one huge row group is never read whole); other inputs by Polars'
streaming engine (:meth:`polars.LazyFrame.collect_batches`); an in-memory frame is
sliced.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ragframe import schema as c
from ragframe.driver._inputs import Input, file_bytes, stored_bytes

_READ_BUFFER = 1 << 20
COLUMNS = [c.DOC_ID, c.CONTENT]
"""What a partition of documents holds."""


def batch_count(documents: Input, per: int) -> int:
    """About how many partitions :func:`batches` makes (for the progress bar)."""
    text = stored_bytes(documents, [c.CONTENT])
    return math.ceil(text / per) if text else 1


def batches(documents: Input, per: int) -> Iterator[pl.DataFrame]:
    """The documents (``doc_id``, ``content``) in order, about ``per`` bytes of content
    at a time."""
    if documents.eager is not None:
        frame = documents.eager.select(COLUMNS)
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
    yield from documents.frame.select(COLUMNS).collect_batches(chunk_size=step)


def _has_columns(file: Path) -> bool:
    names = pq.read_schema(file).names
    return all(n in names for n in COLUMNS)


def _parquet_batches(file: Path, per: int) -> Iterator[pl.DataFrame]:
    rows, text = file_bytes(file, [c.CONTENT])
    step = max(1, math.ceil(rows * per / max(text, 1)))
    reader = pq.ParquetFile(file, buffer_size=_READ_BUFFER, pre_buffer=False)
    for batch in reader.iter_batches(batch_size=step, columns=COLUMNS, use_threads=False):
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        yield frame
