"""The selection's pieces against their plain definitions: each query's head found from
the runs (:func:`_rank.heads`) against the full ranking's, rule 4's threshold table
against its expression, and the kept rows of a batch whose columns are in chunks of
different lengths against the same batch made one chunk."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe import schema as c
from ragframe.postprocess import _rank, _select
from ragframe.postprocess._kernels import _heads
from tests.test_python_kernels import rows_in_python


@given(
    sizes=st.lists(st.integers(1, 20), min_size=1, max_size=12),
    width=st.integers(1, 15),
    shape=st.sampled_from(["presorted", "unsorted", "shuffled"]),
    strings=st.booleans(),
    data=st.data(),
)
def test_heads_are_the_full_rankings_first_rows(
    sizes: list[int], width: int, shape: str, strings: bool, data: st.DataObject
) -> None:
    """Grouped presorted input takes the runs' path, other input the ranking's; both
    give the rows whose place in their query is below ``width``, ascending, with the
    full ranking's places, first-row marks and "more" flags."""
    ascending = data.draw(st.booleans())  # ids ascending: the compiled pass's shape
    ids = range(len(sizes)) if ascending else data.draw(st.permutations(range(len(sizes))))
    query = np.repeat(np.array(ids), sizes)
    n = len(query)
    score = np.array(
        data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=n, max_size=n))
    )
    if shape == "presorted":  # descending over all rows: each run descending
        score = -np.sort(-score)
    order = np.arange(n)
    if shape == "shuffled":
        order = np.array(data.draw(st.permutations(range(n))))
    query, score = query[order], score[order]
    series = pl.Series(query).cast(pl.String) if strings else pl.Series(query)
    got = _rank.heads(series, score, width)
    full = _rank.ranking(series, score, width)
    at = np.flatnonzero(full.position < width)
    assert got.at.tolist() == at.tolist()
    assert got.rank.tolist() == full.rank[at].tolist()
    assert got.start.tolist() == (full.position[at] == 0).tolist()
    assert got.more.tolist() == full.more[at].tolist()
    cut = data.draw(st.integers(0, n))  # the columns in chunks, cut alike or not
    other = data.draw(st.sampled_from([cut, n - cut]))
    chunked = pl.concat([series.slice(0, cut), series.slice(cut)], rechunk=False)
    scores = pl.Series(score)
    scores = pl.concat([scores.slice(0, other), scores.slice(other)], rechunk=False)
    again = _rank.heads(chunked, scores, width)
    assert [a.tolist() for a in again] == [a.tolist() for a in got]


@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=8),
    width=st.integers(1, 6),
    data=st.data(),
)
def test_sorted_heads_plain_form_equals_the_compiled_one(
    sizes: list[int], width: int, data: st.DataObject
) -> None:
    """The one-pass head (ids ascending, scores never increasing within a query) in
    plain Python and compiled: the same rows, or both say the rows are not so."""
    query = np.repeat(np.arange(len(sizes)) * data.draw(st.sampled_from([1, -1])), sizes)
    levels = st.sampled_from([0.0, -0.0, 0.5, 1.0])
    score = np.array(data.draw(st.lists(levels, min_size=len(query), max_size=len(query))))
    if data.draw(st.booleans()):
        score = -np.sort(-score)
    cut = data.draw(st.integers(0, len(query)))  # in two pieces, as a column's chunks
    pieces = [query[:cut], query[cut:]], [score[:cut], score[cut:]]
    whole = _heads.sorted_heads([query], [score], width)
    compiled = _heads.sorted_heads(*pieces, width)
    with rows_in_python(10**6):
        plain = _heads.sorted_heads(*pieces, width)
    assert (whole is None) == (compiled is None)
    if whole is not None and compiled is not None:
        assert [a.tolist() for a in whole] == [a.tolist() for a in compiled]
    if compiled is None:
        assert plain is None
    else:
        assert plain is not None
        assert [a.tolist() for a in plain] == [a.tolist() for a in compiled]


def test_heads_of_no_rows() -> None:
    got = _rank.heads(pl.Series([], dtype=pl.Int64), np.zeros(0), 3)
    assert [len(a) for a in got] == [0, 0, 0, 0]


@pytest.mark.parametrize("top_k", [1, 2, 3, 8, 50])
@pytest.mark.parametrize("m", [0.0, 0.1, 0.5, 0.7, 1.0])
def test_threshold_table_is_the_expressions_own_doubles(top_k: int, m: float) -> None:
    """The walk reads rule 4's threshold from a table: bit for bit the expression's."""
    table = _select.thresholds(top_k, m, top_k)
    want = pl.select(
        _select.threshold_expr(pl.lit(pl.Series(np.arange(top_k + 1))), top_k, m)
    ).to_series()
    assert table.tolist() == want.to_list()
    assert not table.flags.writeable  # shared between calls


def test_kept_rows_of_columns_in_chunks_of_different_lengths() -> None:
    """The batch's columns are left in their chunks (of different lengths per column):
    the kept rows, filtered column by column, equal those of the batch made one chunk,
    in input order, with the walk's own columns taken from its rows."""
    n = 50
    one = pl.DataFrame(
        {
            c.T_ROW: np.arange(n),
            c.QUERY_ID: np.repeat(np.arange(5), 10),
            c.ENTITY_ID: [None if i % 7 == 0 else i % 3 for i in range(n)],
            c.TEXT: [f"text {i}" + " long enough to live in a buffer" * (i % 2) for i in range(n)],
            c.RANKING_SCORE: np.linspace(1, 0, n),
            c.T_SIM: np.linspace(1, 0, n),
        }
    )
    cuts = {c.T_ROW: [n], c.QUERY_ID: [7, 30, n], c.TEXT: [1, 2, 40, n]}
    columns = []
    for name in one.columns:
        bounds = [0, *cuts.get(name, [25, n])]
        pieces = [one[name].slice(a, b - a) for a, b in itertools.pairwise(bounds)]
        columns.append(pl.concat(pieces, rechunk=False))
    multi = pl.DataFrame(columns)
    assert multi[c.TEXT].n_chunks() == 4
    at = np.array([0, 3, 4, 17, 29, 30, 31, 49])
    kept = _select.Kept(at, at * 2, at % 10 == 0)
    rules = _select.Rules(3, 0.5, False, 0, [pl.lit(None, dtype=pl.Float64).alias("absent")])
    want = _select._kept(one, kept, rules)
    assert want[c.T_ROW].to_list() == at.tolist()
    assert _select._kept(multi, kept, rules).equals(want)
    known = one.select(c.T_ROW, c.T_SIM, c.ENTITY_ID)[at]
    assert _select._kept(multi, kept, rules, known).equals(want)
    assert want.columns == list(_select.kept_schema(one.schema, rules))
