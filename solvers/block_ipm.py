"""An interior-point method for the ratio-bounded stochastic LP that keeps its block-angular structure.

The LP (the expected-loss design's, constraints on pairs only)::

    min  sum_{x, y} cost[x, y] Q[x, y]
    s.t. A Q[:, y] >= 0      for every column y   (A: the n pair rows r_p e_b - e_a of solvers.ratio_lp.pair_matrix)
         Q >= 0,  sum_y Q[x, y] = 1   for every row x

has k m variables and n m ratio rows (10^6 and 1.06e7 on a 1,000-node random geometric graph), but every column
is a block of its own, and only the k row sums link the blocks. HiGHS's interior point (IPX) on the whole LP
took 300 s for 12 of its iterations on a 350-node graph; column generation needs more rounds the larger the
graph (52 at 100 nodes, 76 at 200).

Method: Mehrotra's predictor-corrector (SIAM J. Optim. 2, 1992) with Gondzio's multiple centrality correctors
(Comput. Optim. Appl. 6, 1996), the Newton system reduced the way block-angular LPs are (Wright,
*Primal-Dual Interior-Point Methods*, SIAM 1997, ch. 11; Gondzio and Sarkissian, Math. Program. 96, 2003).
With slacks ``s_y = A q_y``, pair multipliers ``z_y >= 0``, bound multipliers ``w_y >= 0`` and row multipliers
``lam``, eliminating every variable of column y leaves ``H_y dq_y = g_y + dlam`` with::

    H_y = A^T diag(z_y / s_y) A + diag(w_y / q_y)

k x k with the sparsity of the pair graph, and the k row-sum rows give the Schur complement
``(sum_y H_y^-1) dlam = r - sum_y H_y^-1 g_y``. The pair graph's nodes are numbered by reverse Cuthill-McKee,
so each ``H_y`` is a band matrix (bandwidth 79 on the 1,000-node graph) factored by LAPACK's ``dpbtrf``; its
inverse, ``dpotri`` on the dense factor, is added to the Schur complement, a dense k x k matrix factored once
per iteration. Every further solve (predictor, corrector, centrality correctors, one refinement step of the
row-sum equations) costs two band triangular solves per column. The work per iteration is about
``m k^3`` flops, the inverses' (one ``dpotri`` takes 0.9 ms at k = 350 and 10.6 ms at k = 1,000 on two cores,
OpenBLAS): an iteration took 0.87 s at k = m = 350 and 38-75 s at k = m = 1,000 under load.

What it returns is what a certificate needs: the pair multipliers ``z`` of the highest Lagrangian lower bound
(:func:`solvers.ratio_lp.lagrangian_lower_bound`, proven for any ``z >= 0``; evaluated at every iterate, a product
with A) and the last primal iterate (rows sum to 1 within rounding; its columns are in the cone to the iterate's
slack). The caller repairs and certifies the channel. On a 100-node random geometric graph the method's
objectives meet at 1e-8 after 47 iterations; past that the duals wander (the bound fell back by 4e-5 over
250 more iterations), hence the stall rule and the best bound kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse.csgraph import reverse_cuthill_mckee

from solvers.dense_ipm import step_to_boundary
from solvers.ratio_lp import lagrangian_lower_bound, pair_matrix

#: Fraction of the step to the boundary taken.
STEP_FRACTION = 0.995
#: Most Gondzio centrality correctors per iteration (each costs two band solves per column, the factorisation none).
CORRECTORS = 4
#: Gondzio's parameters: trial step ``min(1, STEP_GROWTH * step + STEP_INCREASE)``, complementarity products
#: pushed into ``[target / CENTRALITY_RANGE, target * CENTRALITY_RANGE]``, a corrector kept when its step is at
#: least ``ACCEPTANCE`` times the last.
STEP_GROWTH, STEP_INCREASE, CENTRALITY_RANGE, ACCEPTANCE = 1.5, 0.1, 10.0, 1.01
#: Relative tolerance of the method's own stopping test: the best bound against the primal objective, and the row sums.
TOLERANCE = 1e-10
#: Most iterations.
MAX_ITERATIONS = 300
#: Iterations in a row without a higher Lagrangian bound that end the method once its total complementarity is
#: within :data:`CLOSE` of the objective: past that point the Newton systems' rounding only moves the duals about.
STALL, CLOSE = 5, 1e-8
#: Diagonal shifts (relative to the largest diagonal entry) tried when a block's or the Schur complement's
#: factorisation fails.
REGULARISATIONS = (1e-14, 1e-11, 1e-8)
#: Columns whose blocks are assembled at once (the band entries of that many columns in one sparse product).
ASSEMBLY_CHUNK = 50


@dataclass(frozen=True)
class BlockInteriorPointResult:
    """``matrix`` (k, m): the last iterate (rows sum to 1 to rounding); ``pair_duals`` (n, m) ``>= 0``: the
    iterate's of the highest ``lower_bound`` (the Lagrangian bound, proven); ``row_duals`` (k,) the last
    iterate's; ``iterations`` done; ``status``: ``"optimal"`` (the bound within the tolerance of the primal
    objective), ``"stalled"`` (:data:`STALL`), ``"stopped"``
    (the caller's ``report`` asked), ``"time"``, ``"iterations"`` or ``"numerical"`` (a block stayed indefinite
    after every regularisation: the iterate is the last one); ``history`` one ``(primal, dual, bound, seconds)``
    per iteration (the method's primal and dual objectives, the best Lagrangian bound so far)."""

    matrix: np.ndarray
    pair_duals: np.ndarray
    lower_bound: float
    row_duals: np.ndarray
    iterations: int
    status: str
    history: list


@dataclass(frozen=True)
class _Bands:
    """The pair graph numbered by reverse Cuthill-McKee, and the maps from pair weights to band storage."""

    order: np.ndarray      # order[i]: the original row of band row i
    matrix: sparse.csr_matrix   # A, its columns (the inputs) in band order
    transposed: sparse.csr_matrix
    assembly: sparse.csr_matrix  # (bandwidth + 1) k x (n + k): band entries from [z / s; w / q] of a column
    width: int
    dense_rows: np.ndarray
    dense_columns: np.ndarray
    band_entries: np.ndarray

    def unordered(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (in band order) back in the caller's order."""
        out = np.empty_like(rows)
        out[self.order] = rows
        return out


def _bands(k: int, pairs: np.ndarray, ratios: np.ndarray) -> _Bands:
    n = len(pairs)
    graph = sparse.csr_matrix((np.ones(n), (pairs[:, 0], pairs[:, 1])), shape=(k, k))
    order = reverse_cuthill_mckee((graph + graph.T).tocsr(), symmetric_mode=True).astype(np.int64)
    rank = np.empty(k, dtype=np.int64)  # rank[x]: the band row of original row x
    rank[order] = np.arange(k)
    ranked = rank[pairs]
    width = int(np.abs(ranked[:, 0] - ranked[:, 1]).max()) if n else 0
    # LAPACK's lower band storage: band[d, j] = H[j + d, j]; flattened, position d k + j
    low, high = ranked.min(axis=1), ranked.max(axis=1)
    rows = np.concatenate([ranked[:, 0], ranked[:, 1], (high - low) * k + low, np.arange(k)])
    columns = np.concatenate([np.arange(n), np.arange(n), np.arange(n), n + np.arange(k)])
    values = np.concatenate([np.ones(n), ratios ** 2, -ratios, np.ones(k)])  # (r e_b - e_a)(r e_b - e_a)^T
    assembly = sparse.csr_matrix((values, (rows, columns)), shape=((width + 1) * k, n + k))
    offsets, starts = np.nonzero(np.arange(width + 1)[:, None] + np.arange(k)[None, :] < k)
    matrix = pair_matrix(k, ranked, ratios)
    return _Bands(order, matrix, matrix.T.tocsr(), assembly, width, starts + offsets, starts, offsets * k + starts)


def block_interior_point(cost, pairs, ratios, deadline: float = math.inf,
                         report: Callable[[np.ndarray, float, int], bool] | None = None,
                         tolerance: float = TOLERANCE, bound_ratios=None) -> BlockInteriorPointResult:
    """Solve the ratio-bounded stochastic LP by the block-angular interior-point method (module docstring).

    Parameters
    ----------
    cost : array_like (k, m)
    pairs : array_like (n, 2) of int
        ``(a, b)``: the constraint ``Q[a, y] <= r Q[b, y]``.
    ratios : array_like (n,)
        ``r >= 1``.
    deadline : float
        A ``time.perf_counter()`` value; the method stops (status ``"time"``) at the first iteration past it.
    report : callable, optional
        ``report(matrix, lower_bound, iteration) -> bool`` after each iteration (the iterate, rows and columns as
        given, and the best Lagrangian bound so far); True stops the method (status ``"stopped"``): the caller's
        certified gap has closed.
    tolerance : float
        The method's own relative tolerance.
    bound_ratios : array_like (n,), optional
        The ratios the Lagrangian bound uses (``ratios`` rounded up, for a bound on the exact cone); default
        ``ratios``.

    Returns
    -------
    BlockInteriorPointResult
    """
    cost = np.asarray(cost, dtype=float)
    k, m = cost.shape
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ratios = np.asarray(ratios, dtype=float).ravel()
    bound_ratios = ratios if bound_ratios is None else np.asarray(bound_ratios, dtype=float).ravel()
    bands = _bands(k, pairs, ratios)
    ordered_cost = cost[bands.order]
    scale = max(float(np.abs(ordered_cost).mean()), np.finfo(float).tiny)
    point = _Point.centred(bands.matrix, m, scale)
    factors = np.empty((m, bands.width + 1, k))
    start, history, status = time.perf_counter(), [], "iterations"
    best, best_duals, idle = -math.inf, point.z.copy(), 0
    for iteration in range(MAX_ITERATIONS + 1):
        primal = float(np.sum(ordered_cost * point.q))
        bound = lagrangian_lower_bound(cost, pairs, bound_ratios, point.z)
        if bound > best:
            best, best_duals, idle = bound, point.z.copy(), 0
        else:
            idle += 1
        history.append((primal, float(point.lam.sum()), best, time.perf_counter() - start))
        if report is not None and report(bands.unordered(point.q), best, iteration):
            status = "stopped"
            break
        row_residual = 1.0 - point.q.sum(axis=1)
        size = max(abs(primal), scale)
        if primal - best <= tolerance * size and np.abs(row_residual).max() <= tolerance:
            status = "optimal"
        elif idle >= STALL and point.complementarity() <= CLOSE * size:
            status = "stalled"
        elif iteration < MAX_ITERATIONS and time.perf_counter() > deadline:
            status = "time"
        if status != "iterations" or iteration == MAX_ITERATIONS:
            break
        try:
            newton = _Newton(bands, ordered_cost, point, row_residual, factors)
        except np.linalg.LinAlgError:
            status = "numerical"
            break
        step, primal_step, dual_step = newton.mehrotra_gondzio()
        point.advance(step, STEP_FRACTION * primal_step, STEP_FRACTION * dual_step)
    return BlockInteriorPointResult(bands.unordered(point.q), best_duals, best, bands.unordered(point.lam), iteration,
                                    status, history)


@dataclass
class _Point:
    """An iterate in band order: ``q`` (k, m), slacks ``s = A q`` (n, m), pair multipliers ``z`` (n, m), bound
    multipliers ``w`` (k, m), row multipliers ``lam`` (k,); as a step, the same fields' directions."""

    q: np.ndarray
    s: np.ndarray
    z: np.ndarray
    w: np.ndarray
    lam: np.ndarray

    @classmethod
    def centred(cls, matrix: sparse.csr_matrix, m: int, scale: float) -> _Point:
        """The uniform channel, its slacks (at least ``1 / m``), and multipliers that make every complementarity
        product ``scale / m``."""
        q = np.full((matrix.shape[1], m), 1.0 / m)
        s = np.maximum(matrix @ q, 1.0 / m)
        return cls(q, s, scale / (m * s), np.full(q.shape, scale), np.zeros(matrix.shape[1]))

    def complementarity(self) -> float:
        return float(np.sum(self.s * self.z) + np.sum(self.q * self.w))

    def products(self) -> int:
        return self.s.size + self.q.size

    def advance(self, step: _Point, primal: float, dual: float) -> None:
        """Move by ``primal`` times the step's primal parts and ``dual`` times its multipliers', in place."""
        primal, dual = min(1.0, primal), min(1.0, dual)
        self.q += primal * step.q
        self.s += primal * step.s
        self.z += dual * step.z
        self.w += dual * step.w
        self.lam += dual * step.lam

    def steps(self, step: _Point) -> tuple[float, float]:
        """The largest primal and dual step lengths (at most 1) that keep ``q, s`` and ``z, w`` nonnegative."""
        return (min(step_to_boundary(self.q, step.q), step_to_boundary(self.s, step.s)),
                min(step_to_boundary(self.z, step.z), step_to_boundary(self.w, step.w)))


class _Newton:
    """One iteration's reduced Newton system (module docstring): every block factored, the Schur complement
    factored; :meth:`direction` solves it for given complementarity targets.

    Raises ``numpy.linalg.LinAlgError`` when a block or the Schur complement stays indefinite."""

    def __init__(self, bands: _Bands, cost: np.ndarray, point: _Point, row_residual: np.ndarray,
                 factors: np.ndarray):
        self.bands, self.point, self.factors = bands, point, factors
        self.row_residual = row_residual
        self.pair_residual = point.s - bands.matrix @ point.q
        self.dual_residual = cost - bands.transposed @ point.z - point.lam[:, None] - point.w
        self.pair_weights = point.z / point.s
        self.schur = _factor_blocks(bands, np.vstack([self.pair_weights, point.w / point.q]), factors)

    def solve_blocks(self, right: np.ndarray) -> np.ndarray:
        """``H_y^-1 right[:, y]`` for every column y (two band triangular solves each)."""
        out = np.empty_like(right)
        for y in range(right.shape[1]):
            out[:, y] = lapack.dpbtrs(self.factors[y], right[:, y], lower=1)[0]
        return out

    def direction(self, pair_target: np.ndarray, bound_target: np.ndarray) -> _Point:
        """The Newton step whose complementarity rows are ``S dz + Z ds = pair_target`` and
        ``Q dw + W dq = bound_target``, every residual of the iterate carried; the row-sum equations refined once."""
        point, m = self.point, self.point.q.shape[1]
        gradient = (self.bands.transposed @ (pair_target / point.s + self.pair_weights * self.pair_residual)
                    + bound_target / point.q - self.dual_residual)
        step_lam = scipy.linalg.cho_solve(self.schur, self.row_residual - self.solve_blocks(gradient).sum(axis=1))
        step_q = self.solve_blocks(gradient + step_lam[:, None])
        correction = scipy.linalg.cho_solve(self.schur, self.row_residual - step_q.sum(axis=1))
        step_q += self.solve_blocks(np.repeat(correction[:, None], m, axis=1))
        step_s = self.bands.matrix @ step_q - self.pair_residual
        return _Point(step_q, step_s, (pair_target - point.z * step_s) / point.s,
                      (bound_target - point.w * step_q) / point.q, step_lam + correction)

    def mehrotra_gondzio(self) -> tuple[_Point, float, float]:
        """Mehrotra's predictor and corrector, then up to :data:`CORRECTORS` of Gondzio's centrality correctors:
        the step and its primal and dual lengths to the boundary."""
        point = self.point
        affine = self.direction(-point.s * point.z, -point.q * point.w)
        primal_step, dual_step = point.steps(affine)
        mu = point.complementarity() / point.products()
        affine_mu = float(np.sum((point.s + primal_step * affine.s) * (point.z + dual_step * affine.z))
                          + np.sum((point.q + primal_step * affine.q) * (point.w + dual_step * affine.w)))
        target = (affine_mu / point.products() / mu) ** 3 * mu
        pair_target = target - point.s * point.z - affine.s * affine.z
        bound_target = target - point.q * point.w - affine.q * affine.w
        step = self.direction(pair_target, bound_target)
        primal_step, dual_step = point.steps(step)
        for _ in range(CORRECTORS):
            trial_primal = min(1.0, STEP_GROWTH * primal_step + STEP_INCREASE)
            trial_dual = min(1.0, STEP_GROWTH * dual_step + STEP_INCREASE)
            pair_push = _centring((point.s + trial_primal * step.s) * (point.z + trial_dual * step.z), target)
            bound_push = _centring((point.q + trial_primal * step.q) * (point.w + trial_dual * step.w), target)
            corrected = self.direction(pair_target + pair_push, bound_target + bound_push)
            corrected_steps = point.steps(corrected)
            if min(corrected_steps) < ACCEPTANCE * min(primal_step, dual_step):
                break
            step, (primal_step, dual_step) = corrected, corrected_steps
            pair_target, bound_target = pair_target + pair_push, bound_target + bound_push
        return step, primal_step, dual_step


def _factor_blocks(bands: _Bands, weights: np.ndarray, factors: np.ndarray) -> tuple:
    """Factor every column's ``H_y`` into ``factors`` and return the Schur complement's Cholesky factor
    (``scipy.linalg.cho_factor``), its diagonal shifted by :data:`REGULARISATIONS` when it is numerically
    indefinite (near convergence on E with zero levels). Raises ``numpy.linalg.LinAlgError`` when a block or the
    Schur complement stays indefinite after every regularisation."""
    width, k = factors.shape[1] - 1, factors.shape[2]
    schur = np.zeros((k, k), order="F")
    dense = np.zeros((k, k), order="F")
    for first in range(0, factors.shape[0], ASSEMBLY_CHUNK):
        band_chunk = (bands.assembly @ weights[:, first:first + ASSEMBLY_CHUNK]).reshape(width + 1, k, -1)
        for offset in range(band_chunk.shape[2]):
            band = np.ascontiguousarray(band_chunk[:, :, offset])
            factor = _regularised(lambda shift: _band_factor(band, shift), band[0].max(), "a block")
            factors[first + offset] = factor
            dense[:] = 0.0
            dense[bands.dense_rows, bands.dense_columns] = factor.ravel()[bands.band_entries]
            inverse, info = lapack.dpotri(dense, lower=1, overwrite_c=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"dpotri: {info}")
            schur += inverse  # lower triangles only
    schur = np.tril(schur) + np.tril(schur, -1).T
    return _regularised(lambda shift: _dense_factor(schur, shift), float(np.diag(schur).max()),
                        "the Schur complement")


def _regularised(factor: Callable[[float], object | None], largest: float, what: str):
    """``factor(0)``, else ``factor(shift * largest)`` for each shift of :data:`REGULARISATIONS` (``largest``: the
    matrix's largest diagonal entry), the first that is not None; ``numpy.linalg.LinAlgError`` naming ``what``
    when none is."""
    for shift in (0.0, *REGULARISATIONS):
        found = factor(shift * largest)
        if found is not None:
            return found
    raise np.linalg.LinAlgError(f"{what} stayed indefinite after every regularisation")


def _band_factor(band: np.ndarray, shift: float) -> np.ndarray | None:
    """LAPACK ``dpbtrf`` of a lower band matrix with ``shift`` added to its diagonal, None when it is indefinite."""
    if shift:
        band = band.copy()
        band[0] += shift
    factor, info = lapack.dpbtrf(band, lower=1)
    return factor if info == 0 else None


def _dense_factor(matrix: np.ndarray, shift: float) -> tuple | None:
    """``scipy.linalg.cho_factor`` of ``matrix`` with ``shift`` added to its diagonal, None when it is indefinite."""
    try:
        return scipy.linalg.cho_factor(matrix + shift * np.eye(len(matrix)), lower=True)
    except np.linalg.LinAlgError:
        return None


def _centring(products: np.ndarray, target: float) -> np.ndarray:
    """Gondzio's corrector target: each product moved into ``[target / range, target * range]``, the pull on a
    product far above it capped at ``-target * range``."""
    low, high = target / CENTRALITY_RANGE, target * CENTRALITY_RANGE
    return np.maximum(np.clip(products, low, high) - products, -high)
