"""The reference's token, whitespace and sentence rules (SPEC 2.1), in Python ``re``.

* **Word token**: a maximal run of word characters (Python's ``\\w``: Unicode letters,
  numbers and the underscore), lower-cased; Han ideographs and Hiragana (U+3040-309F,
  U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF, U+20000-2FA1F) are one token per character.
* **Run**: a single ideograph, a word run, or a maximal run of non-word characters.
* **Blank**: a query made only of Unicode ``White_Space`` characters (or empty, or null).
* **Sentence end** (the ``unified`` mode): a non-word run that holds ``. ! ?`` followed
  later in the run by ASCII whitespace, or holds ``U+3002 U+FF01 U+FF1F``, or holds a
  blank line.
"""

from __future__ import annotations

import re

IDEOGRAPHS = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
TOKEN = re.compile(rf"[{IDEOGRAPHS}]|[^\W{IDEOGRAPHS}]+")
RUN = re.compile(rf"[{IDEOGRAPHS}]|[^\W{IDEOGRAPHS}]+|\W+")
SENTENCE_END = re.compile("(?s)[.!?].*[ \t\n\r\x0b\x0c]|[\u3002\uff01\uff1f]|\n[ \t\r\x0b\x0c]*\n")
ASCII_SPACE = " \t\n\r\x0b\x0c"
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
TERMINATORS = frozenset(".!?\u3002\uff01\uff1f")


def query_terms(query: str | None) -> list[str]:
    """Distinct lower-cased word tokens of ``query``, in first-appearance order."""
    if query is None:
        return []
    return list(dict.fromkeys(m.group().lower() for m in TOKEN.finditer(query)))


def is_blank(query: str | None) -> bool:
    """True for a null, empty or whitespace-only query."""
    return query is None or all(ch in WHITE_SPACE for ch in query)


def finish_highlight(fragments: list[str]) -> str:
    """Join passages with "..." and append "..." unless a sentence terminator ends it."""
    text = "...".join(fragments)
    stripped = text.rstrip(ASCII_SPACE)
    if stripped and stripped[-1] in TERMINATORS:
        return text
    return text + "..."
