"""The reference's text rules, written from SPEC section 1 (rules 7 and 10): whitespace,
normalization, overlap removal and truncation, in plain Python.

The seeds are Java. Two whitespace notions matter:

* normalization (``RagChunkPostProcessor``): every run of ``[ \\t\\n\\x0B\\f\\r]`` becomes
  one space, then ``String.trim()`` strips leading and trailing characters <= U+0020;
* ``Character.isWhitespace``: the Unicode space separators except the no-break ones
  (U+00A0, U+2007, U+202F), the line and paragraph separators, and the controls
  ``\\t \\n \\x0B \\f \\r \\x1C \\x1D \\x1E \\x1F``.
"""

from __future__ import annotations

import re

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


def java_trim(text: str) -> str:
    """``String.trim()``: strip characters <= U+0020 at both ends."""
    return text.strip(TRIM_CHARS)


MIN_OVERLAP = 20
"""Shortest overlap ``remove_overlap`` looks for, in normalized characters."""
TRUNCATE_WINDOW = 80
"""Rule 10 looks for whitespace at positions ``r - 1`` down to, not including,
``max(0, r - 80)``."""


def skip_units(text: str, units: int) -> int:
    """Where rule 7's walk over ``text`` stops after ``units`` normalized characters:
    the seed's loop, literally (SPEC 1, rule 7). Leading Java whitespace is skipped;
    then a non-whitespace character counts one and a run of Java whitespace counts one
    at its first character, so the walk can stop right after a run's first character
    (the rest of the run is kept)."""
    i = 0
    n = 0
    in_run = False
    while i < len(text) and text[i] in JAVA_WHITESPACE:
        i += 1
    while i < len(text) and n < units:
        if text[i] in JAVA_WHITESPACE:
            if not in_run:
                n += 1
                in_run = True
        else:
            n += 1
            in_run = False
        i += 1
    return i


def remove_overlap(existing: str, nxt: str) -> str:
    """The seed's ``removeOverlap``: drop from ``nxt`` the text ``existing`` ends with."""
    if not existing or not nxt:
        return nxt
    length = overlap_length(normalize(existing), normalize(nxt))
    return nxt[skip_units(nxt, length) :] if length else "\n" + nxt


def overlap_length(existing: str, following: str) -> int:
    """The largest L >= 20 with ``existing[-L:] == following[:L]``, else 0."""
    for length in range(min(len(existing), len(following)), MIN_OVERLAP - 1, -1):
        if existing[len(existing) - length :] == following[:length]:
            return length
    return 0


def truncate(text: str, limit: int) -> str:
    """Rule 10's cut, as the seed's loop: ``cut = limit``; look at positions ``limit - 1``
    down to, but not including, ``max(0, limit - 80)`` (position 0 is never looked at),
    and cut at the first Java whitespace found; then Java-trim ``text[:cut]``."""
    cut = limit
    for pos in range(limit - 1, max(0, limit - TRUNCATE_WINDOW), -1):
        if pos < len(text) and text[pos] in JAVA_WHITESPACE:
            cut = pos
            break
    return java_trim(text[:cut])
