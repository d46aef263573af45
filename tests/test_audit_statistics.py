"""Clopper–Pearson bounds, p-values, corrections and the power statement of the auditor."""

import math

import numpy as np
import pytest
from scipy import stats

from designer.audit.power import detectable_excess
from designer.audit.statistics import (
    bonferroni_rejections,
    clopper_pearson_lower,
    clopper_pearson_upper,
    excess_p_value,
    holm_rejections,
    log_ratio_lower_bound,
)


@pytest.mark.parametrize("count,trials", [(0, 10), (1, 10), (7, 10), (10, 10), (350, 1000)])
def test_clopper_pearson_solves_the_binomial_tail_equations(count, trials):
    a = 0.025
    lower = clopper_pearson_lower(count, trials, a)[()]
    upper = clopper_pearson_upper(count, trials, a)[()]
    # Definition: P(Bin(n, L) >= c) = a and P(Bin(n, U) <= c) = a (edges 0 and 1)
    if count == 0:
        assert lower == 0
    else:
        assert stats.binom.sf(count - 1, trials, lower) == pytest.approx(a, rel=1e-9)
    if count == trials:
        assert upper == 1
    else:
        assert stats.binom.cdf(count, trials, upper) == pytest.approx(a, rel=1e-9)
    assert lower <= count / trials <= upper


def test_log_ratio_bound_and_p_value_invert_each_other():
    counts = dict(count_x=300, trials_x=1000, count_other=100, trials_other=1000)
    for allowed in (0.5, 0.8, 1.0):
        p = excess_p_value(allowed=allowed, **counts)[()]
        # just above p the bound exceeds E; just below it does not
        assert log_ratio_lower_bound(error=p * 1.001, **counts)[()] > allowed
        assert log_ratio_lower_bound(error=p * 0.999, **counts)[()] <= allowed
    # the bound is log(L(a/2)) - log(U(a/2)) exactly
    a = 0.01
    expected = math.log(stats.beta.ppf(a / 2, 300, 701)) - math.log(stats.beta.ppf(1 - a / 2, 101, 900))
    assert log_ratio_lower_bound(error=a, **counts)[()] == pytest.approx(expected, rel=1e-10)
    assert excess_p_value(10, 1000, 100, 1000, 0.0)[()] == 1.0  # estimate below E: no evidence


def test_holm_and_bonferroni_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # Holm at 0.05: sorted 0.005 <= 0.0125, 0.01 <= 0.0167, 0.03 > 0.025 -> stop
    assert holm_rejections(p, 0.05).tolist() == [True, False, False, True]
    assert bonferroni_rejections(p, 0.05).tolist() == [True, False, False, True]
    p = np.array([0.011, 0.02, 0.04])  # Holm rejects all three, Bonferroni only none (0.05/3 = 0.0167)
    assert holm_rejections(p, 0.05).tolist() == [True, True, True]
    assert bonferroni_rejections(p, 0.05).tolist() == [True, False, False]


def test_power_statement_matches_a_simulation_of_the_exact_test():
    """At the stated excess, the exact Clopper–Pearson test detects about 90% of the time."""
    probability, trials, allowed, error = 0.3, 4000, 1.0, 0.05 / 8
    delta = detectable_excess(probability, trials, trials, allowed, error)
    assert 0.1 < delta < 0.4
    rng = np.random.default_rng(5)
    other = probability * math.exp(-(allowed + delta))
    count_x = rng.binomial(trials, probability, 4000)
    count_other = rng.binomial(trials, other, 4000)
    detected = log_ratio_lower_bound(count_x, trials, count_other, trials, error) > allowed
    assert 0.85 <= detected.mean() <= 0.95
    # half that excess is detected far less often
    other_half = probability * math.exp(-(allowed + delta / 2))
    weak = log_ratio_lower_bound(count_x, trials, rng.binomial(trials, other_half, 4000), trials, error) > allowed
    assert weak.mean() < 0.5
    # more reports, smaller detectable excess; an event never seen under x: nothing detectable
    assert detectable_excess(probability, 4 * trials, 4 * trials, allowed, error) < delta
    assert detectable_excess(0.0, trials, trials, allowed, error) == math.inf


def test_hockey_stick_p_value_inverts_its_bound():
    """p <= a exactly when the hockey-stick lower bound at error a exceeds delta."""
    from designer.audit.statistics import hockey_stick_lower_bound

    counts = (80, 1000, 5, 1000)
    p_value = float(excess_p_value(*counts, 1.0, delta=0.02))
    assert 0 < p_value < 1
    assert hockey_stick_lower_bound(*counts, 1.0, p_value * 1.001) > 0.02
    assert hockey_stick_lower_bound(*counts, 1.0, p_value * 0.999) <= 0.02
    # with delta = 0 the test is the log-ratio test
    assert excess_p_value(*counts, 1.0) == excess_p_value(*counts, 1.0, delta=0.0)
