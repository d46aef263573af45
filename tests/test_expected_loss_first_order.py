"""Expected loss by a first-order method (HiGHS's PDLP): the iterate, its bound, the master after it, the route.

References are the edge-only LPs of ``test_expected_loss_metric`` (scipy's simplex, written there).
"""

import numpy as np
import pytest

import designer.design.expected_loss as expected_loss_module
import designer.design.first_order as first_order_module
import designer.design.handover as handover_module
from designer.design.expected_loss import design_expected_loss
from designer.design.loss_decomposition import constraint_pairs
from designer.spec import PrivacyMatrix
from solvers.first_order import FirstOrderRatioLP
from solvers.linear import LinearProgramError, solve_ratio_bounded_stochastic_lp
from solvers.ratio_lp import column_generation_by_output, lagrangian_lower_bound
from test_expected_loss_metric import grid_problem, lp_optimum


def test_pdlp_iterate_and_its_multipliers_bracket_the_edge_only_lp():
    privacy, distance, prior, edges = grid_problem((3, 4), 0.5, 5)
    cost = prior[:, None] * distance
    optimum = lp_optimum(cost, edges)
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    solver = FirstOrderRatioLP(cost, pairs, ratios, tolerance=1e-6)
    with pytest.raises(LinearProgramError, match="no time left"):
        solver.run(0.0)
    first = solver.run(60.0)
    assert first.status == "Optimal" and first.matrix.shape == (12, 12)
    assert np.allclose(first.matrix.sum(axis=1), 1.0)
    assert first.objective == pytest.approx(optimum, rel=1e-4)
    bound = lagrangian_lower_bound(cost, pairs, bound_ratios, first.pair_duals)
    assert optimum * (1 - 1e-4) <= bound <= optimum + 1e-15
    # a tighter tolerance continues from the iterate: more iterations, a bound at least as close
    iterations = solver.iterations
    solver.tighten(1e-9)
    second = solver.run(60.0)
    assert solver.iterations > iterations and solver.chunks == 2
    assert optimum * (1 - 1e-6) <= lagrangian_lower_bound(cost, pairs, bound_ratios, second.pair_duals) <= optimum


@pytest.mark.parametrize("squared", [False, True])
def test_first_order_design_is_certified_at_the_edge_only_optimum(squared):
    """PDLP converges, tolerance after tolerance. Under the Manhattan loss its iterate, repaired and mixed with a
    little of the uniform channel, certifies within the gap (no columns); under the squared loss no iterate comes
    within the gap down to the tolerance 1e-10, and the columns after it close the gap."""
    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 7)
    loss = distance**2 if squared else distance
    optimum = lp_optimum(prior[:, None] * loss, edges)
    result = design_expected_loss(privacy, loss, prior, method="first-order", max_seconds=60)
    assert result.certified and result.method == "first-order"
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12
    assert result.gap <= 1e-6 and result.stopped == "gap"
    pdlp = [entry for entry in result.history if entry.get("backend") == "pdlp"]
    assert pdlp and all(entry["status"] == "Optimal" for entry in pdlp)
    assert all(entry["upper"] >= optimum * (1 - 1e-9) for entry in pdlp)
    if squared:
        assert all(entry["upper"] > optimum * (1 + 1e-6) for entry in pdlp) and pdlp[-1]["tolerance"] == 1e-10
        assert "centred at its multipliers" in result.methods[0]
    else:
        assert 0 < pdlp[-1]["uniform_weight"] < 1e-5  # certified by the mixture, within 1e-6 of the optimum
        assert pdlp[-1]["upper"] == pytest.approx(result.upper_bound, rel=1e-9)
        assert len(pdlp) == len(result.history) and "column generation" not in result.methods[0]


def test_columns_centred_at_a_loose_iterates_multipliers_close_the_gap(monkeypatch):
    """PDLP stopped at a relative tolerance of 1e-3 leaves no iterate within the gap; the column generation centred
    at its multipliers, its raised columns among the start columns, closes it."""
    monkeypatch.setattr(first_order_module, "SMALLEST_TOLERANCE", 1e-3)
    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 7)
    optimum = lp_optimum(prior[:, None] * distance, edges)
    result = design_expected_loss(privacy, distance, prior, method="first-order", max_seconds=60)
    pdlp = [entry for entry in result.history if entry.get("backend") == "pdlp"]
    assert len(pdlp) == 1 and pdlp[0]["tolerance"] == 1e-3
    assert pdlp[0]["upper"] - pdlp[0]["lower_bound"] > 1e-6 * pdlp[0]["upper"]  # the gap is open after PDLP
    assert "centred at its multipliers" in result.methods[0]
    assert result.certified and result.gap <= 1e-6 and result.stopped == "gap"
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12


def test_progress_reports_only_proven_bounds_and_certified_channels(monkeypatch):
    """Every upper bound reported is the expected loss of a certified channel, never below the optimum (a repaired
    PDLP iterate near convergence can cost 4e-9 less without being E-LDP), and neither bound moves backwards across
    the phases (column generation after PDLP starts its own bound at -inf). Until an iterate certifies, the upper
    bound is the best constant channel's loss."""
    privacy, distance, prior, edges = grid_problem((3, 4), 0.5, 7)
    cost = prior[:, None] * distance
    optimum = lp_optimum(cost, edges)

    def reports_of_a_design() -> tuple[np.ndarray, np.ndarray]:
        reports = []
        result = design_expected_loss(privacy, distance, prior, method="first-order", max_seconds=60,
                                      progress=lambda lower, upper, seconds: reports.append((lower, upper)))
        lowers, uppers = np.array(reports).T
        # a certified channel may break ratios by the certifier's 1e-9, so cost that much less than the optimum
        assert np.all(uppers >= optimum * (1 - 1e-9)) and np.all(lowers <= optimum + 1e-12)
        assert np.all(np.diff(lowers) >= 0) and np.all(np.diff(uppers) <= 0)
        assert uppers[-1] == pytest.approx(result.upper_bound, rel=1e-9) and result.certified  # repaired once more
        assert result.gap <= 1e-6
        return lowers, uppers

    lowers, uppers = reports_of_a_design()
    assert len(uppers) >= 3 and optimum * (1 + 1e-7) < uppers[0] < optimum * (1 + 1e-5)  # a mixture certified
    # no iterate certifies before the columns (PDLP stops at 1e-3, no mixture): the best constant channel first
    monkeypatch.setattr(first_order_module, "SMALLEST_TOLERANCE", 1e-3)
    monkeypatch.setattr(first_order_module, "certified_mixture", lambda privacy, matrix: None)
    lowers, uppers = reports_of_a_design()
    assert uppers[0] == pytest.approx(cost.sum(axis=0).min(), rel=1e-12) and len(uppers) >= 2


def test_a_mixture_with_the_uniform_channel_certifies_a_nearly_feasible_channel():
    """A channel whose ratios exceed e^E by 1.2e-7 (relative) certifies once mixed with the uniform channel; the
    bisection's weight is within 9% of the least (half of it does not certify)."""
    from designer.certify import certify
    from designer.channel import Channel
    from designer.design.repair import LEAST_MIXTURE, certified_mixture

    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 2)
    pairs, ratios, _ = constraint_pairs(privacy)
    whole = solve_ratio_bounded_stochastic_lp(prior[:, None] * distance, pairs, ratios, backend="highs")
    channel = whole.matrix.copy()
    channel[0, np.argmax(channel[0])] *= 1 + 2e-7  # row 0 breaks its tight ratios by about 1e-7
    channel /= channel.sum(axis=1, keepdims=True)
    assert certify(Channel(channel), privacy).verdict != "certified"
    mixed, weight = certified_mixture(privacy, channel)
    assert certify(Channel(mixed), privacy).verdict == "certified"
    assert np.allclose(mixed, (1 - weight) * channel + weight / channel.shape[1], rtol=0, atol=1e-15)
    assert LEAST_MIXTURE <= weight <= 1e-4
    assert certify(Channel((1 - weight / 2) * channel + weight / 2 / channel.shape[1]), privacy).verdict != "certified"
    # E = 0 between distinct rows: no mixture helps
    assert certified_mixture(type(privacy)(np.zeros((2, 2))), np.array([[0.6, 0.4], [0.4, 0.6]])) is None


def test_progress_keeps_coming_while_pdlp_runs(monkeypatch):
    """PDLP reports nothing for minutes at 1,000 nodes; a helper thread reports the bounds so far meanwhile (here
    every 0.02 s through a PDLP slowed by 0.3 s), and stops with it."""
    import threading
    import time

    import designer.design.progress as progress_module

    monkeypatch.setattr(progress_module, "HEARTBEAT_SECONDS", 0.02)
    run = FirstOrderRatioLP.run

    def slow(self, seconds):
        time.sleep(0.3)
        return run(self, seconds)

    monkeypatch.setattr(FirstOrderRatioLP, "run", slow)
    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 4)
    cost = prior[:, None] * distance
    reports, threads = [], set()

    def record(lower, upper, seconds):
        reports.append((lower, upper, seconds))
        threads.add(threading.current_thread().name)

    before = threading.active_count()
    result = first_order_module.first_order(privacy, cost, 1e-6, 60.0, record)
    assert threading.active_count() == before and len(threads) == 2  # the main thread and the helper
    first_run = [entry for entry in reports if entry[0] == -np.inf]  # before PDLP's first bound
    constant = cost.sum(axis=0).min()  # the best constant channel's loss
    assert len(first_run) >= 5 and all(upper == pytest.approx(constant, rel=1e-12) for _, upper, _ in first_run)
    assert np.all(np.diff([seconds for *_, seconds in reports]) >= 0)
    assert result[2] == "gap" and reports[-1][0] > -np.inf


def test_best_so_far_keeps_the_largest_lower_and_smallest_upper():
    from designer.design.progress import best_so_far, shifted

    seen = []
    report = best_so_far(shifted(lambda lower, upper, seconds: seen.append((lower, upper, seconds)), 10.0))
    for lower, upper, seconds in [(0.1, 0.5, 1.0), (-9.4, 0.6, 2.0), (0.2, 0.4, 3.0)]:
        report(lower, upper, seconds)
    assert seen == [(0.1, 0.5, 11.0), (0.1, 0.5, 12.0), (0.2, 0.4, 13.0)]
    assert best_so_far(None) is None


def test_without_an_iterate_the_master_of_the_start_columns_answers(monkeypatch):
    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 4)
    optimum = lp_optimum(prior[:, None] * distance, edges)

    def fails(self, seconds):
        raise LinearProgramError("first-order LP gave no usable iterate after 0 iterations")

    monkeypatch.setattr(FirstOrderRatioLP, "run", fails)
    result = design_expected_loss(privacy, distance, prior, method="first-order", max_seconds=30)
    assert result.certified and "no usable iterate" in result.methods[0]
    assert all(entry.get("backend") != "pdlp" for entry in result.history)
    assert result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12


def test_auto_closes_by_columns_alone_when_it_can(monkeypatch):
    """Columns close a 4 x 4 grid in their sixth of the budget (the interior-point method's estimate taken as
    large): neither the interior-point nor the first-order method runs (the handover to either is
    ``test_block_interior::test_auto_hands_an_open_gap_to_the_method_that_fits``), nor for an explicit column
    generation."""
    privacy, distance, prior, edges = grid_problem((4, 4), 0.5, 9)
    optimum = lp_optimum(prior[:, None] * distance, edges)
    monkeypatch.setattr(expected_loss_module, "DIRECT_MAX_ENTRIES", 10)
    monkeypatch.setattr(handover_module, "estimated_seconds", lambda *arguments: 1e6)
    for method in ("auto", "column-generation"):
        closed = design_expected_loss(privacy, distance, prior, method=method, max_seconds=60)
        assert closed.method == "column-generation" and closed.stopped in ("gap", "priced out")
        assert all(entry.get("backend") not in ("pdlp", "block interior point") for entry in closed.history)
        assert closed.lower_bound <= optimum + 1e-12 <= closed.upper_bound + 2e-12


def test_column_generation_priced_at_a_given_centre_bounds_there():
    """A given centre prices every output before the first master solve: at the optimum's row multipliers (HiGHS's,
    from the whole LP) that bound is the optimum itself, and the first master, with those vertices, is lower;
    from ``u = 0`` round 1's bound is far below it."""
    from designer.design.loss_decomposition import start_columns

    privacy, distance, prior, edges = grid_problem((3, 4), 0.5, 6)
    cost = prior[:, None] * distance
    optimum = lp_optimum(cost, edges)
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    whole = solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend="highs")
    columns, owners = start_columns(privacy, cost)
    common = {"gap_tolerance": 1e-12, "bound_ratios": bound_ratios, "max_rounds": 1}
    centred = column_generation_by_output(cost, pairs, ratios, columns, owners, centre=whole.row_duals, **common)
    at_zero = column_generation_by_output(cost, pairs, ratios, columns, owners, **common)
    assert [entry["round"] for entry in centred.history] == [0, 1, 1]
    assert [entry["smoothing"] for entry in centred.history] == [1.0, 0.0, 0.95]
    assert centred.history[0]["lower_bound"] == pytest.approx(optimum, rel=1e-9) and centred.lower_bound <= optimum
    # the vertices priced there join the first master: 1.19569 after one round, against 1.29819 from u = 0
    assert centred.history[0]["new_columns"] > 0 and optimum < centred.objective < at_zero.objective - 0.05
    assert at_zero.lower_bound < optimum * 0.9


def test_a_master_that_cannot_answer_in_the_budget_leaves_a_certified_channel(monkeypatch):
    """The column generation after PDLP holds its first master solve to the budget; when that raises, the
    design keeps PDLP's bound and returns a certified channel (the repaired iterate or the best constant one)."""
    import solvers.ratio_lp

    privacy, distance, prior, edges = grid_problem((3, 3), 0.5, 8)
    optimum = lp_optimum(prior[:, None] * distance, edges)

    def no_answer(*arguments, **options):
        assert options["first_by_deadline"] is True
        raise LinearProgramError("master LP not solved within the time budget")

    monkeypatch.setattr(solvers.ratio_lp, "column_generation_by_output", no_answer)
    monkeypatch.setattr(first_order_module, "SMALLEST_TOLERANCE", 1e-3)  # PDLP alone does not close the gap
    result = design_expected_loss(privacy, distance, prior, method="first-order", max_seconds=30)
    assert result.certified and result.stopped == "time" and "within the time budget" in result.methods[0]
    assert result.history[0]["backend"] == "pdlp"
    assert optimum * (1 - 1e-4) <= result.lower_bound <= optimum + 1e-12 <= result.upper_bound + 2e-12


def test_the_constant_channel_is_returned_when_it_closes_the_gap():
    """E = 0 forces equal rows: the best constant channel is optimal, PDLP's bound meets its loss before any iterate
    certifies, and that channel (the upper bound so far) is the design (it was dropped, and the design failed)."""
    rng = np.random.default_rng(6)
    loss = rng.uniform(0.0, 1.0, (5, 4))
    prior = rng.dirichlet(np.ones(5))
    result = design_expected_loss(PrivacyMatrix(np.zeros((5, 5))), loss, prior, method="first-order", max_seconds=30)
    best_constant = float((prior[:, None] * loss).sum(axis=0).min())
    assert result.certified and result.upper_bound == pytest.approx(best_constant, rel=1e-12)
    assert result.lower_bound <= best_constant + 1e-15 and result.gap <= 1e-6
