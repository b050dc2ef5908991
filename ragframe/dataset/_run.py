"""What every dataset run shares: its summary, the output's Arrow schema, where its
temporary data goes."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from ragframe import io

if TYPE_CHECKING:
    import pyarrow as pa

    from ragframe._progress import Progress
    from ragframe.errors import RagframeError

STORE_IN_MEMORY = 512 * 2**20
"""A chunk store up to this size (uncompressed) is read once and kept; a larger one is
scanned by each partition for the rows it needs."""
FETCH_TEXT = 16 * 2**20
"""Documents' content per partition of fetch: a partition needs 10-20 times the text
it highlights (100k pairs over 275 MB of documents peak at about 830 MiB)."""
CHUNK_TEXT = 32 * 2**20
"""Documents' content per batch of chunk (2 GB of text peaks at about 530 MiB)."""


@dataclass(frozen=True)
class RunSummary:
    """What a dataset run read and wrote.

    Attributes:
        output: the destination, as given.
        partitions: how many partitions the input was processed in.
        counts: the stage's counts (postprocess: ``queries``, ``candidates``,
            ``missing_text_candidates``, ``missing_text_queries``, ``blocks``,
            ``characters``, ``truncated``; fetch: ``requests``, ``rows``, one per
            strategy, ``missing_documents``; chunk: ``documents``, ``chunks``,
            ``characters``).
        spilled: whether the input was first spilled into one folder per partition
            (an input not grouped by query; see :mod:`ragframe.dataset`).
        missing_ids: fetch: the first requested documents not found, in request order.
    """

    output: str
    partitions: int
    counts: dict[str, int]
    spilled: bool = False
    missing_ids: list[object] = field(default_factory=list)


def arrow_schema(schema: pl.Schema) -> pa.Schema:
    """The Arrow schema of a collected frame of Polars ``schema`` (what ``to_arrow``
    gives: large strings and lists)."""
    return pl.DataFrame(schema=schema).to_arrow().schema


def spill_place(destination: str | os.PathLike[str]) -> Path:
    """The path a run's temporary data is named after: beside the output (the same
    disk), or in the temporary folder for standard output."""
    if os.fspath(destination) == io.STDIO:
        return Path(tempfile.gettempdir()) / "ragframe-run"
    return Path(os.path.realpath(destination))


class Written:
    """A dataset run's output (written in partition order) and its progress bar: the
    local engine's :class:`~ragframe.driver._local.Output`, less what a stage counts
    (:meth:`done`, the subclass's)."""

    what = "rows"
    """The stage, as the bar names it."""
    unit = "rows"

    def __init__(
        self,
        destination: str | os.PathLike[str],
        schema: pa.Schema,
        fmt: str | None,
        progress: bool | None,
    ) -> None:
        self.destination, self.schema, self.fmt, self.progress = destination, schema, fmt, progress
        self.bar: Progress | None = None

    @contextmanager
    def opened(self, partitions: int, rows: int | None) -> Iterator[Callable[[Any], object]]:
        """The output and the bar, open for the run: the output's writer."""
        from ragframe._progress import Progress  # tqdm: loaded by the runs alone

        with (
            io.open_output(self.destination, self.schema, fmt=self.fmt, pieces=partitions) as sink,
            Progress(self.what, rows, partitions, self.unit, self.progress) as self.bar,
        ):
            yield sink.write

    def advance(self, rows: int, **counts: int) -> None:
        assert self.bar is not None
        self.bar.advance(rows, **counts)

    def failed(self, rows: pl.DataFrame, store: Any, error: RagframeError) -> RagframeError:
        """The error a partition's failure raises: its own."""
        return error
