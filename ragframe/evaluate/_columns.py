"""What the finding, the tables and the plots read of a sweep's outcome, apart from the
class that holds it (:class:`ragframe.evaluate.SweepResult`, in :mod:`._result`): the
summary's column names, its order (best first), and the read-only view
:class:`Swept` of a result. :mod:`._result` shows itself with :mod:`._tables`, which
reads a result through this module only, so no import goes round in a circle."""

from __future__ import annotations

from typing import Protocol

import polars as pl

from ragframe import schema as c
from ragframe.evaluate._metrics import higher_is_better

LOW, HIGH = "_low", "_high"
"""Suffixes of a metric's bootstrap interval columns in the summary."""
P_RANDOMIZATION, P_T, PARETO = "p_randomization", "p_t", "pareto"
P_HOLM, P_RANDOMIZATION_HOLM = "p_holm", "p_randomization_holm"
"""The paired t-test's and the randomization test's p-values, Holm-corrected across the
configurations compared with the baseline."""


def ranked(summary: pl.DataFrame, metric: str) -> pl.DataFrame:
    """``summary`` best ``metric`` first (its direction), ties by ``config``, missing
    means last."""
    higher = bool(higher_is_better(metric))
    return summary.sort([metric, c.CONFIG], descending=[higher, False], nulls_last=True)


class Swept(Protocol):
    """A sweep's outcome as the finding and the tables read it (what
    :class:`~ragframe.evaluate.SweepResult` holds; its attributes say what each is)."""

    @property
    def summary(self) -> pl.DataFrame:
        """One row per configuration, best first."""

    @property
    def parameters(self) -> tuple[str, ...]:
        """The parameters that vary."""

    @property
    def metric(self) -> str:
        """The metric the tests and the front are about."""

    @property
    def cost(self) -> str:
        """What the front weighs the metric against."""

    @property
    def baseline(self) -> int:
        """The baseline's ``config`` number."""

    @property
    def pareto(self) -> pl.DataFrame:
        """The configurations on the Pareto front, cheapest first."""

    def best(self, metric: str | None = None) -> pl.DataFrame:
        """The configuration with the best mean ``metric`` (one summary row)."""
