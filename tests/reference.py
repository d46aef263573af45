"""Independent brute-force reference computations shared by the tests (import as `reference`)."""

from __future__ import annotations

import itertools
import math

import numpy as np


def brute_force_tight(matrix: np.ndarray) -> np.ndarray:
    """Tight E by a plain double loop over pairs and outputs (the definition, literally)."""
    k, m = matrix.shape
    tight = np.zeros((k, k))
    for x in range(k):
        for x_prime in range(k):
            if x == x_prime:
                continue
            best = 0.0
            for y in range(m):
                a, b = matrix[x, y], matrix[x_prime, y]
                if a > 0 and b == 0:
                    best = math.inf
                elif a > 0:
                    best = max(best, math.log(a / b))
            tight[x, x_prime] = best
    return tight


def satisfies_all_subsets(matrix: np.ndarray, epsilon: np.ndarray) -> bool:
    """Definition 2 (eq. 4) checked on every output subset S (2^m of them)."""
    k, m = matrix.shape
    for size in range(1, m + 1):
        for subset in itertools.combinations(range(m), size):
            mass = matrix[:, list(subset)].sum(axis=1)
            for x in range(k):
                for x_prime in range(k):
                    if math.isinf(epsilon[x, x_prime]):
                        continue
                    if mass[x] > math.exp(epsilon[x, x_prime]) * mass[x_prime] * (1 + 1e-12):
                        return False
    return True


def random_channel(rng: np.random.Generator, k: int, m: int, zero_fraction: float = 0.0) -> np.ndarray:
    """A random k x m stochastic matrix, with some zeros if asked (never an all-zero row)."""
    matrix = rng.random((k, m)) + 1e-3
    if zero_fraction:
        matrix[rng.random((k, m)) < zero_fraction] = 0.0
        empty = matrix.sum(axis=1) == 0
        matrix[empty, 0] = 1.0
    return matrix / matrix.sum(axis=1, keepdims=True)


def random_privacy(k: int, seed: int):
    """A random asymmetric E: entries U[0.5, 2], 10% inf, zero diagonal (the column-generation benchmark's family)."""
    from designer.spec import PrivacyMatrix

    rng = np.random.default_rng(seed)
    values = rng.uniform(0.5, 2.0, (k, k))
    values[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(values, 0)
    return PrivacyMatrix(values)


def randomised_response(k: int, epsilon: float) -> np.ndarray:
    """k-ary randomised response: e^eps / (e^eps + k - 1) on the diagonal, 1 / (e^eps + k - 1) elsewhere."""
    growth = math.exp(epsilon)
    matrix = np.full((k, k), 1 / (growth + k - 1))
    np.fill_diagonal(matrix, growth / (growth + k - 1))
    return matrix


def smallest_epsilon(divergence, delta: float, high: float, steps: int = 60) -> float:
    """Bisection for the smallest epsilon in [0, high] with divergence(epsilon) <= delta (non-increasing)."""
    low = 0.0
    for _ in range(steps):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if divergence(middle) > delta else (low, middle)
    return high


def hockey_epsilon(first: np.ndarray, second: np.ndarray, delta: float) -> float:
    """The smallest epsilon with sum max(0, P - e^eps P') <= delta: cells sorted by likelihood ratio, prefix sums."""
    first, second = np.ravel(first), np.ravel(second)
    keep = first > second
    first, second = first[keep], second[keep]
    with np.errstate(divide="ignore"):
        ratio = np.log(first) - np.log(second)
    order = np.argsort(-ratio)
    ratio, plain, tilted = ratio[order], np.cumsum(first[order]), np.cumsum(second[order])

    def divergence(epsilon):
        count = int(np.searchsorted(-ratio, -epsilon, side="left"))  # cells with ratio > epsilon
        return 0.0 if count == 0 else plain[count - 1] - math.exp(epsilon) * tilted[count - 1]

    finite = ratio[np.isfinite(ratio)]
    return smallest_epsilon(divergence, delta, float(finite[0]) if finite.size else 60.0, 80)
