"""Real Lucene as an oracle for ragframe's highlighter (SPEC 2.1), through the JVM.

``tests/lucene/FvhOracle.java`` indexes each (query, content) pair on its own and asks
Lucene 8's ``FastVectorHighlighter`` for the fragments Fess would get (fragment size
1000, 5 fragments, empty tags, score order, boundary scanner ``chars`` with tab,
newline, U+0013 and space scanned up to 20, phrase limit 256), with ``StandardAnalyzer``
without stop words. This module compiles it once per source and class path (into the
temporary directory), feeds it many pairs per JVM start and converts Java's UTF-16
offsets to code points, which is what ragframe counts.

Lucene's jars are found by globbing ``/usr/share/java/lucene-*.jar`` (Debian's
``liblucene8-java``); ``RAGFRAME_LUCENE_JARS`` overrides that with a list of jars or
folders separated by ``os.pathsep``. :func:`available` says whether ``java``, ``javac``
and the jars are there, so tests can skip cleanly.
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import NamedTuple

JAVA_SOURCE = Path(__file__).resolve().parent / "lucene" / "FvhOracle.java"
MODULES = ("core", "analyzers-common", "highlighter", "queries", "memory")
"""The Lucene modules the oracle needs (others under /usr/share/java are left out)."""
DEFAULT_JAR_DIR = "/usr/share/java"
JARS_ENV = "RAGFRAME_LUCENE_JARS"
JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""Short runs with small heaps: fewer GC and compiler threads (results do not depend on it)."""
PER_JVM = 1000
"""Pairs per JVM at least before the work is split over several (up to 8)."""


class Fragment(NamedTuple):
    """One Lucene fragment: its text, ``[start, end)`` in code points, its score and
    ``[start16, end16)``, Java's UTF-16 offsets.

    Lucene counts UTF-16 units, so an edge can fall inside a surrogate pair (an emoji
    where no boundary character is within reach). Then ``text`` holds the lone surrogate
    as Java has it, ``start`` is rounded down and ``end`` up to whole code points, and
    ``text != content[start:end]``; :attr:`splits_pair` says so."""

    text: str
    start: int
    end: int
    score: float
    start16: int
    end16: int

    @property
    def splits_pair(self) -> bool:
        """True when an edge falls inside a surrogate pair."""
        return any("\ud800" <= ch <= "\udfff" for ch in self.text[:1] + self.text[-1:])


class Token(NamedTuple):
    """One ``StandardTokenizer`` token: ``[start, end)`` in code points, its type
    (``<ALPHANUM>``, ``<NUM>``, ``<IDEOGRAPHIC>``, ...) and its lower-cased term."""

    start: int
    end: int
    type: str
    term: str


class LuceneError(RuntimeError):
    """Lucene rejected a pair (the message is Java's exception)."""


def _candidates() -> list[Path]:
    spec = os.environ.get(JARS_ENV)
    places = spec.split(os.pathsep) if spec else [DEFAULT_JAR_DIR]
    found: list[Path] = []
    for place in filter(None, places):
        path = Path(place)
        if path.is_dir():
            found += sorted(Path(p) for p in glob.glob(str(path / "lucene-*.jar")))
        elif path.is_file():
            found.append(path)
    return found


def jars(modules: Sequence[str] = MODULES) -> list[Path] | None:
    """One jar per needed module (a versioned name preferred), or None if one is missing."""
    found = _candidates()
    chosen: list[Path] = []
    for module in modules:
        versioned = [
            p
            for p in found
            if p.name.startswith(f"lucene-{module}-") and p.name[len(module) + 8 :][:1].isdigit()
        ]
        plain = [p for p in found if p.name == f"lucene-{module}.jar"]
        pick = sorted(versioned)[-1:] or plain
        if not pick:
            return None
        chosen.append(pick[0])
    return chosen


def available() -> bool:
    """True when ``java``, ``javac`` and Lucene's jars are all present."""
    return bool(shutil.which("java") and shutil.which("javac") and jars())


def classpath() -> str:
    """The jars, joined for ``-cp``."""
    found = jars()
    if not found:
        raise LuceneError(f"Lucene jars not found (set {JARS_ENV})")
    return os.pathsep.join(str(p) for p in found)


@cache
def compiled() -> Path:
    """The folder holding ``FvhOracle.class``: compiled once per source and class path."""
    cp = classpath()
    key = hashlib.sha256(JAVA_SOURCE.read_bytes() + cp.encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"ragframe-lucene-oracle-{key}"
    if (target / "FvhOracle.class").is_file():
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


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _pack(*strings: str) -> bytes:
    out = bytearray()
    for s in strings:
        data = _utf16(s)
        out += struct.pack(">i", len(data) // 2) + data
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def int(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return int(value)

    def double(self) -> float:
        (value,) = struct.unpack_from(">d", self.data, self.pos)
        self.pos += 8
        return float(value)

    def string(self) -> str:
        n = 2 * self.int()
        text = self.data[self.pos : self.pos + n].decode("utf-16-be", "surrogatepass")
        self.pos += n
        return text


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _run(args: list[str], records: list[bytes], timeout: float) -> bytes:
    """The oracle's output on ``records``: split over several JVMs when there are many
    (each record's answer is self-delimited, so the outputs concatenate in order)."""
    cp = os.pathsep.join([str(compiled()), classpath()])
    cmd = ["java", *JVM_FLAGS, "-cp", cp, "FvhOracle", *args]
    jobs = max(1, min(_cpus() // 2, 8, len(records) // PER_JVM))
    bounds = [len(records) * k // jobs for k in range(jobs + 1)]
    chunks = [b"".join(records[a:b]) for a, b in itertools.pairwise(bounds)]

    def one(payload: bytes) -> bytes:
        done = subprocess.run(cmd, input=payload, capture_output=True, timeout=timeout)
        if done.returncode != 0:
            raise LuceneError(done.stderr.decode("utf-8", "replace")[-4000:])
        return done.stdout

    with ThreadPoolExecutor(jobs) as pool:
        return b"".join(pool.map(one, chunks))


def utf16_to_code_points(text: str) -> tuple[list[int], list[int]] | None:
    """``(down, up)``: ``down[u]`` / ``up[u]`` is the code point offset of UTF-16 offset
    ``u``, an offset inside a surrogate pair rounded down / up (None: all BMP, the same)."""
    if not text or max(text) <= "\uffff":
        return None
    down: list[int] = []
    up: list[int] = []
    for i, ch in enumerate(text):
        down.append(i)
        up.append(i)
        if ch > "\uffff":
            down.append(i)
            up.append(i + 1)
    down.append(len(text))
    up.append(len(text))
    return down, up


def highlight(
    pairs: Sequence[tuple[str, str]],
    fragment_size: int = 1000,
    fragments: int = 5,
    phrase_limit: int = 256,
    *,
    timeout: float = 600.0,
) -> list[list[Fragment]]:
    """Lucene's fragments of each ``(query, content)`` pair, in Lucene's (score) order;
    an empty list where nothing matched. Raises :class:`LuceneError` if Lucene throws
    (a fragment size under 18, for one)."""
    if not pairs:
        return []
    args = ["--fragsize", str(fragment_size), "--frags", str(fragments)]
    args += ["--phrase-limit", str(phrase_limit)]
    data = _Reader(_run(args, [_pack(q, c) for q, c in pairs], timeout))
    out: list[list[Fragment]] = []
    for query, content in pairs:
        n = data.int()
        if n < 0:
            raise LuceneError(f"{data.string()} (query {query!r})")
        table = utf16_to_code_points(content)
        units = _utf16(content)
        frags = []
        for _ in range(n):
            s16, e16, score, text = data.int(), data.int(), data.double(), data.string()
            if units[2 * s16 : 2 * e16].decode("utf-16-be", "surrogatepass") != text:
                raise LuceneError(f"fragment {text!r} is not content[{s16}:{e16}] (UTF-16)")
            start, end = (s16, e16) if table is None else (table[0][s16], table[1][e16])
            frags.append(Fragment(text, start, end, score, s16, e16))
        out.append(frags)
    return out


def tokens(texts: Sequence[str], *, timeout: float = 600.0) -> list[list[Token]]:
    """``StandardAnalyzer`` (no stop words) tokens of each text, offsets in code points."""
    if not texts:
        return []
    data = _Reader(_run(["--tokens"], [_pack(t) for t in texts], timeout))
    out: list[list[Token]] = []
    for text in texts:
        table = utf16_to_code_points(text)
        row = []
        for _ in range(data.int()):
            start, end, kind, term = data.int(), data.int(), data.string(), data.string()
            if table is not None:
                start, end = table[0][start], table[1][end]
            row.append(Token(start, end, kind, term))
        out.append(row)
    return out
