"""The expected-loss LP by the block-angular interior-point method: the solver, the design, the route.

References are the LPs of ``test_expected_loss_metric`` (scipy's HiGHS simplex on the whole LP, every finite pair
or the grid's edges written there), independent of the method's pairs, ordering and Schur complement.
"""

import networkx as nx
import numpy as np
import pytest

import designer.design.block_interior as block_interior_module
import designer.design.block_scope as block_scope_module
import designer.design.expected_loss as expected_loss_module
import designer.design.handover as handover_module
from designer.design.expected_loss import design_expected_loss
from designer.design.loss_decomposition import constraint_pairs
from designer.spec import PrivacyMatrix
from solvers.block_ipm import _bands, block_interior_point
from solvers.ratio_lp import lagrangian_lower_bound
from test_expected_loss_metric import all_pairs, grid_problem, lp_optimum


def random_graph(nodes, radius, seed, epsilon=0.5):
    """A connected random geometric graph, edges weighted by length, E = epsilon d_G / (mean edge)."""
    graph = nx.random_geometric_graph(nodes, radius, seed=seed)
    graph = graph.subgraph(max(nx.connected_components(graph), key=len)).copy()
    position = nx.get_node_attributes(graph, "pos")
    for u, v in graph.edges:
        graph.edges[u, v]["weight"] = float(np.hypot(*np.subtract(position[u], position[v])))
    mean_edge = float(np.mean([data["weight"] for *_, data in graph.edges(data=True)]))
    privacy = PrivacyMatrix.from_graph(graph, epsilon / mean_edge)
    return privacy, privacy.epsilon * mean_edge / epsilon


def test_band_storage_holds_each_block():
    """The band assembly reproduces ``A^T diag(d) A + diag(v)`` in the reverse Cuthill-McKee order, entry by entry
    (``d`` by pair, ``v`` by row in that order, as the solver keeps its iterate)."""
    privacy, distance = random_graph(18, 0.4, 3)
    pairs, ratios, _ = constraint_pairs(privacy)
    k, n = privacy.k, len(pairs)
    bands = _bands(k, pairs, ratios)
    rng = np.random.default_rng(0)
    pair_weights, bound_weights = rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, k)
    rows = np.zeros((n, k))
    rows[np.arange(n), pairs[:, 0]] -= 1.0
    rows[np.arange(n), pairs[:, 1]] += ratios
    expected = ((rows.T * pair_weights) @ rows)[np.ix_(bands.order, bands.order)] + np.diag(bound_weights)
    band = (bands.assembly @ np.concatenate([pair_weights, bound_weights])).reshape(bands.width + 1, k)
    for offset in range(bands.width + 1):
        assert np.allclose(band[offset, : k - offset], np.diagonal(expected, -offset), rtol=1e-14, atol=1e-14)
    assert np.allclose(np.tril(expected, -bands.width - 1), 0.0)  # nothing outside the band


def test_solver_brackets_the_whole_lp_on_a_grid():
    privacy, distance, prior, edges = grid_problem((3, 4), 0.5, 11)
    cost = prior[:, None] * distance**2
    optimum = lp_optimum(cost, edges)
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    result = block_interior_point(cost, pairs, ratios, bound_ratios=bound_ratios)
    assert result.status in ("optimal", "stalled") and result.iterations < 20  # 8 here (9 without correctors)
    assert np.allclose(result.matrix.sum(axis=1), 1.0, atol=1e-12) and result.matrix.min() > 0
    assert float(np.sum(cost * result.matrix)) == pytest.approx(optimum, rel=1e-8)
    assert optimum * (1 - 1e-7) <= result.lower_bound <= optimum + 1e-15
    # the bound is the Lagrangian bound of the returned multipliers, recomputed here
    assert lagrangian_lower_bound(cost, pairs, bound_ratios, result.pair_duals) == result.lower_bound
    # each column in the cone up to the iterate's slack
    ratio_rows = result.matrix[pairs[:, 0]] - ratios[:, None] * result.matrix[pairs[:, 1]]
    assert ratio_rows.max() <= 1e-9


def test_solver_takes_a_directed_e_with_missing_pairs_and_fewer_outputs():
    """An asymmetric E with ``inf`` entries (no constraint) and a 7 x 4 loss: blocks with free entries still
    factor (the bounds ``Q >= 0`` keep them definite), and the method meets the whole LP over every finite pair."""
    rng = np.random.default_rng(5)
    epsilon = rng.uniform(0.3, 2.0, (7, 7))
    epsilon[rng.random((7, 7)) < 0.3] = np.inf
    np.fill_diagonal(epsilon, 0.0)
    privacy = PrivacyMatrix(epsilon)
    cost = rng.uniform(0.0, 1.0, (7, 4)) * rng.dirichlet(np.ones(7))[:, None]
    optimum = lp_optimum(cost, all_pairs(privacy.closure().epsilon))
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    result = block_interior_point(cost, pairs, ratios, bound_ratios=bound_ratios)
    assert float(np.sum(cost * result.matrix)) == pytest.approx(optimum, rel=1e-7)
    assert optimum * (1 - 1e-6) <= result.lower_bound <= optimum + 1e-15


def test_design_on_a_random_geometric_graph_is_certified_at_the_lp_optimum():
    privacy, distance = random_graph(20, 0.45, 2)
    k = privacy.k
    prior = np.full(k, 1.0 / k)
    optimum = lp_optimum(prior[:, None] * distance, all_pairs(privacy.epsilon))
    seen = []
    result = design_expected_loss(privacy, distance, prior, method="interior-point", max_seconds=60,
                                  progress=lambda lower, upper, seconds: seen.append((lower, upper)))
    assert result.certified and result.method == "interior-point" and result.stopped == "gap"
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12 and result.gap <= 1e-6
    assert "block interior point" in result.methods[0]
    # every report brackets the optimum, and the bar ends at the returned bracket
    assert all(lower <= optimum + 1e-12 <= upper + 2e-12 for lower, upper in seen)
    assert seen[-1] == pytest.approx((result.lower_bound, result.upper_bound), rel=1e-14)


def test_a_deadline_returns_a_certified_channel_with_its_bracket():
    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 4)
    optimum = lp_optimum(prior[:, None] * distance, edges)
    result = design_expected_loss(privacy, distance, prior, method="interior-point", max_seconds=0.0)
    assert result.certified and result.stopped == "time"
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12
    # with no iteration done the channel is the constant one of least cost
    assert result.upper_bound == pytest.approx(float(np.min((prior[:, None] * distance).sum(axis=0))), rel=1e-12)


def test_steep_levels_are_refused_by_name():
    privacy = PrivacyMatrix.grid_l1((3, 3), 31.0)
    distance = np.abs(np.arange(9)[:, None] - np.arange(9)[None, :]).astype(float)
    with pytest.raises(ValueError, match="levels up to 30 on the constrained pairs; this E has 31"):
        design_expected_loss(privacy, distance, method="interior-point")
    assert block_interior_module.estimated_seconds(privacy, 9) == np.inf


def test_too_many_ratio_rows_are_refused_by_size(monkeypatch):
    privacy, distance, prior, _ = grid_problem((3, 3), 0.5, 1)
    monkeypatch.setattr(block_scope_module, "MAX_RATIO_ROWS", 24 * 9 - 1)  # 24 edge pairs x 9 outputs
    with pytest.raises(ValueError, match="up to 215 ratio rows .* this design has 216"):
        design_expected_loss(privacy, distance, prior, method="interior-point")
    assert block_interior_module.estimated_seconds(privacy, 9) == np.inf


def test_the_estimate_is_iterations_times_outputs_times_an_inverse(monkeypatch):
    """``ITERATIONS_AT_350 (k / 350)^ITERATION_GROWTH`` iterations, each ``SECONDS_PER_INVERSE`` timed inverses per
    output: with a clock that charges every ``dpotri`` exactly 1 ms, the estimate is that product."""
    privacy = PrivacyMatrix.grid_l1((4, 4), 0.5)
    ticks = iter(np.arange(0.0, 1.0, 0.001))
    monkeypatch.setattr(block_interior_module.time, "perf_counter", lambda: float(next(ticks)))
    expected = 110.0 * (16 / 350) ** 0.7 * 20 * 2.8 * 0.001
    assert block_interior_module.estimated_seconds(privacy, 20) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("estimate", [0.0, np.inf])
def test_auto_hands_an_open_gap_to_the_method_that_fits(monkeypatch, estimate):
    """An estimate of 0 leaves columns no time and the interior-point method takes over; an infinite one (a refused
    E) leaves the rest to the first-order method (columns get none either: a share of 0)."""
    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 9)
    optimum = lp_optimum(prior[:, None] * distance, edges)
    monkeypatch.setattr(expected_loss_module, "DIRECT_MAX_ENTRIES", 10)
    monkeypatch.setattr(handover_module, "COLUMN_GENERATION_SHARE", 0.0)
    monkeypatch.setattr(handover_module, "estimated_seconds", lambda *arguments: estimate)
    handed = design_expected_loss(privacy, distance, prior, max_seconds=60)
    assert handed.method == "column-generation" and "the interior-point method if its estimate fits" in handed.reason
    interior = estimate == 0.0
    pdlp = any(entry.get("backend") == "pdlp" for entry in handed.history)
    assert any(entry.get("backend") == "block interior point" for entry in handed.history) == interior
    assert pdlp != interior
    assert ("block interior point" if interior else "first-order LP (HiGHS PDLP)") in handed.methods[-1]
    assert handed.certified and handed.gap <= 1e-6
    assert handed.lower_bound <= optimum + 1e-12 <= handed.upper_bound + 2e-12


def test_columns_get_half_the_estimate_when_that_is_less_than_their_share(monkeypatch):
    privacy, distance, prior, _ = grid_problem((4, 4), 0.5, 9)
    monkeypatch.setattr(expected_loss_module, "DIRECT_MAX_ENTRIES", 10)
    monkeypatch.setattr(handover_module, "estimated_seconds", lambda *arguments: 8.0)
    budgets = []
    original = handover_module.decompose_by_output

    def recorded(privacy, cost, gap, max_seconds, progress):
        budgets.append(max_seconds)
        return original(privacy, cost, gap, max_seconds, progress)

    monkeypatch.setattr(handover_module, "decompose_by_output", recorded)
    for budget in (60.0, 12.0):
        design_expected_loss(privacy, distance, prior, max_seconds=budget)
    assert budgets[0] == pytest.approx(4.0) and budgets[1] == pytest.approx(2.0, rel=1e-3)  # half of 8; a sixth of 12


def test_without_constrained_pairs_each_row_takes_its_cheapest_output():
    """E = inf off the diagonal constrains nothing: the optimum is ``sum_x min_y cost[x, y]`` (bands of width 0)."""
    epsilon = np.full((5, 5), np.inf)
    np.fill_diagonal(epsilon, 0.0)
    pairs, ratios, _ = constraint_pairs(PrivacyMatrix(epsilon))
    cost = np.random.default_rng(3).uniform(0.0, 1.0, (5, 3))
    result = block_interior_point(cost, pairs, ratios)
    assert len(pairs) == 0 and result.status in ("optimal", "stalled")
    assert result.lower_bound == pytest.approx(cost.min(axis=1).sum(), rel=1e-12)
    assert float(np.sum(cost * result.matrix)) == pytest.approx(cost.min(axis=1).sum(), rel=1e-8)


def test_zero_levels_force_equal_rows():
    """E = 0 (ratios 1 both ways) makes every row equal: the optimum is the constant channel of least cost, and the
    blocks stay definite through their bounds ``Q >= 0``."""
    pairs, ratios, _ = constraint_pairs(PrivacyMatrix(np.zeros((4, 4))))
    cost = np.random.default_rng(4).uniform(0.0, 1.0, (4, 6))
    result = block_interior_point(cost, pairs, ratios)
    assert np.all(ratios == 1.0) and result.status in ("optimal", "stalled")
    assert float(np.sum(cost * result.matrix)) == pytest.approx(cost.sum(axis=0).min(), rel=1e-8)
    assert cost.sum(axis=0).min() * (1 - 1e-8) <= result.lower_bound <= cost.sum(axis=0).min() + 1e-15


def test_the_outputs_solver_solves_a_set_of_outputs_and_implies_its_bound():
    """On 5 of a graph's outputs the solver's objective is the edge-only LP's over those outputs (HiGHS simplex in the
    test); its row multipliers are the ones its pair multipliers imply, so they sum to their Lagrangian bound; with
    no time it returns None (the caller keeps its answer)."""
    privacy, distance = random_graph(16, 0.5, 3)
    pairs, ratios, _ = constraint_pairs(privacy)
    cost = (distance / privacy.k)[:, [0, 3, 7, 9, 12]]
    solved = block_scope_module.outputs_solver(privacy)(cost, pairs, ratios, 60.0)
    assert solved.status.startswith("block interior point")
    optimum = lp_optimum(cost, all_pairs(privacy.epsilon))
    assert solved.objective == pytest.approx(optimum, rel=1e-8)
    bound = lagrangian_lower_bound(cost, pairs, ratios, solved.pair_duals)
    assert bound <= optimum + 1e-15 and np.sum(solved.row_duals) == pytest.approx(bound, rel=1e-12)
    assert block_scope_module.outputs_solver(privacy)(cost, pairs, ratios, 0.0) is None


def test_the_outputs_solver_leaves_what_the_block_method_refuses_to_the_direct_lp(monkeypatch):
    monkeypatch.setattr(block_scope_module, "MAX_LEVEL", 0.4)  # the grid's edges are at 0.5
    privacy, distance, prior, edges = grid_problem((2, 3), 0.5, 2)
    pairs, ratios, _ = constraint_pairs(privacy)
    cost = prior[:, None] * distance
    solved = block_scope_module.outputs_solver(privacy)(cost, pairs, ratios, 60.0)
    assert not solved.status.startswith("block interior point")
    assert solved.objective == pytest.approx(lp_optimum(cost, edges), rel=1e-7)


def test_column_generation_finishes_on_the_outputs_it_uses_by_the_block_method(monkeypatch):
    """After one round of columns the LP over the outputs the master uses is solved by the block method, grown by
    reduced cost, and the design closes at the edge-only LP's optimum."""
    import designer.design.loss_decomposition as decomposition

    monkeypatch.setattr(decomposition, "TAILING_ROUNDS", 1)
    privacy, distance = random_graph(24, 0.4, 5)
    prior = np.random.default_rng(5).dirichlet(np.ones(privacy.k))
    optimum = lp_optimum(prior[:, None] * distance, all_pairs(privacy.epsilon))
    result = design_expected_loss(privacy, distance, prior, method="column-generation", max_seconds=60)
    assert "restricted output LP" in result.methods[0]
    solvers = [entry["solver"] for entry in result.history if "solver" in entry]
    assert solvers and all(solver.startswith("block interior point") for solver in solvers)
    assert result.certified and result.stopped == "gap" and result.gap <= 1e-6
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12
