"""Benchmark: certify dense channels against a general E matrix.

* float mode on a 1000 x 1000 channel: median time and peak memory
  (tracemalloc sees NumPy's allocations);
* the same kernel against a plain double loop over pairs (NumPy over outputs)
  on a 100 x 100 case, measured in the same run: the ratio;
* exact mode (rational entries, rigorous exp bounds) on 100 x 100.

Run: ``.venv/bin/python benchmarks/bench_certify.py``
"""

from __future__ import annotations

import statistics
from fractions import Fraction

import numpy as np

from timing import peak_megabytes, run_times

from designer import Channel, PrivacyMatrix, certify


def general_case(k: int, seed: int) -> tuple[Channel, PrivacyMatrix]:
    """A dense random channel and an asymmetric E with inf entries, near the channel's tight E."""
    rng = np.random.default_rng(seed)
    matrix = rng.random((k, k)) + 0.05
    matrix /= matrix.sum(axis=1, keepdims=True)
    channel = Channel(matrix)
    tight = channel.tight_privacy().epsilon
    epsilon = tight + rng.uniform(0.0, 0.5, (k, k))
    epsilon[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(epsilon, 0.0)
    return channel, PrivacyMatrix(epsilon)


def double_loop(channel: Channel, privacy: PrivacyMatrix) -> bool:
    """Baseline: a plain loop over pairs, NumPy over outputs."""
    logs = np.log(channel.matrix)
    allowed = privacy.epsilon
    ok = True
    for x in range(channel.k):
        for x_prime in range(channel.k):
            if x != x_prime and np.max(logs[x] - logs[x_prime]) > allowed[x, x_prime] + 1e-9:
                ok = False
    return ok


def main() -> None:
    channel, privacy = general_case(1000, seed=1)
    certify(channel, privacy)  # warm-up
    big, certificate = run_times(lambda: certify(channel, privacy), repeats=5)
    verdict = certificate.verdict
    peak = peak_megabytes(lambda: certify(channel, privacy)) * 2**20
    print(f"float certify 1000x1000 (general E, {verdict}): median {statistics.median(big):.3f} s "
          f"(min {min(big):.3f}, max {max(big):.3f}), peak traced memory {peak / 2**20:.0f} MiB")
    loop_big = run_times(lambda: double_loop(channel, privacy), repeats=1)[0][0]
    print(f"1000x1000 plain double loop (one run): {loop_big:.1f} s, ratio {loop_big / statistics.median(big):.0f}x")

    small_channel, small_privacy = general_case(100, seed=2)
    ours, _ = run_times(lambda: certify(small_channel, small_privacy), repeats=7)
    loop, _ = run_times(lambda: double_loop(small_channel, small_privacy), repeats=7)
    assert double_loop(small_channel, small_privacy) == certify(small_channel, small_privacy).certified
    print(f"100x100: certify median {statistics.median(ours) * 1e3:.2f} ms, plain double loop "
          f"{statistics.median(loop) * 1e3:.1f} ms, ratio {statistics.median(loop) / statistics.median(ours):.0f}x")

    counts = np.rint(small_channel.matrix * 10**6).astype(int) + 1
    exact_channel = Channel([[Fraction(int(c), int(row.sum())) for c in row] for row in counts])
    exact_times, _ = run_times(lambda: certify(exact_channel, small_privacy, exact=True), repeats=3)
    print(f"exact certify 100x100 (rational entries): median {statistics.median(exact_times):.2f} s")


if __name__ == "__main__":
    main()
