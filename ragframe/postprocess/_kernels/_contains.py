"""Rule 3's test: is a candidate's normalized text contained, at word boundaries, in a
selected chunk's (``" " + cand + " "`` in ``" " + selected + " "``)? Compared on the fly
within a work budget, or by Knuth-Morris-Pratt over normalized copies past it."""

from __future__ import annotations

import numpy as np

from ragframe._kernels._compile import I64, U8, in_python, internal, testable
from ragframe.postprocess._kernels._text import (
    _normalized_length_numpy,
    collapsible,
    normalized_length,
    same,
    step,
)


@in_python(_normalized_length_numpy)
@testable
def trimmed_length(data: U8, start: int, end: int) -> int:
    """Length in bytes of the normalized ``data[start:end]`` (already trimmed), as
    :func:`~._text.normalized_length`, with the common case told faster: no two
    neighbouring bytes below 0x21 (no whitespace run: most prose) when the least of
    the larger of each two neighbours is above 0x20, a min/max pass the compiler
    vectorizes (13 against 60 ns for 400 bytes in cache; the rule 3 walk asks it of
    every candidate it compares)."""
    seg = data[start:end]
    if len(seg) < 2:
        return len(seg)
    after, before = seg[1:], seg[:-1]
    least = np.uint8(255)
    for i in range(len(after)):
        least = min(least, max(after[i], before[i]))
    if least > 32:
        return len(seg)
    return normalized_length(data, start, end)


@internal
def contains_words(hay: U8, h0: int, h1: int, needle: U8, n: int, fail: I64) -> bool:
    """``" " + needle + " "`` is a substring of ``" " + hay[h0:h1] + " "`` (both
    normalized, ``needle`` non-empty, ``fail`` its failure function): linear time."""
    if n > h1 - h0:
        return False
    q = 0
    for i in range(h0, h1):
        b = hay[i]
        while q > 0 and b != needle[q]:
            q = fail[q - 1]
        if b == needle[q]:
            q += 1
        if q == n:
            begin = i + 1 - n
            if (begin == h0 or hay[begin - 1] == 32) and (i + 1 == h1 or hay[i + 1] == 32):
                return True
            q = fail[q - 1]
    return False


@testable
def contains_raw(
    hay: U8, h0: int, h1: int, hn: int, needle: U8, n0: int, n1: int, nn: int, budget: int
) -> int:
    """Word-bounded containment of the normalized ``needle[n0:n1]`` (trimmed, normalized
    length ``nn`` > 0) in the normalized ``hay[h0:h1]`` (trimmed; ``hn``: its normalized
    length, or more), comparing on the fly. 1: contained, 0: not, -1: over ``budget``
    steps."""
    slack = hn - nn
    if slack < 0:
        return 0
    first = needle[n0]
    y = h0
    boundary = True
    work = 0
    for _ in range(slack + 1):
        if y >= h1:  # ``hn`` was more than the length
            break
        if boundary and hay[y] == first:
            after, units = same(needle, n0, n1, hay, y, h1, nn)
            work += units
            if after >= 0 and (after == h1 or collapsible(hay[after])):
                return 1
        b, y = step(hay, y, h1)
        boundary = b == 32
        work += 1
        if work > budget:
            return -1
    return 0
