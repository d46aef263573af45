"""A non-separable relaxation of the pricing problem, measured and dropped: RLT with quadratic over-estimators.

The Lagrangian bound of ``designer.design.gap.column_generation`` needs ``rho(y) = max {sum_x p_x v_x log v_x - y . v :
v in C_E, p . v = 1}``, bounded by branch and bound over the separable secants of ``t log t``
(``solvers.convex_maximization``). This benchmark measures the natural non-separable alternative
(Sherali and Adams' reformulation-linearisation technique, RLT; Sherali and Tuncbilek, J. Global
Optim. 2, 1992; Shor's semidefinite relaxation on top):

* on a box ``[l, u]``, ``t log t <= q(t)``, the quadratic that meets ``t log t`` at ``l`` and ``u`` and has
  its slope at ``u`` (the remainder ``f'''(xi)/6 (t - l)(t - u)^2`` is <= 0 because ``f''' = -1/t^2``),
  so its error falls as the cube of the box's width, the secant's as the square;
* ``X`` stands for ``v v^T``: ``X_xx <= (l_x + u_x) v_x - l_x u_x`` (box times box), ``X p = v`` (the
  normalisation times ``v``), and every cone row ``g_i(v) = e^{E[x, x']} v_x' - v_x >= 0`` times
  ``v_z - l_z >= 0`` and ``u_z - v_z >= 0`` for every z; optionally ``[[1, v^T], [v, X]]`` PSD.

Printed: at k = 8 (``random_e(8)`` of bench_design_scale, uniform prior, duals of the master over the
classic seed columns) the exact maximum over the cone's enumerated vertices, on the root box and on
boxes of factor 1.5, 1.2 and 1.1 around the maximiser (exact there by enumerating the box's slice),
against the secant LP (one node of ``SeparableConvexMax``), the RLT LP and the RLT SDP; then the
root at k = 50 (the pricing problem of part F) with the RLT LP's seconds (HiGHS's interior point through
scipy; its simplex took 225 s); with ``--search``, a best-first branch and bound over RLT LP nodes at
k = 20 for 120 s against ``SeparableConvexMax`` after as many nodes.
These are float figures of an experiment, not proven bounds.

Run: .venv/bin/python benchmarks/bench_rlt_bound.py   (about 30 s on 2 cores; --small: k = 8 only;
     --search adds about 2.5 minutes)
"""

from __future__ import annotations

import argparse
import heapq
import os
import time

import cvxpy as cp
import numpy as np
from scipy import sparse
from scipy.optimize import linprog

from bench_design_scale import PricingProblem, fixed_duals_pricing
from designer.utility import F_DIVERGENCES
from solvers.vertices import enumerate_cone_rays


def reduced_value(problem: PricingProblem, points: np.ndarray) -> np.ndarray:
    """``sum_x p_x v_x log v_x - y . v`` of each point (row) of the slice ``p . v = 1``."""
    return (problem.prior * points * np.log(points)).sum(axis=-1) - points @ problem.duals


def over_estimator(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, c)`` with ``t log t <= a t^2 + b t + c`` on ``[lower, upper]`` (module docstring)."""
    f_lower, f_upper = lower * np.log(lower), upper * np.log(upper)
    secant = (f_upper - f_lower) / (upper - lower)
    a = (np.log(upper) + 1 - secant) / (upper - lower)
    return a, secant - a * (lower + upper), f_lower - secant * lower + a * lower * upper


def exact_maximum(problem: PricingProblem, lower: np.ndarray, upper: np.ndarray) -> float:
    """``max sum p v log v - y . v`` over the vertices of ``{v in C_E : p . v = 1, lower <= v <= upper}``."""
    rows, prior, k = problem.rows, problem.prior, len(lower)
    inequalities = np.vstack([np.hstack([rows, np.zeros((len(rows), 1))]),
                              np.hstack([np.eye(k), -lower[:, None]]), np.hstack([-np.eye(k), upper[:, None]])])
    rays = enumerate_cone_rays(inequalities, np.hstack([prior, [-1.0]])[None]).vertices
    points = rays[rays[:, -1] > 1e-12]
    points = points[:, :-1] / points[:, -1:]
    return float(reduced_value(problem, points).max())


def secant_root(problem: PricingProblem, lower: np.ndarray, upper: np.ndarray) -> float:
    """The branch and bound's bound after one node (the secant LP over the propagated box)."""
    result = problem.search.run(-problem.duals, lower, upper, F_DIVERGENCES["kl"], max_nodes=1, max_seconds=1e9)
    return result.upper


def rlt_lp(problem: PricingProblem, lower: np.ndarray, upper: np.ndarray, point: bool = False):
    """The RLT LP of the module docstring (variables ``v`` and the upper triangle of ``X``), by HiGHS's
    interior point: its bound, with the LP point ``(v, diag X)`` when ``point``; ``-inf`` when the box misses the slice."""
    rows, prior, duals = problem.rows, problem.prior, problem.duals
    k = len(lower)
    pair_index = np.zeros((k, k), dtype=int)
    upper_x, upper_z = np.triu_indices(k)
    pair_index[upper_x, upper_z] = pair_index[upper_z, upper_x] = k + np.arange(len(upper_x))
    n = k + len(upper_x)
    squares = pair_index[np.arange(k), np.arange(k)]  # X_xx
    a, b, c = over_estimator(lower, upper)
    objective = np.zeros(n)
    objective[:k] = prior * b - duals
    objective[squares] = prior * a
    blocks_upper, right_upper = [], []
    cone = sparse.coo_matrix(rows)
    blocks_upper.append(sparse.hstack([-sparse.csr_matrix(rows), sparse.csr_matrix((len(rows), n - k))]))
    right_upper.append(np.zeros(len(rows)))
    diagonal = sparse.coo_matrix((np.ones(k), (np.arange(k), squares)), shape=(k, n))
    blocks_upper.append(diagonal - sparse.coo_matrix((lower + upper, (np.arange(k), np.arange(k))), shape=(k, n)))
    right_upper.append(-lower * upper)
    # g_i (v_z - l_z) >= 0 and g_i (u_z - v_z) >= 0: sum_j G_ij X_jz - bound_z sum_j G_ij v_j, for every (i, z)
    row_of = (cone.row[:, None] * k + np.arange(k)[None, :]).ravel()
    columns_x = pair_index[cone.col[:, None], np.arange(k)[None, :]].ravel()
    values = np.repeat(cone.data, k)
    for bound, sign in ((lower, -1.0), (upper, 1.0)):
        weights = np.tile(bound, len(cone.data)) * values
        product = sparse.coo_matrix((np.concatenate([values, -weights]),
                                     (np.concatenate([row_of, row_of]), np.concatenate([columns_x, np.repeat(cone.col, k)]))),
                                    shape=(len(rows) * k, n))
        blocks_upper.append(sign * product)
        right_upper.append(np.zeros(len(rows) * k))
    equality_rows = np.repeat(np.arange(k), k)
    normalised = sparse.coo_matrix((np.tile(prior, k), (equality_rows, pair_index[equality_rows, np.tile(np.arange(k), k)])),
                                   shape=(k, n)) - sparse.coo_matrix((np.ones(k), (np.arange(k), np.arange(k))), shape=(k, n))
    equalities = sparse.vstack([sparse.hstack([sparse.csr_matrix(prior[None]), sparse.csr_matrix((1, n - k))]), normalised])
    bounds = [(lower[x], upper[x]) for x in range(k)] + [(None, None)] * (n - k)
    solution = linprog(-objective, A_ub=sparse.vstack(blocks_upper).tocsr(), b_ub=np.concatenate(right_upper),
                       A_eq=equalities.tocsr(), b_eq=np.concatenate([[1.0], np.zeros(k)]), bounds=bounds, method="highs-ipm")
    if solution.status == 2:  # the box misses the slice
        return (-np.inf, None, None) if point else -np.inf
    if solution.status != 0:
        raise RuntimeError(f"RLT LP: {solution.message}")
    value = float(-solution.fun + prior @ c)
    return (value, solution.x[:k], solution.x[squares]) if point else value


def rlt_sdp(problem: PricingProblem, lower: np.ndarray, upper: np.ndarray) -> float:
    """The RLT LP with ``[[1, v^T], [v, X]]`` positive semidefinite (Shor), by Clarabel."""
    rows, prior, duals = problem.rows, problem.prior, problem.duals
    k = len(lower)
    a, b, c = over_estimator(lower, upper)
    moment = cp.Variable((k + 1, k + 1), symmetric=True)
    v, products = moment[0, 1:], moment[1:, 1:]
    row_products, row_values = rows @ products, rows @ v
    constraints = [moment >> 0, moment[0, 0] == 1, prior @ v == 1, products @ prior == v, v >= lower, v <= upper,
                   row_values >= 0, cp.diag(products) <= cp.multiply(lower + upper, v) - lower * upper,
                   row_products - cp.outer(row_values, lower) >= 0, cp.outer(row_values, upper) - row_products >= 0]
    objective = prior @ (cp.multiply(a, cp.diag(products)) + cp.multiply(b, v) + c) - duals @ v
    problem_sdp = cp.Problem(cp.Maximize(objective), constraints)
    problem_sdp.solve(solver="CLARABEL")
    return float(problem_sdp.value)


def small_case() -> None:
    problem = fixed_duals_pricing(k=8)
    lower, upper = problem.lower, problem.upper
    rays = enumerate_cone_rays(problem.rows).vertices
    points = rays / (rays @ problem.prior)[:, None]
    maximiser = points[reduced_value(problem, points).argmax()]
    print("k = 8: excess over the exact maximum of the box (smaller is tighter)")
    print(f"  {'box':>12} {'exact':>9} {'secant LP':>10} {'RLT LP':>10} {'RLT SDP':>10} {'secant/RLT':>10}")
    for factor in (None, 1.5, 1.2, 1.1):
        box = (lower, upper) if factor is None else (np.maximum(lower, maximiser / factor), np.minimum(upper, maximiser * factor))
        exact = exact_maximum(problem, *box)
        secant, linear, semidefinite = (bound(problem, *box) - exact for bound in (secant_root, rlt_lp, rlt_sdp))
        name = "root" if factor is None else f"factor {factor}"
        print(f"  {name:>12} {exact:9.6f} {secant:10.6f} {linear:10.6f} {semidefinite:10.6f} {secant / linear:9.1f}x")


def large_case() -> None:
    problem = fixed_duals_pricing(k=50)
    lower, upper = problem.lower, problem.upper
    start = time.perf_counter()
    secant = secant_root(problem, lower, upper)
    secant_seconds = time.perf_counter() - start
    start = time.perf_counter()
    linear = rlt_lp(problem, lower, upper)
    linear_seconds = time.perf_counter() - start
    print(f"k = 50 root ({len(problem.rows)} cone rows; load average {os.getloadavg()[0]:.1f}): "
          f"secant LP {secant:.6f} in {secant_seconds:.2f} s, RLT LP {linear:.6f} in {linear_seconds:.1f} s")


def search_case(k: int = 20, seconds: float = 120.0) -> None:
    """Best-first branch and bound over RLT LP nodes (bisect the coordinate whose over-estimate at the LP
    point is largest; no propagation; a child whose box misses the slice is dropped) for ``seconds``,
    against ``SeparableConvexMax`` after as many nodes."""
    problem = fixed_duals_pricing(k=k)
    prior, duals = problem.prior, problem.duals
    start = time.perf_counter()
    bound, v, squares = rlt_lp(problem, problem.lower, problem.upper, point=True)
    heap, best, nodes = [(-bound, 0, problem.lower, problem.upper, v, squares)], float(reduced_value(problem, v)), 1
    while heap and time.perf_counter() - start < seconds:
        bound, _, lower, upper, v, squares = heapq.heappop(heap)
        if -bound <= best:
            continue
        a, b, c = over_estimator(lower, upper)
        split = int(np.argmax(prior * (a * squares + b * v + c - v * np.log(v))))
        middle = 0.5 * (lower[split] + upper[split])
        for low, high in ((lower[split], middle), (middle, upper[split])):
            child_lower, child_upper = lower.copy(), upper.copy()
            child_lower[split], child_upper[split] = low, high
            child, v_child, squares_child = rlt_lp(problem, child_lower, child_upper, point=True)
            nodes += 1
            if v_child is None:
                continue
            best = max(best, float(reduced_value(problem, np.clip(v_child, child_lower, child_upper))))
            if child > best:
                heapq.heappush(heap, (-child, nodes, child_lower, child_upper, v_child, squares_child))
    rlt_bound = max([-entry[0] for entry in heap] + [best])
    rlt_seconds = time.perf_counter() - start
    start = time.perf_counter()
    secant = problem.search.run(-duals, problem.lower, problem.upper, F_DIVERGENCES["kl"],
                                max_nodes=nodes, max_seconds=1e9)
    print(f"k = {k}, branch and bound: RLT {rlt_bound:.6f} after {nodes} nodes in {rlt_seconds:.1f} s; secant "
          f"{secant.upper:.6f} after {secant.nodes} nodes in {time.perf_counter() - start:.1f} s (best {best:.6f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="k = 8 only")
    parser.add_argument("--search", action="store_true", help="also the two branch and bounds at k = 20, 120 s")
    arguments = parser.parse_args()
    small_case()
    if not arguments.small:
        large_case()
    if arguments.search:
        search_case()


if __name__ == "__main__":
    main()
