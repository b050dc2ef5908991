"""``postprocess`` over a dataset: partitions of whole queries in turn, each block
written as soon as its partition is done."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator

import polars as pl

from ragframe import io
from ragframe import schema as c
from ragframe._progress import Progress
from ragframe.dataset import _ranges
from ragframe.dataset._behind import Behind
from ragframe.dataset._inputs import Input, row_count, stored_bytes
from ragframe.dataset._run import STORE_IN_MEMORY, RunSummary, arrow_schema, spill_place
from ragframe.errors import DataError
from ragframe.partition import postprocess_blocks
from ragframe.postprocess import (
    PostprocessConfig,
    load_kernels_ahead,
    missing_text_counts,
    postprocess,
)

_ENTITY, _INDEX = c.TMP + "entity", c.TMP + "index"
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

Texts = Callable[[pl.DataFrame], pl.DataFrame]
"""A partition's candidates -> the store rows they need, in store order."""


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
    """Postprocess ``candidates`` into ``destination`` partition by partition."""
    plan = postprocess(candidates.frame, config, chunks=store.frame if store else None)
    schema = plan.collect_schema()  # bad columns fail here, before any work
    io.check_output(destination)
    known = row_count(candidates)  # one partition's worth or less: nothing to count
    load_kernels_ahead(known)  # while the store and the first partition are read
    ranges = _ranges.query_ranges(candidates.frame, rows_per_partition, known)
    texts = _texts(store, candidates.frame.collect_schema()) if store else None
    direct = _ranges.filtered_scans_fit(candidates, ranges)
    parts = len(ranges.bounds)
    totals: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))  # all of them, even for no rows
    with (
        _reader(candidates, ranges, destination, direct) as read,
        io.open_output(destination, arrow_schema(schema), fmt=fmt, pieces=parts) as sink,
        Progress("postprocess", ranges.total, parts, "rows", progress) as bar,
        Behind() as behind,  # reads the next partition, writes the last one, meanwhile
    ):
        for k, rows in enumerate(behind.read_ahead(read, parts)):
            behind.write(sink.write, _one(rows, texts, config, candidates, store, totals))
            del rows
            bar.advance(ranges.rows[k], queries=totals["queries"], blocks=totals["blocks"])
    return RunSummary(os.fspath(destination), parts, dict(totals), not direct)


@contextlib.contextmanager
def _reader(
    candidates: Input, ranges: _ranges.Ranges, destination: str | os.PathLike[str], direct: bool
) -> Iterator[_ranges.Reader]:
    if direct:
        yield _ranges.filtered(candidates, ranges)
        return
    with _ranges.spilled(candidates, ranges, spill_place(destination)) as read:
        yield read


def _one(
    rows: pl.DataFrame,
    texts: Texts | None,
    config: PostprocessConfig,
    candidates: Input,
    store: Input | None,
    totals: Counter[str],
) -> pl.DataFrame:
    """One partition's blocks; its counts added to ``totals``. Candidates without
    text are counted where they are allowed; by default (an error) a run that goes on
    has none, and the error counts the whole input's.

    The blocks stay a Polars frame: the writer converts them to Arrow on the background
    thread (a partition's 145 MB of text takes about 45 ms to convert), and an output
    written whole by Polars never converts them."""
    needed = texts(rows) if texts is not None else None
    counted = store is not None and config.missing_text != "error"
    lacking, lacking_queries = _lacking(rows, needed) if counted else (0, 0)
    try:
        table = postprocess_blocks(rows, config, chunks=needed)
    except DataError as exc:
        here = _lacking(rows, needed)[0] if store is not None and not counted else 0
        if here and store is not None:
            raise _everywhere(exc, candidates, store, here) from exc
        raise
    totals.update(
        queries=rows[c.QUERY_ID].n_unique(),
        candidates=rows.height,
        missing_text_candidates=lacking,
        missing_text_queries=lacking_queries,
        blocks=table.height,
        characters=int(table[c.CHAR_COUNT].sum()),
        truncated=int(table[c.TRUNCATED].sum()),
    )
    return table


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


def _texts(store: Input, candidates: pl.Schema) -> Texts:
    """The store rows a partition needs. A store in memory (given so, or read once when
    at most :data:`STORE_IN_MEMORY`) is given whole: the engine joins the text of only
    the rows that need it, and a semi-join first would copy the text it keeps. A larger
    store is scanned for the partition's keys (a streaming semi-join on entity and
    chunk index, read as postprocess reads them), so only those rows are held."""
    names = store.frame.collect_schema().names()
    own = c.ENTITY_ID if c.ENTITY_ID in names else c.DOC_ID
    used = [n for n in (own, c.CHUNK_INDEX, c.TEXT, c.START_CHAR, c.END_CHAR) if n in names]
    size = stored_bytes(store, used)
    table = store.eager
    if table is None and size is not None and size <= STORE_IN_MEMORY:
        table = store.frame.select(used).collect()
    if table is not None:
        kept = table
        return lambda rows: kept
    entity = c.ENTITY_ID if c.ENTITY_ID in candidates else c.DOC_ID
    dtype = pl.String if candidates[entity] == pl.String else pl.Int64
    on = [pl.col(own).cast(dtype, strict=False), pl.col(c.CHUNK_INDEX).cast(pl.Int64, strict=False)]

    def needed(rows: pl.DataFrame) -> pl.DataFrame:
        keys = rows.lazy().select(
            pl.col(entity).cast(dtype, strict=False).alias(_ENTITY),
            pl.col(c.CHUNK_INDEX).cast(pl.Int64, strict=False).fill_null(0).alias(_INDEX),
        )
        plan = store.frame.select(used).join(
            keys.unique(), left_on=on, right_on=[_ENTITY, _INDEX], how="semi", maintain_order="left"
        )
        return plan.collect(engine="streaming")

    return needed
