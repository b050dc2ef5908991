"""``ragframe fetch``: arguments, config, run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragframe.cli._common import add_output, collect, write
from ragframe.fetch import FetchConfig, fetch, missing_documents
from ragframe.io import read_table


def add_fetch(sub: Any) -> None:
    d = FetchConfig()
    p = sub.add_parser(
        "fetch",
        help="full text for small documents, query-relevant passages for large ones",
        description="Give each (query, document) request its LLM content (SPEC section 2).",
    )
    p.add_argument("requests", metavar="REQUESTS", help="query_id, query, doc_id [, rank]")
    p.add_argument("documents", metavar="DOCUMENTS", help="doc_id, content [, other fields]")
    p.add_argument("--sizes", metavar="SIZES", help="doc_id, content_length (search phase)")
    add_output(p)
    p.add_argument(
        "--threshold",
        type=int,
        default=d.fulltext_threshold,
        help="highlight documents longer than this many characters",
    )
    p.add_argument("--fragment-size", type=int, default=d.fragment_size)
    p.add_argument(
        "--fragments", type=int, default=d.number_of_fragments, help="passages per document"
    )
    p.add_argument("--highlighter", choices=["fvh", "unified"], default=d.highlighter)
    p.add_argument("--order", choices=["score", "offset"], default=d.order)
    p.add_argument(
        "--scoring",
        choices=["terms", "matches"],
        default=d.scoring,
        help="fvh fragment score: distinct query terms first, or Lucene's match count",
    )
    p.add_argument("--max-matches", type=int, default=d.max_matches)
    p.set_defaults(run=run_fetch)


def run_fetch(args: argparse.Namespace) -> dict[str, Any]:
    config = FetchConfig(
        fulltext_threshold=args.threshold,
        fragment_size=args.fragment_size,
        number_of_fragments=args.fragments,
        highlighter=args.highlighter,
        order=args.order,
        scoring=args.scoring,
        max_matches=args.max_matches,
    )
    requests, documents = read_table(args.requests), read_table(args.documents)
    sizes = read_table(args.sizes) if args.sizes else None
    out, missing = collect(
        lambda: [
            fetch(requests, documents, config, sizes=sizes),
            missing_documents(requests, documents),
        ],
        args.requests,
    )
    write(out, args.output)
    counts = out["strategy"].value_counts()
    per = dict(zip(counts["strategy"].to_list(), counts["count"].to_list(), strict=True))
    summary: dict[str, Any] = {"requests": requests.height, "rows": out.height}
    summary.update({name: per.get(name, 0) for name in ("full", "highlight", "truncated_fallback")})
    summary["missing_documents"] = missing.height
    if missing.height:
        ids = missing["doc_id"].unique(maintain_order=True).to_list()
        shown = ", ".join(map(str, ids[:20])) + (", ..." if len(ids) > 20 else "")
        summary["missing_ids"] = shown
        print(
            f"warning: {missing.height} requested documents not in {args.documents}: {shown}",
            file=sys.stderr,
        )
    summary["output"] = args.output
    return summary
