"""Column generation for LPs whose columns are the vertices of a polytope.

Problem
-------
Given a pointed polyhedral cone ``C = {q : A q >= 0, q >= 0}`` in ``R^d``, its
normalised slice ``P = {q in C : sum(q) = 1}`` with (unknown, possibly very many)
vertices ``V``, a convex function ``value`` on ``C`` and a right-hand side ``b``:

    maximise  sum_v w_v value(v)   over  w >= 0  with  sum_v w_v v = b.          (LP)

Only ``d`` equality rows, so a basic optimum uses at most ``d`` columns. Column
generation solves a restricted LP over a few columns, reads its duals ``y``
and prices: a column ``q in P`` improves the LP iff its reduced cost
``value(q) - y . q > 0``. Because ``value`` is convex, the reduced cost is convex
and its maximum over ``P`` is attained at a vertex; any point of ``P`` (vertex or
not) is a valid column (its ``value`` is at most the convex combination of
vertex values, so extra non-vertex columns never change the LP optimum).

Pricing here is a **heuristic** (successive linearisation): from a start ``q0``
repeat ``q_{k+1} = argmax_{q in P} g_k . q`` with ``g_k`` the gradient of the
reduced cost at ``q_k``; by convexity the reduced cost never decreases along the
sequence, and each step is a vertex of ``P`` (simplex LP, HiGHS). Starts are the
basic columns, noisy copies of their linearisations, midpoints of pairs of basic
columns, random points of the hull of the columns and random directions; a
round that finds nothing is repeated with fresh random starts (``confirm_rounds``)
before stopping. When no start finds a positive
reduced cost the restricted LP is *locally* optimal; a proof of global
optimality needs the exact maximum of the reduced cost over ``V``
(:func:`max_reduced_cost` over a complete vertex list, or a problem-specific
argument). The result says which one was done; nothing here claims more.

API
---
``SliceLP(inequalities).vertex(direction)`` — a vertex of ``P`` maximising
``direction . q`` (warm-started HiGHS simplex);
``column_generation(inequalities, value, gradient, rhs, ...) -> ColumnGenerationResult``;
``max_reduced_cost(columns, values, duals)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np
from scipy import sparse

from solvers.highs_retry import run_until
from solvers.linear import LinearProgramError, solve_vertex_lp
from solvers.quiet import silent_highs


def slice_model(inequalities: np.ndarray, normaliser: np.ndarray):
    """The HiGHS model of ``{A q >= 0, q >= 0, normaliser . q = 1}`` with zero costs (a ``highspy.HighsLp``; A dense or sparse)."""
    r, d = inequalities.shape
    matrix = sparse.vstack([sparse.csr_matrix(inequalities), sparse.csr_matrix(np.asarray(normaliser, dtype=float)[None, :])]).tocsc()
    lp = highspy.HighsLp()
    lp.num_col_ = d
    lp.num_row_ = r + 1
    lp.col_cost_ = np.zeros(d)
    lp.col_lower_ = np.zeros(d)
    lp.col_upper_ = np.full(d, highspy.kHighsInf)
    lp.row_lower_ = np.concatenate([np.zeros(r), [1.0]])
    lp.row_upper_ = np.concatenate([np.full(r, highspy.kHighsInf), [1.0]])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data
    return lp


class SliceLP:
    """``max direction . q`` over ``{A q >= 0, q >= 0, sum q = 1}``, re-solved warm (HiGHS dual simplex).

    Parameters
    ----------
    inequalities : array_like, shape (r, d)
        Rows ``a`` meaning ``a . q >= 0``.
    """

    def __init__(self, inequalities):
        a = np.asarray(inequalities, dtype=float)
        if a.ndim != 2:
            raise ValueError("inequalities must be a 2-D array")
        d = a.shape[1]
        self.dimension = d
        self._lp = slice_model(a, np.ones(d))
        self._indices = np.arange(d, dtype=np.int32)
        self._highs = self._new_solver()

    def _new_solver(self) -> highspy.Highs:
        highs = silent_highs()
        highs.setOptionValue("solver", "simplex")
        highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
        highs.passModel(self._lp)
        highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
        return highs

    def vertex(self, direction) -> np.ndarray:
        """A basic (vertex) optimum of ``max direction . q``; tiny negatives clipped, renormalised.

        A failed warm start is run again other ways (:func:`solvers.highs_retry.run_until`: from scratch, without
        presolve, by interior point with crossover, which ends at a vertex too, by the primal simplex).
        """
        direction = np.asarray(direction, dtype=float)
        if direction.shape != (self.dimension,) or not np.all(np.isfinite(direction)):
            raise ValueError("direction must be a finite vector of the cone's dimension")
        self._highs.changeColsCost(self.dimension, self._indices, direction)
        status = run_until(self._highs, [highspy.HighsModelStatus.kOptimal])
        if status != highspy.HighsModelStatus.kOptimal:
            raise LinearProgramError(f"slice LP not solved: {self._highs.modelStatusToString(status)}")
        q = np.maximum(np.asarray(self._highs.getSolution().col_value, dtype=float), 0.0)
        return q / q.sum()


@dataclass(frozen=True)
class ColumnGenerationResult:
    """Outcome of :func:`column_generation`.

    Attributes
    ----------
    columns : ndarray (k, d)
        Every column generated (points of the slice, sum 1).
    weights : ndarray (k,)
        Optimal weights of the final restricted LP.
    objective : float
        Restricted LP optimum ``sum w value``.
    duals : ndarray (d,)
        Its duals ``y``.
    best_reduced_cost : float
        Largest reduced cost the last pricing round found (``<= tolerance`` when converged).
    iterations : int
        Restricted LPs solved.
    pricing_lps : int
        Slice LPs solved by the pricing heuristic.
    converged : bool
        True when the heuristic found no column with reduced cost ``> tolerance``
        (a local, not a proven global, optimum).
    seconds : float
    """

    columns: np.ndarray
    weights: np.ndarray
    objective: float
    duals: np.ndarray
    best_reduced_cost: float
    iterations: int
    pricing_lps: int
    converged: bool
    seconds: float


def column_generation(
    inequalities,
    value: Callable[[np.ndarray], np.ndarray],
    gradient: Callable[[np.ndarray], np.ndarray],
    rhs,
    initial_columns,
    tolerance: float = 1e-9,
    max_iterations: int = 200,
    random_starts: int = 64,
    ascent_steps: int = 25,
    confirm_rounds: int = 3,
    seed: int = 0,
    max_seconds: float | None = None,
    pair_starts: int | None = None,
) -> ColumnGenerationResult:
    """Solve (LP) of the module docstring by column generation with linearisation pricing.

    Parameters
    ----------
    inequalities : array_like (r, d)
        The cone ``A q >= 0`` (``q >= 0`` is added).
    value : callable
        ``value(columns (k, d)) -> (k,)``, convex and positively homogeneous.
    gradient : callable
        ``gradient(q (d,)) -> (d,)``, a (super)gradient of ``value`` at ``q``; it
        may be evaluated at points slightly inside the slice, never at zeros it
        cannot handle (the caller smooths).
    rhs : array_like (d,)
    initial_columns : array_like (k0, d)
        Points of the slice for which the restricted LP is feasible (e.g. one
        interior point proportional to ``b``).
    tolerance : float
        Reduced costs ``<= tolerance`` count as non-improving.
    max_iterations : int
    random_starts : int
        Per pricing round, this many random points of the hull of the columns
        (the reduced cost linearised there) and as many random directions are
        tried as starts, besides the basic columns.
    ascent_steps : int
        Maximum linearisation steps per start.
    confirm_rounds : int
        Consecutive pricing rounds (fresh random starts) that must find nothing
        before stopping.
    seed : int
    max_seconds : float, optional
        Stop (``converged=False``) after the restricted LP that follows this many seconds.
    pair_starts : int, optional
        Midpoints of this many random pairs of basic columns per round (default: every pair,
        which costs ``O(d^2)`` ascents per round when the basis has ``d`` columns).

    Returns
    -------
    ColumnGenerationResult
    """
    start_time = time.perf_counter()
    rhs = np.asarray(rhs, dtype=float)
    slice_lp = SliceLP(inequalities)
    rng = np.random.default_rng(seed)
    columns_array = np.unique(np.round(np.atleast_2d(np.asarray(initial_columns, dtype=float)), 15), axis=0)
    values = np.asarray(value(columns_array), dtype=float)
    pricing_lps = 0
    iterations = 0
    best = np.inf
    stale_rounds = 0
    while True:
        iterations += 1
        lp = solve_vertex_lp(columns_array, values, rhs)
        duals = lp.duals
        out_of_time = max_seconds is not None and time.perf_counter() - start_time > max_seconds
        if iterations >= max_iterations or out_of_time:
            converged = False
            break
        found, best, lps = _price(slice_lp, value, gradient, duals, columns_array, lp.weights,
                                  random_starts, ascent_steps, tolerance, rng, pair_starts)
        pricing_lps += lps
        if not found:
            stale_rounds += 1
            if stale_rounds >= confirm_rounds:
                converged = True
                break
            continue
        stale_rounds = 0
        new = np.vstack([q for _, q in sorted(found.values(), key=lambda item: -item[0])])
        columns_array = np.vstack([columns_array, new])
        values = np.concatenate([values, np.asarray(value(new), dtype=float)])
    return ColumnGenerationResult(
        columns=columns_array,
        weights=lp.weights,
        objective=lp.objective,
        duals=duals,
        best_reduced_cost=float(best),
        iterations=iterations,
        pricing_lps=pricing_lps,
        converged=converged,
        seconds=time.perf_counter() - start_time,
    )


def _price(slice_lp, value, gradient, duals, columns, weights, random_starts, ascent_steps, tolerance, rng, pair_starts):
    """One pricing round: linearisation ascent from the basis (noisy copies, pairwise midpoints), random points and directions."""
    d = slice_lp.dimension
    starts = []
    for q in columns[weights > 0]:  # the basis, and its neighbourhood: noisy linearisations there
        direction = gradient(0.999 * q + 0.001 / d) - duals
        scale = float(np.abs(direction).max()) or 1.0
        starts.append(slice_lp.vertex(direction))
        for level in (0.03, 0.1, 0.3, 1.0):
            starts.append(slice_lp.vertex(direction + level * scale * rng.standard_normal(d)))
    basis = columns[weights > 0]
    pairs = [(i, j) for i in range(basis.shape[0]) for j in range(i + 1, basis.shape[0])]
    if pair_starts is not None and pair_starts < len(pairs):
        pairs = [pairs[i] for i in rng.choice(len(pairs), size=pair_starts, replace=False)]
    for i, j in pairs:  # midpoints of pairs of basic columns, linearised there
        starts.append(slice_lp.vertex(gradient(0.999 * (basis[i] + basis[j]) / 2 + 0.001 / d) - duals))
    for _ in range(random_starts):  # a random point of the hull of the columns, linearised there
        mix = rng.dirichlet(np.full(columns.shape[0], 0.5)) @ columns
        starts.append(slice_lp.vertex(gradient(0.999 * mix + 0.001 / d) - duals))
        starts.append(slice_lp.vertex(rng.standard_normal(d)))
    lps = len(starts)
    found: dict[bytes, tuple[float, np.ndarray]] = {}
    best = -np.inf
    for q in starts:
        current = q
        current_cost = float(value(current[None, :])[0] - duals @ current)
        for _ in range(ascent_steps):
            nxt = slice_lp.vertex(gradient(0.999 * current + 0.001 / d) - duals)
            lps += 1
            cost = float(value(nxt[None, :])[0] - duals @ nxt)
            if cost <= current_cost + 1e-15:
                break
            current, current_cost = nxt, cost
        best = max(best, current_cost)
        if current_cost > tolerance:
            found[np.round(current, 12).tobytes()] = (current_cost, current)
    return found, best, lps


def max_reduced_cost(columns, values, duals) -> float:
    """``max_v values_v - duals . v``: with ``columns`` = every vertex, ``<= 0`` proves LP optimality."""
    columns = np.asarray(columns, dtype=float)
    return float(np.max(np.asarray(values, dtype=float) - columns @ np.asarray(duals, dtype=float)))
