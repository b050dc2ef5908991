"""Plain per-query reference implementation of ``postprocess`` (SPEC section 1).

This is the test oracle, not the engine: it walks one query at a time, exactly as the
seed does, and favours obviousness over speed. :func:`ragframe.postprocess` must give
the same rows, character for character. It imports nothing from the engine: every
rule and constant here is written from SPEC section 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from ragframe.reference._text import normalize, remove_overlap, truncate
from ragframe.reference._tokens import block_fits, budget_tokens, in_tokens, tokens


class PostprocessParams(Protocol):
    """The parameters the reference reads (a ``PostprocessConfig`` has them all)."""

    top_k: int
    min_similarity: float
    max_chunk_gap: int
    max_blocks: int
    max_characters: int
    max_merged_block_characters: int
    overlap: str
    missing_text: str
    length: str
    tokenizer: Any
    max_block_tokens: int
    max_tokens: int


def adaptive_threshold(selected: int, top_k: int, min_similarity: float) -> float:
    """SPEC 1, rule 4: the similarity a selected chunk needs when ``selected`` are."""
    m = float(min_similarity)
    if selected <= 1:
        t = 0.6 * m
    elif selected >= top_k:
        t = 1.2 * m
    else:
        t = m * (0.6 + 0.6 * (selected - 1) / (top_k - 1))
    return min(1.0, max(0.0, t))


@dataclass
class _Chunk:
    row: dict[str, Any]
    entity_id: Any
    entity_type: str | None
    chunk_index: int
    text: str
    similarity: float
    rerank: float | None
    start_char: int | None = None
    end_char: int | None = None

    @property
    def score(self) -> float:
        return self.rerank if self.rerank is not None else self.similarity


@dataclass
class _Block:
    first: _Chunk
    """The block's first chunk (passthrough columns, start index)."""
    group_first: _Chunk
    """The group's first chunk (``entity_id``, ``entity_type`` as they were, rule 8)."""
    text: str
    end: int
    max_sim: float
    sum_sim: float
    count: int = 1
    rerank: float | None = None
    indexes: list[int] = field(default_factory=list)
    char_end: int = 0


def append_by_offsets(block_end: int, chunk: _Chunk) -> str:
    """``overlap="offsets"``: the part of ``chunk`` beyond the block's last character."""
    start, end = chunk.start_char or 0, chunk.end_char or 0
    if end <= block_end:
        return ""
    if start <= block_end:
        return chunk.text[block_end - start :]
    return "\n" + chunk.text


def _is_repeated(cand: _Chunk, selected: list[_Chunk]) -> bool:
    norm = normalize(cand.text)
    if not norm:
        return False
    for sel in selected:
        if (
            sel.entity_id is not None
            and sel.entity_id == cand.entity_id
            and sel.entity_type == cand.entity_type
            and sel.similarity >= cand.similarity
            and f" {norm} " in f" {normalize(sel.text)} "
        ):
            return True
    return False


def _select(chunks: list[_Chunk], config: PostprocessParams) -> list[_Chunk]:
    ranked = sorted(chunks, key=lambda ch: -ch.score)
    selected: list[_Chunk] = []
    for cand in ranked:
        if len(selected) >= config.top_k:
            break
        if not _is_repeated(cand, selected):
            selected.append(cand)
    threshold = adaptive_threshold(len(selected), config.top_k, config.min_similarity)
    kept = [ch for ch in selected if ch.similarity >= threshold]
    return kept or selected[:1]


def _merge(group: list[_Chunk], config: PostprocessParams) -> list[_Block]:
    head = group[0]
    blocks: list[_Block] = []
    cur: _Block | None = None
    for ch in group:
        if cur is not None:
            gap = ch.chunk_index - cur.end
            fits = gap <= config.max_chunk_gap
            if not fits:
                app = ch.text
            elif config.overlap == "offsets":
                app = append_by_offsets(cur.char_end, ch)
            else:
                app = remove_overlap(cur.text, ch.text)
            if fits and block_fits(config, cur.text + app):
                cur.text += app
                cur.end = ch.chunk_index
                cur.max_sim = max(cur.max_sim, ch.similarity)
                cur.sum_sim += ch.similarity
                cur.count += 1
                if ch.rerank is not None:
                    cur.rerank = ch.rerank if cur.rerank is None else max(cur.rerank, ch.rerank)
                cur.indexes.append(ch.chunk_index)
                cur.char_end = max(cur.char_end, ch.end_char or 0)
                continue
            blocks.append(cur)
        cur = _Block(ch, head, ch.text, ch.chunk_index, ch.similarity, ch.similarity, 1, ch.rerank)
        cur.indexes.append(ch.chunk_index)
        cur.char_end = ch.end_char or 0
    if cur is not None:
        blocks.append(cur)
    return blocks


def _blocks(chunks: list[_Chunk], config: PostprocessParams, zero: Any) -> list[_Block]:
    kept = _select(chunks, config)
    ordered = sorted(
        kept, key=lambda ch: (zero if ch.entity_id is None else ch.entity_id, ch.chunk_index)
    )
    groups: dict[tuple[str, Any], list[_Chunk]] = {}
    for ch in ordered:
        key = (ch.entity_type or "", zero if ch.entity_id is None else ch.entity_id)
        groups.setdefault(key, []).append(ch)
    blocks = [b for group in groups.values() for b in _merge(group, config)]
    return sorted(blocks, key=lambda b: -(b.rerank if b.rerank is not None else b.max_sim))


def _budget(blocks: list[_Block], config: PostprocessParams) -> list[tuple[_Block, str, bool]]:
    if in_tokens(config):
        return budget_tokens(blocks, config)
    out: list[tuple[_Block, str, bool]] = []
    total = 0
    for block in blocks:
        if len(out) >= config.max_blocks:
            break
        if total + len(block.text) > config.max_characters:
            if not out and config.max_characters - total > 0:
                out.append((block, truncate(block.text, config.max_characters), True))
            break
        out.append((block, block.text, False))
        total += len(block.text)
    return out


def _chunk(row: dict[str, Any]) -> _Chunk:
    sim = row.get("similarity")
    return _Chunk(
        row=row,
        entity_id=row.get("entity_id"),
        entity_type=row.get("entity_type"),
        chunk_index=row.get("chunk_index") or 0,
        text=row.get("text") or "",
        similarity=0.0 if sim is None else float(sim),
        rerank=None if row.get("rerank_score") is None else float(row["rerank_score"]),
        start_char=row.get("start_char"),
        end_char=row.get("end_char"),
    )


def _row(
    query_id: Any,
    rank: int,
    block: _Block,
    text: str,
    truncated: bool,
    passthrough: list[str],
    config: PostprocessParams,
) -> dict[str, Any]:
    first = block.first
    out = {
        "query_id": query_id,
        "block_rank": rank,
        "entity_type": block.group_first.entity_type,
        "entity_id": block.group_first.entity_id,
        "start_chunk_index": first.chunk_index,
        "end_chunk_index": block.end,
        "text": text,
        "max_similarity": block.max_sim,
        "avg_similarity": block.sum_sim / block.count,
        "source_chunk_count": block.count,
        "rerank_score": block.rerank,
        "ranking_score": block.rerank if block.rerank is not None else block.max_sim,
        "char_count": len(text),
        **({"token_count": tokens(config, text)} if getattr(config, "tokenizer", None) else {}),
        "truncated": truncated,
        "chunk_indexes": list(block.indexes),
    }
    out.update({name: first.row.get(name) for name in passthrough})
    return out


MISSING_SHOWN = 5
"""Keys a missing-text error names."""


def missing_text_message(count: int, queries: int, keys: list[tuple[Any, Any]]) -> str:
    """The missing-text error (SPEC 1, "Missing text"): counts and the first keys."""
    shown = ", ".join(f"({entity!r}, {index!r})" for entity, index in keys[:MISSING_SHOWN])
    more = ", ..." if count > MISSING_SHOWN else ""
    return (
        f"chunks: {count} candidate(s) in {queries} query(ies) have no text in the chunk "
        f"store; first keys (entity_id, chunk_index): [{shown}{more}]; expected a store "
        "row for every candidate (missing_text='empty' treats them as empty text, "
        "'drop' drops them)"
    )


def _store(chunks: pl.DataFrame, columns: list[str]) -> dict[tuple[Any, int], dict[str, Any]]:
    """The chunk store by (entity, chunk index); the first row wins where a key repeats,
    and a row with a null entity or chunk index is never found."""
    if "entity_id" not in chunks.columns and "doc_id" in chunks.columns:
        chunks = chunks.rename({"doc_id": "entity_id"})
    found: dict[tuple[Any, int], dict[str, Any]] = {}
    for row in chunks.iter_rows(named=True):
        key = (row["entity_id"], row["chunk_index"])
        if None not in key and key not in found:
            found[key] = {name: row[name] for name in columns}
    return found


def _looked_up(
    rows: list[dict[str, Any]], chunks: pl.DataFrame, config: PostprocessParams
) -> list[dict[str, Any]]:
    """Each candidate with its text (and offsets) from the chunk store. A candidate the
    store lacks (a null entity is never found; a null chunk index reads as 0) follows
    ``config.missing_text``: "error" raises, "empty" gives it no text (null), "drop"
    drops it."""
    columns = ["text", *(["start_char", "end_char"] if config.overlap == "offsets" else [])]
    store = _store(chunks, columns)
    out: list[dict[str, Any]] = []
    missing: list[dict[str, Any]] = []
    for row in rows:
        found = store.get((row["entity_id"], row["chunk_index"] or 0))
        if found is None:
            missing.append(row)
            if config.missing_text == "drop":
                continue
        out.append({**row, **(found or dict.fromkeys(columns))})
    if missing and config.missing_text == "error":
        keys = [(row["entity_id"], row["chunk_index"] or 0) for row in missing]
        queries = len({row["query_id"] for row in missing})
        raise ValueError(missing_text_message(len(missing), queries, keys))
    return out


def postprocess_reference(
    candidates: pl.DataFrame, config: PostprocessParams, *, chunks: pl.DataFrame | None = None
) -> list[dict[str, Any]]:
    """Post-process ``candidates`` one query at a time; return one dict per block.

    ``candidates`` has the columns of SPEC 1 (``doc_id`` is read as ``entity_id``;
    absent optional columns read as null). With ``chunks``, a chunk store
    ``(entity_id|doc_id, chunk_index, text)`` (and the offsets for
    ``overlap="offsets"``), each candidate's text comes from it instead, and a
    candidate it lacks follows ``config.missing_text``. Rows come out sorted by
    ``query_id`` then ``block_rank``; any column that is not a candidate column is
    passed through from each block's first chunk.

    Raises:
        ValueError: ``missing_text="error"`` and a candidate is not in ``chunks``.
    """
    if "entity_id" not in candidates.columns and "doc_id" in candidates.columns:
        candidates = candidates.rename({"doc_id": "entity_id"})
    zero: Any = "" if candidates.schema.get("entity_id") == pl.String else 0
    known = {
        "query_id",
        "entity_id",
        "entity_type",
        "chunk_index",
        "text",
        "similarity",
        "rerank_score",
    }
    if config.overlap == "offsets":
        known |= {"start_char", "end_char"}
    passthrough = [name for name in candidates.columns if name not in known]
    rows = list(candidates.iter_rows(named=True))
    if chunks is not None:
        rows = _looked_up(rows, chunks, config)
    by_query: dict[Any, list[_Chunk]] = {}
    for row in rows:
        by_query.setdefault(row["query_id"], []).append(_chunk(row))
    out: list[dict[str, Any]] = []
    for query_id in sorted(by_query):
        chosen = _budget(_blocks(by_query[query_id], config, zero), config)
        for rank, (block, text, truncated) in enumerate(chosen):
            out.append(_row(query_id, rank, block, text, truncated, passthrough, config))
    return out
