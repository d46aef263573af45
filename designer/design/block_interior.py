"""The expected-loss LP by an interior-point method that keeps its blocks, for irregular graphs of a few hundred values.

The edge-only LP (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014) is block-angular: each output's column
is a block constrained to the cone ``C_E``, and only the row sums link the blocks.
:func:`solvers.block_ipm.block_interior_point` keeps that structure (one band factorisation per column and a
dense k x k Schur complement per iteration), so its work grows like ``m k^3`` per iteration and its iterations
slowly (52, 81, 99-106, 138, 222 on random geometric graphs of 100, 200, 350, 498, 1,000 nodes). On the
200-node graph it proves the optimum to 5e-8 in about 20 s where column generation by output took 241 s and the
designer's column generation with restricted output LPs 362-466 s; it closes a gap of 1e-6 on the 350-node graph in
about 95 s, where 180 s of column generation then the first-order method left 0.4%, and on a 498-node graph
in 327 s, and on the 1,000-node graph in 4,635 s (benchmarks/RESULTS.md).

Certificates, as for every method of :mod:`designer.design.expected_loss`: the **lower bound** is the
Lagrangian bound of the method's pair multipliers (:func:`solvers.ratio_lp.lagrangian_lower_bound`, ratios
rounded up, outward rounding), the best over its iterates; the **upper bound** the expected loss of an iterate
repaired onto the cone (:func:`designer.design.repair.repair_into_cone`) that certifies. An iterate is repaired
once the method's own objective is within the gap of the bound, and the method stops when a certified one
closes it.

Designs the method does not take (steep levels, too many ratio rows) are refused by
:func:`designer.design.block_scope.refusal`.
:func:`estimated_seconds` estimates the method's time from a timed ``dpotri`` at size k, so that ``method="auto"``
runs it only when it should finish within the budget left.
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.linalg import lapack

from designer.design.block_scope import refusal
from designer.design.first_order import constant_channel, expected_loss
from designer.design.loss_decomposition import constraint_pairs
from designer.design.progress import Progress, closes
from designer.design.repair import certifies, repair_into_cone, within_doubles
from designer.spec import PrivacyMatrix
from solvers.block_ipm import block_interior_point

#: :func:`estimated_seconds`: iterations expected at k values, ``ITERATIONS_AT_350 (k / 350)^ITERATION_GROWTH``
#: (52, 81, 99-106, 138 and 222 at k = 100, 200, 350, 498, 1,000 on random geometric graphs), and seconds per
#: iteration per output as a multiple of one ``dpotri`` of size k (3.0 at k = 350, 2.6 at k = 498, 1.8 at k = 1,000
#: on a quiet machine and 3.3-4.1 under load; benchmarks/RESULTS.md), timed ``TIMINGS`` times after a first call
#: (the median).
ITERATIONS_AT_350, ITERATION_GROWTH, SECONDS_PER_INVERSE, TIMINGS = 110.0, 0.7, 2.8, 5


def estimated_seconds(privacy: PrivacyMatrix, outputs: int) -> float:
    """The method's expected seconds for this E and ``outputs`` outputs (module docstring); ``inf`` when it does not
    take them (:func:`designer.design.block_scope.refusal`)."""
    if refusal(privacy, outputs) is not None:
        return math.inf
    k = privacy.k
    factor = lapack.dpotrf(np.asfortranarray(np.eye(k) * 2.0 + 1.0 / k), lower=1)[0]
    lapack.dpotri(factor.copy(order="F"), lower=1, overwrite_c=1)  # a first call wakes the BLAS threads
    elapsed = []
    for _ in range(TIMINGS):
        inverted = factor.copy(order="F")
        tick = time.perf_counter()
        lapack.dpotri(inverted, lower=1, overwrite_c=1)
        elapsed.append(time.perf_counter() - tick)
    iterations = ITERATIONS_AT_350 * (k / 350.0) ** ITERATION_GROWTH
    return iterations * outputs * SECONDS_PER_INVERSE * float(np.median(elapsed))


def block_interior(privacy: PrivacyMatrix, cost: np.ndarray, gap: float, max_seconds: float,
                   progress: Progress = None) -> tuple[list[np.ndarray], float, str, list, list]:
    """The block-angular interior-point method on the edge-only LP (module docstring).

    Returns ``(channels, lower_bound, stopped, history, methods)`` like
    :func:`designer.design.loss_decomposition.decompose_by_output`: the best certified repaired iterate (if any),
    the last iterate and the constant channel of least cost, least expected loss first; the proven lower bound;
    why it stopped (``"gap"``, ``"time"``, ``"solved"`` when the method converged or stalled with the gap still
    open); one history entry per repaired iterate; a one-line description.

    Raises
    ------
    ValueError
        :func:`designer.design.block_scope.refusal`: a constrained pair's level above its ``MAX_LEVEL``, or more
        ratio rows than its ``MAX_RATIO_ROWS``.
    """
    start = time.perf_counter()
    refused = refusal(privacy, cost.shape[1])
    if refused is not None:
        raise ValueError(refused)
    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    cone = within_doubles(privacy)
    constant = constant_channel(cost)  # E-LDP for every E: the upper bound until an iterate certifies
    channel, upper, history = None, expected_loss(cost, constant), []

    def report(matrix: np.ndarray, lower: float, iteration: int) -> bool:
        nonlocal channel, upper
        if lower > -math.inf and closes(lower, expected_loss(cost, matrix), gap):
            repaired = repair_into_cone(cone, matrix)
            loss = expected_loss(cost, repaired)
            if loss < upper and certifies(privacy, repaired):
                channel, upper = repaired, loss
            history.append({"backend": "block interior point", "iteration": iteration, "upper": upper,
                            "lower_bound": lower, "seconds": round(time.perf_counter() - start, 3)})
        if progress is not None:
            progress(lower, upper, time.perf_counter() - start)
        return closes(lower, upper, gap)

    result = block_interior_point(cost, pairs, ratios, deadline=start + max_seconds, report=report,
                                  bound_ratios=bound_ratios)
    stopped = "gap" if closes(result.lower_bound, upper, gap) else ("time" if result.status == "time" else "solved")
    described = (f"block interior point: {result.iterations} iterations ({result.status}), "
                 f"{len(pairs) * cost.shape[1]} ratio rows ({len(pairs)} pair constraints)")
    channels = sorted(([] if channel is None else [channel]) + [result.matrix, constant],
                      key=lambda matrix: expected_loss(cost, matrix))
    return channels, result.lower_bound, stopped, history, [described]
