"""Peak memory of ``postprocess``: in one process relative to the input's Arrow size, and
of the ``ragframe postprocess`` command on datasets of any size.

**In process** (the default; bar of issue 2: the engine's peak memory <= 4x the input
table's Arrow size). Each variant runs in a fresh subprocess that loads the input into
memory, resets the kernel's RSS high-water mark (``/proc/self/clear_refs``; Linux),
collects the engine's plan and reads ``VmHWM``: the peak is the high-water mark minus
the RSS before the run (the input itself, already resident, is not counted). The
input's Arrow size is the sum of its buffers (candidates + chunk store where one is
used). Before measuring, each child runs ``postprocess`` once on two rows: the first
call in a process loads the compiled kernels, a fixed cost reported on its own
("kernel load"), not in the ratio.

**The command** (``--cli``; bars of issue 16: peak RSS <= 1.5 GB at 30M and 100M
candidate rows, the 100M figure within 20% of the 30M one, 100M end to end <= 3x the
time of 30M). Generates the benchmark's shape on disk -- 52 candidates per query (13
documents x 4 chunks), rank order, a chunk store of about 400k chunks -- as Parquet
files of 5M rows each in a folder under ``--workdir`` (removed at the end), then runs
``/usr/bin/time -f "%M KB %e s" ragframe postprocess FOLDER --chunks chunks.parquet
-o out.parquet`` and the minimal plan (scan, sort by query and similarity, per-query
head(8), join text, write; one in-memory collect) the same way, sizes one after the
other (never two at once). ``--unsorted`` shuffles the rows (every query spread over
every file: the spill path). Run::

    python benchmarks/memory_postprocess.py            # in process: 10,000 x 100 = 1M rows
    python benchmarks/memory_postprocess.py --queries 200
    python benchmarks/memory_postprocess.py --cli 1M,10M,30M,100M
    python benchmarks/memory_postprocess.py --cli 10M --unsorted
    python benchmarks/memory_postprocess.py --passes 10M   # what the counting pass, the
                                                           # filtered scans and a spill cost
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
BAR = 4.0
CLI_BAR_BYTES = 1.5e9
FILE_ROWS = 5_000_000
DOCS_PER_QUERY, RUN = 13, 4
STORE_DOCUMENTS = 60_000
"""About 400k chunks of 400 characters (100 of overlap)."""

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

_MINIMAL = """
import sys
import polars as pl
results, chunks, out = sys.argv[1:4]
top = (pl.scan_parquet(results)
       .sort(["query_id", "similarity"], descending=[False, True], maintain_order=True)
       .group_by("query_id", maintain_order=True).head(8))
store = pl.scan_parquet(chunks).select("doc_id", "chunk_index", "text")
top.join(store, on=["doc_id", "chunk_index"], how="left", maintain_order="left").collect(
    ).write_parquet(out)
"""


def measure(candidates: Path, chunks: Path | None) -> dict[str, int]:
    args = [sys.executable, "-c", _CHILD, str(candidates), str(chunks or "")]
    done = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def in_process(queries: int) -> int:
    sys.path.insert(0, str(ROOT))
    from benchmarks._generate import generate

    data = generate(queries)
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


# --- the command on datasets on disk ------------------------------------------------


def _store(folder: Path) -> np.ndarray:
    """Write the chunk store; return each document's chunk count."""
    sys.path.insert(0, str(ROOT))
    from benchmarks import _generate

    rng = np.random.default_rng(42)
    chunks = _generate._chunks(_generate._documents(rng, STORE_DOCUMENTS))
    chunks.write_parquet(folder / "chunks.parquet")
    counts = chunks.group_by("doc_id").len().sort("doc_id")["len"].to_numpy()
    return np.asarray(counts)


def _piece(rng: np.random.Generator, counts: np.ndarray, first: int, queries: int) -> pl.DataFrame:
    """``queries`` queries from id ``first``: 13 documents x a run of 4 chunk indexes
    (sometimes with a gap), similarities rounded to 3 decimals, rows in rank order."""
    usable = np.flatnonzero(counts >= RUN + 1) + 1
    docs = rng.choice(usable, size=(queries, DOCS_PER_QUERY))
    starts = rng.integers(0, counts[docs - 1] - RUN)
    offsets = np.arange(RUN) + (rng.random((queries, DOCS_PER_QUERY, RUN)) < 0.15).cumsum(-1)
    index = np.minimum(starts[..., None] + offsets, counts[docs - 1, None] - 1)
    base = rng.beta(4, 3, size=(queries, DOCS_PER_QUERY, 1))
    sim = np.round(np.clip(base + rng.normal(0, 0.05, size=index.shape), 0, 1), 3)
    frame = pl.DataFrame(
        {
            "query_id": np.repeat(np.arange(first, first + queries), DOCS_PER_QUERY * RUN),
            "doc_id": np.repeat(docs.ravel(), RUN),
            "chunk_index": index.ravel(),
            "similarity": sim.ravel(),
        }
    )
    ranked = frame.sort(["query_id", "similarity"], descending=[False, True], maintain_order=True)
    return ranked.with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))


def write_dataset(folder: Path, rows: int, *, unsorted: bool = False) -> Path:
    """Candidates of ``rows`` rows as Parquet files of ``FILE_ROWS`` rows in
    ``folder/results``, with ``folder/chunks.parquet``; returns the results folder."""
    counts = _store(folder)
    results = folder / "results"
    results.mkdir()
    rng = np.random.default_rng(7)
    per_query = DOCS_PER_QUERY * RUN
    queries, first, number = rows // per_query, 1, 0
    while first <= queries:
        n = min(FILE_ROWS // per_query, queries - first + 1)
        piece = _piece(rng, counts, first, n)
        piece.write_parquet(results / f"part-{number:05d}.parquet")
        first, number = first + n, number + 1
    if unsorted:  # rows shuffled across all files: every query in every file
        files = sorted(results.glob("*.parquet"))
        whole = pl.read_parquet(files).sample(fraction=1.0, shuffle=True, seed=3)
        for file in files:
            file.unlink()
        for k, start in enumerate(range(0, whole.height, FILE_ROWS)):
            whole.slice(start, FILE_ROWS).write_parquet(results / f"part-{k:05d}.parquet")
    return results


def _timed(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` under ``/usr/bin/time``; its wall seconds and peak RSS (bytes)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        command = ["/usr/bin/time", "-o", report.name, "-f", "%M KB %e s", *argv]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run(command, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        found = re.search(r"(\d+) KB ([\d.]+) s", report.read())
    assert found, "no /usr/bin/time report"
    return float(found[2]), int(found[1]) * 1024.0


def _size(text: str) -> int:
    scale = {"k": 10**3, "m": 10**6}
    return int(float(text[:-1]) * scale[text[-1].lower()]) if text[-1].isalpha() else int(text)


def command_table(sizes: list[int], workdir: Path, unsorted: bool) -> int:
    print(f"load before: {os.getloadavg()[0]:.1f}; {'unsorted' if unsorted else 'rank order'}")
    print("| rows | wall | peak RSS | minimal plan wall | minimal plan RSS |")
    print("|---|---|---|---|---|")
    found: dict[int, tuple[float, float]] = {}
    for rows in sizes:
        folder = Path(tempfile.mkdtemp(prefix="ragframe-memory-", dir=workdir))
        try:
            results = write_dataset(folder, rows, unsorted=unsorted)
            chunks, out = folder / "chunks.parquet", folder / "out.parquet"
            cli = [sys.executable, "-m", "ragframe.cli", "postprocess", str(results)]
            wall, rss = _timed([*cli, "--chunks", str(chunks), "-o", str(out), "--quiet"])
            out.unlink()
            minimal = [sys.executable, "-c", _MINIMAL, f"{results}/*.parquet", str(chunks)]
            m_wall, m_rss = _timed([*minimal, str(out)])
        finally:
            shutil.rmtree(folder)
        found[rows] = (wall, rss)
        print(
            f"| {rows / 1e6:g}M | {wall:.1f} s | {rss / 2**20:,.0f} MiB | {m_wall:.1f} s "
            f"| {m_rss / 2**20:,.0f} MiB |",
            flush=True,
        )
    return _verdict(found)


def _verdict(found: dict[int, tuple[float, float]]) -> int:
    ok = all(rss <= CLI_BAR_BYTES for rows, (_, rss) in found.items() if rows >= 30_000_000)
    print(f"peak RSS <= 1.5 GB at 30M and more: {'ok' if ok else 'MISSED'}")
    if 30_000_000 in found and 100_000_000 in found:
        (w30, r30), (w100, r100) = found[30_000_000], found[100_000_000]
        flat, time_ok = r100 <= 1.2 * r30, w100 <= 3 * w30
        print(f"100M RSS / 30M RSS = {r100 / r30:.2f} (bar <= 1.2: {'ok' if flat else 'MISSED'})")
        print(
            f"100M wall / 30M wall = {w100 / w30:.2f} (bar <= 3: {'ok' if time_ok else 'MISSED'})"
        )
        ok = ok and flat and time_ok
    return 0 if ok else 1


_PASSES = """
import statistics, sys, time
from pathlib import Path
import polars as pl
from ragframe.driver import _ranges
from ragframe.driver._inputs import open_input
from ragframe.partition import postprocess_part
grouped, shuffled, chunks, spill = sys.argv[1:5]
inputs = {"grouped": open_input(grouped, "c"), "shuffled": open_input(shuffled, "c")}
store = pl.read_parquet(chunks)
times = {}
def timed(name, f):
    t = time.perf_counter(); out = f(); times.setdefault(name, []).append(time.perf_counter() - t)
    return out
for _ in range(3):
    for kind, given in inputs.items():
        ranges = timed(f"{kind}: counting", lambda: _ranges.query_ranges(given.frame, 2_000_000))
        fit = _ranges.filtered_scans_fit(given, ranges)
        n = len(ranges.bounds)
        if fit:
            read = _ranges.filtered(given, ranges)
            timed(f"{kind}: filtered scans, all partitions", lambda: [read(k) for k in range(n)])
        else:
            spilled = _ranges.spilled(given, ranges, Path(spill))
            read = timed(f"{kind}: spill", spilled.__enter__)
            timed(f"{kind}: spilled reads, all partitions", lambda: [read(k) for k in range(n)])
            spilled.__exit__(None, None, None)
    rows = inputs["grouped"].frame.filter(pl.col("query_id") <= 38_000).collect()
    timed("postprocess_part of one 2M-row partition", lambda: postprocess_part(rows, chunks=store))
for name, values in times.items():
    print(f"  {name:42} median {statistics.median(values):6.2f} s of {len(values)}")
"""


def passes(rows: int, workdir: Path) -> int:
    """The cost of the counting pass, filtered scans and the spill (same process,
    interleaved rounds), beside one partition's postprocess."""
    folder = Path(tempfile.mkdtemp(prefix="ragframe-memory-", dir=workdir))
    try:
        grouped = write_dataset(folder, rows)
        (folder / "grouped").mkdir()
        grouped.rename(folder / "grouped" / "results")
        (folder / "chunks.parquet").unlink()
        shuffled = write_dataset(folder, rows, unsorted=True)
        print(f"{rows / 1e6:g}M rows, load {os.getloadavg()[0]:.1f}:")
        argv = [folder / "grouped" / "results", shuffled, folder / "chunks.parquet", folder / "x"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-c", _PASSES, *map(str, argv)], check=True, env=env)
    finally:
        shutil.rmtree(folder)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries x 100 candidates")
    parser.add_argument("--cli", help="measure the command at these sizes, e.g. 30M,100M")
    parser.add_argument("--unsorted", action="store_true", help="rows shuffled (--cli)")
    parser.add_argument("--workdir", default=tempfile.gettempdir(), help="where data goes")
    parser.add_argument("--passes", help="time the counting pass and the spill at this size")
    args = parser.parse_args()
    if args.passes:
        return passes(_size(args.passes), Path(args.workdir))
    if args.cli:
        started = time.perf_counter()
        sizes = [_size(s) for s in args.cli.split(",")]
        code = command_table(sizes, Path(args.workdir), args.unsorted)
        print(f"({time.perf_counter() - started:.0f} s in all)")
        return code
    return in_process(args.queries)


if __name__ == "__main__":
    sys.exit(main())
