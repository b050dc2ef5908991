"""A merged block's text from its rows' pieces (:func:`ragframe.postprocess._kernels.
_merge.merge`): a piece appended (:func:`append_piece`), a byte range of the text
(:func:`block_range`, which the writer and the cut read), and rule 10's cut of a first
block longer than the budget, where the seed cuts it (at the last Java whitespace
before the limit, then Java-trimmed), as the bytes of its text to write
(:func:`write_blocks`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ragframe._kernels._ahead import sample
from ragframe._kernels._buffers import copy_bytes, text_at
from ragframe._kernels._compile import I64, U8, ZERO, compiled, frozen, internal
from ragframe._kernels._parts import in_parts
from ragframe.postprocess._kernels._text import budget_cut, code_points, trimmed


class Texts(NamedTuple):
    """Which bytes of which blocks to write: block ``k`` is the rows
    ``first[k]:stop[k]`` (merge order), written from its byte ``skip[k]``, ``take[k]``
    bytes (for a truncated block, rule 10's cut)."""

    first: I64
    stop: I64
    skip: I64
    take: I64


@internal
def append_piece(text: U8, used: int, data: U8, cut: int, end: int) -> int:
    """Write a row's part of its block after the block's ``used`` bytes of ``text``:
    ``data[cut:end]``, or with ``cut`` -1, "\n" and all of it. The block's new end."""
    if cut < 0:
        text[used] = 10
        used += 1
        cut = 0
    copy_bytes(data[cut:end], text[used:])
    return used + end - cut


@internal
def block_range(
    address: I64, length: I64, piece: I64, rows: tuple[int, int], skip: int, out: U8
) -> None:
    """Bytes ``skip:skip + len(out)`` of the text of the block made of the rows
    ``rows[0]:rows[1]`` (each adding its ``piece``: see :func:`~._merge._merge`), into ``out``."""
    end = skip + len(out)
    at = ZERO  # the block text's byte where the next row's part starts
    w = 0
    for r in range(rows[0], rows[1]):
        if at >= end:
            break
        cut = piece[r]
        if cut < 0:
            if at >= skip:
                out[w] = 10
                w += 1
            at += 1
            cut = 0
        data = text_at(address, length, r)
        a, b = max(at, skip), min(at + len(data) - cut, end)
        if a < b:
            copy_bytes(data[cut + a - at : cut + b - at], out[w:])
            w += b - a
        at += len(data) - cut


@compiled
def _write(
    address: I64,
    length: I64,
    piece: I64,
    first: I64,
    stop: I64,
    skip: I64,
    begin: I64,
    part: tuple[int, int],
    out: U8,
) -> None:
    """Write the texts of blocks ``part[0]:part[1]``: block ``k`` (the rows
    ``first[k]:stop[k]``) from its byte ``skip[k]`` into ``out[begin[k]:begin[k + 1]]``."""
    for k in range(part[0], part[1]):
        rows = (first[k], stop[k])
        block_range(address, length, piece, rows, skip[k], out[begin[k] : begin[k + 1]])


def write_blocks(address: I64, length: I64, piece: I64, blocks: Texts) -> tuple[U8, I64]:
    """The texts of ``blocks``, one after another in one buffer of exactly their bytes
    (written on all CPUs), and where each begins (then the end). Inputs reach the
    kernels :func:`~._compile.frozen` (as in :func:`merge` and :func:`truncated`)."""
    begin = np.zeros(len(blocks.take) + 1, dtype=np.int64)
    np.cumsum(blocks.take, out=begin[1:])
    out = np.empty(int(begin[-1]), dtype=np.uint8)

    a, n, p, first, stop, skip = (
        frozen(x, np.int64)
        for x in (address, length, piece, blocks.first, blocks.stop, blocks.skip)
    )
    at = frozen(begin, np.int64)

    def run(part: tuple[int, int]) -> None:
        _write(a, n, p, first, stop, skip, at, part, out)

    m = len(blocks.take)
    in_parts(run, np.arange(m, dtype=np.int64), m)
    return out, begin


@compiled
def _truncations(
    address: I64,
    length: I64,
    piece: I64,
    first: I64,
    stop: I64,
    size: I64,
    limit: int,
    window: int,
) -> tuple[I64, I64, I64]:
    """Rule 10's cut of blocks longer than ``limit`` code points (block ``k``: the rows
    ``first[k]:stop[k]``, ``size[k]`` bytes): the first ``limit`` code points, cut at the
    last Java whitespace among positions ``limit - 1`` down to, not including,
    ``max(0, limit - window)``, then Java-trimmed. Per block: the byte it starts at,
    its bytes and its code points."""
    skip = np.zeros(len(first), dtype=np.int64)
    take = np.zeros(len(first), dtype=np.int64)
    chars = np.zeros(len(first), dtype=np.int64)
    for k in range(len(first)):
        text = np.empty(size[k], dtype=np.uint8)
        block_range(address, length, piece, (first[k], stop[k]), ZERO, text)
        cut = budget_cut(text, limit, window)
        a, b = trimmed(text, ZERO, cut)
        skip[k], take[k], chars[k] = a, b - a, code_points(text, a, b)
    return skip, take, chars


def truncated(
    address: I64, length: I64, piece: I64, blocks: Texts, limit: int, window: int
) -> tuple[Texts, I64]:
    """``blocks`` (``take``: their sizes) cut to ``limit`` code points as rule 10 cuts
    (see :func:`_truncations`), and the code points each keeps."""
    a, n, p, first, stop, size = (
        frozen(x, np.int64)
        for x in (address, length, piece, blocks.first, blocks.stop, blocks.take)
    )
    skip, take, chars = _truncations(a, n, p, first, stop, size, int(limit), int(window))
    return Texts(blocks.first, blocks.stop, skip, take), chars


def runs_of(values: I64, firsts: I64, lengths: I64) -> I64:
    """The runs ``values[firsts[k]:firsts[k] + lengths[k]]``, one after another: each
    block's rows' chunk indexes, blocks in any order (one pass; numpy's index of every
    row and its gather took several).

    Example:
        >>> import numpy as np
        >>> runs_of(np.array([5, 6, 7, 8]), np.array([2, 0]), np.array([1, 2])).tolist()
        [7, 5, 6]
    """
    at, first, size = (frozen(x, np.int64) for x in (values, firsts, lengths))
    out = np.empty(int(size.sum()), dtype=np.int64)  # summed here: see _runs_of
    _runs_of(at, first, size, out)
    return out


@compiled
def _runs_of(values: I64, firsts: I64, lengths: I64, out: I64) -> None:
    """:func:`runs_of` on its inputs as one numba type, into ``out`` (sized by the
    caller: an array's ``sum()`` in compiled code makes every load of the kernel import
    numba's array math, ``numba.np.arraymath``, ~0.2 s of a short run's start)."""
    at = 0
    for k in range(len(firsts)):
        first = firsts[k]
        for i in range(lengths[k]):
            out[at + i] = values[first + i]
        at += lengths[k]


@sample("_runs_of")
def _sample_runs() -> None:
    """Compile the kernel ahead (:mod:`._ahead`)."""
    one = np.ones(1, dtype=np.int64)
    runs_of(one, one - 1, one)
