"""ragframe: turn retrieval results into LLM context, in bulk, on Polars."""

from __future__ import annotations

from ragframe.chunk import chunk
from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError
from ragframe.fetch import FetchConfig, fetch, missing_documents
from ragframe.highlight import HighlightConfig, highlight
from ragframe.postprocess import PostprocessConfig, postprocess
from ragframe.reference import postprocess_reference
from ragframe.window import WindowConfig, assemble, windows

__all__ = [
    "ConfigError",
    "DataError",
    "FetchConfig",
    "HighlightConfig",
    "PostprocessConfig",
    "RagframeError",
    "SchemaError",
    "WindowConfig",
    "assemble",
    "chunk",
    "fetch",
    "highlight",
    "missing_documents",
    "postprocess",
    "postprocess_reference",
    "windows",
]
__version__ = "0.1.0"
