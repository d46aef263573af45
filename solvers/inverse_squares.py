"""Separable inverse-square programs with linear packing constraints.

API
---
``minimize_inverse_squares(costs, constraints, bounds, tolerance=1e-10) -> InverseSquaresResult``

    minimise    sum_k costs_k / t_k^2
    subject to  constraints @ t <= bounds,   t > 0

with ``costs`` (p,) > 0, ``constraints`` (n, p) sparse or dense with entries
>= 0 and every column non-zero somewhere, ``bounds`` (n,) > 0. The problem is
convex (``t^-2`` is convex on t > 0).

* When every constraint involves one variable only, the variables decouple:
  the objective decreases in each ``t_k``, so ``t_k = min_j bounds_j /
  constraints[j, k]`` over the constraints on k is optimal, exactly.
* Otherwise the program is solved by Clarabel through CVXPY (power-cone form),
  the answer is scaled down until every constraint holds in floating point,
  and a lower bound comes from the duals by weak duality: for any
  ``lambda >= 0`` with ``u = constraints^T lambda``,
  ``g(lambda) = 3 * 2^(-2/3) * sum_k costs_k^(1/3) u_k^(2/3) - bounds . lambda``
  is at most the optimum (minimise the Lagrangian in each ``t_k``:
  ``t_k = (2 costs_k / u_k)^(1/3)``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class InverseSquaresResult:
    """``rates`` t (feasible), its ``objective``, a ``lower_bound`` on the optimum and the ``method`` used."""

    rates: np.ndarray
    objective: float
    lower_bound: float
    method: str


def dual_bound(costs: np.ndarray, constraints: sp.spmatrix, bounds: np.ndarray, duals: np.ndarray) -> float:
    """``g(lambda)`` of the module docstring (a lower bound on the optimum for any ``lambda >= 0``)."""
    duals = np.maximum(np.asarray(duals, dtype=float), 0.0)
    usage = constraints.T @ duals
    return float(3.0 * 2.0 ** (-2.0 / 3.0) * np.sum(np.cbrt(costs) * np.cbrt(usage) ** 2) - bounds @ duals)


def minimize_inverse_squares(
    costs: np.ndarray, constraints, bounds: np.ndarray, tolerance: float = 1e-10
) -> InverseSquaresResult:
    """Solve the program of the module docstring; raises ValueError if the solver fails."""
    costs = np.asarray(costs, dtype=float)
    bounds = np.asarray(bounds, dtype=float)
    constraints = sp.csr_matrix(constraints, dtype=float)
    if constraints.shape != (len(bounds), len(costs)):
        raise ValueError(f"constraints are {constraints.shape}, expected ({len(bounds)}, {len(costs)})")
    if not (np.all(costs > 0) and np.all(bounds > 0) and constraints.nnz and constraints.data.min() >= 0):
        raise ValueError("need costs > 0, bounds > 0 and non-negative constraints")
    per_row = np.diff(constraints.indptr)
    if np.all(per_row <= 1):
        return _decoupled(costs, constraints, bounds)
    import cvxpy as cp  # heavy (about 1 s): only for coupled constraints

    t = cp.Variable(len(costs), pos=True)
    budget = constraints @ t <= bounds
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(costs, cp.power(t, -2)))), [budget])
    try:
        with warnings.catch_warnings():  # OPTIMAL_INACCURATE is accepted: the answer is made feasible below
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.CLARABEL, tol_gap_abs=tolerance, tol_gap_rel=tolerance, tol_feas=tolerance)
    except cp.error.SolverError as error:
        raise ValueError(f"the inverse-square program failed: {error}") from None
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or t.value is None:
        raise ValueError(f"the inverse-square program ended with status {problem.status}")
    rates = np.maximum(np.asarray(t.value, dtype=float), np.finfo(float).tiny)
    usage = constraints @ rates
    factor = float(np.min(np.where(usage > 0, bounds / usage, np.inf), initial=1.0))
    rates *= min(1.0, factor)
    duals = np.asarray(budget.dual_value, dtype=float) if budget.dual_value is not None else np.zeros(len(bounds))
    return InverseSquaresResult(rates, float(np.sum(costs / rates**2)), dual_bound(costs, constraints, bounds, duals), "clarabel")


def _decoupled(costs: np.ndarray, constraints: sp.csr_matrix, bounds: np.ndarray) -> InverseSquaresResult:
    coo = constraints.tocoo()
    rates = np.full(len(costs), np.inf)
    keep = coo.data > 0
    np.minimum.at(rates, coo.col[keep], bounds[coo.row[keep]] / coo.data[keep])
    if not np.all(np.isfinite(rates)):
        raise ValueError("a variable appears in no constraint (its optimum is unbounded)")
    objective = float(np.sum(costs / rates**2))
    return InverseSquaresResult(rates, objective, objective, "decoupled")
