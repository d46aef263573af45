"""Benchmark: matrix-mechanism strategies at real domain sizes (implicit workloads, optimised strategies).

* All ranges on a line, ``A = L_m``, ``E = eps |x - x'|`` (eps = 1): m = 1024 with the
  line family (implicit W, adjacent pairs) and with an explicit E matrix (its
  non-redundant pairs for the design, every pair for the certificate); the Laplace
  error against the paper's ``2 n m (m - 1) / eps^2``. Baseline in the same run:
  W, A and E materialised (what ``strategy`` did before) at m = 256, where it still fits.
* m = 65,536, prefix and all-range workloads, line family.
* All boxes on a 64 x 64 grid under ``E = eps ||x - x'||_1``, ``A = L_64 (x) L_64``;
  baseline in the same run: the noise-scale program by Clarabel against the dual
  method on a 16 x 16 grid.
* Strategy optimisation: p-Identity on the line (m = 1024) and Kronecker products on
  the 32 x 32 grid, error ratios to ``L_m`` (and the lower bound on the line).

Each case runs once with tracemalloc on (peak traced memory: NumPy's buffers).
Run: ``nice -n 5 .venv/bin/python benchmarks/bench_strategy.py [case ...]``
(cases: line, huge, grid, optimize; all by default).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from timing import measure

from designer.metric.optimize import line_lower_bound, optimize_strategy
from designer.metric.pairs import PrivacyPairs
from designer.metric.strategy import certify_strategy, design_strategy
from designer.metric.strategy_matrices import PrefixStrategyMatrix, named_strategy
from designer.metric.workloads import AllRangeWorkload, MatrixWorkload, PrefixWorkload, named_workload
from designer.spec import PrivacyMatrix
from solvers.inverse_squares import _clarabel, _dual

EPSILON = 1.0


def line_matrix(m: int) -> PrivacyMatrix:
    index = np.arange(m)
    return PrivacyMatrix.metric(np.abs(index[:, None] - index[None, :]), EPSILON)


def design_and_certify(workload, epsilon, matrix):
    strategy = design_strategy(workload, epsilon, matrix)
    return strategy, certify_strategy(strategy, epsilon)


def bench_line() -> None:
    m = 256
    implicit, _, (small, _) = measure(lambda: design_and_certify(AllRangeWorkload(m), PrivacyPairs.line(m, EPSILON), PrefixStrategyMatrix(m)))
    dense_W = AllRangeWorkload(m).matvec(np.eye(m))  # W itself, as the old command built it
    materialised, peak_dense, (reference, verdict) = measure(
        lambda: design_and_certify(MatrixWorkload(dense_W), line_matrix(m), np.tril(np.ones((m, m))))
    )
    assert verdict.certified and abs(reference.laplace_error(1) / small.laplace_error(1) - 1) < 1e-12
    print(f"all-range m={m}: implicit {implicit:.3f} s, materialised W ({dense_W.shape[0]:,} x {m}) + explicit E "
          f"{materialised:.2f} s (peak {peak_dense:.0f} MiB), ratio {materialised / implicit:.0f}x")
    m = 1024
    closed_form = 2 * m * (m - 1) / EPSILON**2
    for label, epsilon in (("line family", PrivacyPairs.line(m, EPSILON)), ("explicit E matrix", None)):
        start = time.perf_counter()
        epsilon = epsilon if epsilon is not None else line_matrix(m)
        seconds, peak, (strategy, certificate) = measure(lambda: design_and_certify(AllRangeWorkload(m), epsilon, PrefixStrategyMatrix(m)))
        total = time.perf_counter() - start
        ratio = strategy.laplace_error(1) / closed_form
        assert certificate.certified and abs(ratio - 1) < 1e-12
        print(f"all-range m={m}, {label}: {total:.2f} s (design + certificate {seconds:.2f} s), peak {peak:.0f} MiB; "
              f"Laplace error / (2 n m (m-1) / eps^2) = {ratio:.15f}; {len(certificate.pairs):,} pairs certified")


def bench_huge() -> None:
    m = 65_536
    for workload in (PrefixWorkload(m), AllRangeWorkload(m)):
        pairs = PrivacyPairs.line(m, EPSILON)
        seconds, peak, (strategy, certificate) = measure(lambda: design_and_certify(workload, pairs, PrefixStrategyMatrix(m)))
        assert certificate.certified
        print(f"{workload.name} m={m:,} (q={workload.queries:,}), A=L_m: {seconds:.2f} s, peak {peak:.0f} MiB, "
              f"Laplace error per user {strategy.laplace_error(1):.6g}, {len(certificate.pairs):,} edges certified")


def bench_grid() -> None:
    shape = (64, 64)
    workload, pairs = named_workload("all-range", shape), PrivacyPairs.grid_l1(shape, EPSILON)
    seconds, peak, (strategy, certificate) = measure(lambda: design_and_certify(workload, pairs, named_strategy("prefix", shape)))
    assert certificate.certified
    print(f"all boxes on {shape[0]}x{shape[1]} (q={workload.queries:,}), A = L x L, L1 grid: {seconds:.2f} s, "
          f"peak {peak:.0f} MiB, {len(certificate.pairs):,} edges certified")
    small = (16, 16)
    matrix = named_strategy("prefix", small)
    small_pairs = PrivacyPairs.grid_l1(small, EPSILON)
    costs = matrix.costs(named_workload("all-range", small))
    constraints = matrix.sensitivity(small_pairs.pairs[:, 0], small_pairs.pairs[:, 1])
    dual_seconds, _, dual = measure(lambda: _dual(costs, constraints, small_pairs.levels))
    ipm_seconds, _, ipm = measure(lambda: _clarabel(costs, constraints, small_pairs.levels, 1e-10))
    print(f"  noise-scale program on 16x16 ({constraints.shape[0]} constraints): dual L-BFGS-B {dual_seconds:.2f} s "
          f"(gap {dual.gap:.1e}), Clarabel {ipm_seconds:.2f} s (gap {ipm.gap:.1e}), ratio {ipm_seconds / dual_seconds:.1f}x; "
          f"objectives agree to {abs(dual.objective / ipm.objective - 1):.1e}")


def bench_optimize() -> None:
    m = 1024
    workload, pairs = AllRangeWorkload(m), PrivacyPairs.line(m, EPSILON)
    seconds, peak, comparison = measure(lambda: optimize_strategy(workload, pairs, "p-identity"))
    bound = line_lower_bound(workload, pairs)
    rows = ", ".join(f"{name} {comparison.ratio(name):.4f}" for name in comparison.candidates)
    print(f"p-identity, all-range m={m}, line: {seconds:.1f} s, peak {peak:.0f} MiB; error / L_m: {rows}; "
          f"lower bound / L_m {bound / comparison.candidates['prefix'].laplace_error(1):.4f}")
    shape = (32, 32)
    workload, pairs = named_workload("all-range", shape), PrivacyPairs.grid_l1(shape, EPSILON)
    seconds, peak, comparison = measure(lambda: optimize_strategy(workload, pairs, "kronecker"))
    assert all(certify_strategy(strategy, pairs).certified for strategy in comparison.candidates.values())
    rows = ", ".join(f"{name} {comparison.ratio(name):.4f}" for name in comparison.candidates)
    print(f"kronecker, all boxes {shape[0]}x{shape[1]}, L1 grid: {seconds:.1f} s, peak {peak:.0f} MiB; error / L x L: {rows}")


def main() -> None:
    cases = {"line": bench_line, "huge": bench_huge, "grid": bench_grid, "optimize": bench_optimize}
    chosen = sys.argv[1:] or list(cases)
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores shared)")
    for name in chosen:
        cases[name]()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
