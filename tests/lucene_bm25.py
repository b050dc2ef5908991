"""Real Lucene as an oracle for ragframe's BM25 retrieval (SPEC 6), through the JVM.

``tests/lucene/Bm25Oracle.java`` indexes the chunks, one document per chunk in row
order, with ``StandardAnalyzer`` without stop words and ``BM25Similarity(k1, b)``, and
searches each query as the classic ``QueryParser`` parses it (the text escaped: plain
words, default operator OR). This module compiles it once per source and class path
(into the temporary directory, as :mod:`tests.lucene_oracle` does for the highlighter)
and runs it on whole tables: one JVM indexes and searches everything.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

from tests import lucene_oracle

JAVA_SOURCE = Path(__file__).resolve().parent / "lucene" / "Bm25Oracle.java"
MODULES = ("core", "analyzers-common", "queryparser")


class Result(NamedTuple):
    """One query's hits: chunk rows and float32 scores, best first; and the query as
    Lucene rewrote it."""

    rows: list[int]
    scores: list[float]
    query: str


def available() -> bool:
    """True when ``java``, ``javac`` and the jars this oracle needs are present."""
    return bool(shutil.which("java") and shutil.which("javac") and lucene_oracle.jars(MODULES))


def _classpath() -> str:
    found = lucene_oracle.jars(MODULES)
    if not found:
        raise lucene_oracle.LuceneError("Lucene jars not found")
    return os.pathsep.join(str(p) for p in found)


@cache
def compiled() -> Path:
    """The folder holding ``Bm25Oracle.class``, compiled once per source and class path."""
    cp = _classpath()
    key = hashlib.sha256(JAVA_SOURCE.read_bytes() + cp.encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"ragframe-lucene-bm25-{key}"
    if (target / "Bm25Oracle.class").is_file():
        return target
    work = Path(tempfile.mkdtemp(prefix="ragframe-lucene-build-"))
    subprocess.run(
        ["javac", "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(work), str(JAVA_SOURCE)],
        check=True,
        capture_output=True,
    )
    try:
        work.rename(target)
    except OSError:  # another process got there first
        shutil.rmtree(work, ignore_errors=True)
    return target


def _strings(texts: Sequence[str | None]) -> bytes:
    out = bytearray(struct.pack(">i", len(texts)))
    for text in texts:
        data = (text or "").encode("utf-16-be", "surrogatepass")
        out += struct.pack(">i", len(data) // 2) + data
    return bytes(out)


def _java(args: list[str], payload: bytes, timeout: float) -> bytes:
    cp = os.pathsep.join([str(compiled()), _classpath()])
    cmd = ["java", *lucene_oracle.JVM_FLAGS, "-cp", cp, "Bm25Oracle", *args]
    done = subprocess.run(cmd, input=payload, capture_output=True, timeout=timeout)
    if done.returncode != 0:
        raise lucene_oracle.LuceneError(done.stderr.decode("utf-8", "replace")[-4000:])
    return done.stdout


def search(
    chunks: Sequence[str | None],
    queries: Sequence[str | None],
    *,
    top: int = 10,
    k1: float = 1.2,
    b: float = 0.75,
    timeout: float = 600.0,
) -> list[Result]:
    """Lucene's top ``top`` chunks of each query (null texts are empty)."""
    args = ["--top", str(top), "--k1", repr(k1), "--b", repr(b)]
    data = lucene_oracle._Reader(_java(args, _strings(chunks) + _strings(queries)[:], timeout))
    out = []
    for _ in queries:
        rows, scores = [], []
        for _ in range(data.int()):
            rows.append(data.int())
            (score,) = struct.unpack(">f", struct.pack(">i", data.int()))
            scores.append(score)
        out.append(Result(rows, scores, data.string()))
    return out


def norms(lengths: Sequence[int], *, timeout: float = 60.0) -> tuple[list[int], list[int]]:
    """``SmallFloat.intToByte4`` of each length, and ``byte4ToInt`` of every byte."""
    payload = struct.pack(f">i{len(lengths)}i", len(lengths), *lengths)
    raw = _java(["--norms"], payload, timeout)
    codes = list(raw[: len(lengths)])
    decoded = list(struct.unpack(">256i", raw[len(lengths) :]))
    return codes, decoded
