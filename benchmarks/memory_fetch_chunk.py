"""Peak memory of the ``ragframe fetch`` and ``ragframe chunk`` commands on large inputs,
beside the same work done in one call (what the commands did before they ran in
partitions).

Bars of issue 16: fetch 100k pairs (5-50k-character documents) and chunking 2 GB of
text, peak RSS <= 1 GB.

* **fetch**: 10,000 documents of 5,000-50,000 characters (about 275 MB; the docstrings
  that ship with Python, ``tests/longtext.py``), 100,000 requests (10,000 queries x 10
  documents, every document larger than the threshold: all highlighted).
* **chunk**: documents of 5,000-50,000 characters totalling ``--chunk-bytes`` (2 GB by
  default), written as Polars writes them by default: one Parquet row group (the hard
  case: a reader that reads a row group whole holds all the text). Window 400,
  overlap 100.

Each command runs under ``/usr/bin/time -f "%M KB %e s"``; so does the one-call
version (``fetch(...).collect()`` / ``chunk(...).collect()``, then written). The data
goes to a folder under ``--workdir``, removed at the end. Run::

    python benchmarks/memory_fetch_chunk.py                 # both, full size
    python benchmarks/memory_fetch_chunk.py --only fetch --pairs 10000
    python benchmarks/memory_fetch_chunk.py --only chunk --chunk-bytes 2e8
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.memory_postprocess import _timed  # noqa: E402
from tests.longtext import documents, queries, stdlib_text  # noqa: E402

BAR_BYTES = 1e9
_ONE_CALL = {
    "fetch": """
import sys, polars as pl, ragframe
r, d, out = sys.argv[1:4]
ragframe.fetch(pl.scan_parquet(r), pl.scan_parquet(d)).collect().write_parquet(out)
""",
    "chunk": """
import sys, polars as pl, ragframe
d, out = sys.argv[1:3]
config = ragframe.WindowConfig(window_chars=400, overlap_chars=100)
ragframe.chunk(pl.scan_parquet(d), config).collect().write_parquet(out)
""",
}


def _fetch_data(folder: Path, pairs: int) -> tuple[Path, Path, float]:
    docs = documents(max(pairs // 10, 20), 5000, 50000, seed=1)
    reqs = queries(docs, pairs, 10, seed=1).select("query_id", "query", "doc_id", "rank")
    docs.write_parquet(folder / "docs.parquet")
    reqs.write_parquet(folder / "requests.parquet")
    return (
        folder / "requests.parquet",
        folder / "docs.parquet",
        docs["content"].str.len_bytes().sum(),
    )


def _chunk_data(folder: Path, size: float) -> tuple[Path, float]:
    """Documents of 5k-50k characters cut from the stdlib docstrings, one row group."""
    text, rng = stdlib_text(), np.random.default_rng(0)
    n = int(size / 27_500) + 1
    lengths = rng.integers(5000, 50001, n)
    starts = rng.integers(0, len(text) - lengths)
    frame = pl.LazyFrame({"doc_id": np.arange(n), "start": starts, "length": lengths})
    content = pl.lit(text).str.slice(pl.col("start"), pl.col("length")).alias("content")
    frame.select("doc_id", content).sink_parquet(folder / "docs.parquet")
    written = pl.scan_parquet(folder / "docs.parquet").select(
        pl.col("content").str.len_bytes().sum()
    )
    return folder / "docs.parquet", float(written.collect().item())


def _row(name: str, what: str, command: list[str], one_call: list[str], out: Path) -> bool:
    wall, rss = _timed(command)
    out.unlink()
    one_wall, one_rss = _timed(one_call)
    out.unlink()
    ok = rss <= BAR_BYTES
    print(
        f"| {name} | {what} | {wall:.1f} s | {rss / 2**20:,.0f} MiB | {one_wall:.1f} s "
        f"| {one_rss / 2**20:,.0f} MiB | {'ok' if ok else 'MISSED'} |",
        flush=True,
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["fetch", "chunk"])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--chunk-bytes", type=float, default=2e9)
    parser.add_argument("--workdir", default=tempfile.gettempdir())
    args = parser.parse_args()
    started = time.perf_counter()
    print("| command | input | wall | peak RSS | one call wall | one call RSS | <= 1 GB |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    cli = [sys.executable, "-m", "ragframe.cli"]
    for stage in ("fetch", "chunk"):
        if args.only not in (None, stage):
            continue
        folder = Path(tempfile.mkdtemp(prefix="ragframe-memory-", dir=args.workdir))
        out = folder / "out.parquet"
        try:
            if stage == "fetch":
                reqs, docs, text = _fetch_data(folder, args.pairs)
                what = f"{args.pairs:,} pairs over {text / 1e6:,.0f} MB"
                command = [*cli, "fetch", str(reqs), str(docs), "-o", str(out), "--quiet"]
                one = [sys.executable, "-c", _ONE_CALL["fetch"], str(reqs), str(docs), str(out)]
            else:
                docs, text = _chunk_data(folder, args.chunk_bytes)
                what = f"{text / 1e9:.2f} GB of text"
                command = [*cli, "chunk", str(docs), "-o", str(out), "--quiet"]
                command += ["--window", "400", "--overlap", "100"]
                one = [sys.executable, "-c", _ONE_CALL["chunk"], str(docs), str(out)]
            ok = _row(stage, what, command, one, out) and ok
        finally:
            shutil.rmtree(folder)
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
