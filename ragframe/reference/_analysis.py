"""The reference's token, case, whitespace and sentence rules (SPEC 2.1), in plain Python.

* **Tokens**: Lucene's ``StandardTokenizer``, UAX #29 word boundaries, one string at a
  time by a loop over its characters (:func:`tokens`). Each character's ``Word_Break``
  value (and script, line-break class, emoji property) is read from the ``regex``
  package's Unicode database (:func:`char_class`).
* **Lower-casing**: per code point as Java's ``Character.toLowerCase`` (:func:`java_lower`).
* **Runs**: the tokens and the gaps between them, covering the text.
* **Blank**: a query made only of Unicode ``White_Space`` characters (or empty, or null).
* **Sentence end** (the ``unified`` mode): a gap that holds ``. ! ?`` followed later in
  the gap by ASCII whitespace, or holds ``U+3002 U+FF01 U+FF1F``, or holds a blank line.
"""

from __future__ import annotations

import re
from functools import cache

import regex

CLASSES = (
    ("extend", r"[\p{WB=Extend}\p{WB=Format}\p{WB=ZWJ}]"),
    ("regional", r"\p{WB=Regional_Indicator}"),
    ("katakana", r"\p{WB=Katakana}"),
    ("hebrew", r"\p{WB=Hebrew_Letter}"),
    ("letter", r"\p{WB=ALetter}"),
    ("numeric", r"[\p{WB=Numeric}\uFF10-\uFF19]"),  # Lucene adds the fullwidth digits
    ("extendnumlet", r"\p{WB=ExtendNumLet}"),
    ("midletter", r"\p{WB=MidLetter}"),
    ("midnum", r"\p{WB=MidNum}"),
    ("midnumlet", r"\p{WB=MidNumLet}"),
    ("single_quote", r"\p{WB=Single_Quote}"),
    ("double_quote", r"\p{WB=Double_Quote}"),
    ("han", r"\p{sc=Han}"),
    ("hiragana", r"\p{sc=Hiragana}"),
    ("southeast_asian", r"\p{Line_Break=Complex_Context}"),
    ("emoji", r"\p{Extended_Pictographic}"),
)
"""Lucene's view of a character: the first class whose pattern matches it, else "other"."""
_PATTERNS = [(name, regex.compile(pattern)) for name, pattern in CLASSES]

LETTERS = {"letter", "hebrew"}
WORD = {"letter", "hebrew", "numeric", "katakana", "han", "hiragana", "southeast_asian"}
WORD |= {"emoji", "regional"}
MID_LETTER = {"midletter", "midnumlet", "single_quote"}
MID_NUMBER = {"midnum", "midnumlet", "single_quote"}
MAX_TOKEN = 255

SENTENCE_END = re.compile("(?s)[.!?].*[ \t\n\r\x0b\x0c]|[\u3002\uff01\uff1f]|\n[ \t\r\x0b\x0c]*\n")
ASCII_SPACE = " \t\n\r\x0b\x0c"
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
TERMINATORS = frozenset(".!?\u3002\uff01\uff1f")


@cache
def char_class(ch: str) -> str:
    """The token class of one character (see :data:`CLASSES`)."""
    for name, pattern in _PATTERNS:
        if pattern.match(ch):
            return name
    return "other"


def _joined(before2: str, before: str, after: str, after2: str, regional_run: int) -> bool:
    """No boundary between two characters of classes ``before`` and ``after`` (Extend
    characters skipped), seeing one more on each side; ``regional_run``: how many
    Regional Indicators end at ``before``."""
    an = LETTERS | {"numeric"}
    if before in an and after in an:  # WB5, WB8, WB9, WB10
        return True
    if before == after and before in ("katakana", "southeast_asian"):  # WB13; Lucene: Thai
        return True
    if after == "extendnumlet" and before in an | {"katakana", "extendnumlet"}:  # WB13a
        return True
    if before == "extendnumlet" and after in an | {"katakana"}:  # WB13b
        return True
    if before == "hebrew" and after == "single_quote":  # WB7a
        return True
    if before in LETTERS and after in MID_LETTER and after2 in LETTERS:  # WB6
        return True
    if before2 in LETTERS and before in MID_LETTER and after in LETTERS:  # WB7
        return True
    if before == "hebrew" and after == "double_quote" and after2 == "hebrew":  # WB7b
        return True
    if before2 == "hebrew" and before == "double_quote" and after == "hebrew":  # WB7c
        return True
    if before == "numeric" and after in MID_NUMBER and after2 == "numeric":  # WB12
        return True
    if before2 == "numeric" and before in MID_NUMBER and after == "numeric":  # WB11
        return True
    return before == after == "regional" and regional_run % 2 == 1  # WB15, WB16


def segments(text: str) -> list[tuple[int, int, bool]]:
    """UAX #29 word segments of ``text`` as Lucene's grammar cuts them: ``(start, end,
    is_token)``. An Extend, Format or ZWJ character belongs to the character before it
    (WB4), one at the very start is a segment of its own."""
    bases = [i for i, ch in enumerate(text) if i == 0 or char_class(ch) != "extend"]
    kinds = [char_class(text[i]) for i in bases]
    kinds = ["other" if kinds[0] == "extend" else kinds[0], *kinds[1:]] if kinds else []
    out: list[tuple[int, int, bool]] = []
    first, regional_run = 0, 0
    for j in range(1, len(bases) + 1):
        regional_run = regional_run + 1 if kinds[j - 1] == "regional" else 0
        if j < len(bases):
            before2 = kinds[j - 2] if j >= 2 else "other"
            after2 = kinds[j + 1] if j + 1 < len(bases) else "other"
            if _joined(before2, kinds[j - 1], kinds[j], after2, regional_run):
                continue
        end = bases[j] if j < len(bases) else len(text)
        out.append((bases[first], end, any(k in WORD for k in kinds[first:j])))
        first = j
    return out


def tokens(text: str) -> list[tuple[int, int]]:
    """Lucene ``StandardTokenizer`` tokens of ``text``: the segments holding a letter,
    digit, Katakana, Han, Hiragana, South-East Asian or emoji character, each longer
    than 255 characters cut every 255."""
    out = []
    for start, end, is_token in segments(text):
        if is_token:
            out += [(s, min(s + MAX_TOKEN, end)) for s in range(start, end, MAX_TOKEN)]
    return out


def runs(text: str) -> list[tuple[int, int, bool]]:
    """The tokens and the gaps between them, covering ``text``: (start, end, is_token)."""
    out, at = [], 0
    for start, end in tokens(text):
        if start > at:
            out.append((at, start, False))
        out.append((start, end, True))
        at = end
    if at < len(text):
        out.append((at, len(text), False))
    return out


def java_lower(text: str) -> str:
    """Java's ``Character.toLowerCase`` of each code point: a character whose Unicode
    lower case is one character becomes it (``Σ`` -> small sigma wherever it stands), ``İ``
    becomes ``i``, others stay."""
    out = []
    for ch in text:
        low = ch.lower()
        out.append("i" if ch == "\u0130" else low if len(low) == 1 else ch)
    return "".join(out)


def query_terms(query: str | None) -> list[str]:
    """Distinct lower-cased tokens of ``query``, in first-appearance order."""
    if query is None:
        return []
    return list(dict.fromkeys(java_lower(query[s:e]) for s, e in tokens(query)))


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
