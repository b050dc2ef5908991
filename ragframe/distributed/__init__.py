"""Adapters for existing distributed engines: :mod:`ragframe.distributed.dask` (the
``ragframe[dask]`` extra) and :mod:`ragframe.distributed.ray` (``ragframe[ray]``).

Both cut the input into partitions of whole queries (for fetch: whole documents'
requests) by the engine's own shuffle, with a documented whole-group guarantee, and run
the partition contract (:mod:`ragframe.partition`) on each: the single-machine code, so
the output equals the single-machine engine's row for row. Neither engine is imported
until one of its functions is called; without it, the call names the extra to install.
"""

from __future__ import annotations
