"""The compiled kernels' slow paths: texts made of near-matches everywhere.

The on-the-fly comparisons in :mod:`ragframe.postprocess._kernels` give up past a work budget and
settle such a pair by normalizing both texts and a linear-time search. These tests
check that the budget is really exceeded for these texts (so the fallback runs) and
that the engine still equals the reference.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragframe import _arrow
from ragframe import schema as c
from ragframe._kernels import _buffers, _compile
from ragframe.postprocess._budget import JAVA_WHITESPACE
from ragframe.postprocess._kernels import _contains, _merge, _order, _overlap, _text, _walk
from ragframe.postprocess._select import thresholds
from ragframe.reference._text import skip_units
from tests.conftest import assert_same_rows, cand, config, frame, run_engine, run_reference

REPEATS = "a " * 300  # every other position starts a near-match


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), dtype=np.uint8)


@pytest.mark.parametrize(
    ("hay", "needle", "contained"),
    [
        (REPEATS + "b", "a " * 100 + "b", True),
        (REPEATS + "a", "a " * 100 + "b", False),
        ("x " + REPEATS, "a " * 100 + "a", True),
    ],
    ids=["match_at_the_end", "no_match", "match_after_a_word"],
)
def test_containment_gives_up_on_near_matches_and_the_fallback_decides(
    hay: str, needle: str, contained: bool
) -> None:
    h, n = _bytes(hay.strip()), _bytes(needle.strip())
    assert _contains.contains_raw(h, 0, len(h), len(h), n, 0, len(n), len(n), 64) in (-1, 1)
    if hay.startswith("a"):
        assert _contains.contains_raw(h, 0, len(h), len(h), n, 0, len(n), len(n), 64) == -1
    df = frame([cand(1, hay, 0.9, 0), cand(1, needle, 0.8, 5)])
    cfg = config(5, 0.0, 1, 5, 10**6, 10**6)
    rows = run_engine(df, cfg)
    assert_same_rows(rows, run_reference(df, cfg))
    assert len(rows) == (1 if contained else 2)


@pytest.mark.parametrize(
    ("block", "plain"),
    [(REPEATS, True), ("a  " * 300, False)],
    ids=["single_spaces", "whitespace_runs"],
)
@pytest.mark.parametrize(
    "following",
    ["a " * 150 + "b c d e f g h", "a " * 150, "b " + "a " * 200],
    ids=["overlap_then_new_words", "all_overlap", "no_overlap"],
)
def test_overlap_gives_up_on_near_matches_and_the_fallback_decides(
    block: str, plain: bool, following: str
) -> None:
    """Without whitespace runs the overlap search compares raw bytes from the earliest
    place (the first full match is the longest); with runs it scans normalized bytes
    backwards. Both give up past the work budget when every place nearly matches."""
    b, chunk = _bytes(block), _bytes(following)
    units = _overlap._overlap_units(b, 0, len(b), chunk, 0, len(chunk), 64)
    if following.startswith("b"):
        assert units == 0
    elif plain and following == "a " * 150:
        assert units == len(following.strip())  # found at the first place tried
    else:
        assert units == -1
    df = frame([cand(1, block, 0.9, 0), cand(1, following, 0.8, 1)])
    cfg = config(5, 0.0, 1, 5, 10**6, 10**6)
    assert_same_rows(run_engine(df, cfg), run_reference(df, cfg))


def test_compiled_java_whitespace_matches_the_reference_set() -> None:
    for cp in range(0x3100):
        assert _text.java_whitespace(cp) == (chr(cp) in JAVA_WHITESPACE), hex(cp)


@pytest.mark.parametrize("ids", [pl.Int64, pl.String])
@pytest.mark.parametrize("hashes", ["real", "all_equal"])
def test_walk_tells_keys_apart_whatever_their_hashes(ids: type[pl.DataType], hashes: str) -> None:
    """The walk finds a candidate's chain by a hash of (entity, type) and verifies the
    key itself, so keys that collide (here: every hash equal) never share a chain."""
    entity = pl.Series([1, 2, 1, 1, 1, None, None], dtype=pl.Int64).cast(ids)
    entity_type = pl.Series([None, None, "faq", None, "", None, None], dtype=pl.String)
    texts = pl.Series(["same words"] * 7)
    # ranked last, row 0 repeats row 3 (entity 1, no type); row 4's type "" is another
    # key (null equals only null); rows without an entity never repeat
    hashed = pl.DataFrame({"e": entity, "t": entity_type}).to_struct().hash().to_numpy()
    keys = hashed.view(np.int64) if hashes == "real" else np.zeros(7, dtype=np.int64)
    rank = np.arange(7, dtype=np.int64)[::-1].copy()  # rows in reverse ranking order
    start = rank == 0
    sim = np.linspace(0.1, 0.7, 7)  # the first-ranked row (last) has the highest
    rows = np.arange(7, dtype=np.int64)  # each row's text: its own row of texts
    walked = _walk.walk(
        texts, rows, rank, start, sim, entity, entity_type, keys, 10, thresholds(10, 0.5, 7)
    )
    selected, count, best, keep = walked.selected, walked.picked, walked.best, walked.keep
    assert walked.length.tolist() == [len("same words")] * 7  # each row's text, from its view
    assert selected.tolist() == [False, True, True, True, True, True, True]
    assert count.tolist() == [6] * 7  # the query's count and best, on each of its rows
    assert best.tolist() == [0.7] * 7
    # rule 4: 6 of 10 selected, threshold 0.5 * (0.6 + 0.6 * 5 / 9) = 0.4667
    assert keep.tolist() == [False, False, False, False, True, True, True]


@pytest.mark.parametrize("longest", [5, 40, 300])
def test_scores_sort_within_each_segment_as_floats_do(longest: int) -> None:
    """Rules 2 and 9's order: scores as integers in descending order (-0.0 tying
    with 0.0), sorted within each query by the compiled segment sort (short segments
    insertion-sorted, long ones merge-sorted); both must equal a stable sort by
    (segment, score)."""
    rng = np.random.default_rng(longest)
    sizes = rng.integers(1, longest, size=60)
    segment = np.repeat(np.arange(len(sizes)), sizes)
    starts = np.r_[True, segment[1:] != segment[:-1]]
    key = rng.choice([-1.0, -0.5, -0.0, 0.0, 0.25, 1e300, -1e-300], size=len(segment))
    got = _order.ordered_in_segments(starts, _order.descending_key(key)[:, None])
    assert got.tolist() == np.lexsort((-key, segment)).tolist()  # descending, stable


@pytest.mark.parametrize("longest", [5, 40, 300])
def test_ordered_in_segments_is_a_stable_lexicographic_sort_within_each_segment(
    longest: int,
) -> None:
    """Rule 5's merge order within each query: short segments are insertion-sorted, long
    ones take a stable sort per key column; both must equal a stable sort by (segment,
    keys in column order)."""
    rng = np.random.default_rng(longest)
    sizes = rng.integers(1, longest, size=60)
    segment = np.repeat(np.arange(len(sizes)), sizes)
    starts = np.r_[True, segment[1:] != segment[:-1]]
    keys = rng.integers(-3, 3, size=(len(segment), 3)) * np.array([1, 2**40, 1])  # ties
    got = _order.ordered_in_segments(starts, keys.astype(np.int64))
    want = np.lexsort((keys[:, 2], keys[:, 1], keys[:, 0], segment))
    assert got.tolist() == want.tolist()


@given(
    st.one_of(
        st.lists(st.integers(-5, 40), max_size=80),  # ties and negatives: the argsort
        st.lists(st.integers(0, 10**6), max_size=80, unique=True),  # gaps: either way
        st.permutations(list(range(60))),  # every place: the scatter
        st.lists(st.sampled_from([-(2**63), 2**63 - 1, 0, 7]), max_size=6),  # huge span
    )
)
def test_rank_order_is_a_stable_argsort(ranks: list[int]) -> None:
    """The walk's and the merge's order of rows by their places: a scatter where the
    places are distinct within a small span, else numpy's stable argsort; always what
    the stable argsort gives."""
    rank = np.array(ranks, dtype=np.int64)
    assert _order.rank_order(rank).tolist() == np.argsort(rank, kind="stable").tolist()


@pytest.mark.parametrize(
    "text",
    [
        "plain words here and there",
        " leading space",
        "a \u3000run across kinds",
        "a \x1cseparator run",
        "tab\tthen\nnewline",
        "caf\u00e9 au lait",
        "two  spaces",
        "x \u00a0no-break is no Java whitespace",
    ],
)
def test_plain_skip_agrees_with_the_seed_walk_wherever_it_answers(text: str) -> None:
    """The merge's fast skip (one byte per character) answers only where no whitespace
    run, leading whitespace or multi-byte character is in reach; there it must equal
    the seed's walk, and past a run or a non-ASCII byte it must step aside."""
    data = _bytes(text)
    answered = 0
    for units in range(len(text)):
        stop = _overlap._skip_plain(data, 0, len(data), units)
        if stop >= 0:
            answered += 1
            assert (stop, units) == _overlap._skip_units(data, 0, len(data), units), units
    runs = any(a.isspace() and b.isspace() for a, b in itertools.pairwise(text))
    if text[0] == " ":
        assert answered == 0
    elif not runs and text.isascii():
        assert answered == len(text) - 1  # every count but 0


def _normalized(data: bytes) -> bytes:
    return re.sub(rb"[ \t\n\x0b\x0c\r]+", b" ", data.strip(bytes(range(33))))


def _lead(data: bytes) -> int:
    """Where ``data`` starts once trimmed (Java's trim: bytes <= 0x20)."""
    return len(data) - len(data.lstrip(bytes(range(33))))


WORDS = st.lists(st.sampled_from(["ab", "a", "b", " ", "  ", "\n", "\t", "\x01", "\u00e9"])).map(
    "".join
)


@given(WORDS, WORDS, st.integers(0, 40), st.integers(0, 40))
def test_containment_from_the_head_is_word_bounded_containment(
    hay: str, other: str, cut: int, size: int
) -> None:
    """Rule 3's filtered search (a candidate with a head: 8 bytes without a whitespace
    run) answers as ``" " + cand + " "`` in ``" " + hay + " "`` over normalized text,
    for candidates cut from the hay (often contained) and made up (rarely)."""
    h = (hay * 3).encode()
    arr = np.frombuffer(h, np.uint8)
    h0, h1 = _lead(h), _lead(h) + len(h.strip(bytes(range(33))))
    for candidate in (h[cut : cut + size + 8], (other + hay).encode()[: size + 8]):
        n = np.frombuffer(candidate, np.uint8)
        n0, n1 = _lead(candidate), _lead(candidate) + len(candidate.strip(bytes(range(33))))
        head = _contains.head_of(n, n.ctypes.data, n0)
        wanted = _normalized(candidate)
        if not wanted or not head[1]:
            continue
        words = tuple(np.uint64(x) for x in head)
        got = _contains.contains_from_head(
            arr, arr.ctypes.data, h0, h1, words, n, n0, n1, len(wanted), 10**9
        )
        assert got == int((b" " + wanted + b" ") in (b" " + _normalized(h) + b" "))


@pytest.mark.parametrize("limit", [None, 55, 10])  # one buffer; windows of it; copied
def test_strings_are_views_into_the_buffer_or_windows_of_it_when_it_is_too_large(
    limit: int | None,
) -> None:
    """Block texts leave the merge as Arrow string views into its buffer, in any order
    (inline up to 12 bytes); a buffer past the view limit is seen as overlapping windows
    of it (several view buffers, nothing copied), and a piece too long for a window is
    copied into a large-string array."""
    pieces = ["", "short", "exactly12byt", "thirteen byte", "caf\u00e9 \u3000 na\u00efve text", "z"]
    data = b"".join(p.encode() for p in pieces)
    starts = np.cumsum([0] + [len(p.encode()) for p in pieces])
    order = np.array([4, 0, 3, 5, 1, 2])
    gap = np.frombuffer(b"#" * 7 + data, dtype=np.uint8)  # pieces need not start at 0
    with pytest.MonkeyPatch.context() as patch:
        if limit is not None:
            patch.setattr(_arrow, "VIEW_BUFFER", limit)
        got = _arrow.strings(gap, starts[order] + 7, np.diff(starts)[order])
    assert got.to_list() == [pieces[i] for i in order]


@given(st.binary(max_size=40), st.binary(max_size=40), st.sampled_from([b" ", b"\t", b"\n", b"\r"]))
def test_the_plain_search_compares_places_as_normalization_reads_them(
    a: bytes, b: bytes, space: bytes
) -> None:
    """The first place two byte strings differ at, a whitespace byte of one matching
    any of the other (runs are never longer than one byte where it is used), with the
    same bytes pasted behind to make them mostly equal words."""
    a, b = a + space + b, b"x" * len(a) + b" " + b
    count = min(len(a), len(b))
    collapsed = set(b" \t\n\x0b\x0c\r")
    want = next((j for j in range(count) if a[j] != b[j] and not {a[j], b[j]} <= collapsed), count)
    got = _overlap._mismatch(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8), count)
    assert got == want


WALK_ALPHABET = [
    " ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\u1680",
    *map(chr, range(0x2000, 0x200B)), "\u2028", "\u2029", "\u205f", "\u3000",
    "\u00a0", "\u2007", "\u202f", "\x00", "\x01", "a", "b", "\u00e9", "\u6771", "\U0001f600",
]  # fmt: skip
"""Every Java whitespace class, the no-break spaces (no Java whitespace: U+2007 sits
inside U+2000-U+200A), controls the trim strips, and letters of 1 to 4 UTF-8 bytes."""


WALK_PIECES = ["ab", "  ", "\u2000 \t", "\u3000", " ", "\u00a0", "x\x1c", "\t\u2028\n"]


@given(
    st.text(st.sampled_from(WALK_ALPHABET), max_size=40)
    | st.lists(st.sampled_from(WALK_PIECES)).map("".join)
)
def test_seed_walk_kernel_is_the_literal_loop(text: str) -> None:
    """Rule 7's walk, for every count of units: the kernel (and its plain fast path,
    wherever that answers) equals SPEC's loop as the reference writes it, on runs of
    every whitespace class, leading runs and no-break spaces; positions are bytes in
    the kernel, code points here."""
    data = _bytes(text)
    for units in range(len(text) + 2):
        pos = skip_units(text, units)
        want = (len(text[:pos].encode()), pos)
        assert _overlap._skip_units(data, 0, len(data), units) == want, units
        assert _overlap._skip_plain(data, 0, len(data), units) in (-1, want[0]), units


def test_each_kernel_compiles_once_whatever_memory_its_inputs_are_in(tmp_path: Path) -> None:
    """numba compiles a kernel per distinct argument types, and a read-only array (an
    Arrow buffer read from a file reaches the kernels without a copy), another integer
    width or a strided array is another type. The wrappers hand every kernel one type
    per argument, so a first run compiles each kernel once and every later input, of
    any origin, loads it (before, a 3-row file after the 600-row default data compiled
    the walk again: 7 s). Offsets reach the merge as floats whether or not a candidate's
    chunk is missing from the store (its offsets are NaN), and equal the reference."""
    rows = [
        cand(e, f"text {e} {i}", 0.9 - i / 10, i, query_id=q)
        for q in (1, 2)
        for i, e in enumerate([1, 2, 1, 3])
    ]
    built = frame(rows)
    built.write_parquet(tmp_path / "c.parquet")
    narrow = built.with_columns(
        pl.col(c.ENTITY_ID).cast(pl.Int32), pl.col(c.QUERY_ID).cast(pl.Int16)
    )
    cfg = config(3, 0.0, 1, 5, 10**6, 10**6)
    want = run_engine(built, cfg)
    assert run_engine(pl.read_parquet(tmp_path / "c.parquet"), cfg) == want
    assert run_engine(pa.table(built.to_arrow()), cfg) == want
    assert len(run_engine(narrow, cfg)) == len(want)
    store = built.select(c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT).with_columns(
        pl.lit(0).alias(c.START_CHAR), pl.col(c.TEXT).str.len_chars().alias(c.END_CHAR)
    )
    offsets = config(3, 0.0, 1, 5, 10**6, 10**6, overlap="offsets", missing_text="empty")
    complete = built.drop(c.TEXT)
    lacking = pl.concat([complete, frame([cand(1, None, 0.85, 9)]).drop(c.TEXT)])  # no chunk 9
    for candidates in (complete, lacking):
        got = run_engine(candidates, offsets, chunks=store)
        assert_same_rows(got, run_reference(candidates, offsets, chunks=store))
    starts = np.array([True, False, True, False])
    strided = np.arange(16, dtype=np.int32).reshape(4, 4)[:, ::2]  # neither int64 nor C order
    assert _order.ordered_in_segments(starts, strided).tolist() == [0, 1, 2, 3]
    kernels = [_walk._walk, _merge._merge, _order._ordered_in_segments]
    assert [len(k.signatures) for k in kernels] == [1, 1, 1], [k.signatures for k in kernels]


@given(
    pieces=st.lists(
        st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=6), min_size=1, max_size=4
    ),
    data=st.data(),
)
def test_row_views_read_the_rows_asked_for_in_place(
    pieces: list[list[str | None]], data: st.DataObject
) -> None:
    """Each asked row's bytes (-1 and null: none), across chunks of any size (inline
    values of up to 12 bytes and buffered ones), offset slices included."""
    import ctypes

    from ragframe._kernels._buffers import row_views

    chunks = [pl.Series(p, dtype=pl.String) for p in pieces]
    column = pl.concat(chunks, rechunk=False)
    if data.draw(st.booleans()) and len(column) > 1:  # a slice: an offset into the views
        column = column.slice(1)
    values = column.to_list()
    rows = data.draw(st.lists(st.integers(-1, max(len(values) - 1, -1)), max_size=12))
    address, length, alive = row_views(column, np.array(rows, dtype=np.int64))
    pairs = zip(address, length, strict=True)
    read = [ctypes.string_at(int(a), int(n)).decode() if n else "" for a, n in pairs]
    assert read == [values[r] or "" if r >= 0 else "" for r in rows]
    del alive


def test_one_thread_runs_a_kernels_parts_as_one_on_the_calling_thread() -> None:
    """Within ``one_thread`` a kernel call is one part on the calling thread (no pool);
    without it, a large call is cut at the starts given."""
    import threading

    from ragframe._kernels._parts import in_parts, one_thread

    seen: list[tuple[tuple[int, int], int]] = []

    def run(part: tuple[int, int]) -> None:
        seen.append((part, threading.get_ident()))

    starts = np.arange(0, 200_000, 10)
    in_parts(run, starts, 200_000)
    assert sorted(part for part, _ in seen)[0][0] == 0
    assert all(lo % 10 == 0 for (lo, _), _ in seen)
    seen.clear()
    with one_thread():
        in_parts(run, starts, 200_000)
    assert seen == [((0, 200_000), threading.get_ident())]


def test_kernels_on_two_threads_at_once_give_what_they_give_alone() -> None:
    """postprocess on two threads at once, each running its kernels as one part
    (``one_thread``), gives each input's blocks exactly as a call alone does: the
    kernels share no state between calls."""
    from concurrent.futures import ThreadPoolExecutor

    import ragframe
    from ragframe._kernels._parts import one_thread

    words = [f"w{i} some words here." for i in range(60)]
    rows = [
        cand(e, " ".join(words[k : k + 8]), 1.0 - 0.01 * k, k, query_id=q)
        for q in range(40)
        for e in (1, 2, 3)
        for k in range(q % 5, q % 5 + 6)
    ]
    inputs = [frame(rows), frame(rows[::-1])]
    cfg = config(3, 0.2, 1, 4, 400, 200)
    alone = [ragframe.postprocess(x, cfg).collect() for x in inputs]
    assert all(a.height > 40 for a in alone)

    def run(x: pl.DataFrame) -> pl.DataFrame:
        with one_thread():
            return ragframe.postprocess(x, cfg).collect()

    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            both = list(pool.map(run, inputs))
            assert all(a.equals(b) for a, b in zip(alone, both, strict=True))


@given(st.lists(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0x20]), min_size=8, max_size=8))
def test_zero_bytes_marks_exactly_the_zero_bytes(values: list[int]) -> None:
    """The word-at-a-time zero-byte test of the filters: the top bit of each zero byte,
    no other (no borrow from a zero byte into its neighbour), compiled and as Python."""
    word = np.frombuffer(bytes(values), np.uint64)[0]
    want = sum(0x80 << (8 * k) for k, v in enumerate(values) if v == 0)
    assert int(_buffers.zero_bytes(word)) == want
    assert int(_compile.python_form(_buffers.zero_bytes)(word)) == want
