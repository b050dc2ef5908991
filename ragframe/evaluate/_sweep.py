"""``sweep``: many postprocess configurations over the same candidates (SPEC 5), each
step done once for every configuration that shares its inputs, then evaluated.

Which parameters each step reads (SPEC 1): the input preparation (canonical columns,
the text source) reads none; the ranking, distinct top-K and threshold (rules 1-4)
read ``top_k`` and ``min_similarity`` (and ``missing_text``); the merge (rules 5-9)
also reads ``max_chunk_gap``, ``max_merged_block_characters`` and ``overlap``; the
budget (rule 10) also reads ``max_blocks`` and ``max_characters``. So the candidates
are prepared once, ranked and selected once per distinct (top_k, min_similarity, ...),
merged once per distinct merge setting, and only the cheap budget and the evaluation
run per configuration.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError
from ragframe.evaluate._evaluate import evaluate_contexts
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._result import SweepResult, summarize_sweep
from ragframe.postprocess import PostprocessConfig
from ragframe.postprocess import _stages as stages

Grid = Mapping[str, Sequence[Any]] | Sequence[PostprocessConfig]
_BUDGETS = ("max_blocks", "max_characters")
DEFAULT_METRICS = (
    c.CONTEXT_RECALL,
    c.CONTEXT_NDCG,
    c.RELEVANT_SHARE,
    c.CHARS_USED,
    c.DUPLICATE_CHARS,
)
_MERGE_FIELDS = ("max_chunk_gap", "max_merged_block_characters", "overlap")
_BUDGET_FIELDS = ("max_blocks", "max_characters")


def configurations(grid: Grid) -> tuple[list[PostprocessConfig], tuple[str, ...]]:
    """The configurations of ``grid`` (a mapping of parameter -> values, every
    combination in order; or a list of configs) and the names of the parameters that
    vary among them."""
    fields = [f.name for f in dataclasses.fields(PostprocessConfig)]
    if isinstance(grid, Mapping):
        unknown = sorted(set(grid) - set(fields))
        if unknown:
            raise ConfigError(
                f"sweep grid: unknown parameters {unknown}; expected some of {fields}"
            )
        names = list(grid)
        values = [list(v) if not isinstance(v, str) else [v] for v in grid.values()]
        if any(not v for v in values):
            raise ConfigError("sweep grid: every parameter needs at least one value")
        configs = [
            PostprocessConfig(**dict(zip(names, combo, strict=True)))
            for combo in itertools.product(*values)
        ]
    else:
        configs = list(grid)
        if not configs or not all(isinstance(x, PostprocessConfig) for x in configs):
            raise ConfigError(
                "sweep grid: expected a mapping of parameters or a list of PostprocessConfig"
            )
    varied = tuple(name for name in fields if len({getattr(x, name) for x in configs}) > 1)
    return configs, varied


def _key(config: PostprocessConfig, names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(getattr(config, name) for name in names)


def sweep(
    candidates: Any,
    grid: Grid,
    qrels: Any,
    *,
    chunks: Any = None,
    baseline: int | PostprocessConfig | None = None,
    metric: str = c.CONTEXT_RECALL,
    cost: str = c.CHARS_USED,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
) -> SweepResult:
    """Run every configuration of ``grid`` over the same candidates and evaluate each.

    Args:
        candidates: retrieved chunks (postprocess input).
        grid: a mapping of :class:`~ragframe.PostprocessConfig` parameter -> values
            (every combination, in order) or a list of configs.
        qrels: judgements (anything :func:`ragframe.read_qrels` reads).
        chunks: the chunk store (also gives ``duplicate_chars`` its offsets).
        baseline: the configuration the others are tested against (its number in
            grid order, or the config itself; default: the first).
        metric: the metric of the tests and the Pareto front.
        cost: what the front weighs ``metric`` against.
        metrics: the metrics summarized (means and intervals); ``metric`` and ``cost``
            are always among them.
        seed: seeds the bootstrap and the randomization test.

    Returns:
        A :class:`~ragframe.evaluate.SweepResult`.

    Raises:
        ConfigError: an unknown parameter, a bad value, or a baseline not in the grid.
    """
    configs, varied = configurations(grid)
    base = baseline_number(configs, baseline)
    per_query = sweep_rows(candidates, configs, varied, judgements(qrels), chunks=chunks)
    return sweep_result(
        per_query, varied, base, metric=metric, cost=cost, metrics=metrics, seed=seed
    )


def sweep_rows(
    candidates: Any,
    configs: Sequence[PostprocessConfig],
    varied: tuple[str, ...],
    judged: pl.DataFrame,
    *,
    chunks: Any = None,
) -> pl.DataFrame:
    """The per-(configuration, query) rows of a sweep (:attr:`SweepResult.per_query`):
    what :func:`sweep` summarizes, and what each partition of a distributed sweep gives
    (:func:`ragframe.partition.sweep_part`)."""
    store = None if chunks is None else c.to_lazy(chunks, "chunks")
    prepared: dict[tuple[Any, ...], stages.Prepared] = {}
    selected: dict[tuple[Any, ...], pl.DataFrame] = {}
    merged: dict[tuple[Any, ...], pl.DataFrame] = {}
    contexts = []
    for number, config in enumerate(configs):  # per configuration (tens), never per row
        pkey = _key(config, stages.PREPARE_FIELDS)
        if pkey not in prepared:
            prepared[pkey] = stages.prepare(candidates, chunks, config)
        ready = prepared[pkey]
        skey = pkey + _key(config, stages.SELECT_FIELDS)
        if skey not in selected:
            selected[skey] = stages.finish(ready, stages.select(ready, config)).collect()
        mkey = skey + _key(config, stages.MERGE_FIELDS)
        if mkey not in merged:
            merged[mkey] = stages.merge(ready, selected[skey].lazy(), config).collect()
        blocks = stages.budget(merged[mkey].lazy(), config, ready.passthrough)
        contexts.append(blocks.with_columns(pl.lit(number, dtype=pl.Int64).alias(c.CONFIG)))
    parameters = varied or ("top_k",)
    settings = pl.DataFrame(
        [
            {c.CONFIG: i, **{p: getattr(x, p) for p in {*parameters, *_BUDGETS}}}
            for i, x in enumerate(configs)
        ]
    )
    everything = pl.concat(contexts, how="diagonal_relaxed")  # token_count: tokens only
    per_query = evaluate_contexts(everything, judged, settings, store)
    return settings.select(c.CONFIG, *parameters).join(per_query, on=c.CONFIG)


def sweep_result(
    per_query: pl.DataFrame,
    varied: tuple[str, ...],
    baseline: int,
    *,
    metric: str = c.CONTEXT_RECALL,
    cost: str = c.CHARS_USED,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
) -> SweepResult:
    """The :class:`SweepResult` of per-(configuration, query) rows (from
    :func:`sweep_rows`, or the concatenated rows of a distributed sweep's partitions,
    sorted by configuration and query): the summary is computed here, on all rows."""
    parameters = varied or ("top_k",)
    wanted = list(dict.fromkeys([metric, cost, *metrics]))
    missing = [m for m in wanted if m not in per_query.columns]
    if missing:
        raise ConfigError(f"sweep: unknown metrics {missing}; have {per_query.columns}")
    summary = summarize_sweep(
        per_query,
        parameters,
        metric=metric,
        cost=cost,
        baseline=baseline,
        metrics=wanted,
        seed=seed,
    )
    return SweepResult(per_query, summary, parameters, metric, cost, baseline)


def baseline_number(
    configs: list[PostprocessConfig], baseline: int | PostprocessConfig | None
) -> int:
    if baseline is None:
        return 0
    if isinstance(baseline, PostprocessConfig):
        if baseline not in configs:
            raise ConfigError("sweep: the baseline config is not in the grid")
        return configs.index(baseline)
    if (
        isinstance(baseline, bool)
        or not isinstance(baseline, int)
        or not 0 <= baseline < len(configs)
    ):
        raise ConfigError(
            f"sweep: baseline must be a config number in [0, {len(configs) - 1}], got {baseline!r}"
        )
    return baseline
