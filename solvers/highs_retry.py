"""Run a HiGHS model again, other ways, when it ends in a status the LP cannot have.

Where this is used the LP is feasible and bounded by construction (a box around a polytope, a
master with a column that serves every row), so "Unbounded", "Not Set" (the dual simplex's
"excessive dual values") or a solve error is numerical, not an answer. Measured on metric E far
beyond the levels of the papers' examples: on a line of 60 values at epsilon 20 a warm-started
bound LP over a box ended "Unbounded" and solved from scratch; on the same line at epsilon 11 the
vertex LP's dual simplex stopped with "excessive dual values" and solved without presolve, by the
interior point and by the primal simplex, to the same objective.
"""

from __future__ import annotations

from collections.abc import Iterable

import highspy

#: The ways a model is run again, in turn: from scratch (a failed warm start), without presolve, by the
#: interior point (crossover on, HiGHS's default), by the primal simplex.
RETRIES = ({}, {"presolve": "off"}, {"solver": "ipm"}, {"solver": "simplex", "simplex_strategy": 4})


def run_until(highs: highspy.Highs, accepted: Iterable[highspy.HighsModelStatus]) -> highspy.HighsModelStatus:
    """Run ``highs``; while its status is not ``accepted``, clear the solver and run it again with the next of
    :data:`RETRIES`. The options a retry changed are put back afterwards. Returns the last status (the caller
    refuses it when still not accepted)."""
    accepted = tuple(accepted)
    highs.run()
    status = highs.getModelStatus()
    for retry in RETRIES:
        if status in accepted:
            break
        saved = {name: highs.getOptionValue(name)[1] for name in retry}  # highspy 1.16: (status, value)
        try:
            for name, value in retry.items():
                highs.setOptionValue(name, value)
            highs.clearSolver()
            highs.run()
            status = highs.getModelStatus()
        finally:
            for name, value in saved.items():
                highs.setOptionValue(name, value)
    return status
