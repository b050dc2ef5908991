"""``ragframe retrieve``: arguments, config, run (through the public API, :mod:`ragframe`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import ragframe as rf
from ragframe import io
from ragframe.cli._common import (
    add_command,
    add_output,
    check_output,
    one_line_errors,
    output_format,
    progress,
    write,
)
from ragframe.cli._options import add_config_options, config_from_args
from ragframe.errors import ConfigError
from ragframe.retrieve._index import is_index
from ragframe.schema import QUERY_ID

_EPILOG = """\
input columns:
  CHUNKS   doc_id (or entity_id), chunk_index, text; optional entity_type,
           start_char and end_char (carried to the output); for --method dense a
           vector column (--vectors; a list or array of numbers) unless --model embeds
           the text. Or a folder written by --index: its BM25 index, searched without
           being built again.
  QUERIES  query_id (never null, each once), text; for dense, a vector column
           (--query-vectors) unless --model embeds the text.

output columns (one row per query and chunk, queries in input order, best first):
  query_id, doc_id (or entity_id), [entity_type,] chunk_index, [start_char, end_char,]
  similarity (the score), rank (1 = best). Ties go to the earlier chunk row. A query
  that matches nothing has no rows; the summary counts them and names the first.
  The output goes straight into 'ragframe postprocess RESULTS --chunks CHUNKS' and
  'ragframe evaluate'.

BM25 scores as Lucene 8's BM25Similarity with StandardAnalyzer without stop words
(every query token an OR clause, a repeated one counting again): the same scores and
order as Lucene's.
"""


def add_retrieve(sub: Any) -> None:
    """Declare ``ragframe retrieve``."""
    p = add_command(
        sub,
        "retrieve",
        "search every query against the chunks: BM25 as Lucene scores it, or dense",
        "Retrieve each query's --k best chunks (SPEC section 6): BM25 exactly as "
        "Lucene 8 scores it, exact dense search (inner product, cosine, L2), or "
        "several fused by reciprocal rank (--method bm25,dense).",
        epilog=_EPILOG,
    )
    p.add_argument("chunks", metavar="CHUNKS", help="chunk table, or a BM25 index folder")
    p.add_argument("--queries", required=True, metavar="QUERIES", help="query table")
    p.add_argument(
        "--index",
        metavar="DIR",
        help="save the BM25 index built from CHUNKS to the folder DIR (written "
        "atomically; an existing index there is replaced); search it again later by "
        "passing DIR as CHUNKS",
    )
    p.add_argument(
        "--model",
        metavar="DIR",
        help="a sentence-transformers model folder on disk (never downloaded) that embeds "
        "texts without a vector column; needs 'pip install ragframe[sentence-transformers]'",
    )
    add_output(p)
    add_config_options(p, rf.RetrieveConfig)
    p.set_defaults(run=run_retrieve)


def _chunks(args: argparse.Namespace, config: rf.RetrieveConfig) -> tuple[Any, str]:
    """The chunks (a table or a loaded index) and what happened to the index."""
    if Path(args.chunks).is_dir() and is_index(Path(args.chunks)):
        if args.index:
            raise ConfigError("CHUNKS is an index folder already; --index saves a new one")
        return rf.BM25Index.load(args.chunks), f"loaded from {args.chunks}"
    chunks = io.scan_table(args.chunks)
    if not args.index:
        return chunks, "built"
    if config.methods != ("bm25",):
        raise ConfigError("--index saves a BM25 index: it needs --method bm25")
    index = rf.bm25_index(chunks, progress=progress(args))
    index.save(args.index)
    return index, f"built, saved to {args.index}"


def run_retrieve(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``retrieve``; queries that match nothing are counted and named in a warning."""
    config = config_from_args(rf.RetrieveConfig, args)
    check_output(args.output)
    embed = rf.sentence_transformer(args.model) if args.model else None
    with one_line_errors(args.chunks, args.queries):
        chunks, built = _chunks(args, config)
        queries = io.scan_table(args.queries)
        plan = rf.retrieve(chunks, queries, config, embed=embed, progress=progress(args))
        result = plan.collect()
        missing = rf.unmatched_queries(result, queries).select(QUERY_ID).collect()[QUERY_ID]
    write(result, args.output, output_format(args))
    summary: dict[str, Any] = {"queries": result[QUERY_ID].n_unique() + missing.len()}
    summary["rows"] = result.height
    summary["unmatched_queries"] = missing.len()
    if missing.len():
        ids = missing.to_list()
        shown = ", ".join(map(str, ids[:20])) + (", ..." if len(ids) > 20 else "")
        summary["unmatched_ids"] = shown
        print(f"warning: {len(ids)} queries matched no chunk: {shown}", file=sys.stderr)
    if "bm25" in config.methods:
        summary["index"] = built
    summary["output"] = args.output
    return summary
