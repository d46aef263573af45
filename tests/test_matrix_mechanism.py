"""The E-LDP matrix mechanism (metric-ldp-range-counting.md, Section III).

Acceptance test: for A = L_m, the all-range workload and E = eps |x - x'| the
optimiser recovers s_k = 1/eps, s_m = 0 and total error 2 n m (m - 1) / eps^2
(Section III-B). Other references: the same convex program written over every
pair (not only the non-redundant ones), Laplace log-density ratios evaluated
directly, and simulation.
"""

import json
import math

import cvxpy as cp
import networkx as nx
import numpy as np
import pytest
from typer.testing import CliRunner

from designer.certify import certify
from designer.cli import app
from designer.matrix_mechanism import (
    Strategy,
    all_range_workload,
    certify_strategy,
    design_overcomplete,
    design_strategy,
    expected_error,
    identity_workload,
    optimal_noise_scales,
    prefix_strategy,
    prefix_workload,
    reconstruction,
    uniform_noise_scales,
)
from designer.spec import PrivacyMatrix

runner = CliRunner()


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
    assert np.array_equal(all_range_workload(3), W3)
    assert np.array_equal(prefix_strategy(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert np.array_equal(prefix_workload(4), np.tril(np.ones((4, 4))))
    assert np.array_equal(identity_workload(2), np.eye(2))
    assert all_range_workload(10).shape == (55, 10)
    with pytest.raises(ValueError, match="positive integer"):
        all_range_workload(0)


@pytest.mark.parametrize("m", [2, 5, 16, 40])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_prefix_strategy_closed_form(m, epsilon):
    """Section III-B: s_k = 1/eps (k < m), s_m = 0, total error 2 n m (m - 1) / eps^2."""
    E = line_metric(m, epsilon)
    strategy = design_strategy(all_range_workload(m), E, prefix_strategy(m))
    assert np.allclose(strategy.noise_scales[:-1], 1 / epsilon, rtol=1e-6)
    assert strategy.noise_scales[-1] == 0.0
    n = 1000
    assert strategy.error(n) == pytest.approx(2 * n * m * (m - 1) / epsilon**2, rel=1e-6)
    assert np.allclose(strategy.workload, all_range_workload(m))
    certificate = certify_strategy(strategy, E)
    assert certificate.certified
    assert certificate.margin == pytest.approx(0.0, abs=1e-9)
    x, y = certificate.tightest_pair
    assert abs(x - y) >= 1 and np.isclose(certificate.privacy_loss[x, y], epsilon * abs(x - y))


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
    assert strategy.error(1) == pytest.approx(brute_force_objective(A, strategy.reconstruction_matrix, E), rel=1e-5)
    certificate = certify_strategy(strategy, E)
    assert certificate.certified and certificate.margin == pytest.approx(0.0, abs=1e-9)


def test_asymmetric_E_uses_the_smaller_level():
    E = PrivacyMatrix([[0, 1.0, 3.0], [0.5, 0, 1.0], [3.0, 2.0, 0]])
    strategy = design_strategy(identity_workload(3), E, np.eye(3))
    assert certify_strategy(strategy, E).certified
    assert strategy.error(1) == pytest.approx(brute_force_objective(np.eye(3), np.eye(3), E), rel=1e-5)


# ------------------------------------------------------------ Proposition 1 (certifier)
def test_privacy_loss_is_the_laplace_log_density_ratio():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(4, 5))
    s = rng.uniform(0.5, 2.0, size=4)
    strategy = Strategy(A, np.eye(4), s)
    loss = strategy.privacy_loss()
    for x, y in [(0, 1), (2, 4), (3, 0)]:
        difference = A[:, x] - A[:, y]
        output = A[:, x] + 50 * np.sign(difference)  # far along the difference: the supremum is attained
        log_ratio = np.sum((np.abs(output - A[:, y]) - np.abs(output - A[:, x])) / s)
        assert log_ratio == pytest.approx(loss[x, y])
        random_output = rng.normal(size=4) * 3
        other = np.sum((np.abs(random_output - A[:, y]) - np.abs(random_output - A[:, x])) / s)
        assert other <= loss[x, y] + 1e-12


def test_certifier_verdict_margin_and_violations():
    m, epsilon = 6, 1.0
    E = line_metric(m, epsilon)
    designed = design_strategy(all_range_workload(m), E, prefix_strategy(m))
    too_little_noise = Strategy(designed.strategy_matrix, designed.reconstruction_matrix, designed.noise_scales * 0.9)
    certificate = certify_strategy(too_little_noise, E)
    assert certificate.verdict == "violated"
    # L = |x - x'| / 0.9 against E = |x - x'|: the farthest pair is the tightest
    assert certificate.margin == pytest.approx((m - 1) * (1 - 1 / 0.9))
    assert set(certificate.tightest_pair) == {0, m - 1}
    assert (0, 1) in certificate.violations and len(certificate.violations) == m * (m - 1)
    payload = certificate.to_dict()
    assert payload["verdict"] == "violated" and len(payload["tightest_pair"]) == 2
    generic = certify(too_little_noise, E)  # the foundation certify dispatches on a strategy
    assert generic.verdict == "violated" and generic.margin == certificate.margin
    assert certify(designed, E).certified and certify(designed, E).margin == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="exact mode"):
        certify(designed, E, exact=True)
    no_noise = Strategy(np.eye(3), np.eye(3), np.zeros(3))
    certificate = certify_strategy(no_noise, line_metric(3, 1.0))
    assert certificate.margin == -math.inf and not certificate.certified
    with pytest.raises(ValueError, match="infinite noise"):
        Strategy(np.eye(2), np.eye(2), [1.0, np.inf])


# ------------------------------------------------------------ Proposition 2 (error)
def test_error_formula_and_simulation():
    m, epsilon, n = 5, 1.0, 400
    E = line_metric(m, epsilon)
    strategy = design_strategy(all_range_workload(m), E, prefix_strategy(m))
    B, s = strategy.reconstruction_matrix, strategy.noise_scales
    assert strategy.error(n) == pytest.approx(2 * n * np.trace(B.T @ B @ np.diag(s**2)))
    rng = np.random.default_rng(7)
    values = rng.integers(0, m, size=n)
    truth = all_range_workload(m) @ np.bincount(values, minlength=m)
    repetitions = 4000
    answers = np.array([strategy.answer(strategy.respond(values, rng)) for _ in range(repetitions)])
    errors = np.sum((answers - truth) ** 2, axis=1)
    assert errors.mean() == pytest.approx(strategy.error(n), rel=0.06)  # ~6 standard errors of the mean
    spread = answers.std(axis=0) / math.sqrt(repetitions)
    assert np.all(np.abs(answers.mean(axis=0) - truth) < 5 * spread + 1e-9)  # unbiased
    assert expected_error(np.zeros((2, 2)), [np.inf, 0.0], 10) == 0.0


# ------------------------------------------------------------ over-complete strategies
def test_alternating_method_never_worse_than_start():
    m, epsilon = 12, 1.0
    E = line_metric(m, epsilon)
    W = all_range_workload(m)
    A = np.vstack([np.eye(m), prefix_strategy(m)])
    result = design_overcomplete(W, E, A)
    history = result.history
    assert all(later < earlier for earlier, later in zip(history, history[1:]))
    assert history[-1] < 0.5 * history[0]
    final = result.strategy
    assert np.allclose(final.workload, W)
    assert certify_strategy(final, E).certified
    assert final.error(1) == pytest.approx(history[-1])
    # started at the prefix optimum (identity rows unused) it cannot get worse than 2 m (m - 1) / eps^2
    start = np.concatenate([np.full(m, np.inf), np.full(m - 1, 1 / epsilon), [0.0]])
    warm = design_overcomplete(W, E, A, start_scales=start)
    assert warm.history[0] == pytest.approx(2 * m * (m - 1) / epsilon**2)
    assert warm.history[-1] <= warm.history[0]


def test_weighted_reconstruction_matches_closed_forms():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(7, 4))
    s = rng.uniform(0.5, 2, size=7)
    W = rng.normal(size=(3, 4))
    B = reconstruction(A, W, s)
    S_inv2 = np.diag(s**-2.0)
    expected = W @ np.linalg.solve(A.T @ S_inv2 @ A, A.T @ S_inv2)  # generalised least squares
    assert np.allclose(B, expected)
    square = rng.normal(size=(4, 4))
    assert np.allclose(reconstruction(square, W), W @ np.linalg.inv(square))
    with pytest.raises(ValueError, match="row space"):
        reconstruction(np.vstack([np.eye(4)[:2], np.eye(4)[:2]]), W, np.ones(4))
    with pytest.raises(ValueError, match="singular"):
        reconstruction(np.zeros((4, 4)), W)


def test_uniform_start_is_feasible_and_tight():
    E = line_metric(8, 0.7)
    A = np.vstack([np.eye(8), prefix_strategy(8)])
    scales = uniform_noise_scales(A, E)
    strategy = Strategy(A, reconstruction(A, identity_workload(8), scales), scales)
    certificate = certify_strategy(strategy, E)
    assert certificate.certified and certificate.margin == pytest.approx(0.0, abs=1e-12)


def test_zero_level_pair_that_must_be_separated_is_an_error():
    E = PrivacyMatrix([[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="E = 0"):
        optimal_noise_scales(np.eye(2), np.eye(2), E)


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
    assert payload["total_error"] == pytest.approx(2 * 100 * m * (m - 1), rel=1e-6)
    assert payload["noise_scales"][-1] == 0.0 and payload["noise_scales"][0] == pytest.approx(1.0, rel=1e-6)
    assert payload["certificate"]["verdict"] == "certified"


def test_cli_strategy_workload_file_overcomplete_and_errors(tmp_path):
    m = 4
    e_file = tmp_path / "E.csv"
    np.savetxt(e_file, line_metric(m, 1.0).epsilon, delimiter=",")
    w_file = tmp_path / "W.csv"
    np.savetxt(w_file, prefix_workload(m)[1:], delimiter=",")
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
