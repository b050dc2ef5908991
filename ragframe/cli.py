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
from ragframe import schema as c
from ragframe.chunk import chunk
from ragframe.errors import RagframeError
from ragframe.io import scan_table, table_format, write_table
from ragframe.postprocess import PostprocessConfig, postprocess
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


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


_POSTPROCESS_EPILOG = """\
input columns (RESULTS):
  query_id       int or string, required, never null
  entity_id      int or string (alias doc_id); null = no entity
  entity_type    string, optional; null = ""
  chunk_index    int; null = 0
  text           string; null = "" (not needed with --chunks)
  similarity     float or int; null = 0.0
  rerank_score   float, optional; null = use similarity
  anything else  passed through from the first chunk of each block

output columns (OUT), one row per block, sorted by query_id, block_rank:
  query_id, block_rank, entity_type, entity_id, start_chunk_index,
  end_chunk_index, text, max_similarity, avg_similarity, source_chunk_count,
  rerank_score, ranking_score, char_count, truncated, chunk_indexes
  (+ passthrough columns)

formats, by file extension: .parquet .pq, .arrow .ipc .feather, .csv,
.jsonl .ndjson .json (JSON lines). In CSV, chunk_indexes is written as "0,1,2".
"""


_CONFIG_HELP: dict[str, str] = {
    "top_k": "chunks selected per query by ranking score (rerank_score, else similarity), "
    "skipping text repeated within the same entity (>= 1)",
    "min_similarity": "base m of the adaptive threshold: selected chunks need similarity "
    ">= 0.6*m (one selected) up to 1.2*m (top-k selected) (0..1)",
    "max_chunk_gap": "largest chunk_index gap merged into one block; 1 = adjacent chunks "
    "only, 0 = only repeated indexes (>= 0)",
    "max_blocks": "blocks kept per query (>= 1)",
    "max_characters": "total characters kept per query; a first block over it is "
    "truncated at a word boundary (>= 1)",
    "max_merged_block_characters": "largest merged block in characters; a chunk that "
    "would exceed it starts a new block (>= 1)",
    "overlap": "how overlap between merged chunks is removed: 'text' matches normalized "
    "text like the seed; 'offsets' cuts exactly by start_char/end_char columns",
}
"""Help for each :class:`PostprocessConfig` field; the option is ``--field-name``."""


def _add_postprocess(sub: Any) -> None:
    p = sub.add_parser(
        "postprocess",
        help="turn retrieved chunks into ranked, merged, budgeted context blocks",
        description=(
            "Per query: rank candidates (rerank_score, else similarity), keep the top-k "
            "distinct chunks, drop those under the adaptive similarity threshold, merge "
            "nearby chunks of the same entity removing their overlap, then keep the best "
            "blocks within the block and character budgets."
        ),
        epilog=_POSTPROCESS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", metavar="RESULTS", help="candidate chunks, one row per chunk")
    p.add_argument(
        "--chunks",
        metavar="CHUNKS",
        help="chunk store (entity_id or doc_id, chunk_index, text): text is joined from it "
        "by (entity_id, chunk_index), only for the rows that need it",
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", required=True, help="output table, written atomically"
    )
    defaults = PostprocessConfig()
    for name, text in _CONFIG_HELP.items():
        default = getattr(defaults, name)
        p.add_argument(
            "--" + name.replace("_", "-"),
            type=type(default),
            default=default,
            choices=["text", "offsets"] if name == "overlap" else None,
            metavar={int: "N", float: "X"}.get(type(default)),
            help=f"{text} (default: %(default)s)",
        )
    p.set_defaults(run=_run_postprocess)


def _run_postprocess(args: argparse.Namespace) -> dict[str, Any]:
    config = PostprocessConfig(**{name: getattr(args, name) for name in _CONFIG_HELP})
    table_format(args.output)
    candidates = scan_table(args.results)
    chunks = scan_table(args.chunks) if args.chunks else None
    plan = postprocess(candidates, config, chunks=chunks)
    counts = candidates.select(
        pl.len().alias("rows"), pl.col(c.QUERY_ID).n_unique().alias("queries")
    )
    try:
        blocks, stats = pl.collect_all([plan, counts])
    except RagframeError as exc:  # raised inside the plan: Polars appends its context
        raise type(exc)(_first_line(exc)) from exc
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(f"cannot process {args.results}: {_first_line(exc)}") from exc
    try:
        write_table(blocks, args.output)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise RagframeError(f"cannot write {args.output}: {_first_line(exc)}") from exc
    return {
        "queries": int(stats["queries"][0]),
        "candidates in": int(stats["rows"][0]),
        "blocks out": blocks.height,
        "characters out": int(blocks[c.CHAR_COUNT].sum()),
        "truncated blocks": int(blocks[c.TRUNCATED].sum()),
        "output": str(args.output),
    }


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


_SUBCOMMANDS: list[Callable[[Any], None]] = [_add_postprocess, _add_fetch, _add_window, _add_chunk]


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
