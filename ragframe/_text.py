"""Text rules shared by the engine and the reference: whitespace and normalization.

The seeds are Java. Two whitespace notions matter:

* normalization (``RagChunkPostProcessor``): every run of ``[ \\t\\n\\x0B\\f\\r]`` becomes
  one space, then ``String.trim()`` strips leading and trailing characters <= U+0020;
* ``Character.isWhitespace``: the Unicode space separators except the no-break ones
  (U+00A0, U+2007, U+202F), the line and paragraph separators, and the controls
  ``\\t \\n \\x0B \\f \\r \\x1C \\x1D \\x1E \\x1F``.
"""

from __future__ import annotations

import re

import polars as pl

JAVA_WHITESPACE: frozenset[str] = frozenset(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
"""Characters for which Java's ``Character.isWhitespace`` is true."""

COLLAPSE_PATTERN = r"[ \t\n\x0B\f\r]+"
TRIM_CHARS = "".join(chr(c) for c in range(0x21))
"""Characters ``String.trim()`` strips: U+0000 to U+0020."""

_COLLAPSE = re.compile(COLLAPSE_PATTERN)


def normalize(text: str) -> str:
    """Collapse whitespace runs to one space, then Java-trim (plain Python)."""
    return _COLLAPSE.sub(" ", text).strip(TRIM_CHARS)


def normalize_expr(text: pl.Expr) -> pl.Expr:
    """The same normalization as :func:`normalize`, as a Polars expression."""
    return text.str.replace_all(COLLAPSE_PATTERN, " ").str.strip_chars(TRIM_CHARS)


def java_trim(text: str) -> str:
    """``String.trim()``: strip characters <= U+0020 at both ends."""
    return text.strip(TRIM_CHARS)
