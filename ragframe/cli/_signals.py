"""Ctrl-C and SIGTERM for the ``ragframe`` command: stop at once, clean up, one line.

A Python signal handler runs only when the main thread runs Python code, which it may
not do for minutes inside a Polars collect, and an exception raised inside a Polars
callback comes back as a Rust panic with a traceback. So while the command runs, the
signals are only recorded (``signal.set_wakeup_fd``; the C-level handler writes the
signal number to a pipe at once), and a watcher thread, woken by the pipe, removes the
temporary file being written (:func:`ragframe.io.remove_temporaries`), prints
``error: interrupted`` (or ``terminated``) and ends the process with 128 + the signal
number: 130 for Ctrl-C, 143 for SIGTERM. An output file is either complete or absent.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ragframe import io

SIGNALS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def _ignore(signum: int, frame: FrameType | None) -> None:
    """The Python-level handler: nothing; the watcher thread acts."""


def _watch(read_end: int) -> None:
    while True:
        data = os.read(read_end, 1)
        if not data:  # the command finished: the write end was closed
            os.close(read_end)
            return
        if data[0] in SIGNALS:
            break
    io.remove_temporaries()
    sys.stderr.write(f"error: {SIGNALS[signal.Signals(data[0])]}\n")
    sys.stderr.flush()
    os._exit(128 + data[0])


@contextmanager
def exit_on_signals() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM end the process as the module docstring says.
    Only from the main thread; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    previous = {sig: signal.signal(sig, _ignore) for sig in SIGNALS}
    old_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end,), name="ragframe-signals", daemon=True).start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(write_end)
