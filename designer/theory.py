"""Error bounds and sample complexities of context-aware-ldp.md (Sections 2, 5 and 6).

Two kinds of answers to "how many users do I need for TV error alpha":

* the *bounds* of the HR schemes, with their constants — (17) for high-low HR,
  (20) for block HR (classic HR = one block) — and their inversions
  :func:`high_low_users_needed`, :func:`block_users_needed`, which give an ``n``
  for which the bound is at most ``alpha`` (sufficient, not necessary);
* the *orders* of Theorems 3 and 4 and eq. (3) (``Theta(...)``, constants unknown),
  useful to compare models: :func:`sample_complexity_order`.

Notation: ``c(eps) = (e^eps + 1) / (e^eps - 1)``.

Reading of (17). The paper prints the second term as ``sqrt((e^eps+1)/(e^eps-1)) k/n``;
its proof, (27), derives ``sqrt((e^eps+1)/(e^eps-1) * k/n)``, which is what we use.
(27) bounds ``E[l1]``, so both (17) and (20) (whose proof (29) also bounds ``E[l1]``)
bound ``E[d_TV] = E[l1]/2`` with a factor 2 to spare; we keep the printed constants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def hr_scale(epsilon: float) -> float:
    """``(e^eps + 1) / (e^eps - 1)`` (``= 1/tanh(eps/2)``), which is ``O(1/eps)`` for ``eps = O(1)``."""
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    return 1.0 / math.tanh(epsilon / 2.0)


def high_low_tv_bound(k: int, sensitive: int, epsilon: float, n: int) -> float:
    """Bound (17) (as proved in (27)) on ``E[d_TV]`` for high-low HR with ``s`` sensitive symbols::

        sqrt(3 s^2 c^2 / n) + sqrt(c k / n)
    """
    c = hr_scale(epsilon)
    _check_n(n)
    return math.sqrt(3.0 * sensitive**2 * c**2 / n) + math.sqrt(c * k / n)


def block_tv_bound(block_sizes: Sequence[int], epsilon: float, n: int) -> float:
    """Bound (20) on ``E[d_TV]`` for block HR: ``2 c sqrt(3 sum_j k_j^2 / n)``.

    One block of size k gives the classic HR bound ``2 c sqrt(3 k^2 / n)``.
    """
    _check_n(n)
    return 2.0 * hr_scale(epsilon) * math.sqrt(3.0 * _sum_squares(block_sizes) / n)


def block_l2_squared_bound(block_sizes: Sequence[int], epsilon: float, n: int) -> float:
    """Bound (20) on ``E[l2^2(p_hat, p)]`` for block HR: ``12 max_j k_j c^2 / n``."""
    _check_n(n)
    return 12.0 * max(int(size) for size in block_sizes) * hr_scale(epsilon) ** 2 / n


def high_low_users_needed(k: int, sensitive: int, epsilon: float, alpha: float) -> int:
    """Smallest n with bound (17) <= alpha: ``ceil((sqrt(3) s c + sqrt(c k))^2 / alpha^2)``."""
    c = hr_scale(epsilon)
    _check_alpha(alpha)
    return math.ceil((math.sqrt(3.0) * sensitive * c + math.sqrt(c * k)) ** 2 / alpha**2)


def block_users_needed(block_sizes: Sequence[int], epsilon: float, alpha: float) -> int:
    """Smallest n with bound (20) <= alpha: ``ceil(12 c^2 sum_j k_j^2 / alpha^2)``."""
    _check_alpha(alpha)
    return math.ceil(12.0 * hr_scale(epsilon) ** 2 * _sum_squares(block_sizes) / alpha**2)


def sample_complexity_order(
    alpha: float,
    epsilon: float,
    k: int | None = None,
    sensitive: int | None = None,
    block_sizes: Sequence[int] | None = None,
) -> float:
    """The Theta-order (constant 1) of the optimal sample complexity.

    * ``block_sizes`` given — Theorem 4: ``sum_i k_i^2 / (alpha^2 eps^2)``;
    * ``k`` and ``sensitive`` given — Theorem 3 (stated for ``s < k/2``, ``eps = O(1)``):
      ``s^2 / (alpha^2 eps^2) + k / (alpha^2 eps)``;
    * ``k`` only — classic LDP, eq. (3): ``k^2 / (alpha^2 eps^2)``.
    """
    _check_alpha(alpha)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    if block_sizes is not None:
        return _sum_squares(block_sizes) / (alpha**2 * epsilon**2)
    if k is None:
        raise ValueError("give k, k and sensitive, or block_sizes")
    if sensitive is not None:
        return sensitive**2 / (alpha**2 * epsilon**2) + k / (alpha**2 * epsilon)
    return k**2 / (alpha**2 * epsilon**2)


def _sum_squares(block_sizes: Sequence[int]) -> float:
    sizes = np.asarray(block_sizes, dtype=float)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.min() < 1:
        raise ValueError(f"block sizes must be a non-empty list of positive integers, got {block_sizes!r}")
    return float(np.sum(sizes**2))


def _check_n(n: int) -> None:
    if not n >= 1:
        raise ValueError(f"n must be a positive number of reports, got {n}")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha:
        raise ValueError(f"alpha must be > 0, got {alpha}")
