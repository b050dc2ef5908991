"""The ``ragframe`` command line: parse arguments, build configs, call the library.

One module per command: :mod:`.retrieve`, :mod:`.postprocess`, :mod:`.fetch`, :mod:`.evaluate`,
:mod:`.sweep` and :mod:`.window` (the ``window`` and ``chunk`` commands). Each has an
``add_<name>`` function that declares the command's parser and a ``run_<name>``
function that runs it and returns a summary dict. :mod:`._options` generates a
command's options from its config dataclass (one ``--field-name`` per field, help from
the config's docstring), and :mod:`._common` holds what the commands share:
``-o/--output``, collecting and writing with one-line errors. :func:`main` prints the
summary, or one line ``error: <message>`` and exits with status 2 on any
:class:`RagframeError` (a bad command line included), 130 on Ctrl-C and 143 on SIGTERM
(:mod:`._signals`); never a traceback for any of these.

A run imports only its own command's module (and through it only the library it
calls): :data:`COMMANDS` holds each command's one-line summary for ``ragframe --help``,
and :func:`main` builds the options of the command named on the command line alone, so
``ragframe --help`` loads no stage and ``ragframe fetch`` loads no compiled kernels.

Run as the command, the modules load without the cyclic garbage collector
(:func:`_loading`): importing Polars, numpy, Arrow and the command's modules makes about
80,000 objects the collector tracks and little garbage (it freed about 1,100 in a whole
run), and its passes over them took about 90 ms of a warm ``ragframe postprocess`` of
the default data (a fifth of the process); what they made is then left out of later
passes (:func:`gc.freeze`). Called from Python, the caller's collector is left as it is.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from importlib import metadata
from typing import Any, NamedTuple, TextIO

from ragframe.errors import RagframeError

Runner = Callable[[argparse.Namespace], dict[str, Any]]
INTERRUPTED = 130
"""Exit status after Ctrl-C: 128 + SIGINT."""


class Command(NamedTuple):
    """Where a subcommand is declared, and its line in ``ragframe --help``."""

    module: str
    """The module under ``ragframe.cli`` that declares and runs it."""
    add: str
    """Its function that declares the subcommand's parser (``add_<name>``)."""
    summary: str
    """The same summary the ``add`` function gives (a test checks it)."""


COMMANDS = {
    "retrieve": Command(
        "retrieve",
        "add_retrieve",
        "search every query against the chunks: BM25 as Lucene scores it, or dense",
    ),
    "postprocess": Command(
        "postprocess",
        "add_postprocess",
        "turn retrieved chunks into ranked, merged, budgeted context blocks",
    ),
    "fetch": Command(
        "fetch",
        "add_fetch",
        "full text for small documents, query-relevant passages for large ones",
    ),
    "evaluate": Command(
        "evaluate",
        "add_evaluate",
        "measure context blocks (or a ranking) against relevance judgements",
    ),
    "sweep": Command(
        "sweep", "add_sweep", "run and evaluate many postprocess settings over the same candidates"
    ),
    "experiment": Command(
        "experiment",
        "add_experiment",
        "chunk, retrieve, post-process and evaluate a grid of settings, from documents",
    ),
    "window": Command(
        "window", "add_window", "cut documents made of sections into overlapping character windows"
    ),
    "chunk": Command(
        "window", "add_chunk", "cut raw documents into overlapping character chunks with offsets"
    ),
}
"""The subcommands in ``ragframe --help`` order."""


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


class _Version(argparse.Action):
    """``--version``: print :func:`version_text` (looked up only when asked) and exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.update(nargs=0, default=argparse.SUPPRESS)
        kwargs.update(help="show program's version number and exit")
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        print(version_text())
        parser.exit()


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """Return the top-level parser: every subcommand, with the options of those in
    ``commands`` (all of them when None; the others are listed with their summary)."""
    from ragframe.cli._common import Parser

    parser = Parser(
        prog="ragframe",
        description="Turn retrieval results into LLM context, for every query at once.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        if commands is None or name in commands:
            add = getattr(importlib.import_module(f"{__name__}.{command.module}"), command.add)
            add(sub)
        else:
            sub.add_parser(name, help=command.summary)
    return parser


def named_command(argv: Sequence[str]) -> list[str]:
    """The subcommand ``argv`` names, as a list of none or one: the first argument not
    an option (the top level's options take no value)."""
    words = [word for word in argv if not word.startswith("-")]
    return words[:1] if words and words[0] in COMMANDS else []


@contextmanager
def _loading(command: bool) -> Iterator[None]:
    """While modules load for the command (``command``: run as the console script), no
    cyclic garbage collection; after, what exists is frozen out of later collections
    (the module docstring). Not for a caller's process, nor where collection is off."""
    if not command or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _run(argv: Sequence[str] | None) -> int:
    from ragframe.io import STDIO

    words = sys.argv[1:] if argv is None else argv
    with _loading(argv is None):
        parser = build_parser(named_command(words))
    args = parser.parse_args(words)
    runner: Runner = args.run
    started = time.perf_counter()
    summary = runner(args)
    summary["seconds"] = f"{time.perf_counter() - started:.3f}"
    data = (getattr(args, "output", None), getattr(args, "summary", None))
    to_stdout = STDIO in data  # a table goes there: standard output is for data only
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
        with _loading(argv is None):
            from ragframe.cli import _signals  # Polars and the io layer
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
