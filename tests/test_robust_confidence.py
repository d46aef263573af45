"""The χ² confidence set F (robust-ldp-chi-square.md, eq. 3, Lemmas 8–9, Proposition 10, eq. 65).

Every bound is checked twice: points sampled from F (inside and on the boundary)
must respect it, and a point of F must attain it (tight bounds), or an
independent convex solver (cvxpy) must find the same optimum. Tolerances: the
closed forms are float64 expressions, compared at 1e-12 relative; cvxpy
(Clarabel, interior point) at 1e-6.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from designer.io import InputError
from designer.robust import ConfidenceSet

COUNTS = np.array([[31, 7, 12], [5, 22, 0], [9, 3, 11]])  # a zero cell on purpose


def sample_points(F: ConfidenceSet, rng, count=400):
    """Points of F: P̂ + t (Z - P̂) for Dirichlet Z, with t uniform up to the boundary, and the boundary."""
    centre = F.prior
    points = []
    for _ in range(count):
        z = rng.dirichlet(np.full(centre.size, 0.3))
        lo, hi = 0.0, 1.0
        if F.chi_square(centre + (z - centre)) <= F.radius:
            t_max = 1.0
        else:  # chi-square is convex along the segment and 0 at t = 0: bisection for the crossing
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if F.chi_square(centre + mid * (z - centre)) <= F.radius else (lo, mid)
            t_max = lo
        for t in (t_max, rng.uniform(0, t_max)):
            points.append((centre + t * (z - centre)).reshape(F.shape))
    return points


@pytest.fixture(params=[(COUNTS, 0.05), (COUNTS, 0.001), (np.array([[1, 2], [1, 0]]), 0.05)], ids=["n100", "alpha0.001", "tiny-n"])
def confidence_set(request):
    counts, alpha = request.param
    return ConfidenceSet(counts, alpha)


def test_radius_is_the_chi_square_quantile_over_n():
    F = ConfidenceSet([[30, 10], [20, 40]], 0.05)
    assert F.radius == pytest.approx(7.814727903251178 / 100, rel=1e-12)  # chi2(3) 95% quantile
    G = ConfidenceSet(COUNTS, 0.001)
    assert G.radius == pytest.approx(chi2.ppf(0.999, 8) / COUNTS.sum(), rel=1e-12)


def test_labels_are_sorted_as_strings_and_counts_follow():
    F = ConfidenceSet([[1, 2, 3], [4, 5, 6]], 0.1, secret_labels=["yes", "no"], public_labels=["10", "9", "a"])
    assert F.secret_labels == ("no", "yes")
    assert F.public_labels == ("10", "9", "a")
    np.testing.assert_array_equal(F.counts, [[4, 5, 6], [1, 2, 3]])
    assert F.inputs[1] == ("no", "9") and F.input_labels[3] == "yes|10"
    np.testing.assert_allclose(F.prior, np.array([4, 5, 6, 1, 2, 3]) / 21)
    default = ConfidenceSet(np.ones((11, 1)), 0.1)
    assert default.secret_labels[:3] == ("00", "01", "02") and default.secret_labels[-1] == "10"


def test_records_dataframe_and_csv_give_the_same_set(tmp_path):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"sex": rng.choice(["m", "f"], 300), "age": rng.choice([20, 30, 40], 300), "other": 1})
    F = ConfidenceSet.from_records(frame, secret="sex", public="age", alpha=0.05)
    assert F.secret_labels == ("f", "m") and F.public_labels == ("20", "30", "40") and F.n == 300
    expected = pd.crosstab(frame["sex"], frame["age"]).to_numpy()
    np.testing.assert_array_equal(F.counts, expected)
    path = tmp_path / "records.csv"
    frame.to_csv(path, index=False)
    G = ConfidenceSet.from_csv(path, secret="sex", public="age", alpha=0.05)
    np.testing.assert_array_equal(G.counts, F.counts)
    assert G.inputs == F.inputs and G.radius == F.radius
    H = ConfidenceSet.from_records({"s": ["b", "a", "a"], "u": ["x", "x", "y"]}, "s", "u", 0.05)
    np.testing.assert_array_equal(H.counts, [[1, 1], [1, 0]])


def test_bad_inputs_have_clear_messages(tmp_path):
    with pytest.raises(ValueError, match="secret value '1' has no record"):
        ConfidenceSet([[1, 2], [0, 0]], 0.05)
    with pytest.raises(ValueError, match="alpha"):
        ConfidenceSet([[1, 2], [3, 4]], 1.0)
    with pytest.raises(ValueError, match="non-negative integers"):
        ConfidenceSet([[1, 2.5], [3, 4]], 0.05)
    with pytest.raises(ValueError, match="duplicate secret"):
        ConfidenceSet([[1, 2], [3, 4]], 0.05, secret_labels=["a", "a"])
    frame = pd.DataFrame({"s": ["a", None], "u": ["x", "y"]})
    with pytest.raises(ValueError, match="column 's': missing value in row 1"):
        ConfidenceSet.from_records(frame, "s", "u", 0.05)
    with pytest.raises(ValueError, match="secret column 'zz' not found; columns are s, u"):
        ConfidenceSet.from_records(frame, "zz", "u", 0.05)
    path = tmp_path / "r.csv"
    path.write_text("s,u\na,x\nb,\n")
    with pytest.raises(InputError, match=r"r.csv: data row 2 \(after the header\), column 'u': empty value"):
        ConfidenceSet.from_csv(path, "s", "u", 0.05)
    with pytest.raises(InputError, match="public column 'v' not in the header"):
        ConfidenceSet.from_csv(path, "s", "v", 0.05)
    path.write_text("s,u\n")
    with pytest.raises(InputError, match="no data rows"):
        ConfidenceSet.from_csv(path, "s", "u", 0.05)


def test_sampled_points_respect_every_bound(confidence_set):
    F = confidence_set
    rng = np.random.default_rng(7)
    low, high = F.probability_bounds()
    c_low, c_high = F.conditional_bounds()
    centre = F.conditional_estimate
    sqrt_b1 = np.sqrt(F.radius + 1)
    for P in sample_points(F, rng):
        assert F.contains(P, tolerance=1e-12)
        assert np.all(P >= low - 1e-12) and np.all(P <= high + 1e-12)
        conditional = P / P.sum(axis=1, keepdims=True)
        assert np.all(conditional >= c_low - 1e-12) and np.all(conditional <= c_high + 1e-12)
        assert np.abs(P - F.estimate).sum() <= F.l1_radius + 1e-12
        assert np.all(np.abs(conditional - centre).sum(axis=1) <= F.conditional_l1_radius + 1e-12)
        # Lemma 8: each conditional lies in the ball of radius B_s
        support = centre > 0
        chi = np.where(support, (centre - conditional) ** 2 / np.where(support, conditional, 1), conditional).sum(axis=1)
        assert np.all(chi <= F.conditional_radius + 1e-10)
        assert F.conditional_statistic(conditional) <= sqrt_b1 * (1 + 1e-12)


def test_lemma9_bounds_are_attained(confidence_set):
    F = confidence_set
    a1, a2 = F.shape
    for kind, conditional in (("joint", False), ("conditional", True)):
        low, high = F.conditional_bounds() if conditional else F.probability_bounds()
        for s in range(a1):
            for u in range(a2):
                for upper, bound in ((False, low), (True, high)):
                    P = F.extreme_distribution(s, u, upper=upper, conditional=conditional)
                    assert F.contains(P, tolerance=1e-12), (kind, s, u, upper)
                    value = P[s, u] / P[s].sum() if conditional else P[s, u]
                    assert value == pytest.approx(bound[s, u], rel=1e-12, abs=1e-15)


def test_lemma9_matches_an_independent_convex_solver():
    F = ConfidenceSet(COUNTS, 0.05)
    q = F.prior
    P = cp.Variable(q.size)
    support = np.flatnonzero(q > 0)
    constraint = [cp.sum(cp.multiply(q[support] ** 2, cp.inv_pos(P[support]))) <= F.radius + 1, cp.sum(P) == 1, P >= 0]
    low, high = F.probability_bounds()
    for x in (0, 5, 7):  # largest, zero and small estimates
        for sense, bound in ((cp.Minimize, low), (cp.Maximize, high)):
            cp.Problem(sense(P[x]), constraint).solve(solver=cp.CLARABEL)
            assert P.value[x] == pytest.approx(bound.ravel()[x], abs=1e-6)


def test_lemma8_projection_radius_is_attained_by_the_lift():
    F = ConfidenceSet(COUNTS, 0.05)
    centre = F.conditional_estimate
    for s in range(F.shape[0]):
        # a conditional on the boundary of the B_s ball, lifted by eq. (31), lies on the boundary of F
        direction = np.eye(F.shape[1])[int(np.argmin(centre[s]))]  # a vertex: outside the ball
        lo, hi = 0.0, 1.0
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            r = centre[s] + mid * (direction - centre[s])
            inside = np.sum(np.where(centre[s] > 0, (centre[s] - r) ** 2 / r, r)) <= F.conditional_radius[s]
            lo, hi = (mid, hi) if inside else (lo, mid)
        assert lo < 0.99
        rows = np.array(centre)
        rows[s] = centre[s] + lo * (direction - centre[s])
        P = F.lift_conditionals(rows, slack=1e-12)
        assert F.chi_square(P) == pytest.approx(F.radius, rel=1e-9)
        np.testing.assert_allclose(P / P.sum(axis=1, keepdims=True), rows, rtol=1e-12)
        # beyond the ball: no distribution of F has this conditional
        rows[s] = centre[s] + lo * 1.01 * (direction - centre[s])
        with pytest.raises(ValueError, match="no distribution of F"):
            F.lift_conditionals(rows)


def test_lift_of_random_feasible_conditionals():
    F = ConfidenceSet(COUNTS, 0.05)
    rng = np.random.default_rng(11)
    for P in sample_points(F, rng, count=50):
        rows = P / P.sum(axis=1, keepdims=True)
        lifted = F.lift_conditionals(rows, slack=1e-12)
        assert F.chi_square(lifted) <= F.chi_square(P) + 1e-12  # the optimal marginal is no worse
        np.testing.assert_allclose(lifted / lifted.sum(axis=1, keepdims=True), rows, rtol=1e-10, atol=1e-15)


def test_proposition10_is_tight_for_large_radius():
    F = ConfidenceSet([[1, 2], [1, 0]], 0.05)  # n = 4: B = 7.81 / 4 >= 1
    assert F.l1_radius_is_tight
    x = int(np.argmin(F.prior))
    P = F.extreme_distribution(*divmod(x, F.shape[1]), upper=True)
    assert np.abs(P - F.estimate).sum() == pytest.approx(F.l1_radius, rel=1e-12)
    G = ConfidenceSet(COUNTS, 0.05)
    assert not G.l1_radius_is_tight and G.l1_radius == pytest.approx(np.sqrt(G.radius), rel=1e-15)


def test_conditional_radius_and_d_s_closed_forms():
    F = ConfidenceSet(COUNTS, 0.05)
    p = COUNTS.sum(axis=1) / COUNTS.sum()
    root = np.sqrt(F.radius + 1)
    np.testing.assert_allclose(F.conditional_radius, (root + p - 1) ** 2 / p**2 - 1, rtol=1e-14)
    small = ConfidenceSet([[1, 2], [1, 0]], 0.05)
    b, pmin = small.conditional_radius, small.conditional_estimate.min(axis=1)
    expected = np.where(b >= 1, (b * (1 - 2 * pmin) + np.sqrt(b * b + 4 * b * pmin - 4 * b * pmin**2)) / (b + 1), np.sqrt(b))
    np.testing.assert_allclose(small.conditional_l1_radius, expected, rtol=1e-14)
    assert np.all(small.conditional_radius >= 1)
