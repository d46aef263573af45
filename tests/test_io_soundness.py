"""Float-mode reading soundness at the edges, against an independent Fraction-based checker.

Channels written with entries that underflow (``1e-400``) or are subnormal
(``1.2e-323``) were certified wrongly in float mode; float mode now refuses them
(one line pointing to ``--exact``), and exact mode decides them as written. Each
verdict is compared with :func:`fraction_verdict`, which shares no code with the
readers or the certifier: ``fractions.Fraction`` of the decimal text and the
definition of E-LDP (context-aware-ldp.md, Definition 2, per-output form) with
``E = log(r)`` so that ``Q[x,y] <= r Q[x',y]`` is exact rational arithmetic.
"""

from __future__ import annotations

import json
import sys
from fractions import Fraction

import pytest
from typer.testing import CliRunner

from designer.cli import app

runner = CliRunner()


def fraction_verdict(channel_rows: list[list[str]], ratio_bounds: list[list[str | None]]) -> str:
    """``certified`` iff ``Q[x,y] <= r[x,x'] Q[x',y]`` for all x, x', y (None: no constraint)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # this checker reads 5,001-digit integers with Fraction itself
    try:
        Q = [[Fraction(cell) for cell in row] for row in channel_rows]
    finally:
        sys.set_int_max_str_digits(limit)
    for x, row in enumerate(Q):
        for x_prime, other in enumerate(Q):
            bound = ratio_bounds[x][x_prime]
            if x == x_prime or bound is None:
                continue
            if any(a > Fraction(bound) * b for a, b in zip(row, other)):
                return "violated"
    return "certified"


def files(tmp_path, channel_rows, ratio_bounds):
    e_cells = [
        ["0" if x == y else "inf" if r is None else f"log({r})" for y, r in enumerate(row)] for x, row in enumerate(ratio_bounds)
    ]
    (tmp_path / "E.csv").write_text("\n".join(",".join(row) for row in e_cells) + "\n")
    (tmp_path / "Q.csv").write_text("\n".join(",".join(row) for row in channel_rows) + "\n")
    return ["--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")]


CASES = [
    # the issue's underflow: as written Q[0,0] > 0 = Q[1,0], a violation without bound
    ([["1e-400", "1"], ["0", "1"]], [[None, "2"], ["2", None]]),
    # the issue's subnormals: the true ratio is 1.2e-323 / 7.5e-324 = 1.6
    ([["1.2e-323", "1"], ["7.5e-324", "1"]], [[None, "3/2"], ["3/2", None]]),
    ([["1.2e-323", "1"], ["7.5e-324", "1"]], [[None, "8/5"], ["8/5", None]]),
    # far below the doubles, and beyond Python's 4,300-digit int/str limit
    ([["2e-30000", "1"], ["1e-30000", "1"]], [[None, "2"], ["2", None]]),
    ([["3e-30000", "1"], ["1e-30000", "1"]], [[None, "2"], ["2", None]]),
    ([["1/1" + "0" * 5000, "1"], ["3/1" + "0" * 5000, "1"]], [[None, "1"], ["3", None]]),
    ([["1/1" + "0" * 5000, "1"], ["3/1" + "0" * 5000, "1"]], [[None, "1"], ["2", None]]),
]


@pytest.mark.parametrize("channel_rows, ratio_bounds", CASES)
def test_float_mode_refuses_and_exact_mode_decides_as_written(tmp_path, channel_rows, ratio_bounds):
    arguments = files(tmp_path, channel_rows, ratio_bounds)
    refused = runner.invoke(app, ["certify", *arguments])
    assert refused.exit_code == 2
    message = refused.stderr.strip()
    assert len(message.splitlines()) == 1 and message.endswith("certify it with --exact")
    assert "underflows to 0" in message or "is subnormal" in message
    decided = runner.invoke(app, ["certify", "--exact", "--json", *arguments])
    expected = fraction_verdict(channel_rows, ratio_bounds)
    assert json.loads(decided.stdout)["verdict"] == expected
    assert decided.exit_code == (0 if expected == "certified" else 1)


def test_the_independent_checker_sees_the_issue_s_violations():
    """The two findings were wrong verdicts: the checker itself tells them apart."""
    assert fraction_verdict(*CASES[0]) == "violated" and fraction_verdict(*CASES[1]) == "violated"
    assert fraction_verdict(*CASES[2]) == "certified"


def test_a_nested_fraction_no_longer_turns_a_violation_into_a_proof(tmp_path):
    """``1/2/4`` used to be read as 1/(2/4) = 2: exact mode certified a violating channel."""
    arguments = files(tmp_path, [["1/2/4", "1/2"], ["1/2", "1/2"]], [[None, "2"], ["2", None]])
    for mode in ([], ["--exact"]):
        result = runner.invoke(app, ["certify", *mode, *arguments])
        assert result.exit_code == 2 and "probability '1/2/4' is not a number >= 0 (a fraction has one '/'" in result.stderr


@pytest.mark.parametrize("cell", ["-1e-300", "-0.5e-320", "-1e-400"])
def test_tiny_negatives_are_refused_in_every_mode(tmp_path, cell):
    arguments = files(tmp_path, [["0.5", "0.5"], [cell, "1"]], [[None, "2"], ["2", None]])
    for mode in ([], ["--exact"]):
        result = runner.invoke(app, ["certify", *mode, *arguments])
        assert result.exit_code == 2 and f"row 2, column 1: probability '{cell}' is negative" in result.stderr


@pytest.mark.parametrize(
    "command, name, text, message",
    [
        (["design", "--utility", "expected-loss", "--loss", "FILE"], "loss.csv", "0,1\n-1e-300,0\n", "row 2, column 1: loss value '-1e-300' is negative"),
        (["design", "--prior", "FILE"], "prior.csv", "1,-1e-300\n", "row 1, column 2: prior value '-1e-300' is negative"),
        (["simulate-dist"], "dist.csv", "0.5,0.5,-1e-300\n", "row 1, column 3: distribution value '-1e-300' is negative"),
    ],
)
def test_tiny_negatives_in_loss_prior_and_distribution_files_name_their_cell(tmp_path, command, name, text, message):
    (tmp_path / "E.csv").write_text("0,1\n1,0\n")
    (tmp_path / name).write_text(text)
    if command == ["simulate-dist"]:
        arguments = ["simulate", "--mechanism", "grr", "--k", "3", "--eps", "1", "--n", "10", "--dist", str(tmp_path / name)]
    else:
        arguments = [*(str(tmp_path / name) if part == "FILE" else part for part in command), "--E", str(tmp_path / "E.csv"), "--out", str(tmp_path / "Q.csv")]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 2 and result.stderr.strip() == f"error: {tmp_path / name}: {message}"
    assert not (tmp_path / "Q.csv").exists()
