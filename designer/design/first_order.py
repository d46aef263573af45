"""The expected-loss LP by a first-order method, then columns priced at its multipliers, for irregular metric E.

Column generation by output (:mod:`designer.design.loss_decomposition`) closes grids fast, because the
start columns (the geometric shape at each output) already carry the optimum, but on an irregular graph
its master moves slowly: its multipliers start far from the optimum's, and each round prices at them. On a
1,000-node random geometric graph 600 s ended at a certified 0.2015 with a bound of 0.0854.

So the whole LP with the constraints on the edges only (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014),
10^6 variables and 1.06e7 ratio rows there, first goes to a primal-dual hybrid gradient method
(:mod:`solvers.first_order`, HiGHS's PDLP) for :data:`FIRST_ORDER_SHARE` of the budget:

* its **pair multipliers**, whatever their accuracy, give the Lagrangian lower bound of
  :func:`solvers.ratio_lp.lagrangian_lower_bound` (ratios rounded up, outward rounding);
* its **iterate** is not a channel: raised onto the cone (:func:`designer.design.repair.raise_into_cone`), its
  rows sum to 1.0002-1.0048 after 100 s on a 350-node graph, and dividing them out breaks ratios by as much.
  Its columns, raised, join the start columns of a column generation by output
  (:func:`solvers.ratio_lp.column_generation_by_output`);
* its **row multipliers** are that column generation's first stability centre: every output is priced there,
  near the optimum's multipliers, before the first master solve, and the vertices found join the start columns
  (on the 350-node graph after 60 s of PDLP the first master gave 0.191857 with them, 0.217645 without). On the 350-node graph (100 s of PDLP, then
  60 s of columns) the master went 0.2291, 0.1937, 0.1904, 0.1899 ... 0.189714 against a bound of 0.188728
  (a gap of 0.5%), where column generation alone had a gap of 12.7% after 180 s (benchmarks/RESULTS.md).

The column generation's channel is exact (its rows sum to 1 to rounding: the master's weights are
re-solved on their support). Each iterate, repaired, is certified at once, else mixed with the uniform channel
by the least weight that certifies (:func:`designer.design.repair.certified_mixture`; 1e-7 to 2e-5 on 3 x 4
to 10 x 10 grids): a certified one is a channel, its expected loss an upper bound
(reported to ``progress``; one within the gap of the bound ends the design before any column), and one that
neither certifies nor mixes into the cone is not reported. Until an iterate certifies, the upper bound is the
expected loss of the best constant channel (every input sends the same report), E-LDP for every E. Near
convergence a repaired iterate can cost less than the optimum without being E-LDP (4e-9 below it on a 3 x 4
grid, PDLP at a relative tolerance of 1e-2); an earlier version reported its cost as the upper bound.

``"auto"`` (:func:`designer.design.expected_loss.route_expected_loss`) first gives column generation alone a
share of the budget, and this method the rest when the gap is still open and the block-angular interior-point
method is not expected to finish in it (:mod:`designer.design.handover`); ``method="first-order"`` runs this
method alone.
"""

from __future__ import annotations

import math
import time
from functools import partial

import numpy as np

from designer.design.loss_decomposition import constraint_pairs, start_columns
from designer.design.progress import Progress, closes, shifted, while_running
from designer.design.repair import (
    NEGLIGIBLE_COLUMN,
    certified_mixture,
    project_into_cone,
    raise_into_cone,
    within_doubles,
)
from designer.spec import PrivacyMatrix

#: ``(channels, lower_bound, stopped, history, methods)``, as
#: :func:`designer.design.loss_decomposition.decompose_by_output` returns them.
Designed = tuple[list[np.ndarray], float, str, list, list]

#: Share of the first-order method's budget PDLP gets; column generation centred at its multipliers gets the rest.
FIRST_ORDER_SHARE = 0.6
#: PDLP's relative tolerance is the gap divided by this (its residuals are not the certified gap), and
#: divided again by it when PDLP converges with the certified gap still open and time left.
TOLERANCE_DIVISOR = 10.0
#: The smallest tolerance HiGHS accepts.
SMALLEST_TOLERANCE = 1e-10


def first_order(privacy: PrivacyMatrix, cost: np.ndarray, gap: float, max_seconds: float,
                progress: Progress = None) -> Designed:
    """PDLP on the edge-only LP, then column generation centred at its multipliers (module docstring).

    Returns ``(channels, lower_bound, stopped, history, methods)`` like
    :func:`designer.design.loss_decomposition.decompose_by_output`: the channels least expected loss first
    (column generation's, and PDLP's best certified iterate), the proven lower bound, why it stopped (``"gap"``,
    ``"priced out"``, ``"time"``), one history entry per PDLP run and per pricing, and a one-line description.
    Without a PDLP iterate (no time, or a failure) the column generation starts at ``u = 0``. While PDLP runs,
    ``progress`` hears the bounds so far every :data:`designer.design.progress.HEARTBEAT_SECONDS` (from a helper
    thread).
    """
    from designer.design.gap.column_generation import default_threads
    from solvers.first_order import FirstOrderRatioLP
    from solvers.linear import LinearProgramError
    from solvers.ratio_lp import column_generation_by_output, lagrangian_lower_bound

    start = time.perf_counter()
    m = cost.shape[1]
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    tolerance = max(gap / TOLERANCE_DIVISOR, SMALLEST_TOLERANCE)
    solver = FirstOrderRatioLP(cost, pairs, ratios, tolerance)
    lower, centre, raised_iterate, history, failure = -math.inf, None, None, [], ""
    constant = constant_channel(cost)
    cone = within_doubles(privacy)  # E, or its truncation when E reaches beyond the doubles (as every repair)
    # the best certified iterate, and its expected loss; until one certifies, the constant channel (E-LDP for any E)
    channel, upper = None, expected_loss(cost, constant)
    while True:
        try:
            budget = FIRST_ORDER_SHARE * max_seconds - (time.perf_counter() - start)
            result = while_running(partial(solver.run, budget), progress, lower, upper, start)
        except LinearProgramError as error:
            failure = f"; {error}"
            break
        raised = raise_into_cone(cone, result.matrix)
        repaired, weight = certified_mixture(privacy, project_into_cone(cone, raised)) or (None, None)
        if repaired is not None and (loss := expected_loss(cost, repaired)) < upper:
            channel, upper = repaired, loss
        bound = lagrangian_lower_bound(cost, pairs, bound_ratios, result.pair_duals)
        if bound > lower:
            lower, centre, raised_iterate = bound, result.row_duals, raised
        seconds = time.perf_counter() - start
        history.append({"backend": "pdlp", "status": result.status, "tolerance": tolerance, "upper": upper,
                        "uniform_weight": weight, "lower_bound": lower, "iterations": solver.iterations,
                        "seconds": round(seconds, 3)})
        if progress is not None:
            progress(lower, upper, seconds)
        if closes(lower, upper, gap) or result.status != "Optimal" or tolerance <= SMALLEST_TOLERANCE:
            break
        tolerance = max(tolerance / TOLERANCE_DIVISOR, SMALLEST_TOLERANCE)  # converged: tighter, from the iterate
        solver.tighten(tolerance)
    runs, iterations = solver.chunks, solver.iterations
    del solver  # the LP's 2.2e7 non-zeros at k = 1,000, before the master's columns
    channels = [constant] if channel is None else [channel]  # the constant channel is the upper bound until then
    described = (f"first-order LP (HiGHS PDLP): {runs} runs, {iterations} iterations, {len(pairs) * m} ratio rows "
                 f"({len(pairs)} pair constraints){failure}")
    if closes(lower, upper, gap):  # a certified iterate closed the gap
        return channels, lower, "gap", history, [described]
    described += "; then column generation by output centred at its multipliers: "
    columns, owners = start_columns(privacy, cost)
    if raised_iterate is not None:
        used = np.flatnonzero(raised_iterate.sum(axis=0) >= NEGLIGIBLE_COLUMN)
        columns, owners = np.vstack([columns, raised_iterate[:, used].T]), np.concatenate([owners, used])
    # its first master solve is held to the budget too: a first version's, 4,000 dense columns at k = 1,000, ran
    # its 600 s design past 16 minutes
    try:
        by_columns = column_generation_by_output(
            cost, pairs, ratios, columns, owners, gap_tolerance=gap,
            max_seconds=max(max_seconds - (time.perf_counter() - start), 0.0),
            progress=shifted(progress, time.perf_counter() - start), bound_ratios=bound_ratios,
            threads=default_threads(), centre=centre, first_by_deadline=True)
    except LinearProgramError as error:
        return [*channels, constant], lower, "time", history, [described + str(error)]
    channels = sorted([*channels, by_columns.matrix], key=partial(expected_loss, cost))
    lower = max(lower, by_columns.lower_bound)
    stopped = "gap" if closes(lower, expected_loss(cost, by_columns.matrix), gap) else by_columns.stopped
    described += (f"{by_columns.rounds} rounds, {by_columns.columns} columns, {by_columns.pricing_lps} pricing LPs")
    return channels, lower, stopped, history + by_columns.history, [described]


def expected_loss(cost: np.ndarray, channel: np.ndarray) -> float:
    """``sum_{x, y} cost[x, y] channel[x, y]``: the expected loss when ``cost`` is prior times loss."""
    return float(np.sum(cost * channel))


def constant_channel(cost: np.ndarray) -> np.ndarray:
    """The constant channel of least cost: every input reports the output whose column of ``cost`` sums least.

    Its rows are all equal, so it is E-LDP for every E (every likelihood ratio is 1); its cost is an upper bound
    on the optimum before any iterate certifies.
    """
    channel = np.zeros(cost.shape)
    channel[:, int(np.argmin(cost.sum(axis=0)))] = 1.0
    return channel
