"""``ragframe postprocess``: arguments, config, run."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.cli._common import add_command, add_output, check_output, collect, write
from ragframe.cli._engine import add_engine_options, on_engine, run_on_engine
from ragframe.cli._options import add_config_options, config_from_args
from ragframe.io import scan_table
from ragframe.postprocess import PostprocessConfig, missing_text_counts, postprocess

EPILOG = """\
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


def add_postprocess(sub: Any) -> None:
    """Declare ``ragframe postprocess`` and its options (one per config field)."""
    p = add_command(
        sub,
        "postprocess",
        "turn retrieved chunks into ranked, merged, budgeted context blocks",
        (
            "Per query: rank candidates (rerank_score, else similarity), keep the top-k "
            "distinct chunks, drop those under the adaptive similarity threshold, merge "
            "nearby chunks of the same entity removing their overlap, then keep the best "
            "blocks within the block and character budgets."
        ),
        epilog=EPILOG,
    )
    p.add_argument("results", metavar="RESULTS", help="candidate chunks, one row per chunk")
    p.add_argument(
        "--chunks",
        metavar="CHUNKS",
        help="chunk store (entity_id or doc_id, chunk_index, text): text is joined from it "
        "by (entity_id, chunk_index), only for the rows that need it",
    )
    add_output(p)
    add_engine_options(p)
    add_config_options(p, PostprocessConfig)
    p.set_defaults(run=run_postprocess)


def run_postprocess(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``postprocess``; the summary counts queries, rows, candidates without text in
    the chunk store, blocks and characters."""
    if on_engine(args):
        return run_on_engine(args, "postprocess")
    config = config_from_args(PostprocessConfig, args)
    candidates = scan_table(args.results)
    chunks = scan_table(args.chunks) if args.chunks else None
    check_output(args.output)
    counts = pl.len().alias("rows"), pl.col(c.QUERY_ID).n_unique().alias("queries")
    blocks, stats, missing = collect(
        lambda: [
            postprocess(candidates, config, chunks=chunks),
            candidates.select(counts),
            missing_text_counts(candidates, chunks),
        ],
        *[args.results, *([args.chunks] if args.chunks else [])],
    )
    write(blocks, args.output)
    lacking, queries = missing.row(0)
    return {
        "queries": int(stats["queries"][0]),
        "candidates in": int(stats["rows"][0]),
        "missing text": f"{lacking} candidates in {queries} queries "
        f"(missing_text={config.missing_text})",
        "blocks out": blocks.height,
        "characters out": int(blocks[c.CHAR_COUNT].sum()),
        "truncated blocks": int(blocks[c.TRUNCATED].sum()),
        "output": str(args.output),
    }
