"""Highlight and fetch pairs per second of this checkout beside another one (a baseline,
e.g. a worktree of main), in alternating fresh processes on the same data.

Run::

    python benchmarks/paired_fetch.py --baseline ../main --pairs 10000 --rounds 5

Each round runs one process per checkout, in turn (baseline first), each importing
``ragframe`` and ``benchmarks.bench_fetch``'s data from its own checkout (the data is
seeded: the same in both while ``tests/longtext.py`` is). A process warms up (compiles
or loads its kernels), then times ``highlight`` and ``fetch`` of ``bench_fetch``'s
data, best of ``--repeat`` collects each, and reports its peak RSS. Printed: the median
over rounds of each checkout's best time, pairs per second, and this checkout's speed
over the baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

WORKER = """
import json, resource, sys, time
from benchmarks.bench_fetch import _fetch_data, _highlight_data
from ragframe import fetch, highlight
pairs, repeat = int(sys.argv[1]), int(sys.argv[2])
result = {}
for name, data, run in (("highlight", _highlight_data, highlight), ("fetch", _fetch_data, fetch)):
    reqs, docs = data(pairs)
    run(reqs, docs).collect()  # warm-up: kernels compiled or loaded, tables built
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run(reqs, docs).collect()
        best = min(best, time.perf_counter() - started)
    result[name] = best
result["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(result))
"""


def _run(tree: Path, pairs: int, repeat: int) -> dict[str, float]:
    """One fresh process importing ``ragframe`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(pairs), str(repeat)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout")
    parser.add_argument("--pairs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trees = {"baseline": args.baseline.resolve(), "change": HERE}
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "change": []}
    for _ in range(args.rounds):
        for who, tree in trees.items():
            runs[who].append(_run(tree, args.pairs, args.repeat))
    print(f"{args.pairs} pairs, {args.rounds} rounds alternating, best of {args.repeat} each")
    for stage in ("highlight", "fetch"):
        median = {who: statistics.median(r[stage] for r in runs[who]) for who in runs}
        for who in runs:
            rate = args.pairs / median[who]
            print(f"  {stage:9} {who:8} {median[who] * 1e3:8.1f} ms  {rate:10,.0f} pairs/s")
        print(f"  {stage:9} change/baseline pairs/s: {median['baseline'] / median['change']:.2f}x")
    for who in runs:
        print(f"  peak RSS {who:8} {max(r['rss_mib'] for r in runs[who]):8.0f} MiB (max of rounds)")


if __name__ == "__main__":
    main()
