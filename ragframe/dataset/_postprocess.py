"""``postprocess`` over a dataset: partitions of whole queries in turn, each block
written as soon as its partition is done."""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Literal

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ragframe import io
from ragframe import schema as c
from ragframe.dataset import _ranges
from ragframe.dataset._inputs import Input, stored_bytes
from ragframe.dataset._progress import Progress
from ragframe.dataset._run import RunSummary, arrow_schema, spill_place
from ragframe.errors import DataError
from ragframe.partition import postprocess_part
from ragframe.postprocess import PostprocessConfig, missing_text_counts, postprocess

ROWS_PER_PARTITION = 2_000_000
"""Candidate rows per partition: the engine needs about 100 MiB per million rows."""
STORE_IN_MEMORY = 512 * 2**20
"""A chunk store up to this size (uncompressed) is read once and kept; a larger one is
scanned by each partition for the rows it needs."""
_ENTITY, _INDEX = c.TMP + "entity", c.TMP + "index"

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
    ranges = _ranges.query_ranges(candidates.frame, rows_per_partition)
    texts = _texts(store, candidates.frame.collect_schema()) if store else None
    direct = _ranges.filtered_scans_fit(candidates, ranges)
    totals: Counter[str] = Counter()
    with (
        _reader(candidates, ranges, destination, direct) as read,
        io.open_output(destination, arrow_schema(schema), fmt=fmt) as sink,
        Progress("postprocess", ranges.total, len(ranges.bounds), "rows", progress) as bar,
    ):
        for k in range(len(ranges.bounds)):
            rows = read(k)
            table = _one(rows, texts, config, candidates, store, totals)
            sink.write(table)
            bar.advance(rows.height, queries=totals["queries"], blocks=totals["blocks"])
    return RunSummary(os.fspath(destination), len(ranges.bounds), dict(totals), not direct)


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
) -> pa.Table:
    """One partition's blocks; its counts added to ``totals``."""
    needed = texts(rows) if texts is not None else None
    lacking, lacking_queries = missing_text_counts(rows, needed).collect().row(0)
    try:
        table = postprocess_part(rows, config, chunks=needed)
    except DataError as exc:
        if lacking and config.missing_text == "error" and store is not None:
            raise _everywhere(exc, candidates, store, lacking) from exc
        raise
    totals.update(
        queries=rows[c.QUERY_ID].n_unique(),
        candidates=rows.height,
        missing_text_candidates=lacking,
        missing_text_queries=lacking_queries,
        blocks=table.num_rows,
        characters=pc.sum(table.column(c.CHAR_COUNT)).as_py() or 0,
        truncated=pc.sum(table.column(c.TRUNCATED).cast(pa.int64())).as_py() or 0,
    )
    return table


def _everywhere(exc: DataError, candidates: Input, store: Input, here: int) -> DataError:
    """The missing-text error of one partition, with the whole input's counts when
    other partitions lack text too."""
    found = missing_text_counts(candidates.frame, store.frame).collect(engine="streaming")
    count, queries = found.row(0)
    if count == here:
        return exc
    return DataError(f"{exc}; in the whole input: {count} candidate(s) in {queries} query(ies)")


def _texts(store: Input, candidates: pl.Schema) -> Texts:
    """The store rows a partition needs: a semi-join on (entity, chunk index), the keys
    read as postprocess reads them; the store kept in memory when small."""
    entity = c.ENTITY_ID if c.ENTITY_ID in candidates else c.DOC_ID
    dtype = pl.String if candidates[entity] == pl.String else pl.Int64
    names = store.frame.collect_schema().names()
    own = c.ENTITY_ID if c.ENTITY_ID in names else c.DOC_ID
    used = [n for n in (own, c.CHUNK_INDEX, c.TEXT, c.START_CHAR, c.END_CHAR) if n in names]
    size = stored_bytes(store, used)
    table = store.eager
    if table is None and size is not None and size <= STORE_IN_MEMORY:
        table = store.frame.select(used).collect()
    lazy = table.lazy() if table is not None else store.frame
    on = [pl.col(own).cast(dtype, strict=False), pl.col(c.CHUNK_INDEX).cast(pl.Int64, strict=False)]
    engine: Literal["in-memory", "streaming"] = "in-memory" if table is not None else "streaming"

    def needed(rows: pl.DataFrame) -> pl.DataFrame:
        keys = rows.lazy().select(
            pl.col(entity).cast(dtype, strict=False).alias(_ENTITY),
            pl.col(c.CHUNK_INDEX).cast(pl.Int64, strict=False).fill_null(0).alias(_INDEX),
        )
        plan = lazy.join(
            keys.unique(), left_on=on, right_on=[_ENTITY, _INDEX], how="semi", maintain_order="left"
        )
        return plan.collect(engine=engine)

    return needed
