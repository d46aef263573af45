"""Benchmark: certify dense channels against a general E matrix.

* float mode on a 1000 x 1000 channel: median time and peak memory
  (tracemalloc sees NumPy's allocations);
* the same kernel against a plain double loop over pairs (NumPy over outputs)
  on a 100 x 100 case, measured in the same run: the ratio;
* exact mode (rational entries) on 1000 x 1000: median, ratio against the float
  certifier on the same channel, and against the previous exact algorithm (a
  Python loop over all k^2 pairs, kept below as :func:`previous_exact` for this
  comparison only), measured in the same run;
* exact mode's worst case: randomised response at k = 1000 with E = log(3)
  exactly tight, where every pair falls through the float filter.

Run: ``.venv/bin/python benchmarks/bench_certify.py`` (add ``exact`` for the exact-mode figures only)
"""

from __future__ import annotations

import statistics
import sys
from fractions import Fraction

import numpy as np

from timing import peak_megabytes, run_times

from designer import Channel, ExactEpsilon, PrivacyMatrix, certify
from designer.exact import log_fraction


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


def previous_exact(channel: Channel, privacy: PrivacyMatrix) -> bool:
    """The exact certifier before the float filter: every pair in a Python loop, float
    logs to pick candidate outputs (window 1e-6), each candidate compared exactly."""
    exact_q = channel.exact_matrix
    logs = np.vectorize(log_fraction, otypes=[float])(exact_q)
    logs[logs == -np.inf] = 0.0
    positive = exact_q != 0
    constraints = privacy.exact_epsilon
    certified = True
    for x in range(channel.k):
        for x_prime in range(channel.k):
            rule = constraints[x, x_prime]
            if x == x_prime or rule.infinite:
                continue
            if np.any(positive[x] & ~positive[x_prime]):
                certified = False
                continue
            both = positive[x] & positive[x_prime]
            if not both.any():
                continue
            ratios = np.where(both, logs[x] - logs[x_prime], -np.inf)
            candidates = np.flatnonzero(ratios >= ratios.max() - 1e-6)
            best = max(exact_q[x, y] / exact_q[x_prime, y] for y in candidates)
            rule.gap(best)  # the margin, as the previous certifier computed it
            certified &= rule.allows(best, Fraction(1))
    return certified


def rational_case(k: int, seed: int) -> tuple[Channel, PrivacyMatrix]:
    """:func:`general_case` with entries rounded to rationals (counts over row totals)."""
    channel, privacy = general_case(k, seed)
    counts = np.rint(channel.matrix * 10**6).astype(int) + 1
    return Channel([[Fraction(int(c), int(row.sum())) for c in row] for row in counts]), privacy


def tight_randomized_response(k: int) -> tuple[Channel, PrivacyMatrix]:
    """Randomised response with e^eps = 3 exactly, against E = log(3): every pair is tight."""
    total = Fraction(3 + k - 1)
    diagonal, other = 3 / total, 1 / total
    channel = Channel([[diagonal if y == x else other for y in range(k)] for x in range(k)])
    level, zero = ExactEpsilon.parse("log(3)"), ExactEpsilon.parse("0")
    return channel, PrivacyMatrix(np.array([[zero if x == y else level for y in range(k)] for x in range(k)], dtype=object))


def exact_benchmark() -> None:
    """Exact mode at k = 1000 against the float certifier and the previous exact algorithm."""
    channel, privacy = rational_case(1000, seed=3)
    floating = Channel(channel.matrix)
    exact_times, proof = run_times(lambda: certify(channel, privacy, exact=True), repeats=3)
    float_times, quick = run_times(lambda: certify(floating, privacy), repeats=3)
    assert proof.verdict == quick.verdict
    privacy.exact_epsilon  # built once before timing: the previous algorithm is timed alone
    previous_times, previous = run_times(lambda: previous_exact(channel, privacy), repeats=1)
    assert previous == proof.certified
    exact, baseline = statistics.median(exact_times), statistics.median(float_times)
    print(f"exact certify 1000x1000 (rational entries, {proof.verdict}): median {exact:.2f} s "
          f"(min {min(exact_times):.2f}, max {max(exact_times):.2f}); float certify of the same channel "
          f"{baseline:.2f} s, ratio {exact / baseline:.1f}x; previous exact algorithm (one run) "
          f"{previous_times[0]:.1f} s, {previous_times[0] / exact:.0f}x slower")
    tight_channel, tight_privacy = tight_randomized_response(1000)
    tight_times, tight = run_times(lambda: certify(tight_channel, tight_privacy, exact=True), repeats=3)
    assert tight.certified and tight.margin == 0.0
    print(f"exact certify 1000x1000 worst case (randomised response tight to E = log 3: every pair "
          f"decided in rationals): median {statistics.median(tight_times):.2f} s "
          f"(min {min(tight_times):.2f}, max {max(tight_times):.2f})")


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

    exact_benchmark()


if __name__ == "__main__":
    if sys.argv[1:] == ["exact"]:  # only the exact-mode figures
        exact_benchmark()
    else:
        main()
