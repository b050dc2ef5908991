"""Plots of a sweep (the ``ragframe[plot]`` extra, matplotlib): a metric against a
budget per configuration with intervals, the Pareto front, per-query distributions,
and each parameter's effect. Each plot function returns the figure (shown inline in a
notebook) and its tidy frame; :func:`write_report` (in :mod:`._report`) puts them in a
self-contained HTML page.

Every label stays readable: lines differ in colour, marker and dash and are dodged
sideways so that none hides another, legends sit outside the axes, and point labels
are placed where they overlap no other label (a point whose label does not fit keeps
its marker; the report's tables name every configuration).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, RagframeError
from ragframe.evaluate._columns import HIGH, LOW, PARETO
from ragframe.evaluate._effects import PARAMETER, STAGE, parameter_effects, value_means
from ragframe.evaluate._labels import place_labels
from ragframe.evaluate._metrics import check_metric
from ragframe.evaluate._result import SweepResult

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
DASHES = ("-", "--", ":", "-.")


def _pyplot() -> Any:
    """pyplot on the backend this process chose: ``MPLBACKEND`` (a Jupyter kernel sets
    it to its inline backend, so plots render in the notebook) or pyplot already
    imported (``%matplotlib inline``, a script's own backend); else Agg, which needs no
    display (the CLI, a script that saves its figures)."""
    try:
        import matplotlib

        if not os.environ.get("MPLBACKEND") and "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - depends on the environment
        raise RagframeError("plots need matplotlib: pip install 'ragframe[plot]'") from None
    return plt


def _label(row: dict[str, Any], names: tuple[str, ...]) -> str:
    return ", ".join(f"{n}={row[n]}" for n in names) or "all"


def _checked(result: object, metric: object, what: str, per_query: bool = False) -> str:
    """The metric a plot of ``result`` shows (its sweep's own by default), checked."""
    if not isinstance(result, SweepResult):
        raise ConfigError(
            f"{what} needs a SweepResult (what ragframe.sweep returns), got {type(result).__name__}"
        )
    table = result.per_query if per_query else result.summary
    return check_metric(result.metric if metric is None else metric, table.columns, what)


def _style(i: int) -> dict[str, Any]:
    """The ``i``-th line's colour, marker and dash: no two of the first 40 alike."""
    return {
        "color": f"C{i % 10}",
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": DASHES[(i // 10) % len(DASHES)],
    }


def _dodge(x: list[float], lines: int, i: int, log: bool) -> list[float]:
    """``x`` moved sideways for the ``i``-th of ``lines`` lines (within a fifth of the
    smallest gap between values, on the axis' own scale)."""
    import numpy as np

    values = np.log2(x) if log else np.asarray(x, dtype=float)
    distinct = np.unique(values)
    gap = float(np.diff(distinct).min()) if distinct.size > 1 else 1.0
    shift = (i - (lines - 1) / 2) * gap * 0.2 / max(lines - 1, 1)
    moved = values + shift
    return [float(v) for v in (np.exp2(moved) if log else moved)]


def plot_budget(
    result: SweepResult, metric: str | None = None, budget: str = "max_characters"
) -> tuple[Any, pl.DataFrame]:
    """``metric`` (mean and 95% interval) against the ``budget`` parameter, one line per
    combination of the other parameters. Returns the figure and its tidy frame.

    Raises:
        ConfigError: ``result`` is not a sweep's, ``metric`` is not one of its metrics,
            or ``budget`` does not vary in it.
    """
    name = _checked(result, metric, "plot_budget: metric")
    if not isinstance(budget, str) or budget not in result.parameters:
        raise ConfigError(
            f"plot_budget: budget {budget!r} does not vary in this sweep; varied: "
            f"{list(result.parameters)}"
        )
    others = tuple(p for p in result.parameters if p != budget)
    tidy = result.summary.select(c.CONFIG, *result.parameters, name, name + LOW, name + HIGH).sort(
        *others, budget
    )
    shown = tidy.filter(pl.col(budget).is_not_null())
    x_all = shown[budget].cast(pl.Float64)
    log = bool(x_all.len() and x_all.min() > 0 and x_all.max() >= 4 * x_all.min())  # type: ignore[operator]
    lines = list(shown.group_by(list(others) or [pl.lit(0)], maintain_order=True))
    plt = _pyplot()
    height = 4.4 + 0.22 * ((len(lines) + 1) // 2)
    figure, axes = plt.subplots(figsize=(6.4, height), layout="constrained")
    for i, (_, line) in enumerate(lines):
        y = line[name].to_list()
        low = [m - lo for m, lo in zip(y, line[name + LOW].to_list(), strict=True)]
        high = [hi - m for m, hi in zip(y, line[name + HIGH].to_list(), strict=True)]
        x = _dodge(line[budget].cast(pl.Float64).to_list(), len(lines), i, log)
        axes.errorbar(
            x, y, yerr=[low, high], capsize=3, markersize=6, linewidth=1.5, alpha=0.9,
            label=_label(line.row(0, named=True), others), **_style(i),
        )  # fmt: skip
    if log:
        axes.set_xscale("log", base=2)
        ticks = sorted(set(x_all.to_list()))
        axes.set_xticks(ticks, [f"{t:,.0f}" for t in ticks])
        axes.minorticks_off()
    axes.set_xlabel(budget)
    axes.set_ylabel(f"{name} (mean, 95% interval)")
    axes.set_title(f"{name} by {budget}")
    axes.grid(alpha=0.3)
    if others:
        figure.legend(loc="outside lower center", ncols=2, fontsize="small", frameon=False)
    return figure, tidy


def plot_pareto(result: SweepResult, metric: str | None = None) -> tuple[Any, pl.DataFrame]:
    """Every configuration's mean ``metric`` against its mean cost, the front joined and
    numbered by configuration (the front is the sweep's own: of its ``metric`` against
    its ``cost``); the best configuration is a star, the baseline a square."""
    name = _checked(result, metric, "plot_pareto: metric")
    tidy = result.summary.select(c.CONFIG, *result.parameters, result.cost, name, PARETO)
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6.4, 4.6), layout="constrained")
    axes.scatter(tidy[result.cost], tidy[name], color="0.65", s=22, label="configuration")
    front = tidy.filter(pl.col(PARETO)).sort(result.cost)
    axes.plot(front[result.cost], front[name], marker="o", color="C1", label="Pareto front")
    best = result.best(name)
    base = tidy.filter(pl.col(c.CONFIG) == result.baseline)
    axes.scatter(
        base[result.cost], base[name], marker="s", s=90, facecolors="none",
        edgecolors="C0", linewidths=1.5, label=f"baseline ({result.baseline})",
    )  # fmt: skip
    axes.scatter(best[result.cost], best[name], marker="*", s=160, color="C3", zorder=3,
                 label=f"best ({best[c.CONFIG][0]})")  # fmt: skip
    axes.set_xlabel(f"{result.cost} (mean per query)")
    axes.set_ylabel(name)
    axes.set_title(f"{name} against {result.cost}")
    axes.grid(alpha=0.3)
    figure.legend(loc="outside lower center", ncols=4, fontsize="small", frameon=False)
    points = [(row[result.cost], row[name], row[c.CONFIG]) for row in front.iter_rows(named=True)]
    place_labels(figure, axes, points)
    return figure, tidy


def plot_distribution(
    result: SweepResult, metric: str | None = None, configs: Sequence[int] | None = None
) -> tuple[Any, pl.DataFrame]:
    """Per-query values of ``metric`` per configuration (box plots, best first), judged
    queries; ``configs``: only these configurations."""
    name = _checked(result, metric, "plot_distribution: metric", per_query=True)
    tidy = result.per_query.filter(pl.col(c.JUDGED)).select(c.CONFIG, c.QUERY_ID, name)
    order = [k for k in result.summary[c.CONFIG].to_list() if configs is None or k in configs]
    tidy = tidy.filter(pl.col(c.CONFIG).is_in(order))
    groups = [tidy.filter(pl.col(c.CONFIG) == k)[name].drop_nulls().to_list() for k in order]
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(max(6.4, 0.35 * len(order) + 2), 4.4))
    axes.boxplot(groups, tick_labels=[str(k) for k in order])
    if len(order) > 16:
        axes.tick_params(axis="x", labelrotation=90)
    axes.set_xlabel("configuration (best first)")
    axes.set_ylabel(name)
    axes.set_title(f"{name} per query")
    axes.grid(alpha=0.3, axis="y")
    figure.tight_layout()
    return figure, tidy


def plot_effects(result: SweepResult, metric: str | None = None) -> tuple[Any, pl.DataFrame]:
    """Each varied parameter's effect: the mean ``metric`` over the configurations at
    each of its values, one panel per parameter (largest spread first, titled with its
    stage), on one scale. The tidy frame: ``parameter``, ``stage``, ``value`` (text),
    ``mean``."""
    name = _checked(result, metric, "plot_effects: metric")
    effects = parameter_effects(result.summary, result.parameters, name)
    parts = [
        value_means(result.summary, row[PARAMETER], name).with_columns(
            pl.lit(row[PARAMETER]).alias(PARAMETER), pl.lit(row[STAGE]).alias(STAGE)
        )
        for row in effects.iter_rows(named=True)
    ]
    schema = {PARAMETER: pl.String, STAGE: pl.String, "value": pl.String, "mean": pl.Float64}
    tidy = pl.concat(parts).select(*schema) if parts else pl.DataFrame(schema=schema)
    plt = _pyplot()
    panels = max(effects.height, 1)
    columns = min(panels, 4)
    rows = (panels + columns - 1) // columns
    figure, grid = plt.subplots(
        rows, columns, figsize=(3.2 * columns + 0.8, 2.9 * rows + 0.7), sharey=True,
        squeeze=False, layout="constrained",
    )  # fmt: skip
    for i, axes in enumerate(grid.flat):
        if i >= effects.height:
            axes.set_visible(False)
            continue
        row = effects.row(i, named=True)
        part = tidy.filter(pl.col(PARAMETER) == row[PARAMETER])
        axes.plot(range(part.height), part["mean"], **_style(i))
        axes.set_xticks(range(part.height), part["value"].to_list(), fontsize="small")
        axes.set_title(f"{row[STAGE]}: {row[PARAMETER]}", fontsize="medium")
        axes.margins(x=0.12)
        axes.grid(alpha=0.3)
    for axes in grid[:, 0]:
        axes.set_ylabel(f"mean {name}")
    figure.suptitle(f"What each parameter does to {name} (mean over the other settings)")
    return figure, tidy
