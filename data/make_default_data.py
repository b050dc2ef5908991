"""Build ragframe's default data set from documentation shipped with Python itself.

Documents are the docstrings of a fixed list of standard-library modules (the module's
docstring, then its public functions and classes, by name, up to ~5,000 characters).
They are cut into character windows of 400 with 100 overlap (step 300), the shape of
a typical chunker. Queries are twenty questions a developer might ask about them, each judged; every
chunk is scored against every query by TF-IDF cosine similarity (numpy), and the top 30
chunks per query are the retrieval results (ties broken by chunk order).

Deterministic for a given Python version (docstrings change between versions). Run from
the repository root::

    python data/make_default_data.py

Writes ``data/documents.parquet`` (doc_id, title, content), ``data/chunks.parquet``
(doc_id, chunk_index, start_char, end_char, text), ``data/queries.parquet`` (query_id,
query), ``data/results.parquet`` (query_id, doc_id, chunk_index, similarity, rank) and
``data/qrels.parquet`` (query_id, doc_id, relevance: 2 for the module that answers a
query, 1 for related ones; hand-made judgements, :data:`JUDGEMENTS`).
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl

MODULES = [
    "abc", "argparse", "ast", "base64", "bisect", "calendar", "cmd", "collections", "colorsys",
    "configparser", "contextlib", "copy", "csv", "dataclasses", "datetime", "decimal",
    "difflib", "enum", "fileinput", "fnmatch", "fractions", "functools", "gettext", "glob",
    "gzip", "hashlib", "heapq", "hmac", "html", "inspect", "io", "ipaddress", "itertools",
    "json", "keyword", "linecache", "locale", "logging", "math", "mimetypes", "numbers",
    "operator", "optparse", "pathlib", "pickle", "pprint", "queue", "random", "re", "sched",
    "secrets", "shelve", "shlex", "shutil", "socketserver", "statistics", "string", "struct",
    "subprocess", "tempfile", "textwrap", "timeit", "tokenize", "traceback", "typing", "uuid",
    "wave", "zlib",
]  # fmt: skip
WINDOW, OVERLAP, TOP = 400, 100, 30
MAX_DOC_CHARS = 5000
QUERIES = [
    "how do I parse command line arguments and options",
    "compress and decompress data with gzip",
    "special characters in regular expression patterns",
    "compute the mean, median and variance of data",
    "create a temporary file or directory that is removed",
    "generate a random UUID",
    "pretty print nested data structures",
    "heap queue priority algorithm smallest item",
    "split a string using shell-like syntax with quotes",
    "decimal floating point arithmetic and rounding",
    "read and write CSV files with a dialect",
    "encode and decode JSON objects",
    "secure hash and message digest algorithms",
    "shallow and deep copy operations",
    "compute differences between sequences of lines",
    "abstract base classes and abstract methods",
    "persistent dictionary stored in a file",
    "run a subprocess and capture its output",
    "measure the execution time of small code snippets",
    "read a configuration file with sections",
]
JUDGEMENTS = [
    {"argparse": 2, "optparse": 2, "shlex": 1, "cmd": 1},
    {"gzip": 2, "zlib": 1},
    {"re": 2, "fnmatch": 1, "glob": 1},
    {"statistics": 2, "math": 1},
    {"tempfile": 2, "shutil": 1},
    {"uuid": 2, "secrets": 1, "random": 1},
    {"pprint": 2},
    {"heapq": 2, "queue": 1, "bisect": 1},
    {"shlex": 2},
    {"decimal": 2, "fractions": 1, "math": 1},
    {"csv": 2},
    {"json": 2},
    {"hashlib": 2, "hmac": 1, "secrets": 1},
    {"copy": 2},
    {"difflib": 2},
    {"abc": 2, "numbers": 1},
    {"shelve": 2, "pickle": 1},
    {"subprocess": 2},
    {"timeit": 2},
    {"configparser": 2},
]
"""Per query (in order), the modules that answer it: 2 = the answer, 1 = related."""
_TOKEN = re.compile(r"[a-z0-9]+")


def _public_members(module: object) -> list[tuple[str, object]]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    members = []
    for name in sorted(set(names)):
        obj = getattr(module, name, None)
        own = getattr(obj, "__module__", None) == getattr(module, "__name__", None)
        if own and (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
            members.append((name, obj))
    return members


def document(name: str) -> tuple[str, str]:
    """Title and content of one module's documentation."""
    module = importlib.import_module(name)
    doc = inspect.getdoc(module) or ""
    parts = [doc]
    for member, obj in _public_members(module):
        text = inspect.getdoc(obj)
        if not text or sum(map(len, parts)) >= MAX_DOC_CHARS:
            continue
        parts.append(f"{name}.{member}\n{text}")
    title = f"{name}: {doc.splitlines()[0] if doc else name}"
    return title, "\n\n".join(parts)[: MAX_DOC_CHARS + 1000]


def windows(content: str) -> list[tuple[int, int]]:
    """Start and end of each window; the last one ends at the end of ``content``."""
    spans, start = [], 0
    while True:
        end = min(start + WINDOW, len(content))
        spans.append((start, end))
        if end == len(content):
            return spans
        start += WINDOW - OVERLAP


def _weights(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    return {t: (1 + math.log(v)) * idf[t] for t, v in counts.items() if t in idf}


def tfidf_scores(chunk_texts: list[str], queries: list[str]) -> np.ndarray:
    """Cosine similarity of sublinear TF-IDF vectors, shape (queries, chunks)."""
    counts = [Counter(_TOKEN.findall(t.lower())) for t in chunk_texts]
    df = Counter(term for c in counts for term in c)
    idf = {t: math.log((1 + len(counts)) / (1 + d)) + 1 for t, d in df.items()}
    chunk_w = [_weights(c, idf) for c in counts]
    query_w = [_weights(Counter(_TOKEN.findall(q.lower())), idf) for q in queries]
    vocab = sorted({t for w in query_w for t in w})
    chunks = np.array([[w.get(t, 0.0) for t in vocab] for w in chunk_w])
    asked = np.array([[w.get(t, 0.0) for t in vocab] for w in query_w])
    chunk_norm = np.array([math.sqrt(sum(x * x for x in w.values())) or 1.0 for w in chunk_w])
    query_norm = np.linalg.norm(asked, axis=1)
    query_norm[query_norm == 0] = 1.0
    return np.round((asked @ chunks.T) / np.outer(query_norm, chunk_norm), 6)


def build() -> dict[str, pl.DataFrame]:
    docs = pl.DataFrame(
        [(i + 1, *document(name)) for i, name in enumerate(MODULES)],
        schema={"doc_id": pl.Int64, "title": pl.String, "content": pl.String},
        orient="row",
    )
    chunk_rows = [
        (doc_id, k, s, e, content[s:e])
        for doc_id, content in docs.select("doc_id", "content").iter_rows()
        for k, (s, e) in enumerate(windows(content))
    ]
    chunks = pl.DataFrame(
        chunk_rows,
        schema=["doc_id", "chunk_index", "start_char", "end_char", "text"],
        orient="row",
    )
    queries = QUERIES
    scores = tfidf_scores(chunks["text"].to_list(), queries)
    results = []
    for qi in range(len(queries)):
        order = np.lexsort((np.arange(scores.shape[1]), -scores[qi]))[:TOP]
        for rank, ci in enumerate(order, start=1):
            doc_id, chunk_index = chunk_rows[ci][:2]
            results.append((qi + 1, doc_id, chunk_index, float(scores[qi, ci]), rank))
    qrels = pl.DataFrame(
        [
            (qi + 1, MODULES.index(name) + 1, grade)
            for qi, graded in enumerate(JUDGEMENTS)
            for name, grade in graded.items()
        ],
        schema=["query_id", "doc_id", "relevance"],
        orient="row",
    )
    return {
        "qrels": qrels,
        "documents": docs,
        "chunks": chunks,
        "queries": pl.DataFrame({"query_id": range(1, len(queries) + 1), "query": queries}),
        "results": pl.DataFrame(
            results,
            schema=["query_id", "doc_id", "chunk_index", "similarity", "rank"],
            orient="row",
        ),
    }


def main() -> None:
    out = Path(__file__).resolve().parent
    for name, table in build().items():
        table.write_parquet(out / f"{name}.parquet", compression="zstd", statistics=False)
        print(f"{name}.parquet: {table.height} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
