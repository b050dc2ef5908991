"""A run's input and output off the main thread: the next partition is read and the
last one written while the current one is processed.

Reading a partition (a Parquet scan), processing it and writing its output (Parquet
encoding and compression) each spend stretches on one core; done one after the other,
a two-core machine idles through much of the reading and writing. One background
thread takes them in order: it writes partition ``k - 1``, then reads partition
``k + 1``, while the main thread processes partition ``k`` (Polars' collect, Arrow's
writer and the compiled kernels all release the GIL). At most one output waits to be
written and one input is read ahead, so memory stays flat: about one partition more.
The output is written in partition order, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class Behind:
    """One background thread doing reads and writes in the order they are asked for.

    Example:
        >>> written = []
        >>> with Behind() as behind:
        ...     for rows in behind.read_ahead([k] * 2 for k in range(3)):
        ...         behind.write(written.append, sum(rows))
        >>> written
        [0, 2, 4]
    """

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="ragframe-io")
        self.writing: Future[Any] | None = None

    def __enter__(self) -> Behind:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        """Wait for the work under way (a write that fails raises here, unless an error
        is already on its way out); work not yet started is dropped after an error."""
        try:
            if kind is None:
                self.wait()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=kind is not None)

    def wait(self) -> None:
        """Wait for the last write (raising its error)."""
        writing, self.writing = self.writing, None
        if writing is not None:
            writing.result()

    def write(self, write: Callable[[T], object], piece: T) -> None:
        """``write(piece)`` in the background, once the previous write is done (so at
        most one piece waits)."""
        self.wait()
        self.writing = self.pool.submit(write, piece)

    def read_ahead(self, pieces: Iterable[T]) -> Iterator[T]:
        """The ``pieces`` in order, each read in the background while the previous one
        is being used (a generator's next piece is made on the background thread)."""
        items = iter(pieces)
        reading = self.pool.submit(next, items, _END)
        while (rows := reading.result()) is not _END:
            reading = self.pool.submit(next, items, _END)
            yield rows
            del rows


_END: Any = object()
"""What a finished iterator gives."""
