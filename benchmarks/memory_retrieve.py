"""Time and peak memory of retrieval in fresh processes, each beside its baseline,
alternated (issue 24's bars).

* **BM25**: index and retrieval of 10,000 queries (3-12 words) over 1M synthetic chunks
  of about 60 words (:mod:`benchmarks._retrieve_data`, read from Parquet) by ragframe
  (``bm25_index`` then ``retrieve(index, queries, k=10)``, the candidate table
  collected) and by bm25s with its numba backend on the same texts (``bm25s.tokenize``
  without stop words, ``BM25(backend="numba").index``, then the queries tokenized and
  ``retrieve(k=10)`` on every CPU). Bars: retrieval no slower than bm25s, index build
  within 2x (bm25s: tokenize + index), peak RSS <= 2 GB.
* **dense**: 10,000 queries x 200,000 chunks x 384 dimensions, top 100, inner product:
  ragframe (vectors as an ``Array(Float32, 384)`` column) against the numpy floor (one
  float32 matrix product per block of 128 queries plus ``argpartition`` and a sort of
  the k). Bars: within 1.3x of the floor; peak memory the vectors plus <= 512 MB.

Each process runs under ``/usr/bin/time``; the times are the process's own, around
the work (input reading and generation outside; compiled kernels loaded, and bm25s's
numba functions compiled, on a few queries first). Run::

    python benchmarks/memory_retrieve.py                       # both, full size, 2 rounds
    python benchmarks/memory_retrieve.py --only bm25 --chunks 200000
    python benchmarks/memory_retrieve.py --only dense --rounds 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.memory_postprocess import _timed  # noqa: E402

_RAGFRAME_BM25 = """
import json, sys, time, polars as pl, ragframe as rf
chunks, queries = pl.read_parquet(sys.argv[1]), pl.read_parquet(sys.argv[2])
rf.retrieve(rf.bm25_index(chunks.head(100)), queries.head(10)).collect()  # kernels loaded
t0 = time.perf_counter()
index = rf.bm25_index(chunks)
t1 = time.perf_counter()
out = rf.retrieve(index, queries, k=10).collect()
t2 = time.perf_counter()
print(json.dumps({"index": t1 - t0, "retrieve": t2 - t1, "rows": out.height}))
"""
_BM25S = """
import json, os, sys, time, polars as pl, bm25s
chunks, queries = pl.read_parquet(sys.argv[1]), pl.read_parquet(sys.argv[2])
texts, asked = chunks["text"].to_list(), queries["text"].to_list()
del chunks
t0 = time.perf_counter()
tokens = bm25s.tokenize(texts, stopwords=None, show_progress=False)
model = bm25s.BM25(backend="numba")
model.index(tokens, show_progress=False)
t1 = time.perf_counter()
model.retrieve(bm25s.tokenize(asked[:10], stopwords=None, show_progress=False), k=10,
               show_progress=False, n_threads=len(os.sched_getaffinity(0)))  # compiled
t1, compiling = time.perf_counter(), time.perf_counter() - t1
found = model.retrieve(bm25s.tokenize(asked, stopwords=None, show_progress=False), k=10,
                       show_progress=False, n_threads=len(os.sched_getaffinity(0)))
t2 = time.perf_counter()
rows = int(found.documents.size)
print(json.dumps({"index": t1 - t0 - compiling, "retrieve": t2 - t1, "rows": rows}))
"""
_LOADED = """
def loaded_rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
"""
_RAGFRAME_DENSE = (
    _LOADED
    + """
import json, sys, time, numpy as np, polars as pl, ragframe as rf
chunks, queries, k = pl.read_parquet(sys.argv[1]), pl.read_parquet(sys.argv[2]), int(sys.argv[3])
rf.retrieve(chunks.head(10), queries.head(2), method="dense", metric="ip", k=k).collect()  # loaded
before = loaded_rss()
t0 = time.perf_counter()
out = rf.retrieve(chunks, queries, method="dense", metric="ip", k=k).collect()
print(json.dumps({"search": time.perf_counter() - t0, "rows": out.height, "loaded": before}))
"""
)
_NUMPY_FLOOR = (
    _LOADED
    + """
import json, sys, time, numpy as np
chunk_vectors, query_vectors, k = np.load(sys.argv[1]), np.load(sys.argv[2]), int(sys.argv[3])
before = loaded_rss()
t0 = time.perf_counter()
rows, scores = [], []
for lo in range(0, len(query_vectors), 128):
    s = query_vectors[lo:lo + 128] @ chunk_vectors.T
    top = np.argpartition(-s, k, axis=1)[:, :k]
    best = np.take_along_axis(s, top, axis=1)
    order = np.argsort(-best, axis=1, kind="stable")
    rows.append(np.take_along_axis(top, order, axis=1))
    scores.append(np.take_along_axis(best, order, axis=1))
rows, scores = np.concatenate(rows), np.concatenate(scores)
print(json.dumps({"search": time.perf_counter() - t0, "rows": rows.size, "loaded": before}))
"""
)


def _run(code: str, *args: str) -> tuple[dict[str, float], float, float]:
    """The script's JSON line, its wall seconds and peak RSS (bytes)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(code)
    out = Path(script.name).with_suffix(".out")
    try:
        wrapper = (
            f"import runpy, sys; sys.stdout = open({str(out)!r}, 'w'); "
            f"sys.argv = [{script.name!r}, *sys.argv[1:]]; "
            f"runpy.run_path({script.name!r}, run_name='__main__')"
        )
        wall, rss = _timed([sys.executable, "-c", wrapper, *args])
        return json.loads(out.read_text().strip().splitlines()[-1]), wall, rss
    finally:
        Path(script.name).unlink()
        out.unlink(missing_ok=True)


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB"


def bm25(chunks: int, queries: int, rounds: int, workdir: Path) -> None:
    from benchmarks._retrieve_data import chunks as make_chunks
    from benchmarks._retrieve_data import queries as make_queries

    folder = Path(tempfile.mkdtemp(prefix="ragframe-retrieve-", dir=workdir))
    try:
        c, q = folder / "chunks.parquet", folder / "queries.parquet"
        make_chunks(chunks).write_parquet(c)
        make_queries(queries).write_parquet(q)
        found: dict[str, list[tuple[dict[str, float], float, float]]] = {
            "ragframe": [],
            "bm25s": [],
        }
        for _ in range(rounds):
            found["ragframe"].append(_run(_RAGFRAME_BM25, str(c), str(q)))
            found["bm25s"].append(_run(_BM25S, str(c), str(q)))
        print(
            f"BM25, {queries:,} queries over {chunks:,} chunks, top 10 ({rounds} rounds, medians)"
        )
        print("| who | index build | retrieval | peak RSS |")
        print("|---|---|---|---|")
        medians = {}
        for who, runs in found.items():
            index = statistics.median(r[0]["index"] for r in runs)
            retrieve = statistics.median(r[0]["retrieve"] for r in runs)
            rss = max(r[2] for r in runs)
            medians[who] = (index, retrieve)
            print(f"| {who} | {index:.1f} s | {retrieve:.1f} s | {_mib(rss)} |")
        (ri, rr), (bi, br) = medians["ragframe"], medians["bm25s"]
        ratios = f"index {ri / bi:.2f}x (bar <= 2), retrieval {rr / br:.2f}x (bar <= 1)"
        print(f"ragframe / bm25s: {ratios}")
        print(
            "per round (ragframe, bm25s):",
            [
                (round(a[0]["retrieve"], 1), round(b[0]["retrieve"], 1))
                for a, b in zip(found["ragframe"], found["bm25s"], strict=True)
            ],
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _dense_inputs(folder: Path, chunks: int, queries: int, dims: int) -> list[Path]:
    import numpy as np
    import polars as pl

    from benchmarks._retrieve_data import vectors

    paths = [folder / name for name in ("c.parquet", "q.parquet", "c.npy", "q.npy")]
    for n, seed, table, array, key in (
        (chunks, 1, paths[0], paths[2], "doc_id"),
        (queries, 2, paths[1], paths[3], "query_id"),
    ):
        matrix = vectors(n, dims, seed=seed)
        np.save(array, matrix)
        frame = {key: np.arange(n), "vector": pl.Series(matrix, dtype=pl.Array(pl.Float32, dims))}
        if key == "doc_id":
            frame["chunk_index"] = np.zeros(n, dtype=np.int64)
        pl.DataFrame(frame).write_parquet(table)
    return paths


def dense(chunks: int, queries: int, dims: int, k: int, rounds: int, workdir: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ragframe-dense-", dir=workdir))
    try:
        c, q, cn, qn = _dense_inputs(folder, chunks, queries, dims)
        found: dict[str, list[tuple[dict[str, float], float, float]]] = {
            "ragframe": [],
            "numpy floor": [],
        }
        for _ in range(rounds):
            found["ragframe"].append(_run(_RAGFRAME_DENSE, str(c), str(q), str(k)))
            found["numpy floor"].append(_run(_NUMPY_FLOOR, str(cn), str(qn), str(k)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    vector_bytes = 4 * dims * (chunks + queries)
    print(
        f"dense, {queries:,} queries x {chunks:,} chunks x {dims} dims, top {k} "
        f"({rounds} rounds, medians; vectors {_mib(vector_bytes)})"
    )
    print("| who | search | peak RSS | RSS with inputs loaded | peak - loaded |")
    print("|---|---|---|---|---|")
    times = {}
    for who, runs in found.items():
        search = statistics.median(r[0]["search"] for r in runs)
        rss = max(r[2] for r in runs)
        loaded = max(r[0]["loaded"] for r in runs)
        times[who] = search
        print(f"| {who} | {search:.1f} s | {_mib(rss)} | {_mib(loaded)} | {_mib(rss - loaded)} |")
    print(f"ragframe / numpy floor: {times['ragframe'] / times['numpy floor']:.2f}x (bar <= 1.3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["bm25", "dense"])
    parser.add_argument("--chunks", type=int, default=1_000_000, help="BM25 chunks")
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--dense-chunks", type=int, default=200_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--k", type=int, default=100, help="dense top k")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    if args.only in (None, "bm25"):
        bm25(args.chunks, args.queries, args.rounds, args.workdir)
    if args.only in (None, "dense"):
        dense(args.dense_chunks, args.queries, args.dims, args.k, args.rounds, args.workdir)


if __name__ == "__main__":
    main()
