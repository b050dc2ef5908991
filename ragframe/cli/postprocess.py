"""``ragframe postprocess``: arguments, config, run."""

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
from ragframe.dataset import ROWS_PER_PARTITION, postprocess_dataset
from ragframe.postprocess import PostprocessConfig

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

RESULTS and CHUNKS may be a file, a glob ('runs/*.parquet'), a directory (a Parquet
dataset, hive partitions read) or '-' (standard input). Any size: the queries are
processed in partitions of about --rows-per-partition candidates (whole queries,
whatever the input's order), each written as soon as it is done: memory stays flat.

output columns (OUT), one row per block, sorted by query_id, block_rank:
  query_id, block_rank, entity_type, entity_id, start_chunk_index,
  end_chunk_index, text, max_similarity, avg_similarity, source_chunk_count,
  rerank_score, ranking_score, char_count, truncated, chunk_indexes
  (+ passthrough columns)

formats, by file extension: .parquet .pq, .arrow .ipc .feather, .csv,
.jsonl .ndjson .json (JSON lines). In CSV, chunk_indexes is written as "0,1,2".
OUT ending with '/' is a directory of Parquet parts, in output order.
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
    add_partition_size(p, True, ROWS_PER_PARTITION)
    add_config_options(p, PostprocessConfig)
    p.set_defaults(run=run_postprocess)


def run_postprocess(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``postprocess`` partition by partition (:func:`ragframe.postprocess_dataset`);
    the summary counts queries, rows, candidates without text in the chunk store,
    blocks, characters and partitions."""
    if on_engine(args):
        return run_on_engine(args, "postprocess")
    config = config_from_args(PostprocessConfig, args)
    if config.tokenizer is not None and config.length == "chars":
        print(
            "warning: --tokenizer without --length tokens: the budgets count characters; "
            "the tokenizer only adds token_count to the blocks",
            file=sys.stderr,
        )
    run = run_dataset(postprocess_dataset, args, [args.results], config, chunks=args.chunks)
    counts = run.counts
    return {
        "queries": counts["queries"],
        "candidates in": counts["candidates"],
        "missing text": f"{counts['missing_text_candidates']} candidates in "
        f"{counts['missing_text_queries']} queries (missing_text={config.missing_text})",
        "blocks out": counts["blocks"],
        "characters out": counts["characters"],
        "truncated blocks": counts["truncated"],
        "partitions": run.partitions,
        "output": str(args.output),
    }
