"""Long, real, deterministic documents built from the docstrings that ship with Python.

Used by the quality-bar test and the benchmark; nothing is downloaded or copied.
"""

from __future__ import annotations

import ast
import random
import re
import sysconfig
from functools import cache
from pathlib import Path

import polars as pl

_WORD = re.compile(r"[A-Za-z]{5,}")
_COMMON = frozenset(
    {
        "about",
        "above",
        "after",
        "again",
        "against",
        "because",
        "before",
        "being",
        "below",
        "between",
        "called",
        "could",
        "default",
        "doing",
        "during",
        "first",
        "further",
        "given",
        "having",
        "number",
        "object",
        "other",
        "return",
        "returns",
        "should",
        "string",
        "their",
        "there",
        "these",
        "those",
        "through",
        "under",
        "until",
        "using",
        "value",
        "values",
        "where",
        "which",
        "while",
        "would",
    }
)


@cache
def stdlib_text(files: int = 400) -> str:
    """Docstrings of the first ``files`` standard-library modules, in sorted order."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    for path in sorted(root.glob("*.py"))[:files]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    parts.append(doc)
    return "\n\n".join(parts)


def documents(n: int, low: int, high: int, seed: int = 0) -> pl.DataFrame:
    """``n`` documents (``doc_id``, ``title``, ``content``) of ``low..high`` characters,
    each a window of the standard-library text starting at a seeded random place."""
    text, rng = stdlib_text(), random.Random(seed)
    rows = []
    for doc_id in range(n):
        size = rng.randint(low, high)
        start = rng.randrange(0, max(1, len(text) - size))
        rows.append(
            {"doc_id": doc_id, "title": f"doc {doc_id}", "content": text[start : start + size]}
        )
    return pl.DataFrame(rows)


def queries(docs: pl.DataFrame, n_pairs: int, per_query: int, seed: int = 0) -> pl.DataFrame:
    """``n_pairs`` requests (``query_id, query, doc_id, rank``): each query has 2-5
    words of its first document (so it matches somewhere) and ``per_query`` documents."""
    rng = random.Random(seed)
    contents = docs["content"].to_list()
    ids = docs["doc_id"].to_list()
    rows = []
    for query_id in range(n_pairs // per_query):
        picks = rng.sample(range(len(ids)), per_query)
        words = [w for w in _WORD.findall(contents[picks[0]]) if w.lower() not in _COMMON]
        query = " ".join(rng.sample(words, min(len(words), rng.randint(2, 5))))
        for rank, pick in enumerate(picks, start=1):
            rows.append({"query_id": query_id, "query": query, "doc_id": ids[pick], "rank": rank})
    return pl.DataFrame(rows)
