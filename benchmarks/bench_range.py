"""Benchmark: the L1 range mechanism (strategies at scale: ``bench_strategy.py``).

* D = 2, m = 64 and D = 3, m = 32 with n = 1,000,000 Zipf(1.1) users, eps = 1:
  encode, observations (eq. 3), all single-cell estimates (eq. 6) and 100 random
  range queries (eq. 7); medians of 3 runs, peak traced memory of one run
  (tracemalloc sees NumPy's allocations), time per query.
  Baselines in the same run: eq. (7) read literally (sum the estimated cells of
  each box) and, for D = 2, the estimator with the dense m^D x m^D inverse.
* D = 1, m = 1024 and 4096, n = 1,000,000: ``ldp-designer range`` end to end
  (``simulate_range``: the streamed ``collect``); baseline in the same run:
  encoding every user at once, then the observations, at n = 250,000.

Run: ``nice -n 5 .venv/bin/python benchmarks/bench_range.py [grid] [line]``
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from timing import measure, peak_megabytes, timed

from designer.metric.range_mechanism import L1RangeMechanism, basis_matrix, cell_counts, random_ranges, true_range_counts, zipf_values

N_USERS = 1_000_000
EPSILON = 1.0
REPEATS = 3


def pipeline(mechanism: L1RangeMechanism, values: np.ndarray, lower, upper, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    marks = [time.perf_counter()]
    reports = mechanism.encode(values, rng)
    marks.append(time.perf_counter())
    observations = mechanism.observations(reports)
    marks.append(time.perf_counter())
    oracle = mechanism.estimate(observations, n=len(values))
    frequencies = oracle.frequencies()
    marks.append(time.perf_counter())
    answers = oracle.range_queries(lower, upper)
    marks.append(time.perf_counter())
    steps = np.diff(marks)
    return {
        "encode": steps[0],
        "observe": steps[1],
        "cells": steps[2],
        "ranges": steps[3],
        "total": marks[-1] - marks[0],
        "oracle": oracle,
        "frequencies": frequencies,
        "answers": answers,
    }


def box_sums(frequencies: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Baseline: eq. (7) literally, the sum of the estimated cells of each box."""
    return np.array([frequencies[tuple(slice(lo, up + 1) for lo, up in zip(low, high))].sum() for low, high in zip(lower, upper)])


def dense_estimate(mechanism: L1RangeMechanism, observations: np.ndarray) -> np.ndarray:
    """Baseline: c_hat = alpha^{-D} B_{m,D}^{-1} o with the dense m^D x m^D inverse (C order)."""
    inverse = np.linalg.inv(basis_matrix(mechanism.shape[0]))
    dense = inverse
    for m in mechanism.shape[1:]:
        dense = np.kron(dense, np.linalg.inv(basis_matrix(m)))
    return (mechanism.alpha ** -mechanism.dimensions * (dense @ observations.ravel())).reshape(mechanism.shape)


def bench_range(dimensions: int, m: int) -> None:
    shape = (m,) * dimensions
    mechanism = L1RangeMechanism(shape, EPSILON)
    data_rng = np.random.default_rng(dimensions)
    values = zipf_values(shape, N_USERS, data_rng)
    lower, upper = random_ranges(shape, 100, data_rng)
    runs = [pipeline(mechanism, values, lower, upper, seed) for seed in range(REPEATS)]
    median = {key: statistics.median(run[key] for run in runs) for key in ("encode", "observe", "cells", "ranges", "total")}
    peak = peak_megabytes(lambda: pipeline(mechanism, values, lower, upper, seed=99)) * 2**20
    last = runs[-1]
    oracle = last["oracle"]
    counts = cell_counts(shape, values)
    truth = true_range_counts(counts, lower, upper)
    mse_range = float(np.mean((last["answers"] - truth) ** 2))
    print(
        f"D={dimensions} m={m} n={N_USERS}: total {median['total']:.2f} s (encode {median['encode']:.2f}, "
        f"observations {median['observe']:.2f}, all {m**dimensions} cells {median['cells'] * 1e3:.1f} ms, "
        f"100 ranges {median['ranges'] * 1e3:.2f} ms); peak traced memory {peak / 2**20:.0f} MiB"
    )
    many_lower, many_upper = random_ranges(shape, 10_000, data_rng)
    vectorised, _ = timed(lambda: oracle.range_queries(many_lower, many_upper))
    single, _ = timed(lambda: [oracle.range_query(lo, up) for lo, up in zip(lower, upper)])
    literal, literal_answers = timed(lambda: box_sums(last["frequencies"], lower, upper))
    assert np.allclose(literal_answers, last["answers"], rtol=1e-9, atol=1e-6)
    print(
        f"  per query: {vectorised / 1e4 * 1e6:.2f} us vectorised (10,000 queries), {single / 100 * 1e6:.1f} us one call each; "
        f"baseline box sums (eq. 7 literally) {literal / 100 * 1e6:.1f} us per query: "
        f"ratio {literal / single:.1f}x vs one call each, {literal / 100 / (vectorised / 1e4):.0f}x vs vectorised"
    )
    print(
        f"  mean squared range error {mse_range:.4g} (expected {mechanism.range_variances(counts, lower, upper).mean():.4g}, "
        f"bound Thm 3 {mechanism.variance_bound(N_USERS):.4g})"
    )
    if m**dimensions <= 4096:
        dense_time, dense = timed(lambda: dense_estimate(mechanism, oracle.observations), repeats=1)
        kron_time, ours = timed(lambda: oracle.frequencies())
        assert np.allclose(dense, ours, atol=1e-6 * np.abs(ours).max())
        print(
            f"  all cells: Kronecker factors {kron_time * 1e3:.2f} ms vs dense {m**dimensions}x{m**dimensions} inverse "
            f"{dense_time * 1e3:.0f} ms (build + matvec), ratio {dense_time / kron_time:.0f}x"
        )
    else:
        print(f"  dense {m**dimensions}^2 inverse baseline not run: it would need {(m**dimensions) ** 2 * 8 / 2**30:.0f} GiB")


def bench_line(m: int, n: int = N_USERS) -> None:
    from designer.commands.range import simulate_range

    seconds, peak, result = measure(lambda: simulate_range(m, 1, EPSILON, n, 100, 0))
    print(f"range --m {m} --D 1 --n {n:,}: {seconds:.2f} s end to end (encode + estimate {result['seconds']:.2f} s), "
          f"peak traced memory {peak:.0f} MiB; mean squared range error {result['mse_range']:.4g} "
          f"(expected {result['expected_mse_range']:.4g}, bound {result['bound']:.4g})")


def bench_streaming(m: int = 1024, n: int = 250_000) -> None:
    mechanism = L1RangeMechanism((m,), EPSILON)
    values = zipf_values((m,), n, np.random.default_rng(0))
    at_once, peak_once, _ = measure(lambda: mechanism.observations(mechanism.encode(values, np.random.default_rng(1))))
    streamed, peak_streamed, _ = measure(lambda: mechanism.collect(values, np.random.default_rng(1)))
    print(f"m={m}, n={n:,}: every report at once {at_once:.2f} s, peak {peak_once:.0f} MiB; streamed collect "
          f"{streamed:.2f} s, peak {peak_streamed:.0f} MiB: time ratio {at_once / streamed:.2f}x, memory ratio "
          f"{peak_once / peak_streamed:.1f}x")


def main() -> None:
    chosen = sys.argv[1:] or ["grid", "line"]
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores shared)")
    if "grid" in chosen:
        bench_range(2, 64)
        bench_range(3, 32)
    if "line" in chosen:
        bench_streaming()
        bench_line(1024)
        bench_line(4096)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
