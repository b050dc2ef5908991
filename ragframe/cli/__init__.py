"""The ``ragframe`` command line: parse arguments, build configs, call the library.

One module per command: :mod:`.postprocess`, :mod:`.fetch`, :mod:`.evaluate`,
:mod:`.sweep` and :mod:`.window` (the ``window`` and ``chunk`` commands). Each has an
``add_<name>`` function that declares the command's parser and a ``run_<name>``
function that runs it and returns a summary dict. :mod:`._options` generates a
command's options from its config dataclass (one ``--field-name`` per field, help from
the config's docstring), and :mod:`._common` holds what the commands share:
``-o/--output``, collecting and writing with one-line errors. :func:`main` prints the
summary, or one line ``error: <message>`` and exits with status 2 on any
:class:`RagframeError` (a bad command line included), 130 on Ctrl-C and 143 on SIGTERM
(:mod:`._signals`); never a traceback for any of these.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from importlib import metadata
from typing import Any, TextIO

from ragframe.cli import _signals
from ragframe.cli._common import Parser
from ragframe.cli.evaluate import add_evaluate
from ragframe.cli.fetch import add_fetch
from ragframe.cli.postprocess import add_postprocess
from ragframe.cli.sweep import add_sweep
from ragframe.cli.window import add_chunk, add_window
from ragframe.errors import RagframeError
from ragframe.io import STDIO

Runner = Callable[[argparse.Namespace], dict[str, Any]]
INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT."""


def _print_summary(title: str, summary: dict[str, Any], file: TextIO) -> None:
    width = max(len(k) for k in summary)
    print(title, file=file)
    for key, value in summary.items():
        shown = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        print(f"  {key.ljust(width)}  {shown}", file=file)


def version_text() -> str:
    """``ragframe X (polars Y, numba Z, python W)``: what a bug report needs."""
    names = ("ragframe", "polars", "numba")
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    python = ".".join(map(str, sys.version_info[:3]))
    libraries = ", ".join(f"{name} {found[name]}" for name in names[1:])
    return f"ragframe {found['ragframe']} ({libraries}, python {python})"


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand."""
    parser = Parser(
        prog="ragframe",
        description="Turn retrieval results into LLM context, for every query at once.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


_SUBCOMMANDS: list[Callable[[Any], None]] = [
    add_postprocess,
    add_fetch,
    add_evaluate,
    add_sweep,
    add_window,
    add_chunk,
]


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    runner: Runner = args.run
    started = time.perf_counter()
    summary = runner(args)
    summary["seconds"] = f"{time.perf_counter() - started:.3f}"
    to_stdout = getattr(args, "output", None) == STDIO  # the output itself goes there
    _print_summary(f"ragframe {args.command}", summary, sys.stderr if to_stdout else sys.stdout)
    return 0


def _one_line(message: str) -> str:
    return message.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ragframe`` console script; returns the exit status.

    Run as the command (``argv`` is ``None``: the arguments are ``sys.argv``), Ctrl-C
    and SIGTERM end the process at once (:mod:`._signals`). Called from Python with an
    ``argv`` list, Ctrl-C interrupts as usual and ``main`` returns 130.
    """
    try:
        with _signals.exit_on_signals() if argv is None else nullcontext():
            return _run(argv)
    except RagframeError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
