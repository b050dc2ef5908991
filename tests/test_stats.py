"""The sweep's statistics against known values (and scipy where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

from ragframe.evaluate._stats import (
    _incomplete_beta,
    bootstrap_ci,
    bootstrap_cis,
    holm,
    pareto_front,
    randomization_p,
    t_test_p,
)


def test_the_t_distribution_matches_known_values() -> None:
    """Two-sided p of Student's t: t = 2, 10 degrees of freedom -> 0.0733880348;
    t = 1, 1 df -> 0.5 (the Cauchy case)."""
    assert _incomplete_beta(5.0, 0.5, 10 / 14) == pytest.approx(0.0733880348, abs=1e-9)
    assert _incomplete_beta(0.5, 0.5, 0.5) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_the_paired_t_test_equals_scipy(seed: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    differences = rng.normal(0.05 * seed, 1.0, 20 + 7 * seed)
    want = stats.ttest_1samp(differences, 0.0).pvalue
    assert t_test_p(differences) == pytest.approx(want, rel=1e-9)


def test_t_test_edge_cases() -> None:
    assert t_test_p(np.array([0.3])) == 1.0
    assert t_test_p(np.zeros(5)) == 1.0
    assert t_test_p(np.full(5, 0.2)) == 0.0


def test_holm_matches_the_step_down_definition() -> None:
    """R's p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") is 0.03 0.06 0.06 0.02."""
    got = holm(np.array([0.01, 0.04, 0.03, 0.005]))
    assert got == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm(np.array([0.5, 0.9])) == pytest.approx([1.0, 1.0])


def test_the_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = np.random.default_rng(3).random(50)
    low, high = bootstrap_ci(values, seed=7)
    assert (low, high) == bootstrap_ci(values, seed=7)
    assert low < values.mean() < high
    assert bootstrap_ci(values, seed=8) != (low, high)
    assert np.isnan(bootstrap_ci(np.zeros(0))[0])


def test_a_column_without_any_value_has_no_interval_and_no_warning() -> None:
    """A metric no query has (``duplicate_chars`` without the store's offsets) gets a
    nan interval, silently (warnings are errors here); the other columns are as alone."""
    values = np.random.default_rng(3).random(40)
    both = np.column_stack([values, np.full(40, np.nan)])
    low, high = bootstrap_cis(both, seed=7)
    assert (low[0], high[0]) == pytest.approx(bootstrap_ci(values, seed=7), rel=1e-12)
    assert np.isnan(low[1]) and np.isnan(high[1])


def test_the_randomization_test() -> None:
    """All five differences positive: only the two all-same-sign flips of 32 are as
    extreme, so p is near 2/32; no difference at all gives 1."""
    p = randomization_p(np.array([1.0, 2, 3, 4, 5]), seed=1)
    assert p == pytest.approx(2 / 32, abs=0.02)
    assert randomization_p(np.zeros(4)) == 1.0
    assert randomization_p(np.array([1.0, -1, 2, -2])) == 1.0


def test_the_pareto_front_keeps_the_undominated() -> None:
    gain = np.array([0.5, 0.6, 0.4, 0.6, 0.6])
    cost = np.array([100.0, 200, 50, 250, 200])
    assert pareto_front(gain, cost).tolist() == [True, True, True, False, True]


def test_the_column_wise_forms_agree_with_the_single_ones() -> None:
    """One shared resampling for many columns: a NaN is left out of its column only,
    the bootstrap is seeded, and the randomization test draws the same flips."""
    from ragframe.evaluate._stats import bootstrap_cis, randomization_ps

    rng = np.random.default_rng(4)
    values = rng.random((40, 3))
    values[::5, 1] = np.nan
    low, high = bootstrap_cis(values, seed=2)
    again = bootstrap_cis(values, seed=2)
    assert (low == again[0]).all() and (high == again[1]).all()
    means = np.nanmean(values, axis=0)
    assert (low < means).all() and (means < high).all()
    differences = rng.normal(0.2, 1.0, (30, 2))
    differences[:, 1] = 0.0
    p = randomization_ps(differences, seed=9)
    assert p[0] == randomization_p(differences[:, 0], seed=9) and p[1] == 1.0
