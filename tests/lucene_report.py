"""ragframe's highlighter against real Lucene: match shares and the differing pairs.

Run ``python tests/lucene_report.py`` (options: ``--show N``, ``--top-docs N``; and
``--tokens``: only Lucene's tokens of tricky samples, with offsets and types). It
prints, for Cranfield (each query with its retrieved documents, fragment sizes 1000 and
100) and for adversarial synthetic pairs, the share of pairs where ragframe's fragments
(text and code-point offsets, in order) equal Lucene's, then the first differing pairs
with both outputs, classified by cause. :mod:`tests.test_lucene_oracle` uses the same
case builders and comparison.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

if __package__ in (None, ""):  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ragframe
from ragframe.reference._analysis import java_lower
from ragframe.reference._analysis import tokens as reference_tokens
from tests import lucene_oracle
from tests.conftest import CRANFIELD
from tests.lucene_oracle import Token

Span = tuple[str, int, int]
"""A fragment as compared: text, start, end (code points)."""


@dataclass(frozen=True)
class Case:
    """One (query, content) pair highlighted at one fragment size."""

    query: str
    content: str
    fragment_size: int = 1000
    source: str = ""


@dataclass
class Outcome:
    """Both highlighters' fragments of one case."""

    case: Case
    lucene: list[Span]
    ragframe: list[Span]

    @property
    def same(self) -> bool:
        return self.lucene == self.ragframe


# --- cases ---------------------------------------------------------------------------


def cranfield_available() -> bool:
    """True when the shared Cranfield fixture is present."""
    return all((CRANFIELD / f).is_file() for f in ("docs.parquet", "queries.parquet"))


def cranfield_cases(fragment_size: int = 1000, top_docs: int | None = None) -> list[Case]:
    """Each query with its retrieved documents (distinct, best rank first; the first
    ``top_docs`` of them when given), the documents' full content."""
    docs = pl.read_parquet(CRANFIELD / "docs.parquet").select("doc_id", "content")
    queries = pl.read_parquet(CRANFIELD / "queries.parquet").select("query_id", "text")
    run = pl.read_parquet(CRANFIELD / "results_minilm.parquet")
    best = run.group_by("query_id", "doc_id").agg(pl.col("rank").min())
    best = best.sort("query_id", "rank")
    if top_docs is not None:
        best = best.filter(pl.int_range(pl.len()).over("query_id") < top_docs)
    rows = best.join(queries, on="query_id").join(docs, on="doc_id").sort("query_id", "rank")
    return [
        Case(q, c or "", fragment_size, f"cranfield q{qid} d{did}")
        for qid, did, q, c in rows.select("query_id", "doc_id", "text", "content").iter_rows()
    ]


# Tokens chosen to sit on StandardTokenizer's (UAX #29) edges. No character outside the
# BMP: Lucene counts those twice (UTF-16), ragframe once (code points), a documented
# difference kept out of the bar's set.
TRICKY = [
    "prandtl's", "Prandtl's", "O'Neil's", "ab'cd'", "'quoted'", "rock'n'roll", "l\u2019avion",
    "a''b", "a'1", "it\u2019s", "e.g.", "i.e.", "m.i.t.", "U.S.A", "foo.bar", "a.b.c.", "2.71",
    "1,000", "1,000.5", "1.000,5", "7,225,226", "1.2.3", "1.2.3.", ".5", "5.", "3.5x", "3,5x",
    "1.5e3", "a1.5", "1e-5", "a.1", "1.a", "x.2y", "2y.x", "1.5a.b", "r.a.e.101", "foo..bar",
    "a,b", "1,a", "10-3", "a-b", "e-mail", "a/b", "x_y", "a_1", "_a", "a_", "__", "x2y", "H2O",
    "abc123def", "12abc", "$100", "50%", "café", "cafe\u0301", "naïve", "İstanbul",
    "ISTANBUL", "ΟΔΟΣ", "Σίσυφος", "ǅ", "Straße", "\u212aelvin", "日本語", "日本語abc",
    "ひらがな", "カタカナ", "カタカナ123", "ｶﾀｶﾅ", "ภาษาไทย", "한국어", "x\u0301y", "\u0301x",
    "a\u200db", "a\u00adb", "ﬁne", "½", "²", "x²", "\uff21\uff22\uff23", "\uff11\uff12\uff13",
    "\u0663\u0664", "\u05d0\"\u05d1", "http://x.y/z", "user@host.com", "mach-number", "M=2.5",
    "(a)", "[12]", "3:1", "a:b", "a\u00b7b", "re-entry", "10^6", "\u263a", "a\u2764b",
]  # fmt: skip
PLAIN = [
    "flow", "wing", "mach", "number", "boundary", "layer", "heat", "transfer", "shock",
    "the", "of", "and", "a", "is", "pressure", "Flow", "WING", "Mach", "x", "3", "5",
    "istanbul", "οδοσ", "prandtl", "e", "g",
]  # fmt: skip
CASED = [
    "İstanbul", "istanbul", "ISTANBUL", "ΟΔΟΣ", "οδοσ", "οδος", "Σ", "\u03c3", "\u03c2",
    "ǅ", "ǆ", "Ǆ", "\u212aelvin",
    "kelvin", "Straße", "STRASSE", "I\u0307", "i", "ΣΊΣΥΦΟΣ", "Ω", "\u2126",
]  # fmt: skip
SEPARATORS = [
    " ", " ", " ", " ", "\n", "\t", "  ", ", ", ". ", ".\n", "\u0013", " - ", "/", "'", ".",
    ",", "_", ":", "\u00a0", "\u3000",
]  # fmt: skip


def _words(rng: random.Random, n: int, tricky: float) -> list[str]:
    return [rng.choice(TRICKY) if rng.random() < tricky else rng.choice(PLAIN) for _ in range(n)]


def _join(rng: random.Random, words: Sequence[str]) -> str:
    out = []
    for i, w in enumerate(words):
        out.append(w)
        if i < len(words) - 1:
            out.append(rng.choice(SEPARATORS))
    return "".join(out)


def _query_from(rng: random.Random, words: Sequence[str]) -> str:
    picked = rng.sample(list(words), k=min(len(words), rng.randint(1, 3)))
    parts = []
    for w in picked:
        roll = rng.random()
        if roll < 0.2:
            w = w.upper()
        elif roll < 0.4:
            w = re.split(r"[\W_]+", w)[0] or w  # a piece: "prandtl" of "prandtl's"
        parts.append(w)
    return " ".join(parts)


def synthetic_cases(n: int = 1200, seed: int = 11) -> list[Case]:
    """Adversarial pairs: tricky tokens (apostrophes, dots, commas in numbers,
    underscores, combining marks, CJK, Katakana, Hangul, Thai, ...), case folding, words
    glued by separators, texts ending near a fragment edge, long words (split at 255),
    boundary characters, more matches than the phrase limit; sizes 18 to 1000. No
    character outside the BMP (see :data:`TRICKY`)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    sizes = [18, 30, 100, 1000]
    for i in range(n):
        kind = i % 7
        size = rng.choice(sizes)
        if kind == 0:  # short, many tricky tokens
            words = _words(rng, rng.randint(1, 12), 0.6)
            cases.append(Case(_query_from(rng, words), _join(rng, words), size, "short"))
        elif kind == 1:  # long text, several fragments
            words = _words(rng, rng.randint(150, 600), 0.15)
            cases.append(Case(_query_from(rng, words), _join(rng, words), size, "long"))
        elif kind == 2:  # length just around the fragment size: end-of-text scans
            words = _words(rng, 3 * size, 0.2)
            text = _join(rng, words)[: size + rng.randint(-8, 25)]
            cases.append(Case(_query_from(rng, text.split() or ["x"]), text, size, "edge"))
        elif kind == 3:  # a match near the end, a word reaching the end of the text
            head = _join(rng, _words(rng, rng.randint(1, size // 4 + 2), 0.1))
            tail = rng.choice(["end.", "end", "x" * rng.randint(1, 40), "end.\n", "end "])
            cases.append(Case("end " + rng.choice(PLAIN), f"{head} end {tail}", size, "tail"))
        elif kind == 4:  # more matches than the phrase limit (256)
            words = [rng.choice(["flow", "wing", "the"]) for _ in range(rng.randint(200, 700))]
            cases.append(Case("flow wing", _join(rng, words), size, "phrase-limit"))
        elif kind == 6:  # case folding: Java's per-code-point lower case, glued separators
            words = [rng.choice(CASED) for _ in range(rng.randint(1, 40))]
            query = " ".join(rng.sample(CASED, k=rng.randint(1, 3)))
            cases.append(Case(query, _join(rng, words), size, "case"))
        else:  # long words (split at 255), no boundary character within reach
            word = "".join(rng.choice("abcxyz") for _ in range(rng.randint(50, 700)))
            text = _join(rng, [*_words(rng, rng.randint(0, 5), 0.2), word, "flow", word[:30]])
            cases.append(Case(f"flow {word[:255]}", text, size, "long-word"))
    return cases


# --- the two highlighters --------------------------------------------------------------


def lucene_spans(cases: Sequence[Case]) -> list[list[Span]]:
    """Lucene's fragments of each case (one JVM run per fragment size)."""
    out: list[list[Span]] = [[] for _ in cases]
    for size in sorted({c.fragment_size for c in cases}):
        idx = [i for i, c in enumerate(cases) if c.fragment_size == size]
        got = lucene_oracle.highlight([(cases[i].query, cases[i].content) for i in idx], size)
        for i, frags in zip(idx, got, strict=True):
            out[i] = [(f.text, f.start, f.end) for f in frags]
    return out


def ragframe_spans(cases: Sequence[Case]) -> list[list[Span]]:
    """ragframe's fragments of each case, through the public API (Lucene's scoring)."""
    out: list[list[Span]] = [[] for _ in cases]
    for size in sorted({c.fragment_size for c in cases}):
        idx = [i for i, c in enumerate(cases) if c.fragment_size == size]
        docs = pl.DataFrame(
            {"doc_id": list(range(len(idx))), "content": [cases[i].content for i in idx]},
            schema={"doc_id": pl.Int64, "content": pl.String},
        )
        pairs = pl.DataFrame(
            {"query": [cases[i].query for i in idx], "doc_id": list(range(len(idx)))},
            schema={"query": pl.String, "doc_id": pl.Int64},
        )
        cfg = ragframe.HighlightConfig(fragment_size=size)  # the default: Lucene's
        frame = ragframe.highlight(pairs, docs, cfg).collect()
        for i, passages in zip(idx, frame["passages"].to_list(), strict=True):
            text = cases[i].content
            out[i] = [(text[p["start"] : p["end"]], p["start"], p["end"]) for p in passages or []]
    return out


def compare(cases: Sequence[Case]) -> list[Outcome]:
    """Both highlighters on every case."""
    lucene, mine = lucene_spans(cases), ragframe_spans(cases)
    return [Outcome(c, a, b) for c, a, b in zip(cases, lucene, mine, strict=True)]


def share(outcomes: Sequence[Outcome]) -> float:
    """The share of cases where both give the same fragments."""
    return sum(o.same for o in outcomes) / len(outcomes) if outcomes else 1.0


# --- classification --------------------------------------------------------------------


def _ragframe_terms(text: str) -> list[str]:
    return [java_lower(text[s:e]) for s, e in reference_tokens(text)]


def _ragframe_matches(query: str, content: str) -> set[tuple[int, int]]:
    terms = set(_ragframe_terms(query))
    return {(s, e) for s, e in reference_tokens(content) if java_lower(content[s:e]) in terms}


_SEPARATORS = (("'\u2019", "apostrophe"), (".", "dot"), (",", "comma"), ("@:", "@ or colon"))


def _token_cause(surface: str, term: str) -> str:
    if term != surface.lower():
        return "case folding"
    if len(surface) >= 255:
        return "token boundary: long token (split at 255)"
    for chars, name in _SEPARATORS:
        if any(ch in surface for ch in chars):
            return f"token boundary: {name}"
    if any(unicodedata.category(ch) == "So" or ch > "\uffff" for ch in surface):
        return "token boundary: emoji"
    if any(unicodedata.category(ch) in ("Mn", "Mc") for ch in surface):
        return "token boundary: combining mark"
    return "token boundary: other"


def _astral(text: str) -> bool:
    return bool(text) and max(text) > "\uffff"


def classify(outcome: Outcome, content_tokens: list[Token], query_tokens: list[Token]) -> str:
    """The likely cause of a difference, from Lucene's tokens and ragframe's rule."""
    case = outcome.case
    terms = {t.term for t in query_tokens}
    lucene = {(t.start, t.end) for t in content_tokens if t.term in terms}
    mine = _ragframe_matches(case.query, case.content)
    if lucene != mine:
        for t in query_tokens:  # a query term that ragframe analyses differently
            surface = case.query[t.start : t.end]
            if _ragframe_terms(surface) != [t.term]:
                return _token_cause(surface, t.term)
        starts = {s for s, _ in lucene ^ mine}
        for t in content_tokens:
            if any(t.start <= s < t.end for s in starts):
                return _token_cause(case.content[t.start : t.end], t.term)
        return "token boundary: not a Lucene token (No, Sk, ...: ½ ² ^)"
    if _astral(case.content):
        return "UTF-16 units (astral characters)"
    n = len(case.content)
    paired = zip(outcome.lucene, outcome.ragframe, strict=False)
    if any(a[1:] != b[1:] and n in (a[2], b[2]) for a, b in paired):
        return "end of text"
    if sorted(outcome.lucene, key=lambda f: f[1]) == sorted(outcome.ragframe, key=lambda f: f[1]):
        return "order"
    return "other"


def classify_all(outcomes: Sequence[Outcome]) -> list[str]:
    """:func:`classify` for each differing outcome (one token run for all)."""
    diff = [o for o in outcomes if not o.same]
    toks = lucene_oracle.tokens([t for o in diff for t in (o.case.content, o.case.query)])
    return [classify(o, toks[2 * i], toks[2 * i + 1]) for i, o in enumerate(diff)]


# --- report ----------------------------------------------------------------------------


def _short(spans: list[Span], width: int = 90) -> str:
    if not spans:
        return "    (none)"
    lines = []
    for text, s, e in spans:
        shown = repr(text if len(text) <= width else text[: width // 2] + "…" + text[-width // 2 :])
        lines.append(f"    [{s}, {e}) {shown}")
    return "\n".join(lines)


def report(name: str, outcomes: list[Outcome], show: int) -> None:
    same = sum(o.same for o in outcomes)
    print(f"\n== {name}: {same}/{len(outcomes)} pairs equal ({100 * share(outcomes):.2f}%)")
    diff = [o for o in outcomes if not o.same]
    if not diff:
        return
    causes = classify_all(diff)
    for cause, count in Counter(causes).most_common():
        print(f"   {count:6d}  {cause}")
    for o, cause in list(zip(diff, causes, strict=True))[:show]:
        c = o.case
        content = c.content if len(c.content) <= 160 else c.content[:160] + "…"
        print(f"\n-- [{cause}] {c.source} size {c.fragment_size} len {len(c.content)}")
        print(f"   query   {c.query!r}\n   content {content!r}")
        print(f"   lucene\n{_short(o.lucene)}\n   ragframe\n{_short(o.ragframe)}")


TOKEN_SAMPLES = [
    "prandtl's", "Prandtl's number", "e.g.", "e.g. x", "i.e.,", "m.i.t.", "U.S.A", "U.S.A.",
    "u.k. .", "r.a.e.101", "w.a.", "2.71", "1,000", "1,000.5", "3.5x", "a-b", "a/b", "x_y",
    "foo.bar", "foo..bar", "10-3", "10^6", "1.2.3", "1.2.3.", "ab'cd'", "'quoted'",
    "O'Neil's", "rock'n'roll", "l\u2019avion", "it\u2019s", "x2y", "H2O", "3d", "abc123def",
    "12abc", "a.b.c.", "a.1", "1.a", "a,b", "1,a", ".5", "5.", "5.x", "$100", "50%",
    "M=2.5", "3:1", "a:b", "(a)", "[12]", "conical.dash", "studied.dash", "e-mail",
    "http://x.y/z", "user@host.com", "café", "cafe\u0301", "x\u0301y", "naïve", "ﬁne",
    "Straße", "\u212aelvin", "İstanbul", "ISTANBUL", "ΟΔΟΣ", "Σίσυφος", "½", "²", "x²",
    "😀", "😀😀", "a😀b", "👍🏽", "🇫🇷", "日本語", "日本語abc", "ひらがな", "カタカナ", "ｶﾀｶﾅ",
    "カタカナ123", "한국어", "ภาษาไทย", "𠀋x", "a\u200db", "a\u00adb", "x" * 300,
]  # fmt: skip


def print_tokens(samples: Sequence[str] = TOKEN_SAMPLES) -> None:
    """Lucene's StandardTokenizer tokens (lower-cased) of each sample, with offsets."""
    for text, toks in zip(samples, lucene_oracle.tokens(samples), strict=True):
        shown = [
            f"{t.term if len(t.term) < 40 else t.term[:8] + '…'}[{t.start},{t.end}){t.type}"
            for t in toks
        ]
        label = text if len(text) < 40 else text[:8] + f"…({len(text)})"
        print(f"{label!r:24} -> {' '.join(shown) or '(no token)'}")


CONTEXTS = ("{}", "a{}b", "1{}2", "{}{}", "x{}", "{}1")
"""Each BMP character in these contexts: its token class as Lucene's grammar reads it."""


def codepoint_report(show: int) -> None:
    """Tokens of every BMP code point in :data:`CONTEXTS`, ragframe against Lucene: the
    characters whose class differs (mostly Unicode versions: Lucene 8.7 reads Unicode 9)."""
    points = [p for p in range(0x10000) if not 0xD800 <= p < 0xE000]
    texts = [ctx.format(chr(p), chr(p)) for p in points for ctx in CONTEXTS]
    lucene = lucene_oracle.tokens(texts)
    differ = []
    for i, p in enumerate(points):
        for j in range(len(CONTEXTS)):
            text = texts[i * len(CONTEXTS) + j]
            got = [(s, e) for s, e in reference_tokens(text)]
            if got != [(t.start, t.end) for t in lucene[i * len(CONTEXTS) + j]]:
                differ.append(p)
                break
    print(f"\n== BMP code points: {len(points) - len(differ)}/{len(points)} tokenize alike")
    cats = Counter(unicodedata.category(chr(p)) for p in differ)
    print("   by category: " + ", ".join(f"{k} {v}" for k, v in cats.most_common()))
    for p in differ[:show]:
        name = unicodedata.name(chr(p), "?")
        print(f"   U+{p:04X} {unicodedata.category(chr(p))} {name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--show", type=int, default=20, help="differing pairs shown per set")
    parser.add_argument("--top-docs", type=int, default=None, help="documents per query")
    parser.add_argument("--tokens", action="store_true", help="only print tokenizer samples")
    parser.add_argument(
        "--codepoints", action="store_true", help="only compare tokens of every BMP character"
    )
    args = parser.parse_args(argv)
    if not lucene_oracle.available():
        print("Lucene is not available (java, javac or the jars are missing)")
        return 1
    if args.tokens:
        print_tokens()
        return 0
    if args.codepoints:
        codepoint_report(args.show)
        return 0
    if cranfield_available():
        for size in (1000, 100):
            cases = cranfield_cases(size, args.top_docs)
            report(f"Cranfield, fragment size {size}", compare(cases), args.show)
    else:
        print(f"Cranfield fixture not found under {CRANFIELD}; skipped")
    report("synthetic", compare(synthetic_cases()), args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
