"""designer.design_channel, the front door: the route it picks and why, its bounds, and exact certification as returned."""

import json
import math
import warnings

import numpy as np
import pytest
from reference import random_privacy
from typer.testing import CliRunner

import designer
from designer.certify import certify
from designer.cli import app
from designer.design.outcome import BOUND_KINDS
from designer.design.problem import Problem
from designer.design.routes import COLUMN_GENERATION_K, choose_route
from designer.design.symmetry import ClassStructure, SymmetryLostError, design_symmetric
from designer.design.vertex import design_by_vertices
from designer.mechanisms import binary_optimal, binary_privacy
from designer.spec import PrivacyMatrix

runner = CliRunner()
design_channel = designer.design_channel


def information(prior: np.ndarray, matrix: np.ndarray) -> float:
    """I(X; Y) = sum_x,y p_x Q[x,y] log(Q[x,y] / (p Q)_y), written out here (not designer.utility), in
    numpy's long double, so that a difference of two values near 1.5 nats resolves 1e-15."""
    matrix = np.asarray(matrix, dtype=np.longdouble)
    prior = np.asarray(prior, dtype=np.longdouble)
    output = prior @ matrix
    positive = matrix > 0
    ratio = np.where(positive, matrix / np.where(output > 0, output, 1)[None, :], 1)
    return prior @ np.where(positive, matrix * np.log(ratio), 0).sum(axis=1)


def staircase_optimum(k: int, epsilon: float) -> float:
    """Classic LDP, uniform prior: the best subset size, ``max_d log(k / s_d) + d eps e^eps / s_d`` (Ye and Barg)."""
    d = np.arange(1, k, dtype=float)
    s = d * math.exp(epsilon) + k - d
    return float(np.max(np.log(k / s) + d * epsilon * math.exp(epsilon) / s))


def line_metric(k: int, epsilon: float) -> PrivacyMatrix:
    positions = np.arange(k)
    return PrivacyMatrix(epsilon * np.abs(positions[:, None] - positions[None, :]), name="line")


def assert_bounds(design):
    assert design.lower.kind in BOUND_KINDS and design.upper.kind in BOUND_KINDS
    assert design.lower.value <= design.objective + 1e-12 and design.objective <= design.upper.value + 1e-12


# ------------------------------------------------------------------ routes and reasons
def test_small_dense_e_is_enumerated_with_its_reason_and_a_dual_bound():
    privacy = PrivacyMatrix.classic(6, 1.0)
    design = design_channel(privacy)
    assert design.method == "enumerate" and "k = 6 <= 16" in design.reason
    assert design.upper.kind == "dual" and design.lower.kind == "certified channel"
    assert_bounds(design)
    assert design.upper.value == pytest.approx(staircase_optimum(6, 1.0), abs=1e-12)
    assert design.objective == pytest.approx(staircase_optimum(6, 1.0), abs=1e-12)
    shown = repr(design)  # one readable line at the prompt, not the route's arrays
    assert "\n" not in shown and len(shown) < 300 and "'enumerate'" in shown and f"6 x {design.channel.n_outputs} channel" in shown


def test_classic_k_1000_goes_to_the_orbit_lp_through_twin_classes():
    """The call the issue asks for: as ``ldp-designer design --E`` does, about a second."""
    design = design_channel(PrivacyMatrix.classic(1000, 1.0))
    assert design.method == "symmetry" and "1 twin classes of sizes 1000" in design.reason
    assert design.channel.matrix.shape == (1000, 1000) and design.certified
    assert design.interior.proven and design.certificate.mode == "row-constant"
    optimum = staircase_optimum(1000, 1.0)
    assert design.objective == pytest.approx(optimum, abs=1e-12) and design.upper.value == pytest.approx(optimum, abs=1e-12)
    assert_bounds(design)
    by_classes = design_channel(ClassStructure.classic(1000, 1.0))
    assert by_classes.method == "symmetry" and by_classes.reason.startswith("symmetry: classes given")
    assert by_classes.objective == pytest.approx(design.objective, abs=1e-13)


def test_a_class_structure_too_large_to_tabulate_is_a_class_level_design():
    design = design_channel(ClassStructure.classic(100_000, 1.0))
    assert design.channel is None and design.certificate.mode == "structural" and design.interior is None
    assert design.objective == pytest.approx(staircase_optimum(100_000, 1.0), abs=1e-12)
    assert not design.summary()["materialised"]


def test_column_generation_asked_for_brackets_the_enumerated_optimum():
    privacy = random_privacy(6, 1)
    optimum = design_by_vertices(privacy).objective
    design = design_channel(privacy, method="column-generation", gap=1e-4, max_seconds=20)
    assert design.method == "column-generation" and "asked for" in design.reason
    assert design.upper.kind in ("Lagrangian", "relaxation")
    assert design.lower.value <= optimum + 1e-12 <= design.upper.value + 2e-12
    assert_bounds(design)
    assert certify(design.channel, privacy, exact=True).verdict == "certified"


def test_auto_goes_to_column_generation_when_symmetry_is_lost_at_large_k():
    privacy = random_privacy(COLUMN_GENERATION_K + 1, 3)
    route = choose_route(Problem(privacy))
    assert route.method == "column-generation"
    assert route.reason.startswith("symmetry lost (21 twin classes") and "column generation with certified bounds" in route.reason
    assert choose_route(Problem(random_privacy(17, 3))).method == "enumerate"  # within enumeration's reach
    assert choose_route(Problem(privacy, exact=True)).method == "enumerate"  # exact: no column generation
    with pytest.raises(SymmetryLostError):
        choose_route(Problem(privacy), "symmetry")


def test_expected_loss_bounds_name_their_proof():
    """A line: the truncated geometric closed form is the optimum (GRS 2009); a grid: the LP's Lagrangian bound."""
    privacy = line_metric(5, 0.7)
    loss = np.abs(np.arange(5)[:, None] - np.arange(5)[None, :]).astype(float)
    design = design_channel(privacy, "expected-loss", loss=loss)
    assert design.method == "expected-loss" and design.upper.kind == "certified channel"
    assert design.lower.kind == "closed form" and "closed-form" in design.reason
    assert design.lower.value == pytest.approx(design.route.objective, abs=1e-15)  # the theorem's optimum
    assert_bounds(design)
    grid = PrivacyMatrix.grid_l1((3, 3), 0.7)
    boxed = design_channel(grid, "expected-loss")
    assert boxed.lower.kind == "Lagrangian" and boxed.upper.value - boxed.lower.value < 1e-6
    assert_bounds(boxed)
    assert design.objective == pytest.approx(float(np.sum(np.full(5, 0.2)[:, None] * loss * design.channel.matrix)), abs=1e-15)
    assert design.objective - design.route.objective == pytest.approx(design.margin_cost, abs=1e-15)
    with pytest.raises(ValueError, match="--exact applies to vertex designs"):
        design_channel(privacy, "expected-loss", exact=True)
    with pytest.raises(ValueError, match="a loss matrix is the expected-loss utility's"):
        design_channel(privacy, loss=loss)


def test_expected_loss_methods_and_gap_pass_through_the_front_door():
    """The expected loss's own methods (and its gap, default 1e-6, not column generation's 1%) reach
    design_expected_loss; the vertex routes refuse it, and its methods refuse the other utilities."""
    grid = PrivacyMatrix.grid_l1((4, 4), 0.5)
    for method in ("direct", "column-generation", "interior-point", "first-order"):
        design = design_channel(grid, "expected-loss", method=method)
        assert design.method == "expected-loss" and design.route.method == method
        assert design.reason.startswith(f"expected loss, {method}: requested") and design.route.gap <= 1e-6
    assert design.upper.value - design.lower.value <= 1e-6 * design.upper.value
    # PDLP's tolerance is the gap over 10: 0.05 for a gap of 0.5, 1e-7 for the default 1e-6
    loose = design_channel(grid, "expected-loss", method="first-order", gap=0.5)
    tight = design_channel(grid, "expected-loss", method="first-order")
    assert [d.route.history[0]["tolerance"] for d in (loose, tight)] == [0.05, 1e-7]
    assert loose.route.stopped == tight.route.stopped == "gap" and loose.route.gap <= 0.5
    line = line_metric(6, 0.5)
    assert design_channel(line, "expected-loss", method="closed-form").route.method == "closed-form"
    with pytest.raises(ValueError, match="the closed form does not apply"):
        design_channel(grid, "expected-loss", method="closed-form")
    for method in ("enumerate", "symmetry"):
        with pytest.raises(ValueError, match=f"--method {method} does not design for the expected loss"):
            design_channel(grid, "expected-loss", method=method)
    for method in ("direct", "interior-point", "first-order"):
        with pytest.raises(ValueError, match=f"--method {method} designs for the expected loss only"):
            design_channel(grid, method=method)
    refused = runner.invoke(app, ["design", "--family", "metric-grid", "--grid", "3x3", "--method", "first-order",
                                  "--out", "never.csv"])
    assert refused.exit_code == 2 and "designs for the expected loss only" in refused.output


def test_binary_closed_form_is_theorem_2_and_auto_keeps_the_vertex_lp():
    privacy = binary_privacy(0.5, 1.2)
    prior = np.array([0.3, 0.7])
    design = design_channel(privacy, prior=prior, method="closed-form")
    assert design.method == "closed-form" and "Theorem 2" in design.reason and design.upper.kind == "closed form"
    q_star = binary_optimal(0.5, 1.2).matrix
    assert design.upper.value == pytest.approx(float(information(prior, q_star)), abs=1e-15)
    assert design.upper.value == pytest.approx(design_by_vertices(privacy, prior=prior).objective, abs=1e-12)
    assert_bounds(design)
    assert design_channel(privacy, prior=prior).method == "enumerate"  # its dual certificate and vertex budget
    with pytest.raises(ValueError, match="no closed form applies"):
        design_channel(PrivacyMatrix.classic(3, 1.0), method="closed-form")


def test_unknown_method_and_utility_are_one_line_errors():
    with pytest.raises(ValueError, match="--method must be one of auto, closed-form"):
        design_channel(PrivacyMatrix.classic(3, 1.0), method="fastest")
    with pytest.raises(ValueError, match="utility must be one of"):
        design_channel(PrivacyMatrix.classic(3, 1.0), "fisher")


# ------------------------------------------------------------------ exact certification as returned
EXAMPLES = {
    "block 4x8 (README)": (PrivacyMatrix.block([8, 8, 8, 8], 1.0), None),
    "block 3x4, enumerated": (PrivacyMatrix.block([4, 4, 4], 1.0), None),
    "classic": (PrivacyMatrix.classic(7, 0.8), None),
    "high-low": (PrivacyMatrix.high_low(8, [0, 1, 2], 1.0), np.r_[0.2, 0.2, 0.1, np.full(5, 0.1)]),
    "random asymmetric": (random_privacy(6, 4), None),
    "line metric": (line_metric(6, 0.7), None),
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_what_it_returns_passes_the_exact_certifier_and_the_cost_is_reported(name):
    privacy, prior = EXAMPLES[name]
    design = design_channel(privacy, prior=prior)
    assert certify(design.channel, privacy, exact=True).verdict == "certified"
    assert design.interior.proven and design.exact_proof.startswith("margin argument")
    weights = np.full(privacy.k, 1 / privacy.k) if prior is None else prior
    cost = information(weights, design.route.channel.matrix) - information(weights, design.channel.matrix)
    # the front door evaluates the utility in doubles: its cost is right to their resolution (~1e-15 per nat)
    assert float(cost) == pytest.approx(design.margin_cost, abs=1e-14) and -1e-14 < design.margin_cost < 1e-12
    assert design.objective == pytest.approx(float(information(weights, design.channel.matrix)), abs=1e-14)
    assert np.abs(design.channel.matrix.sum(axis=1) - 1).max() < 1e-15
    assert_bounds(design)


def test_the_move_is_needed_and_small_on_the_readme_example():
    privacy = PrivacyMatrix.block([8, 8, 8, 8], 1.0)
    design = design_channel(privacy)
    assert 0 < design.interior.shrink < 1e-12
    tight = certify(design.channel, privacy).tight_epsilon
    finite = np.isfinite(privacy.epsilon) & ~np.eye(32, dtype=bool)
    assert np.all(tight[finite] < privacy.epsilon[finite])  # strictly inside E, in floats too
    summary = design.summary()
    assert summary["margin_cost"] == design.margin_cost and summary["bounds"]["upper"]["kind"] == "dual"


def test_exact_designs_are_returned_exactly_and_not_moved():
    privacy = PrivacyMatrix.classic(4, 1.0)
    design = design_channel(privacy, exact=True)
    assert design.channel.is_exact and design.interior is None and design.certificate.mode == "exact"
    structure = design_channel(ClassStructure.classic(30, "log(3)"), exact=True)
    assert structure.upper.kind == "exact bracket" and structure.lower.value <= structure.upper.value
    assert structure.upper.value - structure.lower.value < 1e-12


# ------------------------------------------------------------------ levels from 40 to the double range (issue 30)
@pytest.mark.parametrize("family", [["--family", "ldp", "--k", "5"], ["--family", "high-low", "--k", "20", "--sensitive", "4"]])
@pytest.mark.parametrize("eps", ["40", "300", "700", "708.3"])
def test_large_class_levels_give_a_certified_design_without_warnings(tmp_path, family, eps):
    out = tmp_path / "Q.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = runner.invoke(app, ["design", *family, "--eps", eps, "--out", str(out), "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert summary["certified"] and summary["method"] == "symmetry"
    k = int(family[family.index("--k") + 1])
    # at these levels the optimum reveals the input: I = H(X) = log k up to e^-40
    assert summary["objective"] == pytest.approx(math.log(k), abs=1e-12)
    assert summary["bounds"]["upper"]["value"] >= summary["objective"]


@pytest.mark.parametrize("eps", ["709", "710", "1e5"])
def test_class_levels_beyond_the_double_range_are_one_line(tmp_path, eps):
    out = tmp_path / "Q.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = runner.invoke(app, ["design", "--family", "ldp", "--k", "5", "--eps", eps, "--out", str(out)])
    assert outcome.exit_code == 2 and "beyond the double range" in outcome.stderr
    assert len(outcome.stderr.strip().splitlines()) == 1 and not out.exists()


def test_cli_prints_the_method_the_bounds_and_the_move(tmp_path):
    out = tmp_path / "Q.csv"
    outcome = runner.invoke(app, ["design", "--family", "block", "--k", "32", "--blocks", "4", "--eps", "1", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    text = " ".join(outcome.stdout.split())
    assert "method: symmetry: classes given, orbit LP" in text and "(certified channel) <= optimum <=" in text
    assert "inside E: log-spreads shrunk by" in text and "exact proof: margin argument" in text
    from designer.io import read_channel

    assert certify(read_channel(out), PrivacyMatrix.block([8, 8, 8, 8], 1.0), exact=True).verdict == "certified"
    assert design_symmetric(ClassStructure.block([8] * 4, 1.0)).objective == pytest.approx(
        json.loads(runner.invoke(app, ["design", "--family", "block", "--k", "32", "--blocks", "4", "--eps", "1",
                                       "--out", str(out), "--json"]).stdout)["objective"], abs=1e-13)


def test_an_unused_output_stays_zero_when_the_channel_moves_inside(recwarn):
    """A column of zeros (an output the design never reports) is left at 0, with no NaN on the way."""
    from designer.design.interior import move_inside

    epsilon = np.log(3.0)
    rr = np.array([[3.0, 1.0], [1.0, 3.0]]) / 4  # tight on both pairs: it must move
    matrix = np.hstack([rr, np.zeros((2, 1))])
    allowed = np.full((2, 2), epsilon)
    moved = move_inside(matrix, np.full((2, 2), epsilon), allowed)
    assert moved.shrink > 0 and np.all(moved.matrix[:, 2] == 0)
    assert np.all(np.isfinite(moved.matrix)) and np.allclose(moved.matrix.sum(axis=1), 1.0, atol=1e-15)
    assert np.log(moved.matrix[0, 0] / moved.matrix[1, 0]) < epsilon
    assert not [warning for warning in recwarn if issubclass(warning.category, RuntimeWarning)]
