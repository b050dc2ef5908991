"""Loading the kernels ahead on a warm cache: a run that reads its input first (a
dataset run: the chunk store, the first partition) has the kernels every call runs
loaded meanwhile, on a thread. Loading them (numba's runtime, then each kernel's machine
code) takes about 0.4 s, mostly while the reading, in Polars, leaves the interpreter
free. Where the cache lacks one, the thread loads nothing: the run compiles what it
needs as it needs it (:mod:`._ahead`).

The thread runs the kernels' samples (:func:`._ahead.sample`): each loads its kernel for
the one signature real calls have.
"""

from __future__ import annotations

import atexit
import importlib
import threading

from ragframe._kernels import _ahead

WAIT = 30
"""Seconds the end of the process waits for the thread, at most (it is near its end by
then: the run's first kernel call waits for the loads)."""
_LOADING: list[threading.Thread] = []
"""The thread, once started."""
_LOCK = threading.Lock()


def always() -> tuple[str, ...]:
    """The kernels every call of the planning stage runs (:func:`._ahead.plan`;
    ``postprocess``'s: its merge in characters), in the order it runs them (``_merge``
    before ``_write``, whose sample merges first)."""
    return tuple(name for name in _ahead.RUN_ORDER if name not in _ahead.ONLY_SOME_CALLS)


def load_in_background() -> None:
    """Load the kernels of :func:`always` from the cache on a thread, once per process
    (see the module docstring); nothing when the cache lacks any of them. A kernel the
    thread is loading when the run needs it is waited for (numba's lock), not loaded
    twice."""
    with _LOCK:
        if _LOADING:
            return
        thread = threading.Thread(target=_load_cached, name="ragframe-kernels", daemon=True)
        _LOADING.append(thread)
    thread.start()
    atexit.register(thread.join, WAIT)  # not torn down midway at the end


def _load_cached() -> None:
    """The thread: the samples of :func:`always`, if the cache holds every one."""
    try:
        names = always()
        for name in names:
            importlib.import_module(_ahead.RUN_ORDER[name])
        from ragframe._kernels import _jit  # numba, only now

        if all(_jit.cached(name) for name in names):
            for name in names:
                _ahead.SAMPLES[name]()
    except Exception:  # a head start only: the run loads what it needs itself
        pass
