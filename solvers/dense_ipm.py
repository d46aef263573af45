"""A primal-dual interior-point method for ``min c . w  s.t.  A w = b, w >= 0`` with a dense ``A`` of few rows.

Column generation's master has k rows (k = 1,000 on the largest graphs) and thousands of dense columns whose
entries span eight decades. HiGHS's simplex took 37 s on the 2,001 start columns of the 1,000-node random
geometric graph, and one re-solve of about 5,000 columns 123 s; the normal equations ``A diag(w / s) A^T`` of an
interior-point method are one dense matrix product (0.16 s for 6,000 columns on two cores, OpenBLAS) and a k x k
Cholesky factorisation (0.06 s), and about 20 of them solve it (3.4 s on those 2,001 columns, its dual objective
1.3e-10 below HiGHS's optimum, relative).

Method: Mehrotra's predictor-corrector (SIAM J. Optim. 2, 1992; Wright, *Primal-Dual Interior-Point Methods*,
SIAM 1997, ch. 10) from Mehrotra's starting point, separate primal and dual step lengths (a fraction
:data:`STEP_FRACTION` of the way to the boundary), each direction from the normal equations with
:data:`REFINEMENT_STEPS` steps of iterative refinement against ``A diag(w / s) A^T`` applied as products.

What it is for: the *dual* ``y`` and the dual objective ``b . y``, accurate to about 1e-9 relative where the
primal stalls (the master is degenerate; on a 350-row master the primal residual stopped at 8e-10 and the primal
objective 4e-7 above the dual's, complementarity 1e-13). :mod:`solvers.ratio_lp`'s master takes the dual
objective as its value, the duals as its multipliers, and the weights (rows within about 1e-9 of ``b``) as they
are: the design's repair scales the channel's columns to exact row sums.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg

#: Relative tolerance on the residuals and on the complementarity ``w . s / (1 + |b . y|)``.
TOLERANCE = 1e-10
#: Most iterations (the master's take 15 to 25 when they converge).
MAX_ITERATIONS = 80
#: Iterations in a row that raise the dual objective by less than ``TOLERANCE`` (relative) end the method: past
#: that point the normal equations' rounding only moves the primal.
STALL = 3
#: Fraction of the step to the boundary taken.
STEP_FRACTION = 0.995
#: Iterative refinement steps per solve of the normal equations.
REFINEMENT_STEPS = 2


@dataclass(frozen=True)
class InteriorPointResult:
    """``dual_objective`` (``b . y``), ``duals`` (y), ``weights`` (w >= 0, interior), ``iterations`` (done),
    ``status``: ``"optimal"``, ``"stalled"`` (the dual objective stopped rising), ``"iterations"`` or ``"time"``."""

    dual_objective: float
    duals: np.ndarray
    weights: np.ndarray
    iterations: int
    status: str


def dense_interior_point(matrix: np.ndarray, rhs: np.ndarray, cost: np.ndarray,
                         deadline: float = math.inf) -> InteriorPointResult:
    """Solve ``min cost . w  s.t.  matrix @ w = rhs, w >= 0`` (module docstring).

    Parameters
    ----------
    matrix : ndarray (k, N)
        Dense, of full row rank.
    rhs : ndarray (k,)
    cost : ndarray (N,)
    deadline : float
        A ``time.perf_counter()`` value; the method stops (status ``"time"``) at the first iteration past it.

    Returns
    -------
    InteriorPointResult
        The duals of the largest dual objective among the iterates whose dual residual is within
        :data:`TOLERANCE` (the last iterate's when none is), and the weights of the latest iterate whose primal
        residual is within :data:`TOLERANCE`, else of the least primal residual: once the dual objective stalls
        the primal residual can grow again (from 8e-10 to 5e-5, relative, on a 350-row master). ``iterations``
        counts the iterations done.
    """
    matrix = np.ascontiguousarray(matrix, dtype=float)
    rhs, cost = np.asarray(rhs, dtype=float), np.asarray(cost, dtype=float)
    k, n = matrix.shape
    weights, duals, slacks = _starting_point(matrix, rhs, cost)
    rhs_norm, cost_norm = 1.0 + np.linalg.norm(rhs), 1.0 + np.linalg.norm(cost)
    best, last, idle, status = None, None, 0, "iterations"
    nearest, nearest_residual = weights, math.inf  # the weights of the least primal residual so far
    for iteration in range(MAX_ITERATIONS + 1):
        primal_residual = rhs - matrix @ weights
        dual_residual = cost - matrix.T @ duals - slacks
        dual_objective = float(rhs @ duals)
        dual_feasible = np.linalg.norm(dual_residual) <= TOLERANCE * cost_norm
        last = (dual_objective, duals)
        if dual_feasible:
            rise = math.inf if best is None else dual_objective - best[0]
            idle = 0 if rise > TOLERANCE * (1.0 + abs(dual_objective)) else idle + 1
            if rise > 0:
                best = last
        if np.linalg.norm(primal_residual) <= max(nearest_residual, TOLERANCE * rhs_norm):  # the latest within it
            nearest, nearest_residual = weights, float(np.linalg.norm(primal_residual))
        complementarity = float(weights @ slacks)
        if (dual_feasible and np.linalg.norm(primal_residual) <= TOLERANCE * rhs_norm
                and complementarity <= TOLERANCE * (1.0 + abs(dual_objective))):
            status = "optimal"
            break
        if idle >= STALL:
            status = "stalled"
            break
        if iteration == MAX_ITERATIONS:
            break
        if time.perf_counter() > deadline:
            status = "time"
            break
        scaling = weights / slacks
        normal = (matrix * scaling) @ matrix.T
        factor = _cholesky(normal)

        def direction(target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            """The Newton direction whose complementarity row is ``S dw + W ds = target``."""
            right = primal_residual + matrix @ (scaling * dual_residual - target / slacks)
            step_y = scipy.linalg.cho_solve(factor, right)
            for _ in range(REFINEMENT_STEPS):
                step_y += scipy.linalg.cho_solve(factor, right - matrix @ (scaling * (matrix.T @ step_y)))
            step_s = dual_residual - matrix.T @ step_y
            return (target - weights * step_s) / slacks, step_y, step_s

        mu = complementarity / n
        affine_w, affine_y, affine_s = direction(-weights * slacks)
        primal_step, dual_step = step_to_boundary(weights, affine_w), step_to_boundary(slacks, affine_s)
        affine_mu = float((weights + primal_step * affine_w) @ (slacks + dual_step * affine_s)) / n
        centring = (affine_mu / mu) ** 3 if mu > 0 else 0.0
        step_w, step_y, step_s = direction(centring * mu - weights * slacks - affine_w * affine_s)
        primal_step = min(1.0, STEP_FRACTION * step_to_boundary(weights, step_w))
        dual_step = min(1.0, STEP_FRACTION * step_to_boundary(slacks, step_s))
        weights = weights + primal_step * step_w
        duals, slacks = duals + dual_step * step_y, slacks + dual_step * step_s
    dual_objective, duals = best or last
    return InteriorPointResult(dual_objective, duals, np.maximum(nearest, 0.0), iteration, status)


def _starting_point(matrix: np.ndarray, rhs: np.ndarray, cost: np.ndarray):
    """Mehrotra's: least-norm ``w`` and least-squares ``(y, s)``, shifted into the interior and balanced."""
    gram = matrix @ matrix.T
    factor = _cholesky(gram)
    weights = matrix.T @ scipy.linalg.cho_solve(factor, rhs)
    duals = scipy.linalg.cho_solve(factor, matrix @ cost)
    slacks = cost - matrix.T @ duals
    weights = weights + max(-1.5 * float(weights.min()), 0.0)
    slacks = slacks + max(-1.5 * float(slacks.min()), 0.0)
    weights, slacks = np.maximum(weights, 1e-12), np.maximum(slacks, 1e-12)
    product = float(weights @ slacks)
    return weights + 0.5 * product / slacks.sum(), duals, slacks + 0.5 * product / weights.sum()


def _cholesky(normal: np.ndarray):
    """Cholesky factor of the normal matrix, with a diagonal shift of 1e-14 (then 1e-8) times its mean diagonal."""
    mean = float(np.trace(normal)) / normal.shape[0]
    for shift in (1e-14, 1e-8):
        try:
            return scipy.linalg.cho_factor(normal + shift * mean * np.eye(normal.shape[0]), check_finite=False)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError("normal equations not positive definite")


def step_to_boundary(values: np.ndarray, step: np.ndarray) -> float:
    """The largest ``t <= 1`` with ``values + t step >= 0``."""
    falling = step < 0
    return min(1.0, float(np.min(-values[falling] / step[falling]))) if falling.any() else 1.0
