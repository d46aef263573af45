"""PolyOpt (robust-ldp-chi-square.md, Section V: cone (44), Theorems 11–12, eqs. 45–47).

Checks: the cone rows against a literal transcription of (44); Theorem 11 (every
PolyOpt channel satisfies (2) at points of F, including the extreme ones of
Lemmas 8–9); Theorem 12 (the LP optimum is certified by its dual over every
vertex, matches a second LP back end, dominates SRR and GRR which lie in Γ, and
column generation reaches it on a case it can); mu2 of (46) against brute force
over the vertices of the Lemma 9 polytope; L below I_P(Q2) for P in F.
Tolerances: 1e-12 for closed forms, 1e-9 for LP optima (HiGHS tolerances 1e-10).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from designer.robust import ConfidenceSet
from designer.robust.polyopt import (
    cone_inequalities,
    cone_vertices,
    cone_violation,
    outer_cone_inequalities,
    polyopt,
    robust_column_information,
    robust_lower_bound,
)
from designer.utility import column_information, mutual_information
from solvers.linear import solve_vertex_lp

COUNTS_33 = np.array([[120, 35, 60], [40, 210, 25], [95, 30, 385]])
COUNTS_22 = np.array([[30, 10], [20, 40]])
COUNTS_EPS8 = np.array([[71, 0, 145], [59, 55, 153], [203, 105, 209]])  # float cdd loses vertices at eps = 8


_DESIGNS: dict = {}


def enumerated(counts, epsilon):
    """``(F, polyopt by exact enumeration)``, computed once per (counts, eps) in this module."""
    key = (np.asarray(counts).tobytes(), epsilon)
    if key not in _DESIGNS:
        F = ConfidenceSet(counts, 0.05)
        _DESIGNS[key] = (F, polyopt(F, epsilon, method="enumeration"))
    return _DESIGNS[key]


@pytest.fixture(scope="module")
def enumerated_33():
    return enumerated(COUNTS_33, 1.0)


def points_of_F(F: ConfidenceSet, rng, count=60):
    """Extreme distributions of Lemmas 8–9 and random points of F."""
    points = []
    a1, a2 = F.shape
    for s, u in itertools.product(range(a1), range(a2)):
        for upper in (False, True):
            points.append(F.extreme_distribution(s, u, upper=upper, conditional=True))
            points.append(F.extreme_distribution(s, u, upper=upper))
    for _ in range(count):
        z = rng.dirichlet(np.full(F.prior.size, 0.5))
        t = 1.0
        while F.chi_square(F.prior + t * (z - F.prior)) > F.radius:
            t *= 0.8
        points.append((F.prior + t * (z - F.prior)).reshape(F.shape))
    return points


def secret_randomised_response(a1, a2, epsilon):
    """Definition 5 (eq. 18), written out."""
    e = np.exp(epsilon)
    denominator = e + (a2 - 1) / e + a1 * a2 - a2
    q = np.empty((a1 * a2, a1 * a2))
    for (s, u), (s2, u2) in itertools.product(itertools.product(range(a1), range(a2)), repeat=2):
        q[s * a2 + u, s2 * a2 + u2] = (e if (s, u) == (s2, u2) else 1 / e if s == s2 else 1.0) / denominator
    return q


def test_cone_rows_transcribe_eq_44():
    F = ConfidenceSet(COUNTS_33, 0.05)
    epsilon = 0.7
    rows = cone_inequalities(F, epsilon)
    assert rows.shape == (3 * 2 * 9 + 9, 9)  # 63 rows, as counted in the issue
    assert cone_inequalities(ConfidenceSet(np.ones((3, 4), int) * 5, 0.05), 1.0).shape[0] == 108
    m = F.conditional_bounds()[0]
    e = np.exp(epsilon)
    T = np.random.default_rng(0).random((3, 3))
    expected = []
    for s1, s2 in itertools.permutations(range(3), 2):
        for u1, u2 in itertools.product(range(3), repeat=2):
            lhs = (T[s1, u1] - e * T[s2, u2] + sum(m[s1, u] * (T[s1, u] - T[s1, u1]) for u in range(3))
                   - e * sum(m[s2, u] * (T[s2, u] - T[s2, u2]) for u in range(3)))
            expected.append(-lhs)
    np.testing.assert_allclose(rows[:-9] @ T.ravel(), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(rows[-9:], np.eye(9))


@pytest.mark.parametrize("counts, epsilon", [(COUNTS_22, 0.5), (COUNTS_33, 1.0), (COUNTS_33, 3.0)])
def test_theorem11_polyopt_channel_is_robustly_private(counts, epsilon):
    F, result = enumerated(counts, epsilon)
    Q = result.channel.matrix
    assert result.channel.input_labels == F.input_labels
    assert cone_violation(F, epsilon, Q.T) <= 1e-12
    worst = 0.0
    for P in points_of_F(F, np.random.default_rng(1)):
        conditional = P / P.sum(axis=1, keepdims=True)
        given_secret = np.einsum("su,suy->sy", conditional, Q.reshape(F.shape + (Q.shape[1],)))
        ratio = given_secret[:, None, :] / given_secret[None, :, :]
        worst = max(worst, float(np.log(ratio.max())))
    assert worst <= epsilon + 1e-9


@pytest.mark.parametrize("counts, epsilon", [(COUNTS_22, 0.5), (COUNTS_33, 1.0), (COUNTS_33, 3.0)])
def test_theorem12_optimum_is_certified_and_dominates_srr_and_grr(counts, epsilon):
    F, result = enumerated(counts, epsilon)
    assert result.optimal and result.params["vertices"] == result.columns.shape[0]
    assert result.upper_bound - result.utility <= 1e-9
    assert result.utility == pytest.approx(mutual_information(F.prior, result.channel), abs=1e-12)
    assert result.channel.n_outputs <= F.prior.size  # Theorem 12: |Y| <= |X|
    # a second LP back end over the same vertices
    values = column_information(F.prior, result.columns.T)
    other = solve_vertex_lp(result.columns, values, np.ones(F.prior.size), backend="cvxpy")
    assert other.objective == pytest.approx(result.utility, abs=1e-7)
    # SRR (Definition 5) and GRR have all columns in Γ, so PolyOpt is at least as good
    a1, a2 = F.shape
    srr = secret_randomised_response(a1, a2, epsilon)
    assert cone_violation(F, epsilon, srr.T) <= 1e-12
    e, k = np.exp(epsilon), a1 * a2
    grr = (np.full((k, k), 1.0) + (e - 1) * np.eye(k)) / (e + k - 1)
    assert result.utility >= mutual_information(F.prior, srr) - 1e-12
    assert result.utility >= mutual_information(F.prior, grr) - 1e-12
    assert result.normalised_utility == pytest.approx(result.utility / -np.sum(F.prior * np.log(F.prior)))


def test_column_generation_reaches_the_enumerated_optimum_and_says_what_it_proved(enumerated_33):
    F, exact = enumerated_33
    generated = polyopt(F, 1.0, method="column-generation")
    assert not generated.optimal and generated.upper_bound is None and generated.params["vertices"] is None
    assert generated.utility <= exact.utility + 1e-9
    assert generated.utility == pytest.approx(exact.utility, abs=1e-9)
    assert generated.params["columns"] < exact.params["vertices"]
    assert cone_violation(F, 1.0, generated.channel.matrix.T) <= 1e-12
    verified = polyopt(F, 1.0, method="column-generation", verify=True)
    assert verified.upper_bound >= exact.utility - 1e-12  # a valid bound on the proved optimum
    assert verified.optimal and verified.upper_bound - verified.utility <= 1e-8


def test_outer_rational_cone_contains_the_cone(enumerated_33):
    F, result = enumerated_33
    outer = outer_cone_inequalities(F, 1.0)
    assert all(isinstance(value, Fraction) and 2**80 % value.denominator == 0 for value in outer.ravel())
    assert np.min(result.columns @ outer.astype(float).T) >= -1e-12  # every vertex of Γ̂ satisfies Γ''
    coarse = outer_cone_inequalities(F, 1.0, denominator=64).astype(float)
    assert np.min(result.columns @ coarse.T) >= -1e-12
    # each coefficient moves by at most (1 + e^eps) |U| / 64 (P^min and e^eps rounded up by < 1/64)
    assert np.max(np.abs(coarse - cone_inequalities(F, 1.0))) <= (1 + np.e + 1 / 64) * 3 / 64


def test_vertices_lie_in_the_cone_and_sum_to_one(enumerated_33):
    F, result = enumerated_33
    vertices = result.columns
    np.testing.assert_allclose(vertices.sum(axis=1), 1.0, atol=1e-12)
    assert cone_violation(F, 1.0, np.maximum(vertices, 0)) <= 1e-12
    # the uniform point and SRR's columns are in Γ̂ but are not vertices of it
    assert not np.any(np.all(np.abs(vertices - 1 / 9) < 1e-9, axis=1))


def brute_force_mu2(F: ConfidenceSet, v: np.ndarray) -> float:
    """min over the vertices of {lower <= P <= upper, sum P = 1}: all but one coordinate at a bound."""
    lower, upper = (b.ravel() for b in F.probability_bounds())
    k = v.size
    best = np.inf
    for free in range(k):
        others = [i for i in range(k) if i != free]
        for choice in itertools.product((0, 1), repeat=k - 1):
            P = np.empty(k)
            P[others] = np.where(np.array(choice) == 1, upper[others], lower[others])
            P[free] = 1 - P[others].sum()
            if lower[free] - 1e-15 <= P[free] <= upper[free] + 1e-15:
                best = min(best, float(column_information(np.clip(P, 0, None) / np.clip(P, 0, None).sum(), v)))
    return best


def test_mu2_matches_brute_force_over_the_lemma9_polytope():
    F = ConfidenceSet(COUNTS_22, 0.05)
    vertices = cone_vertices(F, 1.0)
    fast = robust_column_information(F, vertices)
    slow = np.array([brute_force_mu2(F, v) for v in vertices])
    np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-13)
    assert np.all(fast <= column_information(F.prior, vertices.T) + 1e-15)  # P̂ is in the polytope


def test_robust_lower_bound_holds_over_F(enumerated_33):
    F, exact = enumerated_33
    result = robust_lower_bound(F, 1.0, exact.columns)
    Q2 = result.channel.matrix
    assert cone_violation(F, 1.0, Q2.T) <= 1e-12
    assert result.bound > 0
    for P in points_of_F(F, np.random.default_rng(5), count=40):
        assert mutual_information(P.ravel() / P.sum(), Q2) >= result.bound - 1e-12
    assert mutual_information(F.prior, Q2) <= exact.utility + 1e-12


def test_exact_enumeration_where_floating_point_cdd_loses_vertices():
    F = ConfidenceSet(COUNTS_EPS8, 0.05)
    exact = cone_vertices(F, 8.0)
    floating = cone_vertices(F, 8.0, exact=False)
    assert floating.shape[0] < exact.shape[0]  # 288 against 1,416 when measured
    result = polyopt(F, 8.0, method="enumeration")
    assert result.optimal and result.params["exact_vertices"]
    assert result.upper_bound - result.utility <= 1e-9
    quick = polyopt(F, 8.0, method="enumeration", exact=False)  # LP infeasible on the float list: exact rerun
    assert quick.utility == pytest.approx(result.utility, abs=1e-12) and quick.params["exact_vertices"]


def test_bad_parameters():
    F = ConfidenceSet(COUNTS_22, 0.05)
    with pytest.raises(ValueError, match="epsilon must be positive"):
        polyopt(F, 0.0)
    with pytest.raises(ValueError, match="unknown PolyOpt method"):
        polyopt(F, 1.0, method="simplex")


def test_generic_column_generation_on_the_staircase_cone():
    """solvers.column_generation on {q >= 0 : q_i <= r q_j}, whose 2^d - 2 vertices are known in closed form."""
    from solvers.column_generation import column_generation, max_reduced_cost
    from solvers.vertices import uniform_ratio_cone_rays

    d, ratio = 5, np.exp(1.2)
    prior = np.array([0.4, 0.25, 0.2, 0.1, 0.05])
    rows = np.array([np.eye(d)[j] * ratio - np.eye(d)[i] for i in range(d) for j in range(d) if i != j])
    result = column_generation(
        rows, lambda q: column_information(prior, q.T), lambda q: prior * np.log(q / (prior @ q)), np.ones(d),
        initial_columns=np.full((1, d), 1 / d),
    )
    vertices = uniform_ratio_cone_rays(d, ratio)
    values = column_information(prior, vertices.T)
    exact = solve_vertex_lp(vertices, values, np.ones(d))
    assert result.converged and result.objective == pytest.approx(exact.objective, abs=1e-10)
    assert max_reduced_cost(vertices, values, result.duals) <= 1e-9  # here the dual is proved feasible
    assert np.all(rows @ result.columns.T >= -1e-12)
