"""Small frame builders and the two post-processors (reference and engine) as fixtures."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

os.environ.setdefault("RAGFRAME_PYTHON_ROWS", "0")  # the suite tests the compiled kernels:
# small inputs would otherwise run their plain-Python forms (tests/test_python_kernels.py
# checks those equal the compiled ones)

import hypothesis
import polars as pl
import pyarrow as pa
import pytest

import ragframe
from ragframe import schema as c
from ragframe.postprocess import PostprocessConfig
from ragframe.reference import postprocess_reference
from tests import clusters

hypothesis.settings.register_profile("default", max_examples=60, deadline=None)
hypothesis.settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
hypothesis.settings.register_profile("thorough", max_examples=2000, deadline=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

CRANFIELD = Path(
    os.environ.get("RAGFRAME_CRANFIELD")
    or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
)
"""The shared Cranfield fixture (``../shared/data/cranfield`` beside the checkout, or
``$RAGFRAME_CRANFIELD``); the one definition every test and report uses."""


def require_cranfield(*files: str) -> Path:
    """:data:`CRANFIELD`, or skip the test when one of ``files`` is not there."""
    for name in files:
        if not (CRANFIELD / name).is_file():
            pytest.skip(f"Cranfield fixture not found at {CRANFIELD} ({name})")
    return CRANFIELD


CANDIDATE_TYPES: dict[str, pl.DataType] = {
    c.QUERY_ID: pl.Int64(),
    c.ENTITY_ID: pl.Int64(),
    c.DOC_ID: pl.Int64(),
    c.ENTITY_TYPE: pl.String(),
    c.CHUNK_INDEX: pl.Int64(),
    c.TEXT: pl.String(),
    c.SIMILARITY: pl.Float64(),
    c.RERANK_SCORE: pl.Float64(),
    c.START_CHAR: pl.Int64(),
    c.END_CHAR: pl.Int64(),
}
"""Default dtypes of the candidate columns, so all-null columns still get a real type."""

Input = pl.DataFrame | pl.LazyFrame | pa.Table
Rows = list[dict[str, Any]]
Runner = Callable[..., Rows]


def cand(
    entity_id: Any,
    text: str | None,
    similarity: float | None,
    chunk_index: int | None = 0,
    *,
    query_id: Any = 1,
    **extra: Any,
) -> dict[str, Any]:
    """One candidate row with the canonical column names (plus any ``extra`` columns)."""
    return {
        c.QUERY_ID: query_id,
        c.ENTITY_ID: entity_id,
        c.CHUNK_INDEX: chunk_index,
        c.TEXT: text,
        c.SIMILARITY: similarity,
        **extra,
    }


def frame(rows: Iterable[Mapping[str, Any]], **types: pl.DataType) -> pl.DataFrame:
    """A DataFrame from row dicts; known columns get :data:`CANDIDATE_TYPES`."""
    rows = [dict(r) for r in rows]
    names: list[str] = []
    for r in rows:
        names += [k for k in r if k not in names]
    schema = {n: types.get(n, CANDIDATE_TYPES.get(n)) for n in names}
    if any(t is None for t in schema.values()):
        inferred = pl.from_dicts(rows, infer_schema_length=None).schema
        schema = {n: t if t is not None else inferred[n] for n, t in schema.items()}
    return pl.DataFrame([{n: r.get(n) for n in names} for r in rows], schema=schema, orient="row")


def config(*seed_order: Any, **kwargs: Any) -> PostprocessConfig:
    """A config from the seed's positional order (top_k, min_similarity, max_chunk_gap,
    max_blocks, max_characters, max_merged_block_characters), as in SPEC's cases."""
    names = (
        "top_k",
        "min_similarity",
        "max_chunk_gap",
        "max_blocks",
        "max_characters",
        "max_merged_block_characters",
    )
    return PostprocessConfig(**dict(zip(names, seed_order, strict=False)), **kwargs)


def _eager(data: Input) -> pl.DataFrame:
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, pa.Table):
        out = pl.from_arrow(data)
        assert isinstance(out, pl.DataFrame)
        return out
    return data


def with_chunk_text(candidates: Input, chunks: Input, *, offsets: bool = False) -> pl.DataFrame:
    """Pre-join the chunk store's text (and offsets) onto the candidates (what late
    materialization must be equivalent to); canonical column names. A null
    ``chunk_index`` means 0, so it finds chunk 0; a null ``entity_id`` finds nothing; the
    store's first row wins."""
    df = _eager(candidates).rename({c.DOC_ID: c.ENTITY_ID}, strict=False)
    store = _eager(chunks).rename({c.DOC_ID: c.ENTITY_ID}, strict=False)
    extra = [c.START_CHAR, c.END_CHAR] if offsets else []
    store = store.select(c.ENTITY_ID, pl.col(c.CHUNK_INDEX).alias(_KEY), c.TEXT, *extra)
    store = store.unique([c.ENTITY_ID, _KEY], keep="first", maintain_order=True)
    return (
        df.with_columns(pl.col(c.CHUNK_INDEX).fill_null(0).alias(_KEY))
        .join(store, on=[c.ENTITY_ID, _KEY], how="left", maintain_order="left")
        .drop(_KEY)
    )


_KEY = "__test_chunk_key"


def run_reference(
    candidates: Input, cfg: PostprocessConfig | None = None, *, chunks: Input | None = None
) -> Rows:
    """The oracle, accepting the same inputs as the engine (its own chunk store lookup,
    ``missing_text`` included)."""
    df = _eager(candidates).rename({c.DOC_ID: c.ENTITY_ID}, strict=False)
    store = None if chunks is None else _eager(chunks)
    return postprocess_reference(df, cfg or PostprocessConfig(), chunks=store)


def run_engine(
    candidates: Input,
    cfg: PostprocessConfig | None = None,
    *,
    chunks: Input | None = None,
    engine: str = "auto",
) -> Rows:
    """The vectorized engine, collected (``engine`` as in ``LazyFrame.collect``)."""
    out = ragframe.postprocess(candidates, cfg, chunks=chunks)
    assert isinstance(out, pl.LazyFrame)
    return out.collect(engine=engine).to_dicts()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def dask_cluster() -> Any:
    """The shared Dask LocalCluster (:mod:`tests.clusters`), for the modules that leave
    its workers alone (``SHARES_DASK_CLUSTER = True``): started at the first test that
    asks, closed after the last test of those modules."""
    return clusters.shared_dask_cluster()


_LAST_SHARING = pytest.StashKey[Any]()


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    sharing = [i for i in items if getattr(getattr(i, "module", None), "SHARES_DASK_CLUSTER", 0)]
    session.stash[_LAST_SHARING] = sharing[-1] if sharing else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)  # the module's client is closed here (its module's last teardown)
    finally:
        if item is item.session.stash.get(_LAST_SHARING, None):
            clusters.close_shared_dask_cluster()


def pytest_sessionfinish() -> None:
    clusters.close_shared_dask_cluster()


RUNNERS: dict[str, Runner] = {"reference": run_reference, "engine": run_engine}


@pytest.fixture(params=sorted(RUNNERS))
def run(request: pytest.FixtureRequest) -> Runner:
    """Each test using ``run`` runs once through the reference and once through the engine."""
    return RUNNERS[request.param]


def assert_same_rows(got: Rows, want: Rows) -> None:
    """Row for row, column for column, exact (floats included); readable on failure."""
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert sorted(g) == sorted(w), f"row {i}: columns {sorted(g)} != {sorted(w)}"
        diff = {k: (g[k], w[k]) for k in w if not _same(g[k], w[k])}
        assert not diff, f"row {i} (query {w[c.QUERY_ID]!r}): (engine, reference) {diff}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and a == b
    return type(a) is type(b) and bool(a == b)
