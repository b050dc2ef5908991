"""Block texts leave the merge as string views whose 4-byte prefixes the merge kernel
took (:attr:`ragframe.postprocess._kernels._merge.MergeResult.head`) rather than read
back from its buffer: Polars compares views by their prefixes first, so a wrong one
makes equal texts unequal (and these tests fail)."""

from __future__ import annotations

import numpy as np
import polars as pl
from hypothesis import given
from hypothesis import strategies as st

import ragframe
from ragframe import _arrow
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig
from tests.conftest import cand, frame, run_reference


@given(st.lists(st.text(max_size=20), max_size=8), st.data())
def test_views_with_given_prefixes_equal_views_that_read_them(
    pieces: list[str], data: st.DataObject
) -> None:
    """``strings`` with each piece's prefix given (:func:`prefix_words`) is the column
    of the pieces, compared by Polars (prefixes first) and as Python strings; zero
    prefixes instead make a piece of over 12 bytes whose prefix is not 0 unequal."""
    raw = [p.encode() for p in pieces]
    buffer = np.frombuffer(b"#" + b"".join(raw), dtype=np.uint8)
    begin = np.cumsum([1] + [len(p) for p in raw])[:-1].astype(np.int64)
    order = np.array(data.draw(st.permutations(range(len(raw)))), dtype=np.int64)
    size = np.array([len(raw[i]) for i in order], dtype=np.int64)
    want = pl.Series([pieces[i] for i in order], dtype=pl.String)
    prefix = _arrow.prefix_words(buffer, begin[order])
    got = _arrow.strings(buffer, begin[order], size, prefix=prefix)
    assert got.to_list() == want.to_list()
    assert (got == want).all()
    zero = _arrow.strings(buffer, begin[order], size, prefix=np.zeros(len(order), np.uint32))
    wrong = [len(raw[i]) > 12 and raw[i][:4] != b"\0" * 4 for i in order]
    assert (zero == want).to_list() == [not w for w in wrong]


def test_a_cut_first_block_read_in_place_has_its_own_prefix() -> None:
    """A first block over the budget, cut and trimmed of its leading spaces, keeps more
    than half the merge's buffer, so its text is a view into it: its prefix is the cut
    text's, not the block's (and an uncut block's is the merge's)."""
    long = "   " + " ".join(f"w{i:02d}" for i in range(30))
    rows = [cand(1, long, 0.9, 0), cand(1, "second chunk of text here", 0.8, 0, query_id=2)]
    cfg = PostprocessConfig(top_k=3, min_similarity=0.1, max_characters=100, max_blocks=2)
    candidates = frame(rows)
    got = ragframe.postprocess(candidates, cfg).collect()  # the engine's own views
    want = pl.DataFrame(run_reference(candidates, cfg))
    assert got[c.TRUNCATED].to_list() == [True, False]
    assert (got[c.TEXT] == want[c.TEXT]).all(), (got[c.TEXT], want[c.TEXT])
    assert got[c.TEXT].to_list() == want[c.TEXT].to_list()
