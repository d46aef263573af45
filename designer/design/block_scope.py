"""Which designs the block-angular interior-point method takes, and the LP over a set of outputs solved by it.

:func:`solvers.block_ipm.block_interior_point` solves the edge-only LP (Bordenabe, Chatzikokolakis, Palamidessi,
CCS 2014) keeping one block per output column. Its blocks hold squared ratios, so levels above :data:`MAX_LEVEL`
on a constrained pair are refused (``e^60`` beside entries of 1 at level 30, beyond what a double factorisation
resolves), and so are designs with more than :data:`MAX_RATIO_ROWS` ratio rows (memory): :func:`refusal`.

:func:`outputs_solver` gives column generation's restricted output LP
(:func:`solvers.ratio_lp.restricted_output_lp`: the LP over the outputs a tailing master uses, grown by reduced
cost) this method in place of the direct LP's Clarabel and HiGHS. On a 200-node random geometric graph the
restricted LPs over 70, 75 and 76 outputs took 4.7-5.6 s each where Clarabel took 57-113 s, and
``method="column-generation"`` closed a gap of 1.2e-7 in 49-55 s (two runs) instead of 362-373 s
(benchmarks/RESULTS.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from designer.spec import PrivacyMatrix
from solvers.block_ipm import block_interior_point
from solvers.linear import StochasticLPResult
from solvers.ratio_lp import pair_matrix, solve_outputs_directly

#: Largest level of a constrained pair the method takes (the blocks hold ``e^(2 level)``).
MAX_LEVEL = 30.0
#: Most ratio rows (pairs times outputs) the method takes: it keeps about ten arrays of that many doubles (the
#: 1,000-node random geometric graph has 1.06e7 and held 2.5 GB with its band factors after three iterations).
MAX_RATIO_ROWS = 20_000_000


def steepest_level(privacy: PrivacyMatrix) -> float:
    """The largest finite level among E's non-redundant pairs (0 when none is finite)."""
    pairs = privacy.nonredundant_pairs()
    levels = privacy.epsilon[pairs[:, 0], pairs[:, 1]] if len(pairs) else np.zeros(0)
    levels = levels[np.isfinite(levels)]
    return float(levels.max()) if levels.size else 0.0


def refusal(privacy: PrivacyMatrix, outputs: int) -> str | None:
    """Why the method does not take this E with ``outputs`` outputs (:data:`MAX_LEVEL`, :data:`MAX_RATIO_ROWS`),
    or None."""
    steepest = steepest_level(privacy)
    if steepest > MAX_LEVEL:
        return (f"the interior-point method takes levels up to {MAX_LEVEL:g} on the constrained pairs; this E has "
                f"{steepest:.6g} (use method 'column-generation')")
    rows = len(privacy.nonredundant_pairs()) * outputs
    if rows > MAX_RATIO_ROWS:
        return (f"the interior-point method takes up to {MAX_RATIO_ROWS:,} ratio rows (pairs x outputs); this design "
                f"has {rows:,} (use method 'column-generation' or 'first-order')")
    return None


def outputs_solver(privacy: PrivacyMatrix) -> Callable[[np.ndarray, np.ndarray, np.ndarray, float],
                                                      StochasticLPResult | None]:
    """The ``solve`` of :func:`solvers.ratio_lp.restricted_output_lp` for this E: the block-angular interior-point
    method on a set of outputs it takes (:func:`refusal`), else the direct LP (Clarabel, then HiGHS).

    ``solve(cost, pairs, ratios, seconds)`` returns the LP over ``cost``'s columns or None when ``seconds`` ran out
    first (the caller keeps its previous answer). By the interior-point method: its last iterate, its objective,
    the pair multipliers of its best Lagrangian bound, and as row multipliers the ones those imply,
    ``u_x = min_y (cost - A^T pi)[x, y]`` (the bound is ``sum_x u_x``), at which the other outputs are priced: an
    output whose pricing LP is non-negative there lowers no ``u_x``, so the bound over every output is the same.
    """

    def solve(cost: np.ndarray, pairs: np.ndarray, ratios: np.ndarray, seconds: float) -> StochasticLPResult | None:
        if refusal(privacy, cost.shape[1]) is not None:
            return solve_outputs_directly(cost, pairs, ratios, seconds)
        start = time.perf_counter()
        result = block_interior_point(cost, pairs, ratios, deadline=start + seconds)
        if result.status == "time" or not math.isfinite(result.lower_bound):
            return None
        reduced = cost - pair_matrix(cost.shape[0], pairs, ratios).T @ result.pair_duals
        return StochasticLPResult(matrix=result.matrix, objective=float(np.sum(cost * result.matrix)),
                                  n_constraints=len(pairs) * cost.shape[1], seconds=time.perf_counter() - start,
                                  row_duals=reduced.min(axis=1), pair_duals=result.pair_duals,
                                  status=f"block interior point: {result.status}")

    return solve
