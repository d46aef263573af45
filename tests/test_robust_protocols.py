"""Protocols of robust-ldp-chi-square.md: SRR, IR, GRR-CR, UE-CR against the paper's formulas."""

import itertools

import numpy as np
import pytest

from designer.certify import certify
from designer.robust.protocols import (
    PROTOCOLS,
    grr_cr,
    grr_cr_channel,
    independent_reporting,
    ir_channel,
    ir_distance,
    lemma3_level,
    proposition4_privacy_matrix,
    randomised_response,
    secret_randomised_response,
    ue_cr,
    ue_cr_channel,
    ue_cr_params,
    ue_cr_utility,
    unary_encoding_matrix,
)
from designer.utility import entropy, mutual_information
from robust_samples import sample_confidence


@pytest.fixture(scope="module")
def confidence():
    return sample_confidence(1)


def conditional_information(joint_a_b: np.ndarray, channel_b: np.ndarray) -> float:
    """I(R(B); B | A) for a joint table P[a, b] and a channel on B, by the definition."""
    total = 0.0
    for row in joint_a_b:
        if row.sum() > 0:
            total += row.sum() * mutual_information(row / row.sum(), channel_b)
    return total


def test_randomised_response_eq16():
    matrix = randomised_response(4, np.log(3))
    assert matrix[0, 0] == pytest.approx(3 / 6) and matrix[0, 1] == pytest.approx(1 / 6)
    assert np.allclose(matrix.sum(axis=1), 1)
    assert np.allclose(randomised_response(3, 0.0), 1 / 3)
    assert np.array_equal(randomised_response(2, np.inf), np.eye(2))


def test_srr_definition5_and_proposition4():
    eps, a1, a2 = 1.3, 2, 3
    matrix = secret_randomised_response(a1, a2, eps)
    z = np.exp(eps) + np.exp(-eps) * (a2 - 1) + a1 * a2 - a2
    assert matrix[0, 0] == pytest.approx(np.exp(eps) / z)
    assert matrix[0, 1] == pytest.approx(np.exp(-eps) / z)
    assert matrix[0, 3] == pytest.approx(1 / z)
    assert np.allclose(matrix.sum(axis=1), 1)
    # Lemma 6 via Proposition 4: certified at eps, violated just below
    assert certify(matrix, proposition4_privacy_matrix(a1, a2, eps)).verdict == "certified"
    assert certify(matrix, proposition4_privacy_matrix(a1, a2, eps - 1e-3)).verdict == "violated"
    # ... but SRR is not eps-LDP on X: (s,u) vs (s,u') differ by e^{2 eps}, eq. (17)
    assert np.log(matrix[0, 0] / matrix[1, 0]) == pytest.approx(2 * eps)


def test_proposition4_is_the_worst_case_over_point_masses():
    # Proposition 4's proof: P = 1/2 on (s,u) and (s',u') turns (2) into (12)
    rng = np.random.default_rng(0)
    matrix = rng.dirichlet(np.ones(4), size=6)  # |S|=2, |U|=3
    tight = 0.0
    for (s, u), (s2, u2) in itertools.product(itertools.product(range(2), range(3)), repeat=2):
        if s != s2:
            tight = max(tight, np.max(np.log(matrix[3 * s + u] / matrix[3 * s2 + u2])))
    assert certify(matrix, proposition4_privacy_matrix(2, 3, tight + 1e-9)).verdict == "certified"
    assert certify(matrix, proposition4_privacy_matrix(2, 3, tight - 1e-6)).verdict == "violated"


def test_lemma3_level_gives_eps2_at_distance_d():
    for eps2, d in [(0.5, 0.3), (2.0, 1.0), (1.0, 2.0)]:
        delta = lemma3_level(eps2, d)
        assert 1 + (np.exp(delta) - 1) * d / 2 == pytest.approx(np.exp(eps2))
    assert lemma3_level(1.0, 2.0) == pytest.approx(1.0)  # d = 2: no gain


def test_lemma3_on_random_distributions():
    rng = np.random.default_rng(2)
    delta = 1.2
    matrix = randomised_response(5, delta)
    for _ in range(200):
        p, q = rng.dirichlet(np.ones(5) * 0.3, size=2)
        bound = 1 + (np.exp(delta) - 1) / 2 * np.abs(p - q).sum()
        assert np.all((p @ matrix) / (q @ matrix) <= bound + 1e-12)


def test_ir_distance_eq66(confidence):
    w = confidence.conditional_estimate
    spread = max(np.abs(w[i] - w[j]).sum() for i in range(3) for j in range(3))
    expected = min(2.0, 2 * confidence.conditional_l1_radius.max() + spread)
    assert ir_distance(confidence) == pytest.approx(expected)


def test_ir_theorem16_utility(confidence):
    eps, eps2 = 2.0, 0.7
    matrix, params = ir_channel(confidence, eps, eps2)
    assert params["epsilon1"] == pytest.approx(1.3)
    assert params["delta2"] == pytest.approx(np.log(1 + 2 * np.expm1(eps2) / ir_distance(confidence)))
    r1 = randomised_response(3, params["epsilon1"])
    r2 = randomised_response(3, params["delta2"])
    joint = confidence.estimate
    # (74): I(R1(S); S) + I(R2(U); U | R1(S)); P(R1(S)=r, U=u) = sum_s P(s,u) R1[s,r]
    first = mutual_information(confidence.secret_marginal, r1)
    second = conditional_information(r1.T @ joint, r2)
    assert mutual_information(confidence.prior, matrix) == pytest.approx(first + second, rel=1e-12)


def test_ir_theorem16_holds_for_any_distribution(confidence):
    rng = np.random.default_rng(5)
    matrix, params = ir_channel(confidence, 1.5, 0.4)
    r1, r2 = randomised_response(3, params["epsilon1"]), randomised_response(3, params["delta2"])
    joint = rng.dirichlet(np.ones(9)).reshape(3, 3)
    expected = mutual_information(joint.sum(axis=1), r1) + conditional_information(r1.T @ joint, r2)
    assert mutual_information(joint.ravel(), matrix) == pytest.approx(expected, rel=1e-12)


def test_grr_cr_theorem18_utility_at_estimate(confidence):
    eps, eps2 = 2.0, 0.8
    matrix, params = grr_cr_channel(confidence, eps, eps2)
    assert np.allclose(matrix.sum(axis=1), 1)
    d = confidence.conditional_l1_radius
    assert params["delta_s"] == pytest.approx(list(np.log(1 + 2 * np.expm1(eps2) / d)))
    eps1 = params["epsilon1"]
    keep = np.exp(eps1) / (np.exp(eps1) + 2)
    first = mutual_information(confidence.secret_marginal, randomised_response(3, eps1))
    second = sum(p * mutual_information(row, randomised_response(3, delta))
                 for p, row, delta in zip(confidence.secret_marginal, confidence.conditional_estimate, params["delta_s"]))
    # (86) at P = P̂
    assert mutual_information(confidence.prior, matrix) == pytest.approx(first + keep * second, rel=1e-12)


def test_grr_cr_theorem18_needs_p_equal_estimate(confidence):
    """(86) is exact at P̂ only: under another P the decoy and true reports differ (module note)."""
    matrix, params = grr_cr_channel(confidence, 2.0, 0.8)
    rng = np.random.default_rng(3)
    joint = rng.dirichlet(np.ones(9)).reshape(3, 3)
    eps1 = params["epsilon1"]
    keep = np.exp(eps1) / (np.exp(eps1) + 2)
    marginal = joint.sum(axis=1)
    formula = mutual_information(marginal, randomised_response(3, eps1)) + keep * sum(
        p * mutual_information(row / p, randomised_response(3, delta))
        for p, row, delta in zip(marginal, joint, params["delta_s"]))
    assert abs(mutual_information(joint.ravel(), matrix) - formula) > 1e-3


def test_unary_encoding_eq90():
    kappa, lam = 0.7, 0.2
    matrix = unary_encoding_matrix(3, kappa, lam)
    assert np.allclose(matrix.sum(axis=1), 1)
    # subset code 0b101 = {0, 2} given s = 0: kappa * lam * (1 - lam)
    assert matrix[0, 0b101] == pytest.approx(kappa * (1 - lam) * lam)
    assert matrix[1, 0b101] == pytest.approx((1 - kappa) * lam * lam)


@pytest.mark.parametrize("eps2,kappa", [(0.3, 0.8), (0.5, 1.0), (0.0, 0.6)])
def test_ue_cr_theorem20_matches_materialised_channel(confidence, eps2, kappa):
    eps = 1.5
    params = ue_cr_params(confidence, eps, eps2, kappa)
    # Theorem 19: the UE constraint and the total level
    ratio = params["kappa"] * (1 - params["lambda"]) / (params["lambda"] * (1 - params["kappa"])) if kappa < 1 else 1
    assert ratio <= np.exp(params["epsilon1"]) * (1 + 1e-12)
    assert max(params["epsilon1"] + params["epsilon2"], 2 * params["epsilon2"]) == pytest.approx(eps)
    matrix, labels = ue_cr_channel(confidence, params)
    outputs = 4**3 if kappa < 1 else 3**3  # kappa = lambda = 1 always reports all of S
    assert matrix.shape == (9, outputs) and len(set(labels)) == outputs
    assert np.allclose(matrix.sum(axis=1), 1)
    exact = mutual_information(confidence.prior, matrix)
    assert ue_cr_utility(confidence, params["kappa"], params["lambda"], params["delta_s"]) == pytest.approx(exact, rel=1e-10)


def grid_best(function, upper, points=201):
    return max(function(x) for x in np.linspace(0, upper, points))


@pytest.mark.parametrize("eps", [0.3, 2.0, 6.0])
def test_one_dimensional_optimisation_beats_a_fine_grid(confidence, eps):
    ir = independent_reporting(confidence, eps)
    assert ir.utility >= grid_best(lambda e2: mutual_information(confidence.prior, ir_channel(confidence, eps, e2)[0]), eps) - 1e-9
    cr = grr_cr(confidence, eps)
    assert cr.utility >= grid_best(lambda e2: mutual_information(confidence.prior, grr_cr_channel(confidence, eps, e2)[0]), eps) - 1e-9


@pytest.mark.parametrize("eps", [0.3, 3.0])
def test_ue_cr_optimisation_beats_a_grid(confidence, eps):
    best = ue_cr(confidence, eps, materialise=False)
    grid = max(
        ue_cr_utility(confidence, p["kappa"], p["lambda"], p["delta_s"])
        for e2 in np.linspace(0, eps / 2, 21) for k in np.linspace(0, 1, 26)
        for p in [ue_cr_params(confidence, eps, e2, k)]
    )
    assert best.utility >= grid - 1e-9


def test_protocol_results_are_consistent(confidence):
    h = entropy(confidence.prior)
    for name, build in PROTOCOLS.items():
        protocol = build(confidence, 1.0)
        assert protocol.name == name
        assert protocol.channel.k == 9
        assert protocol.utility == pytest.approx(mutual_information(confidence.prior, protocol.channel), rel=1e-10)
        assert protocol.normalised_utility == pytest.approx(protocol.utility / h)
        assert 0 < protocol.normalised_utility < 1


def test_utility_grows_with_epsilon(confidence):
    for build in PROTOCOLS.values():
        values = [build(confidence, eps).utility for eps in (0.5, 2.0, 8.0)]
        assert values[0] < values[1] < values[2]


def test_ue_cr_too_many_outputs_is_refused():
    wide = sample_confidence(4, shape=(6, 12))
    protocol = ue_cr(wide, 1.0, materialise=False)
    assert protocol.channel is None and protocol.utility > 0
    with pytest.raises(ValueError, match="outputs"):
        ue_cr_channel(wide, protocol.params)


def test_ue_cr_fixed_parameters(confidence):
    fixed = ue_cr(confidence, 1.5, epsilon2=0.3, kappa=0.8)
    assert fixed.params == ue_cr_params(confidence, 1.5, 0.3, 0.8)
    assert fixed.utility <= ue_cr(confidence, 1.5, materialise=False).utility + 1e-12
    with pytest.raises(ValueError, match="both"):
        ue_cr(confidence, 1.5, epsilon2=0.3)
