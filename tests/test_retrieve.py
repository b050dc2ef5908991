"""retrieve (SPEC 6): the candidate layout, BM25 against the plain reference on
adversarial input, the index saved and loaded, dense search against numpy and FAISS,
fusion, every query accounted for, eager = lazy = streaming, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import numpy as np
import polars as pl
import pytest
from hypothesis import given

import ragframe as rf
from ragframe.errors import ConfigError, DataError, SchemaError
from tests.conftest import require_cranfield

CHUNKS = pl.DataFrame(
    {
        "doc_id": [1, 1, 2, 3, 3],
        "chunk_index": [0, 1, 0, 0, 1],
        "start_char": [0, 10, 0, 0, 8],
        "end_char": [12, 20, 11, 10, 16],
        "text": ["Wing lift and drag", "the wing body", "shock waves", "wing wing", None],
    }
)
QUERIES = pl.DataFrame({"query_id": ["a", "b", "c"], "text": ["wing", "drag shock", "??"]})


def _rows(frame: pl.DataFrame) -> list[tuple[Any, ...]]:
    return frame.select("query_id", "doc_id", "chunk_index", "rank").rows()


def test_the_output_is_the_candidate_layout_with_offsets() -> None:
    out = rf.retrieve(CHUNKS, QUERIES, k=2).collect()
    assert out.columns == [
        "query_id",
        "doc_id",
        "chunk_index",
        "start_char",
        "end_char",
        "similarity",
        "rank",
    ]
    assert out.schema["similarity"] == pl.Float64 and out.schema["rank"] == pl.Int64
    # "wing wing" (2 tokens) first, then "the wing body" (3) before "Wing lift and drag" (4)
    assert _rows(out) == [("a", 3, 0, 1), ("a", 1, 1, 2), ("b", 2, 0, 1), ("b", 1, 0, 2)]
    for _, group in out.group_by("query_id"):
        assert group["similarity"].is_sorted(descending=True)


def test_entity_id_and_entity_type_are_carried() -> None:
    chunks = CHUNKS.rename({"doc_id": "entity_id"}).with_columns(entity_type=pl.lit("page"))
    out = rf.retrieve(chunks.drop("start_char", "end_char"), QUERIES, k=1).collect()
    assert out.columns == [
        "query_id",
        "entity_id",
        "entity_type",
        "chunk_index",
        "similarity",
        "rank",
    ]


def test_a_query_that_matches_nothing_has_no_rows_and_is_reported() -> None:
    queries = pl.DataFrame({"query_id": [1, 2, 3, 4], "text": ["wing", "zebra", None, "  "]})
    out = rf.retrieve(CHUNKS, queries, k=3).collect()
    assert out["query_id"].unique().to_list() == [1]
    missing = rf.unmatched_queries(out, queries).collect()
    assert missing["query_id"].to_list() == [2, 3, 4]


def test_ties_go_to_the_earlier_chunk_row() -> None:
    chunks = pl.DataFrame(
        {
            "doc_id": [5, 4, 3, 2],
            "chunk_index": [0, 0, 0, 0],
            "text": ["lift", "drag", "lift", "lift"],
        }
    )
    out = rf.retrieve(chunks, pl.DataFrame({"query_id": [1], "text": ["lift"]}), k=2).collect()
    assert out["doc_id"].to_list() == [5, 3]
    assert out["similarity"][0] == out["similarity"][1]


def test_eager_lazy_streaming_and_arrow_inputs_agree() -> None:
    want = rf.retrieve(CHUNKS, QUERIES, k=3).collect(engine="in-memory")
    assert rf.retrieve(CHUNKS.lazy(), QUERIES.lazy(), k=3).collect(engine="streaming").equals(want)
    assert rf.retrieve(CHUNKS.to_arrow(), QUERIES.to_arrow(), k=3).collect().equals(want)
    assert rf.retrieve(CHUNKS, QUERIES, {"k": 3}).collect().equals(want)


def test_nothing_runs_until_collected() -> None:
    called = []

    def embed(texts: list[str]) -> np.ndarray:
        called.append(len(texts))
        return np.ones((len(texts), 2), dtype=np.float32)

    plan = rf.retrieve(
        CHUNKS.with_columns(pl.col("text").fill_null("")), QUERIES, method="dense", embed=embed
    )
    assert called == [] and plan.collect_schema()["similarity"] == pl.Float64
    plan.collect()
    assert called


# --- BM25 against the reference ---------------------------------------------------------

_WORDS = [
    "wing",
    "Wing",
    "WING",
    "lift",
    "e.g.",
    "2.71",
    "x-y",
    "İ",
    "Σ",
    "ß",
    "日本",
    "a_b",
    "__",
    "don't",
    "Ǆ",
    "k",
    "\u212a",
    "body",
    "the",
    " ",
    "\n",
    "!!",
]
_text = st.one_of(
    st.none(),
    st.lists(st.sampled_from(_WORDS), max_size=12).map(" ".join),
    st.text(alphabet="ab AB.-'\u0130\u03a3", max_size=20),
)


@given(
    texts=st.lists(_text, min_size=1, max_size=25),
    queries=st.lists(_text, min_size=1, max_size=6),
    k=st.integers(1, 6),
    k1=st.sampled_from([0.0, 0.5, 1.2, 3.0]),
    b=st.sampled_from([0.0, 0.3, 0.75, 1.0]),
)
def test_bm25_equals_the_reference(
    texts: list[str | None], queries: list[str | None], k: int, k1: float, b: float
) -> None:
    chunks = pl.DataFrame(
        {"doc_id": range(len(texts)), "chunk_index": [0] * len(texts), "text": texts},
        schema_overrides={"text": pl.String},
    )
    asked = pl.DataFrame(
        {"query_id": range(len(queries)), "text": queries}, schema_overrides={"text": pl.String}
    )
    got = rf.retrieve(chunks, asked, k=k, k1=k1, b=b).collect().to_dicts()
    assert got == rf.retrieve_reference(chunks, asked, k=k, k1=k1, b=b)


def test_the_search_kernel_prunes_exactly_on_cranfield() -> None:
    """Top 1, 3 and 50 of 40 Cranfield queries over its first 1,500 chunks (the
    pruning's thresholds change with k) equal the plain reference's, bit for bit (the
    reference's plain tokenizer takes seconds per thousand chunks)."""
    data = require_cranfield("chunks.parquet", "queries.parquet")
    chunks = pl.read_parquet(data / "chunks.parquet").head(1500)
    queries = pl.read_parquet(data / "queries.parquet").head(40)
    want = rf.retrieve_reference(chunks, queries, k=50)
    for k in (1, 3, 50):
        got = (
            rf.retrieve(chunks, queries, k=k)
            .collect()
            .select("query_id", "doc_id", "chunk_index", "similarity", "rank")
            .to_dicts()
        )
        assert got == [row for row in want if row["rank"] <= k], k


# --- the index --------------------------------------------------------------------------


def test_the_index_is_saved_and_loaded(tmp_path: Path) -> None:
    index = rf.bm25_index(CHUNKS)
    assert index.doc_count == 4 and index.total_tokens == 4 + 3 + 2 + 2
    index.save(tmp_path / "idx")
    loaded = rf.BM25Index.load(tmp_path / "idx")
    assert loaded.vocabulary.terms().to_list() == index.vocabulary.terms().to_list()
    want = rf.retrieve(CHUNKS, QUERIES, k=3).collect()
    assert rf.retrieve(loaded, QUERIES, k=3).collect().equals(want)
    index.save(tmp_path / "idx")  # an index folder is replaced
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == [
        "chunks.parquet",
        "postings.parquet",
        "terms.parquet",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_index_refuses_other_folders(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(rf.RagframeError, match="holds other files"):
        rf.bm25_index(CHUNKS).save(tmp_path / "other")
    with pytest.raises(DataError, match="not a ragframe BM25 index"):
        rf.BM25Index.load(tmp_path / "other")
    with pytest.raises(SchemaError, match="method='bm25' only"):
        rf.retrieve(rf.bm25_index(CHUNKS), QUERIES, method="dense")


def test_the_index_is_built_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many blocks of a few chunks give the index of one block."""
    from ragframe.retrieve import _index

    data = require_cranfield("chunks.parquet", "queries.parquet")
    chunks = pl.read_parquet(data / "chunks.parquet")
    queries = pl.read_parquet(data / "queries.parquet")
    want = rf.retrieve(chunks, queries, k=10).collect()
    monkeypatch.setattr(_index, "BLOCK_BYTES", 5000)
    assert len(_index._blocks(chunks["text"])) > 100
    assert rf.retrieve(chunks, queries, k=10).collect().equals(want)


# --- dense ------------------------------------------------------------------------------


def _tie_vectors(n: int, dims: int, seed: int) -> np.ndarray:
    """Small integers: every product and sum is exact in float32, and ties are common."""
    return np.random.default_rng(seed).integers(-2, 3, size=(n, dims)).astype(np.float32)


def _brute(
    chunks: np.ndarray, queries: np.ndarray, k: int, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    if metric == "l2":
        scores = -((queries[:, None, :] - chunks[None, :, :]) ** 2).sum(axis=2)
    else:
        if metric == "cosine":
            chunks = chunks / np.linalg.norm(chunks, axis=1, keepdims=True)
            queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        scores = queries @ chunks.T
    order = np.lexsort((np.broadcast_to(np.arange(chunks.shape[0]), scores.shape), -scores), axis=1)
    top = order[:, :k]
    return top, np.take_along_axis(scores, top, axis=1)


def _dense_frames(chunks: np.ndarray, queries: np.ndarray) -> tuple[pl.DataFrame, pl.DataFrame]:
    dims = chunks.shape[1]
    c = pl.DataFrame(
        {
            "doc_id": np.arange(len(chunks)),
            "chunk_index": 0,
            "vector": pl.Series(chunks, dtype=pl.Array(pl.Float32, dims)),
        }
    )
    q = pl.DataFrame(
        {
            "query_id": np.arange(len(queries)),
            "vector": pl.Series(queries, dtype=pl.Array(pl.Float32, dims)),
        }
    )
    return c, q


@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
def test_dense_equals_numpy_brute_force_with_ties_in_many_blocks(
    monkeypatch: pytest.MonkeyPatch, metric: str
) -> None:
    from ragframe.retrieve import _dense

    chunks, queries = _tie_vectors(700, 6, 1), _tie_vectors(90, 6, 2)
    chunks[np.linalg.norm(chunks, axis=1) == 0, 0] = 1  # cosine needs non-zero vectors
    queries[np.linalg.norm(queries, axis=1) == 0, 0] = 1
    c, q = _dense_frames(chunks, queries)
    c = pl.concat([c[:300], c[300:650], c[650:]], rechunk=False)  # pieces of the column
    monkeypatch.setattr(_dense, "CHUNK_BLOCK", 64)
    out = rf.retrieve(c, q, method="dense", metric=metric, k=15, block_size=7).collect()
    top, scores = _brute(chunks, queries, 15, metric)
    assert out["doc_id"].to_numpy().reshape(90, 15).tolist() == top.tolist()
    if metric == "cosine":
        np.testing.assert_allclose(out["similarity"].to_numpy().reshape(90, 15), scores, rtol=1e-6)
    else:
        assert out["similarity"].to_numpy().reshape(90, 15).tolist() == scores.tolist()


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_dense_equals_faiss_flat(metric: str) -> None:
    faiss = pytest.importorskip("faiss")
    chunks, queries = _tie_vectors(2000, 8, 3), _tie_vectors(100, 8, 4)
    index = faiss.IndexFlatIP(8) if metric == "ip" else faiss.IndexFlatL2(8)
    index.add(chunks)
    distances, labels = index.search(queries, 20)
    c, q = _dense_frames(chunks, queries)
    out = rf.retrieve(c, q, method="dense", metric=metric, k=20).collect()
    want_scores = distances if metric == "ip" else -distances
    got_scores = out["similarity"].to_numpy().reshape(100, 20)
    assert got_scores.tolist() == want_scores.tolist()
    got_rows = out["doc_id"].to_numpy().reshape(100, 20)
    for q in range(100):  # FAISS orders ties its own way: the same chunks above the last score
        last = got_scores[q, -1]
        assert set(got_rows[q][got_scores[q] > last]) == set(labels[q][want_scores[q] > last])
    assert got_rows.tolist() == _brute(chunks, queries, 20, metric)[0].tolist()


def test_chunk_vectors_are_read_in_place() -> None:
    """A float32 array column is searched piece by piece where it lies: no copy."""
    from ragframe.retrieve import _dense

    c, _ = _dense_frames(_tie_vectors(50, 4, 5), _tie_vectors(1, 4, 6))
    c = pl.concat([c[:20], c[20:]], rechunk=False)
    pieces, present = _dense.column_vectors(c, "vector", "chunks")
    assert [p.shape for p in pieces] == [(20, 4), (30, 4)] and present.all()
    assert not any(p.flags.owndata for p in pieces)


def test_dense_embeds_texts_in_batches() -> None:
    calls: list[int] = []
    table = {"wing": [1.0, 0.0], "lift": [0.0, 1.0]}

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array(
            [
                [sum(table.get(w, [0.0, 0.0])[i] for w in t.split()) + 0.01 for i in range(2)]
                for t in texts
            ],
            dtype=np.float32,
        )

    chunks = CHUNKS.with_columns(pl.col("text").fill_null("lift"))
    out = rf.retrieve(
        chunks, QUERIES, method="dense", metric="ip", embed=embed, batch_size=2, k=1
    ).collect()
    assert calls == [2, 2, 1, 2, 1]  # five chunks, then the three queries
    assert out["query_id"].to_list() == ["a", "b", "c"]
    assert out["doc_id"][0] == 3  # "wing wing"
    blank = QUERIES.with_columns(text=pl.Series(["wing", None, " \n"]))
    calls.clear()
    out = rf.retrieve(chunks, blank, method="dense", metric="ip", embed=embed, k=1).collect()
    assert calls == [5, 1] and out["query_id"].to_list() == ["a"]  # no text: no rows


# --- fusion -----------------------------------------------------------------------------


def test_fusion_by_reciprocal_rank_at_chunk_and_document_level() -> None:
    chunks = pl.DataFrame(
        {
            "doc_id": [1, 1, 2, 3],
            "chunk_index": [0, 1, 0, 0],
            "text": ["wing wing lift", "wing lift", "lift", "drag"],
            "vector": [[0.0, 1.0], [0.1, 1.0], [1.0, 0.0], [0.9, 0.1]],
        }
    )
    queries = pl.DataFrame({"query_id": [1], "text": ["wing lift"], "vector": [[1.0, 0.0]]})
    bm25 = rf.retrieve(chunks, queries, k=4).collect()
    dense = rf.retrieve(chunks, queries, k=4, method="dense", metric="ip").collect()
    fused = rf.retrieve(chunks, queries, k=4, method=["bm25", "dense"], metric="ip").collect()

    def rrf(frame: pl.DataFrame) -> dict[tuple[int, int], float]:
        return {
            (d, i): 1 / (60 + r) for d, i, r in frame.select("doc_id", "chunk_index", "rank").rows()
        }

    want: dict[tuple[int, int], float] = {}
    for part in (rrf(bm25), rrf(dense)):
        for key, value in part.items():
            want[key] = want.get(key, 0.0) + value
    best = sorted(want.items(), key=lambda kv: (-kv[1], kv[0]))
    assert [key for key, _ in best] == fused.select("doc_id", "chunk_index").rows()
    np.testing.assert_allclose(fused["similarity"].to_numpy(), [v for _, v in best])
    by_doc = rf.retrieve(
        chunks, queries, k=4, method=["bm25", "dense"], metric="ip", fusion="document"
    ).collect()
    assert by_doc["doc_id"].to_list() == sorted(
        set(by_doc["doc_id"].to_list()), key=by_doc["doc_id"].to_list().index
    )
    doc1 = by_doc.filter(pl.col("doc_id") == 1)
    # document 1: rank 1 in BM25's documents, rank 3 in dense's: two contributions, not four
    assert doc1["similarity"].item() == pytest.approx(1 / 61 + 1 / 63)


# --- downstream -------------------------------------------------------------------------


def test_the_output_goes_into_postprocess_and_evaluate() -> None:
    data = require_cranfield("chunks.parquet", "queries.parquet", "qrels.parquet")
    chunks = pl.read_parquet(data / "chunks.parquet")
    queries = pl.read_parquet(data / "queries.parquet")
    candidates = rf.retrieve(chunks, queries, k=20)
    blocks = rf.postprocess(candidates, rf.PostprocessConfig(max_blocks=5), chunks=chunks)
    qrels = rf.read_qrels(data / "qrels.parquet", gain={1: 4, 2: 3, 3: 2, 4: 1})
    per_query = rf.evaluate(qrels, candidates=candidates, blocks=blocks, k=[10]).collect()
    summary = rf.summarize(per_query)
    assert summary["queries"].item() == queries.height
    assert 0.2 < summary["ndcg@10"].item() < 0.6  # BM25 on Cranfield's chunks: 0.31


# --- bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 0}, "k must be in"),
        ({"k": 2.5}, "k must be an integer"),
        ({"k": True}, "k must be an integer"),
        ({"method": "tfidf"}, "method must be one of"),
        ({"method": ["bm25", "bm25"]}, "twice"),
        ({"b": 1.5}, "b must be at least 0.0, at most 1.0"),
        ({"k1": float("nan")}, "k1 must be"),
        ({"metric": "dot"}, "metric must be one of"),
        ({"fusion": "query"}, "fusion must be one of"),
        ({"top_k": 3}, "unknown retrieve option 'top_k'"),
    ],
)
def test_bad_parameters_are_refused_at_once(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        rf.retrieve(CHUNKS, QUERIES, **options)


@pytest.mark.parametrize(
    ("chunks", "queries", "message"),
    [
        (CHUNKS.drop("text"), QUERIES, "chunks: missing column 'text'"),
        (CHUNKS.drop("doc_id"), QUERIES, r"chunks: missing column 'doc_id' \(or 'entity_id'\)"),
        (CHUNKS.drop("chunk_index"), QUERIES, "chunks: missing column 'chunk_index'"),
        (CHUNKS.drop("end_char"), QUERIES, "without its pair"),
        (
            CHUNKS,
            QUERIES.rename({"query_id": "qid"}),
            "queries: missing column 'query_id'; .* did you mean 'qid'",
        ),
        (CHUNKS, QUERIES.drop("text"), "queries: missing column 'text'"),
        (
            CHUNKS.with_columns(pl.col("chunk_index").cast(pl.String)),
            QUERIES,
            "'chunk_index' has type",
        ),
        (CHUNKS.with_columns(text=pl.lit(3)), QUERIES, "'text' has type"),
        ([1, 2], QUERIES, "chunks must be a polars"),
    ],
)
def test_missing_or_mistyped_columns_are_refused_at_once(
    chunks: Any, queries: Any, message: str
) -> None:
    with pytest.raises(SchemaError, match=message):
        rf.retrieve(chunks, queries)


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        (pl.DataFrame({"query_id": [1, None], "text": ["a", "b"]}), "null values"),
        (pl.DataFrame({"query_id": [1, 1], "text": ["a", "b"]}), "query_id 1 appears 2 times"),
    ],
)
def test_bad_query_ids_are_data_errors(queries: pl.DataFrame, message: str) -> None:
    with pytest.raises(DataError, match=message):
        rf.retrieve(CHUNKS, queries).collect()


def test_dense_needs_vectors_or_embed() -> None:
    with pytest.raises(SchemaError, match="no vector column 'vector' and no embed"):
        rf.retrieve(CHUNKS, QUERIES, method="dense")
    with pytest.raises(SchemaError, match="expected a list or array"):
        rf.retrieve(
            CHUNKS.with_columns(vector=pl.lit("x")),
            QUERIES,
            method="dense",
            embed=lambda t: np.zeros((len(t), 2)),
        )


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[1.0, 2.0], [1.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]], "2 different lengths"),
        (
            [[1.0, 2.0], [1.0, float("nan")], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]],
            "NaN, infinite or null values",
        ),
        (
            [[1.0, 2.0], [1.0, None], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]],
            "NaN, infinite or null values",
        ),
        ([[1.0, 2.0], None, [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]], "null vectors"),
        ([[1.0, 2.0], [0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 1.0]], "zero vectors"),
    ],
)
def test_bad_vectors_are_data_errors(vectors: list[Any], message: str) -> None:
    chunks = CHUNKS.with_columns(vector=pl.Series(vectors, dtype=pl.List(pl.Float64)))
    queries = QUERIES.with_columns(vector=pl.Series([[1.0, 0.0]] * 3))
    with pytest.raises(DataError, match=message):
        rf.retrieve(chunks, queries, method="dense").collect()


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (lambda t: np.zeros((len(t) + 1, 3)), r"shape \(3, 3\) for a batch of 2"),
        (lambda t: np.zeros(len(t)), "shape"),
        (lambda t: np.full((len(t), 3), np.nan), "NaN or infinite"),
        (lambda t: "vectors", "embed returned"),
        (lambda t: np.zeros((len(t), 2 + len(t))), "one row of the same width"),
    ],
)
def test_an_embed_that_returns_the_wrong_thing_is_a_data_error(result: Any, message: str) -> None:
    chunks = CHUNKS.with_columns(pl.col("text").fill_null(""))
    with pytest.raises(DataError, match=message):
        rf.retrieve(chunks, QUERIES, method="dense", embed=result, batch_size=2).collect()


def test_query_and_chunk_vectors_of_different_widths_are_refused() -> None:
    chunks = CHUNKS.with_columns(vector=pl.Series([[1.0, 2.0]] * 5))
    queries = QUERIES.with_columns(vector=pl.Series([[1.0, 0.0, 1.0]] * 3))
    with pytest.raises(rf.RagframeError, match="3"):
        rf.retrieve(chunks, queries, method="dense").collect()


def test_a_sentence_transformers_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="nothing is downloaded"):
        rf.sentence_transformer(tmp_path / "all-MiniLM-L6-v2")


def test_a_real_sentence_transformers_model_from_disk(tmp_path: Path) -> None:
    """A tiny BERT made here (random weights, its own word-piece vocabulary), saved as a
    sentence-transformers folder, loaded offline through the adapter."""
    st_lib = pytest.importorskip("sentence_transformers")
    transformers = pytest.importorskip("transformers")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "wing", "lift", "drag", "shock", "the"]
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "vocab.txt").write_text("\n".join(words) + "\n")
    tokenizer = transformers.BertTokenizerFast(str(tmp_path / "bert" / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    transformers.BertModel(config).save_pretrained(tmp_path / "bert")
    tokenizer.save_pretrained(tmp_path / "bert")
    try:  # sentence-transformers 6.3 moved its modules
        from sentence_transformers.sentence_transformer import modules
    except ImportError:
        from sentence_transformers import models as modules  # type: ignore[no-redef]
    body = modules.Transformer(str(tmp_path / "bert"))
    width = getattr(body, "get_embedding_dimension", None) or body.get_word_embedding_dimension
    pooling = modules.Pooling(width())
    st_lib.SentenceTransformer(modules=[body, pooling]).save(str(tmp_path / "model"))
    embed = rf.sentence_transformer(tmp_path / "model", device="cpu")
    chunks = CHUNKS.with_columns(pl.col("text").fill_null(""))
    out = rf.retrieve(chunks, QUERIES, method="dense", embed=embed, k=2).collect()
    assert out["query_id"].to_list() == ["a", "a", "b", "b", "c", "c"]
    assert embed(["wing lift"]).shape == (1, 16)
