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
