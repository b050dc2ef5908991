"""Statistics of a sweep (SPEC 5): seeded bootstrap confidence intervals of a mean,
paired tests against a baseline (randomization and Student's t), Holm's correction
across configurations, and the Pareto front of a metric against its cost.

Everything works on whole arrays (queries x resamples); nothing loops over queries.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

RESAMPLES = 2000
"""Bootstrap resamples and randomization-test sign flips."""
_BLOCK = 256
"""Resamples drawn at once (bounds memory to queries x 256 values)."""


def _product(left: F64, right: F64) -> F64:
    """``left @ right`` in slices of :data:`_ROWS` rows of ``left``: each slice's product
    is small enough that OpenBLAS runs it on the calling thread. Whole, it starts
    OpenBLAS's threads, which beside the Polars pool that has just run cost more than
    the product (an experiment's summary took 220 ms where it takes 28 on one thread)."""
    out = np.empty((left.shape[0], right.shape[1]))
    for lo in range(0, left.shape[0], _ROWS):
        np.matmul(left[lo : lo + _ROWS], right, out=out[lo : lo + _ROWS])
    return out


_ROWS = 16
"""Rows of a product's slice (16 x queries x columns stays under OpenBLAS's threshold
for threads on a few hundred queries)."""


def bootstrap_ci(
    values: F64, *, seed: int = 0, resamples: int = RESAMPLES, level: float = 0.95
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` (nan when empty):
    :func:`bootstrap_cis` of one column."""
    low, high = bootstrap_cis(values[:, None], seed=seed, resamples=resamples, level=level)
    return float(low[0]), float(high[0])


def bootstrap_cis(
    values: F64, *, seed: int = 0, resamples: int = RESAMPLES, level: float = 0.95
) -> tuple[F64, F64]:
    """The percentile bootstrap interval of the mean of every column of ``values``
    (queries x columns; NaN is a missing value, left out of its column's means; nan when
    there are no queries), the same resampled queries for every column (a paired
    bootstrap): each resample's query counts times the values, as one matrix product."""
    n, m = values.shape
    if n == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    present = ~np.isnan(values)
    filled, mask = np.where(present, values, 0.0), present.astype(np.float64)
    rng = np.random.default_rng(seed)
    means = np.empty((resamples, m))
    for lo in range(0, resamples, _BLOCK):
        b = min(lo + _BLOCK, resamples) - lo
        picks = rng.integers(0, n, size=(b, n)) + (np.arange(b) * n)[:, None]
        counts = np.bincount(picks.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[lo : lo + b] = _product(counts, filled) / _product(counts, mask)
    tail = (1 - level) / 2 * 100
    low, high = np.full(m, np.nan), np.full(m, np.nan)
    some = present.any(axis=0)  # a column with no value at all (e.g. no offsets): nan
    if some.any():
        low[some], high[some] = np.nanpercentile(means[:, some], [tail, 100 - tail], axis=0)
    return low, high


def randomization_ps(differences: F64, *, seed: int = 0, resamples: int = RESAMPLES) -> F64:
    """Two-sided paired randomization (sign-flip) tests of mean difference 0, one per
    column of ``differences`` (queries x columns, no missing values), the same flips for
    every column: (extreme flips + 1) / (resamples + 1); 1.0 for a column of zeros."""
    n, m = differences.shape
    observed = np.abs(differences.mean(axis=0)) if n else np.zeros(m)
    rng = np.random.default_rng(seed)
    extreme = np.zeros(m, dtype=np.int64)
    for lo in range(0, resamples, _BLOCK):
        b = min(lo + _BLOCK, resamples) - lo
        signs = (rng.integers(0, 2, size=(b, n)) * 2 - 1).astype(np.float64)
        flipped = np.abs(_product(signs, differences)) / max(n, 1)
        extreme += np.count_nonzero(flipped >= observed - 1e-12, axis=0)
    p = (extreme + 1) / (resamples + 1)
    return np.where(np.any(differences != 0, axis=0), p, 1.0)


def randomization_p(differences: F64, *, seed: int = 0, resamples: int = RESAMPLES) -> float:
    """Two-sided paired randomization (sign-flip) test of mean difference 0:
    (extreme flips + 1) / (resamples + 1); 1.0 when every difference is 0.
    :func:`randomization_ps` of one column."""
    return float(randomization_ps(differences[:, None], seed=seed, resamples=resamples)[0])


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):  # fmt: skip
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
        + a * math.log(x) + b * math.log1p(-x)
    )  # fmt: skip
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_test_p(differences: F64) -> float:
    """Two-sided paired Student's t-test of mean difference 0 (1.0 when undefined: fewer
    than 2 queries; 0.0 for a constant non-zero difference)."""
    n = len(differences)
    if n < 2:
        return 1.0
    mean, sd = float(differences.mean()), float(differences.std(ddof=1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = mean / (sd / math.sqrt(n))
    df = n - 1
    return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def holm(p_values: F64) -> F64:
    """Holm's step-down adjusted p-values (the same order as given)."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p_values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def pareto_front(gain: F64, cost: F64) -> npt.NDArray[np.bool_]:
    """Whether each point is on the front: no other point has at least its ``gain`` at
    no more ``cost``, and is better in one of them."""
    better_gain = gain[None, :] >= gain[:, None]
    cheaper = cost[None, :] <= cost[:, None]
    strictly = (gain[None, :] > gain[:, None]) | (cost[None, :] < cost[:, None])
    dominated = (better_gain & cheaper & strictly).any(axis=1)
    return np.asarray(~dominated, dtype=np.bool_)
