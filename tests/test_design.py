"""designer.design.vertex and the ``design`` command: optimal channels, certificates, saving, CLI."""

import json
import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from scipy.special import rel_entr
from typer.testing import CliRunner

from designer.cli import app
from designer.cone import Cone
from designer.design.expected_loss import design_expected_loss
from designer.design.repair import merge_proportional_columns, project_into_cone
from designer.design.vertex import VERTEX_UTILITIES, column_utility, design_by_vertices
from designer.examples import example_path
from designer.io import read_channel
from designer.mechanisms import (
    GeneralizedRandomizedResponse,
    binary_optimal,
    binary_privacy,
)
from designer.spec import PrivacyMatrix
from designer.utility import (
    column_f_divergence,
    entropy,
    f_divergence,
    mutual_information,
)
from solvers.linear import solve_vertex_lp

runner = CliRunner()


def sorted_columns(matrix):
    matrix = np.asarray(matrix, dtype=float)
    return matrix[:, np.lexsort(np.round(matrix, 9)[::-1])]


def graph_metric(k: int, seed: int) -> PrivacyMatrix:
    graph = nx.connected_watts_strogatz_graph(k, 3, 0.4, seed=seed)
    rng = np.random.default_rng(seed)
    for u, v in graph.edges:
        graph[u][v]["weight"] = float(rng.uniform(0.4, 1.2))
    return PrivacyMatrix.from_graph(graph)


# ------------------------------------------------------------ Theorem 2
LEVELS = [0.0, 0.1, 0.5, 1.0, 2.0, 4.0, math.inf]


@pytest.mark.parametrize("eps12", LEVELS)
@pytest.mark.parametrize("eps21", LEVELS)
def test_binary_lp_recovers_theorem_2(eps12, eps21):
    """The LP's optimum is Q* of eq. (9) (Mangat eq. (11) when one level is inf), for any prior."""
    expected = merge_proportional_columns(binary_optimal(eps12, eps21).matrix)
    for prior in ([0.5, 0.5], [0.8, 0.2]):
        result = design_by_vertices(binary_privacy(eps12, eps21), prior=prior)
        assert result.certified
        np.testing.assert_allclose(sorted_columns(result.channel.matrix), sorted_columns(expected), atol=1e-12)
        assert result.objective == pytest.approx(mutual_information(prior, expected), abs=1e-12)


@pytest.mark.parametrize("eps12, eps21", [("log(2)", "log(3)"), ("inf", "log(5/2)"), ("log(7)", "inf"), ("0", "log(2)")])
def test_binary_exact_design_is_exactly_q_star(eps12, eps21):
    result = design_by_vertices(binary_privacy(eps12, eps21), exact=True)
    expected = merge_proportional_columns(binary_optimal(eps12, eps21).matrix)
    assert result.certificate.mode == "exact" and result.certified
    exact = result.channel.exact_matrix
    assert all(isinstance(value, Fraction) for value in exact.ravel())
    q_star = binary_optimal(eps12, eps21).exact_matrix
    kept = [y for y in range(2) if any(q_star[:, y])]
    assert len(kept) == exact.shape[1] and np.array_equal(exact, q_star[:, kept])
    np.testing.assert_allclose(sorted_columns(exact), sorted_columns(expected), atol=1e-15)


# ------------------------------------------------------- randomised response
@pytest.mark.parametrize("k, epsilon", [(3, 1.0), (4, 2.0), (5, 3.0), (6, 5.0), (8, 6.0)])
def test_classic_ldp_large_epsilon_is_randomised_response(k, epsilon):
    result = design_by_vertices(PrivacyMatrix.classic(k, epsilon))
    rr = GeneralizedRandomizedResponse(k, epsilon).channel().matrix
    np.testing.assert_allclose(result.channel.matrix, rr, atol=1e-10)
    assert result.objective == pytest.approx(mutual_information(np.full(k, 1 / k), rr), abs=1e-12)


def test_classic_ldp_small_epsilon_beats_randomised_response():
    """At small epsilon the optimum is not RR (Kairouz et al.: binary-like staircase)."""
    result = design_by_vertices(PrivacyMatrix.classic(6, 0.5))
    rr = GeneralizedRandomizedResponse(6, 0.5).channel().matrix
    assert result.n_outputs < 6
    assert result.objective > mutual_information(np.full(6, 1 / 6), rr) + 1e-4


# -------------------------------------------------------- every design
FAMILIES = [
    PrivacyMatrix.classic(4, 1.0),
    PrivacyMatrix.high_low(5, [0, 1], 1.0),
    PrivacyMatrix.block([2, 3], 0.8),
    PrivacyMatrix.grid_l1((2, 3), 0.6),
    graph_metric(6, seed=3),
    PrivacyMatrix([[0, 1, "inf"], [0.5, 0, 2], [1.5, 1, 0]]),
]


@pytest.mark.parametrize("privacy", FAMILIES, ids=lambda p: p.name)
@pytest.mark.parametrize("utility", VERTEX_UTILITIES)
def test_designs_are_certified_optimal_and_beat_alternatives(privacy, utility):
    rng = np.random.default_rng(privacy.k)
    prior = rng.dirichlet(np.ones(privacy.k))
    alternative = rng.dirichlet(np.ones(privacy.k)) * 0.5 + 0.5 / privacy.k
    result = design_by_vertices(privacy, utility, prior, alternative)
    assert result.certified and result.certificate.margin > -1e-12
    mu = column_utility(utility, prior, alternative)
    assert result.objective == pytest.approx(float(mu(result.channel.matrix).sum()), abs=1e-10)
    # dual certificate: mu(v) <= y . v on every vertex, sum(y) = objective
    assert result.dual_residual <= 1e-9 and abs(result.duality_gap) <= 1e-9
    assert result.duals.sum() == pytest.approx(result.objective, abs=1e-9)
    # no E-LDP alternative does better: RR at the smallest level, post-processings (Prop. 1)
    epsilon_min = privacy.epsilon[~np.eye(privacy.k, dtype=bool)].min()
    competitors = [GeneralizedRandomizedResponse(privacy.k, epsilon_min).channel().matrix]
    competitors += [result.channel.matrix @ rng.dirichlet(np.ones(3), size=result.n_outputs) for _ in range(5)]
    for competitor in competitors:
        assert float(mu(competitor).sum()) <= result.objective + 1e-10


def test_f_divergence_utilities_match_direct_formulas():
    rng = np.random.default_rng(0)
    channel = rng.dirichlet(np.ones(4), size=3)
    first, second = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    p, r = first @ channel, second @ channel
    assert f_divergence(first, second, channel, "kl") == pytest.approx(rel_entr(p, r).sum(), abs=1e-14)
    assert f_divergence(first, second, channel, "chi-square") == pytest.approx(((p - r) ** 2 / r).sum(), abs=1e-14)
    assert f_divergence(first, second, channel, "total-variation") == pytest.approx(0.5 * abs(p - r).sum(), abs=1e-14)
    hellinger = ((np.sqrt(p) - np.sqrt(r)) ** 2).sum()
    assert f_divergence(first, second, channel, "hellinger") == pytest.approx(hellinger, abs=1e-14)
    with pytest.raises(ValueError, match="positive on every symbol"):
        column_f_divergence(first, [1.0, 0.0, 0.0], channel)
    with pytest.raises(ValueError, match="they are equal, so every channel scores 0"):
        design_by_vertices(PrivacyMatrix.classic(3, 1.0), "kl")  # uniform prior against the default uniform alternative
    prior = np.array([0.6, 0.3, 0.1])
    by_default = design_by_vertices(PrivacyMatrix.classic(3, 1.0), "kl", prior=prior)
    explicit = design_by_vertices(PrivacyMatrix.classic(3, 1.0), "kl", prior=prior, alternative=np.full(3, 1 / 3))
    assert by_default.objective == pytest.approx(explicit.objective, abs=1e-12)
    Q = by_default.channel.matrix
    assert by_default.objective == pytest.approx(rel_entr(prior @ Q, np.full(3, 1 / 3) @ Q).sum(), abs=1e-10)


# ------------------------------------------------ components, back ends
def test_block_design_is_direct_sum_of_blocks_with_conditional_priors():
    """One LP over all padded vertices = per-block LPs; I = H(B) + sum_b P(b) I_b."""
    privacy = PrivacyMatrix.block([3, 2, 4], 1.0)
    prior = np.random.default_rng(5).dirichlet(np.ones(9))
    result = design_by_vertices(privacy, prior=prior)
    cone = Cone.from_privacy(privacy)
    padded = []
    for found in cone.vertices():
        block = np.zeros((found.n_vertices, 9))
        block[:, found.symbols] = found.vertices
        padded.append(block)
    padded = np.vstack(padded)
    direct = solve_vertex_lp(padded, column_utility("mutual-information", prior)(padded.T), np.ones(9))
    assert result.objective == pytest.approx(direct.objective, abs=1e-12)
    block_mass, per_block = [], []
    for symbols in privacy.components():
        mass = prior[symbols].sum()
        block = design_by_vertices(privacy.restrict(symbols), prior=prior[symbols] / mass)
        block_mass.append(mass)
        per_block.append(block.objective)
        rows = result.channel.matrix[symbols]
        used = rows.sum(axis=0) > 0
        np.testing.assert_allclose(sorted_columns(rows[:, used]), sorted_columns(block.channel.matrix), atol=1e-12)
    assert result.objective == pytest.approx(entropy(block_mass) + np.dot(block_mass, per_block), abs=1e-12)


def test_closed_form_enumeration_and_cvxpy_agree():
    privacy = PrivacyMatrix.classic(5, 1.3)
    prior = np.random.default_rng(1).dirichlet(np.ones(5))
    closed = design_by_vertices(privacy, prior=prior)
    enumerated = design_by_vertices(privacy, prior=prior, vertex_method="enumerate", row_order="lex_min")
    modelled = design_by_vertices(privacy, prior=prior, backend="cvxpy")
    assert closed.methods == ["closed-form"] and enumerated.methods == ["enumerated"]
    assert closed.objective == pytest.approx(enumerated.objective, abs=1e-12)
    assert closed.objective == pytest.approx(modelled.objective, abs=1e-7)


def test_exact_design_is_an_exact_proof():
    privacy = PrivacyMatrix([[0, "log(3)", "log(2)"], ["log(3)", 0, "log(3)"], ["log(2)", "log(3)", 0]])
    result = design_by_vertices(privacy, exact=True)
    assert result.exact and result.certificate.mode == "exact" and result.certified
    assert all(sum(row) == 1 for row in result.channel.exact_matrix)
    floating = design_by_vertices(privacy)
    assert result.objective == pytest.approx(floating.objective, abs=1e-12)
    rational = design_by_vertices(PrivacyMatrix.classic(3, 1.0), exact=True)  # exp(1) bounded below
    assert rational.certified and rational.certificate.mode == "exact"


def test_too_large_cone_is_refused():
    with pytest.raises(ValueError, match="more than max_vertices=100"):
        design_by_vertices(PrivacyMatrix.classic(8, 1.0), max_vertices=100)


# ---------------------------------------------------------- helpers
def test_merge_and_projection():
    matrix = np.array([[0.1, 0.2, 0.0, 0.7], [0.3, 0.6, 0.0, 0.1]])
    np.testing.assert_allclose(merge_proportional_columns(matrix), [[0.3, 0.7], [0.9, 0.1]])
    privacy = PrivacyMatrix.classic(2, 1.0)
    e = math.e
    slightly_off = np.array([[e / (1 + e) + 1e-7, 1 / (1 + e) - 1e-7], [1 / (1 + e), e / (1 + e)]])
    from designer.certify import certify
    from designer.channel import Channel

    assert not certify(Channel(slightly_off), privacy, tolerance=1e-12).certified
    repaired = project_into_cone(privacy, slightly_off)
    assert certify(Channel(repaired), privacy, tolerance=1e-12).certified
    assert np.abs(repaired - slightly_off).max() < 1e-6
    tiny = np.array([[1e-12 * e * (1 + 1e-6), 1 - 1e-12 * e * (1 + 1e-6), 0.0], [1e-12, 0.5, 0.5 - 1e-12]])
    assert not certify(Channel(tiny), PrivacyMatrix.classic(2, 1.0), tolerance=1e-12).certified
    assert certify(Channel(project_into_cone(privacy, tiny)), privacy, tolerance=1e-12).certified


# ------------------------------------------------------- expected loss
def test_expected_loss_edges_equal_all_pairs_on_a_grid():
    privacy = PrivacyMatrix.grid_l1((3, 3), 0.8)
    cells = np.array(list(np.ndindex(3, 3)))
    loss = np.abs(cells[:, None, :] - cells[None, :, :]).sum(axis=2).astype(float)
    prior = np.random.default_rng(2).dirichlet(np.ones(9))
    edges = design_expected_loss(privacy, loss, prior)
    full = design_expected_loss(privacy, loss, prior, constraints="all-pairs")
    assert edges.certified and full.certified
    assert edges.objective == pytest.approx(full.objective, abs=1e-9)
    assert "216 ratio constraints" in edges.methods[0]  # 12 edges x 2 directions x 9 outputs
    assert "648 ratio constraints" in full.methods[0]  # 72 ordered pairs x 9 outputs
    # the optimum is no worse than the identity-free alternatives: RR at the grid's smallest level
    rr = GeneralizedRandomizedResponse(9, 0.8).channel().matrix
    assert edges.objective <= float(np.sum(prior[:, None] * loss * rr)) + 1e-12


def test_expected_loss_limits():
    loss = 1.0 - np.eye(4)
    free = design_expected_loss(PrivacyMatrix(np.where(np.eye(4) > 0, 0, np.inf)), loss)
    np.testing.assert_allclose(free.channel.matrix, np.eye(4), atol=1e-12)
    assert free.objective == pytest.approx(0.0, abs=1e-12)
    prior = np.array([0.1, 0.6, 0.2, 0.1])
    flat = design_expected_loss(PrivacyMatrix.classic(4, 0.0), loss, prior)
    np.testing.assert_allclose(flat.channel.matrix, np.tile([0, 1, 0, 0], (4, 1)), atol=1e-12)
    assert flat.objective == pytest.approx(0.4)
    with pytest.raises(ValueError, match="loss must have 4 rows"):
        design_expected_loss(PrivacyMatrix.classic(4, 1.0), np.ones((3, 4)))


# ------------------------------------------------------------- saving, CLI
def test_save_round_trip(tmp_path):
    result = design_by_vertices(PrivacyMatrix.high_low(4, [0], 1.0))
    result.save(tmp_path / "Q.csv", tmp_path / "Q.json")
    np.testing.assert_array_equal(read_channel(tmp_path / "Q.csv").matrix, result.channel.matrix)
    summary = json.loads((tmp_path / "Q.json").read_text())
    assert summary["certified"] is True and summary["n_outputs"] == result.n_outputs
    assert summary["objective"] == result.objective and summary["n_vertices"] == result.n_vertices


def test_cli_design_json_and_exact_output(tmp_path):
    out = tmp_path / "Q.csv"
    args = ["design", "--E", str(example_path("urls_high_low_E.csv")), "--prior", str(example_path("urls_prior.csv"))]
    outcome = runner.invoke(app, args + ["--out", str(out), "--exact", "--json"])
    assert outcome.exit_code == 0, outcome.output
    summary = json.loads(outcome.stdout)
    assert {"objective", "n_vertices", "n_outputs", "seconds", "certified"} <= set(summary)
    assert summary["certified"] and summary["certificate_mode"] == "exact"
    assert "1/3" in out.read_text()
    outcome = runner.invoke(app, ["certify", "--E", str(example_path("urls_high_low_E.csv")), "--channel", str(out), "--exact"])
    assert outcome.exit_code == 0
    outcome = runner.invoke(app, ["design", "--E", str(example_path("survey_E.csv")), "--out", str(out)])
    assert outcome.exit_code == 0 and "certified" in outcome.stdout and "0.318257" in outcome.stdout


def test_cli_expected_loss_default_and_given_loss(tmp_path):
    out = tmp_path / "Q.csv"
    loss = tmp_path / "L.csv"
    loss.write_text("0,1\n1,0\n")
    for extra in ([], ["--loss", str(loss)]):
        outcome = runner.invoke(
            app, ["design", "--E", str(example_path("survey_E.csv")), "--utility", "expected-loss", "--out", str(out), "--json", *extra]
        )
        assert outcome.exit_code == 0, outcome.output
        summary = json.loads(outcome.stdout)
        # Mangat is also loss-optimal: error 1/3 for "no", 0 for "yes", uniform prior
        assert summary["objective"] == pytest.approx(1 / 6, rel=1e-5) and summary["n_vertices"] == 0


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--prior", "PRIOR"], "the prior has 3 entries but E is 2 x 2"),
        (["--utility", "fisher"], "--utility must be one of mutual-information"),
        (["--utility", "kl"], "give a non-uniform prior (--prior) or an alternative (--alternative)"),
        (["--utility", "expected-loss", "--exact"], "--exact applies to vertex designs"),
        (["--max-vertices", "1"], "more than max_vertices=1"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2_and_no_file(tmp_path, extra, message):
    prior = tmp_path / "p.csv"
    prior.write_text("0.2,0.3,0.5\n")
    out = tmp_path / "Q.csv"
    extra = [str(prior) if item == "PRIOR" else item for item in extra]
    outcome = runner.invoke(app, ["design", "--E", str(example_path("survey_E.csv")), "--out", str(out), *extra])
    assert outcome.exit_code == 2
    assert message in outcome.stderr and len(outcome.stderr.strip().splitlines()) == 1
    assert "Traceback" not in outcome.output and not out.exists()
