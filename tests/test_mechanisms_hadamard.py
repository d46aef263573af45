"""Hadamard-response mechanisms: channels (13)-(14) and Section 6.1 entry by entry, estimators
(15), (16), (19) against their literal set sums, unbiasedness and variance by simulation,
privacy by structure and by the exact certifier, bounds (17) and (20)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from designer.certify import certify
from designer.mechanisms import BlockHadamardResponse, HadamardResponse, HighLowHadamardResponse
from designer.spec import PrivacyMatrix
from designer.theory import block_tv_bound, high_low_tv_bound
from solvers.hadamard import fwht, hadamard_matrix, hadamard_sign, project_onto_simplex

SMALL_MECHANISMS = [
    lambda: HadamardResponse(6, "log(3)"),
    lambda: BlockHadamardResponse([3, 5, 2], "log(3)"),
    lambda: BlockHadamardResponse([[0, 5, 2], [1, 3], [4, 6, 7, 8]], "log(2)"),
    lambda: HighLowHadamardResponse(9, 3, "log(2)"),
    lambda: HighLowHadamardResponse(7, [1, 4, 6], 1.0),
]


# ------------------------------------------------------------------ solvers


def test_sylvester_recursion_and_sign_formula():
    small = hadamard_matrix(4)
    big = hadamard_matrix(8)
    assert np.array_equal(big, np.block([[small, small], [small, -small]]))
    assert np.array_equal(big @ big.T, 8 * np.eye(8))
    index = np.arange(16)
    assert np.array_equal(hadamard_sign(index[:, None], index[None, :]), hadamard_matrix(16))
    # Section 2: |S_i| = m/2 and |S_i ∩ S_j| = m/4 for rows 1..m-1 (0-based)
    plus = hadamard_matrix(16)[1:] > 0
    assert np.all(plus.sum(axis=1) == 8)
    overlap = plus.astype(int) @ plus.T.astype(int)
    assert np.all(overlap[~np.eye(15, dtype=bool)] == 4)


def test_fwht_matches_matrix_product_batched_and_exact_for_integers():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(3, 5, 32))
    np.testing.assert_allclose(fwht(values), values @ hadamard_matrix(32).T, atol=1e-12)
    columns = rng.normal(size=(8, 3))
    np.testing.assert_allclose(fwht(columns, axis=0), hadamard_matrix(8) @ columns, atol=1e-12)
    counts = rng.integers(0, 10**12, size=64)
    assert np.array_equal(fwht(counts), hadamard_matrix(64).astype(np.int64) @ counts)
    with pytest.raises(ValueError, match="power of two"):
        fwht(np.ones(6))


def test_simplex_projection_against_cvxpy():
    import cvxpy
    rng = np.random.default_rng(1)
    for _ in range(5):
        vector = rng.normal(scale=0.5, size=12)
        point = cvxpy.Variable(12)
        cvxpy.Problem(cvxpy.Minimize(cvxpy.sum_squares(point - vector)), [point >= 0, cvxpy.sum(point) == 1]).solve()
        np.testing.assert_allclose(project_onto_simplex(vector), point.value, atol=1e-6)
    assert np.array_equal(project_onto_simplex([0.25, 0.75]), [0.25, 0.75])


# ------------------------------------------------------------------ channels


def _paper_block_channel(partition, epsilon):
    """Section 6.1 written out with an explicit Hadamard matrix, block by block.

    Inside a block, symbols take rows 1, 2, ... in increasing symbol order."""
    partition = [sorted(block) for block in partition]
    e = math.exp(epsilon)
    sizes = [2 ** math.ceil(math.log2(len(block) + 1)) for block in partition]
    k = sum(len(block) for block in partition)
    matrix = np.zeros((k, sum(sizes)))
    offset = 0
    for block, size in zip(partition, sizes):
        hadamard = hadamard_matrix(size)
        for i, x in enumerate(block):
            row = hadamard[i + 1]  # "(i+1)th row" (1-based i in the paper; 0-based position here)
            matrix[x, offset : offset + size] = np.where(row > 0, 2 * e / (size * (1 + e)), 2 / (size * (1 + e)))
        offset += size
    return matrix


def _paper_high_low_channel(k, s, epsilon):
    """Eqs. (13)-(14) with A = first s symbols."""
    e = math.exp(epsilon)
    size = 2 ** math.ceil(math.log2(s + 1))
    hadamard = hadamard_matrix(size)
    matrix = np.zeros((k, size + k - s))
    for x in range(k):
        if x < s:
            matrix[x, :size] = np.where(hadamard[x + 1] > 0, 2 * e / (size * (e + 1)), 2 / (size * (e + 1)))
        else:
            matrix[x, :size] = 2 / (size * (e + 1))
            matrix[x, x + size - s] = (e - 1) / (e + 1)
    return matrix


def test_block_channel_is_section_6_1_entry_by_entry():
    partition = [[0, 5, 2], [1, 3], [4, 6, 7, 8, 9, 10, 11, 12]]
    mechanism = BlockHadamardResponse(partition, 0.8)
    np.testing.assert_allclose(mechanism.channel().matrix, _paper_block_channel(partition, 0.8), rtol=1e-14)
    assert list(mechanism.hadamard_sizes) == [4, 4, 16]


def test_high_low_channel_is_eqs_13_14_and_uses_log_k_plus_one_bits():
    for k, s in [(9, 3), (20, 4), (17, 1)]:
        mechanism = HighLowHadamardResponse(k, s, 1.3)
        np.testing.assert_allclose(mechanism.channel().matrix, _paper_high_low_channel(k, s, 1.3), rtol=1e-14)
        assert mechanism.n_outputs <= 2 * k  # S + t <= 2k
        assert mechanism.bits <= math.log2(k) + 1


def test_operators_match_the_materialised_channel():
    rng = np.random.default_rng(2)
    for build in SMALL_MECHANISMS:
        mechanism = build()
        matrix = mechanism.channel().matrix
        prior = rng.dirichlet(np.ones(mechanism.k))
        weights = rng.normal(size=mechanism.n_outputs)
        np.testing.assert_allclose(mechanism.forward(prior), prior @ matrix, atol=1e-15)
        np.testing.assert_allclose(mechanism.adjoint(weights), matrix @ weights, atol=1e-14)


def test_sampler_follows_each_row_of_the_channel():
    """Chi-square goodness of fit of 40,000 reports per input against Q[x, :]."""
    rng = np.random.default_rng(3)
    for build in SMALL_MECHANISMS:
        mechanism = build()
        matrix = mechanism.channel().matrix
        for x in range(mechanism.k):
            reports = mechanism.sample(np.full(40_000, x), rng)
            support = matrix[x] > 0
            observed = np.bincount(reports, minlength=mechanism.n_outputs)
            assert observed[~support].sum() == 0
            pvalue = stats.chisquare(observed[support], 40_000 * matrix[x, support]).pvalue
            assert pvalue > 1e-4, (mechanism, x, pvalue)


def test_sampler_rejects_bad_inputs():
    mechanism = HadamardResponse(5, 1.0)
    with pytest.raises(ValueError, match="0..4"):
        mechanism.sample([0, 5])
    with pytest.raises(ValueError, match="0..4"):
        mechanism.sample([0.5])
    with pytest.raises(ValueError, match="positive"):
        HadamardResponse(5, 0)


# ------------------------------------------------------------------ estimators


def test_block_estimator_is_eq_19_literally():
    rng = np.random.default_rng(4)
    partition = [[0, 2, 5], [1, 3], [4, 6, 7, 8]]
    mechanism = BlockHadamardResponse(partition, 0.9)
    counts = rng.integers(0, 50, size=mechanism.n_outputs)
    n = counts.sum()
    e = math.exp(0.9)
    expected = np.empty(mechanism.k)
    offset = 0
    for block in partition:
        size = 2 ** math.ceil(math.log2(len(block) + 1))
        hadamard = hadamard_matrix(size)
        block_counts = counts[offset : offset + size]
        p_block = block_counts.sum() / n
        for i, x in enumerate(block):
            p_set = block_counts[hadamard[i + 1] > 0].sum() / n
            expected[x] = 2 * (e + 1) / (e - 1) * (p_set - p_block / 2)
        offset += size
    np.testing.assert_allclose(mechanism.estimate_counts(counts), expected, rtol=1e-12)


def test_high_low_estimator_is_eqs_15_16_literally():
    rng = np.random.default_rng(5)
    k, s, epsilon = 11, 3, 0.7
    mechanism = HighLowHadamardResponse(k, s, epsilon)
    counts = rng.integers(0, 50, size=mechanism.n_outputs)
    n = counts.sum()
    e = math.exp(epsilon)
    size = mechanism.hadamard_size
    hadamard = hadamard_matrix(size)
    p_a = (e + 1) / (e - 1) * (counts[:size].sum() / n - 2 / (e + 1))
    expected = np.empty(k)
    for i in range(s):
        p_set = counts[:size][hadamard[i + 1] > 0].sum() / n
        expected[i] = 2 * (e + 1) / (e - 1) * (p_set - 1 / (e + 1)) - p_a  # (15)
    for i in range(s, k):
        expected[i] = (e + 1) / (e - 1) * counts[i + size - s] / n  # (16)
    np.testing.assert_allclose(mechanism.estimate_counts(counts), expected, rtol=1e-12, atol=1e-15)


def test_estimators_invert_the_channel_exactly():
    """Applied to the exact output distribution the estimators return p (they are linear and unbiased)."""
    rng = np.random.default_rng(6)
    for build in SMALL_MECHANISMS:
        mechanism = build()
        prior = rng.dirichlet(np.ones(mechanism.k))
        np.testing.assert_allclose(mechanism.estimate_counts(mechanism.forward(prior)), prior, atol=1e-14)


def _replicated_estimates(mechanism, prior, n, repetitions, rng):
    inputs = rng.choice(mechanism.k, size=n * repetitions, p=prior)
    reports = mechanism.sample(inputs, rng).reshape(repetitions, n)
    offsets = np.arange(repetitions)[:, None] * mechanism.n_outputs
    counts = np.bincount((reports + offsets).ravel(), minlength=repetitions * mechanism.n_outputs)
    counts = counts.reshape(repetitions, mechanism.n_outputs)
    return np.array([mechanism.estimate_counts(row) for row in counts])


def _exact_variances(mechanism, prior, n):
    """Var(p_hat_x) = (sum_y a_xy^2 q_y - (sum_y a_xy q_y)^2) / n for the linear estimator p_hat = A q_hat."""
    weights = np.column_stack([mechanism.estimate_counts(np.eye(mechanism.n_outputs)[y])
                               for y in range(mechanism.n_outputs)])
    output = mechanism.forward(prior)
    return ((weights**2) @ output - (weights @ output) ** 2) / n


@pytest.mark.parametrize("build", SMALL_MECHANISMS)
def test_unbiased_by_simulation_with_variance_derived_tolerance(build):
    """Mean of 400 estimates within 5 standard errors of p (per coordinate), and the
    empirical variance within a chi-square 1e-6 two-sided band of the exact one."""
    rng = np.random.default_rng(7)
    mechanism = build()
    prior = rng.dirichlet(np.ones(mechanism.k))
    n, repetitions = 2_000, 400
    estimates = _replicated_estimates(mechanism, prior, n, repetitions, rng)
    variance = _exact_variances(mechanism, prior, n)
    standard_error = np.sqrt(variance / repetitions)
    assert np.all(np.abs(estimates.mean(axis=0) - prior) <= 5 * standard_error)
    ratio = estimates.var(axis=0, ddof=1) / variance
    low, high = stats.chi2.ppf([1e-6, 1 - 1e-6], repetitions - 1) / (repetitions - 1)
    assert np.all((low < ratio) & (ratio < high)), ratio


def test_measured_errors_sit_under_bounds_17_and_20():
    rng = np.random.default_rng(8)
    k, n = 64, 20_000
    prior = rng.dirichlet(np.ones(k))
    for mechanism in [BlockHadamardResponse([16, 16, 8, 24], 1.0), HadamardResponse(k, 1.0),
                      HighLowHadamardResponse(k, 8, 1.0)]:
        estimates = _replicated_estimates(mechanism, prior, n, 20, rng)
        mean_tv = 0.5 * np.abs(estimates - prior).sum(axis=1).mean()
        assert mean_tv <= mechanism.tv_bound(n)
    block = BlockHadamardResponse([16, 16, 8, 24], 1.0)
    assert block.tv_bound(n) == pytest.approx(block_tv_bound([16, 16, 8, 24], 1.0, n))
    assert block.tv_bound(n) == pytest.approx(2 * (math.e + 1) / (math.e - 1) * math.sqrt(3 * 1152 / n))
    assert HighLowHadamardResponse(k, 8, 1.0).tv_bound(n) == pytest.approx(high_low_tv_bound(k, 8, 1.0, n))


def test_block_hr_beats_hr_as_the_number_of_blocks_grows():
    """Figure 2's message on a small instance: mean TV error decreases with m and is below HR's."""
    rng = np.random.default_rng(9)
    k, n = 256, 20_000
    prior = rng.dirichlet(np.ones(k))
    errors = []
    for blocks in [1, 4, 16]:
        mechanism = BlockHadamardResponse([k // blocks] * blocks, 1.0)
        estimates = np.array([project_onto_simplex(e) for e in _replicated_estimates(mechanism, prior, n, 10, rng)])
        errors.append(0.5 * np.abs(estimates - prior).sum(axis=1).mean())
    assert errors[0] > errors[1] > errors[2]


# ------------------------------------------------------------------ privacy


@pytest.mark.parametrize("build", SMALL_MECHANISMS[:4])
def test_exact_certifier_proves_the_stated_privacy_and_it_is_tight(build):
    mechanism = build()
    certificate = mechanism.certify(exact=True)
    assert certificate.certified
    finite = np.isfinite(mechanism.privacy.epsilon)
    np.testing.assert_allclose(certificate.tight_epsilon[finite], mechanism.privacy.epsilon[finite], atol=1e-15)


def test_e_matrices_are_the_paper_models():
    assert HighLowHadamardResponse(6, 2, 1.0).privacy == PrivacyMatrix.high_low(6, [0, 1], 1.0)
    assert BlockHadamardResponse([2, 3], 1.0).privacy == PrivacyMatrix.block([2, 3], 1.0)
    assert HadamardResponse(4, 1.0).privacy == PrivacyMatrix.classic(4, 1.0)


def test_certifier_rejects_a_stricter_e():
    mechanism = BlockHadamardResponse([3, 4], "log(3)")
    assert not certify(mechanism.channel(), PrivacyMatrix.classic(7, 5.0), exact=True).certified  # across blocks
    assert not certify(mechanism.channel(), BlockHadamardResponse([3, 4], "log(2)").privacy, exact=True).certified
    high_low = HighLowHadamardResponse(6, 2, "log(3)")
    # a non-sensitive symbol reveals itself: it is not protected at any finite level
    assert not certify(high_low.channel(), PrivacyMatrix.high_low(6, [0, 1, 2], 5.0)).certified


def test_structure_check_states_the_ratios_at_any_scale():
    check = BlockHadamardResponse([43_750 // 35] * 35, 1.0).check_privacy_structure()
    assert check.holds
    assert check.checks[0].log_ratio == pytest.approx(1.0, abs=1e-15)
    assert "different blocks" in str(check)
    high_low = HighLowHadamardResponse(10_000, 30, 0.5).check_privacy_structure()
    assert high_low.holds and high_low.checks[0].log_ratio == pytest.approx(0.5, abs=1e-15)
    with pytest.raises(ValueError, match="only materialised"):
        BlockHadamardResponse([43_750 // 35] * 35, 1.0).channel()


def test_scale_run_is_vectorised_and_accurate():
    """k = 4,096 in 16 blocks, n = 10^6: the estimate's TV error is far below bound (20)."""
    rng = np.random.default_rng(10)
    mechanism = BlockHadamardResponse([256] * 16, 1.0)
    prior = rng.dirichlet(np.ones(mechanism.k))
    estimate = mechanism.estimate(mechanism.sample(rng.choice(mechanism.k, 10**6, p=prior), rng))
    assert 0.5 * np.abs(estimate - prior).sum() < mechanism.tv_bound(10**6) / 2
