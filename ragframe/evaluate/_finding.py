"""A sweep's finding in words (the report's first lines and a notebook's summary), and
numbers rounded to what their intervals support.

Rounding: a metric's column keeps the decimals of the first significant digit of its
intervals' typical half-width (the median over the configurations): 0.2714 with a
half-width of 0.035 shows as 0.27, 2794.7 with a half-width of 150 as 2,800. Without
an interval (a constant metric) three significant digits.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from ragframe import schema as c
from ragframe.evaluate._columns import HIGH, LOW, P_HOLM, P_RANDOMIZATION_HOLM, Swept
from ragframe.evaluate._effects import SPREAD, STAGE, STAGES, parameter_effects
from ragframe.evaluate._metrics import higher_is_better

DASH = "\u2013"
"""The en dash of ranges and of missing values."""

LEVEL = 0.05
"""The significance level of the finding (after Holm's correction)."""


def decimals(summary: pl.DataFrame, metric: str) -> int:
    """How many decimals ``metric``'s means support (negative: tens, hundreds)."""
    high = summary[metric + HIGH].cast(pl.Float64)
    half = ((high - summary[metric + LOW].cast(pl.Float64)) / 2).drop_nulls().drop_nans()
    width = half.filter(half > 0).median() if half.len() else None
    if isinstance(width, float) and width > 0:
        return max(-6, min(6, -math.floor(math.log10(width))))
    values = summary[metric].cast(pl.Float64).drop_nulls().drop_nans().abs()
    largest = values.max() if values.len() else None
    if not isinstance(largest, float | int) or largest == 0:
        return 2
    return max(-6, min(6, 2 - math.floor(math.log10(float(largest)))))


def number(value: Any, places: int) -> str:
    """``value`` rounded to ``places`` decimals, thousands separated; a dash when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    rounded = round(float(value), places)
    return f"{rounded:,.{max(places, 0)}f}"


def interval(row: dict[str, Any], metric: str, places: int) -> str:
    """``low-high`` of ``metric``'s 95% interval in ``row``."""
    return f"{number(row[metric + LOW], places)}{DASH}{number(row[metric + HIGH], places)}"


def p_value(p: Any) -> str:
    """A p-value to three decimals, "< 0.001" below that; a dash when missing."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return DASH
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def p_is(p: Any) -> str:
    """``p = 0.012`` or ``p < 0.001``."""
    shown = p_value(p)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def settings(row: dict[str, Any], parameters: tuple[str, ...]) -> str:
    """``size=400, top_k=10``: a configuration's varied parameters."""
    return ", ".join(f"{p}={row[p]}" for p in parameters) or "the only configuration"


def beats(row: dict[str, Any], base: dict[str, Any], metric: str) -> bool:
    """``row`` is better than ``base`` in ``metric``'s direction, significantly so after
    Holm's correction (paired t-test)."""
    p, mean, other = row.get(P_HOLM), row[metric], base[metric]
    if p is None or mean is None or other is None or p >= LEVEL:
        return False
    return bool(mean > other) if higher_is_better(metric) else bool(mean < other)


def finding(result: Swept) -> list[str]:
    """The finding of ``result`` in a few plain sentences: the best configuration and
    its interval, how it compares with the baseline after Holm's correction, how many
    beat the baseline, which stage's parameters move the metric most, and the cheapest
    configuration within the best's interval."""
    summary, metric = result.summary, result.metric
    places = decimals(summary, metric)
    best = result.best().row(0, named=True)
    base_rows = summary.filter(pl.col(c.CONFIG) == result.baseline)
    base = base_rows.row(0, named=True) if base_rows.height else best
    direction = "higher" if higher_is_better(metric) else "lower"
    said = [
        f"Best {metric} ({direction} is better): configuration {best[c.CONFIG]} "
        f"({settings(best, result.parameters)}) with {number(best[metric], places)} "
        f"(95% interval {interval(best, metric, places)}, {best['judged']} judged queries)."
    ]
    said.append(_against_baseline(result, best, base, places))
    said.extend(_moves_most(result, places))
    said.extend(_cheapest(result, best, places))
    return said


def _against_baseline(
    result: Swept, best: dict[str, Any], base: dict[str, Any], places: int
) -> str:
    metric = result.metric
    if best[c.CONFIG] == base[c.CONFIG]:
        return (
            f"That is the baseline (configuration {base[c.CONFIG]}) itself: no configuration "
            f"does better than it."
        )
    difference = (best[metric] or 0.0) - (base[metric] or 0.0)
    outcome = (
        "significantly better"
        if beats(best, base, metric)
        else f"not significantly different at {LEVEL:g}"
    )
    winners = sum(beats(row, base, metric) for row in result.summary.iter_rows(named=True))
    tested = result.summary.height - 1
    return (
        f"Against the baseline, configuration {base[c.CONFIG]} "
        f"({settings(base, result.parameters)}: {number(base[metric], places)}, "
        f"{interval(base, metric, places)}), the best differs by "
        f"{difference:+,.{max(places, 0)}f}: {outcome} after Holm's correction (paired "
        f"t-test {p_is(best[P_HOLM])}, randomization test "
        f"{p_is(best[P_RANDOMIZATION_HOLM])}); {winners} of {tested} configurations "
        f"beat the baseline."
    )


def _moves_most(result: Swept, places: int) -> list[str]:
    effects = parameter_effects(result.summary, result.parameters, result.metric)
    known = effects.filter(pl.col(SPREAD).is_not_null())
    if not known.height:
        return []
    by_stage = known.group_by(STAGE).agg(pl.col(SPREAD).max()).sort(SPREAD, descending=True)
    top = known.row(0, named=True)
    fixed = [s for s in STAGES if s not in by_stage[STAGE].to_list()]
    unvaried = f" ({', '.join(fixed)}: not varied)" if fixed else ""
    if round(top[SPREAD], max(places, 0) + 1) == 0:
        return [f"No varied parameter changes the mean {result.metric}{unvaried}."]
    each = ", ".join(
        f"{r['parameter']} {number(r[SPREAD], places)}" for r in known.iter_rows(named=True)
    )
    said = (
        f"The {top[STAGE]} stage moves {result.metric} most: varying {top['parameter']} "
        f"alone changes the mean by {number(top[SPREAD], places)} on average (each "
        f"parameter's spread: {each})"
    )
    if by_stage.height > 1:
        said += "; largest spread per stage: " + ", ".join(
            f"{row[STAGE]} {number(row[SPREAD], places)}" for row in by_stage.iter_rows(named=True)
        )
    return [f"{said}{unvaried}."]


def _cheapest(result: Swept, best: dict[str, Any], places: int) -> list[str]:
    metric, cost = result.metric, result.cost
    low, high = best[metric + LOW], best[metric + HIGH]
    if low is None or high is None or cost not in result.summary.columns:
        return []
    near = result.summary.filter(pl.col(metric).is_between(low, high)).sort(cost, c.CONFIG)
    if not near.height or near[c.CONFIG][0] == best[c.CONFIG]:
        return []
    row, spent = near.row(0, named=True), decimals(result.summary, cost)
    if number(row[cost], spent) == number(best[cost], spent):
        return []
    return [
        f"The cheapest configuration within the best's interval is {row[c.CONFIG]} "
        f"({settings(row, result.parameters)}): {number(row[metric], places)} at "
        f"{number(row[cost], spent)} {cost} per query, against "
        f"{number(best[cost], spent)} for the best."
    ]
