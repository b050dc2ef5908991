"""Progress of a dataset run, drawn by ``tqdm``: rows done of all, the partition, the
stage's own counts, elapsed and remaining time.

``progress=None`` (the default) shows it where someone watches: on a terminal (standard
error), or as a widget in a notebook (``tqdm.auto``); it is off when standard error is
not a terminal (a log, a pipe, a test). ``True`` shows it anyway, ``False`` never.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from tqdm.auto import tqdm


class Progress:
    """A bar over ``total`` rows (None: unknown) in ``partitions`` partitions."""

    def __init__(
        self, what: str, total: int | None, partitions: int, unit: str, shown: bool | None
    ) -> None:
        self.partitions, self.done = partitions, 0
        self.bar: Any = tqdm(
            total=total,
            desc=what,
            unit=unit,
            unit_scale=True,
            dynamic_ncols=True,
            disable=None if shown is None else not shown,
        )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.bar.close()

    def advance(self, rows: int, **counts: int) -> None:
        """One more partition done: its ``rows``; ``counts`` are the totals so far."""
        self.done += 1
        shown = {"partition": f"{self.done}/{self.partitions}"}
        shown.update({name: f"{value:,}" for name, value in counts.items()})
        self.bar.set_postfix(shown, refresh=False)
        self.bar.update(rows)
