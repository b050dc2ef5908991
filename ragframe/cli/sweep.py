"""``ragframe sweep``: a grid of postprocess settings, evaluated in one run."""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

from ragframe import schema as c
from ragframe.cli._common import add_command, collect, write
from ragframe.cli._engine import add_engine_options, on_engine, sweep_on_engine
from ragframe.cli.evaluate import _gain
from ragframe.errors import ConfigError, RagframeError
from ragframe.evaluate._result import HIGH, LOW, P_HOLM, PARETO
from ragframe.io import scan_table

EPILOG = """\
GRID is a TOML file of postprocess parameters and their values; every combination runs:

  [grid]
  top_k = [10, 20]
  max_chunk_gap = [0, 1, 2]
  max_characters = [2000, 4000, 8000]

OUTDIR receives per_query.parquet (one row per configuration and query) and
summary.parquet (one row per configuration, best first), and report.html with
--report (needs matplotlib: pip install 'ragframe[plot]').
"""


def read_grid(path: str) -> dict[str, list[Any]]:
    """The ``[grid]`` table (or the top level) of a TOML file, each value a list."""
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        raise RagframeError(f"grid file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise RagframeError(f"cannot read grid {path}: {exc}") from None
    grid = document.get("grid", document)
    if not isinstance(grid, dict) or not grid:
        raise ConfigError(f"grid {path}: expected parameter = [values, ...] entries")
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
        "front against the characters used.",
        epilog=EPILOG,
    )
    p.add_argument("results", metavar="RESULTS", help="candidate chunks, one row per chunk")
    p.add_argument("--chunks", metavar="CHUNKS", help="chunk store (text and offsets)")
    p.add_argument("--qrels", required=True, metavar="QRELS", help="relevance judgements")
    p.add_argument("--gain", type=_gain, metavar="G:V,...", help="grade to gain mapping")
    p.add_argument("--grid", required=True, metavar="GRID", help="TOML file of settings")
    p.add_argument("--metric", default=c.CONTEXT_RECALL, help="ranks the settings")
    p.add_argument("--baseline", type=int, default=0, metavar="N", help="config number")
    p.add_argument("--report", action="store_true", help="also write OUTDIR/report.html")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output folder")
    add_engine_options(p)
    p.set_defaults(run=run_sweep)


def run_sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``sweep``; print the best settings."""
    from ragframe.evaluate import read_qrels

    grid = read_grid(args.grid)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise RagframeError(f"output {os.fspath(out)} exists and is not a folder")
    qrels = read_qrels(args.qrels, gain=args.gain)
    result = sweep_on_engine(args, grid, qrels) if on_engine(args) else _local(args, grid, qrels)
    write(result.per_query, os.fspath(out / "per_query.parquet"))
    write(result.summary, os.fspath(out / "summary.parquet"))
    if args.report:
        from ragframe.evaluate import write_report

        write_report(result, out / "report.html")
    _print_table(result.summary, result.parameters, args.metric)
    best = result.best().row(0, named=True)
    return {
        "configurations": result.summary.height,
        "queries judged": int(best["judged"]),
        "best": ", ".join(f"{p}={best[p]}" for p in result.parameters),
        f"best {args.metric}": f"{best[args.metric]:.4f}",
        "output": os.fspath(out),
    }


def _local(args: argparse.Namespace, grid: dict[str, list[Any]], qrels: Any) -> Any:
    from ragframe.evaluate import sweep

    results = scan_table(args.results)
    chunks = scan_table(args.chunks) if args.chunks else None
    (candidates,) = collect(lambda: [results], args.results)
    store = None
    if chunks is not None:
        (store,) = collect(lambda: [chunks], args.chunks)
    result = sweep(
        candidates, grid, qrels, chunks=store, baseline=args.baseline, metric=args.metric
    )
    return result


def _print_table(summary: Any, parameters: tuple[str, ...], metric: str, rows: int = 10) -> None:
    """The best ``rows`` settings: parameters, metric with interval, cost, tests."""
    head = [c.CONFIG, *parameters, metric, "95% interval", c.CHARS_USED, P_HOLM, PARETO]
    lines = [head]
    for row in summary.head(rows).iter_rows(named=True):
        lines.append(
            [
                str(row[c.CONFIG]),
                *(str(row[p]) for p in parameters),
                f"{row[metric]:.4f}",
                f"[{row[metric + LOW]:.4f}, {row[metric + HIGH]:.4f}]",
                f"{row[c.CHARS_USED]:.0f}",
                "-" if row[P_HOLM] is None else f"{row[P_HOLM]:.3g}",
                "yes" if row[PARETO] else "",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for line in lines:
        print("  ".join(value.rjust(width) for value, width in zip(line, widths, strict=True)))
    if summary.height > rows:
        print(f"({summary.height - rows} more in summary.parquet)")
