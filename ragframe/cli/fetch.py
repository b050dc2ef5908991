"""``ragframe fetch``: arguments, config, run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragframe.cli._common import (
    add_command,
    add_output,
    add_partition_size,
    run_dataset,
)
from ragframe.cli._engine import add_engine_options, on_engine, run_on_engine
from ragframe.cli._options import add_config_options, config_from_args
from ragframe.dataset import FETCH_TEXT, fetch_dataset
from ragframe.fetch import FetchConfig
from ragframe.schema import MISSING, STRATEGIES


def add_fetch(sub: Any) -> None:
    p = add_command(
        sub,
        "fetch",
        "full text for small documents, query-relevant passages for large ones",
        "Give each (query, document) request its LLM content (SPEC section 2).",
    )
    p.add_argument(
        "requests", metavar="REQUESTS", help="query_id, query, doc_id (or entity_id) [, rank]"
    )
    p.add_argument("documents", metavar="DOCUMENTS", help="doc_id, content [, other fields]")
    p.add_argument("--sizes", metavar="SIZES", help="doc_id, content_length (search phase)")
    add_output(p)
    add_engine_options(p)
    add_partition_size(p, False, FETCH_TEXT)
    add_config_options(
        p,
        FetchConfig,
        aliases={"fulltext_threshold": ["--threshold"], "number_of_fragments": ["--fragments"]},
    )
    p.set_defaults(run=run_fetch)


def run_fetch(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``fetch`` partition by partition (:func:`ragframe.fetch_dataset`); requests
    whose document is missing are counted and named in a warning."""
    if on_engine(args):
        return run_on_engine(args, "fetch")
    config = config_from_args(FetchConfig, args)
    inputs = [args.requests, args.documents]
    run = run_dataset(fetch_dataset, args, inputs, config, sizes=args.sizes)
    counts = run.counts
    summary: dict[str, Any] = {"requests": counts["requests"], "rows": counts["rows"]}
    summary.update({name: counts[name] for name in STRATEGIES if name != MISSING})
    summary["missing_documents"] = counts[MISSING]
    if counts[MISSING]:
        ids = run.missing_ids
        shown = ", ".join(map(str, ids[:20])) + (", ..." if len(ids) > 20 else "")
        summary["missing_ids"] = shown
        print(
            f"warning: {counts[MISSING]} requested documents not in {args.documents}: {shown}",
            file=sys.stderr,
        )
    summary["partitions"] = run.partitions
    summary["output"] = args.output
    return summary
