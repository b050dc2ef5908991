"""``ragframe evaluate``: arguments, the judgements, run, the quality table."""

from __future__ import annotations

import argparse
from typing import Any

from ragframe import schema as c
from ragframe.cli._common import add_command, add_output, collect, output_format, write
from ragframe.cli._engine import add_engine_options, on_engine, run_on_engine
from ragframe.errors import ConfigError
from ragframe.evaluate import evaluate, read_qrels, summarize
from ragframe.io import scan_table

EPILOG = """\
INPUT is either postprocess output (it has block_rank: context metrics) or retrieved
chunks / a run (query_id, doc_id or entity_id, similarity or score: list metrics).
--candidates adds list metrics to a blocks input.

qrels (--qrels): a table (query_id, doc_id, relevance), a TREC qrels file
(qid 0 docid rel) or a BEIR folder (qrels/<split>.tsv). Grades <= 0 are not relevant;
--gain maps grades to gains (Cranfield, where 1 is best: --gain 1:4,2:3,3:2,4:1).

OUT has one row per query (judged or not); --summary writes the means over the judged
queries, which are also printed.
"""


def _ints(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _gain(text: str) -> dict[int, float]:
    try:
        pairs = [part.split(":") for part in text.split(",") if part.strip()]
        return {int(grade): float(gain) for grade, gain in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected GRADE:GAIN pairs separated by commas (e.g. 1:4,2:3), got {text!r}"
        ) from None


def _positive(text: str) -> int:
    value = _ints(text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"expected one positive integer, got {text!r}")
    return value[0]


def add_evaluate(sub: Any) -> None:
    """Declare ``ragframe evaluate``."""
    p = add_command(
        sub,
        "evaluate",
        "measure context blocks (or a ranking) against relevance judgements",
        "Per query: list metrics of a ranking (nDCG@k, recall@k, P@k, hit@k, "
        "MAP, MRR, as trec_eval computes them) and context metrics of postprocess blocks "
        "(context recall and nDCG, characters used, relevant and duplicate characters, "
        "the first relevant block); then their means over the judged queries.",
        epilog=EPILOG,
    )
    p.add_argument("input", metavar="INPUT", help="blocks (postprocess output) or a ranking")
    p.add_argument("--qrels", required=True, metavar="QRELS", help="relevance judgements")
    p.add_argument("--gain", type=_gain, metavar="G:V,...", help="grade to gain mapping")
    p.add_argument("--split", default="test", help="BEIR qrels split (default: test)")
    p.add_argument("--candidates", metavar="RESULTS", help="retrieved chunks, for list metrics")
    p.add_argument("--k", type=_ints, default=[10], metavar="K,...", help="cutoffs (default: 10)")
    p.add_argument("--chunks", metavar="CHUNKS", help="chunk store with offsets (duplicates)")
    p.add_argument("--max-blocks", type=_positive, metavar="N", help="the block budget")
    p.add_argument("--max-characters", type=_positive, metavar="N", help="the character budget")
    p.add_argument("--summary", metavar="SUMMARY", help="also write the means here")
    add_output(p)
    add_engine_options(p)
    p.set_defaults(run=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``evaluate``; the summary is the quality table."""
    if on_engine(args):
        return run_on_engine(args, "evaluate")
    qrels = read_qrels(args.qrels, gain=args.gain, split=args.split)
    frame = scan_table(args.input)
    is_blocks = c.BLOCK_RANK in frame.collect_schema()
    if not is_blocks and args.candidates:
        raise ConfigError("--candidates is for a blocks input; INPUT is already a ranking")
    blocks = frame if is_blocks else None
    candidates = scan_table(args.candidates) if args.candidates else None
    if not is_blocks:
        candidates = frame
    chunks = scan_table(args.chunks) if args.chunks else None
    plan = evaluate(
        qrels,
        candidates=candidates,
        blocks=blocks,
        k=args.k,
        max_blocks=args.max_blocks,
        max_characters=args.max_characters,
        chunks=chunks,
    )
    (per_query,) = collect(lambda: [plan], args.input)
    write(per_query, args.output, output_format(args))
    means = summarize(per_query)
    if args.summary:
        write(means, args.summary, output_format(args))
    table: dict[str, Any] = {}
    for name, value in means.row(0, named=True).items():
        table[name] = value if isinstance(value, int) else _shown(value)
    table["output"] = args.output
    return table


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
