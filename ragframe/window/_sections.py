"""SPEC 3 over rendered document sections: render and join them, then the seed's
single bounded prefix (:func:`assemble`) or every window (:func:`windows`).

A document is the set of ``sections`` rows that share a ``doc_id``. Each section is
rendered by :func:`_render_section` (title line, then body) and the rendered sections,
ordered by ``section_index``, are joined with ``"\\n\\n"`` into the document's full
text. :func:`assemble` returns the seed's single bounded prefix of it; :func:`windows`
returns every window (the multi-window mode the seed reserved).

Lengths and offsets are Unicode code points. The seed counts Java UTF-16 units; the two
agree on all text without characters outside the Basic Multilingual Plane (emoji and
other astral characters count 1 here, 2 in Java).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe._validate import as_config
from ragframe.schema import (
    DOC_ID,
    SECTION_INDEX,
    TEXT,
    TITLE,
    TRUNCATED,
    WINDOW_INDEX,
    require_columns,
    require_kind,
    to_lazy,
)
from ragframe.window._config import WindowConfig
from ragframe.window._slide import slide

SECTION_SEPARATOR = "\n\n"
"""Joins the rendered sections of a document."""


def _render_section(title: str | pl.Expr, text: str | pl.Expr) -> pl.Expr:
    """Render one section: ``title + "\\n" + text`` when the title is non-empty, else text.

    A null or empty (``""``) title means "no title"; a whitespace-only title is kept.
    A null text is ``""``, so a titled section with no body renders as ``title + "\\n"``.
    """
    title = pl.col(title) if isinstance(title, str) else title
    body = (pl.col(text) if isinstance(text, str) else text).fill_null("")
    has_title = title.is_not_null() & (title != "")
    return pl.when(has_title).then(pl.concat_str(title, pl.lit("\n"), body)).otherwise(body)


def _check_sections(sections: Any) -> tuple[pl.LazyFrame, bool]:
    """Validate the sections schema; return the frame and whether it has a title."""
    frame = to_lazy(sections, "sections")
    schema = frame.collect_schema()
    require_columns(schema, (DOC_ID, SECTION_INDEX, TEXT), "sections")
    require_kind(schema, DOC_ID, ("int", "string"), "sections")
    require_kind(schema, SECTION_INDEX, ("int",), "sections")
    require_kind(schema, TEXT, ("string",), "sections")
    if TITLE in schema:
        require_kind(schema, TITLE, ("string",), "sections")
    return frame, TITLE in schema


def _documents(sections: Any) -> pl.LazyFrame:
    """One row per document: ``doc_id`` and its full text in a private column."""
    frame, has_title = _check_sections(sections)
    title = pl.col(TITLE) if has_title else pl.lit(None, dtype=pl.String)
    rendered = pl.when(pl.col(SECTION_INDEX).is_not_null()).then(_render_section(title, TEXT))
    ordered = rendered.sort_by(SECTION_INDEX, maintain_order=True).drop_nulls()
    return frame.group_by(DOC_ID, maintain_order=True).agg(
        ordered.str.join(SECTION_SEPARATOR).alias(c.T_FULL_TEXT)
    )


def assemble(sections: Any, config: WindowConfig | Mapping[str, Any]) -> pl.LazyFrame:
    """The seed's single window per document: the full text if it fits, else its prefix.

    Needs ``doc_id`` (int or string), ``section_index`` (int), ``text`` (string) and
    optionally ``title`` (string); other columns are ignored. A row with a null
    ``section_index`` is not a section: it only declares its document (as a left join
    of documents onto sections leaves it), so a document whose rows are all such
    placeholders has no sections and gives ``""``. Sections with equal
    ``section_index`` keep their input order. A null ``doc_id`` is one document like
    any other id. Documents come out in order of first appearance.

    Args:
        sections: one row per section (Polars DataFrame/LazyFrame or pyarrow Table).
        config: ``window_chars`` bounds the text; ``overlap_chars`` is not used (a
            :class:`WindowConfig` or a mapping of its fields).

    Returns:
        A LazyFrame with ``doc_id``, ``text`` (the first ``window_chars`` characters of
        the full text) and ``truncated`` (bool: the full text was longer).

    Raises:
        SchemaError: a required column is missing or has the wrong type.

    Example:
        >>> import polars as pl
        >>> s = pl.DataFrame({"doc_id": [1, 1], "section_index": [0, 1],
        ...                   "title": ["Intro", None], "text": ["abc", "defgh"]})
        >>> assemble(s, WindowConfig(window_chars=12)).collect().row(0)
        (1, 'Intro\\nabc\\n\\nd', True)
    """
    config = as_config(config, WindowConfig)
    full = pl.col(c.T_FULL_TEXT)
    return _documents(sections).select(
        DOC_ID,
        full.str.slice(0, config.window_chars).alias(TEXT),
        (full.str.len_chars() > config.window_chars).alias(TRUNCATED),
    )


def windows(sections: Any, config: WindowConfig | Mapping[str, Any]) -> pl.LazyFrame:
    """Every window of every document's full text, with character offsets.

    Input as for :func:`assemble`. Windows start at ``0`` and every ``config.step``
    characters, are at most ``window_chars`` long, and stop at the first window that
    reaches the end of the text (so the last one ends there, and none lies entirely
    inside the previous window's overlap). A document whose full text is empty has no
    windows. Removing from each window its first ``previous end_char - start_char``
    characters and concatenating gives back the full text exactly.

    Args:
        sections: one row per section (Polars DataFrame/LazyFrame or pyarrow Table).
        config: window size and overlap (a :class:`WindowConfig` or a mapping of its
            fields).

    Returns:
        A LazyFrame with ``doc_id``, ``window_index`` (0-based), ``start_char``,
        ``end_char`` (end exclusive, Int64, code points) and ``text``; documents in order
        of first appearance, windows ascending.

    Raises:
        SchemaError: a required column is missing or has the wrong type.

    Example:
        >>> import polars as pl
        >>> s = pl.DataFrame({"doc_id": [7], "section_index": [0], "text": ["abcdefghij"]})
        >>> windows(s, WindowConfig(window_chars=4, overlap_chars=2)).collect()["text"].to_list()
        ['abcd', 'cdef', 'efgh', 'ghij']
    """
    config = as_config(config, WindowConfig)
    return slide(
        _documents(sections),
        text=c.T_FULL_TEXT,
        keys=(DOC_ID,),
        index=WINDOW_INDEX,
        window=config.window_chars,
        overlap=config.overlap_chars,
    )
