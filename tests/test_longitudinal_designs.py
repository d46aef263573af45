"""Two-stage (memoized) mechanisms: RAPPOR's closed forms, multi_freq_ldpy's L-GRR and L-OSUE, designed stages.

Independent computations: the RAPPOR paper's formulas, multi_freq_ldpy's own parameter
expressions (transcribed from multi_freq_ldpy/long_freq_est/L_GRR.py and L_OSUE.py) and its
variance function (its numba client takes 10 s to compile: benchmarks/bench_longitudinal.py
samples it), and the cone-vertex LP enumerated by cdd.
"""

import math

import numpy as np
import pytest

from designer.certify import certify
from designer.longitudinal.design import (
    channel_variance,
    design_instantaneous,
    search_permanent,
    symmetric_grr_design,
    symmetric_variance,
)
from designer.longitudinal.families import l_grr, l_grr_parameters, l_osue_parameters, rappor, rappor_levels
from designer.longitudinal.two_stage import certify_two_stage
from designer.spec import PrivacyMatrix
from designer.utility import mutual_information

#: Every 2-bit Bloom filter of 4 bits: six values, pairs sharing no bit or one bit.
FILTERS = [[0, 1], [2, 3], [0, 2], [1, 3], [0, 3], [1, 2]]


def rappor_privacy(disjoint: str, overlapping: str) -> PrivacyMatrix:
    levels = [["0" if x == y else (disjoint if not set(FILTERS[x]) & set(FILTERS[y]) else overlapping)
               for y in range(6)] for x in range(6)]
    return PrivacyMatrix(levels)


def test_rappor_levels_are_the_papers_to_the_last_digit():
    stages = rappor(FILTERS, "1/2", "1/2", "3/4")  # h = 2, f = 0.5, p = 0.5, q = 0.75 (the paper's example)
    eps_inf, eps_1 = rappor_levels(2, 0.5, 0.5, 0.75)
    assert eps_inf == pytest.approx(4 * math.log(3), abs=1e-12)
    q_star, p_star = 0.25 * 1.25 + 0.5 * 0.75, 0.25 * 1.25 + 0.5 * 0.5
    assert eps_1 == pytest.approx(2 * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star))), abs=1e-12)
    assert stages.long_term_privacy().epsilon.max() == pytest.approx(eps_inf, abs=1e-12)
    assert stages.report_privacy().epsilon.max() == pytest.approx(eps_1, abs=1e-12)
    # exactly: the permanent stage is log(81)-LDP on disjoint filters (log(9) on overlapping ones), one report
    # log((77/45)^2) (log(77/45)); a hair less fails
    long_term, report = certify_two_stage(stages, rappor_privacy("log(81)", "log(9)"),
                                          rappor_privacy("log(5929/2025)", "log(77/45)"))
    assert long_term.certified and report.certified and long_term.mode == report.mode == "exact"
    assert not certify(stages.report(), rappor_privacy("log(5928/2025)", "log(77/45)"), exact=True).certified


def library_l_grr(k, eps_perm, eps_1):
    """The parameters as multi_freq_ldpy/long_freq_est/L_GRR.py computes them (transcribed)."""
    p1 = np.exp(eps_perm) / (np.exp(eps_perm) + k - 1)
    q1 = (1 - p1) / (k - 1)
    p2 = (q1 - np.exp(eps_1) * p1) / ((-p1 * np.exp(eps_1)) + k * q1 * np.exp(eps_1) - q1 * np.exp(eps_1)
                                       - p1 * (k - 1) + q1)
    return p1, q1, p2, (1 - p2) / (k - 1)


@pytest.mark.parametrize("k", [10, 100])
def test_l_grr_parameters_and_variance_match_multi_freq_ldpy(k):
    from multi_freq_ldpy.long_freq_est.Variance_LONG_PURE import VAR_Long_Pure

    for eps_inf, eps_1 in [(2.0, 1.0), (4.0, 1.0), (1.0, 0.5)]:
        ours = l_grr_parameters(k, eps_inf, eps_1)
        assert (ours.p1, ours.q1, ours.p2, ours.q2) == pytest.approx(library_l_grr(k, eps_inf, eps_1), rel=1e-12)
        assert ours.variance(1000) == pytest.approx(VAR_Long_Pure(ours.p1, ours.q1, ours.p2, ours.q2, 1000, 0),
                                                    rel=1e-12)
        # the published equation is the binary one: for k > 2 one report leaves budget unused
        report = l_grr(k, eps_inf, eps_1).report_privacy().epsilon.max()
        assert report == pytest.approx(math.log(ours.p_report / ours.q_report), rel=1e-12) and report < eps_1
        exact = l_grr(k, eps_inf, eps_1, exact_report=True)
        assert exact.report_privacy().epsilon.max() == pytest.approx(eps_1, rel=1e-12)
        assert exact.long_term_privacy().epsilon.max() == pytest.approx(eps_inf, rel=1e-12)


def library_l_osue(eps_perm, eps_1):
    """multi_freq_ldpy/long_freq_est/L_OSUE.py (transcribed)."""
    p2 = (1 - np.exp(eps_1 + eps_perm)) / (np.exp(eps_1) - np.exp(eps_perm) - np.exp(eps_1 + eps_perm) + 1)
    return 0.5, 1 / (np.exp(eps_perm) + 1), p2, 1 - p2


def test_l_osue_parameters_variance_and_its_optimality_per_bit():
    from multi_freq_ldpy.long_freq_est.Variance_LONG_PURE import VAR_Long_Pure

    for eps_inf, eps_1 in [(2.0, 1.0), (4.0, 1.0), (1.0, 0.5)]:
        ours = l_osue_parameters(eps_inf, eps_1)
        assert (ours.p1, ours.q1, ours.p2, ours.q2) == pytest.approx(library_l_osue(eps_inf, eps_1), rel=1e-12)
        assert ours.variance(10) == pytest.approx(VAR_Long_Pure(ours.p1, ours.q1, ours.p2, ours.q2, 10, 0), rel=1e-12)
        level = math.log(ours.p_report * (1 - ours.q_report) / (ours.q_report * (1 - ours.p_report)))
        assert level == pytest.approx(eps_1, rel=1e-12)
        # no other bit channel (P(1|1), P(1|0)) after the same permanent stage does better at the same level
        grid = np.linspace(0, 1, 401)
        a, b = grid[:, None], grid[None, :]
        p, q = ours.p1 * a + (1 - ours.p1) * b, ours.q1 * a + (1 - ours.q1) * b
        with np.errstate(all="ignore"):
            allowed = (p > q) & (np.log(p * (1 - q) / (q * (1 - p))) <= eps_1 + 1e-12)
            variance = np.where(allowed, q * (1 - q) / (p - q) ** 2, np.inf)
        assert variance.min() >= ours.variance() * (1 - 1e-9)


def test_symmetric_design_is_the_lp_optimum_and_certified():
    k, eps_inf, eps_1 = 6, 2.0, 1.0
    permanent = l_grr(k, eps_inf, eps_1).permanent
    designed = design_instantaneous(permanent, PrivacyMatrix.classic(k, eps_1))
    assert designed.certificate.certified
    assert designed.mutual_information == pytest.approx(designed.dual_bound, rel=1e-8)
    best = symmetric_grr_design(k, eps_inf, eps_1)
    assert best.mutual_information == pytest.approx(designed.mutual_information, rel=1e-9)
    report = designed.stages.report()
    assert report.tight_privacy().epsilon.max() <= eps_1 + 1e-9
    assert mutual_information(np.full(k, 1 / k), report.matrix) == pytest.approx(designed.mutual_information, rel=1e-9)


def test_symmetric_variance_closed_form():
    k, p, q = 7, 0.4, 0.1
    grr = np.full((k, k), q)
    np.fill_diagonal(grr, p)
    closed = (1 / k) * (1 - 1 / k) / (p - q) ** 2  # counting estimator of randomised response at the uniform prior
    assert symmetric_variance(grr[:, 0]) == pytest.approx(closed, rel=1e-12)
    assert channel_variance(grr) == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("k", [10, 100])
def test_designed_instantaneous_stage_at_least_as_good_as_l_grr(k):
    for eps_inf, eps_1 in [(2.0, 1.0), (4.0, 1.0)]:
        baseline = l_grr(k, eps_inf, eps_1, exact_report=True).report().matrix
        library = l_grr(k, eps_inf, eps_1).report().matrix
        information = symmetric_grr_design(k, eps_inf, eps_1)
        variance = symmetric_grr_design(k, eps_inf, eps_1, "variance")
        uniform = np.full(k, 1 / k)
        assert information.mutual_information >= mutual_information(uniform, baseline) * (1 - 1e-12)
        assert variance.variance <= channel_variance(baseline) * (1 + 1e-12)
        assert channel_variance(baseline) < channel_variance(library)
        print(f"k={k} eps_inf={eps_inf} eps_1={eps_1}: variance ratio L-GRR / ours "
              f"{channel_variance(baseline) / variance.variance:.3f} (library L-GRR "
              f"{channel_variance(library) / variance.variance:.3f}); MI ratio ours / L-GRR "
              f"{information.mutual_information / mutual_information(uniform, baseline):.3f}")


def test_search_over_permanent_stages():
    from designer.design.vertex import design_by_vertices

    k, eps_inf, eps_1 = 4, 2.0, 0.7
    long_term, report = PrivacyMatrix.classic(k, eps_inf), PrivacyMatrix.classic(k, eps_1)
    optimal = design_by_vertices(long_term).channel
    candidates = {"GRR": l_grr(k, eps_inf, eps_1).permanent, "optimal E_inf design": optimal}
    name, best = search_permanent(candidates, long_term, report)
    each = {key: design_instantaneous(channel, report).mutual_information for key, channel in candidates.items()}
    assert best.mutual_information == pytest.approx(max(each.values())) and each[name] == max(each.values())
    assert best.certificate.certified
    with pytest.raises(ValueError, match="not E_inf-LDP"):
        search_permanent({"GRR(3)": l_grr(k, 3.0, eps_1).permanent}, long_term, report)
