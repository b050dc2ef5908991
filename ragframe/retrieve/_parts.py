"""Running a kernel on all CPUs: consecutive parts of a range, one thread per CPU (the
kernels release the GIL)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def threads() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def in_parts(run: Callable[[int, int], None], lo: int, hi: int, per_part: int) -> None:
    """``run(a, b)`` over ``range(lo, hi)`` in parts of ``per_part``, taken in turn by
    one thread per CPU; on the calling thread when there is one part."""
    bounds = [*range(lo, hi, per_part), hi]
    parts = [(a, b) for a, b in itertools.pairwise(bounds) if a < b]
    if len(parts) <= 1:
        for a, b in parts:
            run(a, b)
        return
    with ThreadPoolExecutor(min(threads(), len(parts))) as pool:
        for done in [pool.submit(run, a, b) for a, b in parts]:
            done.result()
