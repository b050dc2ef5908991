"""What every engine shares on the driver: the engines' imports (lazy, with
an error naming the extra), Parquet sources cut into pieces, the row positions that keep
the input order through a shuffle, and the choice between broadcasting a store and
joining it by key."""

from __future__ import annotations

import glob
import importlib
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeAlias

import polars as pl
import pyarrow as pa

from ragframe import schema as c
from ragframe.driver import _remote
from ragframe.errors import ConfigError, RagframeError
from ragframe.io._sources import walk
from ragframe.io._unreadable import check_footers, naming, unreadable
from ragframe.partition import ROWS_PER_PARTITION

POS = c.TMP + "pos"
"""A row's input position, ``piece << 32 | row``: sorting a partition by it restores the
input order of its rows (ties in the ranking are broken by input order, SPEC 1)."""
PART = c.TMP + "part"
"""The partition (:func:`ragframe.partition.bucket`) of a row's query (or document)."""
ENTITY, CHUNK, STORE_POS = c.TMP + "e", c.TMP + "c", c.TMP + "spos"
"""The chunk store's join key (entity, chunk index) and a store row's own position."""
TEMPORARY = (POS, PART, ENTITY, CHUNK, STORE_POS)

BROADCAST_LIMIT = 256 * 2**20
"""A store (chunks or documents) up to this many bytes in memory (Arrow) is broadcast:
one copy per worker, every partition reads it there. A larger one is joined by key: only
the rows each partition needs travel, by the engine's shuffle."""
PathLike: TypeAlias = str | os.PathLike[str]
Source: TypeAlias = PathLike | Sequence[PathLike]


def require(module: str, extra: str) -> ModuleType:
    """``module`` imported, or a :class:`ConfigError` naming the extra that installs it.

    Example:
        >>> require("polars", "dask").__name__
        'polars'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"the {extra} engine needs {module!r}: pip install 'ragframe[{extra}]' ({exc})"
        ) from None


def is_path(source: Any) -> bool:
    """Whether ``source`` names Parquet files (a path, a glob, a folder, or a list)."""
    if isinstance(source, str | os.PathLike):
        return True
    return isinstance(source, list | tuple) and all(
        isinstance(s, str | os.PathLike) for s in source
    )


def parquet_files(source: Source) -> list[str]:
    """The Parquet files of ``source``, in the order :func:`polars.scan_parquet` reads
    them: a file; a glob or a folder (its ``*.parquet`` files, recursively, sorted,
    walked as a local input is: hidden names skipped, folders behind links followed,
    a link loop or a broken link refused); or a list of these, in the list's order.
    A URI (``s3://...``) is listed on its filesystem (:mod:`._remote`), alike.

    Example:
        >>> parquet_files([])
        Traceback (most recent call last):
        ...
        ragframe.errors.RagframeError: no Parquet files in []; expected a file, folder or glob
    """
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    files: list[str] = []
    remote = []
    for item in [os.fspath(_remote.local(i)) for i in items]:
        if _remote.is_remote(item):  # listed here; each worker reads its own pieces
            found = _remote.files(item)
            files += found
            remote += found
            continue
        refuse_hive(item)
        if Path(item).is_dir():  # walked as a local input is: links followed, loops refused
            files += sorted(str(f) for f in walk(Path(item), item) if f.suffix == ".parquet")
        elif glob.has_magic(item):
            files += sorted(glob.glob(item, recursive=True))
        elif Path(item).is_file():
            files.append(item)
        else:
            raise RagframeError(f"input not found: {item}; expected a Parquet file, folder or glob")
    if not files:
        raise RagframeError(
            f"no Parquet files in {[os.fspath(i) for i in items]}; expected a file, folder or glob"
        )
    check_footers([f for f in files if not _remote.is_remote(f)])  # a truncated file
    _remote.footers(remote)  # fails here, named, before any work
    return files


def refuse_hive(source: PathLike, what: str = "input") -> None:
    """Raise unless the folder ``source`` (anything else passes) is free of hive
    partitions (``key=value`` folders): an engine reads each Parquet file as it is, so
    the columns those folder names hold would be lost."""
    if _remote.is_remote(source):
        given = os.fspath(source)
        if not glob.has_magic(given):
            _remote.files(given, what)
        return
    root = Path(source)
    if not root.is_dir():
        return
    for folder, dirs, _ in os.walk(root):
        hive = sorted(d for d in dirs if "=" in d and not d.startswith((".", "_")))
        if hive:
            raise RagframeError(
                f"{what} {os.fspath(source)} is a hive dataset ({Path(folder, hive[0])}): an "
                "engine reads each Parquet file as it is, without the columns its folder "
                "names hold; write the input without partition folders, or run locally "
                "(--engine local reads hive partitions)"
            )


def parquet_rows(files: Sequence[str]) -> list[int]:
    """Each file's row count, from its footer."""
    return [_footer(f).num_rows for f in files]


def _footer(path: str) -> Any:
    import pyarrow.parquet as pq

    return _remote.metadata(path) if _remote.is_remote(path) else pq.ParquetFile(path).metadata


def parquet_schema(path: str) -> Mapping[str, Any]:
    """The Polars schema of one Parquet file (local or remote), from its footer."""
    return _remote.schema(path) if _remote.is_remote(path) else pl.read_parquet_schema(path)


def parquet_empty(path: str) -> pa.Table:
    """An empty Arrow table of one Parquet file's schema (from its footer)."""
    return pl.DataFrame(schema=parquet_schema(path)).to_arrow()


@dataclass(frozen=True)
class ParquetInput:
    """Parquet files as an engine's input, one piece each: the files in read order,
    each one's row count (from the footers) and a piece's schema through ``keyed``."""

    files: list[str]
    rows: list[int]
    schema: pa.Schema

    @property
    def count(self) -> int:
        return sum(self.rows)


def parquet_input(source: Source, keyed: Callable[[pa.Table, int], pa.Table]) -> ParquetInput:
    """``source``'s files (:func:`parquet_files`), their rows and a keyed piece's schema,
    read from the footers on the driver (the engines read the rows on the workers)."""
    files = parquet_files(source)
    return ParquetInput(files, parquet_rows(files), keyed(parquet_empty(files[0]), 0).schema)


def read_parquet(path: str) -> pa.Table:
    """One Parquet file (on a worker; a remote one read with the worker's own
    credentials): a damaged one is an error naming it."""
    if _remote.is_remote(path):
        return _remote.read(path).to_arrow()
    try:
        return pl.read_parquet(path).to_arrow()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise unreadable(path, exc) from exc


def read_piece(path: str, number: int) -> pa.Table:
    """Piece ``number`` of the input (one Parquet file) with :data:`POS`."""
    return positioned(read_parquet(path), number)


def positioned(table: pa.Table, number: int) -> pa.Table:
    """``table`` (piece ``number`` of the input) with :data:`POS` added."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    if frame.height >= 2**32:
        raise ConfigError(f"an input piece has {frame.height:,} rows; at most 2**32 - 1")
    index = pl.int_range(pl.len(), dtype=pl.Int64) + (number << 32)
    return frame.with_columns(index.alias(POS)).to_arrow()


def partition_count(rows: int | None, pieces: int, workers: int) -> int:
    """Partitions for ``rows`` input rows (or, unknown, as many as input pieces), a
    multiple of the workers so every worker gets the same number.

    Example:
        >>> partition_count(10_000_000, 8, 2)
        6
    """
    wanted = math.ceil(rows / ROWS_PER_PARTITION) if rows is not None else pieces
    per_worker = max(1, math.ceil(max(wanted, 1) / max(workers, 1)))
    return per_worker * max(workers, 1)


def store_bytes(store: Any) -> int | None:
    """A store's size in memory (Arrow), or ``None`` when only the engine knows it (an
    engine frame: such a store is joined by key unless ``broadcast=True``)."""
    if isinstance(store, pl.LazyFrame):
        return None
    if isinstance(store, pl.DataFrame):
        return int(store.estimated_size())
    if isinstance(store, pa.Table):
        return int(store.nbytes)
    if is_path(store):
        meta = [_footer(f) for f in parquet_files(store)]
        return int(
            sum(m.row_group(i).total_byte_size for m in meta for i in range(m.num_row_groups))
        )
    return None


def broadcast_store(store: Any, broadcast: bool | None) -> bool:
    """Whether ``store`` is broadcast: as asked, else when :func:`store_bytes` is at most
    :data:`BROADCAST_LIMIT`."""
    if broadcast is not None:
        return broadcast
    size = store_bytes(store)
    return size is not None and size <= BROADCAST_LIMIT


def local_table(store: Any) -> pa.Table:
    """A store the driver holds (frame, Arrow table or Parquet files) as one Arrow table."""
    if isinstance(store, pa.Table):
        return store
    if isinstance(store, pl.LazyFrame):
        return store.collect().to_arrow()
    if isinstance(store, pl.DataFrame):
        return store.to_arrow()
    if is_path(store):
        files = parquet_files(store)
        if any(_remote.is_remote(f) for f in files):
            read = [_remote.read(f) if _remote.is_remote(f) else pl.read_parquet(f) for f in files]
            return pl.concat(read).to_arrow()
        with naming(files):
            return pl.scan_parquet(files).collect().to_arrow()
    raise ConfigError(f"cannot broadcast a store of type {type(store).__name__}")


def one_input(candidates: Any, blocks: Any) -> tuple[Any, bool]:
    """Evaluate's one input on an engine, and whether it is blocks."""
    if (candidates is None) == (blocks is None):
        raise ConfigError(
            "evaluate on an engine takes candidates or blocks, one of them; got "
            + ("both" if candidates is not None else "neither")
        )
    return (blocks, True) if blocks is not None else (candidates, False)


def offsets_of(chunks: Any) -> pa.Table | None:
    """The chunk store's offsets (no text), for ``duplicate_chars``: broadcast."""
    if chunks is None:
        return None
    table = pl.from_arrow(local_table(chunks))
    assert isinstance(table, pl.DataFrame)
    names = (c.ENTITY_ID, c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR)
    return table.select(n for n in names if n in table.columns).to_arrow()


def config_of(config: Any, kind: type) -> Any:
    """``config`` as a ``kind`` (a config, a mapping of its fields, or ``None``)."""
    if isinstance(config, kind):
        return config
    if config is None or isinstance(config, Mapping):
        return kind(**(config or {}))
    raise ConfigError(f"expected a {kind.__name__} or a mapping, got {type(config).__name__}")


def evaluate_options(
    k: Any, max_blocks: Any, max_characters: Any, max_tokens: Any, ties: Any
) -> dict[str, Any]:
    """The options of :func:`ragframe.evaluate` an engine passes to every partition."""
    return {
        "k": k,
        "max_blocks": max_blocks,
        "max_characters": max_characters,
        "max_tokens": max_tokens,
        "ties": ties,
    }
