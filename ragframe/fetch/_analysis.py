"""Token, whitespace and sentence rules of the highlighter (SPEC 2.1), as Rust regexes
for Polars and the character sets they use. The reference writes the same rules in
Python (:mod:`ragframe.reference._analysis`); tests check that both agree.

* **Word token**: a maximal run of word characters (Unicode letters ``L*``, numbers
  ``N*`` and the underscore; Python's ``\\w``), lower-cased. Han ideographs and Hiragana
  (U+3040-309F, U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+20000-2FA1F) are one token per
  character, as Lucene's ``StandardTokenizer`` does. Combining marks are not word
  characters, so decomposed (NFD) text splits words at accents: normalize to NFC first.
* **Run**: the text is cut into runs: a single ideograph, a word run, or a maximal run
  of non-word characters. Runs cover the text exactly, so their lengths give character
  offsets.
* **Blank**: a query made only of Unicode ``White_Space`` characters (or empty, or null).
* **Sentence end** (the ``unified`` mode): a non-word run that holds ``. ! ?`` followed
  later in the run by ASCII whitespace, or holds the CJK ``U+3002 U+FF01 U+FF1F``, or
  holds a blank line.
"""

from __future__ import annotations

_IDEO_RUST = (
    r"\x{3040}-\x{309F}\x{3400}-\x{4DBF}\x{4E00}-\x{9FFF}\x{F900}-\x{FAFF}\x{20000}-\x{2FA1F}"
)
IDEOGRAPHS_PY = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"

TOKEN_RUST = rf"[{_IDEO_RUST}]|[[\p{{L}}\p{{N}}_]--[{_IDEO_RUST}]]+"
"""Word tokens (Polars / Rust regex syntax)."""

RUN_RUST = rf"{TOKEN_RUST}|[^\p{{L}}\p{{N}}_]+"
"""Runs: tokens and the non-word runs between them (Polars)."""

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
