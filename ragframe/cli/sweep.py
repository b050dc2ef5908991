"""``ragframe sweep``: a grid of postprocess settings, evaluated in one run."""

from __future__ import annotations

import argparse
import os
import sys
import tomllib
from pathlib import Path
from typing import Any, TextIO

from ragframe import io
from ragframe import schema as c
from ragframe.cli._common import (
    add_command,
    add_stream_options,
    collect,
    one_line_errors,
    output_format,
    progress,
)
from ragframe.cli._engine import add_engine_options, on_engine, sweep_on_engine
from ragframe.cli.evaluate import add_qrels_options, read_judgements
from ragframe.errors import ConfigError, RagframeError
from ragframe.evaluate._columns import HIGH, LOW, P_HOLM, PARETO
from ragframe.io import _atomic, _filesystems

EPILOG = """\
GRID is a TOML file of postprocess parameters and their values; every combination runs:

  [grid]
  top_k = [10, 20]
  max_chunk_gap = [0, 1, 2]
  max_characters = [2000, 4000, 8000]

OUTDIR receives per_query.parquet (one row per configuration and query) and
summary.parquet (one row per configuration, best first), and report.html with
--report (needs matplotlib: pip install 'ragframe[plot]'). The folder is written whole:
into a temporary folder beside it, renamed into place when complete (an existing
OUTDIR is replaced only when it holds nothing but a previous sweep's files). With
-o -, the summary goes to standard output (--format) and the table to standard error.

--metric ranks the settings, each metric in its own direction (context_recall: higher
is better; duplicate_chars, chars_used, first_relevant_rank: lower); it must be one of
the sweep's metrics. The Pareto front weighs it against --cost (default: tokens_used
when every setting is budgeted in tokens, else chars_used).
"""
FILES = ("per_query.parquet", "summary.parquet", "report.html")
"""What OUTDIR holds after a sweep."""


def read_grid(path: str) -> dict[str, list[Any]]:
    """The ``[grid]`` table (or the top level) of a TOML file, each value a list."""
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise RagframeError(f"grid file not found: {path}") from None
    except IsADirectoryError:
        raise RagframeError(f"grid {path} is a directory; expected a TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RagframeError(f"cannot read grid {path}: {exc}") from None
    grid = document.get("grid", document)
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"grid {path}: expected parameter = [values, ...] entries")
    for name, value in grid.items():
        if isinstance(value, dict):
            raise ConfigError(f"grid {path}: {name} is a table; expected a value or a list")
    return {name: value if isinstance(value, list) else [value] for name, value in grid.items()}


def add_sweep(sub: Any) -> None:
    """Declare ``ragframe sweep``."""
    p = add_command(
        sub,
        "sweep",
        "run and evaluate many postprocess settings over the same candidates",
        "Postprocess RESULTS with every combination of the grid's settings, "
        "sharing each step among the settings it does not depend on, evaluate each "
        "against the judgements, and rank the settings by --metric with bootstrap "
        "intervals, paired tests against the baseline (Holm-corrected) and the Pareto "
        "front against the characters (or tokens) used.",
        epilog=EPILOG,
    )
    p.add_argument("results", metavar="RESULTS", help="candidate chunks, one row per chunk")
    p.add_argument("--chunks", metavar="CHUNKS", help="chunk store (text and offsets)")
    add_qrels_options(p)
    add_grid_options(p)
    add_stream_options(p)
    add_engine_options(p)
    p.set_defaults(run=run_sweep)


def add_grid_options(p: argparse.ArgumentParser, *, maximum: bool = False) -> None:
    """The options of a command that runs a grid of settings (``sweep``, ``experiment``):
    the grid, how its configurations are ranked and tested, where the result goes; with
    ``maximum``, ``--max-configurations``."""
    p.add_argument("--grid", required=True, metavar="GRID", help="TOML file of settings")
    p.add_argument("--metric", default=c.CONTEXT_RECALL, help="ranks the settings")
    p.add_argument(
        "--cost",
        help="what the Pareto front weighs --metric against (chars_used, "
        "tokens_used, blocks, budget_share)",
    )
    p.add_argument("--baseline", type=int, default=0, metavar="N", help="config number")
    if maximum:
        p.add_argument(
            "--max-configurations",
            type=int,
            default=1000,
            metavar="N",
            help="refuse a larger grid (default 1000)",
        )
    p.add_argument("--report", action="store_true", help="also write OUTDIR/report.html")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUTDIR",
        help="output folder, written whole (see below); or '-': the summary to standard output",
    )


def ranking(args: argparse.Namespace) -> dict[str, Any]:
    """How a grid's configurations are ranked and tested (:func:`add_grid_options`), as
    the keyword arguments of ``sweep`` and ``experiment``."""
    return {"baseline": args.baseline, "metric": args.metric, "cost": args.cost}


def check_folder(path: str, report: bool) -> Path | None:
    """OUTDIR can be written (before any work): new, empty or a previous sweep's;
    None for standard output."""
    if path == io.STDIO:
        if report:
            raise ConfigError("--report writes OUTDIR/report.html; -o - has no folder")
        return None
    if _filesystems.is_remote(path):
        raise ConfigError(
            f"cannot write {path}: an output folder of files is written locally only; "
            "expected a local folder (its tables can then be copied to the store)"
        )
    out = Path(os.path.realpath(path))
    if out.exists() and not out.is_dir():
        raise RagframeError(f"output {path} exists and is not a folder; expected a folder")
    if out.is_dir():
        other = [e.name for e in sorted(out.iterdir()) if not e.name.startswith(".")]
        other = [n for n in other if n not in FILES]
        if other:
            raise RagframeError(
                f"cannot write {path}: the folder holds other files than a sweep's "
                f"({other[0]}); expected a new or empty folder, or a previous sweep's "
                f"output ({', '.join(FILES)}), which is replaced"
            )
    folder = _atomic.first_existing(out.parent)
    if not folder.is_dir():
        raise RagframeError(f"cannot write {path}: {folder} is not a directory")
    _atomic.probe(folder, out, path)
    return out


def run_sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``sweep``; print the best settings."""
    grid = read_grid(args.grid)
    out = check_folder(args.output, args.report)
    qrels = read_judgements(args)
    result = sweep_on_engine(args, grid, qrels) if on_engine(args) else _local(args, grid, qrels)
    return deliver(result, out, args)


def deliver(result: Any, out: Path | None, args: argparse.Namespace) -> dict[str, Any]:
    """Write a sweep's (or an experiment's) result where ``-o`` says (the folder whole,
    or the summary to standard output), print the best settings, and give the run's
    summary lines."""
    if out is None:
        io.write_table(result.summary, io.STDIO, fmt=output_format(args))
    else:
        _write_folder(result, out, args.output, args.report)
    _print_table(result, sys.stderr if out is None else sys.stdout)
    best = result.best().row(0, named=True)
    return {
        "configurations": result.summary.height,
        "queries judged": int(best["judged"]),
        "best": ", ".join(f"{p}={best[p]}" for p in result.parameters),
        f"best {result.metric}": _shown(best[result.metric]),
        "output": args.output,
    }


def _write_folder(result: Any, out: Path, shown: str, report: bool) -> None:
    """The sweep's files into a temporary folder beside ``out``, then renamed into
    place in one step: a failure or a signal leaves the old folder (or none), never
    a half-new one."""
    from ragframe.driver._commit import commit, parts_folder

    try:
        with parts_folder(out) as folder:
            tmp = Path(folder)  # a local folder: sweep refuses a remote one before this
            io.write_table(result.per_query, tmp / FILES[0])
            io.write_table(result.summary, tmp / FILES[1])
            if report:
                from ragframe.evaluate import write_report

                write_report(result, tmp / FILES[2])
            commit(tmp, out)
    except OSError as exc:
        raise RagframeError(f"cannot write {shown}: {exc.strerror or exc}") from None


def _local(args: argparse.Namespace, grid: dict[str, list[Any]], qrels: Any) -> Any:
    from ragframe.evaluate import sweep

    strings = [c.QUERY_ID, c.DOC_ID, c.ENTITY_ID]
    with one_line_errors(args.results):
        results = io.scan_table(args.results, strings=strings)
    chunks = None
    if args.chunks:
        with one_line_errors(args.chunks):
            chunks = io.scan_table(args.chunks, strings=strings)
    (candidates,) = collect(lambda: [results], args.results)
    store = None
    if chunks is not None:
        (store,) = collect(lambda: [chunks], args.chunks)
    with one_line_errors(*[s for s in (args.results, args.chunks) if s]):
        return sweep(
            candidates,
            grid,
            qrels,
            chunks=store,
            **ranking(args),
            progress=progress(args),
        )


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _print_table(result: Any, to: TextIO, rows: int = 10) -> None:
    """The best ``rows`` settings: parameters, metric with interval, cost, tests."""
    summary, metric, cost = result.summary, result.metric, result.cost
    head = [c.CONFIG, *result.parameters, metric, "95% interval", cost, P_HOLM, PARETO]
    lines = [head]
    for row in summary.head(rows).iter_rows(named=True):
        low, high = row[metric + LOW], row[metric + HIGH]
        interval = "-" if low is None or high != high else f"[{low:.4f}, {high:.4f}]"
        lines.append(
            [
                str(row[c.CONFIG]),
                *(str(row[p]) for p in result.parameters),
                _shown(row[metric]),
                interval,
                "-" if row[cost] is None else f"{row[cost]:.4g}",
                "-" if row[P_HOLM] is None else f"{row[P_HOLM]:.3g}",
                "yes" if row[PARETO] else "",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        values = zip(line, widths, strict=True)
        print("  ".join(value.rjust(width) for value, width in values), file=to)
    if summary.height > rows:
        print(f"({summary.height - rows} more in the summary)", file=to)
