"""Word tokens that may match a query term, for every document at once (``fvh`` mode).

Why: turning every token of every document into a string (and lower-casing and joining
it) was the dominant cost of highlighting, yet only a few tokens per document can equal
one of the terms its queries ask for. This kernel finds the tokens of the whole
content buffer (:func:`ragframe.fetch._tokenize.token_spans`, whole-array numpy passes)
and keeps only the *candidates*:

* every token holding a non-ASCII character (lower-casing can map it onto an ASCII term,
  e.g. the Kelvin sign or the dotted capital I), and
* every ASCII token whose key, ``(document, byte length, first 8 bytes ASCII-lowered)``,
  hashes into a slot of a table filled with the same keys of the document's ASCII
  terms.

The filter is conservative by construction: an ASCII token equal to a term (ignoring
case) has the term's key, so it is never dropped; hash collisions only let extra tokens
through, and the exact join on lower-cased text that follows removes them. Offsets are
characters, as in :func:`ragframe.fetch._tokenize.tokenize`, and the tokens are the same.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe._arrow import content_buffer, string_addresses, string_views, strings
from ragframe.fetch import _wordbreak as wb
from ragframe.fetch._analysis import java_lower_tokens
from ragframe.fetch._classes import (
    FIRST_MIDDLE,
    HIGH,
    MIDDLE_SPAN,
    UNDERSCORE,
    Ints,
    byte_table,
    chars,
    triple_table,
)
from ragframe.fetch._tokenize import MAX_TOKEN, token_spans

_U64 = npt.NDArray[np.uint64]
_FOLD = np.uint64(0x2020202020202020)
"""OR-ing 0x20 folds ASCII case (other ASCII token bytes: ``' . , : ;`` and digits keep
their value, ``_`` becomes DEL): equal-ignoring-case tokens get equal keys."""
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [2**64 - 1], dtype=np.uint64)
"""``_MASKS[n]`` keeps the first ``n`` bytes of a little-endian 8-byte word."""
_MUL = np.uint64(0x9E3779B97F4A7C15)
_MUL_LEN = np.uint64(0xC2B2AE3D27D4EB4F)
_DOC_SHIFT = 24
KERNEL_BYTES = 1 << 20
"""ASCII-only documents of more bytes than this in all go to the compiled pass; fewer
take the numpy path, which loads neither numba nor postprocess's kernel machinery (a
small ``fetch`` stays numba-free)."""
BLOCK_BYTES = 1 << 21
"""Keys mix ``doc << 24 | length``: lengths of 2**24 bytes or more may collide (safe)."""


def _keys(data: npt.NDArray[np.uint8], starts: Ints, lengths: Ints, mix: _U64) -> _U64:
    """Hash of (document, byte length, first 8 bytes case-folded) of each ASCII word at
    the sorted byte ``starts``; ``mix`` holds ``document << 24`` and is overwritten."""
    padded = np.concatenate([data, np.zeros(8, dtype=np.uint8)])  # every word readable
    words: _U64 = np.ndarray((data.size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    key = words[starts]  # indexing, not take: numpy's take copies unaligned items one by one
    key |= _FOLD
    key &= _MASKS.take(np.minimum(lengths, 8))
    key *= _MUL
    mix |= lengths.view(np.uint64)
    mix *= _MUL_LEN
    key ^= mix
    return key


def _doc_mix(counts: Ints, rows: Ints) -> _U64:
    """``rows[d] << 24`` for each of ``counts[d]`` items of each document ``d``."""
    return np.repeat((rows.astype(np.int64) << _DOC_SHIFT).view(np.uint64), counts)


def _term_table(terms: pl.Series) -> tuple[npt.NDArray[np.bool_], int]:
    """A slot table marking the hashed keys of each document's ASCII terms (``terms``:
    one list of lower-cased terms per document), and its size in bits."""
    values = terms.explode()
    ascii_ = (values.is_not_null() & ~values.str.contains(r"[^\x00-\x7F]")).to_numpy()
    counts = terms.list.len().fill_null(0).to_numpy().astype(np.int64)
    mix = _doc_mix(counts, np.arange(counts.size))[ascii_]
    buf = content_buffer(values.filter(ascii_))
    keys = _keys(buf.data, buf.doc_bytes[:-1], np.diff(buf.doc_bytes), mix)
    bits = int(np.clip(np.ceil(np.log2(max(keys.size, 1) * 64)), 12, 26))
    table = np.zeros(1 << bits, dtype=bool)
    table[(keys >> np.uint64(64 - bits)).view(np.int64)] = True
    return table, bits


class _Block(NamedTuple):
    """The candidates of one block of documents (rows of the whole frame)."""

    doc: Ints
    tokens: pl.Series
    """As in the document (views of the block's bytes)."""
    start: Ints
    end: Ints
    multi: Ints
    """The candidates that hold a multi-byte character (indexes into this block's)."""


def _block_candidates(
    content: pl.Series, rows: Ints, table: npt.NDArray[np.bool_], bits: int
) -> _Block:
    """The candidates of the rows ``rows`` of the frame (``content``: their text)."""
    buf = content_buffer(content)
    starts, ends, lengths = token_spans(buf)
    counts = np.diff(np.searchsorted(starts, buf.doc_bytes))
    slot = _keys(buf.data, starts, lengths, _doc_mix(counts, rows))
    slot >>= np.uint64(64 - bits)
    keep = table[slot.view(np.int64)]
    multi = np.zeros(0, dtype=np.int64)
    if buf.lead.size and starts.size:  # tokens holding a multi-byte character: all kept
        run = np.searchsorted(starts, buf.lead, side="right") - 1
        multi = run[(run >= 0) & (buf.lead < ends[np.maximum(run, 0)])]  # sorted
        multi = multi[np.append(True, multi[1:] != multi[:-1])] if multi.size else multi
        keep[multi] = True
    kept = np.flatnonzero(keep)
    starts, ends = starts[kept], ends[kept]
    doc = np.searchsorted(buf.doc_bytes, starts, side="right") - 1
    first_char = chars(buf.doc_bytes, buf.cont_at)[doc]
    return _Block(
        rows[doc],
        strings(buf.data, starts, ends - starts),
        chars(starts, buf.cont_at) - first_char,
        chars(ends, buf.cont_at) - first_char,
        np.searchsorted(kept, multi),
    )


def _ascii_candidates(
    content: pl.Series, rows: Ints, table: npt.NDArray[np.bool_], bits: int
) -> _Block:
    """:func:`_block_candidates` of the rows ``rows`` of the frame, ASCII-only documents
    (``content``: the frame's whole column, not a copy of theirs), in one compiled pass
    (:func:`ragframe.fetch._ascii.ascii_candidates`; bytes are characters there) that
    reads them in place; the tokens are views of the same bytes."""
    from ragframe._kernels._compile import frozen  # only for large inputs

    address, length, cells = string_addresses(content)
    address, length = address[rows], length[rows]
    offsets = np.zeros(length.size + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    params = np.array(
        [wb.COUNT, UNDERSCORE, MAX_TOKEN, FIRST_MIDDLE, FIRST_MIDDLE + MIDDLE_SPAN - 1]
    )
    hashes = np.concatenate([[_MUL, _MUL_LEN, np.uint64(64 - bits)], _MASKS])
    docs = (frozen(address, np.int64), frozen(length, np.int64), frozen(offsets, np.int64))
    tables = (
        frozen(rows, np.int64),
        frozen(byte_table()[:HIGH], np.uint8),
        frozen(triple_table().ravel(), np.bool_),
        frozen(np.packbits(table, bitorder="little"), np.uint8),
        frozen(params, np.int64),
        frozen(hashes, np.uint64),
    )
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], _cpus() + 1)[1:-1])
    bounds = np.unique(np.concatenate([[0], cuts, [rows.size]])).tolist()
    if len(bounds) > 2:  # the kernel releases the GIL: one part of the documents per CPU
        with ThreadPoolExecutor(len(bounds) - 1) as pool:
            parts = list(pool.map(lambda ab: _spans(docs, tables, *ab), pairwise(bounds)))
    else:
        parts = [_spans(docs, tables, 0, rows.size)]
    starts = np.concatenate([p[0] for p in parts])
    ends = np.concatenate([p[1] for p in parts])
    doc = np.searchsorted(offsets, starts, side="right") - 1
    start, end = starts - offsets[doc], ends - offsets[doc]
    row = rows[doc]
    return _Block(
        row,
        string_views(cells.buffers, cells.source[row], cells.position[row] + start, end - start),
        start,
        end,
        np.zeros(0, dtype=np.int64),
    )


def _cpus() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _spans(docs: tuple[Any, ...], tables: tuple[Any, ...], lo: int, hi: int) -> tuple[Ints, Ints]:
    """Start and end (offsets into the documents end to end) of the candidates of
    documents ``lo`` to ``hi`` (exclusive) of
    :func:`ragframe.fetch._ascii.ascii_candidates`'s ``docs`` (addresses, lengths,
    offsets) and ``tables`` (its other inputs, ``rows`` first)."""
    from ragframe.fetch._ascii import ascii_candidates  # only for large inputs

    address, length, offsets = (a[lo:hi] for a in docs)
    rows, classes, triple, slots, params, hashes = tables
    inputs = (address, length, offsets, rows[lo:hi], classes, triple, slots, params, hashes)

    def run(starts: Ints, ends: Ints) -> int:
        found: int = ascii_candidates(*inputs, starts, ends)
        return found

    room = int(length.sum()) // 16 + 64  # candidates: a few of the tokens
    starts, ends = np.empty(room, np.int64), np.empty(room, np.int64)
    found = run(starts, ends)
    if found > room:  # rarely: more than one per 16 bytes
        starts, ends = np.empty(found, np.int64), np.empty(found, np.int64)
        run(starts, ends)
    return starts[:found], ends[:found]


def _blocks(
    content: pl.Series, rows: Ints, table: npt.NDArray[np.bool_], bits: int
) -> list[_Block]:
    """:func:`_block_candidates` of the rows ``rows`` (``content``: their text), in
    blocks of whole documents of about ``BLOCK_BYTES``."""
    if not rows.size:
        return []
    sizes = np.cumsum(content.str.len_bytes().to_numpy().astype(np.int64))
    marks = np.searchsorted(sizes, np.arange(BLOCK_BYTES, sizes[-1], BLOCK_BYTES), side="right")
    cuts = np.unique(np.concatenate([[0], marks, [rows.size]])).tolist()
    return [
        _block_candidates(content.slice(lo, hi - lo), rows[lo:hi], table, bits)
        for lo, hi in pairwise(cuts)
    ]


def candidate_tokens(docs: pl.DataFrame) -> pl.DataFrame:
    """``doc_id, __rf_token, start, end``: the word tokens that may equal a term.

    ``docs`` holds ``doc_id``, ``content`` (no nulls) and ``__rf_doc_terms`` (the
    lower-cased terms asked for in the document). Tokens are lower-cased, all at once
    at the end (Java's per-code-point rules on the few that hold a non-ASCII
    character, plain ASCII lower-casing on the others). ASCII-only documents are
    tokenized and filtered in one compiled pass (:func:`_ascii_candidates`); the
    others by the numpy tokenizer in blocks of whole documents of about
    ``BLOCK_BYTES``, so that the kernel's whole-array temporaries stay in the CPU
    cache.
    """
    schema = candidate_schema(docs.schema[c.DOC_ID])
    if docs.height == 0:
        return pl.DataFrame(schema=schema)
    table, bits = _term_table(docs[c.T_DOC_TERMS])
    content = docs[c.CONTENT]
    sizes = content.str.len_bytes()
    plain = (sizes == content.str.len_chars()).to_numpy()
    if int(sizes.filter(plain).sum() or 0) <= KERNEL_BYTES:
        plain[:] = False  # small: the numpy path alone
    other = np.flatnonzero(~plain)
    blocks = _blocks(content.gather(other), other, table, bits)
    if plain.any():
        ascii_rows = np.flatnonzero(plain)
        blocks.append(_ascii_candidates(content, ascii_rows, table, bits))
    before = np.cumsum([0] + [b.start.size for b in blocks[:-1]])
    multi = np.concatenate([b.multi + at for b, at in zip(blocks, before, strict=True)])
    tokens = pl.concat([b.tokens for b in blocks], rechunk=False)
    return pl.DataFrame(
        {
            c.DOC_ID: docs[c.DOC_ID].gather(np.concatenate([b.doc for b in blocks])),
            c.T_TOKEN: java_lower_tokens(tokens, multi),
            c.START: np.concatenate([b.start for b in blocks]),
            c.END: np.concatenate([b.end for b in blocks]),
        },
        schema=schema,
    )


def candidate_schema(id_type: pl.DataType) -> dict[str, pl.DataType]:
    """The columns :func:`candidate_tokens` returns."""
    return {c.DOC_ID: id_type, c.T_TOKEN: pl.String(), c.START: pl.Int64(), c.END: pl.Int64()}
