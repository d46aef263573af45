"""Exact certification at scale: the float filter's soundness, tight cases, huge numbers.

The reference here is independent of designer.exact and python-flint: a
brute-force loop over every pair and output in Python Fractions, with
``log`` of rationals in ``decimal`` at 120 digits (Definition 2, per-output form).
"""

import io
import json
import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from rich.console import Console

from designer import Channel, PrivacyMatrix, certify
from designer.commands.certify import report
from designer.exact import ExactEpsilon, integer_logs, parse_integer_log_ratios, ratio_level
from designer.exact_filter import CERTIFIED, UNDECIDED, VIOLATED, rational_logs, screen_pairs

DIGITS = 120


def decimal_log(value: Fraction) -> Decimal:
    with localcontext() as context:
        context.prec = DIGITS
        return Decimal(value.numerator).ln() - Decimal(value.denominator).ln()


def reference_gaps(rows: list[list[Fraction]], levels: list[list[str]]) -> dict[tuple[int, int], Decimal]:
    """``E - max(0, max_y log(Q[x,y]/Q[x',y]))`` for every constrained pair (``-inf`` on a support break)."""
    k = len(rows)
    gaps = {}
    for x in range(k):
        for x_prime in range(k):
            text = levels[x][x_prime]
            if x == x_prime or text == "inf":
                continue
            ratios = [a / b for a, b in zip(rows[x], rows[x_prime]) if a > 0 and b > 0]
            if any(a > 0 and b == 0 for a, b in zip(rows[x], rows[x_prime])):
                gaps[x, x_prime] = Decimal("-Infinity")
                continue
            best = max(ratios, default=Fraction(0))
            if text.startswith("log("):
                r = Fraction(text[4:-1])
                gap = Decimal(0) if best == r else decimal_log(r) - decimal_log(max(best, Fraction(1)))
                gap = Decimal(0) if best <= 1 and r == 1 else gap
            else:
                with localcontext() as context:
                    context.prec = DIGITS
                    value = Decimal(Fraction(text).numerator) / Decimal(Fraction(text).denominator)
                    gap = value - (decimal_log(best) if best > 1 else Decimal(0))
                assert gap == 0 or abs(gap) > Decimal("1e-100"), "the reference cannot decide this pair"
            gaps[x, x_prime] = gap
    return gaps


def assert_matches_reference(rows, levels):
    certificate = certify(Channel(rows), PrivacyMatrix(levels), exact=True)
    gaps = reference_gaps(rows, levels)
    violated = {pair for pair, gap in gaps.items() if gap < 0}
    assert {(v.x, v.x_prime) for v in certificate.violations} == violated
    assert certificate.verdict == ("violated" if violated else "certified")
    expected = min(gaps.values(), default=Decimal("Infinity"))
    assert math.copysign(1, certificate.margin) == math.copysign(1, expected) or expected == certificate.margin == 0
    if expected == 0:
        assert certificate.margin == 0.0
    elif expected.is_finite():
        assert certificate.margin == pytest.approx(float(expected), rel=1e-9)
    for violation in certificate.violations:
        a, b = rows[violation.x][violation.y], rows[violation.x_prime][violation.y]
        if b == 0:
            assert a > 0 and violation.log_ratio == math.inf
            continue
        assert violation.exact_ratio == a / b  # the witness attains the exact maximum
        assert violation.excess > 0
        assert violation.excess == pytest.approx(-float(gaps[violation.x, violation.x_prime]), rel=1e-9)
    return certificate


def grr_rows(k: int, ratio: Fraction) -> list[list[Fraction]]:
    total = ratio + k - 1
    return [[ratio / total if y == x else 1 / total for y in range(k)] for x in range(k)]


@pytest.mark.parametrize("delta", [Fraction(0), Fraction(1, 10**15), -Fraction(1, 10**15), Fraction(1, 10**40), -Fraction(1, 10**40)])
def test_channels_tight_to_1e_15_against_log_levels(delta):
    k = 5
    rows = grr_rows(k, 3 + delta)
    levels = [["0" if x == y else "log(3)" for y in range(k)] for x in range(k)]
    logs = rational_logs(np.array(rows, dtype=object))
    screen = screen_pairs(logs, PrivacyMatrix(levels).epsilon)
    off = ~np.eye(k, dtype=bool)
    assert np.all(screen.status[off] == UNDECIDED)  # within the float bound: decided exactly
    certificate = assert_matches_reference(rows, levels)
    if delta > 0:
        assert len(certificate.violations) == k * (k - 1) and certificate.margin < 0
    elif delta < 0:
        assert certificate.certified and certificate.margin > 0
    else:
        assert certificate.certified and certificate.margin == 0.0


@pytest.mark.parametrize("written", ["2.718281828459045", "2.7182818284590455", "2.71828182845904523536028747135266249", "2.71828182845904523536028747135266251"])
def test_rational_level_against_decimal_neighbours_of_e(written):
    # E = 1 exactly; the ratio is a decimal just below or above e (ties are impossible: e is irrational)
    ratio = Fraction(written)
    rows = [[ratio / (ratio + 1), 1 / (ratio + 1)], [1 / (ratio + 1), ratio / (ratio + 1)]]
    certificate = assert_matches_reference(rows, [["0", "1"], ["1", "0"]])
    assert certificate.certified == (ratio < Fraction(Decimal(1).exp(context=Context(prec=60))))


def random_case(rng: np.random.Generator, k: int, m: int):
    counts = rng.integers(0, 7, (k, m))
    counts[counts.sum(axis=1) == 0, 0] = 1
    rows = [[Fraction(int(c), int(row.sum())) for c in row] for row in counts]
    levels = []
    for x in range(k):
        line = []
        for x_prime in range(k):
            ratios = [a / b for a, b in zip(rows[x], rows[x_prime]) if a > 0 and b > 0]
            best = max(ratios + [Fraction(1)])
            choice = rng.integers(0, 6)
            if x == x_prime:
                line.append("0")
            elif choice == 0:
                line.append("inf")
            elif choice == 1:  # exactly tight
                line.append(f"log({best})")
            elif choice == 2:  # tight to 1e-30, either side
                line.append(f"log({best + rng.choice([-1, 1]) * Fraction(1, 10**30)})" if best > 1 else "0")
            elif choice == 3:  # the float of the tight level: within one ulp, either side
                line.append(str(Fraction(math.log(best.numerator) - math.log(best.denominator))))
            else:
                line.append(str(Fraction(int(rng.integers(0, 12)), 4)))
        levels.append(line)
    return rows, levels


@pytest.mark.parametrize("seed", range(12))
def test_random_rational_channels_near_their_tight_levels(seed):
    rng = np.random.default_rng(seed)
    rows, levels = random_case(rng, int(rng.integers(2, 8)), int(rng.integers(2, 8)))
    assert_matches_reference(rows, levels)


def test_filter_decides_almost_every_pair_of_a_random_channel():
    rng = np.random.default_rng(7)
    k = 40
    counts = rng.integers(1, 10**6, (k, k))
    rows = [[Fraction(int(c), int(row.sum())) for c in row] for row in counts]
    tight = Channel(np.array([[float(v) for v in row] for row in rows])).tight_privacy().epsilon
    levels = tight + rng.uniform(-0.05, 0.3, (k, k))
    np.fill_diagonal(levels, 0.0)
    levels = np.maximum(levels, 0.0)
    status = screen_pairs(rational_logs(np.array(rows, dtype=object)), levels).status
    off = ~np.eye(k, dtype=bool)
    assert np.count_nonzero(status[off] == UNDECIDED) == 0
    assert np.count_nonzero(status == CERTIFIED) > 100 and np.count_nonzero(status == VIOLATED) > 10
    text_levels = [[str(Fraction(v)) for v in row] for row in levels.tolist()]
    assert_matches_reference(rows, text_levels)


def test_integer_logs_error_bound_holds():
    rng = np.random.default_rng(3)
    integers = [1, 2, 3, 2**53 + 1, 10**5000 + 7] + [int(v) for v in rng.integers(1, 2**62, 200)]
    logs, radius = integer_logs(integers)
    for value, approximation in zip(integers, logs.tolist()):
        exact = Decimal(value).ln(context=Context(prec=60))
        assert abs(Decimal(approximation) - exact) <= Decimal(2.0**-51 * abs(approximation) + radius)
    assert radius < 1e-30


@pytest.mark.parametrize("text", ["log(3)", "log(10/7)", "log(123456789/1000)", "0.1", "1e300", "7/3",
                                  f"log({2**200 + 1}/{2**200})", f"log({10**40 + 3}/{10**40})", "log(1)"])
def test_float_of_a_level_is_faithful(text):
    """The filter widens PrivacyMatrix.epsilon by two ulps: float(level) must be within one."""
    level = ExactEpsilon.parse(text)
    approximation = float(level)
    exact = decimal_log(level.exp_value) if level.exp_value is not None else Decimal(level.value.numerator) / Decimal(level.value.denominator)
    assert abs(Decimal(approximation) - exact) <= Decimal(math.ulp(approximation))
    # and PrivacyMatrix.epsilon, which the filter widens, holds exactly that float
    assert PrivacyMatrix([["0", text], [text, "0"]]).epsilon[0, 1] == approximation


def test_integer_log_levels_read_as_pairs_equal_one_by_one():
    """The batch reader of ``log(p/q)`` as coprime integer pairs against the grammar, token by token."""
    tokens = ["log(3)", "log(10/7)", "log(999999999999999999/2)", f"log({10**18}/3)", f"log({2**70}/{2**69})",
              "log(6/4)", "log(3/5)", "log(0/0)", "log(5/0)", "log(\u0663)", "log(1/\u0663)", "log(+3)", "log( 3)",
              "ln(3)", "log(3", "log()", "log(/3)", "log(3/)", "log(1/2/3)", "0.5", "inf", "log(1.5)", "log(007/7)"]
    ratios = parse_integer_log_ratios(tokens)
    expected = {"log(3)": (3, 1), "log(10/7)": (10, 7), "log(999999999999999999/2)": (999999999999999999, 2),
                f"log({10**18}/3)": (10**18, 3), f"log({2**70}/{2**69})": (2, 1), "log(6/4)": (3, 2),
                "log(007/7)": (1, 1)}
    assert {token: ratio for token, ratio in zip(tokens, ratios) if ratio is not None} == expected
    for token, ratio in expected.items():
        assert ratio_level(ratio) == ExactEpsilon.parse(token)
        assert all(type(part) is int for part in ratio)


def test_level_1e300_and_beyond_the_float_range():
    rows = [[Fraction(1, 2), Fraction(1, 2)], [Fraction(1, 3), Fraction(2, 3)]]
    for levels in ([["0", "1e300"], ["1e300", "0"]], np.array([[0.0, 1e300], [1e300, 0.0]])):
        certificate = certify(Channel(rows), PrivacyMatrix(levels), exact=True)
        assert certificate.certified and certificate.margin == pytest.approx(1e300)
    broken = [[Fraction(1), Fraction(0)], [Fraction(1, 2), Fraction(1, 2)]]
    certificate = certify(Channel(broken), PrivacyMatrix([["0", "1e300"], ["1e300", "0"]]), exact=True)
    assert certificate.verdict == "violated" and certificate.margin == -math.inf
    assert [(v.x, v.x_prime, v.y) for v in certificate.violations] == [(1, 0, 1)]
    assert ExactEpsilon.parse("1e300").allows(Fraction(10**5000), Fraction(1))
    assert not ExactEpsilon.parse("1e4").allows(Fraction(10**5000), Fraction(1))


def printed(certificate) -> str:
    buffer = io.StringIO()
    report(certificate, Console(file=buffer, width=400, color_system=None))
    return buffer.getvalue()


def test_entries_of_1e_minus_30000_and_ratios_beyond_the_int_string_limit():
    tiny = Fraction(1, 10**30000)
    rows = [[1 - tiny, tiny], [Fraction(1, 2), Fraction(1, 2)]]
    certificate = certify(Channel(rows), PrivacyMatrix([["0", "log(2)"], ["1e4", "0"]]), exact=True)
    # pair (0, 1): ratio 2 - 2e-30000 < 2, tight to 1e-30000; pair (1, 0): log(10^30000 / 2) > 1e4
    assert [(v.x, v.x_prime, v.y) for v in certificate.violations] == [(1, 0, 1)]
    violation = certificate.violations[0]
    assert violation.log_ratio == pytest.approx(30000 * math.log(10) - math.log(2))
    assert certificate.margin == pytest.approx(1e4 - violation.log_ratio)
    payload = json.loads(json.dumps(certificate.to_dict()))
    assert payload["violations"][0]["ratio"].startswith("~5.000000000000000")
    assert payload["violations"][0]["ratio"].endswith("e+29999")
    text = printed(certificate)
    assert "ratio ~5.0000000000000000e+29999" in text and "VIOLATED" in text

    above = [[Fraction(2, 3) + tiny, Fraction(1, 3) - tiny], [Fraction(1, 3), Fraction(2, 3)]]
    certificate = certify(Channel(above), PrivacyMatrix([["0", "log(2)"], ["inf", "0"]]), exact=True)
    assert certificate.verdict == "violated"
    assert certificate.margin < 0 and certificate.violations[0].excess > 0  # 1.5e-30000, not 0.0
    line = [row for row in printed(certificate).splitlines() if "violated:" in row][0]
    assert "= 0.69314718055994531 + 1.5e-30000 > E = 0.69314718055994531 (ratio ~2.0000000000000000)" in line
    below = [[Fraction(2, 3) - tiny, Fraction(1, 3) + tiny], [Fraction(1, 3), Fraction(2, 3)]]
    certificate = certify(Channel(below), PrivacyMatrix([["0", "log(2)"], ["inf", "0"]]), exact=True)
    assert certificate.certified and certificate.margin > 0


def test_violation_below_float_resolution_prints_a_negative_margin_and_a_larger_log_ratio():
    k = 3
    rows = grr_rows(k, 3 + Fraction(1, 10**17))  # log-ratio exceeds log(3) by 3.3e-18
    certificate = certify(Channel(rows), PrivacyMatrix([["0" if x == y else "log(3)" for y in range(k)] for x in range(k)]), exact=True)
    assert certificate.verdict == "violated"
    assert certificate.margin == pytest.approx(-1 / 3 * 1e-17, rel=1e-9)
    text = printed(certificate)
    assert "margin min(E - E_Q) = -3.33333e-18" in text
    for line in (row for row in text.splitlines() if "violated:" in row):
        log_ratio = line.split("log Q[x,y]/Q[x',y] = ")[1].split(" > E = ")[0]
        allowed = line.split(" > E = ")[1].split(" (")[0]
        assert Decimal(log_ratio) > Decimal(allowed)
        assert "by 3.3e-18" in line
    payload = certificate.to_dict()
    assert payload["margin"] < 0 and payload["violations"][0]["excess"] == pytest.approx(1 / 3 * 1e-17)


def test_float_mode_refuses_subnormal_and_underflowing_entries():
    subnormal = Channel([[1.2e-323, 1.0], [7.5e-324, 1.0]])  # 1.2e-323 is stored as 1e-323: quantised
    with pytest.raises(ValueError, match=r"row 0, column 0: value 1e-323 is subnormal.*exact=True \(--exact\)"):
        certify(subnormal, PrivacyMatrix.classic(2, 1.0))
    # exact mode decides the rationals as written: 1.2e-323 / 7.5e-324 = 1.6
    written = Channel([["1.2e-323", "1"], ["7.5e-324", "1"]])
    proof = certify(written, PrivacyMatrix([["0", "log(1.6)"], ["inf", "0"]]), exact=True)
    assert proof.certified and proof.margin == 0.0 and proof.tight_epsilon[0, 1] == pytest.approx(math.log(1.6))
    assert certify(written, PrivacyMatrix([["0", "log(1.5)"], ["inf", "0"]]), exact=True).verdict == "violated"
    underflow = Channel([[Fraction(1, 10**400), 1 - Fraction(1, 10**400)], [Fraction(0), Fraction(1)]])
    with pytest.raises(ValueError, match=r"row 0, column 0: value ~1\.0+e-400 underflows to 0 .*exact=True"):
        certify(underflow, PrivacyMatrix.classic(2, 1.0))
    assert certify(underflow, PrivacyMatrix.classic(2, 1.0), exact=True).margin == -math.inf
