"""The E-LDP matrix mechanism (metric-ldp-range-counting.md, Section III).

Acceptance test: for A = L_m, the all-range workload and E = eps |x - x'| the
optimiser recovers s_k = 1/eps, s_m = 0 and total error 2 n m (m - 1) / eps^2
(Section III-B) for Laplace noise, and n m (m - 1) 2 e^-eps / (1 - e^-eps)^2 for
the released discrete Laplace noise on the integers. Other references: the same
convex program written over every pair (not only the non-redundant ones),
discrete Laplace log-probability ratios evaluated exactly, and simulation.
"""

import json
import math
from fractions import Fraction

import cvxpy as cp
import networkx as nx
import numpy as np
import pytest
import scipy.linalg
from typer.testing import CliRunner

from designer.certify import certify
from designer.cli import app
from designer.metric.lattice import lattice_noise
from designer.metric.pairs import PrivacyPairs
from designer.metric.strategy import (
    Strategy,
    absorb_lattice_rounding,
    certify_strategy,
    design_overcomplete,
    design_strategy,
    laplace_error,
    optimal_noise_scales,
    uniform_noise_scales,
)
from designer.metric.strategy_matrices import DenseStrategyMatrix, snap_to_lattice
from designer.metric.workloads import AllRangeWorkload, IdentityWorkload, MatrixWorkload, PrefixWorkload
from designer.noise import rational_rate
from designer.spec import PrivacyMatrix

runner = CliRunner()


def all_range_workload(m: int) -> np.ndarray:
    """W_m of eq. (2) written out: one row per range [l, r], ordered by l then r (independent of the library)."""
    return np.array([[1.0 if l <= x <= r else 0.0 for x in range(m)] for l in range(m) for r in range(l, m)])


def prefix_strategy(m: int) -> np.ndarray:
    return np.tril(np.ones((m, m)))


def identity_workload(m: int) -> np.ndarray:
    return np.eye(m)


def brute_force_reconstruction(A, W, s=None):
    """B = W A^-1 (square A), or min sum_k s_k^2 ||B[:, k]||^2 s.t. B A = W by the null-space method.

    Each row b of B is a particular solution of A^T b = w plus the null space of A^T; the null-space
    coefficients solve a least-squares problem weighted by s (s = 0 rows are free, s = inf rows unused).
    """
    if s is None:
        return W @ np.linalg.inv(A)
    s = np.asarray(s, dtype=float)
    usable = np.isfinite(s)
    A_used, scale = A[usable], np.diag(s[usable])
    particular = np.linalg.lstsq(A_used.T, W.T, rcond=None)[0]
    null = scipy.linalg.null_space(A_used.T)
    coefficients = np.linalg.lstsq(scale @ null, -(scale @ particular), rcond=None)[0]
    B = np.zeros((W.shape[0], A.shape[0]))
    B[:, usable] = (particular + null @ coefficients).T
    return B


def line_metric(m: int, epsilon: float) -> PrivacyMatrix:
    index = np.arange(m)
    return PrivacyMatrix.metric(np.abs(index[:, None] - index[None, :]), epsilon)


def brute_force_objective(A, B, E):
    """min sum_k c_k / t_k^2 with Proposition 1 over EVERY ordered pair with finite E (no closure)."""
    costs = np.sum(B**2, axis=0)
    m = A.shape[1]
    pairs = [(x, y) for x in range(m) for y in range(m) if x != y and np.isfinite(E.epsilon[x, y])]
    sensitivity = np.array([np.abs(A[:, x] - A[:, y]) for x, y in pairs])
    levels = np.array([E.epsilon[x, y] for x, y in pairs])
    t = cp.Variable(A.shape[0], pos=True)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(costs, cp.power(t, -2)))), [sensitivity @ t <= levels])
    problem.solve(solver=cp.CLARABEL)
    return 2 * problem.value


def test_workloads_match_equation_2():
    W3 = np.array([[1, 1, 1, 0, 0, 0], [0, 1, 1, 1, 1, 0], [0, 0, 1, 0, 1, 1]]).T
    assert np.array_equal(AllRangeWorkload(3).dense(), W3)
    assert np.array_equal(all_range_workload(3), W3)
    assert np.array_equal(PrefixWorkload(3).dense(), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert np.array_equal(IdentityWorkload(2).dense(), np.eye(2))
    assert AllRangeWorkload(10).queries == 55
    with pytest.raises(ValueError, match="positive integer"):
        AllRangeWorkload(0)


@pytest.mark.parametrize("m", [2, 5, 16, 40])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_prefix_strategy_closed_form(m, epsilon):
    """Section III-B: s_k = 1/eps (k < m), s_m = 0, total error 2 n m (m - 1) / eps^2 (Laplace).

    Released: integer lattice (gamma = 1), rate rho = eps rounded down to 32 bits,
    error n m (m - 1) 2 e^-rho / (1 - e^-rho)^2.
    """
    E = line_metric(m, epsilon)
    strategy = design_strategy(AllRangeWorkload(m), E, prefix_strategy(m))
    assert np.allclose(strategy.noise_scales[:-1], 1 / epsilon, rtol=1e-6)
    assert strategy.noise_scales[-1] == 0.0
    n = 1000
    assert strategy.laplace_error(n) == pytest.approx(2 * n * m * (m - 1) / epsilon**2, rel=1e-6)
    noise = strategy.noise
    assert np.all(noise.exponents == 0) and np.array_equal(noise.centres(), prefix_strategy(m))
    for rate in noise.rates[:-1]:
        assert rate <= Fraction(epsilon) and float(rate) == pytest.approx(epsilon, rel=1e-8)
        assert rate.denominator & (rate.denominator - 1) == 0 and rate.numerator < 2**32  # q / 2^D
    assert noise.rates[-1] is None and noise.exact[-1]  # s_m = 0: reported without noise
    released = 2 * math.exp(-epsilon) / (1 - math.exp(-epsilon)) ** 2
    assert strategy.error(n) == pytest.approx(n * m * (m - 1) * released, rel=1e-6)
    assert strategy.error(n) < strategy.laplace_error(n)
    B = brute_force_reconstruction(prefix_strategy(m), all_range_workload(m))
    assert np.allclose(strategy.costs, np.sum(B**2, axis=0))  # ||B[:, k]||^2 from the Gram matrix, W never built
    certificate = certify_strategy(strategy, E)  # an explicit E: every pair
    assert certificate.certified and len(certificate.pairs) == m * (m - 1)
    assert 0 <= certificate.margin <= (m - 1) * epsilon * 2.0**-30  # only the rate rounding
    x, y = certificate.tightest_pair
    assert abs(x - y) >= 1 and np.isclose(strategy.privacy_loss()[x, y], epsilon * abs(x - y))
    edges = certify_strategy(strategy, PrivacyPairs.line(m, epsilon))  # the family: its edges imply the rest
    assert edges.certified and len(edges.pairs) == m - 1 and 0 <= edges.margin <= epsilon * 2.0**-30


def test_optimiser_uses_only_nonredundant_pairs_and_matches_all_pairs():
    rng = np.random.default_rng(0)
    graph = nx.random_geometric_graph(12, 0.5, seed=3)
    for u, v in graph.edges:
        graph.edges[u, v]["weight"] = float(rng.uniform(0.5, 2.0))
    E = PrivacyMatrix.from_graph(graph, epsilon=0.8)
    assert np.isfinite(E.epsilon).all()
    assert len(E.nonredundant_pairs()) < 12 * 11  # fewer constraints than pairs
    A = rng.integers(0, 2, size=(12, 12)).astype(float) + np.eye(12) * 3
    W = all_range_workload(12)
    strategy = design_strategy(W, E, A)
    B = brute_force_reconstruction(A, W)
    assert strategy.laplace_error(1) == pytest.approx(brute_force_objective(A, B, E), rel=1e-5)
    certificate = certify_strategy(strategy, E)
    assert certificate.certified and certificate.margin == pytest.approx(0.0, abs=1e-9)


def test_asymmetric_E_uses_the_smaller_level():
    E = PrivacyMatrix([[0, 1.0, 3.0], [0.5, 0, 1.0], [3.0, 2.0, 0]])
    strategy = design_strategy(identity_workload(3), E, np.eye(3))
    assert certify_strategy(strategy, E).certified
    assert strategy.laplace_error(1) == pytest.approx(brute_force_objective(np.eye(3), np.eye(3), E), rel=1e-5)


# ------------------------------------------------------------ Proposition 1 (certifier)
def exact_log_ratio(noise, output, x, y):
    """log P(output | x) - log P(output | y) for the released discrete Laplace report, as a Fraction."""
    C = noise.centres()
    return sum(
        rate * (abs(int(z) - int(C[k, y])) - abs(int(z) - int(C[k, x])))
        for k, (z, rate) in enumerate(zip(output, noise.rates))
    )


def test_privacy_loss_is_the_discrete_laplace_log_probability_ratio():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 5))
    s = rng.uniform(0.5, 2.0, size=5)
    strategy = Strategy(A, A, s)  # W = A: B = I
    noise = strategy.noise
    # A random A is not dyadic at the noise resolution: rows rounded to lattices of step in [s 2^-21, s 2^-20]
    gammas = np.ldexp(1.0, noise.exponents)
    assert np.all(gammas >= s * 2.0**-21) and np.all(gammas <= s * 2.0**-20)
    released = noise.released_matrix()
    assert np.all(np.abs(released - A) <= gammas[:, None] / 2)
    assert np.array_equal(np.ldexp(noise.centres().astype(float), noise.exponents[:, None]), released)
    loss = strategy.privacy_loss()
    C = noise.centres()
    exact_rates = [float(rate) for rate in noise.rates]
    assert np.allclose(loss, [[sum(r * abs(C[k, x] - C[k, y]) for k, r in enumerate(exact_rates)) for y in range(5)] for x in range(5)])
    laplace = np.array([[np.sum(np.abs(A[:, x] - A[:, y]) / s) for y in range(5)] for x in range(5)])
    assert np.allclose(loss, laplace, rtol=1e-5)  # up to the rounding of A (the certificate uses the released A)
    for x, y in [(0, 1), (2, 4), (3, 0)]:
        difference = C[:, x] - C[:, y]
        output = C[:, x] + 50 * np.sign(difference)  # beyond both centres: the supremum is attained
        assert exact_log_ratio(noise, output, x, y) == noise.exact_privacy_loss(x, y)
        assert float(noise.exact_privacy_loss(x, y)) == pytest.approx(loss[x, y], rel=1e-15)
        for _ in range(20):
            lattice_point = C[:, y] + rng.integers(-(2**25), 2**25, size=5)
            assert exact_log_ratio(noise, lattice_point, x, y) <= noise.exact_privacy_loss(x, y)


def test_snapping_keeps_integer_and_dyadic_rows_and_lattices_are_coarsest():
    A = np.array([[0, 1, 1, 0], [0.5, 1.5, 0, 0], [4, 8, 12, 0], [0, 0, 0, 0], [1 / 3, 0, 0, 1]])
    snapped, exponents = snap_to_lattice(A)
    assert np.array_equal(snapped[:4], A[:4])
    assert exponents.tolist()[:4] == [0, -1, 2, 0]
    assert exponents[4] == 1 - 52  # 1/3 needs 2^-54 exactly: snapped to 52 bits below 2^1 (|row| < 2)
    assert abs(snapped[4, 0] - 1 / 3) <= np.spacing(1.0) and snapped[4, 3] == 1.0
    again, same = snap_to_lattice(snapped)
    assert np.array_equal(again, snapped) and np.array_equal(same, exponents)
    noise = lattice_noise(DenseStrategyMatrix(A), np.array([1.0, 0.25, 3.0, 1.0, np.inf]))
    assert noise.rates[0] == 1 and noise.rates[1] == 2 and noise.rates[3] == 1  # gamma / s exactly
    assert noise.rates[2] == rational_rate(Fraction(4, 3)) and noise.rates[4] is None and noise.unused[4]


def test_non_dyadic_strategy_is_rounded_to_its_noise_lattice_and_certified():
    """A = 0.1 L_m + I/3 is not dyadic: rows go to lattices of step >= s 2^-21; the design still certifies."""
    m = 8
    E = line_metric(m, 0.7)
    A = 0.1 * prefix_strategy(m) + np.eye(m) / 3
    strategy = design_strategy(AllRangeWorkload(m), E, A)
    gammas = np.ldexp(1.0, strategy.noise.exponents)
    scales = strategy.noise_scales
    assert np.all(gammas >= scales * 2.0**-21) and np.all(gammas <= scales * 2.0**-20)
    assert np.all(np.abs(strategy.noise.released_matrix() - A) <= gammas[:, None] / 2)
    assert certify_strategy(strategy, E).certified
    reports = strategy.respond(np.full(50_000, 3), np.random.default_rng(2))
    assert np.all(np.mod(reports, gammas) == 0)
    assert np.allclose(reports.var(axis=0), strategy.noise_variances(), rtol=0.05)
    assert np.allclose(strategy.noise_variances(), 2 * scales**2, rtol=1e-5)  # fine lattice: close to Laplace


def test_absorbing_rounding_only_repairs_hairline_violations():
    m = 6
    E = line_metric(m, 1.0)
    designed = design_strategy(AllRangeWorkload(m), E, prefix_strategy(m))
    A, W, s = designed.strategy_matrix, designed.workload, designed.noise_scales
    hair = Strategy(A, W, s * (1 - 2.0**-15))
    assert not certify_strategy(hair, E).certified
    repaired = absorb_lattice_rounding(hair, E)
    assert certify_strategy(repaired, E).certified
    assert np.allclose(repaired.noise_scales, s, rtol=2.0**-14)
    real = Strategy(A, W, s * 0.9)
    assert absorb_lattice_rounding(real, E) is real  # a real violation is left for the certificate to report
    assert absorb_lattice_rounding(designed, E) is designed


def test_certifier_is_exact_at_equality():
    """L = E exactly is certified; E one double below is violated (a float tolerance would accept it)."""
    A = prefix_strategy(4)
    strategy = Strategy(A, AllRangeWorkload(4), np.array([1.0, 1.0, 0.5, 0.0]))
    # L(x, x') = |x - x'| except that crossing 2 -> 3 (row 2) costs rate 2
    index = np.arange(4)
    tight = np.abs(index[:, None] - index[None, :]).astype(float)
    tight[:3, 3] += 1
    tight[3, :3] += 1
    certificate = certify_strategy(strategy, PrivacyMatrix(tight))
    assert certificate.certified and certificate.margin == 0.0
    below = tight.copy()
    below[0, 3] = np.nextafter(below[0, 3], 0)
    violated = certify_strategy(strategy, PrivacyMatrix(below))
    assert violated.violations == [(0, 3)]
    assert certify_strategy(strategy, PrivacyMatrix(below), tolerance=1e-12).certified
    # the integer path of the exact decision agrees with rational arithmetic
    mixed_A = np.array([[1.0, 0.0, 0.5], [0.5, 0.5, 0.0], [0.0, 0.75, 1.5]])
    mixed = Strategy(mixed_A, mixed_A, np.array([0.8, 0.3, 2.0]))
    xs, ys = np.nonzero(~np.eye(3, dtype=bool))
    numerators, exponent = mixed.noise.scaled_pair_losses(xs, ys)
    for x, y, numerator in zip(xs, ys, numerators):
        assert Fraction(int(numerator), 2**exponent) == mixed.noise.exact_privacy_loss(x, y)


def test_certifier_verdict_margin_and_violations():
    m, epsilon = 6, 1.0
    E = line_metric(m, epsilon)
    designed = design_strategy(AllRangeWorkload(m), E, prefix_strategy(m))
    too_little_noise = Strategy(designed.strategy_matrix, designed.workload, designed.noise_scales * 0.9)
    certificate = certify_strategy(too_little_noise, E)
    assert certificate.verdict == "violated"
    # L = |x - x'| / 0.9 against E = |x - x'|: the farthest pair is the tightest
    assert certificate.margin == pytest.approx((m - 1) * (1 - 1 / 0.9))
    assert set(certificate.tightest_pair) == {0, m - 1}
    assert (0, 1) in certificate.violations and len(certificate.violations) == m * (m - 1)
    edges = certify_strategy(too_little_noise, PrivacyPairs.line(m, epsilon))  # the family: adjacent pairs only
    assert edges.margin == pytest.approx(1 - 1 / 0.9) and edges.violations == [(x, x + 1) for x in range(m - 1)]
    payload = certificate.to_dict()
    assert payload["verdict"] == "violated" and len(payload["tightest_pair"]) == 2
    generic = certify(too_little_noise, E)  # the foundation certify dispatches on a strategy
    assert generic.verdict == "violated" and generic.margin == certificate.margin
    assert certify(designed, E).certified and certify(designed, E).margin == pytest.approx(0.0, abs=1e-8)
    assert certify(designed, E, exact=True).certified  # Proposition 1 decided with no tolerance
    no_noise = Strategy(np.eye(3), IdentityWorkload(3), np.zeros(3))
    certificate = certify_strategy(no_noise, line_metric(3, 1.0))
    assert certificate.margin == -math.inf and not certificate.certified
    with pytest.raises(ValueError, match="infinite noise"):
        Strategy(np.eye(2), IdentityWorkload(2), [1.0, np.inf])


# ------------------------------------------------------------ Proposition 2 (error)
def test_error_formula_and_simulation():
    """Proposition 2 with the released noise: n sum_k V_k ||B_k||^2, V = 2 e^-rho / (1 - e^-rho)^2.

    At eps = 2 on the integer lattice the released error is 28% below the Laplace
    formula 2 n Trace(B^T B diag(s^2)), so the simulation tells the two apart.
    """
    m, epsilon, n = 5, 2.0, 200
    E = line_metric(m, epsilon)
    strategy = design_strategy(AllRangeWorkload(m), E, prefix_strategy(m))
    B, s = brute_force_reconstruction(prefix_strategy(m), all_range_workload(m)), strategy.noise_scales
    assert strategy.laplace_error(n) == pytest.approx(2 * n * np.trace(B.T @ B @ np.diag(s**2)))
    rates = np.array([float(rate) if rate is not None else np.inf for rate in strategy.noise.rates])
    variances = np.where(np.isfinite(rates), 2 * np.exp(-rates) / (1 - np.exp(-rates)) ** 2, 0.0)
    assert np.allclose(strategy.noise_variances(), variances, rtol=1e-12)
    assert strategy.error(n) == pytest.approx(n * np.trace(B.T @ B @ np.diag(variances)), rel=1e-12)
    ratio = (2 * math.exp(-epsilon) / (1 - math.exp(-epsilon)) ** 2) / (2 / epsilon**2)  # 0.724
    assert strategy.error(n) == pytest.approx(ratio * strategy.laplace_error(n), rel=1e-8)
    rng = np.random.default_rng(7)
    values = rng.integers(0, m, size=n)
    truth = all_range_workload(m) @ np.bincount(values, minlength=m)
    repetitions = 2000
    reports = strategy.respond(np.tile(values, repetitions), rng).reshape(repetitions, n, m)  # one bulk call
    answers = np.array([strategy.answer(block) for block in reports])
    errors = np.sum((answers - truth) ** 2, axis=1)
    standard_error = errors.std() / math.sqrt(repetitions)
    assert abs(errors.mean() - strategy.error(n)) < 5 * standard_error
    assert strategy.laplace_error(n) - errors.mean() > 10 * standard_error  # the old formula is wrong here
    spread = answers.std(axis=0) / math.sqrt(repetitions)
    assert np.all(np.abs(answers.mean(axis=0) - truth) < 5 * spread + 1e-9)  # unbiased
    assert laplace_error(np.zeros(2), [np.inf, 0.0], 10) == 0.0
    assert laplace_error(np.ones(2), [np.inf, 0.0], 10) == math.inf


def test_released_reports_are_lattice_points_with_the_stated_variances():
    """Empirical per-coordinate variance (fixed seed) against gamma^2 2 e^-rho / (1 - e^-rho)^2."""
    A = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.75, 1.5]])
    s = np.array([0.8, 0.25, 2.0])
    strategy = Strategy(A, IdentityWorkload(3), s)
    gammas = np.ldexp(1.0, strategy.noise.exponents)
    assert gammas.tolist() == [1.0, 0.5, 0.25]
    draws = 100_000
    reports = strategy.respond(np.full(draws, 1), np.random.default_rng(11))
    assert np.all(np.mod(reports, gammas) == 0)  # every released double is a lattice point
    expected = gammas**2 * np.array([2 * math.exp(-r) / (1 - math.exp(-r)) ** 2 for r in (1.25, 2.0, 0.125)])
    assert np.allclose(strategy.noise_variances(), expected, rtol=1e-8)  # rates gamma/s are exact here
    assert np.allclose(reports.var(axis=0), expected, rtol=0.03)  # about 5 standard errors
    assert np.allclose(reports.mean(axis=0), A[:, 1], atol=5 * np.sqrt(expected / draws))
    integers = strategy.respond_lattice(np.array([0, 2]))  # default: the cryptographic generator
    assert integers.dtype == np.int64 and integers.shape == (2, 3)


# ------------------------------------------------------------ over-complete strategies
def test_alternating_method_never_worse_than_start():
    m, epsilon = 12, 1.0
    E = line_metric(m, epsilon)
    W = all_range_workload(m)
    A = np.vstack([np.eye(m), prefix_strategy(m)])
    result = design_overcomplete(AllRangeWorkload(m), E, A)
    history = result.history
    assert all(later < earlier for earlier, later in zip(history, history[1:]))
    assert history[-1] < 0.5 * history[0]
    final = result.strategy
    # rows the alternation all but switched off (s ~ 1e11) make the reference ill-conditioned: compare with them unused
    scales = np.where(final.noise_scales > 1e6, np.inf, final.noise_scales)
    B = brute_force_reconstruction(A, W, scales)
    noisy = scales > 0  # B is unique on the rows with noise (s = 0 rows are free)
    costs = Strategy(final.strategy_matrix, final.workload, scales).costs
    assert np.allclose(B @ A, W) and np.allclose(costs[noisy], np.sum(B**2, axis=0)[noisy], rtol=1e-9)
    assert final.laplace_error(1) == pytest.approx(2 * np.sum(final.noise_scales**2 * final.costs, where=np.isfinite(final.noise_scales)))
    assert certify_strategy(final, E).certified
    assert final.laplace_error(1) == pytest.approx(history[-1])
    assert final.error(1) < final.laplace_error(1)
    # started at the prefix optimum (identity rows unused) it cannot get worse than 2 m (m - 1) / eps^2
    start = np.concatenate([np.full(m, np.inf), np.full(m - 1, 1 / epsilon), [0.0]])
    warm = design_overcomplete(AllRangeWorkload(m), E, A, start_scales=start)
    assert warm.history[0] == pytest.approx(2 * m * (m - 1) / epsilon**2)
    assert warm.history[-1] <= warm.history[0]


def test_weighted_reconstruction_matches_closed_forms():
    """Costs ||B[:, k]||^2 and the answer B y from the Gram matrix match B written out (generalised least squares)."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(7, 4))
    s = rng.uniform(0.5, 2, size=7)
    W = rng.normal(size=(3, 4))
    matrix = DenseStrategyMatrix(A)
    B = brute_force_reconstruction(matrix.matrix, W, s)
    assert np.allclose(matrix.costs(MatrixWorkload(W), s), np.sum(B**2, axis=0))
    y = rng.normal(size=7)
    assert np.allclose(W @ matrix.estimate(y, s), B @ y)
    square = rng.normal(size=(4, 4))
    B_square = brute_force_reconstruction(DenseStrategyMatrix(square).matrix, W)
    assert np.allclose(DenseStrategyMatrix(square).costs(MatrixWorkload(W)), np.sum(B_square**2, axis=0))
    with pytest.raises(ValueError, match="row space"):
        DenseStrategyMatrix(np.vstack([np.eye(4)[:2]] * 3)).costs(MatrixWorkload(W), np.ones(6))
    with pytest.raises(ValueError, match="singular"):
        DenseStrategyMatrix(np.zeros((4, 4))).costs(MatrixWorkload(W))


def test_uniform_start_is_feasible_and_tight():
    E = line_metric(8, 0.7)
    A = np.vstack([np.eye(8), prefix_strategy(8)])
    scales = uniform_noise_scales(A, E)
    strategy = Strategy(A, IdentityWorkload(8), scales)
    certificate = certify_strategy(strategy, E)
    assert certificate.certified and 0 <= certificate.margin <= 1e-9  # tight up to the 32-bit rate rounding


def test_zero_level_pair_that_must_be_separated_is_an_error():
    E = PrivacyMatrix([[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="E = 0"):
        optimal_noise_scales(np.eye(2), np.ones(2), E)


# ------------------------------------------------------------ CLI
def test_cli_strategy_prefix(tmp_path):
    m, epsilon = 8, 1.0
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, line_metric(m, epsilon).epsilon, delimiter=",")
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["strategy", "--workload", "all-range", "--E", str(e_file), "--out", str(out), "--n", "100"])
    assert result.exit_code == 0, result.output
    assert "CERTIFIED" in result.stdout
    payload = json.loads(out.read_text())
    assert payload["laplace_total_error"] == pytest.approx(2 * 100 * m * (m - 1), rel=1e-6)
    assert payload["total_error"] == pytest.approx(100 * m * (m - 1) * 2 * math.exp(-1) / (1 - math.exp(-1)) ** 2, rel=1e-6)
    assert payload["noise"]["lattice_exponents"] == [0] * m and payload["noise"]["rates"][0] == "1"
    assert payload["noise_scales"][-1] == 0.0 and payload["noise_scales"][0] == pytest.approx(1.0, rel=1e-6)
    assert payload["certificate"]["verdict"] == "certified"


def test_cli_strategy_workload_file_overcomplete_and_errors(tmp_path):
    m = 4
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, line_metric(m, 1.0).epsilon, delimiter=",")
    w_file = tmp_path / "W.csv"
    np.savetxt(w_file, np.tril(np.ones((m, m)))[1:], delimiter=",")
    a_file = tmp_path / "A.csv"
    np.savetxt(a_file, np.vstack([np.eye(m), prefix_strategy(m)]), delimiter=",")
    out = tmp_path / "s.json"
    result = runner.invoke(
        app, ["strategy", "--workload", str(w_file), "--strategy", str(a_file), "--E", str(e_file), "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["p"] == 2 * m and payload["q"] == m - 1
    assert payload["alternating_history"][-1] <= payload["alternating_history"][0]
    bad = tmp_path / "bad.csv"
    bad.write_text("1,0,0,0\n0,x,0,0\n")
    out2 = tmp_path / "never.json"
    failed = runner.invoke(app, ["strategy", "--workload", str(bad), "--E", str(e_file), "--out", str(out2)])
    assert failed.exit_code == 2
    assert "row 2, column 2" in failed.stderr and "Traceback" not in failed.output
    assert not out2.exists()
    wrong = runner.invoke(app, ["strategy", "--workload", "prefix", "--strategy", str(w_file), "--E", str(e_file), "--out", str(out2)])
    assert wrong.exit_code == 2 and "at least m = 4 rows" in wrong.stderr


def test_overcomplete_rejects_a_start_that_is_not_private_and_respond_validates():
    m = 4
    E = line_metric(m, 1.0)
    A = np.vstack([np.eye(m), prefix_strategy(m)])
    with pytest.raises(ValueError, match="not E-LDP"):
        design_overcomplete(identity_workload(m), E, A, start_scales=np.full(2 * m, 0.1))
    strategy = design_strategy(identity_workload(m), E, np.eye(m))
    with pytest.raises(ValueError, match="integers in 0..3"):
        strategy.respond(np.array([0, 4]), np.random.default_rng(0))


def test_certify_strategy_exact_mode_allows_no_tolerance():
    """certify(strategy, E, exact=True) decides Proposition 1 with tolerance 0; float mode keeps its slack."""
    from designer import certify

    epsilon = PrivacyMatrix.metric(np.abs(np.subtract.outer(np.arange(8), np.arange(8))), 0.5)
    strategy = design_strategy(PrefixWorkload(8), epsilon, prefix_strategy(8))
    assert certify(strategy, epsilon, exact=True).verdict == "certified"
    # shrink E by 1e-12 (relative): inside the float tolerance 1e-9, but a violation exactly
    tighter = PrivacyMatrix(epsilon.epsilon * (1 - 1e-12))
    assert certify(strategy, tighter, exact=True).verdict == "violated"
    assert certify(strategy, tighter).verdict == "certified"
