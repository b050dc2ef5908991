"""Whole-buffer string kernels for ``postprocess``: overlap, containment, cut positions.

Why kernels: "the largest L such that the last L characters of one string equal the
first L of another" has no Polars expression, and Polars' literal ``str.contains``
with a column pattern compiles a regex per row (and fails past its size limit).
Instead of one Python call per pair, these work on the code points (or UTF-8 bytes)
of every pair together, as flat numpy arrays:

1. candidate positions: for an overlap, every place in the first string holding the
   second string's first character; for containment, every place holding the needle's
   second character (or every start when the needle nearly fills the haystack);
2. cheap character tests at the span's ends discard most candidates;
3. the survivors are compared directly, 16 characters first (by polynomial hashes mod
   2**64 when the survivors are long and many), and the chosen hit is verified
   character by character; the rare false hash match is recomputed exactly.

The cut position in the raw text (skip leading whitespace, then L characters where a
Java-whitespace run counts as one) is vectorized the same way, on a prefix of each text.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
import pyarrow as pa

from ragframe._text import JAVA_WHITESPACE, MIN_OVERLAP, overlap_length

_GRID_BATCH = 2_000_000
_WS_TABLE = np.zeros(max(map(ord, JAVA_WHITESPACE)) + 2, dtype=bool)
_WS_TABLE[[ord(ch) for ch in JAVA_WHITESPACE]] = True  # the last entry stands for "above"
_BASE = np.uint64(secrets.randbits(64) | 1)
_BASE_INV = np.uint64(pow(int(_BASE), -1, 2**64))

I64 = npt.NDArray[np.int64]
U32 = npt.NDArray[np.uint32]
Codes = npt.NDArray[Any]
"""Code points (uint32) or UTF-8 bytes (uint8): the span kernels work on either."""
U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]


def utf8(texts: pl.Series) -> tuple[npt.NDArray[np.uint8], I64]:
    """UTF-8 bytes of all strings, concatenated, and each string's start offset.

    Nulls count as empty strings. Offsets have ``len(texts) + 1`` entries.
    """
    arr = texts.fill_null("").to_arrow()
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = arr.cast(pa.large_string())
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    if len(arr) == 0 or arr.buffers()[2] is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(len(arr) + 1, dtype=np.int64)
    data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data, offsets - offsets[0]


def codepoints(texts: pl.Series) -> tuple[U32, I64]:
    """Code points of all strings, concatenated, and each string's start offset.

    Nulls count as empty strings. Offsets have ``len(texts) + 1`` entries.
    """
    data, _ = utf8(texts)
    lengths = texts.fill_null("").str.len_chars().to_numpy().astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    codes = np.frombuffer(data.tobytes().decode("utf-8").encode("utf-32-le"), dtype=np.uint32)
    return codes, offsets


_POWERS: list[U64] = [np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64)]


def _power_tables(n: int) -> tuple[U64, U64]:
    """``B**k`` and ``B**-k`` for k in 0..n, computed once and grown by doubling."""
    if len(_POWERS[0]) <= n:
        size = max(n + 1, 2 * len(_POWERS[0]))
        for i, base in enumerate((_BASE, _BASE_INV)):
            table = np.empty(size, dtype=np.uint64)
            table[0] = 1
            np.cumprod(np.full(size - 1, base, dtype=np.uint64), out=table[1:])
            _POWERS[i] = table
    return _POWERS[0], _POWERS[1]


def _prefix_hashes(codes: Codes) -> tuple[U64, U64]:
    """Prefix sums ``S[k] = sum(c[j] * B**-j for j < k)`` and powers ``P[k] = B**k``."""
    n = len(codes)
    powers, inv = _power_tables(n)
    sums = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(codes * inv[:n], out=sums[1:])
    return sums, powers


def _hash(sums: U64, powers: U64, start: I64, length: I64) -> U64:
    """Position-independent hash of ``codes[start:start+length]`` for many slices."""
    diff: U64 = sums[start + length] - sums[start]
    return diff * powers[start]


def _grid(pairs: I64, top: I64) -> tuple[I64, I64]:
    """Entries (pair, L) for L from ``top`` down to MIN_OVERLAP, pairs in order."""
    counts = top[pairs] - MIN_OVERLAP + 1
    owner = np.repeat(pairs, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    length = top[owner] - (np.arange(len(owner), dtype=np.int64) - first)
    return owner, length


def _batches(rows: I64, cost: I64) -> list[I64]:
    """Split ``rows`` into consecutive batches of about ``_GRID_BATCH`` grid entries."""
    batch_of = (np.cumsum(cost) - 1) // _GRID_BATCH
    return np.split(rows, np.flatnonzero(np.diff(batch_of)) + 1)


def overlap_lengths(existing: pl.Series, following: pl.Series) -> I64:
    """For each pair, the largest L >= 20 with ``existing[-L:] == following[:L]``, else 0.

    Both series hold already-normalized text; nulls count as empty.
    """
    top = np.minimum(
        existing.fill_null("").str.len_chars().to_numpy(),
        following.fill_null("").str.len_chars().to_numpy(),
    ).astype(np.int64)
    result = np.zeros(len(top), dtype=np.int64)
    rows = np.flatnonzero(top >= MIN_OVERLAP)
    if len(rows):
        for batch in _batches(rows, top[rows] - MIN_OVERLAP + 1):
            result[batch] = _overlap_batch(existing.gather(batch), following.gather(batch))
    return result


def _anchors(codes: Codes, off: I64, first: Codes) -> tuple[I64, I64]:
    """(row, position) of every character in row's text equal to ``first[row]``."""
    owner = np.repeat(np.arange(len(off) - 1, dtype=np.int64), np.diff(off))
    pos = np.flatnonzero(codes == first[owner])
    return owner[pos], pos


def _same_spans(
    a: Codes, a_start: I64, b: Codes, b_start: I64, length: I64
) -> npt.NDArray[np.bool_]:
    """Span equality. The first 16 characters are compared directly (most unequal spans
    stop there); the rest directly when short in total, else by hash."""
    same = _equal_spans(a, a_start, b, b_start, np.minimum(length, 16))
    rows = np.flatnonzero(same & (length > 16))
    rest = length[rows] - 16
    if rest.sum() <= len(a) + len(b):
        same[rows] = _equal_spans(a, a_start[rows] + 16, b, b_start[rows] + 16, rest)
    else:
        a_sums, a_pow = _prefix_hashes(a)
        b_sums, b_pow = _prefix_hashes(b)
        same[rows] = _hash(a_sums, a_pow, a_start[rows], length[rows]) == _hash(
            b_sums, b_pow, b_start[rows], length[rows]
        )
    return same


def _overlap_batch(existing: pl.Series, following: pl.Series) -> I64:
    e_codes, e_off = codepoints(existing)
    n_codes, n_off = codepoints(following)
    top = np.minimum(np.diff(e_off), np.diff(n_off))
    # an overlap of length L starts where existing holds following's first character
    owner, start = _anchors(e_codes, e_off, n_codes[n_off[:-1]])
    length = e_off[owner + 1] - start
    n_start = n_off[owner]
    keep = (length >= MIN_OVERLAP) & (length <= top[owner])
    keep[keep] = (
        e_codes[start[keep] + length[keep] - 1] == n_codes[n_start[keep] + length[keep] - 1]
    )
    owner, start, length, n_start = owner[keep], start[keep], length[keep], n_start[keep]
    same = _same_spans(e_codes, start, n_codes, n_start, length)
    owner, length = owner[same], length[same]
    # anchors are ordered by pair, then by position (decreasing L): the first one wins
    first = np.concatenate(([True], owner[1:] != owner[:-1])) if len(owner) else owner > 0
    result = np.zeros(len(top), dtype=np.int64)
    result[owner[first]] = length[first]
    _verify(result, e_codes, e_off, n_codes, n_off, existing, following)
    return result


def _verify(
    result: I64,
    e_codes: U32,
    e_off: I64,
    n_codes: U32,
    n_off: I64,
    existing: pl.Series,
    following: pl.Series,
) -> None:
    """Check each hashed match character by character; recompute false ones exactly."""
    pairs = np.flatnonzero(result)
    length = result[pairs]
    good = _equal_spans(e_codes, e_off[pairs + 1] - length, n_codes, n_off[pairs], length)
    for pair in pairs[~good]:  # a 64-bit hash collision: practically never
        result[pair] = overlap_length(existing[int(pair)] or "", following[int(pair)] or "")


def cut_positions(texts: pl.Series, units: I64) -> I64:
    """Position in each raw text after ``units`` characters, the seed's way.

    Leading Java whitespace is skipped first; then each non-whitespace character and
    each whitespace run counts as one character. Past the end, the text's length.
    Only a prefix of each text is scanned (the overlap is usually a fraction of the
    chunk); the rare text whose whitespace runs reach past it is scanned whole.
    """
    filled = texts.fill_null("")
    lengths = filled.str.len_chars().to_numpy().astype(np.int64)
    take = np.minimum(lengths, 2 * units + 64)
    heads = filled.to_frame("t").select(pl.col("t").str.slice(0, pl.Series(take))).to_series()
    pos, found = _cut_positions(heads, units)
    redo = np.flatnonzero(~found & (take < lengths))
    if len(redo):
        pos[redo] = _cut_positions(filled.gather(redo), units[redo])[0]
    return pos


def _cut_positions(texts: pl.Series, units: I64) -> tuple[I64, npt.NDArray[np.bool_]]:
    """:func:`cut_positions` over whole texts; also whether the position is inside."""
    codes, off = codepoints(texts)
    n = len(off) - 1
    lengths = np.diff(off)
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    ws = _WS_TABLE[np.minimum(codes, len(_WS_TABLE) - 1)]
    at_start = np.zeros(len(codes), dtype=bool)
    at_start[off[:-1][lengths > 0]] = True
    prev_ws = np.concatenate(([False], ws[:-1])) & ~at_start
    non_ws_seen = np.cumsum(~ws)
    before = np.concatenate(([0], non_ws_seen))[off[:-1]]
    leading: npt.NDArray[np.bool_] = (non_ws_seen - before[owner]) == 0
    unit_start = (~ws | ~prev_ws) & ~leading
    starts = np.flatnonzero(unit_start)
    per_text = np.bincount(owner[starts], minlength=n)
    first_unit = np.concatenate(([0], np.cumsum(per_text)))[:-1]
    inside = units < per_text
    pos = lengths.copy()
    pos[inside] = starts[first_unit[inside] + units[inside]] - off[:-1][inside]
    return pos, inside


def contains(
    haystacks: pl.Series, needles: pl.Series, *, words: bool = False
) -> npt.NDArray[np.bool_]:
    """Row-wise ``needle in haystack`` for many pairs at once (nulls: False).

    With ``words``, only occurrences between spaces or the text's ends count: the same
    as ``" " + needle + " " in " " + haystack + " "``, without building those strings.

    Same technique as :func:`overlap_lengths`: every start position of every pair is a
    grid entry, filtered by first and last character, compared by hash, and each hit
    verified character by character. Needles of chunk size in chunks of similar size
    make a tiny grid; unlike Polars' literal ``str.contains`` there is no per-row regex
    to compile and no pattern size limit.
    """
    valid = (haystacks.is_not_null() & needles.is_not_null()).to_numpy()
    h_len = haystacks.fill_null("").str.len_bytes().to_numpy().astype(np.int64)
    n_len = needles.fill_null("").str.len_bytes().to_numpy().astype(np.int64)
    empty = n_len == 0
    if words:  # "  " in " " + haystack + " "
        hay = haystacks.fill_null("")
        blank = (hay == "") | hay.str.starts_with(" ") | hay.str.ends_with(" ")
        empty &= (blank | hay.str.contains("  ", literal=True)).to_numpy()
    result: npt.NDArray[np.bool_] = valid & empty
    rows = np.flatnonzero(valid & (n_len > 0) & (n_len <= h_len))
    if len(rows):
        for batch in _batches(rows, h_len[rows] + n_len[rows]):
            result[batch] = _contains_batch(haystacks.gather(batch), needles.gather(batch), words)
    return result


def _contains_batch(haystacks: pl.Series, needles: pl.Series, words: bool) -> npt.NDArray[np.bool_]:
    # on UTF-8 bytes: a valid UTF-8 needle can only match at a character boundary
    h_codes, h_off = utf8(haystacks)
    n_codes, n_off = utf8(needles)
    n_len = np.diff(n_off)
    slack = np.diff(h_off) - n_len + 1
    if 8 * slack.sum() < len(h_codes):  # needles nearly as long as their haystacks
        owner, pos = _grid_positions(slack)
        start = h_off[owner] + pos
    else:  # anchor on the needle's second character (padded needles start with a space)
        k = np.minimum(n_len - 1, 1)
        owner, start = _anchors(h_codes, h_off, n_codes[n_off[:-1] + k])
        start -= k[owner]
    length = n_len[owner]
    keep = (start >= h_off[owner]) & (start + length <= h_off[owner + 1])
    keep[keep] = (
        h_codes[start[keep] + length[keep] - 1] == n_codes[n_off[owner[keep]] + length[keep] - 1]
    )
    if words:
        sure = np.flatnonzero(keep)
        keep[sure] = _between_spaces(h_codes, h_off, owner[sure], start[sure], length[sure])
    owner, start, length = owner[keep], start[keep], length[keep]
    same = _same_spans(h_codes, start, n_codes, n_off[owner], length)
    owner, start = owner[same], start[same]
    first = np.concatenate(([True], owner[1:] != owner[:-1])) if len(owner) else owner > 0
    found = np.zeros(len(n_len), dtype=bool)
    hit_rows, hit_starts = owner[first], start[first]
    found[hit_rows] = _equal_spans(h_codes, hit_starts, n_codes, n_off[hit_rows], n_len[hit_rows])
    for row in hit_rows[~found[hit_rows]]:  # a hash collision: recheck exactly
        hay, nee = haystacks[int(row)] or "", needles[int(row)] or ""
        found[row] = f" {nee} " in f" {hay} " if words else nee in hay
    return found


def _between_spaces(codes: Codes, off: I64, owner: I64, start: I64, length: I64) -> Bools:
    """Whether each span starts and ends at a space or at its text's ends."""
    end = start + length
    before = start == off[owner]
    before[~before] = codes[start[~before] - 1] == 0x20
    after = end == off[owner + 1]
    after[~after] = codes[end[~after]] == 0x20
    both: Bools = before & after
    return both


def _grid_positions(counts: I64) -> tuple[I64, I64]:
    """Entries (row, position) for positions 0 .. counts-1 of each row."""
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.arange(len(owner), dtype=np.int64) - first


def _equal_spans(
    a: Codes, a_start: I64, b: Codes, b_start: I64, length: I64
) -> npt.NDArray[np.bool_]:
    """Whether ``a[a_start:+length] == b[b_start:+length]`` for each span, directly."""
    owner, step = _grid_positions(length)
    differ = a[a_start[owner] + step] != b[b_start[owner] + step]
    mismatches = np.bincount(owner, weights=differ, minlength=len(length))
    same: npt.NDArray[np.bool_] = mismatches == 0
    return same


def _contains_kernel(words: bool) -> Callable[[pl.Series], pl.Series]:
    def kernel(batch: pl.Series) -> pl.Series:
        parts = batch.struct.unnest()
        found = contains(parts["haystack"], parts["needle"], words=words)
        missing = (parts["haystack"].is_null() | parts["needle"].is_null()).to_numpy()
        return pl.Series(batch.name, found, dtype=pl.Boolean).set(pl.Series(missing), None)

    return kernel


def contains_expr(haystack: pl.Expr, needle: pl.Expr, *, words: bool = False) -> pl.Expr:
    """Row-wise ``needle in haystack`` as an expression (null if either is null); with
    ``words``, the needle must sit between spaces or the haystack's ends."""
    return pl.struct(haystack.alias("haystack"), needle.alias("needle")).map_batches(
        _contains_kernel(words), return_dtype=pl.Boolean, is_elementwise=True
    )
