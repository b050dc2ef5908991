"""ragframe: turn retrieval results into LLM context, in bulk, on Polars."""

from __future__ import annotations

from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError
from ragframe.fetch import FetchConfig, fetch, missing_documents
from ragframe.highlight import HighlightConfig, highlight
from ragframe.postprocess import PostprocessConfig

__all__ = [
    "ConfigError",
    "DataError",
    "FetchConfig",
    "HighlightConfig",
    "PostprocessConfig",
    "RagframeError",
    "SchemaError",
    "fetch",
    "highlight",
    "missing_documents",
]
__version__ = "0.1.0"
