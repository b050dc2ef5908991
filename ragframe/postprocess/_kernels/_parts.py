"""Running a kernel on all CPUs: parts of whole queries or groups, one per thread."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ragframe.postprocess._kernels._compile import I64

PARALLEL_ROWS = 20_000
"""Below this many rows a kernel runs on the calling thread alone."""


def _threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def in_parts(run: Callable[[tuple[int, int]], None], starts: I64, n: int) -> None:
    """Call ``run((lo, hi))`` on parts of ``range(n)`` that begin at ``starts`` (where a
    query or a group begins), one part per CPU, at once: the kernels release the GIL.

    A fresh pool per call: cheap next to the work, and safe after ``fork``.
    """
    parts = min(_threads(), max(1, n // PARALLEL_ROWS))
    at = np.searchsorted(starts, np.arange(1, parts) * n // parts)
    cuts = starts[np.minimum(at, len(starts) - 1)] if len(starts) else starts
    bounds = np.unique(np.concatenate([[0], cuts, [n]])).tolist()
    pieces = list(itertools.pairwise(bounds))
    if len(pieces) <= 1:
        run((0, n))
        return
    with ThreadPoolExecutor(len(pieces)) as pool:
        for done in [pool.submit(run, piece) for piece in pieces]:
            done.result()
