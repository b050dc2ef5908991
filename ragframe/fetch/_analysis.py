"""Token, case, whitespace and sentence rules of the highlighter (SPEC 2.1) as Polars
expressions and the character sets they use. The reference writes the same rules in
plain Python (:mod:`ragframe.reference._analysis`); tests check that both agree.

* **Tokens**: Lucene's ``StandardTokenizer`` (UAX #29 word boundaries), the kernel of
  :mod:`ragframe.fetch._tokenize`.
* **Lower-casing**: one code point at a time, as Java's ``Character.toLowerCase``
  (Lucene's ``LowerCaseFilter``): no context rules, so a final ``Σ`` is a small sigma and ``İ``
  is ``i`` (:func:`java_lower`).
* **Blank**: a query made only of Unicode ``White_Space`` characters (or empty, or null).
* **Sentence end** (the ``unified`` mode): a gap between tokens that holds ``. ! ?``
  followed later in the gap by ASCII whitespace, or holds the CJK ``U+3002 U+FF01
  U+FF1F``, or holds a blank line.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import polars as pl

ASCII_SPACE = " \t\n\r\x0b\x0c"
"""Whitespace trimmed from passage edges and ignored before a final terminator."""

BLANK_CHARS = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode ``White_Space``: a query made only of these is blank."""

SENTENCE_TERMINATORS = ".!?\u3002\uff01\uff1f"
"""A highlight ending with one of these (trailing whitespace aside) gets no "..."."""

SENTENCE_END_RUST = r"(?s)[.!?].*[ \t\n\r\x0B\x0C]|[\x{3002}\x{FF01}\x{FF1F}]|\n[ \t\r\x0B\x0C]*\n"
"""A non-word run that ends a sentence (Polars)."""

ELLIPSIS = "..."


def rust_char_class(chars: str) -> str:
    """A Rust regex character class body matching exactly ``chars`` (escaped)."""
    return "".join(f"\\x{{{ord(ch):X}}}" for ch in dict.fromkeys(chars))


def java_lower(text: pl.Expr) -> pl.Expr:
    """Java's per-code-point ``Character.toLowerCase`` of every string.

    Polars lower-cases with Unicode's full mappings: ``İ`` becomes two characters
    (``i`` and a combining dot) and a word-final ``Σ`` becomes ``ς``. Java maps each
    code point alone: ``İ`` -> ``i``, ``Σ`` -> small sigma; those two are replaced first, the
    rest of the mappings are the same one-to-one ones.
    """
    fixed = text.str.replace_all("\u0130", "i", literal=True)
    return fixed.str.replace_all("\u03a3", "\u03c3", literal=True).str.to_lowercase()


def java_lower_tokens(tokens: pl.Series, non_ascii: npt.NDArray[np.int64]) -> pl.Series:
    """:func:`java_lower` of ``tokens``, of which only the rows ``non_ascii`` may hold a
    non-ASCII character: the others are lower-cased alone (``java_lower``'s two
    replacements cannot apply to them), three passes over a few rows rather than all.

    Example:
        >>> import numpy as np
        >>> java_lower_tokens(pl.Series(["WING", "\u0130STANBUL"]), np.array([1])).to_list()
        ['wing', 'istanbul']
    """
    lowered = tokens.str.to_lowercase()
    if not non_ascii.size:
        return lowered
    exact = pl.select(java_lower(pl.lit(tokens.gather(non_ascii)))).to_series()
    return lowered.scatter(non_ascii, exact)
