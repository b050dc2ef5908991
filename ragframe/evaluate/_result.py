"""What a sweep gives back (SPEC 5): per-(configuration, query) metrics, and per
configuration the means with seeded bootstrap intervals, paired tests against the
baseline (Holm-corrected), and the Pareto front of a metric against its cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from ragframe import schema as c
from ragframe.evaluate._columns import (
    HIGH,
    LOW,
    P_HOLM,
    P_RANDOMIZATION,
    P_RANDOMIZATION_HOLM,
    P_T,
    PARETO,
    ranked,
)
from ragframe.evaluate._metrics import check_metric, higher_is_better
from ragframe.evaluate._stats import bootstrap_cis, holm, pareto_front, randomization_ps, t_test_p
from ragframe.evaluate._tables import notebook_html


@dataclass(frozen=True)
class SweepResult:
    """A sweep's outcome.

    Attributes:
        per_query: one row per (configuration, query): ``config``, the parameters, then
            :func:`ragframe.evaluate` 's columns.
        summary: one row per configuration, best ``metric`` first (the highest, or
            the lowest where lower is better): ``config``, the
            parameters, ``judged`` queries, each metric's mean with its 95% bootstrap
            interval (``<metric>_low``/``_high``), for ``metric`` the paired tests
            against the baseline (``p_t`` and ``p_randomization``, and both
            Holm-corrected across the other configurations: ``p_holm``,
            ``p_randomization_holm``; null for the baseline itself) and whether it is on
            the Pareto front of ``metric`` against ``cost`` (``pareto``: no other
            configuration is at least as good at no more cost, and better in one).
        parameters: the names of the parameters that vary.
        metric: the metric the tests and the front are about.
        cost: what the front weighs it against (the budgets' unit by default:
            ``chars_used``, or ``tokens_used`` when every configuration counts tokens).
        baseline: the baseline's ``config`` number.
    """

    per_query: pl.DataFrame
    summary: pl.DataFrame
    parameters: tuple[str, ...]
    metric: str
    cost: str
    baseline: int

    def best(self, metric: str | None = None) -> pl.DataFrame:
        """The configuration with the best mean ``metric`` (one row of the summary):
        the highest, or the lowest for a metric where lower is better
        (:mod:`ragframe.evaluate._metrics`); ties go to the lower ``config``."""
        name = check_metric(metric or self.metric, self.summary.columns, "best: metric")
        return ranked(self.summary, name).head(1)

    @property
    def pareto(self) -> pl.DataFrame:
        """The configurations on the Pareto front, cheapest first."""
        return self.summary.filter(pl.col(PARETO)).sort(self.cost)

    def _repr_html_(self) -> str:
        """A notebook's view: the finding in words, then the ranking's first rows as a
        table, numbers rounded to what their intervals support (as in the report)."""
        return notebook_html(self)


def summarize_sweep(
    per_query: pl.DataFrame,
    parameters: Sequence[str],
    *,
    metric: str,
    cost: str,
    baseline: int,
    metrics: Sequence[str],
    seed: int = 0,
) -> pl.DataFrame:
    """The summary table of :class:`SweepResult` from its per-query rows."""
    judged = per_query.filter(pl.col(c.JUDGED)).sort(c.CONFIG, c.QUERY_ID)
    configs = judged[c.CONFIG].unique(maintain_order=True).to_list()
    queries = judged.filter(pl.col(c.CONFIG) == configs[0])[c.QUERY_ID] if configs else None
    shape = (len(configs), len(queries) if queries is not None else 0)
    if judged.height != shape[0] * shape[1]:
        raise ValueError("internal error: the sweep's configurations judge different queries")

    def matrix(name: str) -> npt.NDArray[np.float64]:  # queries x configurations
        values = judged[name].cast(pl.Float64).fill_null(np.nan).to_numpy()
        return values.reshape(shape).T

    def column_means(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        count = (~np.isnan(values)).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            found: npt.NDArray[np.float64] = np.nansum(values, axis=0) / count
        return found  # NaN where a column has no value

    means = {name: column_means(matrix(name)) if shape[1] else None for name in metrics}
    stacked = np.hstack([matrix(name) for name in metrics]) if shape[1] else np.zeros((0, 0))
    low, high = bootstrap_cis(stacked, seed=seed)
    target = matrix(metric)
    differences = target - target[:, [configs.index(baseline)]]
    differences = np.where(np.isnan(differences), 0.0, differences)
    p_random = randomization_ps(differences, seed=seed)
    rows = []
    for i, config in enumerate(configs):  # per configuration (tens), never per query
        row: dict[str, object] = {c.CONFIG: config, "judged": shape[1]}
        for j, name in enumerate(metrics):
            average = means[name]
            value = None if average is None else float(average[i])
            row[name] = None if value is None or np.isnan(value) else value
            at = j * len(configs) + i
            row[name + LOW], row[name + HIGH] = float(low[at]), float(high[at])
        compared = config != baseline
        row[P_T] = t_test_p(differences[:, i]) if compared else None
        row[P_RANDOMIZATION] = float(p_random[i]) if compared else None
        rows.append(row)
    table = pl.DataFrame(rows, infer_schema_length=None)
    for raw, corrected in ((P_T, P_HOLM), (P_RANDOMIZATION, P_RANDOMIZATION_HOLM)):
        tested = table[raw].is_not_null().to_numpy()
        adjusted = np.full(table.height, np.nan)
        adjusted[tested] = holm(table[raw].to_numpy()[tested].astype(np.float64))
        table = table.with_columns(pl.Series(corrected, adjusted).fill_nan(None))
    gain = table[metric].cast(pl.Float64).fill_null(np.nan).to_numpy()
    spent = table[cost].cast(pl.Float64).fill_null(np.nan).to_numpy()
    sign = 1.0 if higher_is_better(metric) else -1.0  # the front maximizes its gain
    known = ~(np.isnan(gain) | np.isnan(spent))
    front = pareto_front(sign * gain, spent) & known
    table = table.with_columns(pl.Series(PARETO, front))
    params = per_query.select(c.CONFIG, *parameters).unique(c.CONFIG, maintain_order=True)
    ordered = params.join(table, on=c.CONFIG, how="inner")
    return ranked(ordered, metric)
