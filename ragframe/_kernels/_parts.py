"""Running a kernel on all CPUs: parts of whole queries or groups, several per thread."""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ragframe._kernels._compile import I64

PARALLEL_ROWS = 20_000
"""Below this many rows a kernel runs on the calling thread alone; no part is smaller."""
PARTS_PER_THREAD = 8
"""Parts per CPU, taken in turn by one thread per CPU. With one part per CPU, a kernel
waits for its slowest part, and in a dataset run a CPU is shared with the background
writer (and Polars' threads), so one half came in late: on 10M presorted rows, engine /
minimal plan 1.37x and 1.43x with 8 parts per CPU against 1.53x and 1.64x with one
(``benchmarks/bench_scale.py``, alternated). Alone on the machine the two are alike
(``benchmarks/bench_floor.py``: within the noise)."""


_HERE = threading.local()
"""``one``: this thread runs its kernels' parts itself (:func:`one_thread`)."""


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Meanwhile, kernels called on this thread run as one part on it (no pool): for a
    caller that runs several kernel calls at once on threads of its own (halves of the
    queries), where each call's own pool would put two threads on every CPU. The
    kernels release the GIL and share no state between calls, so calls on several
    threads at once are safe."""
    before = getattr(_HERE, "one", False)
    _HERE.one = True
    try:
        yield
    finally:
        _HERE.one = before


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def in_parts(run: Callable[[tuple[int, int]], None], starts: I64, n: int) -> None:
    """Call ``run((lo, hi))`` on parts of ``range(n)`` that begin at ``starts`` (where a
    query or a group begins), :data:`PARTS_PER_THREAD` per CPU, on one thread per CPU at
    once: the kernels release the GIL. On one CPU, or within :func:`one_thread`, one
    part on the calling thread.

    A fresh pool per call: cheap next to the work, and safe after ``fork``.
    """
    threads = _threads()
    if threads == 1 or getattr(_HERE, "one", False):  # one part: the same results
        run((0, n))
        return
    parts = min(threads * PARTS_PER_THREAD, max(1, n // PARALLEL_ROWS))
    at = np.searchsorted(starts, np.arange(1, parts) * n // parts)
    cuts = starts[np.minimum(at, len(starts) - 1)] if len(starts) else starts
    bounds = np.unique(np.concatenate([[0], cuts, [n]])).tolist()
    pieces = list(itertools.pairwise(bounds))
    if len(pieces) <= 1:
        run((0, n))
        return
    with ThreadPoolExecutor(min(threads, len(pieces))) as pool:
        for done in [pool.submit(run, piece) for piece in pieces]:
            done.result()
