"""Progress bars, drawn by ``tqdm``, for every stage: a dataset run's rows done of all,
the partition, the stage's own counts, elapsed and remaining time (:class:`Progress`); the
steps of a sweep, an experiment, evaluate or an index build (:func:`steps`).

``progress=None`` (the default) shows it where someone watches: on a terminal (standard
error), or in a Jupyter kernel, whose streams are no terminal but are watched: a widget
there (``tqdm.auto``, with ``ipywidgets``), else text in the cell's output. It is off
when standard error is not a terminal (a log, a pipe, a test). ``True`` shows it anyway,
``False`` never. ``tqdm`` is imported only for a bar that is shown (``tqdm.auto`` imports
``asyncio``: about 30 ms of a short command's start).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython's ZMQ shell is running), not
    a terminal or a terminal IPython."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def disabled(shown: bool | None) -> bool | None:
    """tqdm's ``disable`` for ``shown``: None leaves it to tqdm (off unless standard
    error is a terminal) except in a Jupyter kernel, where the bar is shown."""
    if shown is None:
        return False if in_kernel() else None
    return not shown


class Progress:
    """A bar over ``total`` rows (None: unknown) in ``partitions`` partitions."""

    def __init__(
        self, what: str, total: int | None, partitions: int, unit: str, shown: bool | None
    ) -> None:
        self.partitions, self.done = partitions, 0
        self.bar: Any = _bar(total=total, desc=what, unit=unit, unit_scale=True, shown=shown)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()

    def advance(self, rows: int, **counts: int) -> None:
        """One more partition done: its ``rows``; ``counts`` are the totals so far."""
        self.done += 1
        shown = {"partition": f"{self.done}/{self.partitions}"}
        shown.update({name: f"{value:,}" for name, value in counts.items()})
        self.bar.set_postfix(shown, refresh=False)
        self.bar.update(rows)


class _NoBar:
    """A bar that is not shown (what tqdm does with ``disable=True``)."""

    def update(self, steps: int) -> None:
        """Nothing to show."""

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def _bar(shown: bool | None, **options: Any) -> Any:
    """A tqdm bar, or :class:`_NoBar` where tqdm would draw nothing (``disable``
    True, or None with standard error no terminal), without importing tqdm."""
    disable = disabled(shown)
    if disable is None:
        isatty = getattr(sys.stderr, "isatty", None)
        disable = True if isatty is not None and not isatty() else None  # tqdm's own test
    if disable:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(dynamic_ncols=True, disable=disable, **options)


@contextlib.contextmanager
def steps(what: str, total: int, shown: bool | None) -> Iterator[Any]:
    """A bar over ``total`` steps of one run (``bar.update(1)`` after each): a sweep's
    configurations, evaluate's reading, computing and writing. ``shown`` as for
    :class:`Progress` (None: on a terminal or in a notebook; False: no bar at all)."""
    if shown is False:
        yield _NoBar()
        return
    bar = _bar(total=total, desc=what, unit="step", shown=shown)
    try:
        yield bar
    finally:
        bar.close()
