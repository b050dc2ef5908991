"""The engine at scale (issue 16): the ranking without sorting the table (presorted input
ranked in place, the same answer as the sort), the chunk store read by a lookup instead
of joins, and block texts written once, for the blocks the budget keeps, into view
buffers that hold exactly the text shown (several past the view limit, never packed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import ragframe
from ragframe import _arrow
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig, _rank
from ragframe.postprocess._kernels import _store
from tests.conftest import assert_same_rows, run_engine, run_reference
from tests.test_postprocess_properties import candidate_frames, configs

# --- rules 1-2: the ranking ----------------------------------------------------------------


def _sorted_ranking(query: list[Any], score: np.ndarray) -> tuple[list[int], list[int], list[int]]:
    """Rules 1-2 as Polars says them: a stable sort by (query, score descending)."""
    df = pl.DataFrame({"q": query, "s": score + 0.0}).with_row_index("row")  # -0.0 is 0.0
    ranked = df.sort(["q", "s"], descending=[False, True], maintain_order=True)
    ranked = ranked.with_row_index("rank").with_columns(
        pl.int_range(pl.len()).over("q").alias("position"), pl.len().over("q").alias("size")
    )
    back = ranked.sort("row")
    return back["rank"].to_list(), back["position"].to_list(), back["size"].to_list()


ORDERS = ["presorted", "grouped", "sorted, not grouped", "shuffled", "query runs repeat"]


def _ordered(rng: np.random.Generator, order: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    query = rng.integers(0, 6, size=n)
    score = rng.choice([1.0, 0.5, 0.25, 0.0, -0.0, -0.5], size=n)  # ties, signed zeros
    if order == "presorted":
        rows = np.lexsort((-score, query))
    elif order == "grouped":
        rows = np.argsort(query, kind="stable")
    elif order == "sorted, not grouped":
        rows = np.argsort(-score, kind="stable")
    elif order == "query runs repeat":
        rows = np.lexsort((query % 2, np.arange(n) // max(1, n // 3)))
    else:
        rows = np.arange(n)
    return query[rows], score[rows]


@pytest.mark.parametrize("ids", ["int", "string"])
@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("head", [None, 1, 3, 100])
def test_ranking_equals_a_stable_sort_by_query_and_score(order: str, ids: str, head: Any) -> None:
    """Each row's place in the whole ranking and in its query's, whatever the row order:
    presorted input is ranked in place, grouped input query by query, other input
    grouped first; ties keep input order. With ``head``, only each query's first rows
    are placed (the others: place ``head``, rank -1)."""
    rng = np.random.default_rng(len(order) + (head or 0))
    for n in (0, 1, 2, 7, 60):
        query, score = _ordered(rng, order, n)
        ids_in = [f"q{q}" for q in query] if ids == "string" else query.tolist()
        width = 2
        got = _rank.ranking(
            pl.Series(ids_in, dtype=pl.String if ids == "string" else pl.Int64), score, width, head
        )
        rank, position, size = _sorted_ranking(ids_in, score)
        placed = [head is None or p < head for p in position]
        pairs = list(zip(position, rank, placed, strict=True))
        assert got.position.tolist() == [p if k else head for p, _, k in pairs]
        assert got.rank.tolist() == [r if k else -1 for _, r, k in pairs]
        assert got.more.tolist() == [s > width for s in size]


@pytest.mark.parametrize(
    ("score", "starts", "expected"),
    [
        ([0.9, 0.9, 0.5, 0.7, 0.1], [1, 0, 0, 1, 0], True),  # ties, a new run may rise
        ([0.0, -0.0, 0.0], [1, 0, 0], True),  # signed zeros tie
        ([0.5, 0.6], [1, 0], False),  # a rise inside a run
        ([], [], True),
    ],
    ids=["ties and runs", "signed zeros", "a rise", "empty"],
)
def test_presorted_is_non_increasing_scores_within_each_run(
    score: list[float], starts: list[int], expected: bool
) -> None:
    assert (
        _rank.presorted(np.array(score, dtype=np.float64), np.array(starts, dtype=bool)) is expected
    )


def _score(df: pl.DataFrame) -> pl.Expr:
    sim = pl.col(c.SIMILARITY).fill_null(0.0)
    return pl.coalesce(c.RERANK_SCORE, sim) if c.RERANK_SCORE in df.columns else sim


@given(candidate_frames(), configs, st.sampled_from(["presorted", "grouped", "by score"]))
def test_orders_the_ranking_reads_as_they_are_equal_the_sorted_path_and_reference(
    df: pl.DataFrame, cfg: PostprocessConfig, order: str
) -> None:
    """Presorted input (grouped by query, scores non-increasing) is not sorted again;
    grouped but unsorted and sorted but ungrouped input are. Either way, and with the
    presort check forced off, the engine equals the reference (ties: input order)."""
    key = _score(df).alias("__key")
    if order == "presorted":
        df = df.sort([pl.col(c.QUERY_ID), key], descending=[False, True], maintain_order=True)
    elif order == "grouped":
        df = df.sort(c.QUERY_ID, maintain_order=True)
    else:
        df = df.sort(key, descending=True, maintain_order=True)
    want = run_reference(df, cfg)
    assert_same_rows(run_engine(df, cfg), want)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_rank, "presorted", lambda score, starts: False)
        assert_same_rows(run_engine(df, cfg), want)


# --- the chunk store's rows ------------------------------------------------------------------


def _joined(keys: pl.DataFrame, store: pl.DataFrame) -> list[int]:
    """Each key's first store row, by a Polars join (nulls match nothing)."""
    first = store.with_row_index("row").filter(pl.struct("e", "c").is_first_distinct())
    first = first.filter(pl.col("e").is_not_null() & pl.col("c").is_not_null())
    out = keys.with_row_index("i").join(first, on=["e", "c"], how="left").sort("i")
    return out["row"].fill_null(-1).cast(pl.Int64).to_list()


LAYOUTS = ["as chunkers write it", "with a gap", "shuffled", "duplicates and nulls"]


@pytest.mark.parametrize("ids", ["int", "string"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_store_rows_are_the_first_rows_with_each_key(layout: str, ids: str) -> None:
    """The store lookup equals a join keeping the store's first row per key: a store
    laid out as chunkers write it is read by entity directly, any other through a hash
    table; keys that collide in neither are told apart."""
    rng = np.random.default_rng(len(layout) + len(ids))
    counts = rng.integers(1, 6, size=30)
    entity = np.repeat(np.arange(-3, 27) * 3, counts)
    chunk = np.concatenate([np.arange(k) + int(rng.integers(-1, 3)) for k in counts])
    if layout == "with a gap":
        chunk[-1] += 2
    store = pl.DataFrame({"e": entity, "c": chunk})
    if layout == "shuffled":
        store = store.sample(fraction=1.0, shuffle=True, seed=1)
    if layout == "duplicates and nulls":
        store = pl.concat([store, store.head(20)]).with_columns(
            pl.when(pl.int_range(pl.len()) % 7 == 3).then(None).otherwise("c").alias("c")
        )
    keys = pl.DataFrame(
        {"e": rng.integers(-12, 90, size=400), "c": rng.integers(-2, 7, size=400)}
    ).with_columns(pl.when(pl.int_range(pl.len()) % 11 == 0).then(None).otherwise("e").alias("e"))
    if ids == "string":
        store = store.with_columns(pl.col("e").cast(pl.String))
        keys = keys.with_columns(pl.col("e").cast(pl.String))
    got = _store.store_rows(keys["e"], keys["c"], store["e"], store["c"])
    assert got.tolist() == _joined(keys, store)


def test_a_store_read_in_place_gives_what_a_join_would() -> None:
    """Candidates' texts come from their store rows, found by the lookup (the store's
    first row per key; a missing key is empty text with ``missing_text="empty"``)."""
    store = pl.DataFrame(
        {
            c.ENTITY_ID: [5, 5, 5, 9, 9, 5],
            c.CHUNK_INDEX: [0, 1, 2, 0, 1, 0],
            c.TEXT: ["a zero", "a one", "a two", "b zero", "b one", "a zero again"],
        }
    )
    candidates = pl.DataFrame(
        {
            c.QUERY_ID: [1, 1, 1, 2, 2],
            c.ENTITY_ID: [5, 9, 7, 9, 5],
            c.CHUNK_INDEX: [0, 1, 0, 0, 2],
            c.SIMILARITY: [0.9, 0.8, 0.7, 0.9, 0.5],
        }
    )
    cfg = PostprocessConfig(missing_text="empty", max_chunk_gap=0)
    got = run_engine(candidates, cfg, chunks=store)
    assert_same_rows(got, run_reference(candidates, cfg, chunks=store))
    assert [r[c.TEXT] for r in got] == ["a zero", "b one", "", "b zero", "a two"]


# --- block texts: written once, owned exactly -------------------------------------------------


def _blocks_frame() -> pl.DataFrame:
    rows = [
        {
            c.QUERY_ID: q,
            c.ENTITY_ID: e,
            c.CHUNK_INDEX: k,
            c.TEXT: f"query {q} entity {e} chunk {k} " + "word " * (3 * (4 - e)) + "\u00e9",
            c.SIMILARITY: 0.9 - 0.1 * e - 0.01 * k,
        }
        for q in range(6)
        for e in range(4)
        for k in range(3)
    ]
    return pl.DataFrame(rows)


def _buffers(texts: pl.Series) -> list[int]:
    array = texts.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    assert all(chunk.type == pa.string_view() for chunk in chunks)
    return [b.size for chunk in chunks for b in chunk.buffers()[2:] if b is not None]


@pytest.mark.parametrize("limit", [None, 400, 200])
@pytest.mark.parametrize("store", [False, True], ids=["inline", "store"])
def test_block_texts_are_views_into_buffers_of_exactly_the_text_shown(
    limit: int | None, store: bool
) -> None:
    """The budget drops blocks and cuts one (max_characters 150): only the kept blocks'
    texts are written, so the output's buffers hold exactly its text, in buffers of at
    most the view limit (forced small here: past it, text of any size is several view
    buffers, never packed into one); the rows equal the reference's."""
    df = _blocks_frame()
    cfg = PostprocessConfig(top_k=12, max_blocks=2, max_characters=150)
    chunks = None
    if store:
        chunks = df.select(c.ENTITY_ID, c.CHUNK_INDEX, c.TEXT).unique(
            [c.ENTITY_ID, c.CHUNK_INDEX], keep="first", maintain_order=True
        )
        df = df.drop(c.TEXT).filter(pl.col(c.QUERY_ID) < 6)
    with pytest.MonkeyPatch.context() as patch:
        if limit is not None:
            patch.setattr(_arrow, "VIEW_BUFFER", limit)
        out = ragframe.postprocess(df, cfg, chunks=chunks).collect()
    assert_same_rows(out.to_dicts(), run_reference(df, cfg, chunks=chunks))
    assert out[c.TRUNCATED].any() and out.height < df[c.QUERY_ID].n_unique() * 4
    sizes = _buffers(out[c.TEXT])
    assert sum(sizes) == out[c.TEXT].str.len_bytes().sum()
    assert len(sizes) > 1 if limit is not None else len(sizes) == 1
    assert max(sizes) <= (limit or _arrow.VIEW_BUFFER)


def test_consecutive_pieces_split_between_pieces_into_view_buffers() -> None:
    """Pieces of one buffer, one after another, leave as views into windows of it cut
    between pieces, each at most the view limit; a piece past the limit packs them."""
    pieces = ["", "short", "exactly12byt", "thirteen byte", "caf\u00e9 \u3000 na\u00efve", "z"]
    data = np.frombuffer(b"".join(p.encode() for p in pieces), dtype=np.uint8)
    begin = np.r_[0, np.cumsum([len(p.encode()) for p in pieces])].astype(np.int64)
    for limit in (None, 30, 17, 5):
        with pytest.MonkeyPatch.context() as patch:
            if limit is not None:
                patch.setattr(_arrow, "VIEW_BUFFER", limit)
            got = _arrow.consecutive_strings(data, begin)
        assert got.to_list() == pieces, limit
    assert _arrow.consecutive_strings(data[:0], np.zeros(1, dtype=np.int64)).to_list() == []


_NUMPY = {pl.Int64: np.int64, pl.Int32: np.int32, pl.UInt64: np.uint64, pl.Int8: np.int8}


@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=50)
    | st.lists(st.integers(-5, 40), min_size=1, max_size=200),
    st.sampled_from(list(_NUMPY)),
)
@example([-128, -18, 9, 100], pl.Int8)  # offsets past 127 overflow int8
@example([2**63 + 5, 2**63 + 1, 2**64 - 1], pl.UInt64)  # past int64
def test_dense_codes_are_polars_dense_rank(values: list[int], dtype: Any) -> None:
    # ids of input not grouped by query are coded by a table over their span (no sort)
    from ragframe.postprocess._rank import dense_codes

    info = np.iinfo(_NUMPY[dtype])
    series = pl.Series([min(max(v, int(info.min)), int(info.max)) for v in values], dtype=dtype)
    want = series.rank("dense").cast(pl.Int64).to_numpy() - 1
    code, count = dense_codes(series)
    assert code.tolist() == want.tolist() and count == series.n_unique()
    assert code.dtype == np.int64
