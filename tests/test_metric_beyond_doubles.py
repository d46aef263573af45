"""Metric E whose chains reach beyond the double range, and HiGHS runs that end numerically.

A metric line's levels grow with the distance (a line of 60 values at epsilon 20 reaches 1,180 between its
ends; a line of 1,000 values at epsilon 1 reaches 999), while every constrained pair (a neighbour) stays small.
Columns of such an E's cone reach ``e^-1180``, which underflows; an 8 x 8 grid at epsilon 40 has every edge
above the largest matrix entry HiGHS takes (1e15). These designs used to stop on a solver status or refuse
the levels; each test below states the independent fact it checks.
"""

from __future__ import annotations

import math

import highspy
import numpy as np
import pytest

from designer.certify import certify
from designer.channel import Channel
from designer.design.expected_loss import design_expected_loss
from designer.design.front import design_channel
from designer.design.gap.column_generation import design_with_gap
from designer.design.geometric import truncated_geometric
from designer.design.metric_compare import compare_expected_loss
from designer.design.repair import (
    TRUNCATION_LEVEL,
    check_design_levels,
    raise_into_cone,
    repair_into_cone,
    within_doubles,
)
from designer.spec import PrivacyMatrix
from designer.utility import mutual_information
from solvers.highs_retry import RETRIES, run_until


def line(k: int, epsilon: float) -> PrivacyMatrix:
    return PrivacyMatrix.metric(np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float), epsilon)


def column_spread(matrix: np.ndarray) -> float:
    """The largest ``log(max / min)`` over the columns that carry mass."""
    used = matrix[:, matrix.sum(axis=0) > 0]
    return float(np.max(np.log(used.max(axis=0)) - np.log(used.min(axis=0))))


@pytest.mark.parametrize("epsilon", [11.0, 20.0])
def test_mutual_information_on_a_line_whose_ends_are_beyond_the_doubles(epsilon):
    """Line k = 60 (closure up to 649 at epsilon 11, 1,180 at 20): a certified channel within the 1% gap, and an
    upper bound that no E-LDP channel beats: the truncated geometric mechanism (E-LDP: adjacent ratios e^eps)
    has at most the proven upper bound, and log 60 bounds everything."""
    privacy = line(60, epsilon)
    result = design_with_gap(privacy, max_seconds=30)
    assert result.certified and result.stopped == "gap"
    geometric = mutual_information(np.full(60, 1 / 60), truncated_geometric(60, epsilon))
    assert geometric <= result.upper <= math.log(60) * (1 + 1e-12)
    assert result.lower >= (1 - 0.01) * result.upper
    assert column_spread(result.channel.matrix) <= TRUNCATION_LEVEL + 1e-6  # the floor: every entry a normal double


def test_mutual_information_when_every_edge_is_beyond_the_lp_range():
    """8 x 8 grid at epsilon 40 per step: the optimum reveals the input up to e^-40, so lower and upper both equal
    H(X) = log 64 to far below 1e-9; the edges' ratios e^40 never reach HiGHS."""
    result = design_with_gap(PrivacyMatrix.grid_l1((8, 8), 40.0), max_seconds=30)
    assert result.certified
    assert result.lower == pytest.approx(math.log(64), abs=1e-9)
    assert result.upper == pytest.approx(math.log(64), abs=1e-9) and result.upper >= result.lower


def test_auto_hands_an_enumeration_out_of_time_to_column_generation():
    """Line k = 16 at epsilon 1: its cone's enumeration takes far more than the 0.75 s it gets (half of 1.5 s; k = 15
    took 10 s), so ``auto`` runs column generation for the rest instead of refusing, and says so."""
    privacy = line(16, 1.0)
    design = design_channel(privacy, max_seconds=1.5)
    assert design.method == "column-generation"
    assert "did not finish" in design.reason and "column generation with certified bounds instead" in design.reason
    assert design.certificate.certified
    uniform = np.full(16, 1 / 16)
    assert design.lower.value <= design.upper.value
    assert mutual_information(uniform, truncated_geometric(16, 1.0)) <= design.upper.value
    with pytest.raises(ValueError, match="did not finish"):  # asked for by name, the enumeration still refuses
        design_channel(privacy, method="enumerate", max_seconds=0.5)


def test_expected_loss_on_a_line_beyond_the_doubles_closed_form_equals_the_lp():
    """Line k = 40 at epsilon 25 (closure up to 975), absolute-error loss: the closed form and the direct LP
    (two independent methods, both repaired into the truncation) agree, both certified."""
    privacy = line(40, 25.0)
    loss = np.abs(np.subtract.outer(np.arange(40), np.arange(40))).astype(float)
    closed = design_expected_loss(privacy, loss, method="closed-form")
    direct = design_expected_loss(privacy, loss, method="direct")
    assert closed.certified and direct.certified
    assert "truncated at level 600" in closed.reason
    assert direct.objective == pytest.approx(closed.objective, rel=1e-6)
    assert closed.lower_bound <= closed.objective <= closed.lower_bound * (1 + 1e-9)
    # by hand: with the remap, interior inputs err by 1 with probability 2 alpha / (1 + alpha) to first order
    alpha = math.exp(-25.0)
    assert closed.objective == pytest.approx((38 * 2 * alpha + 2 * alpha) / 40, rel=1e-6)
    assert column_spread(closed.channel.matrix) <= TRUNCATION_LEVEL + 1e-6


def test_compare_beyond_the_doubles_certifies_every_baseline():
    """Line k = 300 at epsilon 3 (closure 897): the exponential mechanism (on the truncated distance) and the
    repaired truncated geometric mechanism certify; the geometric one is the optimum (Ghosh et al.)."""
    privacy = line(300, 3.0)
    loss = np.abs(np.subtract.outer(np.arange(300), np.arange(300))).astype(float)
    optimum = design_expected_loss(privacy, loss).objective
    rows = {row.name.split(" (")[0]: row for row in compare_expected_loss(privacy, loss, None, optimum)}
    assert all(row.certified for row in rows.values())
    assert rows["truncated geometric"].ratio == pytest.approx(1.0, abs=1e-9)
    assert rows["exponential mechanism"].ratio > 1.5


def test_a_repair_into_the_truncation_leaves_no_subnormal_entry():
    """Raising a column into E's own cone on a line of 120 at epsilon 7 (closure 833) lands entries between
    e^-745 and e^-708: subnormal, which the float certifier refuses (column generation's final repair did this
    on such lines); into the truncation every entry stays at least e^-600 times the column's largest."""
    privacy = line(120, 7.0)
    identity = np.eye(120)
    raised = raise_into_cone(privacy, identity)
    assert np.any((raised > 0) & (raised < np.finfo(float).tiny))  # the hazard
    truncated = within_doubles(privacy)
    repaired = repair_into_cone(truncated, identity)
    assert repaired.min() >= np.finfo(float).tiny and np.allclose(repaired.sum(axis=1), 1.0, atol=1e-12)
    assert column_spread(repaired) <= TRUNCATION_LEVEL + 1e-6
    assert certify(Channel(repaired), privacy).certified


def test_only_constrained_levels_beyond_the_doubles_are_refused():
    """A line's far levels are implied by its neighbours (accepted, truncated); a block E's level 745 is a
    constraint of its own (refused, one line naming the entry)."""
    far = line(800, 1.0)
    check_design_levels(far, nonredundant_only=True)
    truncated = within_doubles(far)
    assert truncated is not far and truncated.epsilon.max() == TRUNCATION_LEVEL
    assert truncated.epsilon[0, 1] == 1.0 and within_doubles(line(10, 1.0)).epsilon[0, 9] == 9.0
    # min(|i - j|, 600) exactly, computed once per E and its own closure (no second O(k^3) closure)
    distance = np.abs(np.arange(800)[:, None] - np.arange(800)[None, :]).astype(float)
    assert np.array_equal(truncated.epsilon, np.minimum(distance, TRUNCATION_LEVEL))
    assert within_doubles(far) is truncated and truncated.closure() is truncated
    with pytest.raises(ValueError, match="E row 0, column 1: level 745 is beyond the double range"):
        check_design_levels(PrivacyMatrix.block([3, 3], 745.0), nonredundant_only=True)
    # a level implied by a shorter path of zero levels (no triangle of positive legs): accepted, as
    # nonredundant_pairs drops it (it was refused: the two disagreed)
    through_zeros = PrivacyMatrix(np.array([[0.0, 0.0, 800.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    assert [0, 2] not in through_zeros.nonredundant_pairs().tolist()
    check_design_levels(through_zeros, nonredundant_only=True)


class ScriptedHighs:
    """A stand-in for ``highspy.Highs`` that ends its runs in the given statuses, recording the options of each run."""

    def __init__(self, statuses):
        self.statuses, self.options, self.runs, self.cleared = list(statuses), {"presolve": "choose", "solver": "choose",
                                                                                  "simplex_strategy": 1}, [], 0

    def run(self):
        self.runs.append(dict(self.options))

    def getModelStatus(self):
        return self.statuses[len(self.runs) - 1]

    def getOptionValue(self, name):
        return highspy.HighsStatus.kOk, self.options[name]

    def setOptionValue(self, name, value):
        self.options[name] = value

    def clearSolver(self):
        self.cleared += 1


def test_run_until_retries_in_turn_and_puts_the_options_back():
    status = highspy.HighsModelStatus
    highs = ScriptedHighs([status.kUnbounded, status.kNotset, status.kSolveError, status.kOptimal])
    assert run_until(highs, [status.kOptimal]) == status.kOptimal
    assert [run["presolve"] for run in highs.runs] == ["choose", "choose", "off", "choose"]
    assert highs.runs[3]["solver"] == "ipm" and highs.cleared == 3
    assert highs.options == {"presolve": "choose", "solver": "choose", "simplex_strategy": 1}
    failing = ScriptedHighs([status.kUnbounded] * (len(RETRIES) + 1))
    assert run_until(failing, [status.kOptimal, status.kInfeasible]) == status.kUnbounded
    assert len(failing.runs) == len(RETRIES) + 1 and failing.runs[-1]["simplex_strategy"] == 4
