"""The L1 range mechanism (metric-ldp-range-counting.md, Section IV-V).

Independent references: the dense matrices B_{m,D} and B_{m,D}^{-1} built block by
block from the recursions (5) and (8) in the paper's ind() order; the full channel
enumerated over all sign patterns (privacy via the project certifier, expectations
and variances by brute force); simulation for Theorems 1-4.
"""

import itertools
import json
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.certify import certify
from designer.cli import app
from designer.metric.range_mechanism import (
    L1RangeMechanism,
    basis_matrix,
    cell_counts,
    inverse_basis_matrix,
    quantile_error,
    quantile_error_bound,
    random_ranges,
    true_range_counts,
    zipf_values,
)
from designer.spec import PrivacyMatrix
from solvers.kronecker import khatri_rao_gram

runner = CliRunner()


# ------------------------------------------------------------ dense references
def dense_B(sizes):
    """B of eq. (5) by its block recursion; sizes[0] is dimension 1 (fastest in ind())."""
    base = basis_matrix(sizes[0])
    if len(sizes) == 1:
        return base
    inner = dense_B(sizes[:-1])
    m = sizes[-1]
    return np.block([[inner if j <= i else -inner for j in range(m)] for i in range(m)])


def dense_B_inverse(sizes):
    """B^{-1} of eq. (8) by its block recursion (with the base case written out)."""
    m = sizes[-1]
    inner = dense_B_inverse(sizes[:-1]) if len(sizes) > 1 else np.ones((1, 1))
    zero = np.zeros_like(inner)
    blocks = [[zero for _ in range(m)] for _ in range(m)]
    for i in range(m):
        blocks[i][i] = inner
        if i > 0:
            blocks[i][i - 1] = -inner
    blocks[0][m - 1] = blocks[0][m - 1] + inner
    return 0.5 * np.block(blocks)


def paper_order(tensor):
    """Flatten a C-indexed tensor in the paper's ind() order (dimension 1 fastest)."""
    return np.asarray(tensor).ravel(order="F")


@pytest.mark.parametrize("sizes", [(5,), (3, 4), (2, 3, 2), (4, 4)])
def test_recursions_5_and_8_match_the_kronecker_factors(sizes):
    B = dense_B(list(sizes))
    B_inv = dense_B_inverse(list(sizes))
    assert np.allclose(B_inv @ B, np.eye(B.shape[0]), atol=1e-12)  # Lemma 2
    mechanism = L1RangeMechanism(sizes, epsilon=0.7)
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 9, size=sizes).astype(float)
    expected = mechanism.expected_observations(counts)  # eq. (4) via mode products
    assert np.allclose(paper_order(expected), mechanism.alpha ** len(sizes) * B @ paper_order(counts), atol=1e-9)
    observations = rng.normal(size=sizes)
    oracle = mechanism.estimate(observations)
    direct = mechanism.alpha ** -len(sizes) * B_inv @ paper_order(observations)  # eq. (6)
    assert np.allclose(paper_order(oracle.frequencies()), direct, atol=1e-9)
    # the estimator inverts eq. (4) exactly: unbiasedness in closed form (Theorem 1)
    assert np.allclose(mechanism.estimate(expected).frequencies(), counts, atol=1e-9)
    assert np.allclose(inverse_basis_matrix(sizes[0]).toarray() @ basis_matrix(sizes[0]), np.eye(sizes[0]))


def test_khatri_rao_gram_chunks_weights_and_float_paths():
    rng = np.random.default_rng(12)
    factors = [rng.choice(np.array([-1, 1], dtype=np.int8), size=(1001, m)) for m in (3, 4, 2)]
    reference = np.einsum("ni,nj,nk->ijk", *[f.astype(float) for f in factors])
    assert np.array_equal(khatri_rao_gram(factors, chunk_bytes=100), reference)  # many chunks, float32 path
    assert np.array_equal(khatri_rao_gram(factors, blas_threads=None), reference)
    weights = rng.uniform(0, 2, size=1001)
    weighted = np.einsum("n,ni,nj,nk->ijk", weights, *[f.astype(float) for f in factors])
    assert np.allclose(khatri_rao_gram(factors, weights, chunk_bytes=1000), weighted, rtol=1e-12)
    assert np.array_equal(khatri_rao_gram(factors[:1]), factors[0].sum(axis=0))
    big = [rng.choice(np.array([-1, 1], dtype=np.int8), size=(70000, 32)) for _ in range(2)]  # >= SMALL_PRODUCT
    assert np.array_equal(khatri_rao_gram(big, chunk_bytes=2**20), big[0].T.astype(float) @ big[1].astype(float))


def test_paper_example_observation():
    """Section IV-A: n = 2, D = 2, m = 3; o at x = (1, 1) is 1*(-1) + 1*1 = 0."""
    R1 = np.array([[1, -1, 1], [-1, -1, -1]], dtype=np.int8)
    R2 = np.array([[1, 1, -1], [1, -1, -1]], dtype=np.int8)
    reports = [np.stack([R1[0], R2[0]]), np.stack([R1[1], R2[1]])]
    o = L1RangeMechanism((3, 3), 1.0).observations(reports)
    assert o[0, 0] == 0
    assert np.array_equal(o, np.outer(R1[0], R1[1]) + np.outer(R2[0], R2[1]))


def test_encoder_is_b_vector_and_flip_rate():
    mechanism = L1RangeMechanism((6,), epsilon=1.3)
    values = np.array([0, 2, 5] * 20000)
    reports = mechanism.encode(values, np.random.default_rng(0))[0]
    b = basis_matrix(6).T[values]  # row x = (-1 before x, +1 from x on)
    assert np.array_equal(b[1], [-1, -1, 1, 1, 1, 1])
    flip_rate = np.mean(reports != b)
    assert flip_rate == pytest.approx(mechanism.flip_probability, abs=4 * math.sqrt(0.25 / reports.size))
    assert reports.dtype == np.int8
    secure = mechanism.encode(values[:3])[0]  # default: the cryptographic generator
    assert secure.shape == (3, 6) and set(np.unique(secure)) <= {-1, 1}


def exp_decimal(x: float) -> Decimal:
    """e^x to 60 significant digits (an independent reference for the exact threshold)."""
    with localcontext() as context:
        context.prec = 60
        return Decimal(x).exp()


@pytest.mark.parametrize("epsilon", [0.05, 0.9, 1.3, 4.0, 11.0])
def test_flips_use_an_exact_integer_threshold(epsilon):
    """p = T / 2^32 exactly, with (2^32 - T) / T <= e^eps < (2^32 - T + 1) / (T - 1): T is the smallest private threshold."""
    mechanism = L1RangeMechanism((4,), epsilon)
    T = mechanism.threshold
    assert mechanism.flip_fraction == Fraction(T, 2**32) and Fraction(mechanism.flip_probability) == Fraction(T, 2**32)
    e = exp_decimal(epsilon)
    with localcontext() as context:
        context.prec = 60
        assert Decimal(2**32 - T) / Decimal(T) <= e < Decimal(2**32 - T + 1) / Decimal(T - 1)
    assert mechanism.flip_fraction >= Fraction(1) / (Fraction(str(e)) + 1) - Fraction(1, 10**40)
    assert 0 <= epsilon - mechanism.privacy_level <= 2.0**-32 / (mechanism.flip_probability * (1 - mechanism.flip_probability)) * 1.01
    assert Fraction(mechanism.alpha) == 1 - 2 * Fraction(T, 2**32)  # estimators use the realised p exactly


class ScriptedWords:
    """A stand-in generator whose 64-bit words are given in advance (what designer.noise.random_words reads)."""

    def __init__(self, *batches):
        self.batches = list(batches)

    def integers(self, low, high, size, dtype):
        batch = self.batches.pop(0)
        assert (low, high, dtype, batch.size) == (0, 2**64, np.uint64, size)
        return batch


def test_flips_from_16_bit_words_are_a_32_bit_comparison_with_the_threshold():
    """Every high word once: flip iff the 32-bit U = 2^16 high + low is below T, with the low word drawn on ties only."""
    mechanism = L1RangeMechanism((2,), 1.0)
    high, low = divmod(mechanism.threshold, 2**16)
    every_high = np.arange(2**16, dtype=np.uint16)
    for low_word in (low - 1, low):
        tie = np.array([low_word, 0, 0, 0], dtype=np.uint16).view(np.uint64)  # one 64-bit word, first quarter used
        flips = mechanism._flips((2**14, 4), ScriptedWords(every_high.view(np.uint64), tie)).ravel()
        words = every_high.astype(np.int64) * 2**16 + np.where(every_high == high, low_word, 0)
        assert np.array_equal(flips, words < mechanism.threshold)
    # so P(flip) = (T_high + P(low word < T_low)) / 2^16 = T / 2^32 exactly


def test_streamed_collection_equals_encoding_everyone_at_once():
    """collect() encodes blocks of users and sums them (never all reports): same observations, D = 1 and D = 2."""
    mechanism = L1RangeMechanism((64,), 0.7)
    values = np.random.default_rng(1).integers(0, 64, size=(600_000, 1))  # 3 blocks of users
    streamed = mechanism.collect(values, np.random.default_rng(2)).observations
    reports = mechanism.encode(values, np.random.default_rng(2))
    assert np.array_equal(streamed, mechanism.observations(reports))
    weighted = mechanism.collect(values, np.random.default_rng(2), weights=np.ones(600_000)).observations
    assert np.array_equal(weighted, streamed)  # the +-1 product path and the count path agree
    grid = L1RangeMechanism((5, 3), 1.0)
    cells = np.random.default_rng(3).integers(0, 3, size=(1000, 2))
    observations = grid.collect(cells, np.random.default_rng(4)).observations
    assert observations.shape == (5, 3) and np.all(np.abs(observations) <= 1000)
    assert np.all((observations - 1000) % 2 == 0)  # each entry is a sum of 1000 signs


def test_realised_flip_probability_is_the_threshold_over_two_to_the_32():
    """Flips of an encoder run occur with probability T / 2^32 (five standard errors)."""
    mechanism = L1RangeMechanism((2,), 1.0)
    rng = np.random.default_rng(5)
    reports = mechanism.encode(np.zeros(400_000, dtype=np.int64), rng)[0]
    flips = np.mean(reports != 1)
    p = mechanism.flip_probability
    assert abs(flips - p) < 5 * math.sqrt(p * (1 - p) / reports.size)


# ------------------------------------------------------------ Proposition 3
@pytest.mark.parametrize("shape", [(5,), (3, 3), (2, 3, 2), (4, 2)])
def test_proposition_3_certified_and_tight(shape):
    mechanism = L1RangeMechanism(shape, epsilon=0.9)
    channel = mechanism.channel()
    certificate = certify(channel, mechanism.privacy_matrix())
    assert certificate.certified
    # tight up to the threshold rounding: adjacent cells differ by one flip of log-ratio epsilon' <= epsilon
    assert 0 <= certificate.margin <= 1e-8
    realised = PrivacyMatrix.grid_l1(shape, mechanism.privacy_level)
    assert np.allclose(certificate.tight_epsilon, realised.epsilon, atol=1e-12)
    stricter = PrivacyMatrix.grid_l1(shape, 0.8)
    assert not certify(channel, stricter).certified


def test_channel_refuses_large_domains():
    with pytest.raises(ValueError, match="outputs"):
        L1RangeMechanism((10, 10), 1.0).channel()


# ------------------------------------------------------------ exact moments by enumeration
def brute_force_moments(mechanism, counts, functionals):
    """Mean and variance of the linear-query estimate by summing over every report of every cell."""
    channel = mechanism.channel().matrix  # rows: cells (C order), columns: sign patterns (kron order)
    patterns = [np.array(list(itertools.product([-1, 1], repeat=m))) for m in mechanism.shape]
    duals = [inverse_basis_matrix(m).T @ u for u, m in zip(functionals, mechanism.shape)]
    per_dimension = [p @ v for p, v in zip(patterns, duals)]  # Z_d for every pattern of dimension d
    value = per_dimension[0]
    for factor in per_dimension[1:]:
        value = np.kron(value, factor)
    value = value * mechanism.alpha ** -mechanism.dimensions
    mean = channel @ value
    var = channel @ value**2 - mean**2
    flat = counts.ravel()
    return float(flat @ mean), float(flat @ var)


@pytest.mark.parametrize("shape", [(4,), (3, 3), (2, 3, 2)])
def test_exact_variance_formula_against_enumeration(shape):
    mechanism = L1RangeMechanism(shape, epsilon=0.6)
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 7, size=shape).astype(float)
    queries = list(zip(*random_ranges(shape, 6, rng)))
    queries.append((np.zeros(len(shape), int), np.array(shape) - 1))  # the full domain
    for lower, upper in queries:
        functionals = mechanism.range_functionals(lower, upper)
        mean, var = brute_force_moments(mechanism, counts, functionals)
        truth = true_range_counts(counts, lower[None], upper[None])[0]
        assert mean == pytest.approx(truth, abs=1e-9)  # Theorem 1
        assert mechanism.variance(counts, functionals) == pytest.approx(var, rel=1e-10)
    weights = [rng.normal(size=m) for m in shape]  # a general separable linear query
    assert mechanism.variance(counts, weights) == pytest.approx(brute_force_moments(mechanism, counts, weights)[1], rel=1e-10)
    singles = mechanism.frequency_variances(counts)
    for cell in np.ndindex(*shape):
        functionals = [np.eye(m)[c] for c, m in zip(cell, shape)]
        assert singles[cell] == pytest.approx(brute_force_moments(mechanism, counts, functionals)[1], rel=1e-10)


def test_one_dimensional_variance_equals_the_bound():
    """D = 1: every user contributes (1 - alpha^2) / (2 alpha^2) to a non-full range (Theorems 2-3, constant 1)."""
    mechanism = L1RangeMechanism(9, epsilon=1.0)
    counts = np.arange(9, dtype=float)
    n = counts.sum()
    for lower, upper in [(0, 0), (3, 3), (8, 8), (2, 6), (0, 7), (1, 8)]:
        assert mechanism.variance(counts, mechanism.range_functionals([lower], [upper])) == pytest.approx(mechanism.variance_bound(n))
    a = mechanism.alpha
    assert mechanism.variance_bound(n) == pytest.approx(n * (1 - a**2) / (2 * a**2))


def test_variance_bound_formula():
    mechanism = L1RangeMechanism((8, 8, 8), epsilon=0.5)
    a = (math.exp(0.5) - 1) / (math.exp(0.5) + 1)
    assert mechanism.variance_bound(1000) == pytest.approx(1000 * a**-6 / 8 * (1 - a**6))


# ------------------------------------------------------------ simulation (Theorems 1-3)
def test_unbiased_and_variance_by_simulation():
    shape = (4, 3)
    mechanism = L1RangeMechanism(shape, epsilon=1.0)
    rng = np.random.default_rng(11)
    values = zipf_values(shape, 300, rng)
    counts = cell_counts(shape, values)
    lower, upper = np.array([[1, 0], [0, 1], [2, 2]]), np.array([[3, 1], [3, 2], [2, 2]])
    repetitions = 3000
    singles = np.empty((repetitions,) + shape)
    ranges = np.empty((repetitions, len(lower)))
    for r in range(repetitions):
        oracle = mechanism.collect(values, rng)
        singles[r] = oracle.frequencies()
        ranges[r] = oracle.range_queries(lower, upper)
    exact_single = mechanism.frequency_variances(counts)
    exact_range = mechanism.range_variances(counts, lower, upper)
    # Theorem 1: means within 5 standard errors
    z_single = (singles.mean(axis=0) - counts) / np.sqrt(exact_single / repetitions)
    z_range = (ranges.mean(axis=0) - true_range_counts(counts, lower, upper)) / np.sqrt(exact_range / repetitions)
    assert np.abs(z_single).max() < 5 and np.abs(z_range).max() < 5
    # variances: sample variance / exact in [0.85, 1.15] (std ~ sqrt(2/3000) = 0.026)
    assert np.allclose(singles.var(axis=0, ddof=1) / exact_single, 1, atol=0.15)
    assert np.allclose(ranges.var(axis=0, ddof=1) / exact_range, 1, atol=0.15)
    # the data-independent maximum (Theorems 2-3 up to their constant) bounds every query
    assert exact_single.max() <= mechanism.worst_case_variance(len(values))
    full = ((lower == 0) & (upper == np.array(shape) - 1)).sum(axis=1)  # query 1 spans dimension 0
    assert full.tolist() == [0, 1, 0]
    assert np.all(exact_range <= [mechanism.worst_case_variance(len(values), int(f)) for f in full])
    # on this tiny 4 x 3 domain Zipf puts 27% of users in cell (0, 0): above the constant-1 bound there
    assert exact_single[0, 0] > mechanism.variance_bound(len(values))


@pytest.mark.parametrize("shape", [(6,), (5, 4), (3, 4, 3)])
def test_worst_case_variance_attained_with_all_users_in_the_box(shape):
    mechanism = L1RangeMechanism(shape, epsilon=0.7)
    counts = np.zeros(shape)
    counts[(1,) * len(shape)] = 500.0
    assert mechanism.frequency_variances(counts)[(1,) * len(shape)] == pytest.approx(mechanism.worst_case_variance(500))
    full = mechanism.variance(counts, [np.ones(m) for m in shape])
    assert full == pytest.approx(mechanism.worst_case_variance(500, full_dimensions=len(shape)))
    rng = np.random.default_rng(0)
    for _ in range(5):  # random data never exceeds the maximum
        data = rng.integers(0, 50, size=shape).astype(float)
        data *= 500 / data.sum()
        lower, upper = random_ranges(shape, 10, rng)
        partial = (lower == 0) & (upper == np.array(shape) - 1)
        variances = mechanism.range_variances(data, lower, upper)
        limits = [mechanism.worst_case_variance(500, int(f)) for f in partial.sum(axis=1)]
        assert np.all(variances <= np.array(limits) * (1 + 1e-12))
    if len(shape) == 1:
        assert mechanism.worst_case_variance(500) == pytest.approx(mechanism.variance_bound(500))


def test_figure_1_regime_exact_error_below_bound_independent_of_m():
    """Zipf(1.1): the exact mean squared errors stay below the analysed bound for every m."""
    rng = np.random.default_rng(2)
    averages = []
    for m in (8, 32, 128):
        mechanism = L1RangeMechanism((m, m), epsilon=1.0)
        counts = cell_counts((m, m), zipf_values((m, m), 100000, rng))
        lower, upper = random_ranges((m, m), 100, rng)
        single = mechanism.frequency_variances(counts).mean()
        ranged = mechanism.range_variances(counts, lower, upper).mean()
        bound = mechanism.variance_bound(100000)
        assert single < bound and ranged < bound
        averages.append(ranged)
    assert max(averages) / min(averages) < 1.5  # no growth with the domain size


# ------------------------------------------------------------ queries
def test_range_queries_equal_box_sums_and_linear_queries():
    shape = (5, 3, 4)
    mechanism = L1RangeMechanism(shape, epsilon=0.8)
    rng = np.random.default_rng(4)
    oracle = mechanism.collect(zipf_values(shape, 2000, rng), rng)
    frequencies = oracle.frequencies()
    lower, upper = random_ranges(shape, 40, rng)
    lower[0], upper[0] = [0, 0, 0], [4, 2, 3]
    estimates = oracle.range_queries(lower, upper)
    for q in range(40):
        box = tuple(slice(lo, up + 1) for lo, up in zip(lower[q], upper[q]))
        assert estimates[q] == pytest.approx(frequencies[box].sum(), abs=1e-8)
        assert oracle.linear_query(mechanism.range_functionals(lower[q], upper[q])) == pytest.approx(estimates[q], abs=1e-8)
    assert oracle.range_query([1, 0, 2], [3, 1, 2]) == pytest.approx(frequencies[1:4, 0:2, 2:3].sum())


def test_true_range_counts_helper():
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 5, size=(4, 5)).astype(float)
    lower, upper = random_ranges((4, 5), 30, rng)
    brute = [counts[l0 : u0 + 1, l1 : u1 + 1].sum() for (l0, l1), (u0, u1) in zip(lower, upper)]
    assert np.allclose(true_range_counts(counts, lower, upper), brute)


def test_weighted_range_public_weights_equals_group_sum():
    """Section IV-C, public weights: one weighted pass = sum over weight groups of w * c_hat_g(R)."""
    shape = (6, 5)
    mechanism = L1RangeMechanism(shape, epsilon=1.0)
    rng = np.random.default_rng(8)
    values = zipf_values(shape, 3000, rng)
    weights = rng.choice([0.5, 1.0, 3.0], size=3000)
    reports = mechanism.encode(values, rng)
    weighted = mechanism.estimate(mechanism.observations(reports, weights))
    lower, upper = random_ranges(shape, 10, rng)
    grouped = np.zeros(10)
    for w in (0.5, 1.0, 3.0):
        members = weights == w
        group = mechanism.estimate(mechanism.observations([r[members] for r in reports]))
        grouped += w * group.range_queries(lower, upper)
    assert np.allclose(weighted.range_queries(lower, upper), grouped, atol=1e-8)
    # and it is unbiased for sum_i w_i [x_i in R] (eq. 4 applied to weighted counts)
    weighted_counts = cell_counts(shape, values, weights)
    expected = mechanism.estimate(mechanism.expected_observations(weighted_counts))
    assert np.allclose(expected.range_queries(lower, upper), true_range_counts(weighted_counts, lower, upper))


def test_weighted_range_private_weights_as_extra_dimension():
    """Section IV-C, private weights: the weight level is dimension D + 1."""
    levels = np.array([0.0, 1.0, 2.5, 4.0])
    mechanism = L1RangeMechanism((7, len(levels)), epsilon=1.0)
    rng = np.random.default_rng(9)
    values = np.stack([rng.integers(0, 7, 4000), rng.integers(0, 4, 4000)], axis=1)
    oracle = mechanism.collect(values, rng)
    estimate = oracle.weighted_range_query([2], [5], levels)
    by_level = sum(w * oracle.range_query([2, j], [5, j]) for j, w in enumerate(levels))
    assert estimate == pytest.approx(by_level)
    counts = cell_counts((7, 4), values)
    exact = mechanism.estimate(mechanism.expected_observations(counts)).weighted_range_query([2], [5], levels)
    truth = levels[values[(values[:, 0] >= 2) & (values[:, 0] <= 5), 1]].sum()
    assert exact == pytest.approx(truth)


# ------------------------------------------------------------ quantiles (Section V, Theorem 4)
def test_quantile_binary_search_noise_free_is_exact():
    mechanism = L1RangeMechanism(50, epsilon=1.0)
    rng = np.random.default_rng(1)
    values = zipf_values((50,), 5000, rng)[:, 0]
    counts = cell_counts((50,), values[:, None])
    oracle = mechanism.estimate(mechanism.expected_observations(counts), n=5000)
    for p in (0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 1.0):
        estimate = oracle.quantile(p)
        assert quantile_error(values, estimate, p) == 0.0
        assert estimate == int(np.searchsorted(np.cumsum(counts) / 5000, p - 1e-12))


def test_theorem_4_bound_holds_with_probability_one_minus_delta():
    m, n, epsilon, delta = 64, 4000, 1.0, 0.1
    mechanism = L1RangeMechanism(m, epsilon)
    rng = np.random.default_rng(6)
    values = zipf_values((m,), n, rng)[:, 0]
    bound = quantile_error_bound(n, epsilon, m, delta)
    assert bound == pytest.approx(2 * (math.e + 1) / (math.e - 1) * math.sqrt(2 / n * math.log(2 * 6 / delta)))
    failures, errors = 0, []
    for _ in range(100):
        oracle = mechanism.collect(values, rng)
        for p in (0.25, 0.5, 0.75):
            estimate = oracle.quantile(p)
            sigma_hat = oracle.percentile(estimate)
            assert p <= sigma_hat or estimate == m - 1
            assert oracle.percentile(estimate - 1) < p or estimate == 0
            error = quantile_error(values, estimate, p)
            errors.append(error)
            failures += error > bound
    assert failures / len(errors) <= delta
    assert 0 < np.mean(errors) < bound  # the mechanism is noisy but within the analysed scale


def test_quantile_error_definition():
    values = np.array([0, 1, 1, 2, 3])  # sigma = 0.2, 0.6, 0.8, 1.0
    assert quantile_error(values, 1, 0.5) == 0.0
    assert quantile_error(values, 0, 0.5) == pytest.approx(0.3)
    assert quantile_error(values, 3, 0.5) == pytest.approx(0.3)  # inf over (0.8, 1.0]


# ------------------------------------------------------------ validation
def test_bad_inputs():
    mechanism = L1RangeMechanism((4, 4), 1.0)
    with pytest.raises(ValueError, match="coordinate 1 is 4"):
        mechanism.encode(np.array([[0, 4]]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="epsilon"):
        L1RangeMechanism(4, 0.0)
    oracle = mechanism.estimate(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="range 0"):
        oracle.range_queries([[2, 0]], [[1, 3]])
    with pytest.raises(ValueError, match="one-dimensional"):
        oracle.quantile(0.5)
    with pytest.raises(ValueError, match="shape"):
        mechanism.estimate(np.zeros((4, 5)))


# ------------------------------------------------------------ CLI
def test_cli_range_json():
    result = runner.invoke(app, ["range", "--m", "16", "--D", "2", "--eps", "1", "--n", "20000", "--queries", "30", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert {"mse_single", "mse_range", "bound", "seconds"} <= set(payload)
    mechanism = L1RangeMechanism((16, 16), 1.0)
    assert payload["bound"] == pytest.approx(mechanism.variance_bound(20000))
    # the empirical errors are near their exact expectations (averages of many cells / 30 queries)
    assert payload["mse_single"] == pytest.approx(payload["expected_mse_single"], rel=0.2)
    assert payload["mse_range"] == pytest.approx(payload["expected_mse_range"], rel=0.6)
    assert payload["expected_mse_range"] < payload["bound"]


def test_cli_range_text_and_bad_input():
    ok = runner.invoke(app, ["range", "--m", "8", "--D", "1", "--n", "1000", "--queries", "5"])
    assert ok.exit_code == 0 and "bound" in ok.stdout
    bad = runner.invoke(app, ["range", "--m", "0", "--D", "2"])
    assert bad.exit_code == 2 and "error:" in bad.stderr and "Traceback" not in bad.output
