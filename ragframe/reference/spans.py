"""Plain per-query reference for span judgements (SPEC 7): sets of characters, one
query at a time. Imports nothing from the engine; the tests compare
:mod:`ragframe.evaluate._spans` with it.

A span is ``(query_id, doc_id, start_char, end_char, gain)``; a block is
``(query_id, doc_id, start_char, end_char, char_count)`` (its own offsets; it covers
the first ``char_count`` characters of ``[start_char, end_char)``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

Span = tuple[Hashable, Hashable, int, int, float]
Block = tuple[Hashable, Hashable, int, int, int]


def relevant_characters(spans: Iterable[Span], query: Hashable) -> set[tuple[Hashable, int]]:
    """The ``(doc_id, position)`` pairs some span of gain > 0 of ``query`` covers."""
    out: set[tuple[Hashable, int]] = set()
    for q, doc, start, end, gain in spans:
        if q == query and gain > 0:
            out.update((doc, i) for i in range(start, end))
    return out


def covered_characters(blocks: Iterable[Block], query: Hashable) -> set[tuple[Hashable, int]]:
    """The ``(doc_id, position)`` pairs the blocks of ``query`` hold."""
    out: set[tuple[Hashable, int]] = set()
    for q, doc, start, end, count in blocks:
        if q == query:
            out.update((doc, i) for i in range(start, min(end, start + count)))
    return out


def span_metrics(
    spans: list[Span], blocks: list[Block]
) -> dict[Hashable, tuple[float | None, float | None]]:
    """``{query_id: (span_recall, span_precision)}`` for every query with blocks or
    judgements: recall 0 without relevant characters; precision None without
    characters in the context (the sum of the blocks' ``char_count``); both None for
    a query without judgements (unjudged, as every metric of it)."""
    judged = {s[0] for s in spans}
    out: dict[Hashable, tuple[float | None, float | None]] = {
        b[0]: (None, None) for b in blocks if b[0] not in judged
    }
    for query in judged:
        relevant = relevant_characters(spans, query)
        covered = covered_characters(blocks, query) & relevant
        used = sum(b[4] for b in blocks if b[0] == query)
        recall = len(covered) / len(relevant) if relevant else 0.0
        out[query] = (recall, len(covered) / used if used else None)
    return out


def chunk_gains(
    spans: list[Span], chunks: list[tuple[Hashable, int, int, int]]
) -> dict[tuple[Hashable, Hashable, int], float]:
    """``{(query_id, doc_id, chunk_index): gain}`` of the relevant chunks: a chunk
    ``(doc_id, chunk_index, start_char, end_char)`` is relevant to a query when it
    shares a character with one of its spans of gain > 0; its gain is the best."""
    out: dict[tuple[Hashable, Hashable, int], float] = {}
    for q, doc, start, end, gain in spans:
        if gain <= 0 or end <= start:
            continue
        for d, index, lo, hi in chunks:
            if d == doc and max(lo, start) < min(hi, end):
                key = (q, d, index)
                out[key] = max(out.get(key, gain), gain)
    return out


def document_gains(spans: list[Span]) -> dict[tuple[Hashable, Hashable], float]:
    """``{(query_id, doc_id): gain}``: a document's best span's gain."""
    out: dict[tuple[Hashable, Hashable], float] = {}
    for q, doc, _, _, gain in spans:
        out[(q, doc)] = max(out.get((q, doc), gain), gain)
    return out
