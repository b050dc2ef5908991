"""Peak memory of ``ragframe.postprocess`` relative to the input's Arrow size.

Bar (issue 2): the engine's peak memory <= 4x the input table's Arrow size. Each
variant runs in a fresh subprocess that loads the input into memory, resets the kernel's
RSS high-water mark (``/proc/self/clear_refs``; Linux), collects the engine's plan and
reads ``VmHWM``: the peak is the high-water mark minus the RSS before the run (the input
itself, already resident, is not counted). The input's Arrow size is the sum of its
buffers (candidates + chunk store where one is used).

Before measuring, each child runs ``postprocess`` once on two rows: the first call in
a process loads the compiled kernels (numba's on-disk cache, or compiles them), a fixed
cost of some tens of MiB that does not grow with the input. It is reported on its own
("kernel load"), not in the ratio. Run::

    python benchmarks/memory_postprocess.py            # 10,000 queries x 100 = 1M rows
    python benchmarks/memory_postprocess.py --queries 200
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BAR = 4.0

_CHILD = """
import json, re, sys
import polars as pl
import ragframe

def status():
    text = open("/proc/self/status").read()
    return {k: int(re.search(k + r":\\s+(\\d+)", text).group(1)) * 1024 for k in ("VmRSS", "VmHWM")}

candidates_path, chunks_path = sys.argv[1], sys.argv[2] or None
candidates = pl.read_parquet(candidates_path)
chunks = pl.read_parquet(chunks_path) if chunks_path else None
arrow = candidates.to_arrow().nbytes + (chunks.to_arrow().nbytes if chunks is not None else 0)
tiny = pl.DataFrame({"query_id": [1, 1], "doc_id": [1, 1], "chunk_index": [0, 1],
                     "text": ["warm up " * 5, "up " * 9], "similarity": [0.9, 0.8]})
loading = status()["VmRSS"]
ragframe.postprocess(tiny).collect()
loaded = status()["VmRSS"] - loading
plan = ragframe.postprocess(candidates, ragframe.PostprocessConfig(), chunks=chunks)
before = status()["VmRSS"]
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
out = plan.collect()
peak = status()["VmHWM"]
print(json.dumps({"arrow": arrow, "rss_before": before, "peak": peak, "blocks": out.height,
                  "kernel_load": loaded}))
"""


def measure(candidates: Path, chunks: Path | None) -> dict[str, int]:
    args = [sys.executable, "-c", _CHILD, str(candidates), str(chunks or "")]
    done = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries x 100 candidates")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks._generate import generate

    data = generate(args.queries)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: Path(tmp) / f"{n}.parquet" for n in ("results", "chunks", "inline")}
        data.results.write_parquet(paths["results"])
        data.chunks.write_parquet(paths["chunks"])
        data.inline.write_parquet(paths["inline"])
        for variant, (cands, store) in {
            "store": (paths["results"], paths["chunks"]),
            "inline": (paths["inline"], None),
        }.items():
            m = measure(cands, store)
            ratio = (m["peak"] - m["rss_before"]) / m["arrow"]
            worst = max(worst, ratio)
            print(
                f"{variant:6} rows {data.rows:,}: input Arrow {m['arrow'] / 2**20:8.1f} MiB, "
                f"peak over resident input {(m['peak'] - m['rss_before']) / 2**20:8.1f} MiB "
                f"= {ratio:.2f}x (bar <= {BAR:g}x: {'ok' if ratio <= BAR else 'ABOVE BAR'}); "
                f"kernel load before it {m['kernel_load'] / 2**20:.1f} MiB"
            )
    return 0 if worst <= BAR else 1


if __name__ == "__main__":
    sys.exit(main())
