"""Benchmark: exact noise samplers against numpy's floating-point samplers (same run).

* Discrete Laplace (:func:`designer.noise.discrete_laplace`, rate 1 and rate
  ``2^31 / 2^40`` i.e. a fine lattice) with a seeded PCG64 and with ``secrets``,
  against ``numpy.random.Generator.laplace`` (the float sampler it replaces).
* The matrix mechanism's end-to-end ``Strategy.respond`` for the prefix strategy
  at m = 64 and n = 50,000 users (3.2 million noisy coordinates), against the
  old float-Laplace respond (``A h_x + Lap(s)`` with numpy), reimplemented here.
* The L1 range mechanism's encoder (integer thresholds) at m = 64, n = 10^6
  (64 million flips), against the old float32-uniform flips.

Medians of ``REPEATS`` runs; ratios are new / float baseline.
Run: ``.venv/bin/python benchmarks/bench_noise.py``
"""

from __future__ import annotations

import numpy as np

from timing import timed

from designer.metric.strategy import design_strategy
from designer.metric.strategy_matrices import PrefixStrategyMatrix
from designer.metric.workloads import AllRangeWorkload
from designer.noise import discrete_laplace
from designer.metric.range_mechanism import L1RangeMechanism
from designer.spec import PrivacyMatrix

REPEATS = 3
DRAWS = 1_000_000


def line_metric(m: int, epsilon: float) -> PrivacyMatrix:
    index = np.arange(m)
    return PrivacyMatrix.metric(np.abs(index[:, None] - index[None, :]), epsilon)


def old_float_respond(strategy, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The replaced sampler: ``A h_x + Lap(s)`` with numpy's float Laplace."""
    scales = np.where(np.isfinite(strategy.noise_scales), strategy.noise_scales, 0.0)
    noise = rng.laplace(0.0, 1.0, size=(values.size, scales.size)) * scales
    return strategy.strategy_matrix.columns(values).T + noise


def old_float_flips(mechanism: L1RangeMechanism, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The replaced encoder of one dimension: float32 uniforms against the flip probability."""
    m = mechanism.shape[0]
    bits = np.arange(m)[None, :] >= values[:, None]
    bits ^= rng.random((values.size, m), dtype=np.float32) < np.float32(mechanism.flip_probability)
    return bits


def report(label: str, seconds: float, baseline: float, count: int) -> None:
    print(f"{label:<48} {seconds:8.3f} s  {count / seconds / 1e6:8.2f} M/s  ratio {seconds / baseline:6.1f}x")


def time_baseline(label: str, function, count: int) -> float:
    """Median seconds of the float ``function``, reported as the baseline of the rows that follow."""
    baseline, _ = timed(function, REPEATS)
    report(f"{label} (baseline)", baseline, baseline, count)
    return baseline


def time_exact(label: str, sample, rng: np.random.Generator, baseline: float, count: int) -> None:
    """Report ``sample(rng)`` (seeded PCG64) and ``sample(None)`` (``secrets``) against ``baseline``."""
    for source, generator in (("PCG64 seeded", rng), ("secrets", None)):
        seconds, _ = timed(lambda: sample(generator), REPEATS)
        report(f"{label}, {source}", seconds, baseline, count)


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"discrete Laplace, {DRAWS:,} draws (median of {REPEATS})")
    baseline = time_baseline("numpy float Laplace", lambda: rng.laplace(0.0, 1.0, size=DRAWS), DRAWS)
    for label, numerator, denominator in (("rate 1", 1, 1), ("rate 2^31/2^40 (fine lattice)", 2**31, 2**40)):
        ones = np.full(DRAWS, numerator)
        time_exact(f"exact discrete Laplace {label}", lambda source: discrete_laplace(ones, denominator, source),
                   rng, baseline, DRAWS)

    m, users = 64, 50_000
    strategy = design_strategy(AllRangeWorkload(m), line_metric(m, 1.0), PrefixStrategyMatrix(m))
    values = rng.integers(0, m, size=users)
    coordinates = users * m
    print(f"\nmatrix mechanism respond, prefix strategy m={m}, n={users:,} ({coordinates:,} coordinates)")
    baseline = time_baseline("old float-Laplace respond", lambda: old_float_respond(strategy, values, rng), coordinates)
    time_exact("respond, exact discrete Laplace", lambda source: strategy.respond(values, source), rng, baseline,
               coordinates)

    mechanism = L1RangeMechanism((64,), 1.0)
    users = 1_000_000
    values = rng.integers(0, 64, size=users)
    flips = users * 64
    print(f"\nL1 range encoder, m=64, D=1, n={users:,} ({flips:,} flips)")
    baseline = time_baseline("old float32 flips", lambda: old_float_flips(mechanism, values, rng), flips)
    time_exact("encode, exact T/2^32 threshold (16-bit words)", lambda source: mechanism.encode(values, source), rng, baseline,
               flips)


if __name__ == "__main__":
    main()
