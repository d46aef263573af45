"""Estimators for any channel: the unbiased least-squares inverse and EM maximum likelihood,
checked against independent computations (exact inversion, KKT conditions, a convex solver)."""

from __future__ import annotations

import numpy as np
import pytest

from designer.channel import Channel
from designer.estimation import l2_error, maximum_likelihood, tv_distance, unbiased_estimate
from designer.mechanisms import BlockHadamardResponse, GeneralizedRandomizedResponse, HighLowHadamardResponse, mangat
from designer.theory import (
    block_l2_squared_bound,
    block_tv_bound,
    block_users_needed,
    high_low_tv_bound,
    high_low_users_needed,
    hr_scale,
    sample_complexity_order,
)


def _asymmetric_channel():
    """A 3 x 4 channel with no symmetry (rows inputs)."""
    return Channel([[0.6, 0.2, 0.1, 0.1], [0.1, 0.5, 0.3, 0.1], [0.05, 0.05, 0.3, 0.6]])


def test_unbiased_estimate_inverts_a_tall_asymmetric_channel():
    channel = _asymmetric_channel()
    prior = np.array([0.5, 0.3, 0.2])
    np.testing.assert_allclose(unbiased_estimate(1000 * (prior @ channel.matrix), channel), prior, atol=1e-14)
    square = Channel([[0.7, 0.3], [0.2, 0.8]])
    counts = np.array([37.0, 63.0])
    np.testing.assert_allclose(unbiased_estimate(counts, square), np.linalg.solve(square.matrix.T, counts / 100))


def test_unbiased_estimate_refuses_a_rank_deficient_channel():
    with pytest.raises(ValueError, match="rank 1 < k = 2"):
        unbiased_estimate([5, 5], Channel([[0.5, 0.5], [0.5, 0.5]]))
    with pytest.raises(ValueError, match="expected 4 output counts"):
        unbiased_estimate([1, 2], _asymmetric_channel())


def _kkt_gap(estimate, counts, matrix):
    frequencies = counts / counts.sum()
    output = estimate @ matrix
    gradient = matrix @ np.where(frequencies > 0, frequencies / output, 0.0)
    return gradient


def test_em_progress_reports_every_step_and_the_final_gap():
    """progress(step, gap): steps 0..iterations in order, the last gap is the result's, the estimate unchanged."""
    rng = np.random.default_rng(2)
    channel = HighLowHadamardResponse(6, 2, 1.0).channel()
    counts = rng.multinomial(3_000, np.array([0.0, 0.1, 0.0, 0.3, 0.5, 0.1]) @ channel.matrix).astype(float)
    seen = []
    result = maximum_likelihood(counts, channel, tolerance=1e-10, progress=lambda step, gap: seen.append((step, gap)))
    assert [step for step, _ in seen] == list(range(result.iterations + 1))
    assert seen[-1][1] == result.optimality_gap <= 1e-10 < seen[0][1]
    np.testing.assert_array_equal(result.estimate, maximum_likelihood(counts, channel, tolerance=1e-10).estimate)


def test_em_is_the_mle_for_asymmetric_channels():
    """KKT: g_x = 1 on the support, <= 1 off it; and the likelihood equals a convex solver's optimum."""
    import cvxpy
    rng = np.random.default_rng(0)
    channel = HighLowHadamardResponse(6, 2, 1.0).channel()  # asymmetric (high-low)
    counts = rng.multinomial(3_000, np.array([0.0, 0.1, 0.0, 0.3, 0.5, 0.1]) @ channel.matrix).astype(float)
    result = maximum_likelihood(counts, channel, tolerance=1e-10)
    assert result.converged and result.optimality_gap <= 1e-10
    gradient = _kkt_gap(result.estimate, counts, channel.matrix)
    assert gradient.max() <= 1 + 1e-10
    support = result.estimate > 1e-6
    np.testing.assert_allclose(gradient[support], 1.0, atol=1e-6)
    point = cvxpy.Variable(6, nonneg=True)
    objective = cvxpy.Maximize(counts @ cvxpy.log(channel.matrix.T @ point) / counts.sum())
    cvxpy.Problem(objective, [cvxpy.sum(point) == 1]).solve()
    assert result.log_likelihood >= objective.value - 1e-6
    assert result.log_likelihood - objective.value <= 1e-10 + 1e-6


def test_em_transposes_correctly_where_a_symmetric_shortcut_fails():
    """The IBU update with Q instead of Q^T (the multi-freq-ldpy bug) gives an unnormalised vector
    for Mangat's channel; ours stays a distribution and matches the closed-form MLE."""
    channel = mangat(np.log(4))  # [[3/4, 1/4], [0, 1]]
    counts = np.array([300.0, 700.0])
    result = maximum_likelihood(counts, channel, tolerance=1e-12)
    # closed form: q_0 = p_0 * 3/4 -> p_0 = 0.3 / 0.75 = 0.4 (interior, so the MLE is the inverse)
    np.testing.assert_allclose(result.estimate, [0.4, 0.6], atol=1e-9)
    matrix = channel.matrix
    wrong = np.array([0.5, 0.5])
    wrong = wrong * (matrix.T @ ((counts / counts.sum()) / (wrong @ matrix)))
    # by hand: pQ = (3/8, 5/8), q_hat / pQ = (0.8, 1.12), Q^T @ that = (0.6, 1.32), times 1/2
    np.testing.assert_allclose(wrong, [0.3, 0.66], atol=1e-15)  # sums to 0.96, not 1


def test_em_with_operator_equals_em_with_dense_matrix_and_is_fast_to_converge():
    rng = np.random.default_rng(1)
    mechanism = BlockHadamardResponse([5, 7, 3], 0.9)
    counts = rng.multinomial(20_000, rng.dirichlet(np.ones(15)) @ mechanism.channel().matrix)
    with_operator = maximum_likelihood(counts, mechanism, tolerance=1e-9)
    with_matrix = maximum_likelihood(counts, mechanism.channel(), tolerance=1e-9)
    assert with_operator.converged and with_matrix.converged
    np.testing.assert_allclose(with_operator.estimate, with_matrix.estimate, atol=1e-3)
    assert abs(with_operator.log_likelihood - with_matrix.log_likelihood) <= 2e-9
    plain = maximum_likelihood(counts, mechanism, tolerance=1e-9, accelerate=False, max_iterations=200)
    assert plain.log_likelihood <= with_operator.log_likelihood + 1e-12


def test_em_on_grr_k1000_reaches_the_stated_tolerance():
    rng = np.random.default_rng(2)
    mechanism = GeneralizedRandomizedResponse(1000, 1.0)
    prior = np.arange(1, 1001) ** -1.1
    prior /= prior.sum()
    counts = mechanism.counts(mechanism.sample(rng.choice(1000, 10**6, p=prior), rng))
    result = maximum_likelihood(counts, mechanism)
    assert result.converged and result.optimality_gap <= 1e-6
    assert result.iterations < 200
    assert abs(result.estimate.sum() - 1) < 1e-12 and result.estimate.min() >= 0
    projected = mechanism.estimate_counts(counts, project=True)
    assert tv_distance(result.estimate, prior) < 0.8 and tv_distance(projected, prior) < 0.8


def test_error_helpers():
    assert tv_distance([1, 0], [0, 1]) == 1.0
    assert l2_error([1, 0], [0, 1]) == pytest.approx(np.sqrt(2))


# ------------------------------------------------------------------ theory


def test_bounds_17_and_20_numbers():
    c = (np.e + 1) / (np.e - 1)
    assert hr_scale(1.0) == pytest.approx(c)
    assert block_tv_bound([10] * 100, 1.0, 10**6) == pytest.approx(2 * c * np.sqrt(3 * 100 * 100 / 10**6))
    assert block_l2_squared_bound([3, 5], 1.0, 100) == pytest.approx(12 * 5 * c**2 / 100)
    assert high_low_tv_bound(1000, 10, 1.0, 10**5) == pytest.approx(
        np.sqrt(3 * 100 * c**2 / 10**5) + np.sqrt(c * 1000 / 10**5)
    )


def test_users_needed_inverts_the_bounds():
    for sizes in ([1000], [100] * 10, [7, 300, 40]):
        n = block_users_needed(sizes, 0.5, 0.1)
        assert block_tv_bound(sizes, 0.5, n) <= 0.1 < block_tv_bound(sizes, 0.5, n - 1)
    n = high_low_users_needed(5000, 20, 1.0, 0.05)
    assert high_low_tv_bound(5000, 20, 1.0, n) <= 0.05 < high_low_tv_bound(5000, 20, 1.0, n - 1)


def test_sample_complexity_orders_theorems_3_and_4():
    assert sample_complexity_order(0.1, 0.5, k=1000) == pytest.approx(1000**2 / (0.01 * 0.25))
    assert sample_complexity_order(0.1, 0.5, k=1000, sensitive=10) == pytest.approx(100 / 0.0025 + 1000 / 0.005)
    blocks = [250] * 4
    assert sample_complexity_order(0.1, 0.5, block_sizes=blocks) == pytest.approx(
        sample_complexity_order(0.1, 0.5, k=1000) / 4
    )
    with pytest.raises(ValueError, match="alpha"):
        sample_complexity_order(0, 1.0, k=3)
