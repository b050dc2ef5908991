"""Merges of texts without whitespace runs, where the overlap search takes its fast path
(chunks ASCII, no two neighbouring bytes below 0x21: ``_text.plain``), against the
reference: joins that make a run, a newline join, a leading space (random such chains:
``test_postprocess_properties.flat_chains``)."""

from __future__ import annotations

import pytest

from ragframe import schema as c
from tests.conftest import assert_same_rows, cand, config, frame, run_engine, run_reference


@pytest.mark.parametrize(
    ("texts", "merged"),
    [
        (  # the overlap removed leaves a space after the block's last one
            [
                "zero one two three four five six seven ",
                "three four five six seven eight",
                "five six seven eight nine ten",
            ],
            "zero one two three four five six seven  eight nine ten",
        ),
        (  # no overlap: a newline after the block's last space
            [
                "zero one two three four five six seven ",
                "alpha beta gamma delta epsilon",
                "six seven alpha beta gamma delta epsilon zeta",
            ],
            "zero one two three four five six seven \nalpha beta gamma delta epsilon zeta",
        ),
        (  # a chunk that begins with a space: the walk skips it first
            ["zero one two three four five six seven", " three four five six seven eight"],
            "zero one two three four five six seven eight",
        ),
    ],
    ids=["overlap_then_space", "newline_after_space", "leading_space"],
)
def test_a_run_made_where_a_chunk_joins_is_one_space_to_the_next_search(
    texts: list[str], merged: str
) -> None:
    """Chunks without whitespace runs (the search's fast path): where their join makes a
    run, the next chunk's overlap is found across it as normalization reads it (one
    space), not as raw bytes; a chunk's leading space is skipped before the overlap."""
    df = frame(cand(1, text, 0.9, i) for i, text in enumerate(texts))
    cfg = config(20, 0.0, 1, 20, 100_000, 100_000)
    out = run_engine(df, cfg)
    assert_same_rows(out, run_reference(df, cfg))
    assert [row[c.TEXT] for row in out] == [merged]
