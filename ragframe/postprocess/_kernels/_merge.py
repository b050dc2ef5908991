"""Rules 6-8, the block merge, as one compiled pass over every group: append each
chunk to the current block (its overlap removed, rule 7) while the gap and the size cap
allow, else start a new block; block statistics on the way."""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe._arrow import U8, string_addresses
from ragframe._kernels._ahead import sample
from ragframe._kernels._buffers import copy_bytes, load_u64, longest_text, read_ahead
from ragframe._kernels._compile import F64, I64, ZERO, Bools, compiled, frozen, internal
from ragframe._kernels._parts import in_parts
from ragframe.postprocess._kernels._overlap import offsets_cut, overlap_cut
from ragframe.postprocess._kernels._pieces import Texts, append_piece, truncated, write_blocks
from ragframe.postprocess._kernels._text import code_points, plain
from ragframe.tokens._kernels._bpe import is_ascii
from ragframe.tokens._kernels._count import (
    Cache,
    CachePool,
    Vocab,
    count_tail,
    new_cache,
    new_scratch,
    no_pieces,
)

AHEAD = 8
"""How many rows ahead the merge prefetches texts: twice the walk's
(:data:`~ragframe._kernels._buffers.PREFETCH_AHEAD`), as a merge spends less time on a
row (on issue 27's workload, merge alone on one thread: 31.3 -> 29.1 ms store, 32.2 ->
29.7 inline, against 4 rows)."""

LOW_WORD = np.uint64(0xFFFFFFFF)
"""The low 4 bytes of a little-endian 8-byte word."""

MergeRows = tuple[I64, I64, Bools, I64, F64, F64]
"""The rows a merge reads, in merge order: their texts' addresses and lengths, whether
each starts its group, chunk index, similarity and rerank score (NaN: null)."""


@compiled
def _merge(
    rows: MergeRows,
    max_gap: int,
    cap: int,
    by_offsets: bool,
    start_char: F64,
    end_char: F64,
    part: tuple[int, int, int, int],
    piece: I64,
    blocks: MergeBlocks,
    written: tuple[U8, I64],
    token_cap: int,
    vocab: Vocab,
    cache: Cache,
    block_tokens: I64,
) -> None:
    """Rules 6-8 for the groups of rows ``part[0]:part[1]`` (:data:`MergeRows`), rerank
    scores and offsets NaN where null (offsets as floats: exact below 2**53, and one
    signature whether or not a chunk lacks them); no block is longer than ``part[2]``
    bytes. With ``written`` (a text buffer and, per row, a byte position) non-empty,
    each block's text is built in place in the buffer, the part's blocks one after
    another from byte ``part[3]``, and each block's first row gets where its text
    begins: the texts are then written once, as the merge reads the chunks.

    Sets per row, in ``piece``, what it adds to its block: its text from that byte
    (0 where it starts a block), or -1 for "\n" + its whole text; and in ``blocks``
    whether it starts a block and, on each block's first row, the block's length in
    bytes and in code points, end chunk index, max and sum of similarity, chunk count,
    max rerank score (NaN: none) and first 4 bytes (:func:`_head`). The current block's
    text is built in a scratch buffer (rule 7 reads it); the texts themselves are
    written later, for the blocks the budget keeps (:func:`write_blocks`). Parts of
    disjoint groups may run at once.

    With ``token_cap`` >= 0 the cap is in tokens (``cap`` is not read): a chunk joins
    its block when the merged text counts at most ``token_cap`` tokens of ``vocab``
    (``cl100k_base``, all texts ASCII: :mod:`._bpe`), counted incrementally from the
    block's last piece (:func:`~._bpe.count_tail`); each block's count is set in
    ``block_tokens`` on its first row; where a text is not ASCII or has a piece too long
    to count here (:data:`~._bpe.LONG_PIECE`), the part stops with
    ``block_tokens[part[0]]`` -1 (:class:`NotCounted`).
    """
    address, length, group_start, chunk_index, sim, rerank = rows
    starts, block_bytes, block_chars, block_end, block_max = blocks[:5]
    block_sum, block_count, block_rerank, block_head = blocks[5:]
    lo, hi, longest, at = part
    out, block_at = written
    in_tokens = token_cap >= 0
    scratch = new_scratch(max(longest, 1) if in_tokens else ZERO)
    nothing = no_pieces()
    tokens = 0  # the current block's count, the count before its last piece, where it starts
    before = 0
    last = ZERO
    in_place = len(out) > 0
    buffer = out if in_place else np.empty(max(longest, 1), dtype=np.uint8)
    if not in_place:
        at = ZERO
    text = buffer[at:]  # the current block's
    widest = longest_text(length)
    kmp = (np.empty(widest, dtype=np.uint8), np.empty(widest, dtype=np.uint8),
           np.empty(widest, dtype=np.int64))  # fmt: skip
    flat = False  # the current block's text has no two neighbouring bytes below 0x21
    short = False  # its first row has fewer than 4 bytes
    b = -1  # the current block's first row
    used = ZERO  # the current block's bytes
    chars = 0  # the current block's length in code points
    char_end = 0.0  # float64, as the offsets: one signature of offsets_cut
    for r in range(lo, hi):
        data = read_ahead(address, length, r, AHEAD)
        if in_tokens and not is_ascii(data):  # not counted here: the caller's rounds
            block_tokens[lo] = -1
            return
        t0, t1 = ZERO, len(data)
        ascii_only, runless = plain(data, t0, t1)  # one pass: counts and searches skip
        w = used  # a merge in tokens: the block's end with this row's part written
        append = False
        cut = t0  # where the appended text starts; -1: "\n" + the whole chunk
        extra = 0
        if not group_start[r] and b >= 0 and chunk_index[r] - block_end[b] <= max_gap:
            skipped = 0
            if by_offsets:
                cut, skipped = offsets_cut(data, t0, t1, start_char[r], end_char[r], char_end)
            elif used > 0 and t1 > t0:
                both = ascii_only and runless and flat
                cut, skipped = overlap_cut(text, ZERO, used, data, t0, t1, kmp, both)
            total = t1 - t0 if ascii_only else code_points(data, t0, t1)
            extra = total + 1 if cut < 0 else total - skipped
            if not in_tokens:
                append = chars + extra <= cap
            else:  # the merged text written after the block's, then counted from its last piece
                w = append_piece(text, used, data, cut, t1)
                count, last_at, upto = count_tail(text, last, w, vocab, scratch, cache, nothing)
                if count < 0:  # a long piece: not counted here, the caller's rounds
                    block_tokens[lo] = -1
                    return
                append = before + count <= token_cap
                if append:
                    tokens, before, last = before + count, before + upto, last_at
        if append:
            piece[r] = cut
            flat = flat and runless and _flat_join(text, used, data, cut, t1)
            used = w if in_tokens else append_piece(text, used, data, cut, t1)  # tokens: written
            chars += extra
            block_end[b] = chunk_index[r]
            char_end = max(char_end, end_char[r])
            if sim[r] > block_max[b]:
                block_max[b] = sim[r]
            block_sum[b] += sim[r]
            block_count[b] += 1
            top_rerank = block_rerank[b]
            if not np.isnan(rerank[r]) and (np.isnan(top_rerank) or rerank[r] > top_rerank):
                block_rerank[b] = rerank[r]
        else:
            if b >= 0:
                block_chars[b] = chars
                block_bytes[b] = used
                block_tokens[b] = tokens
                if short:  # the block's first 4 bytes are not all its first row's
                    block_head[b] = _head(text, used)
                if in_place:  # the next block's text after this one's
                    at += used
                    text = buffer[at:]
            if in_place:
                block_at[r] = at
            starts[r] = True
            piece[r] = 0
            b = r
            copy_bytes(data, text)
            used = t1
            if t1 >= 8:  # read while in cache, in one load
                block_head[r] = np.int64(load_u64(address[r]) & LOW_WORD)  # type: ignore[call-arg]
            else:
                block_head[r] = _head(data, t1)
            short = t1 < 4
            chars = t1 - t0 if ascii_only else code_points(data, t0, t1)
            flat = runless
            char_end = end_char[r]
            block_end[r] = chunk_index[r]
            block_max[r] = sim[r]
            block_sum[r] = sim[r]
            block_count[r] = 1
            block_rerank[r] = rerank[r]
            if in_tokens:
                tokens, last, before = count_tail(text, ZERO, used, vocab, scratch, cache, nothing)
                if tokens < 0:  # a long piece: not counted here, the caller's rounds
                    block_tokens[lo] = -1
                    return
    if b >= 0:
        block_chars[b] = chars
        block_bytes[b] = used
        block_tokens[b] = tokens
        if short:
            block_head[b] = _head(text, used)


@internal
def _head(text: U8, used: int) -> int:
    """The first 4 bytes of ``text[:used]`` as a little-endian word (0 past ``used``):
    a string view's prefix, taken while the block's text is in cache."""
    word = 0
    for i in range(min(used, 4)):
        word |= int(text[i]) << (8 * i)
    return word


@internal
def _flat_join(text: U8, used: int, data: U8, cut: int, end: int) -> bool:
    """Whether appending ``data[cut:end]`` (``cut`` -1: "\n" and all of ``data``) after
    ``text[:used]`` puts no two bytes below 0x21 side by side where they join."""
    if cut < 0:  # "\n" is below 0x21: so may not be either neighbour
        return (used == 0 or text[used - 1] > 32) and (end == 0 or data[0] > 32)
    return used == 0 or cut >= end or text[used - 1] > 32 or data[cut] > 32


MergeBlocks = tuple[Bools, I64, I64, I64, F64, F64, I64, F64, I64]
_NO_VOCAB: Vocab = tuple(
    frozen(np.zeros(n, dtype=t), t)
    for n, t in ((256, np.uint8), (1, np.uint8), *[(1, np.int64)] * 5)
)
"""The vocabulary a merge in characters passes (never read)."""


class MergeResult(NamedTuple):
    """What :func:`merge` gives: per row in merge order, what it adds to its block
    (``piece``) and whether it starts one; set on each block's first row, the block's
    statistics. The texts are written by :func:`write_blocks`."""

    starts: Bools
    """Whether the row starts a block."""
    piece: I64
    """The row's text from this byte is its part of the block (-1: "\n" + all of it)."""
    size: I64
    """The block text's length in bytes."""
    chars: I64
    """The block text's length in code points."""
    end_chunk_index: I64
    max_similarity: F64
    sum_similarity: F64
    chunk_count: I64
    """Chunks merged into the block."""
    rerank: F64
    """The largest rerank score merged (NaN: none)."""
    tokens: I64
    """The block text's token count (a merge in tokens; else 0)."""
    text: U8
    """With ``in_place``: the blocks' texts, each where :attr:`at` says (else empty)."""
    at: I64
    """With ``in_place``: where each block's text begins in :attr:`text` (set on its
    first row; else empty)."""
    head: I64
    """The block text's first 4 bytes as a little-endian word (a string view's prefix)."""


class NotCounted(Exception):
    """A merge in tokens met a text its kernel does not count (not ASCII, or a piece
    over :data:`~._bpe.LONG_PIECE` bytes)."""


def merge(
    address: I64,
    length: I64,
    group_start: Bools,
    chunk_index: I64,
    sim: F64,
    rerank: F64,
    max_gap: int,
    cap: int,
    start_char: npt.NDArray[np.int64 | np.float64] | None = None,
    end_char: npt.NDArray[np.int64 | np.float64] | None = None,
    tokens: tuple[int, Vocab, CachePool] | None = None,
    in_place: bool = False,
) -> MergeResult:
    """Blocks of every group (see :func:`_merge`); offsets mode when offsets are given;
    the cap in tokens with ``tokens`` (the cap, the vocabulary and its caches), where
    ``cap`` is not read. Every array is in merge order, the texts as addresses and
    lengths (:func:`ragframe._arrow.string_addresses`). With ``in_place``, every
    block's text is written as it is merged (:attr:`MergeResult.text`): one read of
    each chunk's text, where :func:`write_blocks` reads them again.

    Returns the blocks as a :class:`MergeResult`. Inputs reach the kernel
    :func:`~._compile.frozen`, outputs fresh: one signature whatever the caller's arrays.

    Raises:
        NotCounted: in tokens, a text is not ASCII or has a piece too long to count
            here (merge it another way).
    """
    n = len(chunk_index)
    by_offsets = start_char is not None and end_char is not None
    zeros = np.zeros(n, dtype=np.float64)  # no offsets: as floats, so frozen copies nothing
    given = (address, length, group_start, chunk_index, sim, rerank)
    kinds = (np.int64, np.int64, np.bool_, np.int64, np.float64, np.float64)
    rows: MergeRows = tuple(frozen(a, t) for a, t in zip(given, kinds, strict=True))
    offsets = (
        frozen(start_char if start_char is not None else zeros, np.float64),
        frozen(end_char if end_char is not None else zeros, np.float64),
    )
    group_firsts = np.flatnonzero(group_start)
    # a block's text is at most its group's bytes and a newline per chunk
    before = np.zeros(n + 1, dtype=np.int64)  # each row's bytes before it, then all
    np.cumsum(length, out=before[1:])
    bounds = np.append(group_firsts, n)
    group_bytes = np.diff(before[bounds]) + np.diff(bounds)  # (numpy's reduceat: 4x slower)
    group_at = np.cumsum(group_bytes) - group_bytes  # each group's room in ``out``
    out = np.empty(int(group_bytes.sum()) if in_place else 0, dtype=np.uint8)
    block_at = np.zeros(n if in_place else 0, dtype=np.int64)
    piece = np.empty(n, dtype=np.int64)  # every row's is written
    blocks: MergeBlocks = (
        np.zeros(n, dtype=np.bool_),
        *(np.zeros(n, dtype=np.int64) for _ in range(3)),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.float64),
        np.zeros(n, dtype=np.int64),
        np.full(n, np.nan, dtype=np.float64),
        np.zeros(n, dtype=np.int64),
    )  # type: ignore[assignment]
    block_tokens = np.zeros(n, dtype=np.int64)
    token_cap, vocab, caches = tokens if tokens is not None else (-1, _NO_VOCAB, None)

    def run(part: tuple[int, int]) -> None:
        lo, hi = part
        within = np.searchsorted(group_firsts, [lo, hi])
        longest = int(group_bytes[within[0] : within[1]].max()) if hi > lo else 0
        at = int(group_at[within[0]]) if in_place and hi > lo else 0
        with caches.taken() if caches else contextlib.nullcontext(new_cache(1)) as cache:
            _merge(
                rows,
                int(max_gap),
                int(cap),
                by_offsets,
                *offsets,
                (lo, hi, longest, at),
                piece,
                blocks,
                (out, block_at),
                int(token_cap),
                vocab,
                cache,
                block_tokens,
            )

    in_parts(run, group_firsts, n)
    if tokens is not None and (block_tokens < 0).any():
        raise NotCounted("a text is not ASCII or has a long piece")
    return MergeResult(blocks[0], piece, *blocks[1:8], block_tokens, out, block_at, blocks[8])


def sample_blocks() -> tuple[I64, I64, MergeResult, Texts, object]:
    """A block of two one-character rows (\"a\", \"b\"), merged: what the samples
    below call the kernels on."""
    address, length, alive = string_addresses(pl.Series(["a", "b"]))
    i64, f64 = np.zeros(2, dtype=np.int64), np.zeros(2)
    m = merge(address, length, np.array([True, False]), i64, f64, f64, 1, 10)
    one = np.zeros(1, dtype=np.int64)
    blocks = Texts(one, one + 2, one, m.size[:1].copy())
    return address, length, m, blocks, alive


@sample("_merge")
def _sample() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    sample_blocks()


@sample("_write")
def _sample_write() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    address, length, m, blocks, alive = sample_blocks()
    write_blocks(address, length, m.piece, blocks)
    del alive


@sample("_truncations")
def _sample_truncations() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    address, length, m, blocks, alive = sample_blocks()
    truncated(address, length, m.piece, blocks, 1, 80)
    del alive
