"""Which parameters move a sweep's metric most (for the report's finding and its
effects plot): each varied parameter's stage, and its spread, the range of the
configurations' means when only that parameter changes, averaged over the settings of
the others.

The stages are the experiment's (SPEC 8): the window (``size``, ``overlap``), the
retrieval (``method``, ``k`` and BM25's ``k1``, ``b``) and the context (every
postprocess and budget parameter).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from ragframe import schema as c

WINDOW = ("size", "overlap", "window_chars", "overlap_chars")
RETRIEVAL = ("method", "k", "k1", "b")
STAGES = ("window", "retrieval", "context")
"""The stages in pipeline order."""

PARAMETER, STAGE, SPREAD, VALUES = "parameter", "stage", "spread", "values"


def stage_of(parameter: str) -> str:
    """The stage that reads ``parameter``: window, retrieval or context."""
    if parameter in WINDOW:
        return "window"
    if parameter in RETRIEVAL:
        return "retrieval"
    return "context"


def parameter_effects(
    summary: pl.DataFrame, parameters: Sequence[str], metric: str
) -> pl.DataFrame:
    """One row per varied parameter, largest spread first: ``parameter``, ``stage``,
    ``values`` (how many it takes) and ``spread``: for each setting of the other
    parameters that sees at least two of its values, the largest minus the smallest
    mean ``metric`` among those configurations, averaged over such settings (null when
    no setting sees two values). A parameter that does not matter has spread 0.

    Example:
        >>> data = {"a": [1, 1, 2, 2], "b": [1, 2, 1, 2], "m": [0.1, 0.2, 0.5, 0.6]}
        >>> summary = pl.DataFrame(data)
        >>> parameter_effects(summary, ["a", "b"], "m")["parameter"].to_list()
        ['a', 'b']
    """
    rows = []
    known = summary.filter(pl.col(metric).is_not_null())
    for name in parameters:  # per parameter (a handful), never per configuration
        others = [p for p in parameters if p != name]
        groups = (
            known.group_by(others or pl.lit(0).alias(c.CONFIG))
            .agg(
                pl.col(name).n_unique().alias(VALUES),
                (pl.col(metric).max() - pl.col(metric).min()).alias(SPREAD),
            )
            .filter(pl.col(VALUES) >= 2)
        )
        spread = groups[SPREAD].mean() if groups.height else None
        rows.append(
            {
                PARAMETER: name,
                STAGE: stage_of(name),
                VALUES: summary[name].n_unique(),
                SPREAD: None if spread is None else float(spread),  # type: ignore[arg-type]
            }
        )
    schema = {PARAMETER: pl.String, STAGE: pl.String, VALUES: pl.Int64, SPREAD: pl.Float64}
    table = pl.DataFrame(rows, schema=schema)
    return table.sort(SPREAD, PARAMETER, descending=[True, False], nulls_last=True)


def value_means(summary: pl.DataFrame, parameter: str, metric: str) -> pl.DataFrame:
    """The mean ``metric`` over the configurations at each value of ``parameter``
    (``value`` as text, in the values' own order; ``mean``)."""
    return (
        summary.group_by(parameter)
        .agg(pl.col(metric).mean().alias("mean"))
        .sort(parameter, nulls_last=True)
        .select(pl.col(parameter).cast(pl.String).fill_null("none").alias("value"), "mean")
    )
