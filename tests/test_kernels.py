"""The compiled kernels' slow paths: texts made of near-matches everywhere.

The on-the-fly comparisons in :mod:`ragframe._jit` give up past a work budget and
settle such a pair by normalizing both texts and a linear-time search. These tests
check that the budget is really exceeded for these texts (so the fallback runs) and
that the engine still equals the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragframe import _jit
from ragframe._text import JAVA_WHITESPACE
from tests.conftest import assert_same_rows, cand, config, frame, run_engine, run_reference

REPEATS = "a " * 300  # every other position starts a near-match


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8)


@pytest.mark.parametrize(
    ("hay", "needle", "contained"),
    [
        (REPEATS + "b", "a " * 100 + "b", True),
        (REPEATS + "a", "a " * 100 + "b", False),
        ("x " + REPEATS, "a " * 100 + "a", True),
    ],
    ids=["match_at_the_end", "no_match", "match_after_a_word"],
)
def test_containment_gives_up_on_near_matches_and_the_fallback_decides(
    hay: str, needle: str, contained: bool
) -> None:
    h, n = _bytes(hay.strip()), _bytes(needle.strip())
    assert _jit._contains_raw(h, 0, len(h), len(h), n, 0, len(n), len(n), 64) in (-1, 1)
    if hay.startswith("a"):
        assert _jit._contains_raw(h, 0, len(h), len(h), n, 0, len(n), len(n), 64) == -1
    df = frame([cand(1, hay, 0.9, 0), cand(1, needle, 0.8, 5)])
    cfg = config(5, 0.0, 1, 5, 10**6, 10**6)
    rows = run_engine(df, cfg)
    assert_same_rows(rows, run_reference(df, cfg))
    assert len(rows) == (1 if contained else 2)


@pytest.mark.parametrize(
    "following",
    ["a " * 150 + "b c d e f g h", "a " * 150, "b " + "a " * 200],
    ids=["overlap_then_new_words", "all_overlap", "no_overlap"],
)
def test_overlap_gives_up_on_near_matches_and_the_fallback_decides(following: str) -> None:
    block = _bytes(REPEATS)
    chunk = _bytes(following)
    budget_hit = _jit._overlap_units(block, 0, len(block), chunk, 0, len(chunk), 64)
    if following.startswith("a"):
        assert budget_hit == -1
    df = frame([cand(1, REPEATS, 0.9, 0), cand(1, following, 0.8, 1)])
    cfg = config(5, 0.0, 1, 5, 10**6, 10**6)
    assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


def test_compiled_java_whitespace_matches_the_reference_set() -> None:
    for cp in range(0x3100):
        assert _jit._java_whitespace(cp) == (chr(cp) in JAVA_WHITESPACE), hex(cp)
