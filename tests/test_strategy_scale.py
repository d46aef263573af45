"""Strategies at real domain sizes (metric-ldp-range-counting.md, Section III; issue 29, parts 4 and 5).

References written here, independent of the library: workloads enumerated row by row at m <= 16
(every Gram entry, product and cost of the implicit path is compared with them), the all-range
Gram closed form (min(i, j) + 1)(m - max(i, j)), Kronecker identities, a one-constraint closed
form of the inverse-square program (Hoelder), finite differences of the p-Identity gradient, and
certificates that must refuse a strategy breaking Proposition 1 by one unit in the last place.
"""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.metric.optimize import (
    difference_gram,
    line_lower_bound,
    optimize_strategy,
    p_identity_line_strategy,
)
from designer.metric.pairs import PrivacyPairs
from designer.metric.strategy import Strategy, certify_strategy, design_strategy
from designer.metric.strategy_matrices import (
    DenseStrategyMatrix,
    IdentityStrategyMatrix,
    KroneckerStrategyMatrix,
    PrefixStrategyMatrix,
    hierarchical_strategy,
)
from designer.metric.workloads import (
    AllRangeWorkload,
    IdentityWorkload,
    KroneckerWorkload,
    MatrixWorkload,
    PrefixWorkload,
    TotalWorkload,
    UnionWorkload,
    marginals_workload,
)
from designer.spec import PrivacyMatrix
from solvers.inverse_squares import minimize_inverse_squares
from solvers.p_identity import p_identity_matrix, p_identity_objective

runner = CliRunner()


def ranges(m):
    """Every range [l, r] as a 0/1 row, l then r (eq. 2)."""
    return np.array([[float(l <= x <= r) for x in range(m)] for l in range(m) for r in range(l, m)])


def line_matrix(m, epsilon):
    index = np.arange(m)
    return PrivacyMatrix.metric(np.abs(index[:, None] - index[None, :]), epsilon)


# ------------------------------------------------------------------ workloads
@pytest.mark.parametrize("m", [1, 2, 5, 16])
def test_one_dimensional_workloads_against_their_rows(m):
    explicit = {"identity": np.eye(m), "prefix": np.tril(np.ones((m, m))), "all-range": ranges(m), "total": np.ones((1, m))}
    implicit = {"identity": IdentityWorkload(m), "prefix": PrefixWorkload(m), "all-range": AllRangeWorkload(m), "total": TotalWorkload(m)}
    rng = np.random.default_rng(m)
    for name, W in explicit.items():
        workload = implicit[name]
        assert workload.queries == W.shape[0] and workload.m == m
        assert np.array_equal(workload.dense(), W)
        assert np.array_equal(workload.gram(), W.T @ W)
        assert workload.frobenius() == np.sum(W**2)
        x, y = rng.normal(size=(m, 3)), rng.normal(size=(W.shape[0], 2))
        assert np.allclose(workload.matvec(x), W @ x) and np.allclose(workload.matvec(x[:, 0]), W @ x[:, 0])
        assert np.allclose(workload.rmatvec(y), W.T @ y)


def test_all_range_gram_closed_form_and_its_prefix_coordinates():
    for m in (3, 9, 16):
        index = np.arange(m)
        closed = (np.minimum.outer(index, index) + 1) * (m - np.maximum.outer(index, index))
        assert np.array_equal(AllRangeWorkload(m).gram(), closed)
        assert np.array_equal(ranges(m).T @ ranges(m), closed)
        # in the prefix coordinates z = L c: pairwise differences and singletons, G' = (m + 1) I - J
        L_inverse = np.linalg.inv(np.tril(np.ones((m, m))))
        assert np.allclose(L_inverse.T @ closed @ L_inverse, difference_gram(closed.astype(float)))
        assert np.array_equal(difference_gram(closed.astype(float))[:-1, :-1], (m + 1) * np.eye(m - 1) - 1)
    huge = AllRangeWorkload(65_536)
    i, j = np.array([0, 5, 65_535, 100]), np.array([65_535, 5, 65_535, 40_000])
    assert huge.gram_entries(i, j).tolist() == [(min(a, b) + 1) * (65_536 - max(a, b)) for a, b in zip(i, j)]
    with pytest.raises(ValueError, match="dense Gram"):
        huge.gram()


def test_kronecker_union_and_marginal_workloads_against_explicit_products():
    first, second = AllRangeWorkload(3), PrefixWorkload(4)
    product = KroneckerWorkload([first, second])
    W = np.kron(ranges(3), np.tril(np.ones((4, 4))))
    assert product.queries == W.shape[0] and product.shape == (3, 4)
    assert np.array_equal(product.dense(), W)
    assert np.array_equal(product.gram(), np.kron(first.gram(), second.gram()))  # (A x B)^T (A x B) = A^T A x B^T B
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2))
    assert np.allclose(product.matvec(x), W @ x) and np.allclose(product.rmatvec(W @ x), W.T @ (W @ x))
    rows, cols = rng.integers(0, 12, 20), rng.integers(0, 12, 20)
    assert np.array_equal(product.gram_entries(rows, cols), (W.T @ W)[rows, cols])
    union = UnionWorkload([IdentityWorkload(4), PrefixWorkload(4)], [2.0, 0.5])
    stacked = np.vstack([2.0 * np.eye(4), 0.5 * np.tril(np.ones((4, 4)))])
    assert np.allclose(union.dense(), stacked) and np.allclose(union.gram(), stacked.T @ stacked)
    assert np.allclose(union.rmatvec(stacked @ x[:4]), stacked.T @ stacked @ x[:4])
    one_way = marginals_workload((3, 4), 1)  # the two 1-way marginals of a 3 x 4 table
    explicit = np.vstack([np.kron(np.eye(3), np.ones((1, 4))), np.kron(np.ones((1, 3)), np.eye(4))])
    assert one_way.queries == 7 and np.array_equal(one_way.dense(), explicit)
    assert np.array_equal(one_way.gram(), explicit.T @ explicit)


# ------------------------------------------------------------------ strategy matrices
def weighted_least_squares(A, W, s):
    """B = W (A^T S^-2 A)^-1 A^T S^-2 (every s > 0)."""
    weights = np.diag(s**-2.0)
    return W @ np.linalg.solve(A.T @ weights @ A, A.T @ weights)


@pytest.mark.parametrize("workload", [IdentityWorkload(9), PrefixWorkload(9), AllRangeWorkload(9), MatrixWorkload(np.arange(18.0).reshape(2, 9))])
def test_costs_of_structured_strategies_equal_the_columns_of_B(workload):
    W = workload.dense()
    rng = np.random.default_rng(3)
    for matrix in (PrefixStrategyMatrix(9), IdentityStrategyMatrix(9), DenseStrategyMatrix(rng.normal(size=(9, 9)))):
        A = matrix.dense()
        B = W @ np.linalg.inv(A)
        assert np.allclose(matrix.costs(workload), np.sum(B**2, axis=0))
        y = rng.normal(size=9)
        assert np.allclose(workload.matvec(matrix.estimate(y)), B @ y)
    tree = hierarchical_strategy(9, 3)
    assert tree.shape == (13, 9) and np.array_equal(tree.dense()[0], np.ones(9))  # root, 3 children, 9 leaves
    s = rng.uniform(0.5, 2.0, size=13)
    B = weighted_least_squares(tree.dense(), W, s)
    assert np.allclose(tree.costs(workload, s), np.sum(B**2, axis=0))


def test_difference_patterns_and_sensitivities_against_dense_columns():
    first = np.array([0, 3, 7, 2, 5])
    second = np.array([1, 4, 2, 9, 5])
    rng = np.random.default_rng(4)
    dense = DenseStrategyMatrix(rng.integers(0, 3, size=(7, 10)).astype(float))
    factors = [PrefixStrategyMatrix(2), DenseStrategyMatrix(rng.normal(size=(6, 5)))]
    for matrix in (PrefixStrategyMatrix(10), IdentityStrategyMatrix(10), dense, KroneckerStrategyMatrix(factors)):
        A = matrix.dense()
        expected = np.abs(A[:, first] - A[:, second]).T
        assert np.allclose(matrix.sensitivity(first, second).toarray(), expected)
        pairs, rows = matrix.difference_pattern(first, second)
        assert sorted(zip(pairs.tolist(), rows.tolist())) == sorted(zip(*np.nonzero(expected)))


def test_kronecker_strategy_costs_and_estimates_match_the_dense_product():
    rng = np.random.default_rng(5)
    workload = KroneckerWorkload([AllRangeWorkload(3), AllRangeWorkload(4)])
    W = workload.dense()
    square = KroneckerStrategyMatrix([PrefixStrategyMatrix(3), DenseStrategyMatrix(rng.normal(size=(4, 4)))])
    A = square.dense()
    assert np.allclose(A, np.kron(np.tril(np.ones((3, 3))), square.factors[1].dense()))
    B = W @ np.linalg.inv(A)
    assert np.allclose(square.costs(workload), np.sum(B**2, axis=0))
    y = rng.normal(size=12)
    assert np.allclose(workload.matvec(square.estimate(y)), B @ y)
    wide = KroneckerStrategyMatrix([hierarchical_strategy(3, 2), PrefixStrategyMatrix(4)])  # over-complete factor
    A = wide.dense()
    B = W @ np.linalg.pinv(A)  # unweighted least squares
    assert np.allclose(wide.costs(workload, np.ones(A.shape[0])), np.sum(B**2, axis=0))
    explicit = MatrixWorkload(W[::5])  # not a Kronecker workload: through the dense product
    assert np.allclose(wide.costs(explicit, np.ones(A.shape[0])), np.sum((W[::5] @ np.linalg.pinv(A)) ** 2, axis=0))
    with pytest.raises(ValueError, match="unweighted"):
        wide.costs(workload, np.arange(1.0, A.shape[0] + 1))


# ------------------------------------------------------------------ pairs and certificates
def test_family_pairs_are_the_non_redundant_pairs_of_the_matrix():
    for shape in [(9,), (3, 4), (2, 2, 3)]:
        family = PrivacyPairs.grid_l1(shape, 0.7)
        explicit = PrivacyPairs.from_matrix(PrivacyMatrix.grid_l1(shape, 0.7))
        assert np.array_equal(family.pairs, explicit.pairs) and np.allclose(family.levels, explicit.levels)
    assert np.array_equal(PrivacyPairs.line(5, 1.0).pairs, [[0, 1], [1, 2], [2, 3], [3, 4]])


def test_implicit_design_equals_the_materialised_one():
    """Prefix strategy, all ranges, line E at m = 12: scales, errors and verdict agree with A, W and E written out."""
    m, epsilon = 12, 0.8
    implicit = design_strategy(AllRangeWorkload(m), PrivacyPairs.line(m, epsilon), PrefixStrategyMatrix(m))
    explicit = design_strategy(ranges(m), line_matrix(m, epsilon), np.tril(np.ones((m, m))))
    assert np.allclose(implicit.noise_scales, explicit.noise_scales, rtol=1e-9)
    assert implicit.laplace_error(7) == pytest.approx(explicit.laplace_error(7), rel=1e-12)
    assert implicit.error(7) == pytest.approx(explicit.error(7), rel=1e-12)
    assert implicit.laplace_error(1) == pytest.approx(2 * m * (m - 1) / epsilon**2, rel=1e-12)  # Section III-B
    reports = implicit.respond(np.array([0, 3, 3, 11]), np.random.default_rng(0))
    assert np.allclose(implicit.answer(reports), explicit.answer(reports))
    assert certify_strategy(implicit, PrivacyPairs.line(m, epsilon)).certified
    assert certify_strategy(implicit, line_matrix(m, epsilon)).certified


def test_a_strategy_breaking_proposition_1_by_one_ulp_is_refused():
    """Rates are q / 2^D with 32-bit q, exact in a double: E equal to the rate passes, one ulp below fails."""
    m = 8
    strategy = design_strategy(PrefixWorkload(m), PrivacyPairs.line(m, 0.1), PrefixStrategyMatrix(m))
    rate = strategy.noise.rates[0]
    assert all(r == rate for r in strategy.noise.rates[:-1]) and rate < Fraction(0.1)
    exact_level = float(rate)
    assert Fraction(exact_level) == rate
    below = np.nextafter(exact_level, 0.0)
    assert certify_strategy(strategy, PrivacyPairs.line(m, exact_level)).certified
    refused = certify_strategy(strategy, PrivacyPairs.line(m, below))
    assert refused.violations == [(x, x + 1) for x in range(m - 1)]
    assert certify_strategy(strategy, line_matrix(m, exact_level)).certified  # every pair, exact integers
    assert not certify_strategy(strategy, line_matrix(m, below)).certified
    # an explicit E that breaks the triangle inequality by one ulp on one far pair: only the all-pairs check sees it
    levels = line_matrix(m, exact_level).epsilon.copy()
    levels[0, 5] = levels[5, 0] = np.nextafter(5 * exact_level, 0.0)
    assert Fraction(5 * exact_level) == 5 * rate  # 5 * rate is exact in a double, so the far pair is tight
    far = certify_strategy(strategy, PrivacyMatrix(levels))
    assert not far.certified and set(far.violations) == {(0, 5), (5, 0)}
    assert certify_strategy(strategy, PrivacyPairs.from_matrix(PrivacyMatrix(levels))).violations == far.violations


# ------------------------------------------------------------------ solvers
def test_inverse_squares_decoupled_and_one_coupled_constraint_closed_form():
    costs = np.array([4.0, 1.0, 9.0])
    decoupled = minimize_inverse_squares(costs, np.diag([2.0, 1.0, 0.5]), np.array([1.0, 3.0, 2.0]))
    assert decoupled.method == "decoupled" and np.allclose(decoupled.rates, [0.5, 3.0, 4.0])
    a, b = np.array([1.0, 2.0, 0.5]), 1.5
    coupled = minimize_inverse_squares(costs, np.vstack([a, a / 2]), np.array([b, b]))  # the second row is slack
    optimum = np.sum(np.cbrt(costs * a**2)) ** 3 / b**2  # Hoelder: (sum (c a^2)^(1/3))^3 / b^2
    assert coupled.method == "dual" and a @ coupled.rates <= b
    assert coupled.lower_bound <= optimum <= coupled.objective <= optimum * (1 + 1e-8)
    assert coupled.gap <= 1e-8


def test_p_identity_objective_gradient_and_strategy():
    rng = np.random.default_rng(6)
    W = rng.normal(size=(10, 6))
    gram, budgets = W.T @ W, rng.uniform(0.5, 2.0, size=6)
    theta = rng.uniform(0.0, 1.0, size=(2, 6))
    M = p_identity_matrix(theta, budgets)
    assert np.allclose(np.abs(M).sum(axis=0), budgets)  # every column's L1 norm is its budget
    value, gradient = p_identity_objective(theta, gram, budgets)
    assert value == pytest.approx(np.trace(np.linalg.inv(M.T @ M) @ gram), rel=1e-10)
    step = 1e-6
    numeric = np.zeros_like(theta)
    for index in np.ndindex(theta.shape):
        shift = np.zeros_like(theta)
        shift[index] = step
        numeric[index] = (p_identity_objective(theta + shift, gram, budgets)[0] - p_identity_objective(theta - shift, gram, budgets)[0]) / (2 * step)
    assert np.allclose(gradient, numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())
    # the strategy in x-space: A = [M L_m[:m-1]; 1^T], unit noise on M, none on the total row
    m = 10
    workload, pairs = AllRangeWorkload(m), PrivacyPairs.line(m, 0.5)
    matrix, scales, objective = p_identity_line_strategy(workload, pairs, extra_rows=2)
    A = matrix.dense()
    assert np.allclose(np.abs(A[:, :-1] - A[:, 1:]).sum(axis=0), 0.5)  # every adjacent pair at its budget
    strategy = Strategy(matrix, workload, scales)
    assert strategy.laplace_error(1) == pytest.approx(objective, rel=1e-9)


def test_line_lower_bound_closed_form_and_below_every_strategy():
    m, epsilon = 16, 1.0
    workload, pairs = AllRangeWorkload(m), PrivacyPairs.line(m, epsilon)
    n = m - 1  # eigenvalues of (m + 1) I - J on n coordinates: m + 1 (n - 1 times) and m + 1 - n
    assert line_lower_bound(workload, pairs) == pytest.approx(2 * ((n - 1) * math.sqrt(m + 1) + math.sqrt(m + 1 - n)) ** 2 / n)
    m = 8
    workload, pairs = AllRangeWorkload(m), PrivacyPairs.line(m, epsilon)
    comparison = optimize_strategy(workload, pairs, "p-identity", extra_rows=1)
    bound = line_lower_bound(workload, pairs)
    for name, strategy in comparison.candidates.items():
        assert strategy.laplace_error(1) >= bound * (1 - 1e-12), name
        assert certify_strategy(strategy, pairs).certified, name
    assert comparison.ratio("prefix") == 1.0 and comparison.candidates["prefix"].laplace_error(1) == pytest.approx(2 * m * (m - 1))
    assert comparison.ratio(comparison.best) <= 1.0


def test_kronecker_optimisation_on_a_grid_is_certified_and_beats_prefix():
    workload = KroneckerWorkload([AllRangeWorkload(6), AllRangeWorkload(6)])
    pairs = PrivacyPairs.grid_l1((6, 6), 1.0)
    comparison = optimize_strategy(workload, pairs, "kronecker", extra_rows=1)
    assert set(comparison.candidates) == {"prefix", "identity", "tree", "kronecker p-identity"}
    for name, strategy in comparison.candidates.items():
        assert certify_strategy(strategy, pairs).certified, name
        assert certify_strategy(strategy, PrivacyMatrix.grid_l1((6, 6), 1.0)).certified, name
    assert comparison.ratio(comparison.best) < 0.5  # L_m (x) L_m has columns of norm up to m: poor on a grid
    with pytest.raises(ValueError, match="line"):
        optimize_strategy(workload, pairs, "p-identity")


# ------------------------------------------------------------------ command line
def test_cli_strategy_family_optimisation_and_bad_input(tmp_path):
    out = tmp_path / "s.json"
    result = runner.invoke(app, ["strategy", "--workload", "all-range", "--metric", "line", "--shape", "8", "--eps", "0.5",
                                 "--optimize", "p-identity", "--extra-rows", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "ratio to L_m" in result.stdout and "lower bound" in result.stdout and "CERTIFIED" in result.stdout
    payload = json.loads(out.read_text())
    assert payload["comparison"]["prefix"]["ratio_to_prefix"] == 1.0
    assert payload["comparison"]["prefix"]["laplace_error_per_user"] == pytest.approx(2 * 8 * 7 / 0.25)
    assert all(row["certified"] for row in payload["comparison"].values())
    assert payload["lower_bound_per_user"] <= payload["laplace_total_error"]
    grid = runner.invoke(app, ["strategy", "--workload", "all-range", "--metric", "grid", "--shape", "4x4", "--out", str(out), "--json"])
    assert grid.exit_code == 0, grid.output
    assert json.loads(grid.stdout)["certificate"]["pairs_checked"] == 24
    for arguments, fragment in [
        (["--metric", "line"], "--shape"),
        (["--metric", "line", "--shape", "4x4"], "a line needs one size"),
        (["--metric", "ring", "--shape", "4"], "choose line or grid"),
        (["--metric", "line", "--shape", "four"], "integers"),
        (["--metric", "line", "--shape", "8", "--optimize", "magic"], "choose p-identity or kronecker"),
        (["--metric", "line", "--shape", "8", "--eps", "-1"], "--eps"),
        ([], "either --E FILE or --metric"),
    ]:
        never = tmp_path / "never.json"
        failed = runner.invoke(app, ["strategy", "--workload", "prefix", "--out", str(never), *arguments])
        assert failed.exit_code == 2, (arguments, failed.output)
        assert fragment in failed.stderr and "Traceback" not in failed.output and not never.exists()
