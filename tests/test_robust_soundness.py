"""Robust LDP at the edges of double precision: huge and tiny eps, tiny F, NaN guards.

Each verdict is checked against an independent exact checker written here (Fractions
and decimal arithmetic), never against the code under test.
"""

import csv
import json
import math
from decimal import Decimal, getcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import designer.robust.certify as certify_module
from designer.cli import app
from designer.io import read_channel
from designer.robust.certify import certify_robust
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import dual_upper_bound, polyopt
from designer.robust.protocols import MAX_EPSILON, MAX_SRR_EPSILON, PROTOCOLS, lemma3_level
from solvers.chi2ball import BallMaximum, TwoBallMaximum

runner = CliRunner()
#: e^eps >= 2^1024 for every eps >= 709.79, so 2^1024 is an exact lower bound of e^eps for eps >= 710.
HUGE_GROWTH_LOWER = Fraction(2) ** 1024
HUGE_EPSILONS = [710.0, 1000.0, 1e300]


def exact_verdict_huge_eps(matrix: np.ndarray, counts: np.ndarray, radius: float, tolerance: float = 1e-9) -> str:
    """(eps, F)-RLDP for eps >= 710, decided in Fractions from the channel as written.

    Needs every count positive (P̂ of full support). Per output y and secrets s1 != s2:

    * settled if ``max_u Q[(s1,u),y] <= tolerance * max_x Q[x,y]`` (the certifier's tolerance);
    * violated if ``Q[(s2,u),y] = 0`` for every u and
      ``P̂_{U|s1} . Q[(s1,.),y] > tolerance * max_x Q[x,y]``: at ``P = P̂`` (in F)
      ``P(y|s2) = 0 < P(y|s1)``;
    * settled if ``max_u Q[(s1,u),y] <= 2^1024 sum_u Q[(s2,u),y] P̂_{s2,u}^2 / (B+1)``:
      for every P in F, ``P_x >= P̂_x^2 / (B + 1)`` (a term of eq. (4)), so
      ``P(y|s2) = sum_u Q P_{u|s2} >= sum_u Q P_{s2,u}``, and ``P(y|s1) <= max_u Q[(s1,u),y]``.

    Returns "violated", "certified" or "undecided".
    """
    counts = np.asarray(counts)
    assert np.all(counts > 0)
    n_secret, n_public = counts.shape
    n = int(counts.sum())
    estimate = [[Fraction(int(c), n) for c in row] for row in counts]
    bound = Fraction(radius) * (1 + Fraction(1, 10**9)) + 1  # B + 1, rounded up generously
    q = [[Fraction(float(v)) for v in row] for row in matrix]
    outcome = "certified"
    for y in range(matrix.shape[1]):
        peak = max(q[x][y] for x in range(matrix.shape[0]))
        for s1 in range(n_secret):
            for s2 in range(n_secret):
                if s1 == s2:
                    continue
                first = [q[s1 * n_public + u][y] for u in range(n_public)]
                second = [q[s2 * n_public + u][y] for u in range(n_public)]
                if max(first) <= tolerance * peak:
                    continue  # P(y|s1) <= max(first): (2) holds within the tolerance
                if all(v == 0 for v in second):
                    at_estimate = sum(v * e for v, e in zip(first, estimate[s1])) / sum(estimate[s1])
                    if at_estimate > tolerance * peak:
                        return "violated"
                    outcome = "undecided"
                    continue
                lower = sum(v * e * e for v, e in zip(second, estimate[s2])) / bound
                if not max(first) <= HUGE_GROWTH_LOWER * lower:
                    outcome = "undecided"
    return outcome


def random_channel(rng: np.random.Generator, k: int, m: int) -> np.ndarray:
    """Rows with exact zeros and entries spread over 300 orders of magnitude."""
    matrix = rng.uniform(0.1, 1.0, size=(k, m)) * 10.0 ** -rng.integers(0, 300, size=(k, m))
    matrix[rng.random((k, m)) < 0.3] = 0.0
    for row in matrix:
        if row.max() == 0:
            row[rng.integers(m)] = 1.0
    return matrix / matrix.sum(axis=1, keepdims=True)


# ----------------------------------------------------------------------------- huge eps
@pytest.mark.parametrize("epsilon", HUGE_EPSILONS)
def test_huge_eps_verdicts_match_the_exact_checker(epsilon):
    rng = np.random.default_rng(int(epsilon) % 97)
    seen = {"violated": 0, "certified": 0, "undecided": 0}
    for trial in range(40):
        counts = rng.integers(1, 40, size=(int(rng.integers(2, 4)), int(rng.integers(2, 4))))
        confidence = ConfidenceSet(counts, 0.05)
        matrix = random_channel(rng, counts.size, int(rng.integers(2, 5)))
        expected = exact_verdict_huge_eps(matrix, confidence.counts, confidence.radius)
        certificate = certify_robust(matrix, confidence, epsilon)
        seen[expected] += 1
        if expected == "undecided":  # a zero-pattern output within 40x of the tolerance: rare
            continue
        assert certificate.verdict == expected, (trial, matrix)
        if expected == "violated":
            witness = certificate.witness
            assert confidence.contains(witness.distribution)
            assert witness.log_ratio > epsilon or witness.log_ratio == math.inf
    assert seen["violated"] >= 5 and seen["certified"] >= 5 and seen["undecided"] <= 2  # both outcomes exercised


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("soundness") / "records.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["s", "u"])
        for s, u, count in [("a", "x", 30), ("a", "y", 10), ("b", "x", 20), ("b", "y", 40)]:
            writer.writerows([[s, u]] * count)
    return path


def base(records: Path, epsilon: str) -> list[str]:
    return ["--data", str(records), "--secret", "s", "--public", "u", "--eps", epsilon]


@pytest.mark.parametrize("epsilon", ["710", "1000", "1e300"])
def test_certify_robust_identity_channel_is_violated_at_huge_eps(records, tmp_path, epsilon):
    """The issue's finding: e^eps overflowed, inf * 0 became NaN, and the identity was CERTIFIED."""
    channel = tmp_path / "identity.csv"
    channel.write_text("1,0,0,0\n0,1,0,0\n0,0,1,0\n0,0,0,1\n")
    result = runner.invoke(app, ["certify-robust", *base(records, epsilon), "--channel", str(channel), "--json"])
    assert result.exit_code == 1, result.output
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout  # strict JSON (json.dumps allows them)
    payload = json.loads(result.stdout)  # one JSON object on stdout
    assert payload["verdict"] == "violated" and payload["violated"] == 4  # each y, with s the secret whose row has y
    witness = payload["witness"]
    assert witness["zero_denominator"] is True and witness["ratio"] is None and witness["log_ratio"] is None
    confidence = ConfidenceSet.from_csv(records, "s", "u", 0.05)
    p = np.array([entry["probability"] for entry in witness["P"]]).reshape(2, 2)
    assert confidence.contains(p)
    # recompute P(y|s) and P(y|s') exactly from the file: P(y|s') = 0 < P(y|s), a violation at every eps
    q = [[Fraction(v) for v in row] for row in read_channel(channel).matrix]
    secrets = list(confidence.secret_labels)
    s, s_prime, y = secrets.index(witness["s"]), secrets.index(witness["s_prime"]), witness["y"]
    exact = [[Fraction(float(v)) for v in row] for row in p]
    numerator = sum(q[s * 2 + u][y] * exact[s][u] for u in range(2))
    denominator = sum(q[s_prime * 2 + u][y] * exact[s_prime][u] for u in range(2))
    assert numerator > 0 and denominator == 0
    # the text report says so in one readable line, without crashing on the infinite ratio
    text = runner.invoke(app, ["certify-robust", *base(records, epsilon), "--channel", str(channel)])
    assert text.exit_code == 1 and "VIOLATED" in text.stdout and "P(y|s') = 0" in text.stdout


def test_certify_robust_positive_channel_is_certified_at_huge_eps(records, tmp_path):
    channel = tmp_path / "positive.csv"
    matrix = np.array([[0.5, 0.5 - 1e-290, 1e-290], [0.25, 0.75, 0.0], [1e-200, 0.5, 0.5 - 1e-200], [0.3, 0.3, 0.4]])
    np.savetxt(channel, matrix, delimiter=",", fmt="%.17g")
    confidence = ConfidenceSet.from_csv(records, "s", "u", 0.05)
    assert exact_verdict_huge_eps(read_channel(channel).matrix, confidence.counts, confidence.radius) == "certified"
    for epsilon in ("710", "1e300"):
        result = runner.invoke(app, ["certify-robust", *base(records, epsilon), "--channel", str(channel)])
        assert result.exit_code == 0 and "CERTIFIED" in result.stdout
    # at eps = 600 column 2 breaks (2) for every P: P(y|b) >= 0.4 and P(y|a) <= 1e-290, exactly
    assert Fraction(0.4) / Fraction(1e-290) > Fraction(math.exp(600)) * (1 + Fraction(1, 10**12))
    low = runner.invoke(app, ["certify-robust", *base(records, "600"), "--channel", str(channel)])
    assert low.exit_code == 1 and "VIOLATED" in low.stdout


@pytest.mark.parametrize("protocol", ["polyopt", "ir", "grr-cr", "ue-cr", "srr", "grr"])
@pytest.mark.parametrize("epsilon", ["1e300", "701", "inf", "nan", "-1"])
def test_robust_refuses_eps_it_cannot_design_in_one_line(records, tmp_path, protocol, epsilon):
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, ["robust", *base(records, epsilon), "--protocol", protocol, "--out", str(out)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --eps"), result.stderr
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("protocol", ["grr", "srr"])
def test_designs_at_the_largest_eps_are_exactly_private_for_every_distribution(protocol):
    """GRR and SRR are (eps, P_X)-RLDP (Proposition 4): checked in Fractions on the matrix as built."""
    confidence = ConfidenceSet([[30, 10, 5], [20, 40, 15]], 0.05)
    epsilon = MAX_SRR_EPSILON if protocol == "srr" else MAX_EPSILON  # SRR's entries go down to e^-2eps
    designed = PROTOCOLS[protocol](confidence, epsilon)
    matrix = designed.channel.matrix
    assert np.all(np.isfinite(matrix)) and matrix[matrix > 0].min() >= np.finfo(float).tiny
    growth = Fraction(math.exp(epsilon)) * (1 + Fraction(1, 10**12))  # e^eps rounded, with a margin
    secret = np.repeat(np.arange(2), 3)
    q = [[Fraction(float(v)) for v in row] for row in matrix]
    for y in range(matrix.shape[1]):
        for x in range(6):
            for x_prime in range(6):
                if secret[x] != secret[x_prime]:
                    assert q[x][y] <= growth * q[x_prime][y]
    assert certify_robust(designed.channel, confidence, epsilon).verdict == "certified"


def test_srr_beyond_its_limit_is_refused():
    confidence = ConfidenceSet([[30, 10, 5], [20, 40, 15]], 0.05)
    with pytest.raises(ValueError, match="to design SRR"):
        PROTOCOLS["srr"](confidence, MAX_SRR_EPSILON * 1.01)


@pytest.mark.parametrize("protocol", ["ir", "grr-cr", "ue-cr"])
@pytest.mark.parametrize("counts", [[[30, 10, 5], [20, 40, 15]], [[30, 0, 5], [20, 40, 15], [1, 7, 0]]])
def test_robust_protocols_at_the_largest_eps_have_no_underflow(protocol, counts):
    """UE-CR multiplies up to 2|S| - 1 tiny factors: it once underflowed (and was violated) at |S| = 3."""
    confidence = ConfidenceSet(counts, 0.05)
    designed = PROTOCOLS[protocol](confidence, MAX_EPSILON)
    matrix = designed.channel.matrix
    positive = matrix[matrix > 0]
    assert positive.min() >= np.finfo(float).tiny  # no subnormal entry (they are quantised)
    levels = designed.params.get("delta_s", [designed.params.get("delta2", 0.0)])
    assert max(levels) <= MAX_EPSILON  # GRR levels kept representable
    assert certify_robust(designed.channel, confidence, MAX_EPSILON).verdict == "certified"


def test_polyopt_at_the_largest_eps_and_beyond():
    confidence = ConfidenceSet([[30, 10], [20, 40]], 0.05)
    designed = polyopt(confidence, MAX_EPSILON)
    matrix = designed.channel.matrix
    assert matrix[matrix > 0].min() >= np.finfo(float).tiny and designed.optimal
    assert certify_robust(designed.channel, confidence, MAX_EPSILON).verdict == "certified"
    for epsilon in (MAX_EPSILON * 1.01, 1e300, math.inf, math.nan):
        with pytest.raises(ValueError, match="epsilon must be a number in"):
            polyopt(confidence, epsilon)


def test_lemma3_level_does_not_overflow_and_matches_decimal():
    getcontext().prec = 60
    for epsilon2, distance in [(700.0, 1e-5), (300.0, 0.3), (1.5, 0.01), (0.5, 1.0), (1e-12, 0.2)]:
        exact = (1 + 2 * (Decimal(epsilon2).exp() - 1) / Decimal(distance)).ln()
        assert lemma3_level(epsilon2, distance) == pytest.approx(float(exact), rel=1e-13)


# ----------------------------------------------------------------------------- tiny eps
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_tiny_eps_designs_certify(protocol):
    confidence = ConfidenceSet([[30, 10, 5], [20, 40, 15]], 0.05)
    designed = PROTOCOLS[protocol](confidence, 1e-300)
    assert np.all(np.isfinite(designed.channel.matrix))
    assert certify_robust(designed.channel, confidence, 1e-300).verdict == "certified"


def test_polyopt_tiny_eps_is_the_uninformative_channel():
    confidence = ConfidenceSet([[30, 10], [20, 40]], 0.05)
    designed = polyopt(confidence, 1e-300)
    assert designed.utility == pytest.approx(0.0, abs=1e-12) and designed.optimal
    assert certify_robust(designed.channel, confidence, 1e-300).verdict == "certified"


# ----------------------------------------------------------------------------- tiny F
def test_conditional_radius_is_accurate_when_B_is_below_double_spacing():
    """n = 8e15 and alpha = 0.9: B = 7.3e-17 and sqrt(B + 1) - 1 rounds to 0 in floats."""
    counts = np.array([[3, 1], [2, 4]]) * 8 * 10**14
    confidence = ConfidenceSet(counts, 0.9)
    getcontext().prec = 60
    radius = Decimal(confidence.radius)
    root = (radius + 1).sqrt()
    for s, row in enumerate(counts):
        p = Decimal(int(row.sum())) / Decimal(int(counts.sum()))
        expected = (root + p - 1) ** 2 / p**2 - 1  # Lemma 8, in 60-digit decimals
        assert confidence.conditional_radius[s] == pytest.approx(float(expected), rel=1e-12)
        assert confidence.conditional_radius[s] > 0


def test_tiny_F_still_contains_the_violation():
    """With F collapsed to P̂ (the old rounding) this channel, tight at P̂, was certified."""
    counts = np.array([[3, 1], [2, 4]]) * 8 * 10**14
    confidence = ConfidenceSet(counts, 0.9)
    epsilon, a = 1.0, 0.5
    c = a * confidence.conditional_estimate[0, 0] / math.exp(epsilon)  # P(y|s1) = e^eps P(y|s2) at P̂
    matrix = np.array([[a, 1 - a], [0.0, 1.0], [c, 1 - c], [c, 1 - c]])
    certificate = certify_robust(matrix, confidence, epsilon)
    assert certificate.verdict == "violated"
    witness = certificate.witness
    # exact re-check: chi-square of the witness (Fractions) within B, and the ratio beyond e^eps
    p = [[Fraction(float(v)) for v in row] for row in witness.distribution]
    total = sum(sum(row) for row in p)
    p = [[v / total for v in row] for row in p]
    n = int(counts.sum())
    statistic = sum((Fraction(int(counts[s, u]), n) - p[s][u]) ** 2 / p[s][u] for s in range(2) for u in range(2))
    assert statistic <= Fraction(confidence.radius)
    q = [[Fraction(float(v)) for v in row] for row in matrix]
    first = (q[0][0] * p[0][0] + q[1][0] * p[0][1]) / (p[0][0] + p[0][1])
    second = (q[2][0] * p[1][0] + q[3][0] * p[1][1]) / (p[1][0] + p[1][1])
    growth_upper = Fraction(math.exp(epsilon)) * (1 + Fraction(1, 10**15))
    assert first - growth_upper * second > Fraction(1, 10**9) * q[0][0]  # beyond the tolerance, column scaled


def test_counts_beyond_2_to_53_are_refused():
    with pytest.raises(ValueError, match="2\\^53"):
        ConfidenceSet([[2**53, 1], [1, 1]], 0.05)


@pytest.mark.parametrize("alpha", [1e-300, 5e-324, 1 - 1e-15])
def test_extreme_alpha_gives_finite_radii(alpha):
    confidence = ConfidenceSet([[30, 10, 5], [20, 40, 15]], alpha)
    assert np.isfinite(confidence.radius) and confidence.radius > 0
    assert np.all(np.isfinite(confidence.conditional_radius)) and np.all(confidence.conditional_radius > 0)
    lower, upper = confidence.conditional_bounds()
    assert np.all(lower > 0) and np.all(upper <= 1)
    designed = PROTOCOLS["grr-cr"](confidence, 1.0)
    assert certify_robust(designed.channel, confidence, 1.0).verdict == "certified"


# ----------------------------------------------------------------------------- NaN guards
@pytest.mark.parametrize("accident", [math.nan, -math.inf])
def test_a_nan_or_infinite_bound_never_certifies(monkeypatch, accident):
    """Force every solver bound to be NaN (or -inf): the triples the screens cannot settle stay open."""
    monkeypatch.setattr(certify_module, "maximise_over_ball",
                        lambda c, center, beta: BallMaximum(accident, np.asarray(center, float), accident))
    monkeypatch.setattr(certify_module, "maximise_over_two_balls",
                        lambda *args, **kwargs: TwoBallMaximum(accident, None, -math.inf, True))
    confidence = ConfidenceSet([[30, 10], [20, 40]], 0.05)
    designed = PROTOCOLS["grr-cr"](confidence, 1.0)  # needs the chi-square bounds (not Proposition 4)
    certificate = certify_robust(designed.channel, confidence, 1.0)
    assert certificate.verdict == "inconclusive" and certificate.n_inconclusive > 0


@pytest.mark.parametrize("epsilon", [math.nan, math.inf, -1.0])
def test_certify_robust_refuses_non_finite_eps(epsilon):
    confidence = ConfidenceSet([[30, 10], [20, 40]], 0.05)
    with pytest.raises(ValueError, match="finite number >= 0"):
        certify_robust(np.eye(4), confidence, epsilon)


def test_dual_upper_bound_refuses_nan():
    with pytest.raises(ArithmeticError):
        dual_upper_bound(np.eye(2), np.array([0.1, math.nan]), np.array([0.2, 0.2]))
    # and it is weak duality plus an allowance: y . 1 + |X| max(0, max_v mu(v) - y . v)
    bound = dual_upper_bound(np.eye(2), np.array([0.1, 0.5]), np.array([0.2, 0.2]))
    assert 0.4 + 2 * 0.3 <= bound <= 0.4 + 2 * 0.3 + 1e-12
