"""Exact certification end to end: E read once (lazy exact levels), and designs beyond the double range.

Independent checks: levels and ratios are compared with Python's ``decimal``
module at 60 digits (``Decimal.ln``), not with the project's Arb code.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.design.expected_loss import design_expected_loss
from designer.design.repair import MAX_DESIGN_LEVEL, MAX_FLOAT_DESIGN_LEVEL
from designer.design.vertex import design_by_vertices
from designer.exact import ExactEpsilon, parse_rational, plain_decimal_floats
from designer.io import read_channel, read_privacy_matrix
from designer.spec import PrivacyMatrix

runner = CliRunner()

#: Mixed levels: plain decimals (kept as text until needed), log(r), inf, p/q, scientific, huge.
CELLS = [
    ["0", "0.25", "log(3)", "inf"],
    ["1/3", "0", "2.5e-3", "1e300"],
    ["7", "ln(5/2)", "0", "0.1"],
    ["1.0986122886681098", "inf", "12345678901234567890.125", "0"],
]


def _write(path, rows) -> None:
    path.write_text("".join(",".join(row) + "\n" for row in rows))


def test_privacy_matrix_from_parsed_arrays_equals_matrix_from_text(tmp_path):
    _write(tmp_path / "E.csv", CELLS)
    read = read_privacy_matrix(tmp_path / "E.csv", exact=True)
    from_text = PrivacyMatrix(np.array(CELLS, dtype=object))
    assert read == from_text
    assert np.array_equal(read.epsilon, from_text.epsilon)
    rows, columns = np.nonzero(np.ones((4, 4), dtype=bool))
    lazy = read.exact_levels(rows, columns)
    assert lazy == from_text.exact_epsilon.ravel().tolist()
    assert read.exact_epsilon.tolist() == from_text.exact_epsilon.tolist()
    # the plain decimals are the rationals as written, and their floats correctly rounded
    assert read.exact_levels(np.array([2]), np.array([3])) == [ExactEpsilon(value=Fraction(1, 10))]
    assert read.epsilon[3, 2] == float(Fraction("12345678901234567890.125"))
    assert read.epsilon[1, 3] == 1e300 and abs(read.epsilon[0, 2] - math.log(3)) <= 2 * math.ulp(math.log(3))


def test_exact_levels_match_the_materialised_matrix_after_restrict(tmp_path):
    _write(tmp_path / "E.csv", CELLS)
    read = read_privacy_matrix(tmp_path / "E.csv", exact=True)
    part = read.restrict([2, 0])
    assert part.exact_epsilon.tolist() == [
        [ExactEpsilon.parse("0"), ExactEpsilon.parse("7")],
        [ExactEpsilon.parse("log(3)"), ExactEpsilon.parse("0")],
    ]
    assert part.labels == ("2", "0")


def test_privacy_matrix_with_exact_entries_checks_the_floats_and_shape():
    exact = np.array([[ExactEpsilon.parse("0"), "0.5"], ["0.5", ExactEpsilon.parse("0")]], dtype=object)
    with pytest.raises(ValueError, match="differ in shape"):
        PrivacyMatrix(np.zeros((3, 3)), exact_epsilon=exact)
    with pytest.raises(ValueError, match="row 0, column 1"):
        PrivacyMatrix(np.array([[0.0, -0.5], [0.5, 0.0]]), exact_epsilon=exact)
    with pytest.raises(ValueError, match="diagonal"):
        PrivacyMatrix(np.array([[1.0, 0.5], [0.5, 0.0]]), exact_epsilon=exact)
    good = PrivacyMatrix(np.array([[0.0, 0.5], [0.5, 0.0]]), exact_epsilon=exact)
    assert good.exact_epsilon[0, 1] == ExactEpsilon(value=Fraction(1, 2))


def test_plain_decimal_floats_only_reads_plain_decimals():
    tokens = ["0.1", "3", ".5", "5.", "", ".", "1e5", "-1", "+2", "1_0", "inf", "1/3", " 1", "0." + "1" * 70]
    floats = plain_decimal_floats(tokens)
    assert floats[:4] == [0.1, 3.0, 0.5, 5.0]
    assert floats[4:] == [None] * 10
    for token, value in zip(tokens[:4], floats[:4]):
        assert value == float(parse_rational(token))  # correctly rounded, like float(Fraction)


def _exceeds_log3(level: str) -> bool:
    """Independent: whether the decimal ``level`` exceeds log 3 (60-digit ``decimal``)."""
    with localcontext() as context:
        context.prec = 60
        return Decimal(level) > Decimal(3).ln()


@pytest.mark.parametrize("level", ["1.0986122886681098", "1.0986122886681096", "1.09861228866810969139524523693", "1.09861228866810969139524523692"])
def test_cli_exact_decides_decimal_levels_tight_to_1e_16(tmp_path, level):
    """Randomised response with ratio 3 against a decimal E within 1e-16 of log 3: undecided
    by the float filter, so the lazily kept decimal text is read as the exact level."""
    _write(tmp_path / "E.csv", [["0", level], [level, "0"]])
    _write(tmp_path / "Q.csv", [["0.75", "0.25"], ["0.25", "0.75"]])
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv"), "--exact", "--json"])
    payload = json.loads(result.stdout)
    expected = _exceeds_log3(level)
    assert payload["verdict"] == ("certified" if expected else "violated")
    assert result.exit_code == (0 if expected else 1)
    assert (payload["margin"] > 0) == expected and payload["margin"] != 0


def test_reader_maps_repeated_values_back_to_their_cells(tmp_path):
    rows = [["1/4", "0.5", "1/4"], ["0.5", "1/4", "1/4"], ["1/4", "1/4", "0.5"]]
    _write(tmp_path / "Q.csv", rows)
    channel = read_channel(tmp_path / "Q.csv", exact=True)
    assert channel.exact_matrix.tolist() == [[parse_rational(cell) for cell in row] for row in rows]
    assert np.array_equal(channel.matrix, np.array([[float(parse_rational(c)) for c in row] for row in rows]))


def test_reader_reports_the_first_cell_of_a_repeated_refused_value(tmp_path):
    _write(tmp_path / "E.csv", [["0", "1", "-2"], ["-2", "0", "1"], ["1", "1", "0"]])
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "E.csv"), "--exact"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "row 1, column 3: E value '-2'" in lines[0]


def test_design_limits_are_the_double_range():
    assert MAX_FLOAT_DESIGN_LEVEL == pytest.approx(708.3964185322641, rel=1e-15)
    assert math.exp(-MAX_FLOAT_DESIGN_LEVEL) == pytest.approx(2.2250738585072014e-308, rel=1e-12)
    assert MAX_DESIGN_LEVEL == pytest.approx(709.782712893384, rel=1e-15)
    assert math.isfinite(math.exp(MAX_DESIGN_LEVEL)) and MAX_DESIGN_LEVEL + 1e-12 > math.log(1.7976931348623157e308)


@pytest.mark.parametrize("epsilon", [745.0, 800.0])
def test_design_refuses_levels_beyond_the_double_range(epsilon):
    privacy = PrivacyMatrix.classic(4, epsilon)
    with pytest.raises(ValueError, match="beyond the double range"):
        design_by_vertices(privacy)
    with pytest.raises(ValueError, match="beyond the double range"):
        design_by_vertices(privacy, exact=True)
    with pytest.raises(ValueError, match="beyond the double range"):
        design_expected_loss(PrivacyMatrix.block([3, 3], epsilon), 1.0 - np.eye(6))


def test_float_design_below_the_limit_and_exact_design_between_the_limits_are_certified():
    """At 708.3 the float design's entries (about exp(-708.3)) are still normal doubles; at 709
    only the exact design can represent them, and its proof is checked independently."""
    near = design_by_vertices(PrivacyMatrix.classic(4, 708.3))
    assert near.certified and near.channel.matrix.min() >= 2.2250738585072014e-308
    with pytest.raises(ValueError, match="--exact up to 709.78"):
        design_by_vertices(PrivacyMatrix.classic(4, 709.0))
    exact = design_by_vertices(PrivacyMatrix.classic(4, 709.0), exact=True)
    assert exact.certified
    q = exact.channel.exact_matrix
    ratio = max(q[x, y] / q[z, y] for x in range(4) for z in range(4) for y in range(q.shape[1]) if q[z, y] != 0)
    with localcontext() as context:  # independent: the largest ratio is at most e^709
        context.prec = 60
        assert Decimal(ratio.numerator).ln() - Decimal(ratio.denominator).ln() <= Decimal(709)


def test_cli_design_beyond_the_double_range_is_one_line_and_no_file(tmp_path):
    runner.invoke(app, ["spec", "block", "--k", "6", "--blocks", "2", "--eps", "745", "--out", str(tmp_path / "E.csv")])
    for extra in ([], ["--exact"]):
        result = runner.invoke(app, ["design", "--E", str(tmp_path / "E.csv"), "--out", str(tmp_path / "Q.csv"), *extra])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1
        assert lines[0].startswith("error: E row 0, column 1: level 745 is beyond the double range")
        assert not (tmp_path / "Q.csv").exists()
