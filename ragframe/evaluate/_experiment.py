"""``experiment``: from documents to a decision (SPEC 8). Every configuration of a grid
over the chunking, the retrieval and the context is chunked, retrieved,
post-processed and evaluated, each stage once per distinct setting of the parameters it
reads, then summarized as a sweep is (SPEC 5).

How the work is shared: the documents are chunked once per window
(:func:`ragframe.chunk`); the chunks are searched once per (window, retrieval setting)
at the largest ``k`` of the grid (:func:`ragframe.retrieve`), a smaller ``k`` taking the
first ``k`` of each query (the ranking is a total order: score, then chunk row, so the
first ``k`` of the top ``K`` are the top ``k``); and each candidate set's context
configurations share their post-processing steps as :func:`ragframe.sweep` shares them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.evaluate import _grid
from ragframe.evaluate._evaluate import evaluate_contexts
from ragframe.evaluate._grid import Setting
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._result import SweepResult
from ragframe.evaluate._span_checks import known_documents
from ragframe.evaluate._spans import has_spans
from ragframe.evaluate._sweep import (
    DEFAULT_METRICS,
    chosen,
    settings_row,
    sweep_blocks,
    sweep_result,
)
from ragframe.retrieve import RetrieveConfig
from ragframe.window import WindowConfig

Embed = Callable[[list[str]], Any]


@dataclass(frozen=True)
class ExperimentResult(SweepResult):
    """A :class:`SweepResult` whose configurations also vary the chunking and the
    retrieval (their varied parameters are configuration columns like the others).

    Attributes:
        chunks: with ``keep=True``, each window's chunks (keyed by its
            :class:`~ragframe.WindowConfig`); else empty.
        candidates: with ``keep=True``, each (window, retrieval) candidate table at the
            largest ``k`` searched (keyed by the pair of configs); else empty.
        settings: every configuration's window, retrieval and context configs, by
            ``config`` number.
    """

    chunks: Mapping[WindowConfig, pl.DataFrame] = field(default_factory=dict)
    candidates: Mapping[tuple[WindowConfig, RetrieveConfig], pl.DataFrame] = field(
        default_factory=dict
    )
    settings: Sequence[Setting] = ()


def experiment(
    documents: Any,
    queries: Any,
    qrels: Any,
    grid: Mapping[str, Any],
    *,
    baseline: int | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
    retrieve_options: Mapping[str, Any] | None = None,
    embed: Embed | None = None,
    keep: bool = False,
    max_configurations: int = _grid.MAX_CONFIGURATIONS,
    progress: bool | None = False,
) -> ExperimentResult:
    """Chunk, retrieve, post-process and evaluate every configuration of ``grid``.

    Needs, in ``documents``: ``doc_id`` and ``content`` (as :func:`ragframe.chunk`); in
    ``queries``: ``query_id`` and ``text`` (or ``query``, as :func:`ragframe.fetch`
    names it). The grid maps parameters to lists of values (every combination; a
    single value is a list of one): the window's ``window_chars`` (or ``size``) and
    ``overlap_chars``; the retrieval's ``method``, ``k`` (candidates kept per query),
    ``k1`` and ``b``; and every :class:`~ragframe.PostprocessConfig` field. Left out:
    windows of 400 characters with 100 overlap, and ``overlap="offsets"`` (merging by
    the chunker's offsets, which removes the windows' overlap exactly; ``"text"``
    finds it in the text and gives the same blocks here).

    Args:
        documents: one row per document.
        queries: one row per query.
        qrels: judgements (anything :func:`ragframe.read_qrels` reads).
        grid: parameter -> values (see above; :mod:`ragframe.evaluate._grid`).
        baseline: the ``config`` number the others are tested against (default 0).
        metric, cost, metrics, seed: as for :func:`ragframe.sweep`.
        retrieve_options: further :class:`~ragframe.RetrieveConfig` fields for every
            configuration (``vectors``, ``metric``, ``fusion_depth``, ...).
        embed: the embedding function of a dense retrieval (see :func:`ragframe.retrieve`).
        keep: keep each window's chunks and each retrieval's candidates in the result.
        max_configurations: refuse a larger grid (before any work).
        progress: a bar per stage (None: on a terminal or in a notebook).

    Returns:
        An :class:`ExperimentResult`: ``per_query`` (configuration x query), ``summary``
        (means, intervals, paired tests with Holm, the Pareto front), ``best()``.

    Raises:
        ConfigError: an unknown parameter (with the closest names), an empty list, a
            value a stage refuses, too many configurations, a bad baseline or metric.
        SchemaError: a missing or mistyped column.
        DataError: no query is judged; a span judgement on a document not among
            ``documents``, or past its end.

    Example:
        >>> import polars as pl
        >>> docs = pl.DataFrame({"doc_id": [1, 2], "content": ["wings give lift", "tails"]})
        >>> qs = pl.DataFrame({"query_id": [1], "text": ["lift"]})
        >>> qrels = pl.DataFrame({"query_id": [1], "doc_id": [1], "relevance": [1]})
        >>> result = experiment(docs, qs, qrels, {"size": [5, 20], "overlap_chars": 0})
        >>> result.summary.sort("window_chars").select("window_chars", "context_recall").rows()
        [(5, 1.0), (20, 1.0)]
    """
    settings, varied = _grid.settings(grid, retrieve_options, max_configurations)
    contexts = [s.context for s in settings]
    judged = judgements(qrels)
    spans = has_spans(judged.columns)
    metric, cost, wanted = chosen(contexts, metric, cost, metrics, spans)
    base = _baseline(baseline, len(settings))
    docs, asked = c.to_lazy(documents, "documents"), _queries(queries)
    if spans:
        _spans_within(judged, docs)
    chunks: dict[WindowConfig, pl.DataFrame] = {}  # chunk indexes shifted per window
    candidates: dict[tuple[WindowConfig, RetrieveConfig], pl.DataFrame] = {}
    blocks: list[pl.LazyFrame] = []
    from ragframe._progress import steps

    groups = _groups(settings)
    with steps("experiment", len(groups) + 1, progress) as bar:
        for (window, search), members in groups.items():
            if window not in chunks:
                chunks[window] = _chunks(docs, window, len(chunks))
            if (window, search) not in candidates:
                candidates[(window, search)] = _retrieve(chunks[window], asked, search, embed)
            blocks += _blocks(candidates[(window, search)], chunks[window], members, settings)
            bar.update(1)
        per_query = _evaluate(blocks, list(chunks.values()), settings, varied, judged)
        bar.update(1)
    result = sweep_result(
        per_query, varied, base, metric=metric, cost=cost, metrics=wanted, seed=seed
    )
    return ExperimentResult(
        **{f.name: getattr(result, f.name) for f in dataclasses.fields(SweepResult)},
        chunks={w: _unshifted(x) for w, x in chunks.items()} if keep else {},
        candidates={key: _unshifted(x) for key, x in candidates.items()} if keep else {},
        settings=tuple(settings),
    )


def _groups(
    settings: Sequence[Setting],
) -> dict[tuple[WindowConfig, RetrieveConfig], list[int]]:
    """The configurations (numbers) of each search: a window and a retrieval at the
    largest ``k`` of the configurations that can share it (a fused retrieval deeper
    than its ``fusion_depth`` ranks differently, so it is searched at its own ``k``)."""
    keys: dict[tuple[Any, ...], list[int]] = {}
    for number, s in enumerate(settings):
        r = s.retrieval
        own = len(r.methods) > 1 and r.k > r.fusion_depth
        keys.setdefault((s.window, dataclasses.replace(r, k=1), own and r.k), []).append(number)
    groups = {}
    for (window, search, _), members in keys.items():
        deepest = max(settings[m].retrieval.k for m in members)
        groups[(window, dataclasses.replace(search, k=deepest))] = members
    return groups


SHIFT = 32
"""Inside an experiment, window ``w``'s chunk indexes are ``chunk_index + (w << SHIFT)``
(differences, hence adjacency, unchanged), so that the contexts of every window are
evaluated together against one chunk store; kept tables are given back unshifted."""


def _chunks(documents: pl.LazyFrame, window: WindowConfig, number: int) -> pl.DataFrame:
    from ragframe.window import chunk

    shift = pl.col(c.CHUNK_INDEX) + (number << SHIFT)
    return chunk(documents, window).with_columns(shift).collect()


def _unshifted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(c.CHUNK_INDEX) % (1 << SHIFT))


def _retrieve(
    chunks: pl.DataFrame, queries: pl.LazyFrame, search: RetrieveConfig, embed: Embed | None
) -> pl.DataFrame:
    from ragframe.retrieve import retrieve

    return retrieve(chunks, queries, search, embed=embed).collect()


def _blocks(
    found: pl.DataFrame, chunks: pl.DataFrame, members: Sequence[int], settings: Sequence[Setting]
) -> list[pl.LazyFrame]:
    """The blocks of the configurations ``members``, which share one search: each
    ``k``'s candidates are the search's first ``k`` per query, their context
    configurations post-processed together (:func:`sweep_blocks`)."""
    by_k: dict[int, list[int]] = {}
    for m in members:
        by_k.setdefault(settings[m].retrieval.k, []).append(m)
    out = []
    for k, numbers in by_k.items():
        top = found.filter(pl.col(c.RANK) <= k).drop(c.START_CHAR, c.END_CHAR, strict=False)
        made = sweep_blocks(top, [settings[m].context for m in numbers], chunks)
        numbered = zip(made, numbers, strict=True)
        out += [x.with_columns(pl.lit(n, dtype=pl.Int64).alias(c.CONFIG)) for x, n in numbered]
    return out


def _evaluate(
    blocks: list[pl.LazyFrame],
    chunks: list[pl.DataFrame],
    settings: Sequence[Setting],
    varied: tuple[str, ...],
    judged: pl.DataFrame,
) -> pl.DataFrame:
    """Every configuration's per-query rows, evaluated at once against one store."""
    context = tuple(n for n in varied if _grid.parameter_stage(n) == "context") or ("top_k",)
    rows = []
    for number, s in enumerate(settings):
        row = settings_row(number, s.context, context)
        row.update(_grid.configuration_columns(s, varied))
        rows.append(row)
    table = pl.DataFrame(rows).with_columns(pl.col(c.CONFIG).cast(pl.Int64))
    store = pl.concat([x.select(c.DOC_ID, c.CHUNK_INDEX, c.START_CHAR, c.END_CHAR) for x in chunks])
    everything = pl.concat(blocks, how="diagonal_relaxed")
    per_query = evaluate_contexts(everything, judged, table, store)
    names = varied or ("top_k",)
    return (
        table.select(c.CONFIG, *names)
        .join(per_query, on=c.CONFIG)
        .sort(c.CONFIG, maintain_order=True)
    )


def _spans_within(judged: pl.DataFrame, documents: pl.LazyFrame) -> None:
    """Span judgements judge characters of the given documents: a span on a document
    they lack, or past its end, is an error before any work (as :func:`read_qrels`
    raises given ``documents``)."""
    c.require_columns(documents.collect_schema(), [c.DOC_ID, c.CONTENT], "documents")
    length = pl.col(c.CONTENT).str.len_chars().fill_null(0).cast(pl.Int64)
    lengths = documents.select(c.DOC_ID, length.alias(c.CHAR_COUNT)).collect()
    known_documents(judged, lengths, lambda row: f"judgement {row}")


def _queries(queries: Any) -> pl.LazyFrame:
    """The queries' ``query_id`` and ``text`` (``query`` taken for ``text``)."""
    frame = c.to_lazy(queries, "queries")
    names = frame.collect_schema().names()
    if "text" not in names and "query" in names:
        frame = frame.rename({"query": "text"})
    return frame


def _baseline(baseline: object, count: int) -> int:
    if baseline is None:
        return 0
    if isinstance(baseline, bool) or not isinstance(baseline, int) or not 0 <= baseline < count:
        raise ConfigError(
            f"experiment: baseline must be a config number in [0, {count - 1}], got {baseline!r}"
        )
    return baseline
