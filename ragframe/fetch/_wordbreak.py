"""The token classes of Lucene's ``StandardTokenizer`` grammar (UAX #29 ``Word_Break``
values, plus the scripts it treats apart), and the per-code-point class table built from
the generated ranges of :mod:`ragframe.fetch._wordbreak_data`."""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt

OTHER = 0
ALETTER = 1
HEBREW = 2
NUMERIC = 3
KATAKANA = 4
EXTENDNUMLET = 5
MIDLETTER = 6
MIDNUM = 7
MIDNUMLET = 8
SINGLE_QUOTE = 9
DOUBLE_QUOTE = 10
EXTEND = 11
HAN = 12
HIRAGANA = 13
SOUTHEAST_ASIAN = 14
EMOJI = 15
REGIONAL = 16
CONTINUATION = 17
"""Not a code point class: a UTF-8 continuation byte (the engine treats it as EXTEND)."""
COUNT = 18

WORD = (ALETTER, HEBREW, NUMERIC, KATAKANA, HAN, HIRAGANA, SOUTHEAST_ASIAN, EMOJI, REGIONAL)
"""Classes of which a segment needs one to be a token."""


@cache
def table() -> npt.NDArray[np.uint8]:
    """The class of every code point (0x110000 entries)."""
    from ragframe.fetch._wordbreak_data import RANGES

    out = np.zeros(0x110000, dtype=np.uint8)
    for first, last, cls in RANGES:
        out[first : last + 1] = cls
    return out
