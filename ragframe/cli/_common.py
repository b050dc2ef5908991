"""Helpers shared by the CLI's subcommands: one-line errors, collecting, writing."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import polars as pl

from ragframe import io
from ragframe.errors import RagframeError


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an error (Polars appends its plan context below)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


@contextmanager
def one_line_errors(source: str) -> Iterator[None]:
    """Turn any failure while reading or processing ``source`` into a one-line error."""
    try:
        yield
    except RagframeError as exc:  # raised inside a plan: keep its class, drop the context
        raise type(exc)(first_line(exc)) from exc
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(f"cannot process {source}: {first_line(exc)}") from exc


def collect(plans: Callable[[], list[pl.LazyFrame]], source: str) -> list[pl.DataFrame]:
    """Build the ``plans`` and collect them together, with :func:`one_line_errors`."""
    with one_line_errors(source):
        return pl.collect_all(plans())


def write(result: pl.DataFrame, path: str) -> None:
    """Write atomically; an unwritable target is a RagframeError, not a traceback."""
    try:
        io.write_table(result, path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(f"cannot write {path}: {first_line(exc)}") from exc


def add_output(parser: argparse.ArgumentParser) -> None:
    """The ``-o/--output`` option every subcommand has."""
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output table, written atomically; the format comes from the extension "
        "(.parquet, .arrow, .csv, .jsonl)",
    )
