"""The chunker: the same windows as :func:`ragframe.windows`, over raw documents.

Its ``start_char``/``end_char`` (code points, end exclusive) are what
``postprocess(overlap="offsets")`` uses to remove overlap exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ragframe._validate import as_config
from ragframe.schema import CHUNK_INDEX, CONTENT, DOC_ID, require_columns, require_kind, to_lazy
from ragframe.window._config import WindowConfig
from ragframe.window._slide import slide


def chunk(documents: Any, config: WindowConfig | Mapping[str, Any]) -> pl.LazyFrame:
    """Cut every document's ``content`` into overlapping character windows.

    Needs ``doc_id`` (int or string) and ``content`` (string). Other columns are
    dropped: the output is exactly the chunk table the post-processor and the Cranfield
    fixture use; join metadata back on ``doc_id``. Each row is one document (rows with
    the same ``doc_id`` are not merged). Windows follow :func:`ragframe.windows`: start
    every ``config.step`` characters, at most ``window_chars`` long, the last one ending
    at the end of the content. An empty or null ``content`` has no chunks. The chunk
    texts are not copied: they are views into the documents' own string buffers, which
    the result keeps alive.

    Args:
        documents: one row per document (Polars DataFrame/LazyFrame or pyarrow Table).
        config: as for :func:`ragframe.windows`.

    Returns:
        A LazyFrame with ``doc_id``, ``chunk_index`` (0-based: the ``window_index`` of
        :func:`ragframe.windows`), ``start_char``, ``end_char`` (Int64) and ``text``;
        documents in input order, chunks ascending.

    Raises:
        SchemaError: a required column is missing or has the wrong type.

    Example:
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1, 2], "content": ["abcdefghij", ""]})
        >>> out = chunk(docs, WindowConfig(window_chars=4, overlap_chars=2)).collect()
        >>> out.select("chunk_index", "start_char", "end_char").rows()
        [(0, 0, 4), (1, 2, 6), (2, 4, 8), (3, 6, 10)]
    """
    config = as_config(config, WindowConfig)
    frame = to_lazy(documents, "documents")
    schema = frame.collect_schema()
    require_columns(schema, (DOC_ID, CONTENT), "documents")
    require_kind(schema, DOC_ID, ("int", "string"), "documents")
    require_kind(schema, CONTENT, ("string",), "documents")
    return slide(
        frame,
        text=CONTENT,
        keys=(DOC_ID,),
        index=CHUNK_INDEX,
        window=config.window_chars,
        overlap=config.overlap_chars,
    )
