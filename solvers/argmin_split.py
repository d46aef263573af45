"""The separable convex maximisation (CM) of :mod:`solvers.convex_maximization`, split by the smallest coordinate.

Every point of ``P = { q : A q >= 0, q >= 0, n . q = 1 }`` has a smallest coordinate, so

    P = union over x0 of  P_x0,    P_x0 = P ∩ { q_x >= q_x0 for every x }

and ``max_P f = max_x0 max_{P_x0} f``: a proven upper bound on each piece bounds (CM). Each piece
is a polytope of the same form (the extra rows ``q_x - q_x0 >= 0`` are exact in floating point), so
:class:`solvers.convex_maximization.SeparableConvexMax` bounds it with every guarantee of that
module, with the ratio bound ``q_x0 <= 1 * q_x`` added to its propagation (implied by the new rows,
so it removes no point of the piece).

Why split: on a piece, ``q_x0`` is the *scale* of every point. Ratio bounds ``q_x <= R[x, x0] q_x0``
and ``q_x >= q_x0`` give every coordinate a box ``[m, R[x, x0] m']`` once ``q_x0`` is known to lie in
``[m, m']``, so the pieces bisect ``x0`` first (``scale=x0``) until ``m' <= (1 + w) m``. When the
polytope's vertices have few levels relative to their smallest coordinate (classic eps-LDP cones:
every vertex of the slice has coordinates ``m`` or ``e^eps m``; Kairouz, Oh and Viswanath, JMLR
2016, Thm. 2), the secants over those boxes are exact at the vertices up to the scale's width and
one coordinate cut by ``n . q = 1``, and the bound closes; without the split, bisecting one
coordinate pins no scale (the others keep a box of ratio ``e^{2 eps}``). When the levels are many
(random ratios), the split only multiplies the work (measured: benchmarks/RESULTS.md).

The pieces are searched best first as one tree: the piece whose bound is largest is advanced by
:data:`STEP` nodes (resuming its own tree), so the reported bound ``max_x0 upper_x0`` falls as fast
as the worst piece allows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from solvers.convex_maximization import SeparableConvexMax

#: Nodes a piece is advanced by before the largest bound is chosen again.
STEP = 16
#: The scale coordinate is bisected until its box spans at most a factor 1 + SCALE_WIDTH (the bound's floor on a
#: classic cone scales with it: rho_bar stalls at 0.0016 with 0.01 and at 0.0002 with 0.001, k = 50).
SCALE_WIDTH = 0.001


@dataclass(frozen=True)
class SplitResult:
    """``best <= max f <= upper`` over the union of the pieces; ``pieces`` resume a later call.

    Fields as :class:`solvers.convex_maximization.ConvexMaxResult` (``points``: this call's improving
    points of every piece).
    """

    best: float
    point: np.ndarray | None
    upper: float
    nodes: int
    points: list
    seconds: float
    finished: bool
    linear: np.ndarray
    pieces: tuple
    infeasible: int = 0


class ArgminSplit:
    """(CM) over P as the union of its pieces ``P_x0`` (module docstring); same interface as SeparableConvexMax.

    Every piece must hold a point (a piece's root LP declared infeasible raises, as the root of
    :meth:`SeparableConvexMax.run` does): true for the slice of a cone that holds the constant
    vector, which lies in every piece, as the cone of an E-LDP definition does.
    """

    def __init__(self, inequalities, normaliser, weights, ratios, scale_width: float = SCALE_WIDTH, threads: int = 1):
        a = sparse.csr_matrix(inequalities, dtype=float)  # k pieces of the rows: sparse (dense: 7 GB at k = 200)
        d = a.shape[1]
        ratios = np.asarray(ratios, dtype=float)
        self.dimension = d
        self._polytope = (a, normaliser, weights, ratios)
        self.pieces = []
        for x0 in range(d):
            order = sparse.csr_matrix(np.delete(np.eye(d) - np.eye(d)[x0], x0, axis=0))  # q_x - q_x0 >= 0, x != x0
            piece_ratios = ratios.copy()
            piece_ratios[x0, :] = np.minimum(piece_ratios[x0, :], 1.0)  # q_x0 <= q_x
            self.pieces.append(SeparableConvexMax(sparse.vstack([a, order]).tocsr(), normaliser, weights, ratios=piece_ratios,
                                                  scale=x0, scale_width=scale_width, threads=threads))

    def coordinate_range(self) -> tuple[np.ndarray, np.ndarray]:
        """``min q_x`` and ``max q_x`` over P (the box of every piece's root; a caller that already
        holds P's :class:`SeparableConvexMax` may use its range instead, as design_with_gap does)."""
        a, normaliser, weights, ratios = self._polytope
        return SeparableConvexMax(a, normaliser, weights, ratios=ratios).coordinate_range()

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
        resume: SplitResult | None = None,
    ) -> SplitResult:
        """Best-first search over the pieces until ``max upper - best <= tolerance``, a time or a node limit.

        Parameters and the resumption contract as :meth:`SeparableConvexMax.run`; ``resume`` is a
        previous :class:`SplitResult` for the same ``linear``.
        """
        start = time.perf_counter()
        linear = np.asarray(linear, dtype=float)
        if resume is not None and not np.array_equal(resume.linear, linear):
            raise ValueError("resume needs a previous result for the same linear term")
        results = list(resume.pieces) if resume is not None else [None] * self.dimension
        points, nodes, infeasible = [], 0, 0
        for x0, piece in enumerate(self.pieces):  # every piece's root (its root LP)
            if results[x0] is None:
                results[x0] = piece.run(linear, lower, upper, phi, tolerance, np.inf, keep_points, max_nodes=0)
                infeasible += results[x0].infeasible
        finished = False
        while True:
            uppers = np.array([result.upper for result in results])
            best = max(result.best for result in results)
            x0 = int(np.argmax(uppers))
            if uppers[x0] - best <= tolerance or results[x0].finished:
                finished = True
                break
            remaining = max_seconds - (time.perf_counter() - start)
            if remaining <= 0 or (max_nodes is not None and nodes >= max_nodes):
                break
            step = STEP if max_nodes is None else min(STEP, max_nodes - nodes)
            results[x0] = self.pieces[x0].run(linear, lower, upper, phi, tolerance, remaining, keep_points,
                                              max_nodes=step, resume=results[x0])
            nodes += results[x0].nodes
            infeasible += results[x0].infeasible
            points.extend(results[x0].points)
        winner = max(results, key=lambda result: result.best)
        # every point of P lies in some piece, and each piece's upper bounds f on it (SeparableConvexMax.run)
        return SplitResult(winner.best, winner.point, float(max(result.upper for result in results)), nodes, points,
                           time.perf_counter() - start, finished, linear, tuple(results), infeasible)
