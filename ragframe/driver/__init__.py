"""One driver for every engine: a stage runs locally, on Dask or on Ray through one code
path (the local engine, :mod:`._local`, runs the dataset entries of :mod:`ragframe.dataset`).

The driver (:func:`run_stage`) plans the partitions (whole queries, or whole documents'
requests for fetch: :mod:`._plan`), decides how the stage's store reaches each
partition (broadcast, joined by key, or bucketed like the rows), checks the input
against an empty partition before any work, and commits the output. An engine
(:class:`Engine`, in :mod:`._engine`) implements only what differs: reading an input
as its own rows, moving rows into partitions, the key join, sharing a table with every
worker, and running the partition function (retrying lost tasks). A stage is one entry
of :data:`STAGES` (:mod:`._stages`): its partition function, what a partition holds
whole, its store, its output order.

Workers write: with an output folder, each partition's output is written by the worker
that computed it into a temporary folder beside the output, which the driver renames
into place when every part is there (:mod:`._commit`; removed on any failure). A file
output is then streamed from the parts one partition at a time.
"""

from __future__ import annotations

from ragframe.driver._engine import Engine, Rows
from ragframe.driver._run import run_stage
from ragframe.driver._stages import STAGES, Stage

__all__ = ["STAGES", "Engine", "Rows", "Stage", "run_stage"]
