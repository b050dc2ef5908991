"""Plain per-query reference implementation of ``postprocess`` (SPEC section 1).

This is the test oracle, not the engine: it walks one query at a time, exactly as the
seed does, and favours obviousness over speed. :func:`ragframe.postprocess` must give
the same rows, character for character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe._text import normalize, remove_overlap, truncate
from ragframe.postprocess import PostprocessConfig


@dataclass
class _Chunk:
    row: dict[str, Any]
    entity_id: Any
    entity_type: str | None
    chunk_index: int
    text: str
    similarity: float
    rerank: float | None

    @property
    def score(self) -> float:
        return self.rerank if self.rerank is not None else self.similarity


@dataclass
class _Block:
    first: _Chunk
    text: str
    end: int
    max_sim: float
    sum_sim: float
    count: int = 1
    rerank: float | None = None
    indexes: list[int] = field(default_factory=list)


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


def _select(chunks: list[_Chunk], config: PostprocessConfig) -> list[_Chunk]:
    ranked = sorted(chunks, key=lambda ch: -ch.score)
    selected: list[_Chunk] = []
    for cand in ranked:
        if len(selected) >= config.top_k:
            break
        if not _is_repeated(cand, selected):
            selected.append(cand)
    threshold = config.threshold(len(selected))
    kept = [ch for ch in selected if ch.similarity >= threshold]
    return kept or selected[:1]


def _merge(group: list[_Chunk], config: PostprocessConfig) -> list[_Block]:
    blocks: list[_Block] = []
    cur: _Block | None = None
    for ch in group:
        if cur is not None:
            gap = ch.chunk_index - cur.end
            fits = gap <= config.max_chunk_gap
            app = remove_overlap(cur.text, ch.text) if fits else ch.text
            if fits and len(cur.text) + len(app) <= config.max_merged_block_characters:
                cur.text += app
                cur.end = ch.chunk_index
                cur.max_sim = max(cur.max_sim, ch.similarity)
                cur.sum_sim += ch.similarity
                cur.count += 1
                if ch.rerank is not None:
                    cur.rerank = ch.rerank if cur.rerank is None else max(cur.rerank, ch.rerank)
                cur.indexes.append(ch.chunk_index)
                continue
            blocks.append(cur)
        cur = _Block(ch, ch.text, ch.chunk_index, ch.similarity, ch.similarity, 1, ch.rerank)
        cur.indexes.append(ch.chunk_index)
    if cur is not None:
        blocks.append(cur)
    return blocks


def _blocks(chunks: list[_Chunk], config: PostprocessConfig, zero: Any) -> list[_Block]:
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


def _budget(blocks: list[_Block], config: PostprocessConfig) -> list[tuple[_Block, str, bool]]:
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
    sim = row.get(c.SIMILARITY)
    return _Chunk(
        row=row,
        entity_id=row.get(c.ENTITY_ID),
        entity_type=row.get(c.ENTITY_TYPE),
        chunk_index=row.get(c.CHUNK_INDEX) or 0,
        text=row.get(c.TEXT) or "",
        similarity=0.0 if sim is None else float(sim),
        rerank=None if row.get(c.RERANK_SCORE) is None else float(row[c.RERANK_SCORE]),
    )


def _row(
    query_id: Any,
    rank: int,
    block: _Block,
    text: str,
    truncated: bool,
    zero: Any,
    passthrough: list[str],
) -> dict[str, Any]:
    first = block.first
    out = {
        c.QUERY_ID: query_id,
        c.BLOCK_RANK: rank,
        c.ENTITY_TYPE: first.entity_type or "",
        c.ENTITY_ID: zero if first.entity_id is None else first.entity_id,
        c.START_CHUNK_INDEX: first.chunk_index,
        c.END_CHUNK_INDEX: block.end,
        c.TEXT: text,
        c.MAX_SIMILARITY: block.max_sim,
        c.AVG_SIMILARITY: block.sum_sim / block.count,
        c.SOURCE_CHUNK_COUNT: block.count,
        c.RERANK_SCORE: block.rerank,
        c.RANKING_SCORE: block.rerank if block.rerank is not None else block.max_sim,
        c.CHAR_COUNT: len(text),
        c.TRUNCATED: truncated,
        c.CHUNK_INDEXES: list(block.indexes),
    }
    out.update({name: first.row.get(name) for name in passthrough})
    return out


def postprocess_reference(
    candidates: pl.DataFrame, config: PostprocessConfig
) -> list[dict[str, Any]]:
    """Post-process ``candidates`` one query at a time; return one dict per block.

    ``candidates`` uses the engine's canonical column names (``entity_id``, ``text``
    present). Rows come out sorted by ``query_id`` then ``block_rank``; any column that
    is not a candidate column is passed through from each block's first chunk.
    """
    zero: Any = "" if candidates.schema.get(c.ENTITY_ID) == pl.String else 0
    known = {
        c.QUERY_ID,
        c.ENTITY_ID,
        c.ENTITY_TYPE,
        c.CHUNK_INDEX,
        c.TEXT,
        c.SIMILARITY,
        c.RERANK_SCORE,
    }
    passthrough = [name for name in candidates.columns if name not in known]
    by_query: dict[Any, list[_Chunk]] = {}
    for row in candidates.iter_rows(named=True):
        by_query.setdefault(row[c.QUERY_ID], []).append(_chunk(row))
    out: list[dict[str, Any]] = []
    for query_id in sorted(by_query):
        chosen = _budget(_blocks(by_query[query_id], config, zero), config)
        for rank, (block, text, truncated) in enumerate(chosen):
            out.append(_row(query_id, rank, block, text, truncated, zero, passthrough))
    return out
