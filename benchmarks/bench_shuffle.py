"""Benchmark: central epsilon after shuffling, channel-specific bounds against the generic bound (same run).

* Binary randomised response, eps0 = 4, n = 10^5, delta = 1e-6: the proved channel-specific
  bound (the exact count analysis over every composition of the others; median of 3), the clone
  reduction alone, the exact divergence of the shuffled count with every other user holding 0 (the
  lower bound), and Feldman-McMillan-Talwar's generic bound (any 4-LDP randomiser) by the
  package's numerics and by a direct float re-implementation summing every clone count
  (no bins), which must agree to 4 digits (their published interval: 0.1675-0.1728).
* k-ary randomised response, k = 10, eps0 = 2, delta = 1e-8, n = 10^4, 10^6, 10^8: proved bound
  against the exact two-count test (lower bound) and against the generic bound; wall time of the
  proved bound at n = 10^8.
* Block Hadamard response (25 blocks of 1750, k = 43,750, eps = log 3) and high-low Hadamard
  response (k = 43,750, 1000 sensitive) from their packages, n = 10^6, delta = 1e-8.
* The figure ``docs/images/shuffle_central_epsilon.png``: central epsilon against n.

Run: ``.venv/bin/python benchmarks/bench_shuffle.py`` (about 2-3 minutes).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from scipy import stats

from designer.deploy.structured import build_hadamard_package, build_high_low_package
from designer.shuffle.analysis import shuffle_guarantee
from designer.shuffle.clones import table_pairs
from designer.shuffle.divergence import epsilon_of, fmt_generic
from designer.shuffle.sources import package_pairs

FIGURE = Path(__file__).resolve().parent.parent / "docs" / "images" / "shuffle_central_epsilon.png"


def randomised_response(k: int, epsilon: float) -> np.ndarray:
    growth = math.exp(epsilon)
    matrix = np.full((k, k), 1 / (growth + k - 1))
    np.fill_diagonal(matrix, growth / (growth + k - 1))
    return matrix


def unary_encoding(k: int, epsilon: float) -> np.ndarray:
    """Optimised unary encoding (bit x kept with 1/2, others set with 1/(e^eps + 1)): k x 2^k."""
    keep, flip = 0.5, 1 / (math.exp(epsilon) + 1)
    bits = (np.arange(1 << k)[:, None] >> np.arange(k)[None, :]) & 1
    rows = []
    for x in range(k):
        probability = np.where(np.arange(k) == x, keep, flip)
        rows.append(np.prod(np.where(bits == 1, probability, 1 - probability), axis=1))
    return np.array(rows)


def designed_optimum(k: int, epsilon: float) -> np.ndarray:
    from designer.design.vertex import design_by_vertices
    from designer.spec import PrivacyMatrix

    levels = np.full((k, k), epsilon)
    np.fill_diagonal(levels, 0.0)
    return np.asarray(design_by_vertices(PrivacyMatrix(levels)).channel.matrix)


def table(matrix: np.ndarray, n: int, delta: float, **options):
    return shuffle_guarantee(table_pairs(matrix, None, [str(x) for x in range(matrix.shape[0])]), n,
                             delta=delta, **options)


def fmt_direct(epsilon0: float, n: int, delta: float) -> float:
    """FMT's generic computation re-implemented in floats: every clone count, binomial tails, bisection."""
    growth0 = math.exp(epsilon0)
    a = growth0 / (growth0 + 1)
    c = np.arange(n)
    weights = stats.binom.pmf(c, n - 1, math.exp(-epsilon0))
    keep = weights > 1e-30
    c, weights = c[keep], weights[keep]

    def divergence(epsilon):
        growth = math.exp(epsilon)
        share = (growth * growth0 - 1) / ((growth0 - 1) * (growth + 1))
        first = np.floor(share * (c + 1)).astype(np.int64) + 1
        upper, upper_next = stats.binom.sf(first - 2, c, 0.5), stats.binom.sf(first - 1, c, 0.5)
        value = a * upper + (1 - a) * upper_next - growth * ((1 - a) * upper + a * upper_next)
        return float(np.dot(weights, np.maximum(value, 0)))

    low, high = 0.0, epsilon0
    for _ in range(50):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if divergence(middle) > delta else (low, middle)
    return high


def clock(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    print("## binary RR, eps0 = 4, n = 1e5, delta = 1e-6")
    binary_rr = randomised_response(2, 4.0)
    runs = [clock(lambda: table(binary_rr, 100_000, 1e-6)) for _ in range(3)]
    seconds, binary = sorted(runs, key=lambda run: run[0])[1]
    pair = table_pairs(binary_rr, None, ["0", "1"])[0]
    clone_seconds, clones = clock(lambda: min(epsilon_of(1e-6, e)[0] for e in pair.experiments(99_999, pair.share_all)))
    generic_seconds, generic = clock(lambda: epsilon_of(1e-6, fmt_generic(4.0, 100_000))[0])
    direct_seconds, direct = clock(lambda: fmt_direct(4.0, 100_000, 1e-6))
    print(f"proved channel-specific epsilon {binary.epsilon:.6f} ({binary.pairs[0].source[0]}, whole analysis incl. "
          f"lower bound: median of 3 {seconds:.2f} s); exact (all others 0) {binary.lower:.6f}; "
          f"ratio {binary.epsilon / binary.lower:.5f}")
    print(f"clone reduction alone {clones:.6f} ({clone_seconds:.2f} s); generic FMT: proved {generic:.6f} "
          f"({generic_seconds:.2f} s), direct float sum {direct:.6f} ({direct_seconds:.2f} s); "
          f"channel-specific / generic {binary.epsilon / generic:.3f}, / clone reduction {binary.epsilon / clones:.3f}")

    print("## k-ary RR, k = 10, eps0 = 2, delta = 1e-8")
    for n in (10_000, 1_000_000, 100_000_000):
        seconds, result = clock(lambda: table(randomised_response(10, 2.0), n, 1e-8))
        generic_seconds, generic = clock(lambda: epsilon_of(1e-8, fmt_generic(2.0, n))[0])
        print(f"n = {n:.0e}: proved {result.epsilon:.6g} (whole analysis incl. lower bound {seconds:.2f} s), "
              f"lower bound (concrete test) {result.lower:.6g} (upper/lower {result.epsilon / result.lower:.4f}), "
              f"generic {generic:.6g} ({generic_seconds:.2f} s)")
    pairs = table_pairs(randomised_response(10, 2.0), None, [str(x) for x in range(10)])[:1]
    times = [clock(lambda: shuffle_guarantee(pairs, 100_000_000, delta=1e-8))[0] for _ in range(3)]
    print(f"n = 1e8, one pair class, bound + lower bound: median {sorted(times)[1]:.2f} s")

    print("## structured packages at k = 43,750, n = 1e6, delta = 1e-8")
    block = package_pairs(build_hadamard_package([1750] * 25, "log(3)"))[0]
    for population in (None, 10_000, 40_000):
        seconds, result = clock(lambda: shuffle_guarantee(block, 1_000_000, delta=1e-8, population=population))
        named = {r.pair.name: r.value[0] for r in result.pairs}
        print(f"block HR, population {population}: same block {named['same block']:.5g}, different blocks "
              f"{named['different blocks']}, lower {result.lower:.5g} ({seconds:.2f} s)")
    high_low = package_pairs(build_high_low_package(43_750, range(1000), "log(3)"))[0]
    seconds, result = clock(lambda: shuffle_guarantee(high_low, 1_000_000, delta=1e-8))
    named = {r.pair.name: r.value for r in result.pairs}
    print(f"high-low HR: two sensitive {named['two sensitive inputs'][0]:.5g}, sensitive/non-sensitive "
          f"{named[next(n for n in named if n.startswith('sensitive'))]} ({seconds:.2f} s)")

    figure()


def figure() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    delta, epsilon0, k = 1e-6, 2.0, 4
    block = package_pairs(build_hadamard_package([1750] * 25, "2"))[0]
    curves = {
        f"{k}-ary RR": lambda n: table(randomised_response(k, epsilon0), n, delta).epsilon,
        f"OUE (k = {k})": lambda n: table(unary_encoding(k, epsilon0), n, delta).epsilon,
        f"designed optimum (k = {k}, MI)": lambda n: table(designed_optimum(k, epsilon0), n, delta).epsilon,
        "block HR k = 43,750 (n/25 per block)": lambda n: shuffle_guarantee(
            block, n, delta=delta, population=n // 25).epsilon,
        "generic (any 2-LDP, FMT)": lambda n: epsilon_of(delta, fmt_generic(epsilon0, n))[0],
    }
    fig, axis = plt.subplots(figsize=(6.4, 4.2))
    for name, curve in curves.items():
        values = [curve(n) for n in sizes]
        print(f"figure: {name}: " + ", ".join(f"{v:.4g}" for v in values))
        axis.loglog(sizes, values, marker="o", linestyle="--" if name.startswith("generic") else "-", label=name)
    axis.set_xlabel("n (shuffled reports)")
    axis.set_ylabel(f"central epsilon (delta = {delta:g}, proved)")
    axis.set_title(f"Central epsilon after shuffling, local level {epsilon0:g}")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=120)
    print(f"wrote {FIGURE}")


if __name__ == "__main__":
    main()
