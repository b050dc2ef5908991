"""``ragframe evaluate``: arguments, the judgements, run, the quality table."""

from __future__ import annotations

import argparse
import os
from typing import Any

import polars as pl

from ragframe import io
from ragframe import schema as c
from ragframe.cli._common import (
    add_command,
    add_output,
    collect,
    one_line_errors,
    output_format,
    progress,
    write,
)
from ragframe.cli._engine import add_engine_options, evaluate_on_engine, on_engine
from ragframe.errors import ConfigError
from ragframe.evaluate import evaluate, read_qrels, summarize
from ragframe.evaluate._files import locate
from ragframe.evaluate._runfiles import scan_run

EPILOG = """\
INPUT is either context blocks (postprocess output, it has block_rank; or fetch output,
it has content: the fetched content is measured, the text the LLM receives) for the
context metrics, or a ranking for the list metrics: retrieved chunks or a run table
(query_id, doc_id or entity_id, similarity or score), or a TREC run file
(qid Q0 docid rank score tag). --candidates adds list metrics to a blocks input.

Inputs and --qrels may be a file, a glob, a folder or '-' (standard input). qrels: a
table (query_id, doc_id, relevance), TREC qrels files (qid 0 docid rel), BEIR .tsv
files (query-id corpus-id score, under their header) or a BEIR folder
(qrels/<split>.tsv). Ids stay as written (a text file's are strings: 0123 is not 123);
integer ids meet string ids only where each string writes its integer plainly
(--ids integers reads string ids as integers). A pair judged twice is an error unless
--duplicates says which grade to keep. Grades <= 0 are not relevant; --gain maps grades
to gains (Cranfield, where 1 is best: --gain 1:4,2:3,3:2,4:1).

Ties: documents of equal score rank by first appearance (--ties input, as ranx does)
or by document id, descending, as trec_eval ranks them (--ties trec_eval: the list
metrics then equal trec_eval's on any run).

context_ndcg's ideal holds min(R, --max-blocks) relevant documents (all R without
--max-blocks). budget_share is against --max-characters, or --max-tokens for blocks
budgeted in tokens.

OUT has one row per query (judged or not); --summary writes the means over the judged
queries, which are also printed (on standard error when OUT or SUMMARY is '-').
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
        found = {int(grade): float(gain) for grade, gain in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected GRADE:GAIN pairs separated by commas (e.g. 1:4,2:3), got {text!r}"
        ) from None
    if not found:
        raise argparse.ArgumentTypeError(f"expected GRADE:GAIN pairs (e.g. 1:4,2:3), got {text!r}")
    return found


def _positive(text: str) -> int:
    value = _ints(text)
    if len(value) != 1:
        raise argparse.ArgumentTypeError(f"expected one positive integer, got {text!r}")
    return value[0]


def add_qrels_options(p: argparse.ArgumentParser) -> None:
    """``--qrels`` and how they are read (``evaluate`` and ``sweep``)."""
    p.add_argument("--qrels", required=True, metavar="QRELS", help="relevance judgements")
    p.add_argument("--gain", type=_gain, metavar="G:V,...", help="grade to gain mapping")
    p.add_argument("--split", metavar="SPLIT", help="a BEIR folder's qrels split (default: test)")
    p.add_argument(
        "--ids",
        choices=["as_written", "integers"],
        default="as_written",
        help="string ids of the qrels (and of a TREC run) as written (default) or parsed "
        "as integers",
    )
    p.add_argument(
        "--duplicates",
        choices=["error", "first", "last", "max"],
        default="error",
        help="a (query, document) judged twice: an error (default), or keep that grade",
    )


def read_judgements(args: argparse.Namespace) -> pl.DataFrame:
    """The ``--qrels`` as the options say."""
    with one_line_errors(args.qrels):
        return read_qrels(
            args.qrels, gain=args.gain, split=args.split, ids=args.ids, duplicates=args.duplicates
        )


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
    p.add_argument(
        "input", metavar="INPUT", help="blocks (postprocess or fetch output) or a ranking"
    )
    add_qrels_options(p)
    p.add_argument("--candidates", metavar="RESULTS", help="retrieved chunks, for list metrics")
    p.add_argument("--k", type=_ints, metavar="K,...", help="cutoffs of a ranking (default: 10)")
    p.add_argument(
        "--ties",
        choices=["input", "trec_eval"],
        help="equal scores of a ranking: by first appearance (default) or as trec_eval",
    )
    p.add_argument("--chunks", metavar="CHUNKS", help="chunk store with offsets (duplicates)")
    p.add_argument("--max-blocks", type=_positive, metavar="N", help="the block budget")
    p.add_argument("--max-characters", type=_positive, metavar="N", help="the character budget")
    p.add_argument(
        "--max-tokens", type=_positive, metavar="N", help="the token budget (blocks in tokens)"
    )
    p.add_argument("--summary", metavar="SUMMARY", help="also write the means here")
    add_output(p)
    add_engine_options(p)
    p.set_defaults(run=run_evaluate)


_IDS = [c.QUERY_ID, c.DOC_ID, c.ENTITY_ID]


def _inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """``(blocks, ranking)``: INPUT as blocks or as a ranking (a TREC run file is read,
    a table scanned), and ``--candidates``."""
    with one_line_errors(args.input):
        kind = locate(args.input, "INPUT", split=None, beir=False).kind
        frame = scan_run(args.input, ids=args.ids) if kind == "trec" else None
        if frame is None:
            frame = io.scan_table(args.input, strings=_IDS)
        schema = frame.collect_schema()
    is_blocks = c.BLOCK_RANK in schema or c.CONTENT in schema
    if not is_blocks:
        if args.candidates:
            raise ConfigError("--candidates is for a blocks input; INPUT is already a ranking")
        return None, frame
    ranking = None
    if args.candidates:
        with one_line_errors(args.candidates):
            ranking = scan_run(args.candidates, ids=args.ids)
    return frame, ranking


def _check(args: argparse.Namespace, blocks: Any, ranking: Any) -> None:
    """Options that the input cannot use are errors, not ignored."""
    if ranking is None:
        for given, option in ((args.k, "--k"), (args.ties, "--ties")):
            if given is not None:
                raise ConfigError(
                    f"{option} is for a ranking's list metrics; INPUT is blocks (add "
                    "--candidates RESULTS for list metrics)"
                )
    if blocks is None:
        for given, option in (
            (args.max_blocks, "--max-blocks"),
            (args.max_characters, "--max-characters"),
            (args.max_tokens, "--max-tokens"),
            (args.chunks, "--chunks"),
        ):
            if given is not None:
                raise ConfigError(
                    f"{option} is for the context metrics of blocks; INPUT is a ranking"
                )


def check_outputs(output: str, summary: str | None) -> None:
    """``-o`` and ``--summary`` can both be written, and are not the same place."""
    io.check_output(output)
    if summary is None:
        return
    io.check_output(summary)
    same = summary == output or (
        io.STDIO not in (summary, output) and os.path.realpath(summary) == os.path.realpath(output)
    )
    if same:
        where = "standard output" if output == io.STDIO else output
        raise ConfigError(
            f"-o and --summary both name {where}; expected two places (one table each)"
        )


def run_evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``evaluate``; the summary is the quality table."""
    from ragframe._progress import steps

    check_outputs(args.output, args.summary)
    with steps("evaluate", 3, progress(args)) as bar:
        qrels = read_judgements(args)
        bar.update(1)
        if on_engine(args):
            per_query = evaluate_on_engine(args, qrels)
        else:
            blocks, ranking = _inputs(args)
            _check(args, blocks, ranking)
            chunks = None
            if args.chunks:
                with one_line_errors(args.chunks):
                    chunks = io.scan_table(args.chunks, strings=_IDS)

            def plan() -> list[pl.LazyFrame]:
                return [
                    evaluate(
                        qrels,
                        candidates=ranking,
                        blocks=blocks,
                        k=args.k or [10],
                        max_blocks=args.max_blocks,
                        max_characters=args.max_characters,
                        max_tokens=args.max_tokens,
                        chunks=chunks,
                        ties=args.ties or "input",
                    )
                ]

            (per_query,) = collect(plan, *[s for s in (args.input, args.candidates) if s])
        bar.update(1)
        means = summarize(per_query)
        write(per_query, args.output, output_format(args))
        if args.summary:
            write(means, args.summary, output_format(args))
        bar.update(1)
    table: dict[str, Any] = {}
    for name, value in means.row(0, named=True).items():
        table[name] = value if isinstance(value, int) else _shown(value)
    table["output"] = args.output
    return table


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
