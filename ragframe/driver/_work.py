"""What every worker runs for every stage: the stage's partition function on one
partition and, given a folder, the part written there by this worker."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from ragframe import io
from ragframe.driver._parts import frame
from ragframe.driver._store_files import StoreFiles
from ragframe.errors import RagframeError
from ragframe.io import _filesystems

ROWS = "rows"
"""The one column of what a worker returns after writing its part."""


def part_name(number: int) -> str:
    return f"part-{number:05d}.parquet"


def write_part(table: pa.Table, folder: str, number: int) -> int:
    """Write one partition's part (atomically: a retried task rewrites the same name;
    a remote folder's, uploaded as one object); return its row count. A local
    ``folder`` that is gone is not made again: its run has ended (failed, its folder
    removed by the driver) while this task still ran."""
    if _filesystems.is_remote(folder):
        from ragframe.driver._commit import put_part

        put_part(frame(table), folder, part_name(number))
    else:
        if not os.path.isdir(folder):
            raise RagframeError(f"the parts folder {folder} is gone: its run has ended")
        io.write_table(frame(table), os.path.join(folder, part_name(number)))
    return int(table.num_rows)


def work(
    own: pa.Table,
    side: pa.Table | None,
    number: int,
    *,
    stage: str,
    folder: str | None = None,
    store: Any = None,
    **options: Any,
) -> pa.Table:
    """Partition ``number`` of ``stage``: its rows, the store rows it was given
    (``side``: joined or bucketed) or the broadcast ``store``; written to ``folder``
    when given (a one-row count returned instead)."""
    from ragframe.driver._stages import STAGES

    if isinstance(store, StoreFiles):
        store = store.table()
    out = STAGES[stage].piece(own, side if side is not None else store, **options)
    if folder is None:
        return out
    return pa.table({ROWS: [write_part(out, folder, number)]})
