"""Expected loss on metric E: the line's closed form, the LP by output, the proven bound, solver trouble, baselines.

References are computed here, independently: LPs written with scipy's linprog (all pairs, or the
grid's edges only), brute force over every deterministic remap, the geometric mechanism's formula.
"""

import itertools
import math
import time
import json

import networkx as nx
import numpy as np
import pytest
import scipy.optimize

import designer.design.expected_loss as expected_loss_module
from designer.certify import certify
from designer.channel import Channel
from designer.design.expected_loss import design_expected_loss, route_expected_loss, unconstrained_lower_bound
from designer.design.geometric import line_order, optimal_remap, truncated_geometric
from designer.design.metric_compare import compare_expected_loss, exponential_mechanism
from designer.spec import PrivacyMatrix
from solvers.linear import LinearProgramError
from solvers.ratio_lp import lagrangian_lower_bound


def lp_optimum(cost, constraints):
    """``min sum cost * Q`` over row-stochastic Q with ``Q[a, y] <= r Q[b, y]`` for each (a, b, r): HiGHS simplex."""
    k, m = cost.shape
    rows = []
    for a, b, ratio in constraints:
        for y in range(m):
            row = np.zeros(k * m)
            row[a * m + y], row[b * m + y] = 1.0, -ratio
            rows.append(row)
    equal = np.kron(np.eye(k), np.ones(m))
    result = scipy.optimize.linprog(cost.ravel(), A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=equal,
                                    b_eq=np.ones(k), bounds=(0, None), method="highs-ds")
    assert result.status == 0
    return result.fun


def all_pairs(epsilon):
    k = epsilon.shape[0]
    return [(a, b, np.exp(epsilon[a, b])) for a in range(k) for b in range(k) if a != b and np.isfinite(epsilon[a, b])]


def line_losses(k):
    distance = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]).astype(float)
    return {"absolute": distance, "squared": distance**2, "0/1": (distance > 0).astype(float)}


def priors(k):
    zipf = 1.0 / np.arange(1, k + 1) ** 1.1
    return {"uniform": np.full(k, 1.0 / k), "zipf": zipf / zipf.sum(),
            "random": np.random.default_rng(k).dirichlet(np.ones(k))}


# ------------------------------------------------------------ the line's closed form
def test_truncated_geometric_formula():
    k, epsilon = 6, 0.7
    channel = truncated_geometric(k, epsilon)
    alpha = np.exp(-epsilon)
    np.testing.assert_allclose(channel.sum(axis=1), 1.0, rtol=1e-15)
    assert channel[2, 3] == pytest.approx(alpha * (1 - alpha) / (1 + alpha), rel=1e-15)
    assert channel[4, 0] == pytest.approx(alpha**4 / (1 + alpha), rel=1e-15)
    for i in range(k - 1):  # neighbouring rows: ratio e^epsilon at and left of i, e^-epsilon right of it
        for j in range(k):
            assert channel[i, j] / channel[i + 1, j] == pytest.approx(np.exp(epsilon if j <= i else -epsilon), rel=1e-13)


def test_optimal_remap_is_the_best_deterministic_remap():
    rng = np.random.default_rng(0)
    channel, prior, loss = rng.dirichlet(np.ones(4), 4), rng.dirichlet(np.ones(4)), rng.random((4, 3))
    reports, remapped = optimal_remap(channel, prior, loss)
    best = min(
        sum(prior[i] * channel[i, j] * loss[i, choice[j]] for i in range(4) for j in range(4))
        for choice in itertools.product(range(3), repeat=4)
    )
    assert np.sum(prior[:, None] * loss * remapped) == pytest.approx(best, rel=1e-14)
    np.testing.assert_allclose(remapped.sum(axis=1), 1.0)


@pytest.mark.parametrize("k", [5, 8, 12])
def test_closed_form_equals_the_lp_on_lines(k):
    """GRS 2009: for every prior and every monotone loss, no epsilon-DP channel beats the remapped geometric mechanism."""
    privacy = PrivacyMatrix.metric(np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]), 0.6)
    for loss_name, loss in line_losses(k).items():
        for prior_name, prior in priors(k).items():
            result = design_expected_loss(privacy, loss, prior)
            assert result.method == "closed-form" and result.certified, (loss_name, prior_name)
            optimum = lp_optimum(prior[:, None] * loss, all_pairs(privacy.epsilon))
            assert result.objective == pytest.approx(optimum, rel=1e-9, abs=1e-12), (loss_name, prior_name)
            assert result.lower_bound == result.objective and result.gap == 0


def test_line_after_relabelling_and_through_its_closure():
    k = 9
    order = np.random.default_rng(5).permutation(k)
    positions = np.empty(k, dtype=int)
    positions[order] = np.arange(k)
    distance = np.abs(positions[:, None] - positions[None, :]).astype(float)
    privacy = PrivacyMatrix.metric(distance, 0.4)
    found, epsilon = line_order(privacy)
    assert epsilon == pytest.approx(0.4)
    assert np.array_equal(positions[found], np.arange(k)) or np.array_equal(positions[found], np.arange(k)[::-1])
    edges_only = PrivacyMatrix(np.where(distance <= 1, 0.4 * distance, np.inf))  # E written on the edges only
    assert line_order(edges_only, closure=False) is None and line_order(edges_only) is not None
    prior = priors(k)["zipf"]
    loss = distance
    expected = lp_optimum(prior[:, None] * loss, all_pairs(privacy.epsilon))
    for privacy_given in (privacy, edges_only):
        result = design_expected_loss(privacy_given, loss, prior)
        assert result.method == "closed-form" and result.certified
        assert result.objective == pytest.approx(expected, rel=1e-9)


def test_closed_form_only_where_the_theorem_holds():
    k = 6
    privacy = PrivacyMatrix.metric(np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]), 0.5)
    bumpy = line_losses(k)["absolute"].copy()
    bumpy[0, 3] = 0.5  # not monotone in |i - r|
    assert route_expected_loss(privacy, bumpy)[0] == "direct"
    with pytest.raises(ValueError, match="not k x k and non-decreasing"):
        design_expected_loss(privacy, bumpy, method="closed-form")
    unequal = PrivacyMatrix.metric(np.abs(np.cumsum([0, 1, 2, 1, 1, 1])[:, None] - np.cumsum([0, 1, 2, 1, 1, 1])), 0.5)
    assert route_expected_loss(unequal, line_losses(k)["absolute"])[1].endswith("(E is not epsilon |i - j| under any relabelling)")


# ------------------------------------------------------------ LPs: edges, decomposition, bound, solver trouble
def grid_problem(shape, epsilon, seed):
    privacy = PrivacyMatrix.grid_l1(shape, epsilon)
    cells = np.array(list(np.ndindex(*shape)))
    distance = np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2).astype(float)
    prior = np.random.default_rng(seed).dirichlet(np.ones(len(cells)))
    edges = [(a, b, np.exp(epsilon)) for a in range(len(cells)) for b in range(len(cells)) if distance[a, b] == 1]
    return privacy, distance, prior, edges


@pytest.mark.parametrize("shape, method", [((3, 3), "direct"), ((3, 4), "column-generation"), ((2, 5), "direct")])
def test_grid_designs_equal_an_edge_only_lp(shape, method):
    privacy, distance, prior, edges = grid_problem(shape, 0.5, sum(shape))
    for loss in (distance, distance**2):
        expected = lp_optimum(prior[:, None] * loss, edges)
        result = design_expected_loss(privacy, loss, prior, method=method)
        assert result.certified and result.method == method
        assert result.lower_bound <= expected + 1e-12 <= result.upper_bound + 2e-12
        assert result.gap <= 1e-6
        assert result.objective == pytest.approx(expected, rel=1e-6)


def test_decomposition_bounds_bracket_the_optimum_at_every_round():
    privacy, distance, prior, _ = grid_problem((4, 4), 0.5, 3)
    optimum = lp_optimum(prior[:, None] * distance, all_pairs(privacy.epsilon))
    seen = []
    result = design_expected_loss(privacy, distance, prior, method="column-generation",
                                  progress=lambda lower, upper, seconds: seen.append((lower, upper)))
    assert len(seen) == len(result.history) >= 2
    for lower, master in seen:
        assert lower <= optimum + 1e-12  # the master's value may be below the repaired channel's, never below the bound
        assert master >= optimum - 1e-9
    assert result.lower_bound <= optimum <= result.upper_bound + 1e-12


def test_lagrangian_bound_from_any_multipliers():
    rng = np.random.default_rng(1)
    epsilon = PrivacyMatrix.grid_l1((2, 3), 0.7).epsilon
    pairs = np.array([(a, b) for a, b, _ in all_pairs(epsilon)])
    ratios = np.exp(epsilon[pairs[:, 0], pairs[:, 1]])
    cost = rng.random((6, 6))
    optimum = lp_optimum(cost, all_pairs(epsilon))
    for _ in range(20):
        bound = lagrangian_lower_bound(cost, pairs, ratios, rng.exponential(size=(len(pairs), 6)))
        assert bound <= optimum
    # no pair multipliers: sum_x min_y cost[x, y], the best unconstrained choice row by row (positive here:
    # every row of a channel sums to exactly 1, so a row whose costs are all positive counts, not only 0)
    bound = lagrangian_lower_bound(cost, pairs, ratios, np.zeros((len(pairs), 6)))
    assert bound == pytest.approx(cost.min(axis=1).sum(), rel=1e-14) and 0 < bound <= optimum


def test_highs_no_longer_loses_far_entries():
    """Tiny far entries (e^{-29} here) came back 0 from HiGHS and the lowering repair pulled whole columns to them."""
    k = 30
    privacy = PrivacyMatrix.from_graph(nx.path_graph(k), 1.0)
    loss = line_losses(k)["absolute"]
    closed = design_expected_loss(privacy, loss, method="closed-form").objective
    result = design_expected_loss(privacy, loss, method="direct", backend="highs")
    assert result.certified and result.objective == pytest.approx(closed, rel=1e-7)


def test_inaccurate_or_failed_solves_are_refined_not_refused(monkeypatch):
    import solvers.linear

    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 7)
    expected = lp_optimum(prior[:, None] * distance, edges)
    real = solvers.linear._stochastic_lp_clarabel

    def almost(cost, upper, rows_sum, time_limit=None):  # an inaccurate solve: the point and multipliers perturbed
        point, row_duals, pair_duals, _ = real(cost, upper, rows_sum, time_limit)
        noise = np.random.default_rng(0).uniform(0.97, 1.03, point.size)
        return point * noise, row_duals * 0.99, pair_duals, "AlmostSolved"

    monkeypatch.setattr(solvers.linear, "_stochastic_lp_clarabel", almost)
    result = design_expected_loss(privacy, distance, prior, method="direct")
    assert result.certified and result.gap <= 1e-6
    assert "AlmostSolved" in result.methods[0] and "refined by column generation" in result.methods[1]
    assert result.lower_bound <= expected <= result.upper_bound + 1e-12

    def failing(*arguments, **keywords):
        raise LinearProgramError("ratio-bounded LP not solved by Clarabel: NumericalError")

    monkeypatch.setattr(solvers.linear, "_stochastic_lp_clarabel", failing)
    result = design_expected_loss(privacy, distance, prior, method="direct")
    assert result.certified and "highs" in result.methods[1]
    assert result.objective == pytest.approx(expected, rel=1e-6)
    monkeypatch.setattr(solvers.linear, "solve_ratio_bounded_stochastic_lp", failing)
    result = design_expected_loss(privacy, distance, prior, method="direct")
    assert result.certified and result.methods[-1].startswith("column generation by output")
    assert result.objective == pytest.approx(expected, rel=1e-6)


def test_auto_routes_by_size(monkeypatch):
    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 2)
    monkeypatch.setattr(expected_loss_module, "DIRECT_MAX_ENTRIES", 10)
    result = design_expected_loss(privacy, distance, prior)
    assert result.method == "column-generation" and "k m = 81 > 10" in result.reason
    assert result.summary()["lower_bound"] == result.lower_bound and result.summary()["method"] == "column-generation"


# ------------------------------------------------------------ baselines
def test_baselines_are_certified_and_never_beat_the_optimum():
    privacy, distance, prior, _ = grid_problem((3, 3), 0.5, 4)
    exponential = exponential_mechanism(privacy)
    scores = np.exp(-0.25 * distance)
    np.testing.assert_allclose(exponential, scores / scores.sum(axis=1, keepdims=True), rtol=1e-14)
    optimum = design_expected_loss(privacy, distance, prior)
    rows = compare_expected_loss(privacy, distance, prior, optimum.objective)
    assert [row.name.split(" (")[0] for row in rows] == ["exponential mechanism", "randomised response"]
    for row in rows:
        assert row.certified and row.ratio >= 1 - 1e-9
        assert row.loss == pytest.approx(row.ratio * optimum.objective)
    assert certify(Channel(exponential), privacy).certified


def test_geometric_baseline_is_the_optimum_on_a_line():
    k = 10
    privacy = PrivacyMatrix.from_graph(nx.path_graph(k), 0.5)
    loss, prior = line_losses(k)["squared"], priors(k)["zipf"]
    optimum = design_expected_loss(privacy, loss, prior)
    rows = {row.name.split(" (")[0]: row for row in compare_expected_loss(privacy, loss, prior, optimum.objective)}
    assert rows["truncated geometric"].ratio == pytest.approx(1.0, rel=1e-12)
    assert rows["exponential mechanism"].ratio > 1.01 and rows["randomised response"].ratio > 1.01


# ------------------------------------------------------------ mutual information at large epsilon x diameter
def test_mutual_information_bounds_stay_finite_at_large_epsilon_times_diameter():
    """A line of 9 at epsilon 7 (diameter 56): the orbit LP's raw class sums reach e^56, which HiGHS read as infinite."""
    from designer.design.gap import design_with_gap
    from designer.design.gap.column_generation import entropy_upper_bound, symmetric_relaxation_bound
    from designer.design.vertex import design_by_vertices

    k = 9
    privacy = PrivacyMatrix.from_graph(nx.path_graph(k), 7.0)
    prior = priors(k)["uniform"]
    exact = design_by_vertices(privacy, prior=prior).objective
    relaxed = symmetric_relaxation_bound(privacy, prior)
    entropy = float(-(prior * np.log(prior)).sum())
    assert np.isfinite(relaxed) and exact <= relaxed
    assert entropy <= entropy_upper_bound(prior) <= entropy * (1 + 1e-12)
    result = design_with_gap(privacy, prior, gap_tolerance=1e-3, max_seconds=4, threads=1)
    assert result.certified and np.isfinite(result.upper)
    assert result.lower <= exact + 1e-9 <= result.upper + 2e-9


def test_tree_cones_are_counted_without_enumerating():
    """A tree's cone has 2^(d-1) rays; a line of 50 is refused at once, pointing to column generation."""
    from designer.cone import Cone, ConeTooLargeError

    tree = nx.Graph([(0, 1), (1, 2), (1, 3), (3, 4), (3, 5), (5, 6)])
    for u, v in tree.edges:
        tree.edges[u, v]["weight"] = 0.5 + (u + v) / 10
    for privacy in (PrivacyMatrix.from_graph(nx.path_graph(6), 0.7), PrivacyMatrix.from_graph(tree, 1.0)):
        (component,) = Cone.from_privacy(privacy).components
        assert component.is_tree and component.known_vertices == 2 ** (privacy.k - 1)
        assert component.vertices(method="enumerate").n_vertices == 2 ** (privacy.k - 1)
    cycle = Cone.from_privacy(PrivacyMatrix.from_graph(nx.cycle_graph(6), 0.7)).components[0]
    assert not cycle.is_tree and cycle.known_vertices is None
    with pytest.raises(ConeTooLargeError, match="562949953421312 vertices.*--method column-generation"):
        Cone.from_privacy(PrivacyMatrix.from_graph(nx.path_graph(50), 1.0)).check_size()


def test_tailing_master_is_finished_over_the_outputs_it_uses(monkeypatch):
    """At a small epsilon few outputs carry the optimum; after TAILING_ROUNDS the LP over them (grown by reduced cost) closes it."""
    import designer.design.loss_decomposition as decomposition

    monkeypatch.setattr(decomposition, "TAILING_ROUNDS", 2)
    privacy, distance, prior, edges = grid_problem((4, 4), 0.1, 6)
    expected = lp_optimum(prior[:, None] * distance, edges)
    result = design_expected_loss(privacy, distance, prior, method="column-generation")
    assert "restricted output LP" in result.methods[0] and result.certified and result.gap <= 1e-6
    assert result.lower_bound <= expected + 1e-12 and result.objective == pytest.approx(expected, rel=1e-6)
    assert np.count_nonzero(result.channel.matrix.sum(axis=0) > 1e-9) < privacy.k


# ------------------------------------------------------------ command line
def test_cli_line_of_50_designs_in_closed_form_with_baselines(tmp_path):
    """`design --family metric-line --k 50 --eps 0.5 --utility expected-loss` exited 2 (Clarabel: AlmostSolved)."""
    import json

    from typer.testing import CliRunner

    from designer.cli import app

    out = tmp_path / "Q.csv"
    result = CliRunner().invoke(app, ["design", "--family", "metric-line", "--k", "50", "--eps", "0.5", "--utility",
                                      "expected-loss", "--out", str(out), "--compare", "--json", "--max-seconds", "30"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["method"] == "expected-loss" and "closed-form" in summary["reason"]  # the front door's route
    assert summary["lower_bound"] == summary["upper_bound"] == summary["bounds"]["lower"]["value"]  # the theorem
    assert summary["objective"] == pytest.approx(summary["upper_bound"], rel=1e-12)  # moved inside E by ~1e-14
    rows = {row["name"].split(" (")[0]: row for row in summary["compare"]}
    assert rows["truncated geometric"]["ratio"] == pytest.approx(1.0) and rows["exponential mechanism"]["ratio"] > 1
    channel = np.loadtxt(out, delimiter=",")
    loss = 1.0 - np.eye(50)  # the default 0/1 loss
    assert float(np.mean(np.sum(loss * channel, axis=1))) == pytest.approx(summary["objective"], rel=1e-12)
    refused = CliRunner().invoke(app, ["design", "--family", "metric-line", "--k", "5", "--utility", "expected-loss",
                                       "--out", str(tmp_path / "R.csv"), "--compare", "--plot", str(tmp_path / "p.png")])
    assert refused.exit_code == 2 and "not with expected-loss" in refused.output


def test_master_weights_are_polished_to_exact_row_sums():
    """Rows off by the simplex's tolerance (3.6e-9 on a 20 x 20 grid) became log-ratio errors past 1e-9 when divided out."""
    from solvers.ratio_lp import _polished

    rng = np.random.default_rng(4)
    columns, exact = rng.random((12, 6)), rng.uniform(0.5, 1.0, 6)
    columns /= (columns[:6].T @ exact)[None, :]  # the first six columns with weights `exact` give rows of sum 1
    weights = np.concatenate([exact * (1 + 1e-8 * rng.standard_normal(6)), np.zeros(6)])
    polished = _polished(columns, weights)
    assert np.abs(columns.T @ polished - 1).max() < 1e-14 < np.abs(columns.T @ weights - 1).max()
    assert np.all(polished[6:] == 0)


def test_unsolved_pricing_lps_keep_the_bound_valid(monkeypatch):
    """A pricing LP that stays unsolved ("Solve error" on a 1,000-node graph) adds nothing; its stale multipliers stay valid."""
    import solvers.ratio_lp as ratio_lp

    privacy, distance, prior, edges = grid_problem((3, 4), 0.5, 8)
    expected = lp_optimum(prior[:, None] * distance, edges)
    real, calls = ratio_lp._Pricing.solve, []

    def flaky(self, direction):
        calls.append(1)
        return None if len(calls) % 5 == 0 else real(self, direction)

    monkeypatch.setattr(ratio_lp._Pricing, "solve", flaky)
    # one thread: the same LPs fail in every run (with two, which call is the fifth depends on scheduling)
    monkeypatch.setattr("designer.design.gap.column_generation.default_threads", lambda: 1)
    result = design_expected_loss(privacy, distance, prior, method="column-generation")
    assert result.certified and result.lower_bound <= expected <= result.upper_bound + 1e-12
    assert result.objective == pytest.approx(expected, rel=1e-6)


def test_a_pricing_vertex_the_basis_cannot_rebuild_is_raised_onto_the_cone():
    """The solver's values carry its absolute tolerance at entries near e^{-28}: raised (Dijkstra in log space), they
    equal the closure's max-plus raise and lie in the cone; kept as they were, a 30 x 30 grid's master broke an edge's
    ratio by a factor e^3 and its repaired channel certified only within 1.3e-10."""
    from designer.design.repair import raise_into_cone
    from solvers.ratio_lp import _Pricing

    privacy = PrivacyMatrix.grid_l1((6, 6), 3.0)
    pairs = privacy.nonredundant_pairs()
    pricing = _Pricing(36, pairs, np.exp(privacy.epsilon[pairs[:, 0], pairs[:, 1]]))
    vertex = np.exp(-privacy.closure().epsilon[14])  # a geometric column, entries down to e^{-18}
    noisy = np.where(vertex < 1e-6, np.random.default_rng(0).uniform(0, 1e-10, 36), vertex)
    raised = pricing._raised_into_cone(noisy)
    reference = raise_into_cone(privacy, noisy[:, None])[:, 0]
    np.testing.assert_allclose(raised, reference / reference.sum(), rtol=1e-13)
    logs = np.log(raised)
    excess = logs[pairs[:, 0]] - logs[pairs[:, 1]] - privacy.epsilon[pairs[:, 0], pairs[:, 1]]
    assert excess.max() < 1e-13
    noisy_logs = np.log(np.maximum(noisy, 1e-300))
    assert (noisy_logs[pairs[:, 0]] - noisy_logs[pairs[:, 1]] - privacy.epsilon[pairs[:, 0], pairs[:, 1]]).max() > 1


@pytest.mark.parametrize("backend", ["clarabel", "highs"])
def test_a_direct_solve_stopped_by_its_time_limit_is_an_error_not_an_answer(backend):
    """The restricted output LP and the direct route pass what is left of --max-seconds to the solver (a 350-node graph's
    restricted LP ran 50 s past a 150 s budget); an iterate it stops is not a solution."""
    from solvers.linear import solve_ratio_bounded_stochastic_lp

    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 3)
    cost = prior[:, None] * distance
    pairs, ratios = [(a, b) for a, b, _ in edges], [ratio for *_, ratio in edges]
    with pytest.raises(LinearProgramError):
        solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend=backend, time_limit=0.0)
    solved = solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend=backend, time_limit=60.0)
    assert solved.objective == pytest.approx(lp_optimum(cost, edges), rel=1e-7)


def test_a_restricted_output_lp_out_of_time_leaves_the_column_generation_answer():
    from solvers.ratio_lp import restricted_output_lp

    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 3)
    pairs = privacy.nonredundant_pairs()
    ratios = np.exp(privacy.epsilon[pairs[:, 0], pairs[:, 1]])
    result = restricted_output_lp(prior[:, None] * distance, pairs, ratios, np.arange(16), lower_bound=0.5,
                                  max_seconds=0.0)
    assert result.stopped == "time" and result.objective == np.inf and result.lower_bound == 0.5
    assert not result.matrix.any()


def test_cli_says_when_the_time_budget_stopped_an_expected_loss_design(tmp_path):
    from typer.testing import CliRunner

    from designer.cli import app

    out = tmp_path / "Q.csv"
    result = CliRunner().invoke(app, ["design", "--family", "metric-grid", "--grid", "8x8", "--eps", "0.5", "--utility",
                                      "expected-loss", "--max-seconds", "0.01", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["stopped"] == "time" and summary["lower_bound"] < summary["upper_bound"]
    channel = np.loadtxt(out, delimiter=",")
    assert np.allclose(channel.sum(axis=1), 1.0, atol=1e-12)
    shown = CliRunner().invoke(app, ["design", "--family", "metric-grid", "--grid", "8x8", "--eps", "0.5", "--utility",
                                     "expected-loss", "--max-seconds", "0.01", "--out", str(out)])
    assert shown.exit_code == 0 and "time budget (--max-seconds) ran out first" in " ".join(shown.output.split())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_points_found_for_one_output_serve_every_output(seed, monkeypatch):
    """The passes over the points found so far (as many as they take) reach the master over every (output, point)
    pair: an LP in the test."""
    import solvers.ratio_lp as ratio_lp
    from solvers.ratio_lp import _Master, _priced_from_vertices

    monkeypatch.setattr(ratio_lp, "VERTEX_PASSES", 100)  # a round has 3; here they run until nothing prices out

    privacy, distance, _, _ = grid_problem((3, 3), 0.5, 3)
    k = privacy.k
    rng = np.random.default_rng(seed)
    cost = rng.dirichlet(np.ones(k))[:, None] * distance
    cost = cost / cost.max()
    laplace = np.exp(-privacy.closure().epsilon)  # row c: the Laplace shape at c, a point of the cone
    mixed = rng.dirichlet(np.ones(k), 6) @ laplace  # cone points that are not vertices
    points = np.vstack([laplace, mixed, np.ones((1, k))])
    points /= points.sum(axis=1, keepdims=True)
    master = _Master(k)  # the start of column generation: output y owns the shape at y, and the constant column
    master.add(points[:k], np.arange(k), np.einsum("jx,xj->j", points[:k], cost))
    master.add(points[-1:], np.array([0]), points[-1:] @ cost[:, [0]])
    start, u, _, _ = master.solve()
    objective, u, added = _priced_from_vertices(master, points, cost, start, u, math.inf, 1e-9)
    pairs = [(y, j) for y in range(k) for j in range(points.shape[0])]
    every = scipy.optimize.linprog([cost[:, y] @ points[j] for y, j in pairs],
                                   A_eq=np.array([points[j] for _, j in pairs]).T, b_eq=np.ones(k),
                                   bounds=(0, None), method="highs-ds")
    assert added > 0 and objective < start - 0.05
    assert objective == pytest.approx(every.fun, rel=1e-12)
    assert (cost.T @ points.T - points @ u).min() >= -1e-12  # no point prices out for any output any more


def test_a_master_out_of_time_keeps_its_earlier_answer():
    """A re-solve past the deadline returns the last optimal answer, padded with zeros for the new columns (feasible)."""
    from solvers.ratio_lp import _Master

    privacy, distance, _, _ = grid_problem((4, 4), 0.5, 4)
    k = privacy.k
    cost = distance / distance.max()
    laplace = np.exp(-privacy.closure().epsilon)
    laplace /= laplace.sum(axis=1, keepdims=True)
    master = _Master(k)
    master.add(np.ones((1, k)) / k, np.array([0]), np.full(k, 1 / k) @ cost[:, [0]])
    with pytest.raises(LinearProgramError, match="within the time budget"):  # held to the deadline when asked
        master.solve(deadline=time.perf_counter() - 1.0, first_by_deadline=True)
    earlier, duals, weights, finished = master.solve(deadline=time.perf_counter() - 1.0)  # no answer yet: solved
    assert finished and weights.size == 1
    master.add(laplace, np.arange(k), np.einsum("jx,xj->j", laplace, cost))
    objective, late_duals, padded, finished = master.solve(deadline=time.perf_counter() - 1.0)
    assert not finished and objective == earlier and np.array_equal(late_duals, duals)
    assert padded.shape == (k + 1,) and np.array_equal(padded[1:], np.zeros(k))
    assert np.allclose(master.columns.T @ padded, 1.0, atol=1e-9)
    objective, _, weights, finished = master.solve()
    every = scipy.optimize.linprog(np.einsum("jx,xj->j", master.columns, cost[:, master.owners]),
                                   A_eq=master.columns.T, b_eq=np.ones(k), bounds=(0, None), method="highs-ds")
    assert finished and objective < earlier - 0.05 and objective == pytest.approx(every.fun, rel=1e-9)


def test_outputs_are_priced_along_a_nearest_neighbour_tour_of_their_costs():
    """Each step of the tour goes to the nearest output not yet visited (distances by scipy), from the cheapest."""
    from scipy.spatial.distance import cdist

    from solvers.ratio_lp import output_tour

    rng = np.random.default_rng(3)
    cost = rng.random((7, 40))
    tour = output_tour(cost)
    assert sorted(tour.tolist()) == list(range(40)) and tour[0] == np.argmin(cost.sum(axis=0))
    distances = cdist(cost.T, cost.T)
    for step in range(1, 40):
        unvisited = np.setdiff1d(np.arange(40), tour[:step])
        assert distances[tour[step - 1], tour[step]] == pytest.approx(distances[tour[step - 1], unvisited].min(), abs=1e-12)


def test_an_answer_the_repair_cannot_certify_gives_way_to_the_next_best(monkeypatch):
    """The restricted output LP's answer is taken only when its repair certifies; else column generation's channel."""
    import dataclasses
    import types

    import designer.design.loss_decomposition as decomposition
    import solvers.ratio_lp as ratio_lp

    monkeypatch.setattr(decomposition, "TAILING_ROUNDS", 2)
    generated, real_generation, real_restricted = [], ratio_lp.column_generation_by_output, ratio_lp.restricted_output_lp
    monkeypatch.setattr(ratio_lp, "column_generation_by_output",
                        lambda *a, **o: generated.append(real_generation(*a, **o)) or generated[-1])
    # the restricted answer claims the least objective, and the (patched) certifier refuses the first channel
    monkeypatch.setattr(ratio_lp, "restricted_output_lp",
                        lambda *a, **o: dataclasses.replace(real_restricted(*a, **o), objective=-1.0))
    checked, real_certify = [], expected_loss_module.certify_design

    def refuse_first(channel, privacy, exact):
        checked.append(channel)
        return types.SimpleNamespace(verdict="violated") if len(checked) == 1 else real_certify(channel, privacy, exact)

    monkeypatch.setattr(expected_loss_module, "certify_design", refuse_first)
    privacy, distance, prior, _ = grid_problem((4, 4), 0.1, 6)
    result = design_expected_loss(privacy, distance, prior, method="column-generation")
    assert len(checked) == 2 and "restricted output LP" in result.methods[0]
    assert result.certified and result.channel is not checked[0]
    assert result.objective == pytest.approx(generated[0].objective, rel=1e-9)


def test_when_no_repair_certifies_a_mixture_with_the_uniform_channel_is_returned(monkeypatch):
    """A (patched) repair that moves 1e-7 of row 0's largest entry to another output breaks a tight ratio of every
    candidate: the design returns one mixed with the uniform channel by the least weight that certifies, certified
    by the real certifier and within 1e-6 (relative) of the edge-only LP's optimum."""
    real_repair = expected_loss_module.repair_into_cone

    def moved(privacy, matrix):
        repaired = real_repair(privacy, matrix).copy()
        top = int(np.argmax(repaired[0]))
        other = int(np.argsort(repaired[0])[-2])
        shift = 1e-7 * repaired[0, top]
        repaired[0, top] += shift
        repaired[0, other] -= shift
        return repaired

    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 3)
    expected = lp_optimum(prior[:, None] * distance, edges)
    clean = design_expected_loss(privacy, distance, prior, method="column-generation")
    assert clean.certified and certify(Channel(moved(privacy, clean.channel.matrix)), privacy).verdict != "certified"
    monkeypatch.setattr(expected_loss_module, "repair_into_cone", moved)
    result = design_expected_loss(privacy, distance, prior, method="column-generation")
    assert result.certified and certify(result.channel, privacy).verdict == "certified"
    assert clean.objective < result.objective <= expected * (1 + 1e-6)


def test_rounds_price_at_a_stability_centre_whose_bound_is_kept():
    """Round 1 prices at the master's multipliers, then at the centre u = 0: that bound is at least k min_y rho_y(0)
    (slice LPs in scipy), positive where the one at the master's multipliers is negative (-25 here); later rounds
    price at u and near the centre, and still reach the edge-only LP."""
    import solvers.ratio_lp as ratio_lp
    from designer.design.loss_decomposition import constraint_pairs, start_columns

    graph = nx.random_geometric_graph(30, 0.3, seed=1)
    graph = graph.subgraph(max(nx.connected_components(graph), key=len)).copy()
    privacy = PrivacyMatrix.from_graph(graph, 0.5)
    k = privacy.k
    cost = privacy.epsilon / 0.5 / k  # uniform prior, hop-count loss
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    slice_rows = np.zeros((len(pairs), k))
    slice_rows[np.arange(len(pairs)), pairs[:, 0]] = 1.0
    slice_rows[np.arange(len(pairs)), pairs[:, 1]] = -ratios
    rho = [scipy.optimize.linprog(cost[:, y], A_ub=slice_rows, b_ub=np.zeros(len(pairs)), A_eq=np.ones((1, k)),
                                  b_eq=[1.0], bounds=(0, None), method="highs-ds").fun for y in range(k)]
    optimum = lp_optimum(cost, [(a, b, r) for (a, b), r in zip(pairs, ratios)])
    columns, owners = start_columns(privacy, cost)
    smoothed = ratio_lp.column_generation_by_output(cost, pairs, ratios, columns, owners, gap_tolerance=1e-8,
                                                    bound_ratios=bound_ratios)
    assert [entry["smoothing"] for entry in smoothed.history[:4]] == [0.0, 1.0, 0.0, ratio_lp.SMOOTHING]
    assert [entry["round"] for entry in smoothed.history[:4]] == [1, 1, 2, 2]
    assert smoothed.history[1]["lower_bound"] >= k * min(rho) * (1 - 1e-9) > 0 > smoothed.history[0]["lower_bound"]
    assert smoothed.lower_bound <= optimum <= smoothed.objective + 1e-12
    assert smoothed.objective == pytest.approx(optimum, rel=1e-7)


@pytest.mark.parametrize("method", ["direct", "column-generation", "interior-point"])
def test_an_optimum_of_zero_has_a_zero_gap(method):
    """An output of no loss for every input makes the optimum 0 (report it always). The LP bounds' outward rounding
    stays below 0 (-5e-324 to -3e-14), which left an infinite relative gap; every input's cheapest output bounds it
    at 0 exactly (``unconstrained_lower_bound``)."""
    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 2)
    loss = distance.copy()
    loss[:, 4] = 0.0
    assert lp_optimum(prior[:, None] * loss, edges) == pytest.approx(0.0, abs=1e-12)
    with_zero = design_expected_loss(privacy, loss, prior, method=method)
    assert with_zero.certified and with_zero.upper_bound == 0.0 and with_zero.lower_bound == 0.0
    assert with_zero.gap == 0.0 and with_zero.bound.startswith("every input's cheapest output")
    # with a loss on every output the LP bound is the higher one, and the bound says so
    positive = design_expected_loss(privacy, distance + 1.0, prior, method=method)
    assert positive.bound.startswith("LP duality") and positive.lower_bound > float(np.sum(prior))
    assert unconstrained_lower_bound(prior[:, None] * (distance + 1.0)) == pytest.approx(float(np.sum(prior)))


@pytest.mark.parametrize("method", ["direct", "column-generation", "interior-point", "first-order"])
def test_random_small_designs_bracket_the_whole_lp(method):
    """Random E (uniform levels, with inf entries, whole levels with zeros, constant) and random losses with zeros
    (an optimum of 0 among them): each design is certified, within the gap, and brackets scipy's LP over every
    finite pair of the closure. The sweep behind it (40 designs a seed) found an indefinite Schur complement, an
    infinite gap at an optimum of 0 and a crash of the first-order method (benchmarks/RESULTS.md)."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        k, m, kind = int(rng.integers(3, 8)), int(rng.integers(2, 8)), int(rng.integers(0, 4))
        epsilon = rng.uniform(0.0, 3.0, (k, k))
        if kind == 1:
            epsilon[rng.random((k, k)) < 0.4] = np.inf
        elif kind == 2:
            epsilon = np.round(epsilon)
        elif kind == 3:
            epsilon = np.full((k, k), float(rng.uniform(0.1, 2.0)))
        np.fill_diagonal(epsilon, 0.0)
        privacy = PrivacyMatrix(epsilon)
        loss = rng.uniform(0.0, 1.0, (k, m)) * (rng.random((k, m)) < 0.8)
        prior = rng.dirichlet(np.ones(k))
        optimum = lp_optimum(prior[:, None] * loss, all_pairs(privacy.closure().epsilon))
        result = design_expected_loss(privacy, loss, prior, method=method, max_seconds=30)
        assert result.certified and result.gap <= 1e-6, (k, m, kind, result.gap)
        assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12
