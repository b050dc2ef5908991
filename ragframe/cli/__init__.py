"""The ``ragframe`` command line: parse arguments, build configs, call the library.

One module per command: :mod:`.postprocess`, :mod:`.fetch`, :mod:`.evaluate` and
:mod:`.window` (the ``window`` and ``chunk`` commands). Each has an ``add_<name>``
function that declares the command's parser and a ``run_<name>`` function that runs it
and returns a summary dict. :mod:`._options` generates a command's options from its
config dataclass (one ``--field-name`` per field, help from the config's docstring), and
:mod:`._common` holds what the commands share: ``-o/--output``, collecting and writing
with one-line errors. :func:`main` prints the summary, or ``error: <message>`` and exits
with status 2 on any :class:`RagframeError`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from ragframe.cli.evaluate import add_evaluate
from ragframe.cli.fetch import add_fetch
from ragframe.cli.postprocess import add_postprocess
from ragframe.cli.window import add_chunk, add_window
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


_SUBCOMMANDS: list[Callable[[Any], None]] = [
    add_postprocess,
    add_fetch,
    add_evaluate,
    add_window,
    add_chunk,
]


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
