"""Compiling the next kernels ahead, in a second process, while this one compiles the
first: a first run only (nothing here runs while the cache holds the kernels).

numba compiles one function at a time per process (a global lock), so on an empty cache
a postprocess call would compile its kernels one after another. On the first cache miss
of a kernel of :data:`RUN_ORDER` (the order a stage declares with :func:`plan`:
``postprocess``'s, in :mod:`ragframe.postprocess._kernels`), this process starts another
(``python -m`` this module) that compiles the kernels after it, the last first, into the
same cache, and reports ``start NAME`` and ``done NAME`` on its stdout. When this
process needs one of them: done, it loads it from the cache; started, it waits for it;
not started, it compiles it itself and tells the other to skip it. The other process
ends when this one does (it watches its stdin), and its failure only means this process
compiles more itself.

A second process helps only where a CPU is idle: on a machine whose CPUs are busy
already it takes their time from this one and adds its own start and the helpers both
compile (about 3 s of CPU), so it is started only while the load average leaves a CPU
free (:func:`idle_cpu`). ``RAGFRAME_COMPILE_AHEAD=1`` starts it whatever the load,
``0`` never.

Each kernel file registers a :func:`sample` that runs its kernel through its wrapper on
a few rows: the wrapper gives the kernel its one signature (:mod:`._compile`), so the
sample compiles exactly what a real call needs.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import IO, TypeVar

SWITCH = "RAGFRAME_COMPILE_AHEAD"
"""``1``: a second process whatever the load; ``0``: none; unset: while a CPU is idle."""
RUN_ORDER: dict[str, str] = {}
"""The kernels one call of the planning stage may run, in the order it first calls
them, and the module (the kernel file) of each (:func:`plan`)."""
ONLY_SOME_CALLS: set[str] = set()
"""Kernels of :data:`RUN_ORDER` a call runs only for some inputs: the second process
leaves them to the call that needs them."""
SAMPLE_NEEDS: dict[str, str] = {}
"""A kernel whose sample runs another kernel first: the second process compiles that
one first, under its own name (else it compiles the other while it names the first,
and this process, seeing the other not started, compiles it too)."""
PLANNER: list[str] = []
"""The module that declared :data:`RUN_ORDER` (:func:`plan`): the second process imports
it first."""
WAIT_LIMIT = 300
"""Seconds this process waits for a kernel the other compiles, at most (then it compiles
it itself: the other process may be stuck)."""
SAMPLES: dict[str, Callable[[], object]] = {}
"""Per kernel, a call that compiles it (registered by :func:`sample`)."""
F = TypeVar("F", bound=Callable[[], object])


def plan(
    planner: str,
    run_order: dict[str, str],
    only_some_calls: frozenset[str],
    sample_needs: dict[str, str],
) -> None:
    """Declare, from the module ``planner`` (imported before any of its kernels runs),
    the kernels a call runs in order (name -> module), those it runs only for some
    inputs, and the samples that run another kernel first (see the module docstring and
    :data:`RUN_ORDER`); one planner per process."""
    if PLANNER and PLANNER[0] != planner:
        raise RuntimeError(f"kernels planned by {PLANNER[0]} already, not {planner}")
    PLANNER[:] = [planner]
    RUN_ORDER.clear()
    RUN_ORDER.update(run_order)
    ONLY_SOME_CALLS.clear()
    ONLY_SOME_CALLS.update(only_some_calls)
    SAMPLE_NEEDS.clear()
    SAMPLE_NEEDS.update(sample_needs)


def sample(kernel: str) -> Callable[[F], F]:
    """Register a kernel file's call of ``kernel`` on a few rows (see the docstring)."""

    def register(function: F) -> F:
        SAMPLES[kernel] = function
        return function

    return register


class _Ahead:
    """The second process, as this one sees it: what it has started and done."""

    def __init__(self, process: subprocess.Popen[str], names: Sequence[str]) -> None:
        self.process = process
        self.pending = set(names)
        self.started: set[str] = set()
        self.done = threading.Condition()
        self.finished = False
        self.reader = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, lines: IO[str] | None) -> None:
        for line in lines or ():
            what, _, name = line.strip().partition(" ")
            with self.done:
                self.pending.discard(name)
                if what == "start":
                    self.started.add(name)
                else:
                    self.started.discard(name)
                self.done.notify_all()
        with self.done:
            self.finished = True
            self.done.notify_all()

    def before_load(self, name: str) -> None:
        """Wait while the other process compiles ``name`` (:data:`WAIT_LIMIT` at most);
        tell it to skip ``name`` when it has not started it (this process compiles it if
        the cache lacks it)."""
        with self.done:
            self.done.wait_for(lambda: name not in self.started or self.finished, WAIT_LIMIT)
            if name in self.pending and not self.finished:
                self.pending.discard(name)
                _tell(self.process.stdin, name)


_AHEAD: list[_Ahead] = []
"""The second process, once started (at most one per process)."""
_SECOND: list[bool] = []
"""Set in the second process itself, which starts no other."""
_LOCK = threading.Lock()


def before_load(name: str) -> None:
    """Called before kernel ``name`` is looked up in the cache (see the docstring)."""
    if _AHEAD:
        _AHEAD[0].before_load(name)


def missed(name: str, cached: Callable[[str], bool]) -> None:
    """Kernel ``name`` is not in the cache: compile the kernels after it that are not
    (``cached`` tells) in a second process, if none was started and a second CPU is
    there."""
    wanted = {"0": False, "1": True}.get(os.environ.get(SWITCH, ""))
    if name not in RUN_ORDER or _SECOND or not (idle_cpu() if wanted is None else wanted):
        return
    later = list(RUN_ORDER)[list(RUN_ORDER).index(name) + 1 :]
    names = _ahead_order([k for k in reversed(later) if k not in ONLY_SOME_CALLS and not cached(k)])
    with _LOCK:
        if _AHEAD or not names:
            return
        try:
            process = subprocess.Popen(
                [sys.executable, "-P", "-m", __name__, *PLANNER, *names],  # -P: not the cwd's
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},  # this ragframe
                text=True,
            )
        except (OSError, ValueError):  # no second process: this one compiles everything
            return
        _AHEAD.append(_Ahead(process, names))
        atexit.register(stop)


def _ahead_order(names: list[str]) -> list[str]:
    """``names``, each one a sample needs (:data:`SAMPLE_NEEDS`) moved before it.

    Example:
        >>> _ahead_order(["_write", "_merge", "_walk"])
        ['_merge', '_write', '_walk']
    """
    for kernel, first in SAMPLE_NEEDS.items():
        if kernel in names and first in names and names.index(first) > names.index(kernel):
            names.remove(first)
            names.insert(names.index(kernel), first)
    return names


def stop() -> None:
    """End the second process (at exit: a kernel it compiles then is not needed)."""
    for ahead in _AHEAD:
        ahead.process.kill()
        ahead.process.wait()
        ahead.reader.join(timeout=1)
        for stream in (ahead.process.stdin, ahead.process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


def _tell(stream: IO[str] | None, name: str) -> None:
    try:
        if stream is not None:
            stream.write(name + "\n")
            stream.flush()
    except OSError:  # it has ended
        pass


def idle_cpu() -> bool:
    """Whether a CPU is free for a second process: two or more CPUs, and a 1-minute load
    average below their number less one (this process)."""
    cpus = _threads()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not on every platform: count the CPUs only
        load = 0.0
    return cpus >= 2 and load < cpus - 1


def _threads() -> int:
    """The CPUs this process may run on (as :mod:`._parts` counts them)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def main(argv: Sequence[str]) -> None:
    """The second process: import the planner (``argv[0]``), then compile the kernels
    ``argv[1:]`` in turn (skipping those this process's parent asks it to skip),
    reporting each on stdout; end when the parent ends."""
    _SECOND.append(True)
    planner, *names = argv
    importlib.import_module(planner)
    skip: set[str] = set()

    def watch() -> None:
        for line in sys.stdin:
            skip.add(line.strip())
        os._exit(0)  # the parent has ended: nothing more is needed

    threading.Thread(target=watch, daemon=True).start()
    for name in names:
        importlib.import_module(RUN_ORDER[name])
        if name in skip:
            continue
        print("start", name, flush=True)
        try:
            SAMPLES[name]()
        finally:
            print("done", name, flush=True)


if __name__ == "__main__":  # run as a script, the kernel files register in the module
    importlib.import_module(__spec__.name).main(sys.argv[1:])
