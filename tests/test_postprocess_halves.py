"""A large batch whose queries come in order is run as two halves of whole queries on
two threads (:func:`ragframe.postprocess._stages._halves`): the blocks are the same as
the batch run whole, in the same order, on the chunk store and on inline text, with
repeats that make some queries walk twice, and with typed string ids."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ragframe
from ragframe._kernels._parts import PARALLEL_ROWS
from ragframe.postprocess import _select, _stages

QUERIES = 2_000
PER_QUERY = 45  # 90,000 candidates: over the size that is cut in two
WORDS = ["alpha", "beta"]


def _inputs(strings: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(7)
    n = QUERIES * PER_QUERY
    query = np.repeat(np.arange(QUERIES), PER_QUERY)
    entity = rng.integers(0, 6, n)  # few entities: a query meets each one often
    chunk = rng.integers(0, 40, n)
    sim = np.sort(rng.random(n).reshape(QUERIES, PER_QUERY), axis=1)[:, ::-1].ravel()
    candidates = pl.DataFrame(
        {
            "query_id": query,
            "doc_id": entity,
            "chunk_index": chunk,
            "similarity": sim,
            "entity_type": rng.choice(["a", "b", None], n).tolist(),
        }
    )
    if strings:  # ids as text, still in order
        candidates = candidates.with_columns(
            pl.col("query_id").cast(pl.String).str.zfill(5), pl.col("doc_id").cast(pl.String)
        )
    keys = candidates.select("doc_id", "chunk_index").unique(maintain_order=True)
    # few words: many chunks repeat others, so some queries are walked a second time
    texts = [" ".join(rng.choice(WORDS, int(rng.integers(1, 4)))) for _ in range(keys.height)]
    store = keys.with_columns(pl.Series("text", texts))
    return candidates, store


@pytest.mark.parametrize("strings", [False, True])
def test_halves_give_the_blocks_of_the_whole_batch(
    strings: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    candidates, store = _inputs(strings)
    assert candidates.height >= 4 * PARALLEL_ROWS
    config = ragframe.PostprocessConfig(top_k=8, max_blocks=5, max_characters=400)
    inline = candidates.join(store, on=["doc_id", "chunk_index"], how="left", maintain_order="left")
    cut = _stages._halves(
        pl.DataFrame({"query_id": candidates["query_id"]})
    )  # the batch is cut in two
    assert cut is not None and 0 < cut < candidates.height
    walked_again = _select._walked_again
    again: list[int] = []

    def counted(*args: object) -> object:
        again.append(1)
        return walked_again(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_select, "_walked_again", counted)
    halves = [
        ragframe.postprocess(candidates, config, chunks=store).collect(),
        ragframe.postprocess(inline, config).collect(),
    ]
    assert again  # some query was walked a second time
    monkeypatch.setattr(_stages, "_halves", lambda rows: None)
    whole = [
        ragframe.postprocess(candidates, config, chunks=store).collect(),
        ragframe.postprocess(inline, config).collect(),
    ]
    for two, one in zip(halves, whole, strict=True):
        assert two.height > QUERIES
        assert two.equals(one)


def test_queries_out_of_order_are_not_cut() -> None:
    query = pl.Series("query_id", np.arange(4 * PARALLEL_ROWS)[::-1])
    assert _stages._halves(pl.DataFrame([query])) is None
    assert _stages._halves(pl.DataFrame([query.head(100).sort()])) is None  # too few
