"""Randomised-response family as mechanisms: GRR, and Warner (10), Mangat (11), Q* (9) wrapped."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from designer.channel import Channel
from designer.mechanisms import (
    ChannelMechanism,
    GeneralizedRandomizedResponse,
    binary_optimal,
    binary_optimal_response,
    binary_privacy,
    mangat,
    mangat_response,
    warner,
    warner_response,
)
from designer.spec import PrivacyMatrix


def test_grr_channel_formula_exact_for_log_levels():
    mechanism = GeneralizedRandomizedResponse(4, "log(3)")
    exact = mechanism.channel().exact_matrix
    assert exact[0, 0] == Fraction(3, 6) and exact[0, 1] == Fraction(1, 6)
    float_channel = GeneralizedRandomizedResponse(5, 1.0).channel().matrix
    e = math.e
    np.testing.assert_allclose(np.diag(float_channel), e / (e + 4))
    np.testing.assert_allclose(float_channel[0, 1:], 1 / (e + 4))


def test_grr_privacy_structure_and_exact_proof():
    mechanism = GeneralizedRandomizedResponse(6, "log(5/2)")
    check = mechanism.check_privacy_structure()
    assert check.holds and check.checks[0].log_ratio == pytest.approx(math.log(2.5), abs=1e-15)
    certificate = mechanism.certify(exact=True)
    assert certificate.certified and certificate.margin == 0.0
    np.testing.assert_allclose(mechanism.privacy.epsilon, PrivacyMatrix.classic(6, math.log(2.5)).epsilon, rtol=1e-15)
    assert str(mechanism.privacy.exact_epsilon[0, 1]) == "log(5/2)"  # kept exact for the proof


def test_grr_sampler_rows_and_estimator_unbiased():
    rng = np.random.default_rng(0)
    mechanism = GeneralizedRandomizedResponse(5, 0.8)
    matrix = mechanism.channel().matrix
    for x in range(5):
        observed = np.bincount(mechanism.sample(np.full(50_000, x), rng), minlength=5)
        assert stats.chisquare(observed, 50_000 * matrix[x]).pvalue > 1e-4
    prior = np.array([0.4, 0.3, 0.2, 0.1, 0.0])
    np.testing.assert_allclose(mechanism.estimate_counts(prior @ matrix), prior, atol=1e-15)
    np.testing.assert_allclose(mechanism.forward(prior), prior @ matrix, atol=1e-15)
    # unbiased: 300 replicates of n = 5,000; per-coordinate 5-sigma band from the exact variance
    n, repetitions = 5_000, 300
    estimates = np.array([mechanism.estimate(mechanism.sample(rng.choice(5, n, p=prior), rng))
                          for _ in range(repetitions)])
    a, b = matrix[0, 0], matrix[0, 1]
    output = prior @ matrix
    variance = output * (1 - output) / (n * (a - b) ** 2)
    assert np.all(np.abs(estimates.mean(axis=0) - prior) <= 5 * np.sqrt(variance / repetitions))


def test_binary_wrappers_reuse_the_binary_channels():
    assert np.array_equal(warner_response(1.0).channel().matrix, warner(1.0).matrix)
    assert np.array_equal(mangat_response("log(2)").channel().exact_matrix, mangat("log(2)").exact_matrix)
    assert np.array_equal(binary_optimal_response(0.5, 2.0).channel().matrix, binary_optimal(0.5, 2.0).matrix)
    assert mangat_response("log(2)").privacy == binary_privacy("inf", "log(2)")
    assert mangat_response("log(2)").certify(exact=True).certified
    assert warner_response("log(3)").certify(exact=True).certified
    assert not ChannelMechanism(warner("log(3)"), binary_privacy("log(4)", "log(4)")).certify(exact=True).violations
    assert binary_optimal_response("log(2)", "log(5)").certify(exact=True).certified


def test_mangat_estimation_from_asymmetric_reports():
    """Mangat (11) with p = e^-eps21: q_hat_1 = p_1 (1 - p) -> p_hat_1 = q_hat_1 / (1 - p)."""
    rng = np.random.default_rng(1)
    mechanism = mangat_response(math.log(4))  # p = 1/4
    truth = np.array([0.3, 0.7])
    reports = mechanism.sample(rng.choice(2, 200_000, p=truth), rng)
    estimate = mechanism.estimate(reports)
    assert estimate[0] == pytest.approx(np.mean(reports == 0) / 0.75, rel=1e-12)
    assert abs(estimate[0] - 0.3) < 5 * math.sqrt(0.3 * 0.75 * (1 - 0.3 * 0.75) / 200_000) / 0.75
    check = mechanism.check_privacy_structure()
    assert check.holds and len(check.checks) == 1 and check.checks[0].log_ratio == pytest.approx(math.log(4))


def test_channel_mechanism_refuses_a_channel_that_breaks_its_e():
    with pytest.raises(ValueError, match="not E-LDP"):
        ChannelMechanism(warner(2.0), binary_privacy(1.0, 1.0))
    with pytest.raises(ValueError, match="3 inputs"):
        ChannelMechanism(Channel(np.eye(3)), binary_privacy(1.0, 1.0))


def test_grr_input_validation():
    with pytest.raises(ValueError, match="k >= 2"):
        GeneralizedRandomizedResponse(1, 1.0)
    with pytest.raises(ValueError, match="reports must be integers"):
        GeneralizedRandomizedResponse(3, 1.0).estimate([0, 3])
