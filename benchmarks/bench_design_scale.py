"""Optimal design at real alphabet sizes: the orbit LP, families, comparisons, column generation.

Run: .venv/bin/python benchmarks/bench_design_scale.py   (about 4-6 minutes on 2 cores)
     .venv/bin/python benchmarks/bench_design_scale.py --quick   (skips column generation at k = 100, 200)

A. Classic LDP, uniform prior, k = 12..18: orbit LP vs the vertex enumeration of design_by_vertices
   (same optimum; ratio of medians), then k = 1000 from a dense CSV end to end (CLI, subprocess)
   and k = 10^5 from family parameters end to end; error against the closed form.
B. Block E, 35 blocks of 1,250 (k = 43,750), eps = 1: optimum, error against log 35 + the
   within-block closed form, and the block Hadamard response's share of the optimum.
C. High-low E at k = 43,750 (s = 100, 1,000, 10,000) and utility-optimized E at w = 300,
   v = 10, 50, 150: optimum and every applicable mechanism's share.
D. Random asymmetric E (entries U[0.5, 2], 10% inf): column generation bounds at k = 50, 100, 200
   under a time budget (lower = a certified channel, upper = the Lagrangian bound).
E. Exact orbit LP (--exact) at eps = log(3): classic k = 12 against the exact enumeration, classic
   k = 1000 (rational 1000 x 1000 channel) and 10^5 (class level), block 35 x 1,250; ratio to the
   float orbit LP in the same run, and the width of the rigorous bracket of the optimum.
F. The pricing branch and bound alone at fixed duals (k = 50, the E of D, duals of the master over
   the classic seed columns), 30 s: ``rho_bar``, nodes, and the node LPs HiGHS declared infeasible
   (each bounded by the elastic LP). Not in the default parts (``--parts F``).
G. Symmetry lost to a prior: classic eps = 1 under a Zipf(1.1) prior at k = 50, column generation
   under the budget (which pricing search the trial kept); then the pricing search alone on the
   classic cone at the staircase optimum's duals (exact rho = 0), 10,000 nodes: the single tree
   against the split by the smallest coordinate. Not in the default parts (``--parts G``).
H. The pricing search of F in 1 and 2 threads (``SeparableConvexMax(threads=...)``), 3,000 nodes
   each, interleaved: nodes per second (median of 3), their ratio, and ``rho_bar`` after equal nodes.
   Not in the default parts (``--parts H``).
   (``--parts CE`` runs only some parts.)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import timed

from designer.design.vertex import design_by_vertices
from designer.spec import PrivacyMatrix
from designer.design.symmetry import ClassStructure, design_symmetric
from designer.design.symmetry.compare import mechanism_utilities


def staircase(k: int, epsilon: float) -> float:
    """Closed form of the classic uniform optimum: ``max_d log(k / s_d) + d eps e^eps / s_d``."""
    d = np.arange(1, k, dtype=float)
    s = d * math.exp(epsilon) + k - d
    return float(np.max(np.log(k / s) + d * epsilon * math.exp(epsilon) / s))


def cli_seconds(arguments: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "designer.cli", *arguments], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    return time.perf_counter() - start, done.stdout


def part_a() -> None:
    print("A. classic LDP, uniform prior, eps = 1")
    print(f"{'k':>7} {'enumeration s':>14} {'orbit LP s':>11} {'ratio':>8} {'|difference|':>13}")
    for k in (12, 14, 16, 18):
        repeats = 3 if k <= 16 else 1
        full_time, full = timed(lambda: design_by_vertices(PrivacyMatrix.classic(k, 1.0)), repeats)
        fast_time, fast = timed(lambda: design_symmetric(ClassStructure.classic(k, 1.0)), 5)
        print(f"{k:>7} {full_time:>14.3f} {fast_time:>11.4f} {full_time / fast_time:>8.0f} {abs(full.objective - fast.objective):>13.1e}")
    import json

    with tempfile.TemporaryDirectory() as folder:
        e_file = Path(folder) / "ldp1000.csv"
        values = np.full((1000, 1000), 1.0)
        np.fill_diagonal(values, 0)
        np.savetxt(e_file, values, fmt="%g", delimiter=",")
        runs = [cli_seconds(["design", "--E", str(e_file), "--out", str(Path(folder) / "Q.csv"), "--json"]) for _ in range(3)]
        seconds = sorted(run[0] for run in runs)[1]
        objective = json.loads(runs[-1][1])["objective"]
        print(f"  k = 1000 dense CSV, CLI end to end: {seconds:.2f} s (median of 3), error {abs(objective - staircase(1000, 1)):.1e}")
        runs = [
            cli_seconds(["design", "--family", "ldp", "--k", "100000", "--eps", "1", "--out", str(Path(folder) / "D.json"), "--json"])
            for _ in range(3)
        ]
        seconds = sorted(run[0] for run in runs)[1]
        objective = json.loads(runs[-1][1])["objective"]
        print(f"  k = 100000 family, CLI end to end: {seconds:.2f} s (median of 3), error {abs(objective - staircase(100_000, 1)):.1e}")


def shares(structure: ClassStructure) -> None:
    seconds, result = timed(lambda: design_symmetric(structure, materialise=False), 3)
    print(f"  {structure.name}: optimum {result.objective:.6f} nats in {seconds:.3f} s ({result.n_orbits:,} orbits)")
    for row in mechanism_utilities(structure, result.objective):
        name = f"{row.name} ({row.detail})" if row.detail else row.name
        print(f"    {name:<32} {row.value:>10.6f}  share {row.share:6.1%}")
    return result


def part_b() -> None:
    print("B. block E, 35 blocks of 1,250, eps = 1")
    result = shares(ClassStructure.block([1250] * 35, 1.0))
    print(f"  error against log 35 + within-block closed form: {abs(result.objective - math.log(35) - staircase(1250, 1)):.1e}")
    seconds, _ = cli_seconds(["design", "--family", "block", "--k", "43750", "--blocks", "35", "--out", "/dev/null", "--json"])
    print(f"  CLI end to end: {seconds:.2f} s")


def part_c() -> None:
    print("C. high-low at k = 43,750 and utility-optimized at w = 300, eps = 1")
    for s in (100, 1000, 10_000):
        shares(ClassStructure.high_low(43_750, s, 1.0))
    for v in (10, 50, 150):
        shares(ClassStructure.utility_optimized(300, v, 1.0))


def part_d(sizes, budget: float) -> None:
    from designer.design.gap import design_with_gap

    print(f"D. random asymmetric E, column generation, budget {budget:g} s")
    print(f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'k':>5} {'lower':>10} {'upper':>10} {'relaxed':>10} {'gap':>8} {'stopped':>8} {'columns':>8} {'seconds':>8}  pricing")
    for k in sizes:
        gap_row(k, design_with_gap(random_e(k), gap_tolerance=0.01, max_seconds=budget))


def gap_row(k: int, result) -> None:
    print(
        f"{k:>5} {result.lower:>10.6f} {result.upper:>10.6f} {result.relaxation_bound:>10.6f} {result.gap:>8.1%} {result.stopped:>8} "
        f"{result.columns:>8} {result.seconds:>8.1f}  {result.pricing}"
    )


def classic_e(k: int, epsilon: float) -> PrivacyMatrix:
    values = np.full((k, k), epsilon)
    np.fill_diagonal(values, 0.0)
    return PrivacyMatrix(values)


def part_g(budget: float, nodes: int = 10_000) -> None:
    from designer.design.gap import design_with_gap
    from designer.utility import F_DIVERGENCES
    from solvers.argmin_split import ArgminSplit
    from solvers.convex_maximization import SeparableConvexMax

    k = 50
    prior = 1.0 / np.arange(1, k + 1) ** 1.1
    prior /= prior.sum()
    print(f"G. classic eps = 1 under a Zipf(1.1) prior, k = {k}, column generation, budget {budget:g} s "
          f"(load average {os.getloadavg()[0]:.1f})")
    gap_row(k, design_with_gap(classic_e(k, 1.0), prior, gap_tolerance=0.01, max_seconds=budget))
    privacy, uniform = classic_e(k, 1.0), np.full(k, 1.0 / k)
    duals = np.full(k, staircase(k, 1.0) / k)  # the optimum's duals: rho = 0 exactly
    x, other = privacy.nonredundant_pairs().T
    rows = np.exp(privacy.epsilon[x, other])[:, None] * np.eye(k)[other] - np.eye(k)[x]
    ratios = np.exp(privacy.closure().epsilon)
    print(f"  pricing alone, classic eps = 1, uniform prior, staircase duals (exact rho = 0), {nodes:,} nodes:")
    for search in (SeparableConvexMax(rows, uniform, uniform, ratios=ratios), ArgminSplit(rows, uniform, uniform, ratios)):
        lower, upper = search.coordinate_range()
        result = search.run(-duals, lower, upper, F_DIVERGENCES["kl"], max_seconds=np.inf, max_nodes=nodes)
        print(f"  {type(search).__name__:>20}: rho_bar {result.upper:.6f} in {result.seconds:.1f} s")


def random_e(k: int) -> PrivacyMatrix:
    """The random asymmetric E of part D (entries U[0.5, 2], 10% inf, seed k)."""
    rng = np.random.default_rng(k)
    values = rng.uniform(0.5, 2.0, (k, k))
    values[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(values, 0)
    return PrivacyMatrix(values)


class PricingProblem(NamedTuple):
    """A pricing problem at fixed duals: its search, duals, root box, cone rows and prior."""

    search: object
    duals: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    rows: np.ndarray
    prior: np.ndarray


def fixed_duals_pricing(threads: int = 1, k: int = 50) -> PricingProblem:
    """The pricing problem of part F (the E of D, uniform prior, duals of the master over the classic
    seed columns) with its root box."""
    from designer.design.gap.column_generation import classic_columns
    from designer.utility import column_information
    from solvers.convex_maximization import SeparableConvexMax
    from solvers.linear import solve_vertex_lp

    privacy = random_e(k)
    prior = np.full(k, 1 / k)
    seed = np.vstack([np.ones((1, k)), classic_columns(privacy)])
    duals = solve_vertex_lp(seed, column_information(prior, seed.T), np.ones(k)).duals
    x, other = privacy.nonredundant_pairs().T  # the cone's rows: e^{E[x, x']} q_x' - q_x >= 0
    rows = np.exp(privacy.epsilon[x, other])[:, None] * np.eye(k)[other] - np.eye(k)[x]
    search = SeparableConvexMax(rows, prior, prior, ratios=np.exp(privacy.closure().epsilon), threads=threads)
    return PricingProblem(search, duals, *search.coordinate_range(), rows, prior)


def part_f(seconds: float = 30.0) -> None:
    from designer.design.gap.column_generation import lagrangian_bound
    from designer.utility import F_DIVERGENCES

    problem = fixed_duals_pricing()
    duals = problem.duals
    result = problem.search.run(-duals, problem.lower, problem.upper, F_DIVERGENCES["kl"], max_seconds=seconds)
    print(f"F. pricing branch and bound at fixed duals, k = 50, {seconds:g} s (load average {os.getloadavg()[0]:.1f})")
    print(f"  rho_bar {result.upper:.6f} (Lagrangian bound {lagrangian_bound(duals, result.upper):.6f}), best {result.best:.6f}, "
          f"{result.nodes:,} nodes, {result.infeasible} node LPs declared infeasible")


def part_h(nodes: int = 3_000, repeats: int = 3) -> None:
    from designer.utility import F_DIVERGENCES

    print(f"H. the pricing search of F in 1 and 2 threads, {nodes:,} nodes, interleaved, median of {repeats} "
          f"(load average {os.getloadavg()[0]:.1f})")
    searches = {threads: fixed_duals_pricing(threads) for threads in (1, 2)}
    rates = {1: [], 2: []}
    bounds = {}
    for _ in range(repeats):
        for threads, problem in searches.items():
            result = problem.search.run(-problem.duals, problem.lower, problem.upper, F_DIVERGENCES["kl"],
                                        max_seconds=np.inf, max_nodes=nodes)
            rates[threads].append(result.nodes / result.seconds)
            bounds[threads] = result.upper
    medians = {threads: statistics.median(values) for threads, values in rates.items()}
    for threads in (1, 2):
        print(f"  {threads} thread{'s' if threads > 1 else ' '}: {medians[threads]:7.1f} nodes/s, rho_bar {bounds[threads]:.6f}")
    print(f"  ratio {medians[2] / medians[1]:.2f}x (load average {os.getloadavg()[0]:.1f})")


def part_e() -> None:
    print("E. exact orbit LP, eps = log(3): seconds (median of 3), ratio to float, bracket width")
    cases = [
        ("classic k = 12", ClassStructure.classic(12, "log(3)")),
        ("classic k = 1000", ClassStructure.classic(1000, "log(3)")),
        ("classic k = 100,000", ClassStructure.classic(100_000, "log(3)")),
        ("block 35 x 1,250", ClassStructure.block([1250] * 35, "log(3)")),
    ]
    for name, structure in cases:
        float_time, fast = timed(lambda: design_symmetric(structure), 3)
        exact_time, exact = timed(lambda: design_symmetric(structure, exact=True), 3)
        bracket = exact.bracket
        print(
            f"  {name}: exact {exact_time:.3f} s, float {float_time:.3f} s, ratio {exact_time / float_time:.1f}x; "
            f"{exact.certificate.mode} {exact.certificate.verdict}; bounds [{bracket.lower:.17g}, {bracket.upper:.17g}] "
            f"width {bracket.width:.1e}; |float - lower| {abs(fast.objective - bracket.lower):.1e}"
        )
    privacy = ClassStructure.classic(12, "log(3)").privacy()
    enumeration_time, enumerated = timed(lambda: design_by_vertices(privacy, exact=True), 3)
    print(f"  classic k = 12, exact enumeration: {enumeration_time:.3f} s, optimum {enumerated.objective:.17g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="column generation at k = 50 only, 60 s")
    parser.add_argument("--budget", type=float, default=120.0, help="column generation seconds per k")
    parser.add_argument("--parts", default="ABCDE", help="which parts to run (letters A-H; F, G and H are not in the default)")
    parser.add_argument("--gap-only", type=int, nargs="*", metavar="K", help="only column generation, at these k")
    arguments = parser.parse_args()
    if arguments.gap_only:
        part_d(tuple(arguments.gap_only), arguments.budget)
        return
    parts = arguments.parts.upper()
    for letter, run in (("A", part_a), ("B", part_b), ("C", part_c)):
        if letter in parts:
            run()
    if "D" in parts:
        part_d((50,) if arguments.quick else (50, 100, 200), 60.0 if arguments.quick else arguments.budget)
    if "E" in parts:
        part_e()
    if "F" in parts:
        part_f()
    if "G" in parts:
        part_g(arguments.budget)
    if "H" in parts:
        part_h()


if __name__ == "__main__":
    main()
