"""FastVectorHighlighter fragments for all pairs (rules in :mod:`ragframe.fetch._highlight`).

Fragment building is the one step Polars expressions cannot express: Lucene's
``SimpleFragListBuilder`` is a greedy left-to-right cover whose every fragment starts
from the end of the previous one (``start_offset``), a stateful scan. It runs as a
numpy kernel over the whole match table (:func:`fragment_kernel`): each round builds the
next fragment of *every* pair at once with two binary searches, so the Python loop runs
once per fragment rank (at most ``max_matches`` rounds, usually a handful), never per
pair, document or match.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe.fetch._boundary import SCHEMA as BOUNDARY_SCHEMA
from ragframe.fetch._boundary import boundary_kernel
from ragframe.fetch._config import HighlightConfig
from ragframe.fetch._passages import top_passages

MARGIN = 6
_KEY = np.int64(1) << 32
_SCHEMA = {c.T_PAIR: pl.UInt32, c.START: pl.Int64, c.END: pl.Int64, c.SCORE: pl.Float64}

Ints = npt.NDArray[np.int64]


def _groups(pair: Ints) -> tuple[Ints, Ints, Ints]:
    """Group number of each match, and each group's first and past-the-last index."""
    new = np.empty(pair.size, dtype=bool)
    new[:1] = True
    np.not_equal(pair[1:], pair[:-1], out=new[1:])
    head = np.flatnonzero(new).astype(np.int64)
    tail = np.append(head[1:], pair.size).astype(np.int64)
    return np.cumsum(new, dtype=np.int64) - 1, head, tail


def _distinct_terms(group: Ints, code: Ints, first: Ints, last: Ints) -> Ints:
    """Distinct term codes among matches ``first[f]..last[f]`` of each fragment ``f``.

    Fragments are disjoint match ranges. A match is a fragment's new term when the
    previous match of the same pair and term lies before the fragment's first match.
    """
    order = np.lexsort((np.arange(code.size), code, group))
    same = np.zeros(code.size, dtype=bool)
    same[1:] = (group[order][1:] == group[order][:-1]) & (code[order][1:] == code[order][:-1])
    previous = np.full(code.size, -1, dtype=np.int64)
    previous[order[1:][same[1:]]] = order[:-1][same[1:]]
    by_first = np.argsort(first)
    index = np.arange(code.size)
    slot = np.searchsorted(first[by_first], index, side="right") - 1
    frag = by_first[np.maximum(slot, 0)]
    new = (slot >= 0) & (index <= last[frag]) & (previous < first[frag])
    return np.bincount(frag[new], minlength=first.size).astype(np.int64)


def _first_matches(matches: pl.DataFrame, cap: int) -> tuple[Ints, Ints, Ints, Ints]:
    """Pair, start, end and term code of matches sorted by (pair, start), the first
    ``cap`` of each pair kept."""
    pair = matches[c.T_PAIR].to_numpy().astype(np.int64)
    start = matches[c.START].to_numpy().astype(np.int64)
    order = np.argsort(pair * _KEY + start)
    pair, start = pair[order], start[order]
    end = matches[c.END].to_numpy().astype(np.int64)[order]
    code = matches[c.T_TERM_CODE].to_numpy().astype(np.int64)[order]
    group, head, _ = _groups(pair)
    kept = np.flatnonzero(np.arange(pair.size) - head[group] < cap)
    return pair[kept], start[kept], end[kept], code[kept]


def fragment_kernel(
    matches: pl.DataFrame, fragment_size: int, scoring: str, cap: int
) -> pl.DataFrame:
    """Lucene ``BaseFragListBuilder.createFieldFragList`` for every pair at once.

    ``matches`` holds ``__rf_pair, start, end, __rf_term_code`` in any order; matches
    of a pair never overlap (they are distinct tokens). Only the first ``cap`` matches
    of each pair in text order count. Returns ``__rf_pair, start, end, score``.
    """
    pair, start, end, code = _first_matches(matches, cap)
    if pair.size == 0:
        return pl.DataFrame(schema=_SCHEMA)
    group, head, tail = _groups(pair)
    key_start, key_end = group * _KEY + start, group * _KEY + end
    offset = np.zeros(head.size, dtype=np.int64)
    active = np.arange(head.size, dtype=np.int64)
    found: list[tuple[Ints, Ints, Ints, Ints, Ints]] = []
    while active.size:
        first = np.searchsorted(key_start, active * _KEY + offset[active])
        alive = first < tail[active]
        active, first = active[alive], first[alive]
        low = offset[active]
        span_start = np.maximum(start[first] - MARGIN, low)
        span_end = np.maximum(end[first], span_start + fragment_size)
        limit = active * _KEY + np.minimum(span_end, _KEY - 1)
        last = np.searchsorted(key_end, limit, side="right") - 1
        match_len = end[last] - start[first]
        frag_start = np.maximum(start[first] - np.maximum(0, fragment_size - match_len) // 2, low)
        frag_end = frag_start + np.maximum(match_len, fragment_size)
        offset[active] = frag_end
        found.append((head[active], frag_start, frag_end, first, last))
    heads, starts, ends, firsts, lasts = (np.concatenate(p) for p in zip(*found, strict=True))
    score = (lasts - firsts + 1).astype(np.float64)
    if scoring == "terms":
        score = _distinct_terms(group, code, firsts, lasts) + score / (cap + 1)
    return pl.DataFrame(
        {c.T_PAIR: pair[heads], c.START: starts, c.END: ends, c.SCORE: score}, schema=_SCHEMA
    )


def fvh_passages(
    work: pl.LazyFrame,
    docs: pl.LazyFrame,
    candidates: pl.LazyFrame,
    terms: pl.LazyFrame,
    config: HighlightConfig,
) -> pl.LazyFrame:
    """``__rf_pair, start, end, score, __rf_fragment``: the chosen fragments, in order.

    ``candidates``: ``doc_id, __rf_token, start, end``, the (lower-cased) document
    tokens that may match (a superset of the matches;
    :func:`ragframe.fetch._passages.document_candidates`).
    """
    found = terms.join(candidates, left_on=[c.DOC_ID, c.T_TERM], right_on=[c.DOC_ID, c.T_TOKEN])
    matches = found.select(c.T_PAIR, c.START, c.END, c.T_TERM_CODE)
    kernel = partial(
        fragment_kernel,
        fragment_size=config.fragment_size,
        scoring=config.scoring,
        cap=config.max_matches,
    )
    fragments = matches.map_batches(kernel, schema=_SCHEMA)
    chosen = top_passages(fragments, config).with_row_index(c.T_ORDER)
    chosen = chosen.join(work.select(c.T_PAIR, c.DOC_ID), on=c.T_PAIR)
    spans = chosen.group_by(c.DOC_ID).agg(c.T_ORDER, c.START, c.END)
    spans = docs.select(c.DOC_ID, c.CONTENT).join(spans, on=c.DOC_ID)
    kernel = partial(
        boundary_kernel, boundary_chars=config.boundary_chars, scan=config.boundary_max_scan
    )
    edges = spans.map_batches(kernel, schema=BOUNDARY_SCHEMA)
    chosen = chosen.select(c.T_ORDER, c.T_PAIR, c.SCORE).join(edges, on=c.T_ORDER).sort(c.T_ORDER)
    return chosen.select(c.T_PAIR, c.START, c.END, c.SCORE, c.T_FRAGMENT)
