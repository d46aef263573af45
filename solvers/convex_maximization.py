"""Certified upper bounds on the maximum of a separable convex function over a polytope.

Problem
-------
    maximise  f(q) = sum_x w_x phi(q_x) + c . q
    over      P = { q : A q >= 0, q >= 0, n . q = 1 }                      (CM)

with phi convex on [0, inf) (here ``t log t``), weights ``w >= 0``. Maximising a
convex function is NP-hard in general; its maximum is attained at a vertex of P.

Method: spatial branch and bound with the concave envelope of each term on a box
(Falk and Soland, Management Science 1969; Horst and Tuy, *Global Optimization*,
1996, Ch. VII). On a box ``l <= q <= u`` the secant
``s_x(t) = phi(l_x) + (phi(u_x) - phi(l_x)) (t - l_x) / (u_x - l_x)`` lies above phi
on ``[l_x, u_x]`` (convexity), so the LP ``max sum_x w_x s_x(q_x) + c . q`` over
``P ∩ box`` is an upper bound of f on the node, and its solution is a feasible
point whose true value f is a lower bound. A node is bisected on the coordinate
whose secant overestimates most at its LP solution; the envelope is exact at
box corners, so the bounds converge. The answer (``upper``, ``best``) brackets
the maximum at every moment: ``best <= max f <= upper``.

Bound tightening (domain propagation; Horst and Tuy, Ch. VII; Belotti et al., Optim. Methods
Softw. 2009, Sec. 5): when P implies ratio bounds ``q_x <= R[x, x'] q_x'``, every point of
``P ∩ box`` also satisfies ``q_x <= min_x' R[x, x'] u_x'``, ``q_x >= max_x' l_x' / R[x', x]`` and,
from ``n . q = 1`` with ``n > 0``, ``n_x q_x <= 1 - sum_{x' != x} n_x' l_x'`` and
``n_x q_x >= 1 - sum_{x' != x} n_x' u_x'``. Shrinking a node's box to these bounds removes no
point of P, and the secants over the smaller box are tighter. The given R is typically
``exp`` of a floating-point shortest-path closure, which can fall below the ratio P implies (the
product of the rows' float coefficients along a path) by a few ulps (measured: 20 of 252 pairs at
k = 7, by up to 3e-16 relative); a path of at most d - 1 rows with level sum ``L = log R`` errs by
less than ``(L + 3)(d + 2)`` machine epsilons (the sum's, the ``exp``'s and each coefficient's
rounding), so R is widened by that factor before use.

API
---
``SeparableConvexMax(inequalities, normaliser, weights, ratios=None, scale=None, scale_width=0.001, threads=1)`` then
``.run(linear, lower, upper, phi, tolerance, max_seconds, resume=None) -> ConvexMaxResult``;
``.coordinate_range()`` gives the initial box (``min``/``max q_x`` over P by LPs). With ``scale = x0``,
nodes are bisected on coordinate x0 while its box spans more than a factor ``1 + scale_width``
(and the node's secants are not exact), then as above; :mod:`solvers.argmin_split` uses it on the
pieces where x0 is the smallest coordinate.

Empty nodes are proven empty, not trusted. A box is dropped without a bound only when the
propagation above, widened by its rounding, shows it misses P. When HiGHS declares a node LP
infeasible, that verdict is not used: the node is bounded by the *elastic* LP

    max cost . q - M (1 . s + t+ + t-)   s.t.  A q + s >= 0,  n . q + t+ - t- = 1,  l <= q <= u,  s, t >= 0,

which is always feasible. Its row duals are not trusted either: they are passed to the same
weak-duality bound (:meth:`SeparableConvexMax.dual_bound`, valid for *any* multipliers), so the
bound holds for every point of ``P ∩ box`` whatever the solver did; for a box that truly misses P it
is about ``-M`` times the box's distance from P, and the node is then discarded with that bound
recorded like any other (or stays open when it is not below the incumbent). Its LP point need not
lie in P, so it is never an incumbent. Only the root raises when its LP is infeasible (an error, not a bound).

Upper bound and resumption: the root box is partitioned into the leaves of the tree; every leaf is
open (on the heap, with the LP bound of its box), discarded with its bound recorded (it could not
beat the incumbent by more than the tolerance), or empty (propagation proves its box misses P). Hence
``max f <= max(open bounds, largest discarded bound)`` at every moment, and ``upper`` is exactly
that (no tolerance is added). A later call with the same ``linear`` continues from the open leaves
and the recorded bound of a previous result (``resume``), so a search split over several calls
proves the same bound as one call of the same total length.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import highspy
import numpy as np
from scipy import sparse

from solvers.column_generation import slice_model
from solvers.highs_retry import run_until
from solvers.linear import LinearProgramError
from solvers.quiet import silent_highs


@dataclass(frozen=True)
class ConvexMaxResult:
    """``best`` = f(``point``) (a feasible lower bound) and ``upper`` (a proven upper bound) of (CM).

    ``open_nodes`` (the heap of open leaves), ``discarded`` (the largest bound of a discarded leaf)
    and ``linear`` let a later :meth:`SeparableConvexMax.run` resume the search. ``infeasible``: node
    LPs that HiGHS declared infeasible in this call (each bounded by the elastic LP instead).
    """

    best: float
    point: np.ndarray
    upper: float
    nodes: int
    points: list
    seconds: float
    finished: bool
    linear: np.ndarray | None = None
    open_nodes: list = field(default_factory=list)
    discarded: float = -np.inf
    infeasible: int = 0


#: Relative margin added to every computed bound (covers the rounding of its floating-point sums).
ROUNDING = 1e-12
#: Penalty of the elastic LP's slacks, times ``1 + max |cost|`` (any value gives a valid bound; a
#: larger one a lower bound on boxes that miss P).
ELASTIC_PENALTY = 1e6
#: Open nodes keep their LP basis (a warm start for their children) while the heap is smaller than this.
BASIS_NODES = 100_000
#: With ``threads = t > 1``, the ``t * NODES_PER_THREAD`` best open leaves are split at once, each thread
#: taking every t-th of them (k = 50, 2 free cores: 1.19x the nodes per second of one thread with 1 leaf
#: per thread, 1.42x with 4, 1.41x with 8; the same bound after equal node counts; benchmarks/RESULTS.md).
NODES_PER_THREAD = 4


def _widened(ratios: np.ndarray, dimension: int) -> np.ndarray:
    """Ratio bounds raised by ``(log R + 3)(d + 2)`` machine epsilons (module docstring); inf stays inf."""
    with np.errstate(divide="ignore"):
        levels = np.log(np.maximum(ratios, 1.0))
    return ratios * (1.0 + (levels + 3.0) * (dimension + 2) * np.finfo(float).eps)


def _maximiser(lp):
    """A quiet HiGHS instance maximising over ``lp`` with tight feasibility tolerances (1e-10).

    Primal simplex (``simplex_strategy`` 4): a node LP changes the box and the secant costs from its
    parent's warm basis, and primal simplex ran 1.6x the nodes per second of the default dual simplex
    at k = 50 with the same bound after equal node counts (benchmarks/RESULTS.md). The proven bound
    rests on :meth:`SeparableConvexMax.dual_bound`, not on the solver's choice.
    """
    highs = silent_highs()
    highs.setOptionValue("simplex_strategy", 4)
    highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
    highs.setOptionValue("dual_feasibility_tolerance", 1e-10)
    highs.passModel(lp)
    highs.changeObjectiveSense(highspy.ObjSense.kMaximize)
    return highs


class SeparableConvexMax:
    """The polytope of (CM) as a warm-started HiGHS model (rows dense or scipy sparse); see the module docstring."""

    def __init__(self, inequalities, normaliser, weights, ratios=None, scale: int | None = None, scale_width: float = 0.001,
                 threads: int = 1):
        a = sparse.csr_matrix(inequalities, dtype=float) if sparse.issparse(inequalities) else np.asarray(inequalities, dtype=float)
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads!r}")
        self.scale, self.scale_width, self.threads = scale, scale_width, int(threads)
        self._rows = a
        self._magnitudes = abs(a)  # |A|: the rounding of A^T lambda is bounded by |A|^T |lambda|
        self.ratios = None if ratios is None else _widened(np.asarray(ratios, dtype=float), a.shape[1])
        self.normaliser = np.asarray(normaliser, dtype=float)
        self.weights = np.asarray(weights, dtype=float)
        self.dimension = a.shape[1]
        self._solvers = [_maximiser(slice_model(a, self.normaliser))]  # one per thread, the others built on first use
        self._indices = np.arange(self.dimension, dtype=np.int32)
        self._elastic = [None] * self.threads

    def _solver(self, worker: int):
        """The HiGHS model of thread ``worker`` (a copy of the polytope; HiGHS releases the GIL while it solves)."""
        while len(self._solvers) <= worker:
            self._solvers.append(_maximiser(slice_model(self._rows, self.normaliser)))
        return self._solvers[worker]

    def solve(self, cost, lower, upper, basis=None, worker: int = 0) -> tuple[float, np.ndarray, object, bool]:
        """A proven bound on ``max cost . q`` over P within the box, the LP's point, its basis and whether the LP was feasible.

        ``basis`` (one returned earlier, e.g. the parent node's) warm-starts the simplex: a child box
        differs from its parent in a few bounds (measured at k = 50: 34 simplex iterations per LP
        instead of 81 from the last solved node's basis). When HiGHS declares the LP infeasible, the
        bound comes from the elastic LP of the module docstring (:meth:`elastic_bound`), the point is
        the elastic LP's (not necessarily in P), the basis is None and the flag False. ``worker``: the
        thread's own model (:meth:`run` with ``threads > 1``).
        """
        highs = self._solver(worker)
        highs.changeColsBounds(self.dimension, self._indices, np.asarray(lower, float), np.asarray(upper, float))
        highs.changeColsCost(self.dimension, self._indices, np.asarray(cost, float))
        if basis is not None:
            highs.setBasis(basis)
        # the box is bounded, so any status but these is numerical (a warm start once ended "Unbounded")
        status = run_until(highs, [highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible])
        if status == highspy.HighsModelStatus.kInfeasible:
            return (*self.elastic_bound(cost, lower, upper, worker), None, False)
        if status != highspy.HighsModelStatus.kOptimal:
            raise LinearProgramError(f"bound LP not solved: {highs.modelStatusToString(status)}")
        solution = highs.getSolution()
        q = np.maximum(np.asarray(solution.col_value, dtype=float), 0.0)
        return self.dual_bound(cost, lower, upper, np.asarray(solution.row_dual, dtype=float)), q, highs.getBasis(), True

    def elastic_bound(self, cost, lower, upper, worker: int = 0) -> tuple[float, np.ndarray]:
        """A proven bound on ``max cost . q`` over P within the box from the elastic LP (module docstring), and its point.

        The elastic LP is always feasible; its row duals (one per row of P, the slacks' columns only
        cap them at the penalty) go to :meth:`dual_bound`, which is valid for any multipliers, so
        nothing rests on the solver's infeasibility verdict or its tolerances.
        """
        cost, lower, upper = np.asarray(cost, dtype=float), np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        if np.any(lower > upper):  # the box itself is empty
            return -np.inf, lower.copy()
        if self._elastic[worker] is None:
            self._elastic[worker] = self._elastic_model()
        highs = self._elastic[worker]
        rows, d = self._rows.shape[0], self.dimension
        penalty = ELASTIC_PENALTY * (1.0 + float(np.max(np.abs(cost), initial=0.0)))
        highs.changeColsBounds(d, self._indices, lower, upper)
        highs.changeColsCost(d + rows + 2, np.arange(d + rows + 2, dtype=np.int32),
                             np.concatenate([cost, np.full(rows + 2, -penalty)]))
        status = run_until(highs, [highspy.HighsModelStatus.kOptimal])
        if status != highspy.HighsModelStatus.kOptimal:
            raise LinearProgramError(f"elastic bound LP not solved: {highs.modelStatusToString(status)}")
        solution = highs.getSolution()
        q = np.maximum(np.asarray(solution.col_value[:d], dtype=float), 0.0)
        return self.dual_bound(cost, lower, upper, np.asarray(solution.row_dual, dtype=float)), q

    def _elastic_model(self):
        """HiGHS holding ``A q + s >= 0``, ``n . q + t+ - t- = 1`` over columns ``(q, s, t+, t-)``, maximising."""
        rows = self._rows.shape[0]
        inequalities = sparse.hstack([sparse.csr_matrix(self._rows), sparse.identity(rows), sparse.csr_matrix((rows, 2))])
        return _maximiser(slice_model(inequalities, np.concatenate([self.normaliser, np.zeros(rows), [1.0, -1.0]])))

    def dual_bound(self, cost, lower, upper, row_duals) -> float:
        """A bound on ``max cost . q`` over P within the box that holds whatever the solver's tolerances.

        Weak duality (Neumaier and Shcherbina, Math. Program. 2004): for any ``lambda <= 0`` and
        ``mu``, every q of P in the box has ``cost . q = r . q + lambda . A q + mu n . q <= r . q + mu``
        with ``r = cost - A^T lambda - mu n``, so ``cost . q <= sum_x max(r_x l_x, r_x u_x) + mu``. The
        solver's row duals (either sign convention; the smaller bound is kept) give lambda and mu, and
        the sum is raised by :data:`ROUNDING` times the sum of the magnitudes of its terms (with
        ``|A|^T |lambda|`` for ``A^T lambda``, whose entries may cancel), which covers the
        floating-point error of the sums.
        """
        cost, lower, upper = np.asarray(cost, float), np.asarray(lower, float), np.asarray(upper, float)
        rows = self._rows.shape[0]
        bounds = []
        for sign in (1.0, -1.0):
            lam = np.minimum(sign * row_duals[:rows], 0.0)
            mu = sign * row_duals[rows]
            reduced = cost - self._rows.T @ lam - mu * self.normaliser
            size = np.maximum(np.abs(lower), np.abs(upper))
            magnitude = (np.abs(cost) + self._magnitudes.T @ np.abs(lam) + abs(mu) * np.abs(self.normaliser)) @ size + abs(mu)
            with np.errstate(invalid="ignore"):  # 0 * inf: a zero reduced cost adds nothing
                terms = np.where(reduced == 0, 0.0, np.maximum(reduced * lower, reduced * upper))
            bounds.append(float(terms.sum() + mu) + ROUNDING * magnitude)
        return min(bounds)

    def tighten(self, lower, upper, sweeps: int = 3) -> tuple[np.ndarray, np.ndarray] | None:
        """The box shrunk by the propagation of the module docstring (None when it misses P)."""
        lo, hi = np.array(lower, dtype=float), np.array(upper, dtype=float)
        n = self.normaliser
        if not (np.all(n > 0) and np.all(np.isfinite(hi))):
            return lo, hi
        finite = None if self.ratios is None else np.isfinite(self.ratios)
        # every derived bound is widened by more than its floating-point error (a product or quotient:
        # relative error <= 2u; a sum of d terms: absolute error <= (d + 2) u times the sum of magnitudes;
        # u = 2^-53, unit = 4u)
        unit = 2.0 * np.finfo(float).eps
        for _ in range(sweeps):
            if finite is not None:
                hi = np.minimum(hi, np.where(finite, self.ratios * hi[None, :], np.inf).min(axis=1) * (1.0 + unit))
                lo = np.maximum(lo, np.where(finite, lo[:, None] / np.where(finite, self.ratios, 1.0), 0.0).max(axis=0) * (1.0 - unit))
            low_mass, high_mass = n @ lo, n @ hi
            error = (n.size + 2) * unit * (1.0 + high_mass) / n
            hi = np.minimum(hi, (1.0 - (low_mass - n * lo)) / n + error)
            lo = np.maximum(lo, (1.0 - (high_mass - n * hi)) / n - error)
            if np.any(lo > hi + 1e-12 * np.maximum(hi, 1.0)):
                return None
        return lo, np.maximum(hi, lo)

    def coordinate_range(self) -> tuple[np.ndarray, np.ndarray]:
        """``min q_x`` and ``max q_x`` over P for every x (2 d LPs)."""
        d = self.dimension
        lower = np.zeros(d)
        # n . q = 1 and q >= 0 give q_x <= 1 / n_x, rounded up so that the box holds all of P
        upper = np.nextafter(1.0 / self.normaliser, np.inf) if np.all(self.normaliser > 0) else np.full(d, highspy.kHighsInf)
        low, high = np.zeros(d), np.zeros(d)
        for x in range(d):
            cost = np.zeros(d)
            cost[x] = 1.0
            high[x] = self.solve(cost, lower, upper)[0]
            low[x] = -self.solve(-cost, lower, upper)[0]
        return np.maximum(low, 0.0), high

    def run(
        self,
        linear,
        lower,
        upper,
        phi: Callable[[np.ndarray], np.ndarray],
        tolerance: float = 1e-9,
        max_seconds: float = 10.0,
        keep_points: float = 0.0,
        max_nodes: int | None = None,
        resume: ConvexMaxResult | None = None,
    ) -> ConvexMaxResult:
        """Branch and bound on (CM) until ``upper - best <= tolerance``, ``max_seconds`` pass or ``max_nodes`` are split.

        ``keep_points``: also return every evaluated point with ``f > keep_points``
        (improving columns for a column-generation master). ``resume``: a previous result of this
        instance for the same ``linear`` (and the same ``lower``, ``upper``, ``phi``); its open leaves,
        incumbent and discarded bound are continued instead of starting from the root box.

        With ``threads = t > 1`` the ``t`` x :data:`NODES_PER_THREAD` best open leaves are taken at once and
        split in t threads, each on its own HiGHS model (HiGHS releases the GIL while it solves); their children enter the heap
        in a fixed order, so a run is deterministic for a given t. Every leaf is still open, discarded
        with its bound or proven empty, so the bound means the same for every t.
        """
        start = time.perf_counter()
        linear = np.asarray(linear, dtype=float)
        w = self.weights

        def value(q):
            return float(w @ phi(q) + linear @ q)

        def relax(lo, hi, basis=None, worker=0):
            box = self.tighten(lo, hi)
            if box is None:
                return None
            lo, hi = box
            width = np.where(hi > lo, hi - lo, 1.0)
            slope = np.where(hi > lo, (phi(hi) - phi(lo)) / width, 0.0)
            bound, q, node_basis, feasible = self.solve(w * slope + linear, lo, hi, basis, worker)
            offset = phi(lo) - slope * lo  # the secant line: offset + slope t (>= phi on [lo, hi])
            rounding = ROUNDING * float(w @ (np.abs(phi(lo)) + np.abs(phi(hi)) + np.abs(slope) * hi))
            if len(heap) >= BASIS_NODES:
                node_basis = None  # memory: about 3 kB per stored basis at d = 50
            return bound + float(w @ offset) + rounding, q, slope, lo, hi, node_basis, feasible

        def children(node, worker=0):
            """The node's box bisected (module docstring) and both halves relaxed (None: proven empty)."""
            _, q, slope, lo, hi, node_basis, _ = node
            secant = phi(lo) + slope * (q - lo)
            excess = w * (secant - phi(q))
            x = int(np.argmax(excess))
            if self.scale is not None and excess[x] > 0 and hi[self.scale] > lo[self.scale] * (1.0 + self.scale_width):
                x = self.scale  # the scale coordinate first, until its box is narrow (solvers.argmin_split)
            split = (lo[x] + hi[x]) / 2  # bisection: measured tighter than splitting at q[x] or at sqrt(lo hi) (k = 50)
            halves = ((lo, np.where(np.arange(lo.size) == x, split, hi)), (np.where(np.arange(lo.size) == x, split, lo), hi))
            return [relax(new_lo, new_hi, node_basis, worker) for new_lo, new_hi in halves]

        points, nodes, heap, infeasible = [], 0, [], 0
        if resume is not None:
            if resume.linear is None or not np.array_equal(resume.linear, linear):
                raise ValueError("resume needs a previous result for the same linear term")
            best, point, discarded, heap = resume.best, resume.point, resume.discarded, list(resume.open_nodes)
        else:
            best, point, discarded = -np.inf, None, -np.inf
            root = relax(np.asarray(lower, float), np.asarray(upper, float))
            if root is None or not root[-1]:
                raise LinearProgramError("the polytope is empty")
            heap = [(-root[0], 0, root)]
        counter = max((item[1] for item in heap), default=0)
        finished = False
        pool = None  # made at the first batch split in threads (a root-only call, as ArgminSplit's, needs none)
        batch_size = 1 if self.threads == 1 else self.threads * NODES_PER_THREAD
        try:
            while heap:
                bound = -heap[0][0]
                if bound - best <= tolerance:
                    finished = True
                    break
                if time.perf_counter() - start > max_seconds or (max_nodes is not None and nodes >= max_nodes):
                    break
                batch = []
                while (heap and len(batch) < batch_size and -heap[0][0] - best > tolerance
                       and (max_nodes is None or nodes < max_nodes)):
                    node = heapq.heappop(heap)[2]
                    nodes += 1
                    node_bound, q, feasible = node[0], node[1], node[-1]
                    if feasible:  # an elastic LP's point may lie outside P
                        current = value(q)
                        if current > best:
                            best, point = current, q
                        if current > keep_points:
                            points.append(q)
                    if node_bound - best <= tolerance:
                        discarded = max(discarded, node_bound)
                    else:
                        batch.append(node)
                if self.threads == 1 or len(batch) < 2:
                    expanded = [children(node) for node in batch]
                else:  # thread t splits leaves t, t + threads, ...; the children keep the leaves' order
                    if pool is None:  # the pool and every thread's model, built here rather than inside the threads
                        pool = ThreadPoolExecutor(self.threads)
                        for worker in range(self.threads):
                            self._solver(worker)
                    shares = list(pool.map(lambda t: [children(node, t) for node in batch[t::self.threads]], range(self.threads)))
                    expanded = [shares[i % self.threads][i // self.threads] for i in range(len(batch))]
                for child in (child for pair in expanded for child in pair if child is not None):
                    infeasible += not child[-1]
                    if child[0] > best + tolerance:
                        counter += 1
                        heapq.heappush(heap, (-child[0], counter, child))
                    else:
                        discarded = max(discarded, child[0])
        finally:
            if pool is not None:
                pool.shutdown()
        # every point of P in the root box lies in an open leaf, a discarded leaf or a box propagation proved empty
        upper_bound = max(-heap[0][0] if heap else -np.inf, discarded, best)
        finished = finished or not heap
        return ConvexMaxResult(best, point, float(upper_bound), nodes, points, time.perf_counter() - start, finished,
                               linear, heap, discarded, infeasible)
