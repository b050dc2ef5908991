"""Runs over datasets of any size on one machine: read a partition, process it, write
its output, next; memory stays flat however large the input, and the output is what
one big call writes.

==========================  =====================================  =========================
entry                       a partition holds                      output order
==========================  =====================================  =========================
:func:`postprocess_dataset` every candidate of a range of queries  sorted by ``query_id``,
                            (:mod:`ragframe.driver._ranges`: a     ``block_rank``, as
                            counting pass, then filtered scans or  ``postprocess`` sorts
                            one spill)
:func:`fetch_dataset`       every request of a hash bucket of      request order, as
                            documents, and those documents only    ``fetch`` (re-sorted by
                            (:mod:`._fetch`)                       the global position)
:func:`chunk_dataset`       consecutive documents, read in         input order, as ``chunk``
                            batches (``driver._batches``)
==========================  =====================================  =========================

``postprocess_dataset`` and ``chunk_dataset`` are the driver's stages
(:func:`ragframe.driver.run_stage`) on the local engine (:mod:`ragframe.driver._local`:
the next partition read and the last one written by a background thread while one is
processed); ``fetch_dataset`` still plans and orders its partitions itself.

Each partition is processed by the partition contract (:mod:`ragframe.partition`), the
engine's own code path. Inputs are paths (a file, a glob, a directory or hive-partitioned
Parquet dataset, ``-``; see :mod:`ragframe.io`) or frames; the destination is a file, a
directory of Parquet parts (a path ending with ``/``; parts in output order) or ``-``,
written atomically as :mod:`ragframe.io` says. Progress: :mod:`ragframe._progress`.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragframe._validate import as_config
from ragframe.dataset._run import (
    CHUNK_TEXT,
    FETCH_TEXT,
    STORE_IN_MEMORY,
    RunSummary,
)
from ragframe.errors import ConfigError
from ragframe.io._unreadable import naming
from ragframe.partition import ROWS_PER_PARTITION

# Each entry imports its stage and runner when called, not here: a command loads only
# its own stage (``ragframe fetch`` and ``chunk`` never load postprocess or numba).

__all__ = [
    "CHUNK_TEXT",
    "FETCH_TEXT",
    "ROWS_PER_PARTITION",
    "STORE_IN_MEMORY",
    "RunSummary",
    "chunk_dataset",
    "fetch_dataset",
    "postprocess_dataset",
]

Path = str | os.PathLike[str]


def _options(*, progress: bool | None = None, fmt: str | None = None) -> None:
    """The options every entry ends with (only the signature is read)."""


@dataclass(frozen=True)
class _Entry:
    """One entry, defined once for all three: its stage's single-machine parameters
    (the ``inputs``, paths or frames; the ``config``; an optional ``side`` input) with
    ``destination`` after the inputs, then its partition size (``size``, positive) and
    :func:`_options`; its body opens the inputs, checks the config and calls ``run`` of
    the runner module (``ragframe.dataset._<stage>``)."""

    stage: str
    """The runner module: ``ragframe.dataset._<stage>``."""
    inputs: tuple[str, ...]
    config: str
    """The stage's config class (``module.Class``, in ``ragframe``)."""
    size: tuple[str, int]
    side: str | None = None
    optional: bool = True
    """Whether ``config`` may be left out (the defaults)."""

    def signature(self) -> inspect.Signature:
        """The entry's parameters, as :mod:`inspect` shows them."""
        p = inspect.Parameter
        plain, keyword = p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY
        taken = [p(name, plain, annotation="Any") for name in (*self.inputs, "destination")]
        taken[-1] = taken[-1].replace(annotation="Path")
        config = f"{self.config.rpartition('.')[2]} | Mapping[str, Any]"
        if self.optional:
            taken.append(p("config", plain, default=None, annotation=f"{config} | None"))
        else:
            taken.append(p("config", plain, annotation=config))
        if self.side:
            taken.append(p(self.side, keyword, default=None, annotation="Any"))
        taken.append(p(self.size[0], keyword, default=self.size[1], annotation="int"))
        taken += inspect.signature(_options).parameters.values()
        return inspect.Signature(taken, return_annotation="RunSummary")

    def run(self, given: dict[str, Any]) -> RunSummary:
        from ragframe.driver._inputs import open_input

        module, _, name = self.config.rpartition(".")
        kind = getattr(importlib.import_module(f"ragframe.{module}"), name)
        config = as_config(given["config"], kind)
        size = _positive(given[self.size[0]], self.size[0])
        side = given[self.side] if self.side else None
        with naming(
            *(given[name] for name in self.inputs), side
        ):  # a damaged page found when read: its file named
            opened: list[Any] = [open_input(given[name], name) for name in self.inputs]
            if self.side:
                opened.append(open_input(side, self.side) if side is not None else None)
            runner = importlib.import_module(f"ragframe.dataset._{self.stage}")
            return runner.run(  # type: ignore[no-any-return]
                *opened,
                given["destination"],
                config,
                **{self.size[0]: size},
                progress=given["progress"],
                fmt=given["fmt"],
            )

    def function(self, name: str, doc: str) -> Callable[..., RunSummary]:
        """The entry ``name`` of this module, documented by ``doc``."""
        signature = self.signature()

        def entry(*args: Any, **kwargs: Any) -> RunSummary:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return self.run(dict(bound.arguments))

        entry.__signature__ = signature  # type: ignore[attr-defined]
        entry.__name__ = entry.__qualname__ = name
        entry.__doc__ = doc
        return entry


def _positive(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    return value


postprocess_dataset = _Entry(
    "postprocess",
    ("candidates",),
    "postprocess.PostprocessConfig",
    ("rows_per_partition", ROWS_PER_PARTITION),
    side="chunks",
).function(
    "postprocess_dataset",
    """:func:`ragframe.postprocess` of a dataset of any size into ``destination``, in
    partitions of whole queries of about ``rows_per_partition`` candidates each.

    The output equals ``postprocess(candidates, config, chunks=chunks)`` collected and
    written in one piece: blocks sorted by ``query_id`` then ``block_rank`` (a
    directory gets one part per partition, in that order). A partition never splits a
    query, however the input is ordered: one pass counts each query's rows and cuts
    the sorted query ids into ranges; each range is read by a filtered scan when the
    input is grouped by query (Parquet row-group statistics skip the rest) or else
    from a one-time spill of the input into one folder per range. The chunk store
    gives each partition only the rows it needs (a semi-join on the keys); one up to
    :data:`STORE_IN_MEMORY` is read once.

    Args:
        candidates: a path (file, glob, directory, hive dataset, ``-``) or a frame, as
            :func:`ragframe.postprocess` takes it.
        destination: a file (format from the extension), a directory of Parquet parts
            (ends with ``/``), or ``-`` (standard output, in ``fmt``).
        config: the parameters (see :func:`ragframe.postprocess`).
        chunks: an optional chunk store, a path or a frame.
        rows_per_partition: candidates per partition (a query with more is one
            partition alone); peak memory grows with it.
        progress: show progress (None: on a terminal or in a notebook).
        fmt: the format of ``-``: ``parquet``, ``ipc``, ``csv`` or ``ndjson`` (default).

    Returns:
        What was read and written (:class:`RunSummary`).

    Raises:
        RagframeError: as :func:`ragframe.postprocess` (the schema at once, values when
            their partition is processed; a value error counts its partition's rows),
            or the destination cannot be written (before any work). Nothing is left
            at ``destination`` after an error.

    Example:
        >>> import os, tempfile
        >>> import polars as pl
        >>> rows = pl.DataFrame({"query_id": [2, 1, 2], "entity_id": [7, 8, 9],
        ...     "chunk_index": [0, 0, 0], "text": ["b", "a", "c"], "similarity": [0.9] * 3})
        >>> out = os.path.join(tempfile.mkdtemp(), "blocks.parquet")
        >>> summary = postprocess_dataset(rows, out, rows_per_partition=2, progress=False)
        >>> summary.partitions, pl.read_parquet(out)["text"].to_list()
        (2, ['a', 'b', 'c'])
    """,
)

fetch_dataset = _Entry(
    "fetch",
    ("requests", "documents"),
    "fetch.FetchConfig",
    ("text_per_partition", FETCH_TEXT),
    side="sizes",
).function(
    "fetch_dataset",
    """:func:`ragframe.fetch` of every request into ``destination``, in partitions of
    documents holding about ``text_per_partition`` bytes of content each.

    The output equals ``fetch(requests, documents, config, sizes=sizes)`` collected and
    written in one piece (request order; a directory's parts, in order, hold it). The
    requests are read whole; each partition holds the requests of a hash bucket of
    documents and reads only those documents, so each document is highlighted once and
    the documents are never all in memory (see :mod:`ragframe.dataset._fetch`).

    Args:
        requests: a path or a frame, as :func:`ragframe.fetch` takes it (a column named
            ``request_order`` is reserved).
        documents: a path or a frame.
        destination: a file, a directory of Parquet parts (ends with ``/``) or ``-``.
        config: the parameters (see :func:`ragframe.fetch`).
        sizes: an optional ``doc_id, content_length`` table, a path or a frame.
        text_per_partition: bytes of documents' content per partition.
        progress: show progress (None: on a terminal or in a notebook).
        fmt: the format of ``-`` (default: JSON lines).

    Returns:
        What was read and written; ``missing_ids`` lists the requested documents not
        found, in request order.

    Raises:
        RagframeError: as :func:`ragframe.fetch`, or the destination cannot be written
            (before any work). Nothing is left at ``destination`` after an error.

    Example:
        >>> import os, tempfile
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1, 2], "content": ["short", "long " * 5]})
        >>> reqs = pl.DataFrame({"query_id": [7, 7], "query": ["long"] * 2, "doc_id": [2, 1]})
        >>> out = os.path.join(tempfile.mkdtemp(), "content.parquet")
        >>> run = fetch_dataset(reqs, docs, out, {"fulltext_threshold": 10}, progress=False)
        >>> pl.read_parquet(out)["strategy"].to_list()
        ['highlight', 'full']
    """,
)

chunk_dataset = _Entry(
    "chunk",
    ("documents",),
    "window.WindowConfig",
    ("text_per_partition", CHUNK_TEXT),
    optional=False,
).function(
    "chunk_dataset",
    """:func:`ragframe.chunk` of every document into ``destination``, reading about
    ``text_per_partition`` bytes of content at a time.

    The output equals ``chunk(documents, config)`` collected and written in one piece
    (documents in input order, chunks ascending); a Parquet input is read batch by
    batch (pages as needed), so memory stays flat however large the documents.

    Args:
        documents: a path or a frame with ``doc_id`` and ``content``.
        destination: a file, a directory of Parquet parts (ends with ``/``) or ``-``.
        config: window size and overlap (a :class:`~ragframe.WindowConfig` or a
            mapping of its fields).
        text_per_partition: bytes of content per batch.
        progress: show progress (None: on a terminal or in a notebook).
        fmt: the format of ``-`` (default: JSON lines).

    Returns:
        What was read and written.

    Raises:
        RagframeError: as :func:`ragframe.chunk`, or the destination cannot be
            written (before any work). Nothing is left at ``destination`` after an
            error.

    Example:
        >>> import os, tempfile
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1, 2], "content": ["abcdefghij", "xyz"]})
        >>> out = os.path.join(tempfile.mkdtemp(), "chunks.parquet")
        >>> run = chunk_dataset(docs, out, {"window_chars": 4, "overlap_chars": 2},
        ...     text_per_partition=8, progress=False)
        >>> run.partitions, pl.read_parquet(out)["text"].to_list()
        (2, ['abcd', 'cdef', 'efgh', 'ghij', 'xyz'])
    """,
)
