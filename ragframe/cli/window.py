"""``ragframe window`` and ``ragframe chunk``: arguments, config, run."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from ragframe import io
from ragframe.cli._common import (
    add_command,
    add_documents,
    add_output,
    add_partition_size,
    check_output,
    collect,
    output_format,
    run_dataset,
    write,
)
from ragframe.cli._engine import add_engine_options, on_engine, run_on_engine
from ragframe.cli._options import add_config_options, config_from_args
from ragframe.dataset import CHUNK_TEXT, chunk_dataset
from ragframe.schema import DOC_ID, TEXT, TRUNCATED
from ragframe.window import WindowConfig, assemble, windows


def _add_window_options(parser: argparse.ArgumentParser) -> None:
    add_output(parser)
    aliases = {"window_chars": ["--window"], "overlap_chars": ["--overlap"]}
    add_config_options(parser, WindowConfig, aliases=aliases)


def add_window(sub: Any) -> None:
    """Declare ``ragframe window``."""
    parser = add_command(
        sub,
        "window",
        "cut documents made of sections into overlapping character windows",
        "Render each document's sections (title line, then text; sections "
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
    parser.set_defaults(run=run_window)


def run_window(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``window``; ``characters`` counts the characters written in ``text``."""
    config = config_from_args(WindowConfig, args)
    sections = io.scan_table(args.sections)
    check_output(args.output)
    plan = assemble if args.single else windows
    result, counted = collect(
        lambda: [plan(sections, config), sections.select(pl.col(DOC_ID).n_unique())],
        args.sections,
    )
    write(result, args.output, output_format(args))
    summary: dict[str, Any] = {"documents": int(counted.item())}
    if args.single:
        summary["truncated"] = int(result[TRUNCATED].sum())
    else:
        summary["windows"] = result.height
    summary["characters"] = int(result[TEXT].str.len_chars().sum())
    summary["output"] = args.output
    return summary


def add_chunk(sub: Any) -> None:
    """Declare ``ragframe chunk``."""
    parser = add_command(
        sub,
        "chunk",
        "cut raw documents into overlapping character chunks with offsets",
        "Cut each document's content into chunks of --window characters "
        "overlapping by --overlap (the last chunk ends at the end of the content; "
        "empty documents have no chunks). Input columns: doc_id, content (others are "
        "dropped). Output: doc_id, chunk_index, start_char, end_char, text.",
    )
    add_documents(parser)
    _add_window_options(parser)
    add_engine_options(parser)
    add_partition_size(parser, False, CHUNK_TEXT)
    parser.set_defaults(run=run_chunk)


def run_chunk(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``chunk`` batch by batch (:func:`ragframe.chunk_dataset`); ``characters``
    counts the characters written in ``text``."""
    if on_engine(args):
        return run_on_engine(args, "chunk")
    config = config_from_args(WindowConfig, args)
    run = run_dataset(chunk_dataset, args, [args.documents], config)
    return {**run.counts, "partitions": run.partitions, "output": args.output}
