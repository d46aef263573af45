"""Robust certifier for (eps, F)-RLDP: solver bounds, soundness, witnesses, verdicts."""

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize

from designer.robust.certify import certify_robust, conditional_ratio
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import polyopt
from designer.robust.protocols import PROTOCOLS, grr
from solvers.chi2ball import ball_function, maximise_over_ball, maximise_over_two_balls
from robust_samples import sample_confidence


def cvxpy_ball_maximum(c, w, beta):
    """The same convex program written in CVXPY (solved by Clarabel): an independent method."""
    r = cp.Variable(len(c), nonneg=True)
    terms = [cp.quad_over_lin(w[u], r[u]) for u in np.flatnonzero(w > 0)]  # second-order cones
    constraints = [cp.sum(r) == 1, cp.sum(cp.hstack(terms)) <= beta]
    problem = cp.Problem(cp.Maximize(c @ r), constraints)
    problem.solve(solver="CLARABEL")
    return problem.value


@pytest.mark.parametrize("seed", range(8))
def test_ball_bound_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 6))
    w = rng.dirichlet(np.full(m, 0.7))
    if seed % 3 == 0:
        w[0] = 0.0
        w /= w.sum()
    c = rng.normal(size=m)
    beta = 1 + rng.uniform(0.01, 2.0)
    result = maximise_over_ball(c, w, beta)
    reference = cvxpy_ball_maximum(c, w, beta)
    # the dual value bounds the maximum, the primal point is feasible, and the gap is tiny
    assert ball_function(w, result.point) <= beta * (1 + 1e-12)
    assert result.point.sum() == pytest.approx(1.0)
    assert result.value <= result.upper_bound
    assert result.upper_bound - result.value < 1e-9
    assert result.upper_bound == pytest.approx(reference, abs=1e-7)  # Clarabel's accuracy


def test_ball_bound_is_valid_for_random_points():
    rng = np.random.default_rng(11)
    w = np.array([0.5, 0.3, 0.2, 0.0])
    c = np.array([0.3, -1.0, 2.0, 0.5])
    beta = 1.4
    bound = maximise_over_ball(c, w, beta).upper_bound
    hits = 0
    for _ in range(3000):
        r = rng.dirichlet(np.ones(4) * 0.5)
        if ball_function(w, r) <= beta:
            hits += 1
            assert c @ r <= bound
    assert hits > 100


def test_h_is_convex():
    # h(r) = sqrt(sum w^2 / r): midpoint convexity on random pairs (used by the two-ball search)
    rng = np.random.default_rng(4)
    w = rng.dirichlet(np.ones(4))
    for _ in range(500):
        a, b = rng.dirichlet(np.ones(4), size=2)
        h = lambda r: np.sqrt(ball_function(w, r))  # noqa: E731
        assert h((a + b) / 2) <= (h(a) + h(b)) / 2 + 1e-12


def brute_force_max_difference(matrix, confidence, epsilon, y, s1, s2, starts=4, seed=0):
    """max_{P in F} P(y|s1) - e^eps P(y|s2) by SLSQP over P directly (multi-start): a second method."""
    rng = np.random.default_rng(seed)
    a1, a2 = confidence.shape
    column = matrix[:, y].reshape(a1, a2) / matrix[:, y].max()
    limit = confidence.radius + 1

    def objective(p):
        p = p.reshape(a1, a2)
        return -(column[s1] @ p[s1] / p[s1].sum() - np.exp(epsilon) * column[s2] @ p[s2] / p[s2].sum())

    constraints = [{"type": "eq", "fun": lambda p: p.sum() - 1},
                   {"type": "ineq", "fun": lambda p: limit - np.sum(confidence.prior ** 2 / np.maximum(p, 1e-12))}]
    best = -np.inf
    for _ in range(starts):
        start = 0.8 * confidence.prior + 0.2 * rng.dirichlet(np.ones(a1 * a2))
        start = 0.97 * confidence.prior + 0.03 * start
        result = minimize(objective, start, method="SLSQP", bounds=[(1e-12, 1)] * (a1 * a2),
                          constraints=constraints, options={"maxiter": 500, "ftol": 1e-12})
        if result.success and confidence.contains(result.x / result.x.sum(), tolerance=1e-9):
            best = max(best, -result.fun)
    return best


@pytest.fixture(scope="module")
def small_case():
    rng = np.random.default_rng(3)
    counts = rng.multinomial(200, rng.dirichlet(np.ones(6))).reshape(2, 3)
    confidence = ConfidenceSet(counts, 0.05)
    matrix = rng.dirichlet(np.ones(3) * 2, size=6)
    return confidence, matrix


@pytest.fixture(scope="module")
def critical(small_case):
    """The smallest certified epsilon, by bisection on the verdict."""
    confidence, matrix = small_case
    lo, hi = 0.0, 4.0
    for _ in range(20):
        middle = (lo + hi) / 2
        if certify_robust(matrix, confidence, middle).verdict == "certified":
            hi = middle
        else:
            lo = middle
    return lo, hi


def test_certifier_threshold_matches_brute_force(small_case, critical):
    confidence, matrix = small_case
    lo, hi = critical
    # the largest log-ratio over F by a generic optimiser (worst output/pair), independently
    best = 0.0
    for y in range(matrix.shape[1]):
        for s1, s2 in [(0, 1), (1, 0)]:
            def negative_log_ratio(p):
                p = p.reshape(2, 3)
                return -np.log(conditional_ratio(matrix, p, y, s1, s2))
            rng = np.random.default_rng(y)
            for _ in range(4):
                start = 0.95 * confidence.prior + 0.05 * rng.dirichlet(np.ones(6))
                result = minimize(negative_log_ratio, start, method="SLSQP", bounds=[(1e-12, 1)] * 6,
                                  constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1},
                                               {"type": "ineq", "fun": lambda p: confidence.radius + 1
                                                - np.sum(confidence.prior ** 2 / np.maximum(p, 1e-12))}],
                                  options={"maxiter": 500, "ftol": 1e-14})
                if confidence.contains(result.x / result.x.sum(), tolerance=1e-9):
                    best = max(best, -result.fun)
    assert hi - lo < 1e-5
    assert best == pytest.approx(hi, abs=1e-5)


def test_branch_and_bound_proves_what_the_decoupled_bound_cannot(small_case, critical):
    confidence, matrix = small_case
    _, hi = critical
    certificate = certify_robust(matrix, confidence, hi + 0.01)
    assert certificate.verdict == "certified"
    assert certificate.n_branched >= 1  # the product of the projected balls was not enough
    # the same triple with no branching budget stays open
    assert certify_robust(matrix, confidence, hi + 0.01, max_intervals=1).verdict == "inconclusive"


def test_violation_witness_checks_out(small_case, critical):
    confidence, matrix = small_case
    lo, _ = critical
    certificate = certify_robust(matrix, confidence, lo - 0.01)
    assert certificate.verdict == "violated"
    witness = certificate.witness
    p = witness.distribution
    assert p.sum() == pytest.approx(1.0) and np.all(p >= 0)
    assert confidence.contains(p)
    assert confidence.chi_square(p) == pytest.approx(witness.chi_square)
    # recompute (2) from scratch
    column = matrix[:, witness.y].reshape(2, 3)
    ratio = (column[witness.s] @ p[witness.s] / p[witness.s].sum()) / (column[witness.s_prime] @ p[witness.s_prime] / p[witness.s_prime].sum())
    assert ratio == pytest.approx(witness.ratio)
    assert ratio > np.exp(lo - 0.01)


def test_two_ball_value_matches_brute_force(small_case):
    confidence, matrix = small_case
    eps = 0.4
    w, p = confidence.conditional_estimate, confidence.secret_marginal
    for y in range(3):
        for s1, s2 in [(0, 1), (1, 0)]:
            column = matrix[:, y].reshape(2, 3) / matrix[:, y].max()
            result = maximise_over_two_balls(column[s1], w[s1], p[s1], -np.exp(eps) * column[s2], w[s2], p[s2],
                                             np.sqrt(confidence.radius + 1) - 1 + p[s1] + p[s2], target=np.inf)
            assert result.upper_bound >= brute_force_max_difference(matrix, confidence, eps, y, s1, s2) - 1e-9


@pytest.mark.parametrize("seed,shape", [(1, (3, 3)), (7, (2, 4)), (9, (4, 3))])
@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
def test_every_protocol_is_certified(seed, shape, eps):
    confidence = sample_confidence(seed, shape)
    for name, build in PROTOCOLS.items():
        certificate = certify_robust(build(confidence, eps).channel, confidence, eps)
        assert certificate.verdict == "certified", (name, certificate)


def test_certified_protocols_survive_sampled_distributions():
    confidence = sample_confidence(1)
    rng = np.random.default_rng(0)
    samples = []
    while len(samples) < 300:  # points of F: random directions from P̂, scaled into F
        p = 0.9 * confidence.prior + 0.1 * rng.dirichlet(np.ones(9) * 0.3)
        if confidence.contains(p):
            samples.append(p.reshape(3, 3))
    eps = 1.0
    for build in PROTOCOLS.values():
        matrix = build(confidence, eps).channel.matrix
        worst = max(conditional_ratio(matrix, p, y, s1, s2)
                    for p in samples[:60] for y in range(matrix.shape[1]) for s1 in range(3) for s2 in range(3) if s1 != s2)
        assert worst <= np.exp(eps)


@pytest.mark.parametrize("seed", [1, 3])
def test_polyopt_is_certified(seed):
    # Theorem 11: columns in the cone (44) are (eps, F)-RLDP. Many PolyOpt columns make (2) an
    # equality for every P (both rows constant in u), so the bound is ~1e-13: within the tolerance.
    # Three secrets with two public values: 6 x 6 channels, every bound ~1e-13 (the exact cone
    # enumeration of a 3 x 3 set takes 1.5 s a design; test_robust_polyopt samples F for 3 x 3 designs).
    confidence = sample_confidence(seed, (3, 2))
    for eps in (0.2, 1.0, 4.0):
        certificate = certify_robust(polyopt(confidence, eps).channel, confidence, eps)
        assert certificate.verdict == "certified", certificate
        assert certificate.worst_bound < 1e-11


@pytest.mark.parametrize("seed", [1, 2])
def test_grr_with_too_large_epsilon_is_violated(seed):
    confidence = sample_confidence(seed)
    certificate = certify_robust(grr(confidence, 2.0).channel, confidence, 1.0)
    assert certificate.verdict == "violated"
    witness = certificate.witness
    assert confidence.contains(witness.distribution)
    matrix = grr(confidence, 2.0).channel.matrix
    assert conditional_ratio(matrix, witness.distribution, witness.y, witness.s, witness.s_prime) > np.e
    payload = certificate.to_dict()
    assert payload["witness"]["log_ratio"] > 1 and len(payload["witness"]["P"]) == 9


def test_certifier_rejects_wrong_shape():
    confidence = sample_confidence(1)
    with pytest.raises(ValueError, match="rows"):
        certify_robust(np.full((4, 2), 0.5), confidence, 1.0)
