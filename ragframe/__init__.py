"""ragframe: turn retrieval results into LLM context, in bulk, on Polars.

The pipeline, one subpackage per stage, each a function ``LazyFrame (+ frozen config)
-> LazyFrame``:

* :mod:`ragframe.window` -- fixed-size character windows and the chunker (SPEC 3);
* :mod:`ragframe.postprocess` -- candidates to context blocks (SPEC 1);
* :mod:`ragframe.fetch` -- full text or query-relevant passages per document (SPEC 2);
* :mod:`ragframe.evaluate` -- the context that reaches the LLM against judgements (SPEC 4);
* :mod:`ragframe.reference` -- the plain per-query oracles the engine is tested against;
* :mod:`ragframe.dataset` -- the stages over datasets of any size, partition by
  partition, output streamed to disk (:func:`postprocess_dataset`, ...);
* :mod:`ragframe.cli` -- the ``ragframe`` command.

Shared modules: :mod:`ragframe.schema` (every column name), :mod:`ragframe.errors`,
:mod:`ragframe.io` (files in and out), ``ragframe._arrow`` (Arrow string buffers).
"""

from __future__ import annotations

from ragframe.dataset import RunSummary, chunk_dataset, fetch_dataset, postprocess_dataset
from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError
from ragframe.evaluate import (
    SweepResult,
    document_ranking,
    evaluate,
    read_qrels,
    read_run,
    summarize,
    sweep,
    write_run,
)
from ragframe.fetch import FetchConfig, HighlightConfig, fetch, highlight, missing_documents
from ragframe.postprocess import PostprocessConfig, postprocess
from ragframe.reference import postprocess_reference
from ragframe.window import WindowConfig, assemble, chunk, windows

__all__ = [
    "ConfigError",
    "DataError",
    "FetchConfig",
    "HighlightConfig",
    "PostprocessConfig",
    "RagframeError",
    "RunSummary",
    "SchemaError",
    "SweepResult",
    "WindowConfig",
    "assemble",
    "chunk",
    "chunk_dataset",
    "document_ranking",
    "evaluate",
    "fetch",
    "fetch_dataset",
    "highlight",
    "missing_documents",
    "postprocess",
    "postprocess_dataset",
    "postprocess_reference",
    "read_qrels",
    "read_run",
    "summarize",
    "sweep",
    "windows",
    "write_run",
]
__version__ = "0.1.0"
