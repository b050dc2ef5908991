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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, DataError
from ragframe.evaluate._evaluate import COUNTS_TOKENS, IN_TOKENS, evaluate_contexts
from ragframe.evaluate._metrics import check_cost, check_metric
from ragframe.evaluate._qrels import judgements
from ragframe.evaluate._result import SweepResult, summarize_sweep
from ragframe.evaluate._spans import has_spans
from ragframe.postprocess import PostprocessConfig
from ragframe.postprocess import _stages as stages

Grid = Mapping[str, Sequence[Any]] | Sequence[PostprocessConfig]
_BUDGETS = ("max_blocks", "max_characters", "max_tokens")
DEFAULT_METRICS = (
    c.CONTEXT_RECALL,
    c.CONTEXT_NDCG,
    c.RELEVANT_SHARE,
    c.CHARS_USED,
    c.DUPLICATE_CHARS,
)


def configurations(grid: Grid) -> tuple[list[PostprocessConfig], tuple[str, ...]]:
    """The configurations of ``grid`` (a mapping of parameter -> values, every
    combination in order; or a list of configs) and the names of the parameters that
    vary among them. A parameter's values are a list (or tuple, range, array); a single
    value (a number, a string) is a list of one.

    Raises:
        ConfigError: an unknown parameter, no values, values of the wrong kind (a set, a
            mapping), or a value the config refuses.
    """
    fields = [f.name for f in dataclasses.fields(PostprocessConfig)]
    if isinstance(grid, Mapping):
        unknown = [name for name in grid if name not in fields]
        if unknown:
            raise ConfigError(
                f"sweep grid: unknown parameters {unknown!r}; expected some of {fields}"
            )
        names = list(grid)
        values = [_values(name, value) for name, value in grid.items()]
        if not names or any(not v for v in values):
            raise ConfigError("sweep grid: every parameter needs at least one value")
        configs = []
        for combo in itertools.product(*values):
            try:
                configs.append(PostprocessConfig(**dict(zip(names, combo, strict=True))))
            except ConfigError as exc:
                raise ConfigError(f"sweep grid: {exc}") from None
    elif isinstance(grid, Sequence) and not isinstance(grid, str):
        configs = list(grid)
        if not configs or not all(isinstance(x, PostprocessConfig) for x in configs):
            raise ConfigError(
                "sweep grid: expected a mapping of parameters or a list of PostprocessConfig"
            )
    else:
        raise ConfigError(
            "sweep grid: expected a mapping of parameters to values or a list of "
            f"PostprocessConfig, got {type(grid).__name__}"
        )
    varied = tuple(name for name in fields if len({getattr(x, name) for x in configs}) > 1)
    return configs, varied


def _values(name: str, value: object) -> list[Any]:
    """A grid parameter's values: a list of them, or one value as a list of one."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        return [value]
    if isinstance(value, Mapping | set | frozenset):
        raise ConfigError(
            f"sweep grid: {name!r} must be a list of values, got a {type(value).__name__} "
            f"({value!r}); a list keeps the order of the configurations"
        )
    return [v.item() if isinstance(v, np.generic) else v for v in value]


def default_cost(configs: Sequence[PostprocessConfig]) -> str:
    """What a sweep's Pareto front weighs against by default: the unit its budgets
    count, ``tokens_used`` when every configuration is budgeted in tokens, else
    ``chars_used``."""
    tokens = all(x.length == "tokens" for x in configs)
    return c.TOKENS_USED if configs and tokens else c.CHARS_USED


def sweep_metrics(configs: Sequence[PostprocessConfig], spans: bool = False) -> list[str]:
    """The metric columns a sweep of ``configs`` has (``tokens_used`` only when every
    configuration counts tokens: a tokenizer; the span metrics with ``spans``: span
    judgements)."""
    counted = bool(configs) and all(x.counter is not None for x in configs)
    have = [n for n in _CONTEXT_METRICS if n != c.TOKENS_USED or counted]
    return have + list(SPAN_METRICS) if spans else have


SPAN_METRICS = (c.SPAN_RECALL, c.SPAN_PRECISION)
"""The metrics of span judgements (SPEC 7), summarized by default where there are."""


_CONTEXT_METRICS = (
    c.CONTEXT_RECALL,
    c.CONTEXT_RECALL_CAPPED,
    c.CONTEXT_NDCG,
    c.BLOCKS,
    c.CHARS_USED,
    c.BUDGET_SHARE,
    c.TOKENS_USED,
    c.RELEVANT_SHARE,
    c.UNJUDGED_SHARE,
    c.DUPLICATE_CHARS,
    c.FIRST_RELEVANT_RANK,
    c.FIRST_RELEVANT_OFFSET,
    c.TRUNCATED_BLOCKS,
)


def chosen(
    configs: Sequence[PostprocessConfig],
    metric: object,
    cost: object,
    metrics: object,
    spans: bool = False,
) -> tuple[str, str, list[str]]:
    """The sweep's ``metric``, ``cost`` (None: :func:`default_cost`) and ``metrics``,
    checked against the columns the sweep has, before any work; with ``spans`` (span
    judgements), the default ``metrics`` also name :data:`SPAN_METRICS`."""
    have = sweep_metrics(configs, spans)
    asked = [metric, cost, *(metrics if isinstance(metrics, Sequence) else [])]
    why = ""
    if c.TOKENS_USED not in have and c.TOKENS_USED in asked:
        why = " (tokens_used needs every configuration to count tokens: a tokenizer)"
    try:
        name = check_metric(metric, have, "sweep: metric")
        against = check_cost(default_cost(configs) if cost is None else cost, have, "sweep: cost")
        if isinstance(metrics, str) or not isinstance(metrics, Sequence):
            raise ConfigError(f"sweep: metrics must be a list of metric names, got {metrics!r}")
        listed = [check_metric(m, have, "sweep: metrics") for m in metrics]
    except ConfigError as exc:
        raise ConfigError(f"{exc}{why}") from None
    if spans and tuple(listed) == DEFAULT_METRICS:
        listed += SPAN_METRICS
    return name, against, list(dict.fromkeys([name, against, *listed]))


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
    cost: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    seed: int = 0,
    progress: bool | None = False,
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
        metric: the metric of the tests, the ranking and the Pareto front; which way
            is better is the metric's own (:mod:`ragframe.evaluate._metrics`:
            ``duplicate_chars`` or ``first_relevant_rank``, lower).
        cost: what the front weighs ``metric`` against (``chars_used``,
            ``tokens_used``, ``blocks`` or ``budget_share``); default: the unit the
            budgets count, ``tokens_used`` when every configuration is budgeted in
            tokens, else ``chars_used``.
        metrics: the metrics summarized (means and intervals); ``metric`` and ``cost``
            are always among them, and by default ``span_recall`` and
            ``span_precision`` where the judgements are spans.
        seed: seeds the bootstrap and the randomization test.
        progress: a progress bar over the configurations (``tqdm``; None: shown on a
            terminal or in a notebook; the default, False: none).

    Returns:
        A :class:`~ragframe.evaluate.SweepResult`.

    Raises:
        ConfigError: an unknown parameter, a bad value, a baseline not in the grid, or
            a ``metric``, ``cost`` or ``metrics`` entry that is not one of the sweep's
            metrics (``query_id``, ``judged``, a parameter are not).
        DataError: no query is judged.
    """
    configs, varied = configurations(grid)
    base = baseline_number(configs, baseline)
    judged = judgements(qrels)
    metric, cost, wanted = chosen(configs, metric, cost, metrics, has_spans(judged.columns))
    per_query = sweep_rows(candidates, configs, varied, judged, chunks=chunks, progress=progress)
    return sweep_result(
        per_query, varied, base, metric=metric, cost=cost, metrics=wanted, seed=seed
    )


def sweep_rows(
    candidates: Any,
    configs: Sequence[PostprocessConfig],
    varied: tuple[str, ...],
    judged: pl.DataFrame,
    *,
    chunks: Any = None,
    progress: bool | None = False,
) -> pl.DataFrame:
    """The per-(configuration, query) rows of a sweep (:attr:`SweepResult.per_query`):
    what :func:`sweep` summarizes, and what each partition of a distributed sweep gives
    (:func:`ragframe.partition.sweep_part`)."""
    store = None if chunks is None else c.to_lazy(chunks, "chunks")
    from ragframe._progress import steps

    with steps("sweep", len(configs) + 1, progress) as bar:
        contexts = sweep_blocks(candidates, configs, chunks, bar.update)
        parameters = varied or ("top_k",)
        settings = pl.DataFrame([settings_row(i, x, parameters) for i, x in enumerate(configs)])
        everything = pl.concat(contexts, how="diagonal_relaxed")  # token_count: tokens only
        per_query = evaluate_contexts(everything, judged, settings, store)
        bar.update(1)
    return settings.select(c.CONFIG, *parameters).join(per_query, on=c.CONFIG)


def sweep_blocks(
    candidates: Any,
    configs: Sequence[PostprocessConfig],
    chunks: Any = None,
    done: Any = None,
    first: int = 0,
) -> list[pl.LazyFrame]:
    """Each configuration's blocks (``config`` numbered from ``first``), every step
    done once for the configurations that share its inputs; ``done(1)`` after each."""
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
        number_column = pl.lit(first + number, dtype=pl.Int64).alias(c.CONFIG)
        contexts.append(blocks.with_columns(number_column))
        if done is not None:
            done(1)
    return contexts


def settings_row(
    number: int, config: PostprocessConfig, parameters: Sequence[str]
) -> dict[str, Any]:
    """A configuration's row of the settings :func:`evaluate_contexts` reads."""
    row: dict[str, Any] = {c.CONFIG: number}
    row.update({p: getattr(config, p) for p in {*parameters, *_BUDGETS}})
    row[IN_TOKENS] = config.length == "tokens"
    row[COUNTS_TOKENS] = config.counter is not None
    return row


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
    for name in wanted:
        check_metric(name, per_query.columns, "sweep: metrics")
    check_cost(cost, per_query.columns, "sweep: cost")
    if not per_query[c.JUDGED].any():
        queries = per_query[c.QUERY_ID].n_unique()
        raise DataError(
            f"sweep: no query is judged ({queries} queries in the candidates, none in the "
            "qrels); expected judgements of at least one of them"
        )
    judged = per_query.filter(pl.col(c.JUDGED))
    if cost == c.TOKENS_USED and judged[c.TOKENS_USED].is_null().any():
        raise ConfigError(
            "sweep: cost 'tokens_used' needs every configuration to count tokens (a tokenizer)"
        )
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
