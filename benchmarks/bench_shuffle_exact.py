"""Benchmark: the proved central epsilon against independent exact values, across k, eps0, n and rounds.

Every reference is computed here, without the package's numerics:

* **binary RR** (k = 2): the exact divergence of the shuffled count with every other user at the
  same input (a concrete dataset, so a lower end of the truth: scipy binomial laws in log space on a
  window of 40 sd), and at n = 10^3 the exact worst case over every composition of the others
  (scipy.signal convolution of the two binomial laws per composition): the truth itself;
* **k-ary RR** (k >= 3): the exact divergence of the shuffled histogram with every other user at
  one input z outside {x, x'} (its likelihood ratio depends on (h_x, h_x', h_z): nested binomial
  laws on a dense grid) where that grid fits, else of the counts (h_x, h_x') alone (a
  post-processing), and at n = 10^3 the larger with every other user at x (the counts (h_x, h_x')):
  lower ends of the truth; the analysis gets the whole table up to k = 10 and the rows of x, x' and z
  above (the same shares and total variation as the full channel, so the same bound: the group
  reduction, which counts the inputs, does not apply there);
* **binary blocks under --population**: the exact worst case over every composition of the
  assumed users (convolution);
* **rounds**: the all-zeros dataset's count laws composed by ``dp_accounting`` (Google's PLD
  library, pessimistic discretisation 1e-4): an independent estimate of that dataset's T-round
  epsilon.

Ratios are proved / reference. Run: ``nice -n 5 .venv/bin/python benchmarks/bench_shuffle_exact.py [quick]
[binary] [kary] [blocks] [rounds]`` (all sections by default; about 20 minutes on a loaded machine; ``quick``
skips n = 10^9).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import signal, stats

from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.clones import table_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from reference import hockey_epsilon, randomised_response  # noqa: E402  (the tests' independent references)

DELTA = 1e-6


def binary_all_zeros(epsilon0: float, n: int, delta: float) -> float:
    """Binary RR, the other n - 1 users all hold 0: the count law, summed on a window of +-40 sd (scipy), the
    larger epsilon of the two directions."""
    growth = math.exp(epsilon0)
    flip = 1 / (1 + growth)
    m = n - 1
    sd = math.sqrt(m * flip * (1 - flip))
    c = np.arange(max(0, int(m * flip - 40 * sd) - 2), min(m, int(m * flip + 40 * sd) + 2) + 2)
    base = np.exp(stats.binom.logpmf(c, m, flip))
    shifted = np.exp(stats.binom.logpmf(c - 1, m, flip))
    first, second = (1 - flip) * base + flip * shifted, flip * base + (1 - flip) * shifted
    return max(hockey_epsilon(first, second, delta), hockey_epsilon(second, first, delta))  # both directions


def composition_delta(first, second, low, high, others, epsilon) -> float:
    """The largest delta_a(epsilon) over every composition a (convolution of two binomial laws)."""
    worst = 0.0
    for a in range(others + 1):
        law = np.maximum(signal.fftconvolve(stats.binom.pmf(np.arange(a + 1), a, high),
                                            stats.binom.pmf(np.arange(others - a + 1), others - a, low)), 0)
        zero, one = np.append(law, 0.0), np.insert(law, 0, 0.0)
        p, q = first * one + (1 - first) * zero, second * one + (1 - second) * zero
        worst = max(worst, float(np.maximum(p - math.exp(epsilon) * q, 0).sum()))
    return worst


def binary_every_composition(first, second, low, high, others, delta, hint: float) -> float:
    """The exact worst case over every composition, both directions: bisection on the convolutions, from
    ``hint / 1.1`` to ``hint`` when ``hint`` is valid (to 1e-5 relative), else from 0 to 8."""
    def largest(epsilon):
        return max(composition_delta(first, second, low, high, others, epsilon),
                   composition_delta(second, first, low, high, others, epsilon))
    lo, hi = (hint / 1.1, hint) if largest(hint) <= delta and largest(hint / 1.1) > delta else (0.0, 8.0)
    for _ in range(14 if hi == hint else 40):
        middle = 0.5 * (lo + hi)
        lo, hi = (middle, hi) if largest(middle) > delta else (lo, middle)
    return hi


def k_ary_all_z(k: int, epsilon0: float, n: int, delta: float) -> tuple[float, str]:
    """k-ary RR, the others all at z: (h_x, h_x', h_z) when the grid fits, else (h_x, h_x') alone."""
    growth = math.exp(epsilon0)
    low, high, m = 1 / (growth + k - 1), growth / (growth + k - 1), n - 1
    pair_mass = stats.binom.pmf(np.arange(m + 1), m, 2 * low)
    alive = np.flatnonzero(pair_mass > 1e-40)
    first_s, last_s = int(alive[0]), int(alive[-1])
    share = high / (1 - 2 * low)
    three = (last_s + 2) ** 2 * (m + 2) <= 3e7
    depth = m + 2 if three else 1
    first = np.zeros((last_s + 2, last_s + 2, depth))
    second = np.zeros_like(first)
    moves = ((1, 0, 0, high, low), (0, 1, 0, low, high), (0, 0, 1, low, low), (0, 0, 0, (k - 3) * low, (k - 3) * low))
    for s in range(first_s, last_s + 1):
        split = stats.binom.pmf(np.arange(s + 1), s, 0.5)
        if three:
            law = pair_mass[s] * np.outer(split, stats.binom.pmf(np.arange(m - s + 1), m - s, share))
            for dx, dxp, dz, p, q in moves:
                cells = (s + dx + dxp, slice(dx, dx + s + 1), slice(dz, dz + m - s + 1))
                first[cells] += p * law
                second[cells] += q * law
        else:
            law = pair_mass[s] * split[:, None]
            for dx, dxp, _, p, q in moves:
                cells = (s + dx + dxp, slice(dx, dx + s + 1), slice(0, 1))
                first[cells] += p * law
                second[cells] += q * law
    return hockey_epsilon(first, second, delta), ("(h_x, h_x', h_z)" if three else "(h_x, h_x')")


def k_ary_all_x(k: int, epsilon0: float, n: int, delta: float) -> float:
    """k-ary RR, the other n - 1 users all hold x: the counts (h_x, h_x') (a post-processing), both directions."""
    growth = math.exp(epsilon0)
    low, high, m = 1 / (growth + k - 1), growth / (growth + k - 1), n - 1
    h = np.arange(m + 1)
    law = stats.binom.pmf(h, m, high)[:, None] * stats.binom.pmf(h[None, :], (m - h)[:, None], low / (1 - high))
    first, second = np.zeros((m + 2, m + 2)), np.zeros((m + 2, m + 2))
    for (dx, dxp), p, q in (((1, 0), high, low), ((0, 1), low, high), ((0, 0), 1 - high - low, 1 - high - low)):
        first[dx:dx + m + 1, dxp:dxp + m + 1] += p * law
        second[dx:dx + m + 1, dxp:dxp + m + 1] += q * law
    return max(hockey_epsilon(first, second, delta), hockey_epsilon(second, first, delta))


def proved(matrix: np.ndarray, n: int, **options):
    start = time.perf_counter()
    result = shuffle_guarantee(table_pairs(matrix, None, [str(x) for x in range(matrix.shape[0])]), n,
                               delta=DELTA, **options)
    return result, time.perf_counter() - start


def main(quick: bool, sections: set[str]) -> None:
    print(f"load: {os.getloadavg()[0]:.1f} (1-minute average), delta = {DELTA:g}")
    if "binary" in sections:
        binary(quick)
    if "kary" in sections:
        k_ary()
    if "blocks" in sections:
        blocks()
    if "rounds" in sections:
        rounds()


def binary(quick: bool) -> None:
    print("## binary RR: proved / exact (others all at one input; n = 10^3: worst over every composition)")
    print("| eps0 | n | proved | reference | ratio | lower bound | seconds |")
    print("|---|---|---|---|---|---|---|")
    sizes = (10**3, 10**5, 10**7) if quick else (10**3, 10**5, 10**7, 10**9)
    for epsilon0 in (0.1, 0.5, 1.0, 2.0, 4.0, 6.0):
        for n in sizes:
            result, seconds = proved(randomised_response(2, epsilon0), n)
            r = math.exp(epsilon0) / (1 + math.exp(epsilon0))
            if n == 10**3:
                reference = binary_every_composition(r, 1 - r, 1 - r, r, n - 1, DELTA, result.epsilon)
                name = "every composition"
            else:
                reference, name = binary_all_zeros(epsilon0, n, DELTA), "all zeros"
            print(f"| {epsilon0:g} | 10^{round(math.log10(n))} | {result.epsilon:.6g} | {reference:.6g} ({name}) | "
                  f"{result.epsilon / reference:.4f} | {result.lower:.6g} | {seconds:.1f} |", flush=True)
    for n in (10**6, 10**8):
        result, seconds = proved(randomised_response(2, 4.0), n)
        reference = binary_all_zeros(4.0, n, DELTA)
        print(f"| 4 | 10^{round(math.log10(n))} | {result.epsilon:.6g} | {reference:.6g} (all zeros) | "
              f"{result.epsilon / reference:.4f} | {result.lower:.6g} | {seconds:.1f} |", flush=True)



def k_ary() -> None:
    print("## k-ary RR: proved / exact divergence of the all-z dataset (a lower end of the truth)")
    print("| k | eps0 | n | proved | reference (statistic) | ratio | lower bound | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for k in (3, 10, 100, 1000):
        for epsilon0 in (0.1, 1.0, 4.0, 6.0):
            for n in (10**3, 10**4):
                # the whole table up to k = 10 (the group reduction counts the inputs the others may hold); above,
                # the rows of x, x' and z (the same shares and total variation; the group reduction, which needs at
                # most 128 blanket draws expected, does not apply at n >= 10^3 there)
                rows = randomised_response(k, epsilon0)[:k if k <= 10 else 3, :]
                result, seconds = proved(rows, n)
                reference, statistic = k_ary_all_z(k, epsilon0, n, DELTA)
                if n == 10**3:  # the others all at x: a second concrete dataset
                    at_x = k_ary_all_x(k, epsilon0, n, DELTA)
                    reference, statistic = max((reference, statistic), (at_x, "all at x: (h_x, h_x')"))
                print(f"| {k} | {epsilon0:g} | 10^{round(math.log10(n))} | {result.epsilon:.6g} | {reference:.6g} "
                      f"{statistic} | {result.epsilon / reference:.4f} | {result.lower:.6g} | {seconds:.1f} |",
                      flush=True)



def blocks() -> None:
    print("## binary blocks under --population m (block RR, blocks of 2, eps0 = 2): proved / exact over compositions")
    block = randomised_response(2, 2.0)
    matrix = np.zeros((4, 4))
    matrix[:2, :2], matrix[2:, 2:] = block, block
    protected = np.kron(np.eye(2, dtype=bool), np.ones((2, 2), dtype=bool))
    r = block[0, 0]
    for population in (300, 1000):
        start = time.perf_counter()
        result = shuffle_guarantee(table_pairs(matrix, protected, "0123"), 10**6, delta=DELTA, population=population)
        seconds = time.perf_counter() - start
        reference = binary_every_composition(r, 1 - r, 1 - r, r, population, DELTA, result.epsilon)
        print(f"population {population}: proved {result.epsilon:.6g} ({result.pairs[0].source[0]}), exact "
              f"{reference:.6g}, ratio {result.epsilon / reference:.4f} ({seconds:.1f} s)", flush=True)



def rounds() -> None:
    print("## rounds: binary RR eps0 = 4, proved / dp_accounting's composition of the all-zeros dataset")
    from dp_accounting.pld import privacy_loss_distribution

    for n, count in ((10**3, 10), (10**5, 10), (10**5, 100)):
        result, seconds = proved(randomised_response(2, 4.0), n, rounds=count)
        flip = 1 / (1 + math.exp(4.0))
        c = np.arange(n + 1)
        base, shifted = stats.binom.pmf(c, n - 1, flip), stats.binom.pmf(c - 1, n - 1, flip)
        p, q = (1 - flip) * base + flip * shifted, flip * base + (1 - flip) * shifted
        keep = (p > 1e-300) & (q > 1e-300)
        library = privacy_loss_distribution.from_two_probability_mass_functions(
            dict(zip(c[keep].tolist(), np.log(q[keep]).tolist())), dict(zip(c[keep].tolist(), np.log(p[keep]).tolist())),
            value_discretization_interval=1e-4).self_compose(count)
        reference = library.get_epsilon_for_delta(DELTA)
        print(f"n = {n}, T = {count}: proved {result.epsilon:.6g} ({result.pairs[0].source[0]}), dp_accounting "
              f"{reference:.6g}, ratio {result.epsilon / reference:.4f}, lower {result.lower:.6g} ({seconds:.1f} s)",
              flush=True)


if __name__ == "__main__":
    chosen = set(sys.argv[1:]) & {"binary", "kary", "blocks", "rounds"}
    main("quick" in sys.argv[1:], chosen or {"binary", "kary", "blocks", "rounds"})
