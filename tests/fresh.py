"""A fresh Python process as a user's first run starts it: an empty kernel cache and the
default ``$RAGFRAME_PYTHON_ROWS`` (the suite's conftest sets it to 0 for its own process),
run from the checkout's root. :func:`run_fresh` runs a script there and checks it ran,
left the named modules unloaded and compiled nothing into the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(
    tmp_path: Path, script: str, args: Sequence[str | Path] = (), *, unloaded: Sequence[str]
) -> None:
    """Run ``script`` with ``args`` in a fresh process whose kernel cache is an empty folder
    under ``tmp_path``; assert it exits 0, that none of ``unloaded`` is in its
    ``sys.modules`` at the end, and that nothing was written to the cache."""
    check = (
        "\nimport sys as _sys\n"
        f"_loaded = sorted(m for m in {tuple(unloaded)!r} if m in _sys.modules)\n"
        "assert not _loaded, f'loaded: {_loaded}'\n"
    )
    cache = tmp_path / "cache"
    env = {**os.environ, "RAGFRAME_CACHE_DIR": str(cache)}
    env.pop("RAGFRAME_PYTHON_ROWS", None)
    run = subprocess.run(
        [sys.executable, "-c", script + check, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert not cache.exists() or not any(cache.iterdir()), sorted(cache.iterdir())
