"""The ratio-constrained stochastic-matrix LP by columns: a proven dual bound and column generation by output.

Problem (the LP of :func:`solvers.linear.solve_ratio_bounded_stochastic_lp`)
-------------------------------------------------------------------------------
    minimise    sum_{x, y} cost[x, y] M[x, y]
    subject to  M >= 0,  sum_y M[x, y] = 1 for every row x,
                every column q = M[:, y] lies in the cone  K = {q >= 0 : r_p q_b - q_a >= 0 for every pair p = (a, b)}.

Only the k row sums couple the columns: this is the block-angular structure of Dantzig and Wolfe
(Oper. Res. 8, 1960). Write ``A`` for the n x k matrix of the rows ``r_p e_b - e_a`` (``K = {q >= 0 : A q >= 0}``).

Lower bound (Lagrangian duality, valid for *any* multipliers). For pair multipliers ``pi[:, y] >= 0``
(n, per column) and any row multipliers ``u`` (k,), let ``R[:, y] = cost[:, y] - u - A^T pi[:, y]``. For
every feasible M, ``pi . A q_y >= 0`` and every row of M is a probability vector (its sum is exactly 1), so

    sum cost * M  =  1 . u + sum_y R[:, y] . q_y + sum_y pi[:, y] . A q_y  >=  1 . u + sum_x min_y R[x, y]
                  =  sum_x min_y (cost - A^T pi)[x, y]          (u cancels).

:func:`lagrangian_lower_bound` evaluates the right side with every rounding error bounded and
subtracted, so it is a proven lower bound in floating point; at an optimal dual pair it equals the
optimum (LP duality). The multipliers may come from any solver, solved to any accuracy, or be stale:
a poor set only gives a weaker bound. Each output's ``pi[:, y]`` comes from its pricing LP (below),
solved at whatever row multipliers it was priced at.

Column generation by output (:func:`column_generation_by_output`). The master LP chooses
non-negative weights of columns ``(y, v)`` (an output y and a point v of the slice
``{v in K, 1 . v = 1}``), costing ``cost[:, y] . v``, subject to ``sum_j w_j v_j = 1`` (k rows). Its duals
``u`` price output y through the *pricing LP* ``rho_y = min {(cost[:, y] - u) . v : v in K, 1 . v = 1}``
(k variables, n + 1 rows): a negative ``rho_y`` gives a new column, and the pricing LP's own row duals
are the ``pi[:, y]`` of the bound above. The k^2-variable LP is never built: the master has k rows and
one column per generated vertex, each pricing LP k columns. A point of K found for one output is a
column for every output, so each round first offers every output the points found so far (one matrix
product of reduced costs, the best point per output, until the master stops falling; on a 40 x 40 grid the
start columns alone reach the optimum), then prices every output by its LP;
the run stops when the bound is within ``gap_tolerance`` of the master's value, when no output
prices out (then the bound equals the master's value up to the solvers' tolerances), or on the time budget.
The budget also stops a master solve (HiGHS's time limit), whose earlier answer then stands. Outputs are
priced along a nearest-neighbour tour of their cost columns (:func:`output_tour`), so that each pricing LP
warm-starts from a neighbour's optimum.

Stabilisation (Wentges, Int. Trans. Oper. Res. 4, 1997). The master's multipliers jump between extreme
points of its dual; priced there, a graph's rounds add columns the master barely uses and the bound stays
negative. So every round prices each output twice: at the master's ``u`` (which alone can show that nothing
prices out; a run whose bound closes there stops), then at ``SMOOTHING * centre + (1 - SMOOTHING) * u``, where
the centre is ``u = 0`` in round 1 and later the multipliers of the best bound so far. A centre given from
elsewhere (a first-order method's row multipliers) is priced before the first master solve instead, and the
vertices found there join the start columns. At ``u = 0`` every slice
LP's value ``rho_y`` is the least expected loss of one output's column, so the bound there is at least
``k min_y rho_y`` (positive for a loss that vanishes only on the diagonal). Both pricings' columns enter the
master at once (two per output for one master solve, the costly step on large graphs); a smoothed column that
does not price out at the master's ``u`` is dropped. The bound's proof does not depend on where a round priced.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat

import highspy
import numpy as np
from scipy import sparse

from solvers.column_generation import slice_model
from solvers.dense_ipm import dense_interior_point
from solvers.highs_retry import run_until
from solvers.linear import (LinearProgramError, StochasticLPResult, cost_scale,
                            solve_ratio_bounded_stochastic_lp_by_either)
from solvers.quiet import silent_highs

#: Least-squares weights of the master's support below ``-POLISH_NEGATIVE`` times the largest are a real change of
#: support, not rounding (see _polished); above it they are clipped to 0.
POLISH_NEGATIVE = 1e-12
#: Pricing LPs whose value is below ``-PRICING_TOLERANCE`` times the master's value (over k) add a column.
PRICING_TOLERANCE = 1e-10
#: Passes of pricing the points already found for every output before each round of pricing LPs (see
#: _priced_from_vertices). Each re-solves the master, the costly step on large graphs: with 3 instead of 10 a 40 x 40
#: grid closes in 139 s (233 s in an earlier benchmark), and the 1,000-node random geometric graph's master reaches
#: 0.2015 in 600 s instead of 0.2155.
VERTEX_PASSES = 3
#: A pass that lowers the master by less than this fraction of the gap tolerance (relative) is idle (a degenerate
#: master's pivots often are; the next pass may still gain); VERTEX_IDLE idle passes in a row end the passes.
VERTEX_STALL = 1e-2
VERTEX_IDLE = 2
#: Every round's second pricing is at ``SMOOTHING * centre + (1 - SMOOTHING) * u`` (module docstring). On a 350-node
#: random geometric graph 180 s reach 0.1923 with a bound of 0.168, against 0.1940 and 0.124 pricing at ``u`` and the
#: centre in alternate rounds, and 0.2726 and -3.56 (12 rounds) at ``u`` alone (benchmarks/RESULTS.md).
SMOOTHING = 0.95
#: Entries of the (outputs x points) reduced-cost matrix held at once (64 MB of doubles).
VERTEX_CELLS = 1 << 23
#: Masters of at least this many entries (columns times k) are solved by the dense interior-point method (_Master).
INTERIOR_CELLS = 2_000_000


def pair_matrix(k: int, pairs, ratios) -> sparse.csr_matrix:
    """The n x k matrix ``A`` of the rows ``r_p e_b - e_a`` (module docstring), sparse."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    ratios = np.asarray(ratios, dtype=float).ravel()
    n = pairs.shape[0]
    rows = np.concatenate([np.arange(n), np.arange(n)])
    return sparse.csr_matrix(
        (np.concatenate([-np.ones(n), ratios]), (rows, np.concatenate([pairs[:, 0], pairs[:, 1]]))), shape=(n, k)
    )


def lagrangian_lower_bound(cost, pairs, ratios, pair_duals) -> float:
    """A proven lower bound on the LP's optimum from any pair multipliers (module docstring).

    Parameters
    ----------
    cost : array_like (k, m)
    pairs : array_like (n, 2) of int
    ratios : array_like (n,)
        ``r_p``; for a bound on a cone with larger ratios (an exact ``e^E`` above its float), pass
        ratios rounded up: a larger ``r_p`` only enlarges K.
    pair_duals : array_like (n, m)
        ``pi``; negative entries are read as 0.

    Returns
    -------
    float
        ``sum_x min_y (cost - A^T pi)[x, y]``, each entry lowered by a bound on its rounding error and the
        sum rounded down, so the value is below the exact expression.
    """
    cost = np.asarray(cost, dtype=float)
    k = cost.shape[0]
    pi = np.maximum(np.asarray(pair_duals, dtype=float).reshape(-1, cost.shape[1]), 0.0)
    transposed = pair_matrix(k, pairs, ratios).T.tocsr()
    reduced = cost - transposed @ pi
    # each entry is cost - (a sum of at most `terms` products): its rounding error is below
    # (terms + 2) u_mach times the sum of the magnitudes (Higham, Accuracy and Stability, Sec. 3.1)
    terms = int(np.diff(transposed.indptr).max()) if transposed.nnz else 0
    reduced -= (terms + 3) * np.finfo(float).eps * (np.abs(cost) + abs(transposed) @ pi)
    lowest = reduced.min(axis=1)
    # fsum is correctly rounded: one rounding of the exact sum
    slack = np.finfo(float).eps * math.fsum(np.abs(lowest))
    return math.nextafter(math.fsum(lowest) - slack, -math.inf)


@dataclass
class OutputColumnGeneration:
    """Outcome of :func:`column_generation_by_output`.

    ``method`` names the algorithm; ``columns`` counts its columns (the outputs, for the restricted output LP).
    ``matrix`` (k, m) is the master's solution ``M[:, y] = sum_{j owned by y} w_j v_j`` (rows sum to 1 up to
    the master's tolerance); ``objective`` its cost; ``lower_bound`` the proven bound; ``stopped`` is
    ``"gap"``, ``"priced out"``, ``"rounds"``, ``"pricing failed"`` (only unsolved pricing LPs left to retry),
    ``"failed"`` (the restricted output LP's solvers both failed) or ``"time"``; ``history`` one entry per round. A
    restricted output LP stopped by the budget before its first answer has ``objective = inf`` and a zero ``matrix``.
    """

    matrix: np.ndarray
    objective: float
    lower_bound: float
    rounds: int
    columns: int
    pricing_lps: int
    seconds: float
    stopped: str
    history: list = field(default_factory=list)
    method: str = "column generation by output"


class _Master:
    """``min sum_j c_j w_j  s.t.  sum_j w_j v_j = 1, w >= 0`` in HiGHS, columns added in place (warm restarts).

    A master of at least :data:`INTERIOR_CELLS` entries (columns times k) goes to the dense interior-point method
    instead (:mod:`solvers.dense_ipm`): HiGHS's simplex took 37 s on the 2,001 start columns of the 1,000-node random
    geometric graph and 123 s for one re-solve of about 5,000 columns, where the interior-point method takes 3.4 s
    to 17 s (2,001 to 13,628 columns).
    Its answer is the dual objective (within about 1e-9 of the optimum, relative), its multipliers and its interior
    weights, whose rows meet 1 to about 1e-9 (the design's repair scales the columns to exact row sums).
    """

    def __init__(self, k: int):
        self.k = k
        self.highs = silent_highs()
        self.highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
        self.highs.addRows(k, np.ones(k), np.ones(k), 0, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32),
                           np.zeros(0))
        self.columns = np.zeros((0, k))
        self.owners = np.zeros(0, dtype=np.int64)
        self.costs = np.zeros(0)
        self.answer: tuple[float, np.ndarray, np.ndarray] | None = None  # the last optimal (objective, duals, weights)

    def add(self, columns: np.ndarray, owners: np.ndarray, costs: np.ndarray) -> None:
        self.columns = np.vstack([self.columns, columns])
        self.owners = np.concatenate([self.owners, owners])
        self.costs = np.concatenate([self.costs, np.ravel(costs)])
        if self._interior_sized():  # the interior-point method's from now on: HiGHS needs them no more
            return
        n = columns.shape[0]
        nonzero = columns != 0
        starts = np.concatenate([[0], np.cumsum(nonzero.sum(axis=1))[:-1]]).astype(np.int32)
        indices = np.nonzero(nonzero)[1].astype(np.int32)
        self.highs.addCols(n, costs, np.zeros(n), np.full(n, highspy.kHighsInf), int(nonzero.sum()), starts, indices,
                           columns[nonzero])

    def solve(self, deadline: float | None = None,
              first_by_deadline: bool = False) -> tuple[float, np.ndarray, np.ndarray, bool]:
        """``(objective, duals, weights, finished)``: warm-started simplex; on any other status than optimal or the
        time limit, run again other ways (:func:`solvers.highs_retry.run_until`: from scratch, without presolve, by
        the interior point, by the primal simplex), every run under the same time limit.

        The master can only be feasible and bounded (the constant column serves every row), so another
        status is numerical: the random geometric graph's dense columns (entries over 8 decades) once
        ended a warm start "Infeasible". A ``deadline`` (a ``time.perf_counter()`` value) stops a solve still
        running then, once the master has an answer: that earlier answer is returned, its weights padded with
        zeros for the columns added since (still feasible), with ``finished`` False. On the 1,000-node random
        geometric graph one re-solve took 123 s. The first solve ignores the deadline unless ``first_by_deadline``;
        then a first solve stopped by it raises :class:`LinearProgramError`.
        """
        unbounded = deadline is None or (self.answer is None and not first_by_deadline)
        budget = math.inf if unbounded else max(deadline - time.perf_counter(), 0.0)
        if budget == 0 and self.answer is None:  # a limit at HiGHS's clock did not stop a first solve (measured)
            raise LinearProgramError("master LP not solved within the time budget")
        if self._interior_sized():
            return self._interior(time.perf_counter() + budget)
        self.highs.setOptionValue("time_limit", self.highs.getRunTime() + budget if math.isfinite(budget)
                                  else highspy.kHighsInf)
        status = run_until(self.highs, [highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit])
        if status == highspy.HighsModelStatus.kTimeLimit:
            if self.answer is None:
                raise LinearProgramError("master LP not solved within the time budget")
            return (*self.latest(), False)
        if status != highspy.HighsModelStatus.kOptimal:
            raise LinearProgramError(f"master LP not solved: {self.highs.modelStatusToString(status)}")
        solution = self.highs.getSolution()
        weights = np.maximum(np.asarray(solution.col_value, dtype=float), 0.0)
        self.answer = (self.highs.getInfo().objective_function_value, np.asarray(solution.row_dual, dtype=float), weights)
        return (*self.answer, True)

    def _interior_sized(self) -> bool:
        """Whether the master has :data:`INTERIOR_CELLS` entries or more (the interior-point method's)."""
        return self.columns.size >= INTERIOR_CELLS

    def _interior(self, deadline: float) -> tuple[float, np.ndarray, np.ndarray, bool]:
        """The dense interior-point method's answer (class docstring)."""
        result = dense_interior_point(self.columns.T, np.ones(self.k), self.costs, deadline)
        if result.status == "time":
            if self.answer is None:
                raise LinearProgramError("master LP not solved within the time budget")
            return (*self.latest(), False)
        self.answer = (result.dual_objective, result.duals, result.weights)
        return (*self.answer, True)

    def latest(self) -> tuple[float, np.ndarray, np.ndarray]:
        """The last optimal ``(objective, duals, weights)``, the weights padded with zeros for the columns added since."""
        objective, duals, weights = self.answer
        return objective, duals, np.concatenate([weights, np.zeros(self.columns.shape[0] - weights.size)])


class _Pricing:
    """``min w . v`` over ``{A v >= 0, v >= 0, 1 . v = 1}`` (HiGHS simplex, warm-started between outputs).

    The vertex is recomputed from its basis: the pair rows that are not basic hold with equality, and on a
    connected cone (every vertex has full support) they span the inputs, so ``log v`` follows along a
    spanning tree of them with every entry to rounding, where the solver's values carry its absolute
    tolerance (an entry ``e^{-39}`` on a 40 x 40 grid would be noise). When they do not span, or the result
    misses a constraint by more than rounding, the solver's values are kept.
    """

    def __init__(self, k: int, pairs, ratios):
        self.pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        self.log_ratios = np.log(np.asarray(ratios, dtype=float))
        self.n, self.k = self.pairs.shape[0], k
        self.highs = silent_highs()
        self.highs.setOptionValue("solver", "simplex")
        self.highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
        self.highs.passModel(slice_model(pair_matrix(k, pairs, ratios), np.ones(k)))
        self.indices = np.arange(k, dtype=np.int32)

    def solve(self, direction: np.ndarray) -> tuple[float, np.ndarray, np.ndarray] | None:
        """``(rho, vertex, pair duals >= 0)``, or None when the LP stays unsolved.

        A failed warm start is run again other ways (:func:`solvers.highs_retry.run_until`: from scratch, without
        presolve, by interior point with crossover, by the primal simplex; the 1,000-node graph's slice once ended a
        warm start in "Solve error"), the options put back so that the next output warm-starts by simplex. None
        leaves the output's multipliers as they were (still valid for the bound) and adds no column.
        """
        self.highs.changeColsCost(self.k, self.indices, direction)
        if run_until(self.highs, [highspy.HighsModelStatus.kOptimal]) != highspy.HighsModelStatus.kOptimal:
            self.highs.clearSolver()
            return None
        solution = self.highs.getSolution()
        vertex = self._vertex_from_basis()
        if vertex is None:
            vertex = self._raised_into_cone(np.asarray(solution.col_value, dtype=float))
        duals = np.maximum(np.asarray(solution.row_dual, dtype=float)[: self.n], 0.0)
        return self.highs.getInfo().objective_function_value, vertex, duals

    def _raised_into_cone(self, values: np.ndarray) -> np.ndarray:
        """The smallest point of K above the solver's values, normalised: ``log v_b = max_a (log values_a - D[a, b])``.

        ``D`` is the shortest-path distance over the pairs (an arc ``a -> b`` of length ``log r_p`` for the
        constraint ``v_a <= r_p v_b``), computed by Dijkstra from a super-source joined to every input ``a`` by an
        arc of length ``C - log values_a`` (non-negative for ``C`` above the largest log). Entries the solver left
        at its tolerance (``e^{-39}`` on a 40 x 40 grid lands anywhere in ``[0, 1e-10]``) are raised onto the
        cone, so the column the master receives is a point of K to rounding, as the repair downstream assumes.
        """
        from scipy.sparse.csgraph import dijkstra

        positive = values > 0
        logs = np.log(values[positive])
        top = logs.max() + 1.0
        sources = np.flatnonzero(positive)
        arcs = sparse.csr_matrix(
            (np.concatenate([self.log_ratios, top - logs]),
             (np.concatenate([self.pairs[:, 0], np.full(sources.size, self.k)]),
              np.concatenate([self.pairs[:, 1], sources]))),
            shape=(self.k + 1, self.k + 1))
        raised = top - dijkstra(arcs, indices=self.k)[: self.k]
        vertex = np.exp(raised - raised.max())
        return vertex / vertex.sum()

    def _vertex_from_basis(self) -> np.ndarray | None:
        from scipy.sparse.csgraph import breadth_first_order

        _, basic = self.highs.getBasicVariables()
        basic = np.asarray(basic)
        tight = np.ones(self.n + 1, dtype=bool)
        tight[-basic[basic < 0] - 1] = False
        rows = np.flatnonzero(tight[: self.n])
        pairs, levels = self.pairs[rows], self.log_ratios[rows]
        # log v_a - log v_b = level on a tight row (a, b); both directions stored, keyed by (from, to)
        graph = sparse.csr_matrix((np.ones(2 * rows.size), (np.concatenate([pairs[:, 0], pairs[:, 1]]),
                                                            np.concatenate([pairs[:, 1], pairs[:, 0]]))),
                                  shape=(self.k, self.k))
        order, parent = breadth_first_order(graph, 0, directed=True, return_predecessors=True)
        if order.size < self.k:
            return None
        step = dict(zip(zip(pairs[:, 1].tolist(), pairs[:, 0].tolist()), levels.tolist()))  # to a from b: +level
        step.update(zip(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()), (-levels).tolist()))  # to b from a: -level
        logs = np.zeros(self.k)
        for child, source in zip(order[1:].tolist(), parent[order[1:]].tolist()):
            logs[child] = logs[source] + step[(source, child)]
        excess = logs[self.pairs[:, 0]] - logs[self.pairs[:, 1]] - self.log_ratios
        if np.any(excess > 1e-12 * (1.0 + np.abs(logs).max())):
            return None
        vertex = np.exp(logs - logs.max())
        return vertex / vertex.sum()


def column_generation_by_output(
    cost,
    pairs,
    ratios,
    initial_columns,
    initial_owners,
    gap_tolerance: float = 1e-7,
    max_seconds: float = 600.0,
    progress: Callable[[float, float, float], None] | None = None,
    bound_ratios=None,
    threads: int = 1,
    max_rounds: int | None = None,
    centre=None,
    first_by_deadline: bool = False,
) -> OutputColumnGeneration:
    """Column generation by output for the ratio-constrained stochastic LP (module docstring).

    Parameters
    ----------
    cost : array_like (k, m)
    pairs, ratios : array_like (n, 2), (n,)
        The cone ``K``.
    initial_columns : array_like (j, k)
        Points of ``K`` (any positive scale) whose non-negative combinations can make every row sum 1
        (e.g. the constant vector among them).
    initial_owners : array_like (j,) of int
        The output each initial column serves.
    gap_tolerance : float
        Stop when ``(objective - lower_bound) <= gap_tolerance * |objective|``.
    max_seconds : float
        Wall-clock budget, checked after every pricing LP.
    progress : callable, optional
        ``progress(lower_bound, objective, seconds)`` after every pricing of the outputs (two a round).
    bound_ratios : array_like (n,), optional
        Ratios for :func:`lagrangian_lower_bound` (default ``ratios``): pass them rounded up when the
        ratios are floats of an exact cone.
    threads : int
        Pricing LPs solved at once, each thread on its own HiGHS model and its own share of the
        outputs (HiGHS releases the GIL while it solves). The bound's validity does not depend on the
        count; the vertices found may (through the warm starts), and so may the number of rounds.
    max_rounds : int, optional
        Stop after this many rounds (``stopped="rounds"``): a master that tails off (one new column per
        output and round while an output's column needs many vertices) is better finished by
        :func:`restricted_output_lp` over the outputs it uses.
    centre : array_like (k,), optional
        The first stability centre (default ``u = 0``, where round 1 prices every output a second time): row
        multipliers from elsewhere, e.g. a first-order method's. Every output is then priced there before the
        first master solve (history round 0), and the vertices found join the start columns: on a 350-node
        random geometric graph after 60 s of PDLP the first master gave 0.191857 with them and 0.217645
        without (benchmarks/RESULTS.md).
    first_by_deadline : bool
        Hold the first master solve to the budget too (by default it always finishes, so that there is an
        answer): when it cannot, :class:`LinearProgramError` is raised, for a caller that has another answer.
    """
    start = time.perf_counter()
    cost = np.asarray(cost, dtype=float)
    k, m = cost.shape
    bound_ratios = ratios if bound_ratios is None else bound_ratios
    columns = np.asarray(initial_columns, dtype=float)
    columns = columns / columns.sum(axis=1, keepdims=True)
    owners = np.asarray(initial_owners, dtype=np.int64)
    # the LPs see costs scaled to at most 1 (the master stopped at "Unknown" on prior x loss ~1e-4); objective and
    # multipliers are scaled back, the bound uses the true costs
    scale = cost_scale(cost)
    scaled = scale * cost
    master = _Master(k)
    master.add(columns, owners, np.einsum("jx,xj->j", columns, scaled[:, owners]))
    pricing = [_Pricing(k, pairs, ratios) for _ in range(max(1, int(threads)))]
    pair_duals = np.zeros((len(ratios), m))
    lower, rounds, lps, history, stopped = -math.inf, 0, 0, [], "time"
    executor = ThreadPoolExecutor(len(pricing)) if len(pricing) > 1 else None
    vertices = np.unique(columns, axis=0)  # every point of K found so far, offered to every output
    shares_of_tour = np.array_split(output_tour(scaled), len(pricing))  # each worker warm-starts along its stretch
    # the stability centre: the multipliers of the best bound so far
    best = np.zeros(k) if centre is None else np.asarray(centre, dtype=float)

    def price(worker: int, at: np.ndarray, u: np.ndarray) -> list:
        """Price this worker's stretch of the tour of outputs at ``at`` until done or out of time; each
        ``(output, reduced cost at u, vertex)``."""
        found = []
        for y in shares_of_tour[worker].tolist():
            if time.perf_counter() - start > max_seconds:
                break
            solved = pricing[worker].solve(scaled[:, y] - scale * at)
            if solved is None:  # counted as priced, never as priced out
                found.append((y, -math.inf, None))
                continue
            rho, vertex, duals = solved
            pair_duals[:, y] = duals / scale
            found.append((y, rho + scale * float((at - u) @ vertex), vertex))
        return found

    def price_all(at: np.ndarray, u: np.ndarray) -> list:
        """Every output priced at ``at`` (one share of the tour per worker), in output order."""
        shares = (list(executor.map(price, range(len(pricing)), repeat(at), repeat(u)))
                  if executor is not None else [price(0, at, u)])
        return sorted((item for share in shares for item in share), key=lambda item: item[0])

    def join(new_owners: list, new_columns: list) -> None:
        """New columns into the master, and their points into those offered to every output."""
        nonlocal vertices
        new_owners, new_columns = np.array(new_owners), np.vstack(new_columns)
        master.add(new_columns, new_owners, np.einsum("jx,xj->j", new_columns, scaled[:, new_owners]))
        vertices = np.vstack([vertices, new_columns])

    centre_given = centre is not None
    if centre_given:  # the outputs priced at the given centre join the first master (module docstring)
        priced = price_all(best, best)
        lps += len(priced)
        lower = lagrangian_lower_bound(cost, pairs, bound_ratios, pair_duals)
        found = {np.round(vertex, 12).tobytes(): (y, vertex) for y, _, vertex in priced if vertex is not None}
        if found:
            join([y for y, _ in found.values()], [vertex for _, vertex in found.values()])
        history.append({"round": 0, "lower_bound": lower, "new_columns": len(found), "smoothing": 1.0,
                        "seconds": round(time.perf_counter() - start, 3)})
    while True:
        rounds += 1
        objective, u, _, finished = master.solve(start + max_seconds, first_by_deadline)
        if not finished:  # out of time in the master: its earlier answer stands
            break
        objective, u, from_vertices = _priced_from_vertices(master, vertices, scaled, objective, u, start + max_seconds,
                                                            gap_tolerance)
        threshold = -PRICING_TOLERANCE * max(abs(objective), 1e-300) / k
        objective, u = objective / scale, u / scale
        # each round prices at the master's multipliers, then (unless that ends the run) near the stability centre
        # (module docstring): at u = 0 in round 1, later at SMOOTHING * best + (1 - SMOOTHING) * u
        joining, ended, centre = {}, False, best  # (output, vertex) -> vertex; the centre as the round began
        for smoothing in (0.0, 1.0 if rounds == 1 and not centre_given else SMOOTHING):
            at = smoothing * centre + (1.0 - smoothing) * u
            priced = price_all(at, u)
            lps += len(priced)
            out_of_time = len(priced) < m
            unsolved = sum(vertex is None for _, _, vertex in priced)
            priced_out = 0
            for y, reduced, vertex in priced:
                if reduced < threshold and vertex is not None:
                    priced_out += 1
                    joining[(y, np.round(vertex, 12).tobytes())] = vertex
            bound = lagrangian_lower_bound(cost, pairs, bound_ratios, pair_duals)
            if bound > lower:
                lower, best = bound, at
            if _closed(history, progress, start, lower, objective, gap_tolerance, round=rounds, new_columns=priced_out,
                       reused_columns=from_vertices, smoothing=smoothing):
                stopped, ended = "gap", True
            elif smoothing == 0.0 and not priced_out and not out_of_time and not unsolved:
                stopped, ended = "priced out", True
            elif smoothing == 0.0 and not priced_out and unsolved:  # nothing to add, and the unsolved LPs would fail again
                stopped, ended = "pricing failed", True
            if ended or out_of_time:
                break
        if ended or out_of_time:
            break
        if max_rounds is not None and rounds >= max_rounds:
            stopped = "rounds"
            break
        join([y for y, _ in joining], list(joining.values()))
    if executor is not None:
        executor.shutdown()
    objective, _, weights = master.latest()
    objective /= scale
    weights = _polished(master.columns, weights)
    channel = np.zeros((k, m))
    used = weights > 0
    np.add.at(channel.T, master.owners[used], master.columns[used] * weights[used, None])
    return OutputColumnGeneration(
        matrix=channel, objective=float(objective), lower_bound=float(lower), rounds=rounds,
        columns=int(master.columns.shape[0]), pricing_lps=lps, seconds=time.perf_counter() - start, stopped=stopped,
        history=history,
    )


def output_tour(cost: np.ndarray) -> np.ndarray:
    """The outputs in a greedy nearest-neighbour tour of their cost columns (Euclidean), from the cheapest column.

    Pricing LPs solved in this order warm-start from a neighbour's optimum. On the 1,000-node random
    geometric graph priced at ``u = 0`` an LP took 109 simplex iterations in this order against 978 in index
    order (0.033 s against 0.21 s); near the master's multipliers both need about 30. Costs O(m^2 k)
    flops (one Gram matrix) and m^2 doubles.
    """
    cost = np.asarray(cost, dtype=float)
    squares = np.einsum("xy,xy->y", cost, cost)
    distances = squares[:, None] + squares[None, :] - 2.0 * (cost.T @ cost)
    m = cost.shape[1]
    tour = np.empty(m, dtype=np.int64)
    tour[0] = int(np.argmin(cost.sum(axis=0)))
    distances[:, tour[0]] = np.inf
    for step in range(1, m):
        tour[step] = int(np.argmin(distances[tour[step - 1]]))
        distances[:, tour[step]] = np.inf
    return tour


def _priced_from_vertices(master: _Master, vertices: np.ndarray, scaled: np.ndarray, objective: float, u: np.ndarray,
                          deadline: float, gap_tolerance: float) -> tuple[float, np.ndarray, int]:
    """Columns ``(y, v)`` for the points ``v`` found so far, the best per output, until the master stalls.

    A point of K found for one output is a column for every output: its reduced cost
    ``(cost[:, y] - u) . v`` for all outputs and points is one matrix product, where a pricing LP per output
    costs a solve. Up to :data:`VERTEX_PASSES` passes, each adding every output's best point whose reduced cost
    is below the pricing threshold and re-solving the master; :data:`VERTEX_IDLE` passes in a row that lower the
    master by less than ``VERTEX_STALL * gap_tolerance`` (relative) end it (degenerate pivots). Returns the master's
    ``(objective, u)`` (scaled, as ``scaled``) and the number of columns added.
    """
    k, m = scaled.shape
    added = idle = 0
    chunk = max(1, VERTEX_CELLS // max(vertices.shape[0], 1))
    for _ in range(VERTEX_PASSES):
        if time.perf_counter() > deadline:
            break
        threshold = -PRICING_TOLERANCE * max(abs(objective), 1e-300) / k
        offsets = vertices @ u
        best, where = np.empty(m), np.empty(m, dtype=np.int64)
        for first in range(0, m, chunk):  # (outputs x points) reduced costs, a chunk of outputs at a time
            reduced = scaled[:, first:first + chunk].T @ vertices.T - offsets[None, :]
            where[first:first + chunk] = np.argmin(reduced, axis=1)
            best[first:first + chunk] = reduced[np.arange(reduced.shape[0]), where[first:first + chunk]]
        owners = np.flatnonzero(best < threshold)
        if owners.size == 0:
            break
        chosen = vertices[where[owners]]
        master.add(chosen, owners, np.einsum("jx,xj->j", chosen, scaled[:, owners]))
        added += owners.size
        before = objective
        objective, u, _, finished = master.solve(deadline)
        if not finished:
            break
        idle = idle + 1 if before - objective <= VERTEX_STALL * gap_tolerance * abs(before) else 0
        if idle == VERTEX_IDLE:
            break
    return objective, u, added


def restricted_output_lp(
    cost,
    pairs,
    ratios,
    outputs,
    lower_bound: float = -math.inf,
    gap_tolerance: float = 1e-7,
    max_seconds: float = 600.0,
    progress: Callable[[float, float, float], None] | None = None,
    bound_ratios=None,
    solve: Callable[[np.ndarray, np.ndarray, np.ndarray, float], StochasticLPResult | None] | None = None,
) -> OutputColumnGeneration:
    """The LP over a restricted set of outputs, grown by reduced cost (module docstring's pricing LP).

    The LP over the outputs in the set (every column of the set with all its pair constraints) is solved by
    ``solve(cost, pairs, ratios, seconds)``, which returns a :class:`solvers.linear.StochasticLPResult` or None
    when ``seconds`` ran out (default :func:`solve_outputs_directly`: the direct LP by Clarabel, then HiGHS); its
    row duals price every other output; outputs with a negative ``rho_y`` join the set. The bound combines the
    LP's pair multipliers (outputs in the set) with the pricing LPs' (the others). Efficient when the optimum
    uses few outputs (a small epsilon: on an 8 x 8 grid at epsilon 0.1 it uses 4 of 64), where column generation
    by output needs one round per vertex of an output's column. ``lower_bound`` is a bound already proven.
    """
    start = time.perf_counter()
    cost = np.asarray(cost, dtype=float)
    k, m = cost.shape
    bound_ratios = ratios if bound_ratios is None else bound_ratios
    solve = solve_outputs_directly if solve is None else solve
    pricing = _Pricing(k, pairs, ratios)
    scale = cost_scale(cost)  # as in column_generation_by_output
    pair_duals = np.zeros((len(ratios), m))
    chosen = np.unique(np.asarray(outputs, dtype=np.int64))
    tour = output_tour(scale * cost)  # the order the other outputs are priced in (warm starts)
    lower, rounds, lps, history, stopped = lower_bound, 0, 0, [], "time"
    solution, objective = None, math.inf
    while True:
        # within what is left of the budget; a solve stopped by it leaves the previous answer
        solved_set = solve(cost[:, chosen], pairs, ratios, max_seconds - (time.perf_counter() - start))
        if solved_set is None:
            stopped = "time" if time.perf_counter() - start > max_seconds else "failed"
            break
        rounds += 1
        solution, outputs_solved = solved_set, chosen
        pair_duals[:, chosen] = solution.pair_duals
        objective = solution.objective
        threshold = -PRICING_TOLERANCE * max(abs(scale * objective), 1e-300) / k
        joining = []
        for y in tour[~np.isin(tour, chosen)].tolist():
            if time.perf_counter() - start > max_seconds:
                break
            solved = pricing.solve(scale * (cost[:, y] - solution.row_duals))
            lps += 1
            if solved is not None:
                pair_duals[:, y] = solved[2] / scale
                if solved[0] < threshold:
                    joining.append(y)
        lower = max(lower, lagrangian_lower_bound(cost, pairs, bound_ratios, pair_duals))
        if _closed(history, progress, start, lower, objective, gap_tolerance, outputs=int(chosen.size),
                   solver=solution.status):
            stopped = "gap"
            break
        if time.perf_counter() - start > max_seconds:
            break
        if not joining:
            stopped = "priced out"
            break
        chosen = np.union1d(chosen, joining)
    channel = np.zeros((k, m))
    if solution is not None:
        channel[:, outputs_solved] = solution.matrix
    return OutputColumnGeneration(
        matrix=channel, objective=float(objective), lower_bound=float(lower), rounds=rounds, columns=int(chosen.size),
        pricing_lps=lps, seconds=time.perf_counter() - start, stopped=stopped, history=history,
        method="restricted output LP",
    )


def solve_outputs_directly(cost: np.ndarray, pairs: np.ndarray, ratios: np.ndarray,
                           seconds: float) -> StochasticLPResult | None:
    """The direct LP over ``cost``'s outputs by Clarabel, else HiGHS, within ``seconds``; None when neither solved
    it (:func:`restricted_output_lp`'s default ``solve``)."""
    return solve_ratio_bounded_stochastic_lp_by_either(cost, pairs, ratios, seconds=seconds)[0]


def _closed(history: list, progress, start: float, lower: float, objective: float, gap_tolerance: float,
            **counts) -> bool:
    """Record a round (and report it to ``progress``); whether its bound is within the gap of its objective."""
    history.append({"round": len(history) + 1, "objective": objective, "lower_bound": lower, **counts,
                    "seconds": round(time.perf_counter() - start, 3)})
    if progress is not None:
        progress(lower, objective, time.perf_counter() - start)
    return objective - lower <= gap_tolerance * abs(objective)


def _polished(columns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The master's weights re-solved on their support by least squares, kept when non-negative and closer to row sums of 1.

    The simplex meets the rows to its tolerance (3.6e-9 measured on a 20 x 20 grid); dividing the rows of
    the channel by their sums would then move its log-ratios by as much, more than the certifier's 1e-9. An
    interior-point answer (more weights than rows) is returned as it is: on its support the least-squares solution
    of least norm is another point of the optimal face, or none (a 3 x 4 grid's cost 10% above the optimum).
    """
    support = np.flatnonzero(weights > 0)
    if support.size > columns.shape[1]:  # an interior-point answer: least squares would pick another point of its face
        return weights
    basis = columns[support].T
    solved, *_ = np.linalg.lstsq(basis, np.ones(basis.shape[0]), rcond=None)
    if solved.min() < -POLISH_NEGATIVE * solved.max():
        return weights
    solved = np.maximum(solved, 0.0)  # rounding-level negatives of an ill-conditioned support
    if np.abs(basis @ solved - 1).max() >= np.abs(basis @ weights[support] - 1).max():
        return weights
    polished = np.zeros_like(weights)
    polished[support] = solved
    return polished
