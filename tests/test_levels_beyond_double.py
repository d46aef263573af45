"""Finite privacy levels beyond the double range stay constraints in every mode.

A level such as ``1e309`` has no double; it used to be read as ``inf`` (no
constraint), so exact mode certified a channel whose zero pattern breaks it.
Every verdict here is compared with :func:`independent_verdict`, which shares
no code with the readers or the certifier: ``fractions.Fraction`` of the text
and Definition 2 of context-aware-ldp.md in its per-output form, decided with
integers only. For a rational level ``L``, ``Q[x,y] <= exp(L) Q[x',y]`` fails iff
``Q[x',y] = 0 < Q[x,y]`` or ``log(a/b) > L``; with ``a/b < 2^n`` (``n`` the bit
length of ``ceil(a/b)``) and ``log 2 < 1``, ``n <= L`` proves it holds, which
covers every level here (all are far beyond any ``n`` of these channels).
``log(r)`` levels are decided as ``a <= r b``.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.certify import certify
from designer.cli import app
from designer.deploy.package import package_digest
from designer.exact import LARGEST_LEVEL, ExactEpsilon
from designer.io import read_channel, read_privacy_matrix
from designer.spec import PrivacyMatrix

runner = CliRunner()
HUGE = ["1e309", "1e400/1", "1" + "0" * 320, "2.5e1000"]


def independent_verdict(channel: list[list[str]], levels: list[list[str]]) -> str:
    """``certified`` or ``violated`` by the definition, in integers (see the module docstring)."""
    Q = [[fraction(cell) for cell in row] for row in channel]
    for x, row in enumerate(Q):
        for x_prime, other in enumerate(Q):
            text = levels[x][x_prime].strip()
            if x == x_prime or text == "inf":
                continue
            logarithm = re.fullmatch(r"log\((.+)\)", text)
            for a, b in zip(row, other):
                if a == 0:
                    continue
                if b == 0:
                    return "violated"
                if logarithm:
                    if a > fraction(logarithm.group(1)) * b:
                        return "violated"
                    continue
                bits = math.ceil(a / b).bit_length()
                assert bits <= fraction(text), "the checker decides only levels above the ratios' bit lengths"
    return "certified"


def fraction(text: str) -> Fraction:
    """``Fraction`` of a decimal or ``p/q`` (Python 3.11's ``Fraction`` reads no exponent in ``p/q``)."""
    top, _, bottom = text.partition("/")
    return Fraction(top) / Fraction(bottom or "1")


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("".join(",".join(row) + "\n" for row in rows))
    return path


CASES = [
    # (E, channel): a zero pattern broken, kept, and a log(r) pair beside a huge one
    ([["0", "{h}"], ["{h}", "0"]], [["1", "0"], ["0", "1"]]),
    ([["0", "{h}"], ["{h}", "0"]], [["1/2", "1/2"], ["1/3", "2/3"]]),
    ([["0", "{h}", "inf"], ["log(3)", "0", "{h}"], ["{h}", "inf", "0"]], [["1/2", "1/2", "0"], ["1/4", "3/4", "0"], ["1/4", "1/4", "1/2"]]),
    ([["0", "{h}", "inf"], ["log(3)", "0", "{h}"], ["{h}", "inf", "0"]], [["1/2", "1/4", "1/4"], ["1/4", "1/2", "1/4"], ["1/4", "1/4", "1/2"]]),
    ([["0", "{h}", "log(2)"], ["{h}", "0", "inf"], ["log(2)", "{h}", "0"]], [["1/2", "1/2", "0"], ["1/2", "0", "1/2"], ["1/3", "1/3", "1/3"]]),
]


@pytest.mark.parametrize("huge", HUGE)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_certify_agrees_with_the_independent_checker(tmp_path, huge, case):
    levels = [[cell.format(h=huge) for cell in row] for row in CASES[case][0]]
    channel = CASES[case][1]
    expected = independent_verdict(channel, levels)
    e_file, q_file = write_csv(tmp_path / "E.csv", levels), write_csv(tmp_path / "Q.csv", channel)
    privacy = read_privacy_matrix(e_file)
    assert certify(read_channel(q_file), privacy, exact=True).verdict == expected
    result = runner.invoke(app, ["certify", "--E", str(e_file), "--channel", str(q_file), "--exact", "--json"])
    assert result.exit_code == (0 if expected == "certified" else 1), result.output
    payload = json.loads(result.stdout)
    assert payload["verdict"] == expected
    for violation in payload["violations"]:  # a level beyond the double range is named exactly, never as inf
        if levels[violation["x"]][violation["x_prime"]] == huge:
            assert violation["allowed"] == LARGEST_LEVEL and violation["level"].startswith("~")
    # the library's own exact E (strings) agrees too, in exact and in float mode
    library = PrivacyMatrix(levels)
    assert certify(read_channel(q_file), library, exact=True).verdict == expected
    assert certify(read_channel(q_file, exact=False), library).verdict == expected


@pytest.mark.parametrize("huge", HUGE)
def test_a_huge_level_is_finite_but_never_infinite(huge):
    level = ExactEpsilon.parse(huge)
    assert level.beyond_double and not level.infinite and float(level) == LARGEST_LEVEL
    assert not ExactEpsilon.parse("1e308").beyond_double and not ExactEpsilon.parse("log(1e400)").beyond_double
    assert float(ExactEpsilon.parse("log(1e400)")) == pytest.approx(400 * math.log(10))
    assert level.allows(Fraction(10**300), Fraction(1)) and not level.allows(Fraction(1), Fraction(0))


@pytest.mark.parametrize("huge", HUGE)
def test_float_mode_refuses_a_huge_level_in_one_line(tmp_path, huge):
    e_file = write_csv(tmp_path / "E.csv", [["0", huge], [huge, "0"]])
    q_file = write_csv(tmp_path / "Q.csv", [["1", "0"], ["0", "1"]])
    result = runner.invoke(app, ["certify", "--E", str(e_file), "--channel", str(q_file)])
    message = result.stderr.strip()
    assert result.exit_code == 2 and len(message.splitlines()) == 1
    assert "beyond the double range" in message and "row 1, column 2" in message


def test_design_refuses_and_package_rejects_a_broken_zero_pattern(tmp_path):
    e_file = write_csv(tmp_path / "E.csv", [["0", "1e309"], ["1e309", "0"]])
    identity = write_csv(tmp_path / "Q.csv", [["1", "0"], ["0", "1"]])
    for exact in ([], ["--exact"]):
        result = runner.invoke(app, ["design", "--E", str(e_file), "--out", str(tmp_path / "D.csv"), *exact])
        assert result.exit_code == 2 and "~1.0000000000000000e+309 is beyond the double range" in result.stderr
    assert not (tmp_path / "D.csv").exists()
    result = runner.invoke(app, ["package", "--E", str(e_file), "--channel", str(identity), "--out", str(tmp_path / "p.json")])
    assert result.exit_code == 1 and "E = ~1.0000000000000000e+309" in result.output
    assert not (tmp_path / "p.json").exists()
    uniform = write_csv(tmp_path / "U.csv", [["1/2", "1/2"], ["1/2", "1/2"]])
    result = runner.invoke(app, ["package", "--E", str(e_file), "--channel", str(uniform), "--out", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "p.json").read_text())["E"][0][1] == str(10**309)


def test_verify_package_checks_a_huge_level_of_a_rehashed_package(tmp_path):
    """A package for E = inf, its E then set to 1e309 and its hash recomputed: the table breaks that E."""
    e_file = write_csv(tmp_path / "E.csv", [["0", "inf"], ["inf", "0"]])
    identity = write_csv(tmp_path / "Q.csv", [["1", "0"], ["0", "1"]])
    out = tmp_path / "p.json"
    assert runner.invoke(app, ["package", "--E", str(e_file), "--channel", str(identity), "--out", str(out)]).exit_code == 0
    document = json.loads(out.read_text())
    document["E"] = [["0", "1e309"], ["1e309", "0"]]
    document["sha256"] = package_digest(document)
    out.write_text(json.dumps(document))
    expected = independent_verdict([["1", "0"], ["0", "1"]], document["E"])
    result = runner.invoke(app, ["verify-package", str(out), "--json"])
    assert expected == "violated" and result.exit_code == 1, result.output
    assert json.loads(result.stdout)["verdict"] == "violated"


def test_a_huge_level_in_a_lazily_read_decimal_matrix(tmp_path):
    """Plain decimals stay text until needed; one of 320 digits must still become a finite level."""
    k = 6
    rows = [["0" if x == y else ("1" + "0" * 320 if (x + y) % 2 else "0.5") for y in range(k)] for x in range(k)]
    e_file = write_csv(tmp_path / "E.csv", rows)
    privacy = read_privacy_matrix(e_file)
    assert np.isfinite(privacy.epsilon).all()
    channel = [["1" if x == y else "0" for y in range(k)] for x in range(k)]
    q_file = write_csv(tmp_path / "Q.csv", channel)
    assert certify(read_channel(q_file), privacy, exact=True).verdict == independent_verdict(channel, rows) == "violated"


def test_composition_keeps_an_overflowing_sum_finite():
    """Proposition 2's E1 + E2 (and the product domain's E): 1e308 + 1e308 overflows a double
    but is a finite level; it must stay a constraint."""
    E = PrivacyMatrix([[0.0, 1e308], [np.inf, 0.0]])
    summed = (E + E).epsilon
    assert summed[0, 1] == LARGEST_LEVEL and summed[1, 0] == np.inf
    product = E.product(E).epsilon
    assert np.isfinite(product[0, 3]) and product[0, 3] == LARGEST_LEVEL and product[3, 0] == np.inf
    identity = np.eye(2)
    assert certify(identity, E + E).verdict == "violated"  # the zero pattern breaks the finite level


@pytest.mark.parametrize("epsilon", ["1e308", "1e309"])
@pytest.mark.parametrize("kind", [["package-hadamard", "--block-sizes", "2,2"], ["package-high-low", "--k", "4", "--sensitive", "2"]])
def test_structured_packages_take_a_huge_level_in_log_space(tmp_path, epsilon, kind):
    """exp(1e308) overflows even an Arb ball; the coin is decided exactly: e^eps >= 2^32 - 1, so
    T = 2^32 - 1 (the largest coin T with T / (2^32 - T) <= e^eps)."""
    out = tmp_path / "p.json"
    result = runner.invoke(app, [*kind, "--eps", epsilon, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["coin"] == str(2**32 - 1)
    assert runner.invoke(app, ["verify-package", str(out)]).exit_code == 0
