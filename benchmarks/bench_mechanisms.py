"""Benchmark: scalable context-aware mechanisms.

1. Scale: block HR on the paper's Gowalla-sized grid, k = 43,750 (125 x 350 cells),
   blocks from the (m1, m2) grids of Table 1, n = 10,000,000 reports, eps = 1:
   privatise + estimate time (median of 3; data drawn beforehand, not timed) and
   peak memory of that step (tracemalloc, which sees NumPy's buffers; separate run).
   Baseline in the same run: a non-private histogram of the same data
   (``np.bincount``), the floor any estimator pays.
2. Side by side with pure-ldp (PyPI) on k = 1,000, n = 1,000,000, eps = 1, Zipf(1.1):
   our HR and GRR against pure-ldp's Hadamard response and direct encoding
   (= GRR), same data, TV error of the raw estimates (all four are unbiased).
   pure-ldp privatises one user per Python call; median of 3 runs (its HR takes ~15 s a run).
3. EM (maximum likelihood) on GRR, k = 1,000, n = 10^6, to the certified gap 1e-6.

Run: ``.venv/bin/python benchmarks/bench_mechanisms.py`` (about 3-4 minutes).
"""

from __future__ import annotations

import os
import platform
import warnings

import numpy as np

from timing import peak_megabytes, timed

from designer.estimation import maximum_likelihood, project_onto_simplex, tv_distance
from designer.mechanisms import BlockHadamardResponse, GeneralizedRandomizedResponse, HadamardResponse

GRID = (125, 350)
N_SCALE = 10_000_000
N_COMPARE = 1_000_000
PURE_LDP_RUNS = 3


def grid_blocks(rows: int, columns: int, m1: int, m2: int) -> list[np.ndarray]:
    """Cells of a rows x columns grid (row-major symbols) grouped into an m1 x m2 grid of blocks."""
    cell_row, cell_column = np.divmod(np.arange(rows * columns), columns)
    block = (cell_row * m1 // rows) * m2 + cell_column * m2 // columns
    order = np.argsort(block, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(block[order])) + 1)


def zipf(k: int, exponent: float) -> np.ndarray:
    weights = np.arange(1, k + 1) ** -exponent
    return weights / weights.sum()


def scale() -> None:
    k = GRID[0] * GRID[1]
    rng = np.random.default_rng(0)
    prior = rng.permutation(zipf(k, 1.1))
    data = rng.choice(k, size=N_SCALE, p=prior)
    baseline, _ = timed(lambda: np.bincount(data, minlength=k) / N_SCALE, 3)
    print(f"\n[1] block HR, k = {k:,} ({GRID[0]} x {GRID[1]} grid), n = {N_SCALE:,}, eps = 1, Zipf(1.1) permuted")
    print(f"    baseline: non-private histogram (np.bincount) {baseline:.3f} s")
    print(f"    {'(m1, m2)':>10} {'blocks':>7} {'outputs':>8} {'bits':>4} {'median s':>9} {'x hist':>7} "
          f"{'peak MB':>8} {'TV raw':>8} {'TV proj':>8} {'bound(20)':>9}")
    for m1, m2 in [(1, 1), (5, 7), (25, 35), (25, 70)]:
        mechanism = BlockHadamardResponse(grid_blocks(*GRID, m1, m2), 1.0)
        run_rng = np.random.default_rng(1)

        def run():
            return mechanism.estimate(mechanism.sample(data, run_rng))

        seconds, estimate = timed(run, 3)
        peak = peak_megabytes(run)
        projected = project_onto_simplex(estimate)
        print(f"    {str((m1, m2)):>10} {len(mechanism.blocks):>7} {mechanism.n_outputs:>8} {mechanism.bits:>4} "
              f"{seconds:>9.3f} {seconds / baseline:>7.1f} {peak:>8.0f} {tv_distance(estimate, prior):>8.3f} "
              f"{tv_distance(projected, prior):>8.3f} {mechanism.tv_bound(N_SCALE):>9.3f}")


def pure_ldp_comparison() -> None:
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.hadamard_response import HadamardResponseClient, HadamardResponseServer

    k, epsilon = 1000, 1.0
    rng = np.random.default_rng(2)
    prior = zipf(k, 1.1)
    data = rng.choice(k, size=N_COMPARE, p=prior)
    print(f"\n[2] side by side with pure-ldp: k = {k}, n = {N_COMPARE:,}, eps = {epsilon}, Zipf(1.1)")
    print(f"    {'implementation':<32} {'median s':>9} {'runs':>5} {'TV raw':>8} {'speed-up':>9}")

    rows = []
    for name, mechanism in [("ldp-designer HR", HadamardResponse(k, epsilon)),
                            ("ldp-designer GRR", GeneralizedRandomizedResponse(k, epsilon))]:
        run_rng = np.random.default_rng(3)
        seconds, estimate = timed(lambda: mechanism.estimate(mechanism.sample(data, run_rng)), 5)
        rows.append((name, seconds, 5, tv_distance(estimate, prior)))

    def pure_hr():
        server = HadamardResponseServer(epsilon, k)
        client = HadamardResponseClient(epsilon, k, server.get_hash_funcs())
        for value in data:
            server.aggregate(client.privatise(int(value) + 1))  # pure-ldp domain is 1..d
        return np.array([server.estimate(x + 1, suppress_warnings=True) for x in range(k)]) / N_COMPARE

    def pure_de():
        server = DEServer(epsilon, k)
        client = DEClient(epsilon, k)
        for value in data:
            server.aggregate(client.privatise(int(value) + 1))
        return np.array([server.estimate(x + 1, suppress_warnings=True) for x in range(k)]) / N_COMPARE

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.random.seed(4)  # pure-ldp draws from NumPy's global generator
        hr_seconds, hr_estimate = timed(pure_hr, PURE_LDP_RUNS)
        de_seconds, de_estimate = timed(pure_de, PURE_LDP_RUNS)
    rows.append(("pure-ldp HadamardResponse", hr_seconds, PURE_LDP_RUNS, tv_distance(hr_estimate, prior)))
    rows.append(("pure-ldp DirectEncoding (GRR)", de_seconds, PURE_LDP_RUNS, tv_distance(de_estimate, prior)))
    ours = {"HR": rows[0][1], "GRR": rows[1][1]}
    for name, seconds, runs, error in rows:
        reference = ours["HR"] if "Hadamard" in name else ours["GRR"] if "Direct" in name else seconds
        print(f"    {name:<32} {seconds:>9.3f} {runs:>5} {error:>8.3f} {reference and seconds / reference:>8.0f}x")


def em_run() -> None:
    k = 1000
    rng = np.random.default_rng(5)
    prior = zipf(k, 1.1)
    mechanism = GeneralizedRandomizedResponse(k, 1.0)
    counts = mechanism.counts(mechanism.sample(rng.choice(k, size=N_COMPARE, p=prior), rng))
    seconds, result = timed(lambda: maximum_likelihood(counts, mechanism), 5)
    dense = mechanism.channel()
    dense_seconds, dense_result = timed(lambda: maximum_likelihood(counts, dense), 3)
    projected = mechanism.estimate_counts(counts, project=True)
    print(f"\n[3] EM (MLE), GRR k = {k}, n = {N_COMPARE:,}, eps = 1, certified gap <= 1e-6 nats/report")
    print(f"    structured operator: {seconds:.4f} s, {result.iterations} SQUAREM steps, TV {tv_distance(result.estimate, prior):.3f}")
    print(f"    dense 1000 x 1000 Q: {dense_seconds:.4f} s, {dense_result.iterations} steps, "
          f"TV {tv_distance(dense_result.estimate, prior):.3f}")
    print(f"    projected unbiased estimate: TV {tv_distance(projected, prior):.3f}")


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"numpy {np.__version__}; timings are medians, other jobs may share the CPU")
    scale()
    pure_ldp_comparison()
    em_run()


if __name__ == "__main__":
    main()
