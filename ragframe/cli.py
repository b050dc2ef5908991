"""The ``ragframe`` command line: parse arguments, build configs, call the library.

Each subcommand has an ``_add_<name>`` function that declares its arguments and a
``_run_<name>`` function that runs it and returns a summary dict. ``main`` prints
``error: <message>`` and exits with status 2 on any :class:`RagframeError`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import polars as pl

from ragframe import io
from ragframe.chunk import chunk
from ragframe.errors import RagframeError
from ragframe.schema import DOC_ID, TEXT, TRUNCATED
from ragframe.window import WindowConfig, assemble, windows

Runner = Callable[[argparse.Namespace], dict[str, Any]]


def _print_summary(title: str, summary: dict[str, Any]) -> None:
    width = max(len(k) for k in summary)
    print(title)
    for key, value in summary.items():
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        print(f"  {key.ljust(width)}  {shown}")


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="ragframe",
        description="Turn retrieval results into LLM context, for every query at once.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def _add_window_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="output table; the format comes from the extension (.parquet, .arrow, .csv, .jsonl)",
    )
    parser.add_argument(
        "--window",
        type=int,
        required=True,
        metavar="N",
        help="largest window, in characters (Unicode code points), >= 1",
    )
    parser.add_argument(
        "--overlap",
        type=int,
        default=0,
        metavar="N",
        help="characters each window shares with the previous one, 0 <= N < --window "
        "(default 0); windows start every (window - overlap) characters",
    )


@contextmanager
def _polars_errors(source: str) -> Iterator[None]:
    """Turn a Polars error while reading or processing ``source`` into one line."""
    try:
        yield
    except pl.exceptions.PolarsError as exc:
        lines = str(exc).strip().splitlines()
        raise RagframeError(
            f"cannot process {source}: {lines[0] if lines else type(exc).__name__}"
        ) from exc


def _write(result: pl.DataFrame, path: str) -> None:
    """Write atomically; an unwritable target is a RagframeError, not a traceback."""
    try:
        io.write_table(result, path)
    except OSError as exc:
        raise RagframeError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _collect(plan: pl.LazyFrame, count: pl.LazyFrame) -> tuple[pl.DataFrame, int]:
    """Collect the result and the input document count in one run."""
    result, counted = pl.collect_all([plan, count])
    return result, int(counted.item())


def _add_window(sub: Any) -> None:
    parser = sub.add_parser(
        "window",
        help="cut documents made of sections into overlapping character windows",
        description="Render each document's sections (title line, then text; sections "
        "joined by a blank line, in section_index order) and cut the result into "
        "windows of --window characters overlapping by --overlap. Input columns: "
        "doc_id, section_index, text, optional title. Output: doc_id, window_index, "
        "start_char, end_char, text; with --single: doc_id, text, truncated.",
    )
    parser.add_argument("sections", metavar="SECTIONS", help="input table of sections")
    _add_window_options(parser)
    parser.add_argument(
        "--single",
        action="store_true",
        help="the seed's single window per document: the first --window characters "
        "of the rendered document, with a truncated flag",
    )
    parser.set_defaults(run=_run_window)


def _run_window(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``window``; ``characters`` counts the characters written in ``text``."""
    config = WindowConfig(window_chars=args.window, overlap_chars=args.overlap)
    sections = io.scan_table(args.sections)
    with _polars_errors(args.sections):
        plan = assemble(sections, config) if args.single else windows(sections, config)
        result, documents = _collect(plan, sections.select(pl.col(DOC_ID).n_unique()))
    _write(result, args.output)
    summary: dict[str, Any] = {"documents": documents}
    if args.single:
        summary["truncated"] = int(result[TRUNCATED].sum())
    else:
        summary["windows"] = result.height
    summary["characters"] = int(result[TEXT].str.len_chars().sum())
    summary["output"] = args.output
    return summary


def _add_chunk(sub: Any) -> None:
    parser = sub.add_parser(
        "chunk",
        help="cut raw documents into overlapping character chunks with offsets",
        description="Cut each document's content into chunks of --window characters "
        "overlapping by --overlap (the last chunk ends at the end of the content; "
        "empty documents have no chunks). Input columns: doc_id, content (others are "
        "dropped). Output: doc_id, chunk_index, start_char, end_char, text.",
    )
    parser.add_argument("documents", metavar="DOCUMENTS", help="input table of documents")
    _add_window_options(parser)
    parser.set_defaults(run=_run_chunk)


def _run_chunk(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``chunk``; ``characters`` counts the characters written in ``text``."""
    config = WindowConfig(window_chars=args.window, overlap_chars=args.overlap)
    documents = io.scan_table(args.documents)
    with _polars_errors(args.documents):
        result, count = _collect(chunk(documents, config), documents.select(pl.len()))
    _write(result, args.output)
    return {
        "documents": count,
        "chunks": result.height,
        "characters": int(result[TEXT].str.len_chars().sum()),
        "output": args.output,
    }


_SUBCOMMANDS: list[Callable[[Any], None]] = [_add_window, _add_chunk]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragframe`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    runner: Runner = args.run
    started = time.perf_counter()
    try:
        summary = runner(args)
    except RagframeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary["seconds"] = f"{time.perf_counter() - started:.3f}"
    _print_summary(f"ragframe {args.command}", summary)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
