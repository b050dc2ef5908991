"""The ``ragframe`` command line: parse arguments, build configs, call the library.

Each subcommand has an ``_add_<name>`` function that declares its arguments and a
``_run_<name>`` function that runs it and returns a summary dict. ``main`` prints
``error: <message>`` and exits with status 2 on any :class:`RagframeError`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragframe.errors import RagframeError

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


def _add_fetch(sub: Any) -> None:
    from ragframe.fetch import FetchConfig

    d = FetchConfig()
    p = sub.add_parser(
        "fetch",
        help="full text for small documents, query-relevant passages for large ones",
        description="Give each (query, document) request its LLM content (SPEC section 2).",
    )
    p.add_argument("requests", metavar="REQUESTS", help="query_id, query, doc_id [, rank]")
    p.add_argument("documents", metavar="DOCUMENTS", help="doc_id, content [, other fields]")
    p.add_argument("--sizes", metavar="SIZES", help="doc_id, content_length (search phase)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output table")
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
    p.set_defaults(run=_run_fetch)


def _run_fetch(args: argparse.Namespace) -> dict[str, Any]:
    import polars as pl

    from ragframe.fetch import FetchConfig, fetch, missing_documents
    from ragframe.io import read_table, write_table

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
    try:
        out = fetch(requests, documents, config, sizes=sizes).collect()
        missing = missing_documents(requests, documents).collect()
    except pl.exceptions.PolarsError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RagframeError(f"fetch failed: {first}") from exc
    write_table(out, args.output)
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


_SUBCOMMANDS: list[Callable[[Any], None]] = [_add_fetch]


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
