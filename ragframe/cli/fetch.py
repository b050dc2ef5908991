"""``ragframe fetch``: arguments, config, run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import polars as pl

from ragframe.cli._common import add_command, add_output, check_output, collect, write
from ragframe.cli._engine import add_engine_options, on_engine, run_on_engine
from ragframe.cli._options import add_config_options, config_from_args
from ragframe.fetch import FetchConfig, fetch, missing_documents
from ragframe.fetch._strategy import request_key
from ragframe.io import scan_table
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
    add_config_options(
        p,
        FetchConfig,
        aliases={"fulltext_threshold": ["--threshold"], "number_of_fragments": ["--fragments"]},
    )
    p.set_defaults(run=run_fetch)


def run_fetch(args: argparse.Namespace) -> dict[str, Any]:
    if on_engine(args):
        return run_on_engine(args, "fetch")
    config = config_from_args(FetchConfig, args)
    requests, documents = scan_table(args.requests), scan_table(args.documents)
    sizes = scan_table(args.sizes) if args.sizes else None
    check_output(args.output)
    out, missing, counted = collect(
        lambda: [
            fetch(requests, documents, config, sizes=sizes),
            missing_documents(requests, documents),
            requests.select(pl.len()),
        ],
        *[args.requests, args.documents, *([args.sizes] if args.sizes else [])],
    )
    write(out, args.output)
    counts = out["strategy"].value_counts()
    per = dict(zip(counts["strategy"].to_list(), counts["count"].to_list(), strict=True))
    summary: dict[str, Any] = {"requests": int(counted.item()), "rows": out.height}
    summary.update({name: per.get(name, 0) for name in STRATEGIES if name != MISSING})
    summary["missing_documents"] = missing.height
    if missing.height:
        ids = missing[request_key(missing.schema)].unique(maintain_order=True).to_list()
        shown = ", ".join(map(str, ids[:20])) + (", ..." if len(ids) > 20 else "")
        summary["missing_ids"] = shown
        print(
            f"warning: {missing.height} requested documents not in {args.documents}: {shown}",
            file=sys.stderr,
        )
    summary["output"] = args.output
    return summary
