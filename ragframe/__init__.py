"""ragframe: turn retrieval results into LLM context, in bulk, on Polars.

The pipeline, one subpackage per stage, each a function ``LazyFrame (+ frozen config)
-> LazyFrame``:

* :mod:`ragframe.window` -- fixed-size character windows and the chunker (SPEC 3);
* :mod:`ragframe.postprocess` -- candidates to context blocks (SPEC 1);
* :mod:`ragframe.fetch` -- full text or query-relevant passages per document (SPEC 2);
* :mod:`ragframe.retrieve` -- BM25 as Lucene scores it, exact dense search, fusion (SPEC 6);
* :mod:`ragframe.evaluate` -- the context that reaches the LLM against judgements (SPEC 4);
* :mod:`ragframe.reference` -- the plain per-query oracles the engine is tested against;
* :mod:`ragframe.dataset` -- the stages over datasets of any size, partition by
  partition, output streamed to disk (:func:`postprocess_dataset`, ...);
* :mod:`ragframe.cli` -- the ``ragframe`` command.

Shared modules: :mod:`ragframe.schema` (every column name), :mod:`ragframe.errors`,
:mod:`ragframe.io` (files in and out), ``ragframe._arrow`` (Arrow string buffers).

The public names are imported at first use (PEP 562), so ``import ragframe`` (and the
``ragframe`` command) loads only the stages it uses: ``ragframe.fetch`` is the function,
its subpackage is imported when the name is first read. The names are listed explicitly
below for type checkers and in ``__all__``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError

if TYPE_CHECKING:
    from ragframe.dataset import RunSummary, chunk_dataset, fetch_dataset, postprocess_dataset
    from ragframe.evaluate import (
        ExperimentResult,
        SweepResult,
        document_ranking,
        evaluate,
        experiment,
        plot_budget,
        plot_distribution,
        plot_effects,
        plot_pareto,
        read_qrels,
        read_run,
        summarize,
        sweep,
        write_report,
        write_run,
    )
    from ragframe.fetch import FetchConfig, HighlightConfig, fetch, highlight, missing_documents
    from ragframe.postprocess import PostprocessConfig, postprocess
    from ragframe.reference import postprocess_reference, retrieve_reference
    from ragframe.retrieve import (
        BM25Index,
        RetrieveConfig,
        bm25_index,
        retrieve,
        sentence_transformer,
        unmatched_queries,
    )
    from ragframe.window import WindowConfig, assemble, chunk, windows

__all__ = [
    "BM25Index",
    "ConfigError",
    "DataError",
    "ExperimentResult",
    "FetchConfig",
    "HighlightConfig",
    "PostprocessConfig",
    "RagframeError",
    "RetrieveConfig",
    "RunSummary",
    "SchemaError",
    "SweepResult",
    "WindowConfig",
    "assemble",
    "bm25_index",
    "chunk",
    "chunk_dataset",
    "document_ranking",
    "evaluate",
    "experiment",
    "fetch",
    "fetch_dataset",
    "highlight",
    "missing_documents",
    "plot_budget",
    "plot_distribution",
    "plot_effects",
    "plot_pareto",
    "postprocess",
    "postprocess_dataset",
    "postprocess_reference",
    "read_qrels",
    "read_run",
    "retrieve",
    "retrieve_reference",
    "sentence_transformer",
    "summarize",
    "sweep",
    "unmatched_queries",
    "windows",
    "write_report",
    "write_run",
]
__version__ = "0.1.0"

_STAGES = {
    "ragframe.dataset": "RunSummary chunk_dataset fetch_dataset postprocess_dataset",
    "ragframe.evaluate": (
        "ExperimentResult SweepResult document_ranking evaluate experiment read_qrels read_run "
        "summarize sweep write_run "
        "plot_budget plot_distribution plot_effects plot_pareto write_report"
    ),
    "ragframe.fetch": "FetchConfig HighlightConfig fetch highlight missing_documents",
    "ragframe.postprocess": "PostprocessConfig postprocess",
    "ragframe.reference": "postprocess_reference retrieve_reference",
    "ragframe.retrieve": (
        "BM25Index RetrieveConfig bm25_index retrieve sentence_transformer unmatched_queries"
    ),
    "ragframe.window": "WindowConfig assemble chunk windows",
}
_HOME = {name: module for module, names in _STAGES.items() for name in names.split()}
"""Where each public name lives that is imported at first use."""


def __getattr__(name: str) -> Any:
    """Import a public name's stage at first use (PEP 562)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """``ragframe``'s module type: importing a subpackage named like a public function
    (``ragframe.fetch``, ``ragframe.postprocess``, ``ragframe.evaluate``,
    ``ragframe.retrieve``) does not make
    the name mean the subpackage (the import system sets the parent's attribute; here
    that is ignored, the subpackage stays in ``sys.modules``), so ``ragframe.fetch`` is
    always the function, as it was when every name was imported eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _HOME:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
