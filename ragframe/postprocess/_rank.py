"""Rules 1-2, the ranking, for every query at once, without sorting the table.

Each candidate gets its place in its query's order (ranking score descending, ties in
input order) and in the whole ranking (queries ascending, each in its order). Retrieval
output nearly always arrives grouped by query and ordered by score: one vectorized pass
(:func:`presorted`) tells, and then the places are the rows' own, nothing is sorted.
Otherwise the rows are grouped by query with a counting sort (when the input is not
grouped already) and each query's few rows are sorted by a compiled stable sort
(:func:`ragframe.postprocess._kernels._order.ordered_in_segments`): linear in the rows
but for the per-query sorts, where Polars' sort of the whole table by (query, score)
costs a full comparison sort and copies every column.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from ragframe._kernels._compile import F64, I64, Bools
from ragframe.postprocess._kernels._heads import sorted_heads
from ragframe.postprocess._kernels._order import (
    descending_key,
    grouped_by,
    ordered_in_segments,
    places,
)

SELECT_HEAD = 64
"""The longest head a one-pass selection finds (each row compared with the head's
last, inserted when it beats it: at most this many moves a row); a longer one is found
by sorting each query's rows."""


class Ranking(NamedTuple):
    """Per row, in input order."""

    rank: I64
    """The row's place in the whole ranking: queries ascending (by id), each query's
    rows in its order."""
    position: I64
    """The row's place in its query's order (0: its first)."""
    more: Bools
    """Whether its query has more rows than the ``width`` asked about."""


def presorted(score: F64, starts: Bools) -> bool:
    """Whether ``score`` never increases within a run of rows (``starts`` marks their
    first rows): one vectorized pass. -0.0 equals 0.0 here, as in the ranking."""
    if len(score) < 2:
        return True
    return bool(np.all((score[1:] <= score[:-1]) | starts[1:]))


class _Runs(NamedTuple):
    """The runs of equal query ids in input order."""

    starts: Bools
    """Whether a row starts a run."""
    firsts: I64
    """Each run's first row."""
    code: I64
    """Each run's query code: queries numbered in ascending id order."""
    queries: int
    grouped: bool
    """Whether each query is one run (the input is grouped by query)."""


def _runs(query: pl.Series) -> _Runs:
    """The runs of ``query``; only the runs' ids are compared or ranked."""
    if query.dtype == pl.String:
        starts = query.ne_missing(query.shift(1)).to_numpy()  # the first row starts one too
    else:
        values = query.to_numpy()  # never null
        starts = np.empty(len(values), dtype=np.bool_)
        starts[0] = True
        np.not_equal(values[1:], values[:-1], out=starts[1:])
    firsts = np.flatnonzero(starts)
    if query.dtype.is_integer():  # the runs' ids by numpy (Polars' gather across chunks
        first_ids = values[firsts]  # took ~0.8 ms for 10k runs in the engine's map)
        ascending = len(first_ids) < 2 or bool(np.all(first_ids[1:] > first_ids[:-1]))
        ids = pl.Series(first_ids)
    else:
        ids = query.gather(pl.Series(firsts))
        ascending = ids.is_sorted()
    if ascending:  # ascending runs: distinct, since neighbouring runs differ
        return _Runs(starts, firsts, np.arange(len(firsts), dtype=np.int64), len(firsts), True)
    code, queries = dense_codes(ids)
    return _Runs(starts, firsts, code, queries, queries == len(firsts))


SPAN_PER_VALUE = 4
"""Integer ids are coded by a table over their span when it is at most this many slots
a value (else by Polars' dense rank, a sort)."""


def dense_codes(ids: pl.Series) -> tuple[I64, int]:
    """Each id's dense rank from 0 (ascending, Polars' order) and how many distinct ids
    there are. Integer ids within a span of :data:`SPAN_PER_VALUE` slots a value are
    coded without a sort: a table of the values present, counted up (about 8x faster
    than ranking 1M shuffled ids, as input not grouped by query has).

    Example:
        >>> dense_codes(pl.Series([30, -2, 30, 7]))[0].tolist()
        [2, 0, 2, 1]
    """
    if ids.dtype.is_integer() and len(ids):
        values = ids.to_numpy()
        low, high = int(values.min()), int(values.max())
        span = high - low + 1
        if span <= SPAN_PER_VALUE * len(values) + 1024:
            # the offset from the least, in [0, span): exact mod 2**64 whatever the type
            at = (values.astype(np.uint64) - np.uint64(low % 2**64)).astype(np.int64)
            present = np.zeros(span, dtype=np.bool_)
            present[at] = True
            table = np.cumsum(present, dtype=np.int64) - 1
            return table[at], int(table[-1]) + 1
    code = ids.rank("dense").cast(pl.Int64).to_numpy() - 1
    return code, int(code.max()) + 1


def ranking(query: pl.Series, score: F64, width: int, head: int | None = None) -> Ranking:
    """Rules 1-2 for rows in any order: each row's :class:`Ranking`, from its query id
    and ranking score (finite; ties keep input order), and whether its query has more
    than ``width`` rows. With ``head``, only each query's first ``head`` rows are
    placed (the others: place ``head``, rank -1), in one pass over each query's rows
    when ``head`` is at most :data:`SELECT_HEAD`.

    Grouped input is ranked run by run, in place when :func:`presorted`; other input is
    grouped by query first (a counting sort on the queries' codes).

    Example:
        >>> import numpy as np, polars as pl
        >>> r = ranking(pl.Series([7, 7, 3]), np.array([0.1, 0.9, 0.5]), 1)
        >>> r.rank.tolist(), r.position.tolist(), r.more.tolist()
        ([2, 1, 0], [1, 0, 0], [True, True, False])
    """
    n = len(query)
    none = np.zeros(0, dtype=np.int64)
    if n == 0:
        return Ranking(none, none, np.zeros(0, dtype=np.bool_))
    return _ranked(_runs(query), score, width, head)


def _ranked(runs: _Runs, score: F64, width: int, head: int | None) -> Ranking:
    """:func:`ranking` of rows (at least one) whose runs are ``runs``."""
    n = len(score)
    none = np.zeros(0, dtype=np.int64)
    lengths = np.diff(runs.firsts, append=n)
    order, key = none, none  # the rows themselves, in ranking order
    if runs.grouped:  # segments: the runs, in input order
        bounds, code, starts = np.append(runs.firsts, n), runs.code, runs.starts
        size = np.empty(runs.queries, dtype=np.int64)
        size[code] = lengths
        ranked = presorted(score, starts)
    else:  # segments: the queries, in code order
        row_code = np.repeat(runs.code, lengths)
        order = grouped_by(row_code, runs.queries)
        size = np.bincount(row_code, minlength=runs.queries)
        bounds = np.r_[0, np.cumsum(size)]
        code = np.arange(runs.queries, dtype=np.int64)
        starts = np.zeros(n, dtype=np.bool_)
        starts[bounds[:-1]] = True
        ranked = False
    keep = n if head is None else min(head, n)
    if not ranked and keep <= SELECT_HEAD:
        key = descending_key(score)
    elif not ranked:
        within = descending_key(score if runs.grouped else score[order])
        sorted_rows = ordered_in_segments(starts, within[:, None])
        order = sorted_rows if runs.grouped else order[sorted_rows]
    base = np.cumsum(size) - size  # each query's first place in the whole ranking
    return Ranking(*places(order, bounds, code, base, key, keep, width))


class Head(NamedTuple):
    """Each query's first ``width`` rows in its order, rows ascending."""

    at: I64
    """The rows."""
    rank: I64
    """Their places in the whole ranking (:class:`Ranking`)."""
    start: Bools
    """Whether a row is its query's first."""
    more: Bools
    """Whether its query has more than ``width`` rows."""


def _pieces(query: pl.Series, score: F64 | pl.Series) -> tuple[list[I64], list[F64]]:
    """``query`` and ``score`` (never null) in pieces of equal lengths: their chunks,
    read in place where they are cut alike (a multi-chunk column's ``to_numpy`` copies
    it: ~1 ms a column of 520k rows in the engine's map), else whole."""
    if isinstance(score, pl.Series):
        ids, scores = query.get_chunks(), score.get_chunks()
        if [len(a) for a in ids] == [len(b) for b in scores] and not score.null_count():
            return [a.to_numpy() for a in ids], [b.to_numpy() for b in scores]
        score = score.to_numpy()
    return [query.to_numpy()], [score]


def heads(query: pl.Series, score: F64 | pl.Series, width: int) -> Head:
    """:func:`ranking` with ``head=width`` for the head's rows alone. For input grouped
    by query and :func:`presorted` (as retrieval output nearly always is) the head is
    each run's first rows: with integer ids ascending found in one compiled pass
    (:func:`~ragframe.postprocess._kernels._heads.sorted_heads`), else placed by a few
    whole-array passes over those rows (on issue 27's workload 120k of 520k rows;
    nothing written for the others); other input is ranked (:func:`ranking`) and its
    head picked out."""
    n = len(query)
    if query.dtype.is_integer() and query.dtype != pl.UInt64:  # ids in int64: the usual
        found = sorted_heads(*_pieces(query, score), width)  # shape, in one compiled pass
        if found is not None:
            at, start, more = found
            return Head(at, at, start, more)
    if isinstance(score, pl.Series):
        score = score.to_numpy()
    runs = _runs(query) if n else None
    if runs is not None and runs.grouped and presorted(score, runs.starts):
        lengths = np.diff(runs.firsts, append=n)
        size = np.empty(runs.queries, dtype=np.int64)
        size[runs.code] = lengths
        first = (np.cumsum(size) - size)[runs.code]  # each run's first place
        taken = np.minimum(lengths, width)
        run = np.repeat(np.arange(len(taken)), taken)
        position = np.arange(len(run), dtype=np.int64) - (np.cumsum(taken) - taken)[run]
        more = (lengths > width)[run]
        return Head(runs.firsts[run] + position, first[run] + position, position == 0, more)
    placed = _ranked(runs, score, width, width) if runs is not None else ranking(query, score, 0)
    at = np.flatnonzero(placed.position < width)
    return Head(at, placed.rank[at], placed.position[at] == 0, placed.more[at])
