"""ragframe: turn retrieval results into LLM context, in bulk, on Polars."""

from __future__ import annotations

from ragframe.errors import ConfigError, DataError, RagframeError, SchemaError
from ragframe.postprocess import PostprocessConfig, postprocess
from ragframe.reference import postprocess_reference

__all__ = [
    "ConfigError",
    "DataError",
    "PostprocessConfig",
    "RagframeError",
    "SchemaError",
    "postprocess",
    "postprocess_reference",
]
__version__ = "0.1.0"
