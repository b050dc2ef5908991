"""Plain per-pair reference implementation of ``highlight`` and ``fetch`` (SPEC section 2).

This is the test oracle and the benchmark baseline, not the engine: it handles one
(query, document) pair at a time, tokenizing the document for every pair, as a search
server's highlighter does per hit, and favours obviousness over speed. The vectorized
:func:`ragframe.highlight` and :func:`ragframe.fetch` must give the same rows (scores of
the ``unified`` mode up to floating-point rounding).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from types import SimpleNamespace
from typing import Any

import polars as pl

from ragframe.reference._analysis import (
    ASCII_SPACE,
    SENTENCE_END,
    finish_highlight,
    is_blank,
    java_lower,
    query_terms,
    runs,
    tokens,
)

DEFAULTS = SimpleNamespace(
    fulltext_threshold=3000,
    fragment_size=1000,
    number_of_fragments=5,
    highlighter="fvh",
    order="score",
    scoring="matches",
    boundary_chars="\t\n\x13 ",
    boundary_max_scan=20,
    max_matches=256,
)
"""SPEC 2's parameters with their defaults (Fess's settings). A ``FetchConfig`` or
``HighlightConfig`` may be passed instead: only these attributes are read."""

FVH_MARGIN = 6
"""Lucene's ``BaseFragListBuilder.MARGIN_DEFAULT``."""

Span = tuple[int, int, float]
Match = tuple[str, int, int]
K1, B, PIVOT = 1.2, 0.75, 87.0
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def find_matches(content: str, terms: list[str], limit: int) -> list[Match]:
    """The first ``limit`` tokens of ``content`` equal to a term: (term, start, end)."""
    wanted, found = set(terms), []
    for start, end in tokens(content):
        token = java_lower(content[start:end])
        if token in wanted:
            found.append((token, start, end))
            if len(found) == limit:
                break
    return found


def fvh_fragments(
    matches: list[Match], size: int, scoring: str = "matches", cap: int = 256
) -> list[Span]:
    """Lucene ``BaseFragListBuilder.createFieldFragList`` (margin 6).

    Score: the fragment's matches (``"matches"``, Lucene's), or its distinct terms plus
    ``matches / (cap + 1)`` (``"terms"``).
    """
    fragments: list[Span] = []
    offset, i = 0, 0
    while i < len(matches):
        _, first_start, first_end = matches[i]
        if first_start < offset:
            i += 1
            continue
        span_start = max(first_start - FVH_MARGIN, offset)
        span_end = max(first_end, span_start + size)
        taken, i = [matches[i]], i + 1
        while i < len(matches) and matches[i][2] <= span_end:
            taken, i = [*taken, matches[i]], i + 1
        match_len = taken[-1][2] - first_start
        start = max(first_start - max(0, (size - match_len) // 2), offset)
        offset = start + max(match_len, size)
        score = float(len(taken))
        if scoring == "terms":
            score = len({t for t, _, _ in taken}) + len(taken) / (cap + 1)
        fragments.append((start, offset, score))
    return fragments


def boundary_start(text: str, start: int, chars: str, max_scan: int) -> int:
    """Lucene ``SimpleBoundaryScanner.findStartOffset``."""
    if start > len(text) or start < 1:
        return start
    offset, count = start, max_scan
    while offset > 0 and count > 0:
        if text[offset - 1] in chars:
            return offset
        offset, count = offset - 1, count - 1
    return 0 if offset == 0 else start


def boundary_end(text: str, end: int, chars: str, max_scan: int) -> int:
    """Lucene ``SimpleBoundaryScanner.findEndOffset`` over the text followed by a space
    (Lucene's multi-value separator, a boundary character): a scan that reaches the end
    of the text stops there; an end past the text is its end."""
    if end >= len(text):
        return len(text)
    offset, count = end, max_scan
    while count > 0:
        if offset == len(text) or text[offset] in chars:
            return offset
        offset, count = offset + 1, count - 1
    return end


def sentence_passages(content: str, size: int) -> list[tuple[int, int]]:
    """Spans of the ``unified`` mode's passages (sentence pieces, trimmed)."""
    spans: dict[tuple[int, int], list[int]] = {}
    sentence, sentence_start = 0, -1
    for start, end, word in runs(content):
        run = content[start:end]
        if sentence_start < 0:
            sentence_start = start
        key = (sentence, (start - sentence_start) // size)
        lead = 0 if word else len(run) - len(run.lstrip(ASCII_SPACE))
        trail = 0 if word else len(run) - len(run.rstrip(ASCII_SPACE))
        spans.setdefault(key, [start + lead, 0])[1] = end - trail
        if not word and SENTENCE_END.search(run):
            sentence, sentence_start = sentence + 1, -1
    return [(start, end) for start, end in spans.values()]


def unified_scores(content: str, matches: list[Match], size: int) -> list[Span]:
    """BM25 ``PassageScorer`` scores of the passages holding a match."""
    docs = 1.0 + len(content) / PIVOT
    doc_freq = Counter(term for term, _, _ in matches)
    scored: list[Span] = []
    for start, end in sentence_passages(content, size):
        freq = Counter(t for t, s, e in matches if start <= s and e <= end)
        total = 0.0
        for term, f in freq.items():
            weight = (K1 + 1.0) * math.log(1.0 + (docs + 0.5) / (doc_freq[term] + 0.5))
            total += weight * f / (f + K1 * ((1.0 - B) + B * ((end - start) / PIVOT)))
        if freq:
            scored.append((start, end, total * (1.0 + 1.0 / math.log(PIVOT + start))))
    return scored


def highlight_pair(
    query: str | None, content: str | None, config: Any = None
) -> tuple[list[Span], str] | None:
    """Passages ``[(start, end, score)]`` and joined text of one pair; None if no match."""
    cfg = config if config is not None else DEFAULTS
    terms, text = query_terms(query), content or ""
    matches = find_matches(text, terms, cfg.max_matches) if terms else []
    if not matches:
        return None
    if cfg.highlighter == "unified":
        spans = unified_scores(text, matches, cfg.fragment_size)
    else:
        spans = fvh_fragments(matches, cfg.fragment_size, cfg.scoring, cfg.max_matches)
    chosen = sorted(spans, key=lambda s: (-s[2], s[0]))[: cfg.number_of_fragments]
    if cfg.order == "offset":
        chosen.sort(key=lambda s: s[0])
    if cfg.highlighter == "fvh":
        chars, scan = cfg.boundary_chars, cfg.boundary_max_scan
        chosen = [
            (boundary_start(text, s, chars, scan), boundary_end(text, e, chars, scan), w)
            for s, e, w in chosen
        ]
    return chosen, finish_highlight([text[s:e] for s, e, _ in chosen])


def _documents(documents: pl.DataFrame) -> dict[Any, dict[str, Any]]:
    """First row per non-null ``doc_id``."""
    table: dict[Any, dict[str, Any]] = {}
    for row in documents.iter_rows(named=True):
        if row["doc_id"] is not None:
            table.setdefault(row["doc_id"], row)
    return table


def reference_highlight(
    pairs: pl.DataFrame, documents: pl.DataFrame, config: Any = None
) -> pl.DataFrame:
    """:func:`ragframe.highlight`, one pair at a time."""
    docs = _documents(documents)
    passages, texts = [], []
    for row in pairs.iter_rows(named=True):
        doc = docs.get(row["doc_id"]) if row["doc_id"] is not None else None
        found = highlight_pair(row["query"], doc["content"], config) if doc else None
        spans = [{"start": s, "end": e, "score": w} for s, e, w in found[0]] if found else None
        passages.append(spans)
        texts.append(found[1] if found else None)
    return pairs.with_columns(
        pl.Series("passages", passages, dtype=_PASSAGE_TYPE),
        pl.Series("highlight", texts, dtype=pl.String),
    )


_TAKEN = ("query_id", "doc_id", "rank", "content", "strategy", "query", "highlight")
_PASSAGE_TYPE = pl.List(pl.Struct({"start": pl.Int64, "end": pl.Int64, "score": pl.Float64}))


def parse_length(value: Any) -> float | None:
    """A ``content_length`` value as a number; None when unknown."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip(ASCII_SPACE)
        value = float(text) if _NUMBER.fullmatch(text) else None
    number = float(value) if isinstance(value, int | float) else None
    return number if number is not None and math.isfinite(number) else None


def fetch_pair(
    query: str | None, content: str, length: float | None, config: Any
) -> tuple[str, str]:
    """(content, strategy) of one pair."""
    if is_blank(query) or length is None or length <= config.fulltext_threshold:
        return content, "full"
    found = highlight_pair(query, content, config)
    if found is None:
        return content[: config.fulltext_threshold], "truncated_fallback"
    return found[1], "highlight"


def _requests(requests: pl.DataFrame) -> list[dict[str, Any]]:
    """Rows in output order: queries by first appearance, then rank, then row."""
    rows = list(requests.iter_rows(named=True))
    first: dict[Any, int] = {}
    seen: Counter[Any] = Counter()
    for i, row in enumerate(rows):
        first.setdefault(row["query_id"], i)
        seen[row["query_id"]] += 1
        row.setdefault("rank", seen[row["query_id"]])
        row["_order"] = (first[row["query_id"]], row["rank"] is None, row["rank"] or 0, i)
    return sorted(rows, key=lambda r: r["_order"])


def _request_key(requests: pl.DataFrame) -> str:
    """``doc_id``, or its alias ``entity_id`` when only that is there."""
    names = requests.columns
    return "entity_id" if "doc_id" not in names and "entity_id" in names else "doc_id"


def reference_fetch(
    requests: pl.DataFrame,
    documents: pl.DataFrame,
    config: Any = None,
    *,
    sizes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """:func:`ragframe.fetch`, one pair at a time (rows as dicts, then a DataFrame)."""
    cfg, docs = config or DEFAULTS, _documents(documents)
    key = _request_key(requests)
    known: dict[Any, float | None] = {}
    if sizes is not None:
        for row in sizes.iter_rows(named=True):
            known.setdefault(row["doc_id"], parse_length(row["content_length"]))
    own = [n for n in requests.columns if n not in (*_TAKEN, key)]
    doc_extra = [n for n in documents.columns if n not in (*_TAKEN, *own)]
    out = []
    for row in _requests(requests):
        doc_id = row[key]
        doc = docs.get(doc_id) if doc_id is not None else None
        text: str | None
        if doc is None:
            text, strategy = None, "missing"
        else:
            content = doc["content"] or ""
            length = float(len(content)) if sizes is None else known.get(doc_id)
            text, strategy = fetch_pair(row["query"], content, length, cfg)
        out.append(
            {
                "query_id": row["query_id"],
                key: doc_id,
                "rank": row["rank"],
                "content": text,
                "strategy": strategy,
                **{n: row[n] for n in own},
                **{n: doc.get(n) if doc else None for n in doc_extra},
            }
        )
    return pl.DataFrame(out)
