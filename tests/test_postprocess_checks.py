"""The whole-column value checks of postprocess's inputs (``ragframe._validate.checked``):
the fast test that passes clean columns without building a mask agrees with the full
test on the cases that a shortcut could get wrong."""

from __future__ import annotations

import math

import polars as pl
import pytest

import ragframe
from ragframe._validate import checked
from ragframe.errors import DataError


def _check(values: pl.Series, dtype: type[pl.DataType], present: bool = False) -> pl.Series:
    frame = pl.DataFrame({"q": list(range(len(values))), "x": values})
    return (
        frame.lazy()
        .select(checked("x", dtype, "t", key=("q", "q"), present=present))
        .collect()["x"]
    )


def test_finite_floats_whose_sum_overflows_pass() -> None:
    """The sum of finite values may overflow to infinity: the full test then passes them."""
    values = pl.Series([1e308, 1e308, -1.0, None])
    assert _check(values, pl.Float64).to_list() == [1e308, 1e308, -1.0, None]


@pytest.mark.parametrize(
    ("values", "count"),
    [
        ([1e308, 1e308, math.nan], 1),  # an overflowing sum beside a NaN
        ([math.inf, -math.inf, 0.5], 2),  # infinities whose sum is NaN
        ([0.5, None, math.nan, None], 1),  # nulls do not hide a NaN
    ],
)
def test_nan_and_infinity_are_found_whatever_the_sum(
    values: list[float | None], count: int
) -> None:
    with pytest.raises(DataError, match=f"NaN or infinite values on {count} row"):
        _check(pl.Series(values, dtype=pl.Float64), pl.Float64)


def test_float32_nan_is_found() -> None:
    with pytest.raises(DataError, match="NaN or infinite values on 1 row"):
        _check(pl.Series([0.5, math.nan], dtype=pl.Float32), pl.Float64)


def test_a_cast_that_loses_values_beside_nulls_is_found() -> None:
    """Nulls in the input are not counted as lost by the cast; a lost value is."""
    values = pl.Series([None, 2**63, 1, None], dtype=pl.UInt64)
    with pytest.raises(DataError, match="outside the range of Int64 on 1 row"):
        _check(values, pl.Int64)
    assert _check(pl.Series([None, 5], dtype=pl.UInt64), pl.Int64).to_list() == [None, 5]


def test_nulls_refused_only_where_present() -> None:
    values = pl.Series([1, None, 3])
    assert _check(values, pl.Int64).to_list() == [1, None, 3]
    with pytest.raises(DataError, match="null values on 1 row"):
        _check(values, pl.Int64, present=True)


def _frame(**columns: object) -> pl.DataFrame:
    base: dict[str, object] = {
        "query_id": [1, 1, 2],
        "doc_id": [7, 7, 8],
        "chunk_index": [0, 1, 0],
        "similarity": [0.9, 0.8, 0.7],
        "text": ["a b", "b c", "d"],
    }
    return pl.DataFrame({**base, **columns})


def test_a_clean_in_memory_input_is_checked_when_the_plan_is_built() -> None:
    """Its values are known: the plan only casts them (no check left to run there)."""

    plan = ragframe.postprocess(_frame(), {"top_k": 2})
    assert "python_udf" not in plan.explain()
    lazy = ragframe.postprocess(_frame().lazy(), {"top_k": 2})
    assert "python_udf" in lazy.explain()  # a lazy input's values are checked in the plan
    assert plan.collect().equals(lazy.collect())


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"similarity": [0.9, math.nan, 0.7]}, "'similarity' has NaN or infinite values"),
        ({"query_id": [1, None, 2]}, "'query_id' has null values on 1 row"),
        (
            {"doc_id": pl.Series([7, 2**63, 8], dtype=pl.UInt64)},
            "'doc_id' has values outside the range of Int64",
        ),
    ],
)
def test_bad_in_memory_values_still_raise_when_collected(
    columns: dict[str, object], message: str
) -> None:

    plan = ragframe.postprocess(_frame(**columns))  # building the plan does not raise
    with pytest.raises(DataError, match=message):
        plan.collect()


def _store_case(ids: type[pl.DataType]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Candidates with a null entity, a null chunk index (read as 0), a key the store
    lacks and a key the store repeats (its first row wins)."""
    entity = [1, 1, None, 2, 3, 1] if ids == pl.Int64 else ["a", "a", None, "b", "c", "a"]
    candidates = pl.DataFrame(
        {
            "query_id": [1, 1, 1, 2, 2, 2],
            "doc_id": pl.Series(entity, dtype=ids),
            "chunk_index": [0, 1, 0, None, 0, 2],
            "similarity": [0.9, 0.8, 0.7, 0.9, 0.5, 0.6],
        }
    )
    store_ids = [1, 1, 2, 2, 1] if ids == pl.Int64 else ["a", "a", "b", "b", "a"]
    store = pl.DataFrame(
        {
            "doc_id": pl.Series(store_ids, dtype=ids),
            "chunk_index": [0, 1, 0, 0, 2],
            "text": ["one two", "two three", "first b", "second b", "a's third"],
        }
    )
    return candidates, store


@pytest.mark.parametrize("ids", [pl.Int64, pl.String])
@pytest.mark.parametrize("policy", ["empty", "drop"])
def test_the_lookup_done_when_built_equals_the_one_in_the_plan(
    ids: type[pl.DataType], policy: str
) -> None:
    """In-memory candidates and store: the store rows are found when the plan is built;
    the output is the lazy inputs' (the lookup inside the plan), row for row."""
    candidates, store = _store_case(ids)
    config = {"top_k": 3, "missing_text": policy}
    now = ragframe.postprocess(candidates, config, chunks=store)
    later = ragframe.postprocess(candidates.lazy(), config, chunks=store.lazy())
    assert now.explain().count("python_udf") < later.explain().count("python_udf")
    assert now.collect().equals(later.collect())


def test_missing_text_found_when_built_still_raises_when_collected() -> None:
    candidates, store = _store_case(pl.Int64)
    plan = ragframe.postprocess(candidates, chunks=store)  # building does not raise
    message = r"2 candidate\(s\) in 2 query\(ies\) .* \[\(None, 0\), \(3, 0\)\]"
    with pytest.raises(DataError, match=message):
        plan.collect()


def test_keys_of_other_types_are_looked_up_in_the_plan() -> None:
    """An Int32 store key is cast by the plan (the lookup stays there): same output."""
    candidates, store = _store_case(pl.Int64)
    store = store.with_columns(pl.col("doc_id").cast(pl.Int32))
    plan = ragframe.postprocess(candidates, {"missing_text": "empty"}, chunks=store)
    lazy = ragframe.postprocess(candidates.lazy(), {"missing_text": "empty"}, chunks=store.lazy())
    assert plan.explain().count("python_udf") == lazy.explain().count("python_udf") - 4
    assert plan.collect().equals(lazy.collect())


@pytest.mark.parametrize("policy", ["error", "empty", "drop"])
def test_a_complete_store_found_when_built_leaves_no_check_in_the_plan(policy: str) -> None:
    """Every candidate has its store row (found when the plan is built): no policy has
    anything to do, and the plan holds no check at all; the output is the lazy inputs'."""
    candidates, store = _store_case(pl.Int64)
    candidates = candidates.filter(pl.col("doc_id").is_in([1, 2]) & (pl.col("chunk_index") != 2))
    config = {"top_k": 3, "missing_text": policy}
    now = ragframe.postprocess(candidates, config, chunks=store)
    later = ragframe.postprocess(candidates.lazy(), config, chunks=store.lazy())
    assert "python_udf" not in now.explain()
    assert now.collect().equals(later.collect())
    assert now.collect().height > 0


def test_arrow_inputs_are_read_as_in_memory_frames() -> None:
    """A pyarrow Table is in memory too: checked and looked up when the plan is built."""
    candidates, store = _store_case(pl.Int64)
    config = {"top_k": 3, "missing_text": "empty"}
    arrow = ragframe.postprocess(candidates.to_arrow(), config, chunks=store.to_arrow())
    polars = ragframe.postprocess(candidates, config, chunks=store)
    assert arrow.explain() == polars.explain()
    assert arrow.collect().equals(polars.collect())
