"""Where ragframe differed from the real seed (issue 11), pinned case by case: block
entities as in the input (rule 8), truncation never looking at position 0 (rule 10),
the seed's position walk in ``remove_overlap`` (rule 7). Each runs through the
reference and the engine (the ``run`` fixture)."""

from __future__ import annotations

import polars as pl
import pytest

from ragframe import schema as c
from ragframe.postprocess._budget import _truncate_expr
from ragframe.reference._text import remove_overlap, truncate
from tests.conftest import Runner, cand, config, frame

# --- rule 8: entity_id / entity_type as the group's first chunk had them ----------------


def test_blocks_without_an_entity_type_column_say_null(run: Runner) -> None:
    df = frame([cand(1, "one", 0.9), cand(2, "two", 0.8)])
    assert c.ENTITY_TYPE not in df.columns
    out = run(df, config(5, 0.1))
    assert [(r[c.ENTITY_ID], r[c.ENTITY_TYPE]) for r in out] == [(1, None), (2, None)]


@pytest.mark.parametrize(
    ("first", "second"),
    [(None, 0), (0, None)],
    ids=["null_first", "zero_first"],
)
def test_a_null_entity_groups_with_zero_and_keeps_its_own_value(
    run: Runner, first: int | None, second: int | None
) -> None:
    """Null and 0 are one group (rule 5), merged into one block; the block says what
    the group's first chunk (by chunk index) said."""
    rows = [cand(second, "second part", 0.8, 1), cand(first, "first part", 0.9, 0)]
    (block,) = run(frame(rows), config(5, 0.0, 1, 5, 5000, 2000))
    assert block[c.TEXT] == "first part\nsecond part"
    assert block[c.ENTITY_ID] == first
    assert (block[c.ENTITY_ID] is None) == (first is None)


def test_every_block_of_a_group_says_the_groups_first_chunks_values(run: Runner) -> None:
    """Type null and "" are one group; split by the gap into two blocks, both blocks
    carry the group's first chunk's type and entity (null), not their own first's."""
    rows = [
        cand(None, "later block", 0.9, 5, entity_type=""),
        cand(None, "early block", 0.5, 0, entity_type=None),
    ]
    out = run(frame(rows), config(5, 0.0, 1, 5, 5000, 2000))
    assert [(r[c.TEXT], r[c.ENTITY_ID], r[c.ENTITY_TYPE]) for r in out] == [
        ("later block", None, None),
        ("early block", None, None),
    ]


def test_string_entities_null_stays_null_beside_the_empty_string(run: Runner) -> None:
    rows = [cand("", "empty id", 0.9, 0), cand(None, "null id", 0.8, 3)]
    df = frame(rows, entity_id=pl.String())
    out = run(df, config(5, 0.0, 1, 5, 5000, 2000))
    # one group ("" and null), two blocks (gap 3): the first chunk by index has ""
    assert [(r[c.TEXT], r[c.ENTITY_ID]) for r in out] == [("empty id", ""), ("null id", "")]


# --- rule 10: the cut never looks at position 0 -----------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [
        (" numbers per", 7, "number"),
        ("\nimprovement", 7, "improv"),
        ("\u2003 ", 1, "\u2003"),
        ("\u2003 x", 2, "\u2003"),
        (" a b", 3, "a"),  # position 2 is whitespace: cut there
        ("a" * 79 + " " + "b" * 10, 81, "a" * 79),  # 80 is r - 1, 79 is looked at
        (" " + "a" * 100, 80, "a" * 79),  # positions 79..1: no whitespace
        ("a " + "b" * 100, 81, "a " + "b" * 79),  # position 1 = r - 80: not looked at
        ("a " + "b" * 100, 80, "a"),  # position 1 = r - 79: looked at
    ],
)
def test_truncation_is_the_seeds_loop(text: str, limit: int, want: str) -> None:
    assert truncate(text, limit) == want
    assert pl.select(_truncate_expr(pl.lit(text), limit)).item() == want


@pytest.mark.parametrize(
    ("text", "limit", "want"),
    [(" numbers per", 7, "number"), ("\nimprovement", 7, "improv"), ("\u2003 ", 1, "\u2003")],
)
def test_a_first_block_starting_with_whitespace_is_not_emptied(
    run: Runner, text: str, limit: int, want: str
) -> None:
    (block,) = run(frame([cand(1, text, 0.9)]), config(5, 0.1, 1, 5, limit, 2000))
    assert (block[c.TEXT], block[c.TRUNCATED], block[c.CHAR_COUNT]) == (want, True, len(want))


# --- rule 7: the seed's walk to where the appended text starts --------------------------


def test_the_walk_stops_after_the_first_character_of_a_whitespace_run(run: Runner) -> None:
    """Issue 11's repro: the overlap (20 normalized characters) ends with U+2000, which
    normalization keeps; the walk counts it as the first of the run U+2000, " ", "\\t"
    and stops there, so " \\tX" is appended."""
    rows = [
        cand(1, "epsilon beta window\u2000", 0.9, 0),
        cand(1, "epsilon beta window\u2000 \tX", 0.8, 1),
    ]
    (block,) = run(frame(rows), config(5, 0.0, 1, 5, 5000, 2000))
    assert block[c.TEXT] == "epsilon beta window\u2000 \tX"


@pytest.mark.parametrize(
    ("existing", "following", "appended"),
    [
        ("xx epsilon beta window\u3000", "epsilon beta window\u3000\u2000rest", "\u2000rest"),
        (
            "xx epsilon beta window\u2028",
            "epsilon beta window\u2028\x1c\x1d\x1e tail",
            "\x1c\x1d\x1e tail",
        ),
        # a no-break space is no Java whitespace: it is a character of its own
        ("xx epsilon beta window\u00a0", "epsilon beta window\u00a0 tail", " tail"),
        # leading whitespace is skipped; "\u2003\t " is one unit of the walk but two
        # normalized characters, so the walk ends one character late, past the space
        ("xx alpha beta\u2003 gamma delta", " \t alpha  beta\u2003\t gamma delta end", "end"),
    ],
)
def test_the_walk_keeps_the_rest_of_a_run_the_overlap_ends_in(
    run: Runner, existing: str, following: str, appended: str
) -> None:
    assert remove_overlap(existing, following) == appended
    rows = [cand(1, existing, 0.9, 0), cand(1, following, 0.8, 1)]
    (block,) = run(frame(rows), config(5, 0.0, 1, 5, 5000, 2000))
    assert block[c.TEXT] == existing + appended
