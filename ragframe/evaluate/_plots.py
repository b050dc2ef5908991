"""Plots of a sweep (the ``ragframe[plot]`` extra, matplotlib): a metric against a
budget per configuration with intervals, the Pareto front, per-query distributions,
and a self-contained HTML report. Each plot function also returns its tidy frame."""

from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.errors import ConfigError, RagframeError
from ragframe.evaluate._metrics import check_metric
from ragframe.evaluate._result import HIGH, LOW, PARETO, SweepResult
from ragframe.io import write_atomically


def _pyplot() -> Any:
    try:
        import matplotlib

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
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for _, line in tidy.group_by(list(others) or [pl.lit(0)], maintain_order=True):
        first = line.row(0, named=True)
        x, y = line[budget].to_list(), line[name].to_list()
        low = [m - lo for m, lo in zip(y, line[name + LOW].to_list(), strict=True)]
        high = [hi - m for m, hi in zip(y, line[name + HIGH].to_list(), strict=True)]
        axes.errorbar(x, y, yerr=[low, high], marker="o", capsize=3, label=_label(first, others))
    axes.set_xlabel(budget)
    axes.set_ylabel(name)
    axes.set_title(f"{name} against {budget} (mean, 95% bootstrap interval)")
    if others:
        axes.legend(fontsize="small")
    figure.tight_layout()
    return figure, tidy


def plot_pareto(result: SweepResult, metric: str | None = None) -> tuple[Any, pl.DataFrame]:
    """Every configuration's mean ``metric`` against its mean cost, the front joined
    (the front is the sweep's own: of its ``metric`` against its ``cost``)."""
    name = _checked(result, metric, "plot_pareto: metric")
    tidy = result.summary.select(c.CONFIG, *result.parameters, result.cost, name, PARETO)
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    axes.scatter(tidy[result.cost], tidy[name], color="0.6", label="configuration")
    front = tidy.filter(pl.col(PARETO)).sort(result.cost)
    axes.plot(front[result.cost], front[name], marker="o", color="C1", label="Pareto front")
    for row in front.iter_rows(named=True):
        axes.annotate(str(row[c.CONFIG]), (row[result.cost], row[name]), fontsize="small")
    axes.set_xlabel(f"{result.cost} (mean per query)")
    axes.set_ylabel(name)
    axes.set_title(f"{name} against {result.cost}")
    axes.legend(fontsize="small")
    figure.tight_layout()
    return figure, tidy


def plot_distribution(result: SweepResult, metric: str | None = None) -> tuple[Any, pl.DataFrame]:
    """Per-query values of ``metric`` per configuration (box plots), judged queries."""
    name = _checked(result, metric, "plot_distribution: metric", per_query=True)
    tidy = result.per_query.filter(pl.col(c.JUDGED)).select(c.CONFIG, c.QUERY_ID, name)
    order = result.summary[c.CONFIG].to_list()
    groups = [tidy.filter(pl.col(c.CONFIG) == k)[name].drop_nulls().to_list() for k in order]
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(max(6, 0.4 * len(order) + 2), 4.5))
    axes.boxplot(groups, tick_labels=[str(k) for k in order])
    axes.set_xlabel("configuration (best first)")
    axes.set_ylabel(name)
    axes.set_title(f"{name} per query")
    figure.tight_layout()
    return figure, tidy


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    _pyplot().close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def write_report(result: SweepResult, path: str | os.PathLike[str]) -> None:
    """A self-contained HTML report (plots inline) of a sweep, written atomically: the
    metric against the budget that varies (characters, else tokens), the Pareto front,
    the per-query distributions, and the summary table."""
    _checked(result, None, "write_report")
    figures = [plot_pareto(result)[0], plot_distribution(result)[0]]
    for budget in ("max_characters", "max_tokens"):
        if budget in result.parameters:
            figures.insert(0, plot_budget(result, budget=budget)[0])
            break
    images = "".join(f'<p><img src="data:image/png;base64,{_png(f)}"></p>' for f in figures)
    shown = result.summary.with_columns(pl.col(pl.Float64).round(4))
    head = "".join(f"<th>{html.escape(n)}</th>" for n in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
        for row in shown.rows()
    )
    page = (
        "<!doctype html><meta charset='utf-8'><title>ragframe sweep</title>"
        "<style>body{font-family:sans-serif}td,th{padding:2px 6px;border:1px solid #ccc}"
        "table{border-collapse:collapse;font-size:small}</style>"
        f"<h1>ragframe sweep: {html.escape(result.metric)}</h1>"
        f"<p>{result.summary.height} configurations; baseline {result.baseline}; varied: "
        f"{html.escape(', '.join(result.parameters))}</p>{images}"
        f"<table><tr>{head}</tr>{body}</table>"
    )

    def write(tmp: str) -> None:
        Path(tmp).write_text(page, encoding="utf-8")

    write_atomically(path, write)
