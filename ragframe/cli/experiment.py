"""``ragframe experiment``: from documents to a decision, a grid over the chunking, the
retrieval and the context, each configuration chunked, retrieved, post-processed and
evaluated in one run (SPEC 8)."""

from __future__ import annotations

import argparse
from typing import Any

from ragframe import io
from ragframe import schema as c
from ragframe.cli._common import (
    add_command,
    add_documents,
    add_stream_options,
    collect,
    one_line_errors,
    progress,
)
from ragframe.cli.evaluate import add_qrels_options, read_judgements
from ragframe.cli.sweep import add_grid_options, check_folder, deliver, ranking, read_grid

EPILOG = """\
GRID is a TOML file of parameters and their values; every combination runs:

  [grid]
  size = [200, 400, 800]        # window_chars: the chunker's window
  overlap_chars = [50]          # the windows' overlap
  method = ["bm25"]             # the retriever (bm25, dense, bm25,dense)
  k = [20]                      # candidates kept per query
  top_k = [5, 10]               # and any postprocess parameter
  max_characters = [1000, 2000, 4000]

Left out: windows of 400 with 100 overlap, and overlap = "offsets" (blocks merged by
the chunker's offsets). OUTDIR receives per_query.parquet, summary.parquet and, with
--report, report.html, written whole; the best settings are printed.
"""


def add_experiment(sub: Any) -> None:
    """Declare ``ragframe experiment``."""
    p = add_command(
        sub,
        "experiment",
        "chunk, retrieve, post-process and evaluate a grid of settings, from documents",
        "Cut DOCUMENTS into chunks once per window setting, search them for every query "
        "once per retrieval setting (BM25 exactly as Lucene 8 scores it), post-process "
        "the candidates with every context setting (sharing each step as sweep does), "
        "evaluate each configuration against the judgements and rank them by --metric "
        "with bootstrap intervals, paired tests against the baseline (Holm-corrected) "
        "and the Pareto front against the characters used.",
        epilog=EPILOG,
    )
    add_documents(p)
    p.add_argument("--queries", required=True, metavar="Q", help="queries: query_id, text")
    add_qrels_options(p)
    add_grid_options(p, maximum=True)
    add_stream_options(p)
    p.set_defaults(run=run_experiment)


def run_experiment(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``experiment``; print the best settings."""
    from ragframe.evaluate import experiment

    grid = read_grid(args.grid)
    out = check_folder(args.output, args.report)
    qrels = read_judgements(args)
    strings = [c.QUERY_ID, c.DOC_ID]
    tables = []
    for path in (args.documents, args.queries):
        with one_line_errors(path):
            tables.append(io.scan_table(path, strings=strings))
    documents, queries = collect(lambda: tables, args.documents, args.queries)
    with one_line_errors(args.documents, args.queries):
        result = experiment(
            documents,
            queries,
            qrels,
            grid,
            **ranking(args),
            max_configurations=args.max_configurations,
            progress=progress(args),
        )
    return deliver(result, out, args)
