"""Linear programs: the vertex LP and the ratio-constrained stochastic-matrix LP.

API
---
``solve_vertex_lp(vertices, values, rhs, backend="highs") -> VertexLPResult``

    maximise    sum_v weights_v * values_v
    subject to  sum_v weights_v * vertices[v] = rhs,   weights >= 0

with ``vertices`` (n, d), ``values`` (n,), ``rhs`` (d,). Its dual is
``minimise rhs . duals  s.t.  vertices @ duals >= values``; the result carries
both, with the dual residual ``max(values - vertices @ duals)`` and the gap
``rhs . duals - objective``: a feasible dual with zero gap certifies optimality
(weak duality). This is the LP of Kairouz, Oh, Viswanath 2014 (Theorem 4) and
of Theorem 12 of robust-ldp-chi-square.md. ``backend="highs"`` uses HiGHS through
highspy; ``backend="cvxpy"`` states the same model in CVXPY
(solved by HiGHS through CVXPY, or CVXPY's default LP solver).

``solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend="clarabel") -> StochasticLPResult``

    minimise    sum_{i,j} cost[i, j] * M[i, j]
    subject to  M >= 0,  every row of M sums to 1,
                M[a, j] <= ratios[p] * M[b, j]   for every listed pair p = (a, b), every column j

with ``cost`` (k, m), ``pairs`` (n, 2) int, ``ratios`` (n,) finite, >= 0. Built
as a sparse LP. ``backend="clarabel"`` (default) solves it with Clarabel's
interior-point method (sparse LDL of the KKT system: the ``m`` column blocks only
couple through the k row sums; 1.4 s at k = m = 100 where HiGHS took 4.6-14 s),
feasible to ~1e-10 but not a vertex; ``backend="highs"`` uses HiGHS
(interior point + crossover: a vertex solution, slower on large instances).
The number of ratio rows is ``n * m``, so listing only the pairs that are not
implied by others is what keeps it small.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from solvers.highs_retry import run_until
from solvers.quiet import silent_highs, stdout_silenced

#: HiGHS feasibility tolerances for the stochastic LP (defaults are 1e-7): tight, so
#: that repairing a solution to exact feasibility moves it by far less than 1e-7.
#: The vertex LP keeps HiGHS's defaults: its columns are exact cone vertices
#: whatever the weights, and the weights are re-solved on their support.
TIGHT_TOLERANCES = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


#: Clarabel's gap and feasibility tolerances for the stochastic LP (defaults 1e-8; at
#: 1e-10 a 10 x 10 grid design missed certification by 1.5e-9, at 1e-11 and 1e-12 it passes).
CLARABEL_TOLERANCE = 1e-12


class LinearProgramError(RuntimeError):
    """The LP solver did not return an optimal solution."""


@dataclass(frozen=True)
class VertexLPResult:
    """Solution of :func:`solve_vertex_lp`.

    Attributes
    ----------
    weights : ndarray (n,)
        Optimal primal ``weights`` (>= 0), at most ``d`` of them non-zero at a basic solution.
    objective : float
        ``values . weights``.
    duals : ndarray (d,)
        Optimal dual vector ``y`` of ``min rhs . y s.t. vertices @ y >= values``.
    dual_residual : float
        ``max(values - vertices @ duals)``: <= ~0 means the dual is feasible.
    gap : float
        ``rhs . duals - objective``: ~0 at optimality.
    primal_residual : float
        ``max |vertices.T @ weights - rhs|``.
    seconds : float
    backend : str
    """

    weights: np.ndarray
    objective: float
    duals: np.ndarray
    dual_residual: float
    gap: float
    primal_residual: float
    seconds: float
    backend: str


@dataclass(frozen=True)
class StochasticLPResult:
    """Solution of :func:`solve_ratio_bounded_stochastic_lp`.

    ``matrix`` (k, m) is row-stochastic; ``objective = sum(cost * matrix)``;
    ``n_constraints`` counts the ratio rows; ``seconds`` covers building and solving.
    ``row_duals`` (k,) and ``pair_duals`` (n, m) are the solver's multipliers of the row sums and of
    the ratio rows (``>= 0``), e.g. for :func:`solvers.ratio_lp.lagrangian_lower_bound`; ``status`` is
    the solver's own word (``"Solved"``, ``"AlmostSolved"``, ``"Optimal"``, ...): an inaccurate solve is
    returned, not refused, and the bound says how good it is.
    """

    matrix: np.ndarray
    objective: float
    n_constraints: int
    seconds: float
    row_duals: np.ndarray
    pair_duals: np.ndarray
    status: str


def solve_vertex_lp(vertices, values, rhs, backend: str = "highs", options: dict | None = None) -> VertexLPResult:
    """Maximise ``values . w`` over ``w >= 0`` with ``vertices.T @ w = rhs`` (see module docstring).

    ``options``: HiGHS options (e.g. :data:`TIGHT_TOLERANCES`; backend ``"highs"`` only).
    With the default dual feasibility tolerance (1e-7) HiGHS may stop at a column
    whose value is within ~1e-7 (relative) of the best one.

    Raises
    ------
    ValueError
        Shapes disagree or inputs are not finite.
    LinearProgramError
        The LP is infeasible/unbounded or the solver failed.
    """
    vertices = np.asarray(vertices, dtype=float)
    values = np.asarray(values, dtype=float).ravel()
    rhs = np.asarray(rhs, dtype=float).ravel()
    if vertices.ndim != 2 or vertices.shape[0] != values.size or vertices.shape[1] != rhs.size:
        raise ValueError(
            f"shapes disagree: vertices {vertices.shape}, values {values.shape}, rhs {rhs.shape}"
        )
    if not (np.all(np.isfinite(vertices)) and np.all(np.isfinite(values)) and np.all(np.isfinite(rhs))):
        raise ValueError("vertex LP data must be finite")
    start = time.perf_counter()
    if backend == "highs":
        weights, duals = _vertex_lp_highs(vertices, values, rhs, options or {})
    elif backend == "cvxpy":
        weights, duals = _vertex_lp_cvxpy(vertices, values, rhs)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose 'highs' or 'cvxpy'")
    seconds = time.perf_counter() - start
    weights = np.maximum(weights, 0.0)
    objective = float(values @ weights)
    return VertexLPResult(
        weights=weights,
        objective=objective,
        duals=duals,
        dual_residual=float(np.max(values - vertices @ duals)),
        gap=float(rhs @ duals - objective),
        primal_residual=float(np.max(np.abs(vertices.T @ weights - rhs))),
        seconds=seconds,
        backend=backend,
    )


def _vertex_lp_highs(vertices, values, rhs, options: dict) -> tuple[np.ndarray, np.ndarray]:
    """The vertex LP in HiGHS through highspy (20 ms to import; scipy.optimize, around the same
    HiGHS, takes 0.3-0.5 s). Column ``v`` of the equality matrix is ``vertices[v]``; a solve that stops
    without an optimum is run again other ways (:func:`solvers.highs_retry.run_until`) before it is refused."""
    import highspy

    n, d = vertices.shape
    nonzero = vertices != 0
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, d
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = values
    lp.col_lower_ = np.zeros(n)
    lp.col_upper_ = np.full(n, highspy.kHighsInf)
    lp.row_lower_ = lp.row_upper_ = rhs
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))]).astype(np.int32)
    lp.a_matrix_.index_ = np.nonzero(nonzero)[1].astype(np.int32)
    lp.a_matrix_.value_ = vertices[nonzero]
    highs = silent_highs()
    for name, value in options.items():
        highs.setOptionValue(name, value)
    highs.passModel(lp)
    status = run_until(highs, [highspy.HighsModelStatus.kOptimal])
    if status != highspy.HighsModelStatus.kOptimal:
        raise LinearProgramError(f"vertex LP not solved: {highs.modelStatusToString(status)}")
    solution = highs.getSolution()
    # HiGHS's row duals of the maximisation: the y of min rhs . y s.t. vertices @ y >= values.
    return np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float)


#: Clarabel statuses after which no usable point exists (the LP is always feasible and bounded,
#: so these are numerical failures); any other status returns its point, checked by the caller's bound.
CLARABEL_FAILURES = ("PrimalInfeasible", "DualInfeasible", "AlmostPrimalInfeasible", "AlmostDualInfeasible",
                     "Unsolved")


def _stochastic_lp_clarabel(cost: np.ndarray, upper, rows_sum,
                            time_limit: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """``min cost.z  s.t.  rows_sum z = 1, upper z <= 0, z >= 0`` with Clarabel (``A z + s = b``).

    Returns the point, the row-sum multipliers, the ratio-row multipliers and the status. Clarabel's
    dual ``z`` satisfies ``c + A^T z = 0`` with ``z`` free on the equalities, so the row-sum
    multipliers are ``-z``.
    """
    import clarabel
    from scipy import sparse

    size = cost.size
    constraints = sparse.vstack([rows_sum, upper, -sparse.eye(size)], format="csc")
    bounds = np.concatenate([np.ones(rows_sum.shape[0]), np.zeros(upper.shape[0] + size)])
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = CLARABEL_TOLERANCE
    if time_limit is not None:
        settings.time_limit = max(float(time_limit), 0.0)
    cones = [clarabel.ZeroConeT(rows_sum.shape[0]), clarabel.NonnegativeConeT(upper.shape[0] + size)]
    solver = clarabel.DefaultSolver(sparse.csc_matrix((size, size)), cost, constraints, bounds, cones, settings)
    solution = solver.solve()
    status = str(solution.status)
    point = np.asarray(solution.x)
    if status in CLARABEL_FAILURES or status == "MaxTime" or not np.all(np.isfinite(point)):
        raise LinearProgramError(f"ratio-bounded LP not solved by Clarabel: {status}")
    duals = np.asarray(solution.z)
    k = rows_sum.shape[0]
    return point, -duals[:k], duals[k:k + upper.shape[0]], status


def _vertex_lp_cvxpy(vertices, values, rhs) -> tuple[np.ndarray, np.ndarray]:
    import cvxpy as cp

    weights = cp.Variable(vertices.shape[0], nonneg=True)
    balance = vertices.T @ weights == rhs
    problem = cp.Problem(cp.Maximize(values @ weights), [balance])
    solver = cp.HIGHS if cp.HIGHS in cp.installed_solvers() else None
    with stdout_silenced():  # CVXPY builds its own Highs(), whose constructor prints
        problem.solve(solver=solver, **({"output_flag": False} if solver == cp.HIGHS else {}))
    if problem.status != cp.OPTIMAL:
        raise LinearProgramError(f"vertex LP not solved by cvxpy: {problem.status}")
    # CVXPY's dual of an equality in a maximisation is the multiplier y with
    # objective = rhs . y at optimality (sign fixed by checking the gap).
    duals = np.asarray(balance.dual_value, dtype=float).ravel()
    if abs(rhs @ duals - problem.value) > abs(rhs @ -duals - problem.value):
        duals = -duals
    return np.asarray(weights.value, dtype=float), duals


def solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend: str = "clarabel",
                                      time_limit: float | None = None) -> StochasticLPResult:
    """Minimise ``sum(cost * M)`` over row-stochastic M with ``M[a,j] <= r M[b,j]`` (see module docstring).

    ``time_limit`` (seconds) is passed to the solver; a solve it stops raises :class:`LinearProgramError`.
    """
    cost, pairs, ratios = validated_ratio_lp(cost, pairs, ratios)
    k, m = cost.shape
    if time_limit is not None and time_limit <= 0:  # HiGHS reads a zero limit as none
        raise LinearProgramError("ratio-bounded LP not solved: no time left")
    start = time.perf_counter()
    n = pairs.shape[0]
    upper, rows_sum = ratio_rows(pairs, ratios, k, m)
    scale = cost_scale(cost)
    if backend == "clarabel":
        solution, row_duals, pair_duals, status = _stochastic_lp_clarabel(scale * cost.ravel(), upper, rows_sum,
                                                                          time_limit)
    elif backend == "highs":
        import scipy.optimize

        result = scipy.optimize.linprog(
            scale * cost.ravel(),
            A_ub=upper if n else None,
            b_ub=np.zeros(n * m) if n else None,
            A_eq=rows_sum,
            b_eq=np.ones(k),
            bounds=(0, None),
            method="highs-ipm",  # 4.6 s vs 26-33 s for simplex at k = m = 100 (10 x 10 grid)
            options=TIGHT_TOLERANCES if time_limit is None else {**TIGHT_TOLERANCES, "time_limit": time_limit},
        )
        if result.x is None or not np.all(np.isfinite(result.x)) or result.status == 1:  # 1: a limit stopped it
            raise LinearProgramError(f"ratio-bounded LP not solved: {result.message}")
        solution, status = result.x, "Optimal" if result.status == 0 else result.message
        # linprog's marginals are d(objective)/d(right-hand side): the row-sum multipliers, and minus
        # the multipliers of the rows "q_a - r q_b <= 0"
        row_duals = np.asarray(result.eqlin.marginals, dtype=float)
        pair_duals = -np.asarray(result.ineqlin.marginals, dtype=float) if n else np.zeros(0)
    else:
        raise ValueError(f"unknown backend {backend!r}; choose 'clarabel' or 'highs'")
    matrix = np.maximum(solution.reshape(k, m), 0.0)
    matrix /= matrix.sum(axis=1, keepdims=True)
    return StochasticLPResult(
        matrix=matrix,
        objective=float(np.sum(cost * matrix)),
        n_constraints=n * m,
        seconds=time.perf_counter() - start,
        row_duals=row_duals / scale,
        pair_duals=np.maximum(pair_duals, 0.0).reshape(n, m) / scale,
        status=status,
    )


def validated_ratio_lp(cost, pairs, ratios) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(cost, pairs, ratios)`` of the stochastic LP as arrays, checked.

    ``cost`` (k, m) finite, ``pairs`` (n, 2) of indices in 0..k-1, ``ratios`` (n,) finite and >= 0.

    Raises
    ------
    ValueError
        Naming what is wrong.
    """
    cost = np.asarray(cost, dtype=float)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ratios = np.asarray(ratios, dtype=float).ravel()
    if cost.ndim != 2 or not np.all(np.isfinite(cost)):
        raise ValueError("cost must be a finite 2-D array")
    if ratios.size != pairs.shape[0]:
        raise ValueError(f"{pairs.shape[0]} pairs but {ratios.size} ratios")
    if pairs.size and (pairs.min() < 0 or pairs.max() >= cost.shape[0]):
        raise ValueError(f"pair indices must lie in 0..{cost.shape[0] - 1}")
    if not (np.all(np.isfinite(ratios)) and np.all(ratios >= 0)):
        raise ValueError("ratios must be finite and >= 0")
    return cost, pairs, ratios


def ratio_rows(pairs: np.ndarray, ratios: np.ndarray, k: int, m: int):
    """``(upper, rows_sum)``: the sparse rows ``M[a, j] - r_p M[b, j] <= 0`` (row ``p m + j``) and ``sum_j M[i, j]``.

    The variable index of ``M[i, j]`` is ``i m + j``.
    """
    from scipy import sparse

    n = pairs.shape[0]
    row_ids = np.arange(n * m)
    columns_a = (pairs[:, 0:1] * m + np.arange(m)).ravel()
    columns_b = (pairs[:, 1:2] * m + np.arange(m)).ravel()
    upper = sparse.csr_matrix(
        (
            np.concatenate([np.ones(n * m), -np.repeat(ratios, m)]),
            (np.concatenate([row_ids, row_ids]), np.concatenate([columns_a, columns_b])),
        ),
        shape=(n * m, k * m),
    )
    return upper, sparse.kron(sparse.eye(k, format="csr"), np.ones((1, m)), format="csr")


def cost_scale(cost: np.ndarray) -> float:
    """The factor that brings the largest cost to 1.

    The solvers' tolerances are absolute: costs are scaled to at most 1 (prior x loss is often ~1e-4;
    HiGHS stopped at "Unknown" and Clarabel at "AlmostSolved" on such costs), multipliers scaled back.
    """
    return 1.0 / max(float(np.abs(cost).max()), np.finfo(float).tiny)


def solve_ratio_bounded_stochastic_lp_by_either(cost, pairs, ratios, backends=("clarabel", "highs"),
                                                seconds: float | None = None):
    """:func:`solve_ratio_bounded_stochastic_lp` by each backend in turn until one solves it, all within ``seconds``.

    Returns ``(result, backend, failures)``: the first answer (None when every backend failed) with the
    backend that gave it, and one ``"backend: error"`` line per failure before it. A backend that finds no
    time left fails like any other.
    """
    start, failures = time.perf_counter(), []
    for backend in backends:
        limit = None if seconds is None else max(seconds - (time.perf_counter() - start), 0.0)
        try:
            return solve_ratio_bounded_stochastic_lp(cost, pairs, ratios, backend=backend, time_limit=limit), backend, failures
        except LinearProgramError as error:
            failures.append(f"{backend}: {error}")
    return None, None, failures
