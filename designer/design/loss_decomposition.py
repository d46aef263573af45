"""The expected-loss LP by output: Dantzig-Wolfe column generation over the cone, with a proven lower bound.

The LP ``min sum_{x,y} prior_x loss[x, y] Q[x, y]`` over E-LDP channels couples its m output columns
only through the k row sums; each column lies in the cone ``C_E`` (constraints on E's non-redundant
pairs: for a graph metric its edges, Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014). So it is a
Dantzig-Wolfe master over points of the cone's slice with k rows, priced output by output by a small
LP over the slice (k variables, one row per non-redundant pair): :mod:`solvers.ratio_lp`, which also
gives the lower bound (Lagrangian duality from the master's row duals and the pricing LPs' pair duals,
with outward rounding).

Start columns: for every output y, ``exp(-E*[c_y, x])`` with ``c_y`` an input where reporting y costs
least (the column of the geometric / Laplace shape centred there, a point of the cone by the triangle
inequality of the closure ``E*``), the constant column (in every cone), which makes the master
feasible, and, for a symmetric E, the exponential mechanism's columns (a full feasible start: with the
constant column alone the master of a 350-node random geometric graph sat on the best single report,
so degenerate that its duals priced 12 rounds of columns it never used). On an L1 grid at epsilon = 0.5 under a uniform prior the master closes to a relative gap of
1e-9 in four rounds (benchmarks/RESULTS.md).

When few outputs carry the optimum (a small epsilon for the diameter: 4 of 64 on an 8 x 8 grid at
epsilon 0.1), each used output's column mixes many vertices and the master gains one per output and
round, so it tails off (202 rounds there). After :data:`TAILING_ROUNDS` rounds the outputs the master
uses are solved with all their constraints at once and the set grows by reduced cost
(:func:`solvers.ratio_lp.restricted_output_lp`, by the block-angular interior-point method when it takes the
design: :func:`designer.design.block_scope.outputs_solver`); should its multipliers fall short of the gap, column
generation resumes with its channel's columns added.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from designer.design.block_scope import outputs_solver
from designer.spec import PrivacyMatrix

#: Rounds of column generation by output before a master that has not closed the gap is finished by the
#: LP over the outputs it uses (:func:`solvers.ratio_lp.restricted_output_lp`): 20 x 20 grids at epsilon 0.5
#: close in 4 rounds, an 8 x 8 grid at epsilon 0.1 (4 outputs used) took 202.
TAILING_ROUNDS = 12
#: Float ratios ``exp(E)`` are raised by this many machine epsilons for the lower bound (more than
#: numpy's exp error), so the bound holds for the cone of the exact ``e^E``.
RATIO_ROUNDING = 16


def constraint_pairs(privacy: PrivacyMatrix, constraints: str = "nonredundant") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(pairs, ratios, bound_ratios)``: the constrained pairs, ``exp(E)`` on them, and those ratios rounded up."""
    k = privacy.k
    if constraints == "nonredundant":
        pairs = privacy.nonredundant_pairs()
    else:
        pairs = np.argwhere(np.isfinite(privacy.epsilon) & ~np.eye(k, dtype=bool))
    ratios = np.exp(privacy.epsilon[pairs[:, 0], pairs[:, 1]]) if pairs.size else np.empty(0)
    return pairs.reshape(-1, 2), ratios, ratios * (1.0 + RATIO_ROUNDING * np.finfo(float).eps)


def start_columns(privacy: PrivacyMatrix, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(columns, owners)``: the start columns of the module docstring (one per output, then the constant one)."""
    k, m = cost.shape
    centres = np.argmin(cost, axis=0)
    closure = privacy.closure().epsilon
    columns = np.exp(-closure[centres])
    best_constant = int(np.argmin(cost.sum(axis=0)))
    columns, owners = np.vstack([columns, np.ones((1, k))]), np.concatenate([np.arange(m), [best_constant]])
    if np.array_equal(closure, closure.T):  # the exponential mechanism at the centres, a full feasible start
        from designer.design.metric_compare import exponential_mechanism

        mechanism = exponential_mechanism(privacy)[:, centres]
        columns, owners = np.vstack([columns, mechanism.T]), np.concatenate([owners, np.arange(m)])
    return columns, owners


def decompose_by_output(
    privacy: PrivacyMatrix,
    cost: np.ndarray,
    gap: float,
    max_seconds: float,
    progress: Callable[[float, float, float], None] | None = None,
    seed: np.ndarray | None = None,
    threads: int | None = None,
) -> tuple[list[np.ndarray], float, str, list, list]:
    """Column generation by output for ``min sum cost * Q`` over E-LDP channels.

    Returns ``(channels, lower_bound, stopped, history, methods)``: the runs' channels, least objective
    first (to be repaired and certified: the caller keeps the first that certifies; the restricted output
    LP's interior-point answer can sit too far from the cone for the repair, its rows off 1 after the columns
    are lowered: 4.5e-5 past E on a 350-node graph, where column generation's master channel repairs
    exactly), the proven lower bound, why it stopped (``"gap"``, ``"priced out"``,
    ``"time"``), one history entry per round and a one-line description. ``seed`` (k, m), an E-LDP
    channel (e.g. an inaccurate direct solve, repaired), adds its non-zero columns to the start columns.
    ``threads``: pricing LPs at once (default :func:`designer.design.gap.column_generation.default_threads`).
    """
    from designer.design.gap.column_generation import default_threads
    from solvers.ratio_lp import column_generation_by_output, restricted_output_lp

    pairs, ratios, bound_ratios = constraint_pairs(privacy)
    columns, owners = start_columns(privacy, cost)
    if seed is not None:
        used = np.flatnonzero(seed.sum(axis=0) > 0)
        columns, owners = np.vstack([columns, seed[:, used].T]), np.concatenate([owners, used])
    start = time.perf_counter()
    threads = default_threads() if threads is None else threads
    common = {"gap_tolerance": gap, "progress": progress, "bound_ratios": bound_ratios}
    result = column_generation_by_output(cost, pairs, ratios, columns, owners, max_seconds=max(max_seconds, 0.0),
                                         threads=threads, max_rounds=TAILING_ROUNDS, **common)
    runs = [result]
    if result.stopped == "rounds":  # tailing off: the outputs it uses, each with all its constraints
        used = np.flatnonzero(result.matrix.sum(axis=0) > 0)
        result = restricted_output_lp(cost, pairs, ratios, used, max_seconds=max(max_seconds - _since(start), 0.0),
                                      lower_bound=result.lower_bound, solve=outputs_solver(privacy), **common)
        runs.append(result)
        if result.stopped not in ("gap", "time"):  # its multipliers were not exact enough: back to the columns
            used = np.flatnonzero(result.matrix.sum(axis=0) > 0)
            result = column_generation_by_output(
                cost, pairs, ratios, np.vstack([columns, result.matrix[:, used].T]), np.concatenate([owners, used]),
                max_seconds=max(max_seconds - _since(start), 0.0), threads=threads, **common)
            runs.append(result)
    lower = max(run.lower_bound for run in runs)
    described = "; ".join(f"{run.method}: {run.rounds} rounds, {run.columns} columns, {run.pricing_lps} pricing LPs"
                          for run in runs)
    history = [entry for run in runs for entry in run.history]
    return _by_objective(runs), lower, result.stopped, history, [f"{described} ({len(pairs)} pair constraints)"]


def _by_objective(runs: list) -> list[np.ndarray]:
    """The runs' channels, least objective first; a run stopped before its first answer (objective inf) only
    when no run has one."""
    finite = sorted((run for run in runs if math.isfinite(run.objective)), key=lambda run: run.objective)
    return [run.matrix for run in finite or runs[:1]]


def _since(start: float) -> float:
    return time.perf_counter() - start
