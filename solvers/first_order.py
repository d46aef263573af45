"""The ratio-constrained stochastic-matrix LP by a first-order method, built once and re-run from its last iterate.

Problem: the LP of :func:`solvers.linear.solve_ratio_bounded_stochastic_lp`,

    minimise    sum_{i,j} cost[i, j] M[i, j]
    subject to  M >= 0,  every row of M sums to 1,  M[a, j] <= r_p M[b, j]  for every pair p = (a, b), column j.

At k = m = 1,000 with 10,586 pairs it has 10^6 variables and 1.06e7 ratio rows (2.2e7 non-zeros): interior
point (HiGHS's IPX) did 12 iterations in 300 s already at 350 nodes, and column generation's dense master
stalls (benchmarks/RESULTS.md). A primal-dual hybrid gradient method needs only products with the constraint
matrix: HiGHS's PDLP (cuPDLP-C: Lu and Yang, "cuPDLP-C", 2023; the restarted PDHG of Applegate et al.,
"Practical large-scale linear programming using primal-dual hybrid gradient", NeurIPS 2021).

Its iterates are neither exactly feasible nor exactly optimal: the caller repairs the primal onto the cone
and bounds the optimum from the pair multipliers (:func:`solvers.ratio_lp.lagrangian_lower_bound`, valid for
any multipliers), so the iterate of a run stopped by its time limit is as usable as a converged one, only
less tight. :class:`FirstOrderRatioLP` builds the model once; each further run (after :meth:`tighten`) is
warm-started from the last iterate and its multipliers (HiGHS's ``setSolution``). Runs cut short on purpose
do not pay: short chunks lose PDLP's restart state (a 10 x 10 grid in 2 s chunks was still 4e-3 from the
optimum after 17,094 iterations, where one run converged in 14,920), so the caller runs it in one piece per
tolerance (:mod:`designer.design.first_order`).
"""

from __future__ import annotations

import time

import numpy as np

from solvers.linear import LinearProgramError, StochasticLPResult, cost_scale, ratio_rows, validated_ratio_lp
from solvers.quiet import silent_highs

#: PDLP's relative optimality tolerance when the caller gives none (HiGHS's default, 1e-7).
DEFAULT_TOLERANCE = 1e-7


class FirstOrderRatioLP:
    """The stochastic LP in HiGHS's PDLP, built once, re-run from its last iterate (module docstring).

    Parameters
    ----------
    cost : array_like (k, m)
        Finite.
    pairs : array_like (n, 2) of int
    ratios : array_like (n,)
        ``r_p``, finite and >= 0.
    tolerance : float
        PDLP's relative optimality tolerance (its primal and dual residuals and its duality gap).
    """

    def __init__(self, cost, pairs, ratios, tolerance: float = DEFAULT_TOLERANCE):
        import highspy
        from scipy import sparse

        self.cost, pairs, ratios = validated_ratio_lp(cost, pairs, ratios)
        self.k, self.m = self.cost.shape
        self.n = pairs.shape[0]
        self.scale = cost_scale(self.cost)
        upper, rows_sum = ratio_rows(pairs, ratios, self.k, self.m)
        matrix = sparse.vstack([upper, rows_sum], format="csc")
        del upper, rows_sum
        model = highspy.HighsLp()
        model.num_col_, model.num_row_ = self.k * self.m, matrix.shape[0]
        model.col_cost_ = self.scale * self.cost.ravel()
        model.col_lower_ = np.zeros(self.k * self.m)
        model.col_upper_ = np.full(self.k * self.m, highspy.kHighsInf)
        model.row_lower_ = np.concatenate([np.full(self.n * self.m, -highspy.kHighsInf), np.ones(self.k)])
        model.row_upper_ = np.concatenate([np.zeros(self.n * self.m), np.ones(self.k)])
        model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        model.a_matrix_.start_ = matrix.indptr
        model.a_matrix_.index_ = matrix.indices
        model.a_matrix_.value_ = matrix.data
        del matrix
        self.highs = silent_highs()
        self.highs.setOptionValue("solver", "pdlp")
        self.highs.setOptionValue("presolve", "off")  # it removes nothing here and took 15 s at k = 1,000
        self.tighten(tolerance)
        self.highs.passModel(model)
        self.chunks = 0
        self.iterations = 0

    def tighten(self, tolerance: float) -> None:
        """Set PDLP's relative optimality tolerance for the next runs."""
        self.highs.setOptionValue("pdlp_optimality_tolerance", float(tolerance))

    def run(self, seconds: float) -> StochasticLPResult:
        """Run PDLP for at most ``seconds`` from the last iterate (from zero the first time).

        Returns
        -------
        StochasticLPResult
            ``matrix`` is the iterate with negative entries cut and rows divided by their sums (not yet in the
            cone: repair it); ``status`` is ``"Optimal"`` (PDLP's tolerance met) or ``"Time limit reached"``.

        Raises
        ------
        LinearProgramError
            No time, or an iterate with a row of no mass (a chunk too short to leave zero).
        """
        import highspy

        if not seconds > 0:
            raise LinearProgramError("first-order LP not run: no time left")
        start = time.perf_counter()
        highs = self.highs
        if self.chunks:
            highs.setSolution(highs.getSolution())
        highs.setOptionValue("time_limit", highs.getRunTime() + float(seconds))  # HiGHS's clock runs across runs
        highs.run()
        self.chunks += 1
        self.iterations += int(highs.getInfo().pdlp_iteration_count)
        status = highs.getModelStatus()
        described = highs.modelStatusToString(status)
        if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kTimeLimit,
                          highspy.HighsModelStatus.kIterationLimit):
            raise LinearProgramError(f"first-order LP not solved: {described}")
        solution = highs.getSolution()
        point = np.maximum(np.asarray(solution.col_value, dtype=float).reshape(self.k, self.m), 0.0)
        sums = point.sum(axis=1, keepdims=True)
        if not np.all(np.isfinite(point)) or np.any(sums <= 0):
            raise LinearProgramError(f"first-order LP gave no usable iterate after {self.iterations} iterations")
        matrix = point / sums
        duals = np.asarray(solution.row_dual, dtype=float)
        # HiGHS's row duals are d(objective)/d(bound): the rows "M[a,j] - r M[b,j] <= 0" have duals <= 0
        return StochasticLPResult(
            matrix=matrix,
            objective=float(np.sum(self.cost * matrix)),
            n_constraints=self.n * self.m,
            seconds=time.perf_counter() - start,
            row_duals=duals[self.n * self.m:] / self.scale,
            pair_duals=np.maximum(-duals[:self.n * self.m], 0.0).reshape(self.n, self.m) / self.scale,
            status=described,
        )
