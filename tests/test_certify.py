import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from designer import Channel, PrivacyMatrix, binary_optimal, binary_privacy, certify, mangat, warner
from designer.certify import FLOAT_TOLERANCE
from reference import random_channel, satisfies_all_subsets


def test_per_output_check_equals_the_all_subsets_definition():
    """For finite outputs, eq. (4) over all S is equivalent to the per-output ratio check."""
    rng = np.random.default_rng(12)
    agree = {True: 0, False: 0}
    for _ in range(150):
        matrix = random_channel(rng, 3, 5, zero_fraction=0.25)
        tight = Channel(matrix).tight_privacy().epsilon
        with np.errstate(invalid="ignore"):
            low = -0.3 if rng.random() < 0.5 else 0.0  # half the cases keep every pair feasible
            epsilon = np.maximum(tight + rng.uniform(low, 0.3, (3, 3)), 0.0)  # near the boundary
        epsilon[np.isinf(tight) & (rng.random((3, 3)) < 0.5)] = 2.0
        np.fill_diagonal(epsilon, 0.0)
        verdict = certify(matrix, epsilon, tolerance=0.0).certified
        assert verdict == satisfies_all_subsets(matrix, epsilon)
        agree[verdict] += 1
    assert agree[True] > 10 and agree[False] > 10  # both outcomes were exercised


def test_margin_and_tight_matrix():
    channel = warner(math.log(3))
    certificate = certify(channel, PrivacyMatrix.classic(2, 1.2))
    assert certificate.certified
    assert certificate.margin == pytest.approx(1.2 - math.log(3))
    assert certificate.tight_epsilon[0, 1] == pytest.approx(math.log(3))


def test_violation_lists_every_pair_with_witness():
    channel = Channel([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    certificate = certify(channel, PrivacyMatrix.classic(3, 1.0))
    assert certificate.verdict == "violated"
    assert len(certificate.violations) == 6
    for violation in certificate.violations:
        assert violation.y == violation.x  # the diagonal output is the witness
        assert violation.log_ratio == pytest.approx(math.log(8))
        assert violation.allowed == 1.0
    assert certificate.margin == pytest.approx(1.0 - math.log(8))


def test_zero_meets_non_zero_is_infinite():
    certificate = certify(mangat(1.0), PrivacyMatrix([[0, 5.0], [1.0, 0]]))
    # Mangat: Q[0, 0] > 0 = Q[1, 0], so only E[0, 1] = inf would allow it
    assert certificate.verdict == "violated"
    assert certificate.violations[0].log_ratio == math.inf
    assert certificate.violations[0].y == 0


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize(
    "eps12, eps21",
    [("log(3)", "log(2)"), ("log(5/4)", "log(7)"), ("inf", "log(3)"), ("log(3)", "inf"), ("inf", "inf"), (0, "log(2)"), (0, 0)],
)
def test_binary_optimal_is_private_and_exactly_tight(eps12, eps21, exact):
    channel = binary_optimal(eps12, eps21)
    privacy = binary_privacy(eps12, eps21)
    assert channel.is_exact  # log-of-rational levels give a rational channel
    certificate = certify(channel, privacy, exact=exact)
    assert certificate.certified
    q = channel.exact_matrix
    # tightness, exactly in rationals (eq. 9): Q*[0,0]/Q*[1,0] = e^{eps12}, Q*[1,1]/Q*[0,1] = e^{eps21}
    e12, e21 = privacy.exact_epsilon[0, 1], privacy.exact_epsilon[1, 0]
    if not e12.infinite and q[1, 0] != 0:
        assert q[0, 0] / q[1, 0] == (e12.exp_value if e12.exp_value is not None else 1)
    if not e21.infinite and q[0, 1] != 0:
        assert q[1, 1] / q[0, 1] == (e21.exp_value if e21.exp_value is not None else 1)


def test_warner_and_mangat_closed_forms_eq_10_11():
    e = math.e
    assert np.allclose(warner(1.0).matrix, np.array([[e, 1], [1, e]]) / (e + 1))
    p = math.exp(-0.7)
    assert np.allclose(mangat(0.7).matrix, [[1 - p, p], [0, 1]])
    assert [[str(v) for v in row] for row in warner("log(3)").exact_matrix] == [["3/4", "1/4"], ["1/4", "3/4"]]
    assert certify(mangat(0.7), binary_privacy("inf", 0.7)).certified


def test_exact_mode_never_certifies_a_violation_hidden_by_the_tolerance():
    # randomised response with e^eps = 3 + 10^-15, against eps = log 3
    ratio = Fraction(3) + Fraction(1, 10**15)
    total = ratio + 3
    rows = [[ratio / total if y == x else 1 / total for y in range(4)] for x in range(4)]
    channel = Channel(rows)
    privacy = PrivacyMatrix([["0" if x == y else "log(3)" for y in range(4)] for x in range(4)])
    floating = certify(channel, privacy)
    assert floating.certified and floating.n_within_tolerance == 12
    proof = certify(channel, privacy, exact=True)
    assert proof.verdict == "violated" and len(proof.violations) == 12


def test_exact_mode_decides_irrational_exp_bounds():
    # e/(1+e) written with 16 digits is slightly above or below the tight value; decide exactly
    below = Channel([["0.7310585786300048", "0.2689414213699952"], ["0.2689414213699952", "0.7310585786300048"]])
    above = Channel([["0.7310585786300050", "0.2689414213699950"], ["0.2689414213699950", "0.7310585786300050"]])
    privacy = PrivacyMatrix.classic(2, 1.0)
    assert Fraction("0.7310585786300048") / Fraction("0.2689414213699952") < Fraction(math.e)  # sanity by floats
    assert certify(below, privacy, exact=True).certified
    assert certify(above, privacy, exact=True).verdict == "violated"
    assert certify(above, privacy).certified  # within the float tolerance


@st.composite
def channel_and_slack(draw):
    k = draw(st.integers(2, 5))
    m = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    matrix = random_channel(rng, k, m, zero_fraction=draw(st.sampled_from([0.0, 0.3])))
    slack = np.where(rng.random((k, k)) < 0.3, 0.0, rng.uniform(0, 1, (k, k)))
    return matrix, slack, rng


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(channel_and_slack())
def test_property_tight_channels_are_certified_and_breaks_are_caught(case):
    matrix, slack, rng = case
    channel = Channel(matrix)
    tight = channel.tight_privacy().epsilon
    privacy = PrivacyMatrix(np.where(np.eye(len(tight), dtype=bool), 0.0, tight + slack))
    certificate = certify(channel, privacy)
    assert certificate.certified
    finite = np.isfinite(privacy.epsilon) & ~np.eye(len(tight), dtype=bool)
    if finite.any():
        assert certificate.margin == pytest.approx(np.min(privacy.epsilon[finite] - tight[finite]), abs=1e-12)

    # break one constraint: push mass onto Q[x, y] from another entry of row x
    candidates = [
        (x, x_prime, y)
        for x, x_prime in np.argwhere(finite & (slack == 0))
        for y in range(matrix.shape[1])
        if matrix[x_prime, y] > 0 and matrix[x, y] > 0
        and np.isclose(np.log(matrix[x, y] / matrix[x_prime, y]), tight[x, x_prime], atol=1e-12)
    ]
    if not candidates:
        return
    x, x_prime, y = candidates[rng.integers(len(candidates))]
    donors = [z for z in range(matrix.shape[1]) if z != y and matrix[x, z] > 0]
    if not donors:
        return
    broken = matrix.copy()
    moved = 0.5 * broken[x, donors[0]]
    broken[x, donors[0]] -= moved
    broken[x, y] += moved
    result = certify(broken, privacy)
    assert result.verdict == "violated"
    witnessed = {(v.x, v.x_prime): v for v in result.violations}
    assert (x, x_prime) in witnessed
    assert witnessed[(x, x_prime)].y == y
    assert witnessed[(x, x_prime)].log_ratio == pytest.approx(math.log(broken[x, y] / broken[x_prime, y]))
    for violation in result.violations:  # every reported violation is genuine
        a, b = broken[violation.x, violation.y], broken[violation.x_prime, violation.y]
        actual = math.inf if b == 0 else math.log(a / b)
        assert actual > privacy.epsilon[violation.x, violation.x_prime] + FLOAT_TOLERANCE


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.integers(2, 4), st.integers(0, 2**32 - 1))
def test_property_exact_and_float_agree_away_from_the_tolerance_band(k, m, seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, (k, m))
    counts[counts.sum(axis=1) == 0, 0] = 1
    rows = [[Fraction(int(c), int(row.sum())) for c in row] for row in counts]
    levels = [[("0" if x == y else ("inf" if rng.random() < 0.2 else str(Fraction(int(rng.integers(0, 9)), 4))))
               for y in range(k)] for x in range(k)]
    channel = Channel(rows)
    privacy = PrivacyMatrix(levels)
    floating = certify(channel, privacy)
    both_finite = np.isfinite(privacy.epsilon) & np.isfinite(floating.tight_epsilon)
    if np.any(np.abs(privacy.epsilon[both_finite] - floating.tight_epsilon[both_finite]) < 1e-8):
        return  # inside the tolerance band: only the exact verdict is meaningful
    assert certify(channel, privacy, exact=True).verdict == floating.verdict
