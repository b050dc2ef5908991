"""Any of ``benchmarks/``' pytest benchmarks, this checkout beside another (a baseline,
e.g. a worktree of an older main), in alternating fresh processes on the same machine.

Run::

    python benchmarks/paired.py --baseline ../base --rounds 3 -- benchmarks/bench_sweep.py -k smoke

Each round runs ``pytest`` once per checkout, in turn (baseline first), each from its
own checkout (its ``ragframe`` and its benchmark files: the data is seeded, the same in
both while the generators are), with ``--benchmark-json``. Printed per benchmark: the
median over rounds of each checkout's median time, and the baseline's time over this
checkout's (above 1: this checkout is faster). A benchmark only one side has is listed
with that side alone. The machine is shared: only the ratios of one run mean much.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _run(tree: Path, args: list[str]) -> dict[str, float]:
    """One fresh ``pytest`` of ``args`` in ``tree``: each benchmark's median seconds."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        command += ["--benchmark-disable-gc", f"--benchmark-json={report}", *args]
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        if done.returncode != 0 or not report.exists():
            sys.exit(f"error: pytest in {tree} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        found = json.loads(report.read_text())["benchmarks"]
    return {b["fullname"]: float(b["stats"]["median"]) for b in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument("--rounds", type=int, default=3, help="processes per checkout")
    parser.add_argument("pytest_args", nargs="+", help="after --: what pytest selects")
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "this": HERE}
    times: dict[str, dict[str, list[float]]] = {"baseline": {}, "this": {}}
    for _ in range(args.rounds):
        for side, tree in trees.items():
            for name, seconds in _run(tree, args.pytest_args).items():
                times[side].setdefault(name, []).append(seconds)
    names = sorted(set(times["baseline"]) | set(times["this"]))
    width = max(len(n) for n in names)
    print(f"{'benchmark':{width}}  baseline       this   baseline/this ({args.rounds} rounds)")
    for name in names:
        base, this = (
            statistics.median(times[s][name]) if name in times[s] else None for s in times
        )
        ratio = f"{base / this:6.2f}x" if base and this else "     -"
        shown = [f"{t * 1000:8.1f} ms" if t is not None else "         -" for t in (base, this)]
        print(f"{name:{width}}  {shown[0]} {shown[1]}   {ratio}")


if __name__ == "__main__":
    main()
