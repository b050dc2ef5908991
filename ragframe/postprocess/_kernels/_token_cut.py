"""Rule 10's truncation in tokens, in place: each text over the budget cut to the
longest prefix whose rule-10 cut and trim counts within it (``cl100k_base`` on ASCII
text, counted by :mod:`ragframe.tokens._kernels`)."""

from __future__ import annotations

import numpy as np

from ragframe._kernels._buffers import text_at
from ragframe._kernels._compile import I64, U8, ZERO, compiled, internal
from ragframe.postprocess._kernels._text import budget_cut, trimmed
from ragframe.tokens._kernels._bpe import is_ascii
from ragframe.tokens._kernels._count import Cache, Vocab, count_tail, new_scratch, no_pieces


@internal
def cut_trimmed(data: U8, limit: int, window: int) -> tuple[int, int]:
    """Rule 10's cut of ``data`` at ``limit`` code points (fewer than it has,
    :func:`~._text.budget_cut`), then Java-trimmed: the bytes ``[start, end)`` kept."""
    return trimmed(data, ZERO, budget_cut(data, limit, window))


@compiled
def truncations(
    address: I64, length: I64, limit: int, window: int, vocab: Vocab, cache: Cache, out: I64
) -> None:
    """Rule 10's truncation in tokens of each text (read in place; its count over
    ``limit``), exactly as :func:`ragframe.postprocess._token_budget._truncate` does it:
    ``out[t]`` is the kept text's first byte, ``out[n + t]`` its end and ``out[2n + t]``
    its count (-1 for a text not ASCII, where bytes are not code points, or with a piece
    over :data:`LONG_PIECE` bytes).

    1. The longest prefix by bisection over lengths: ``lo = 0``, ``hi = len``, the
       middle prefix's count ``<= limit`` -> ``lo``, else ``hi``, until ``hi - lo == 1``.
       A prefix is counted from the text's own pieces: the prefix's pieces but its
       last are the text's (as in :func:`count_tail`); its last starts at the start of
       the text's piece holding its last byte, or earlier, at the first of the
       blank-only pieces right before that one (a blank run cut by the prefix's end is
       one piece), so the prefix counts the text's pieces before that, plus what it has
       from there on: at least one token and at most one a byte, so only a probe those
       bounds leave open is counted.
    2. Rule 10's cut (its look-back ``window``) and trim of that prefix
       (:func:`cut_trimmed`), counted.
    3. Where the trim made it count more (a leading space off re-tokenizes the first
       word), the same bisection over ``[0, lo]`` on the cut and trimmed texts."""
    n_texts = len(address)
    longest = 1
    for t in range(n_texts):
        longest = max(longest, length[t])
    scratch = new_scratch(longest)
    record = (
        np.empty(longest + 1, dtype=np.int64),
        np.empty(longest + 1, dtype=np.int64),
        np.empty(longest + 1, dtype=np.bool_),
    )
    starts, before, blank = record
    nothing = no_pieces()
    for t in range(n_texts):
        data = text_at(address, length, t)
        if not is_ascii(data):
            out[t], out[n_texts + t], out[2 * n_texts + t] = 0, 0, -1
            continue
        n = len(data)
        whole = count_tail(data, ZERO, n, vocab, scratch, cache, record)[0]
        if whole < 0:  # a long piece: tiktoken's
            out[t], out[n_texts + t], out[2 * n_texts + t] = 0, 0, -1
            continue
        m = 0  # the pieces recorded
        while starts[m] < n:
            m += 1
        lo, hi = 0, n
        while hi - lo > 1:
            mid = (lo + hi) // 2
            a, b = 0, m - 1  # the last piece starting before byte mid
            while a < b:
                h = (a + b + 1) // 2
                if starts[h] <= mid - 1:
                    a = h
                else:
                    b = h - 1
            r = a
            while r > 0 and blank[r - 1]:
                r -= 1
            if before[r] + mid - starts[r] <= limit:
                fits = True
            elif before[r] + 1 > limit:
                fits = False
            else:
                tail = count_tail(data, starts[r], mid, vocab, scratch, cache, nothing)[0]
                fits = before[r] + tail <= limit
            if fits:
                lo = mid
            else:
                hi = mid
        a, b = cut_trimmed(data, lo, window)
        count = count_tail(data, a, b, vocab, scratch, cache, nothing)[0]
        if count > limit:  # the trim re-tokenized: the longest cut that fits
            low, high = 0, lo
            while high - low > 1:
                mid = (low + high) // 2
                x, y = cut_trimmed(data, mid, window)
                probe = count_tail(data, x, y, vocab, scratch, cache, nothing)[0]
                if probe <= limit:
                    low = mid
                else:
                    high = mid
            a, b = cut_trimmed(data, low, window)
            count = count_tail(data, a, b, vocab, scratch, cache, nothing)[0]
        out[t], out[n_texts + t], out[2 * n_texts + t] = a, b, count
