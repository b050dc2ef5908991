"""Helpers shared by the CLI's subcommands: one-line errors, collecting, writing, and
the option types that accept only what the option means."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import polars as pl

from ragframe import io
from ragframe.errors import RagframeError
from ragframe.io import _unreadable

if TYPE_CHECKING:
    from ragframe.dataset import RunSummary

_INTEGER = re.compile(r"[+-]?[0-9]{1,40}")


class UsageError(RagframeError):
    """The command line itself is wrong: an unknown option, a missing argument, a value
    of the wrong form."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are a :class:`UsageError` (one line, exit 2,
    printed by :func:`ragframe.cli.main`) instead of usage text and ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def integer(text: str) -> int:
    """An option value that must be written as an integer: ``10``, ``-1``; not ``2e19``,
    ``1.0`` or ``ten``. Its range is the config's to check."""
    if not _INTEGER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(
            f"expected an integer written in digits (e.g. 10), got {text!r}"
        )
    return int(text)


def number(text: str) -> float:
    """An option value that must be a number: ``0.5``, ``1e-3``."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (e.g. 0.5), got {text!r}") from None


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an error (Polars appends its plan context below)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


@contextmanager
def one_line_errors(*sources: str) -> Iterator[None]:
    """Turn any failure while reading or processing ``sources`` into a one-line error;
    a text file Polars could not parse is explained by its first bad line."""
    try:
        with _unreadable.naming(*sources):  # a damaged Parquet page: the file named
            yield
    except RagframeError as exc:  # raised inside a plan: keep its class, drop the context
        raise type(exc)(first_line(exc)) from exc
    except (pl.exceptions.PolarsError, OSError) as exc:
        for source in sources:
            explained = io.explain_read_error(source, str(exc))
            if explained:
                raise RagframeError(explained) from exc
        raise RagframeError(f"cannot process {', '.join(sources)}: {first_line(exc)}") from exc


def collect(plans: Callable[[], list[pl.LazyFrame]], *sources: str) -> list[pl.DataFrame]:
    """Build the ``plans`` and collect them together, with :func:`one_line_errors`."""
    with one_line_errors(*sources):
        return pl.collect_all(plans())


def check_output(path: str) -> None:
    """Fail before any work when ``path`` cannot be written (:func:`io.check_output`)."""
    io.check_output(path)


def write(result: pl.DataFrame, path: str, fmt: str | None = None) -> None:
    """Write atomically (``fmt``: the format of ``-``); an unwritable target is a
    RagframeError, not a traceback."""
    io.write_table(result, path, fmt=fmt)


def add_command(
    sub: Any, name: str, summary: str, description: str, *, epilog: str | None = None
) -> argparse.ArgumentParser:
    """Declare the subcommand ``name`` (``summary`` in ``ragframe --help``; the
    ``description`` and ``epilog`` of its own help, laid out as written)."""
    return sub.add_parser(  # type: ignore[no-any-return]
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def add_documents(parser: argparse.ArgumentParser) -> None:
    """The ``DOCUMENTS`` input of the commands that cut raw documents into chunks
    (``chunk``, and ``experiment``, which chunks them as ``chunk`` does)."""
    parser.add_argument("documents", metavar="DOCUMENTS", help="documents: doc_id, content")


OUTPUT_FORMATS = {"parquet": "parquet", "arrow": "ipc", "csv": "csv", "jsonl": "ndjson"}
"""``--format`` values and the format each names."""


def add_output(parser: argparse.ArgumentParser) -> None:
    """The ``-o/--output``, ``--format`` and ``--quiet`` options every subcommand has."""
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output table, written atomically (a temporary renamed into place; the mode "
        "of an existing file is kept, a symbolic link is written through): a file, the "
        "format from its extension (.parquet, .arrow, .csv, .jsonl); a directory of "
        "Parquet parts (a path ending with '/'); or '-', standard output (see --format)",
    )
    add_stream_options(parser)


def add_stream_options(parser: argparse.ArgumentParser) -> None:
    """``--format`` (of ``-o -``) and ``-q/--quiet``."""
    parser.add_argument(
        "--format",
        dest="output_format",
        choices=list(OUTPUT_FORMATS),
        default="jsonl",
        help="the format of '-o -' (standard output; default: jsonl)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bar (it is shown only when standard error is a terminal)",
    )


def add_partition_size(parser: argparse.ArgumentParser, rows: bool, default: int) -> None:
    """``--rows-per-partition`` (``rows``) or ``--text-per-partition``: how much each
    partition of a dataset run holds (peak memory grows with it). Not given: None (the
    engines refuse it; the local run takes the dataset function's ``default``)."""
    if rows:
        what = "input rows per partition (whole queries; the local engine's)"
    else:
        what = "bytes of documents' content per partition (the local engine's)"
    parser.add_argument(
        "--" + PARTITION_SIZES[not rows].replace("_", "-"),
        type=positive,
        metavar="N",
        help=f"{what}; peak memory grows with it (default: {default:_})",
    )


PARTITION_SIZES = ("rows_per_partition", "text_per_partition")
"""The partition sizes of dataset runs: a command has one of them (its option's name)."""


def run_dataset(
    run: Callable[..., RunSummary],
    args: argparse.Namespace,
    inputs: Sequence[str],
    config: Any,
    **optional: str | None,
) -> RunSummary:
    """``run`` (a :mod:`ragframe.dataset` function) over the command's ``inputs`` and the
    ``optional`` inputs given (by keyword; None: not given) into ``--output``, in
    partitions of the command's size, with its progress bar and output format; a failure
    reading or processing any input is one ``error:`` line (:func:`one_line_errors`)."""
    size = {name: getattr(args, name) for name in PARTITION_SIZES if getattr(args, name, None)}
    sources = [*inputs, *(path for path in optional.values() if path)]
    with one_line_errors(*sources):
        return run(
            *inputs,
            args.output,
            config,
            **optional,
            **size,
            progress=progress(args),
            fmt=output_format(args),
        )


def positive(text: str) -> int:
    """An option value that must be a positive integer (``_`` separators allowed)."""
    value = integer(text.replace("_", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def output_format(args: argparse.Namespace) -> str:
    """The format ``--format`` names (used for standard output)."""
    return OUTPUT_FORMATS[args.output_format]


def progress(args: argparse.Namespace) -> bool | None:
    """The ``progress`` argument of a dataset run: off with ``--quiet``, else shown
    when standard error is a terminal."""
    return False if args.quiet else None
