"""Confidence bounds and multiple-testing corrections of the audit.

* Clopper–Pearson (exact binomial) bounds: with ``c`` successes in ``n`` trials
  the one-sided lower bound at error ``a`` is the ``a`` quantile of
  ``Beta(c, n - c + 1)`` (0 when ``c = 0``), the upper bound the ``1 - a``
  quantile of ``Beta(c + 1, n - c)`` (1 when ``c = n``) — Clopper & Pearson
  (1934), the bounds ``ldp-audit`` (Arcolezi & Gambs, PETS 2024) uses.
* A lower confidence bound on ``log P(S|x) / P(S|x')`` at error ``a``:
  ``log L_x(a/2) - log U_x'(a/2)``; if the true ratio is at most ``e^E``,
  exceeding ``E`` needs ``L_x > P(S|x)`` or ``U_x' < P(S|x')``, which has
  probability at most ``a/2 + a/2`` (union bound).
* Its p-value for ``H0: log P(S|x)/P(S|x') <= E``: the smallest ``a`` at which
  that bound exceeds ``E`` (the bound increases with ``a``, so this inverts the
  interval; valid by the argument above).
* (epsilon, delta): a lower confidence bound on the hockey-stick difference
  ``P(S|x) - exp(E) P(S|x')`` at error ``a``: ``L_x(a/2) - exp(E) U_x'(a/2)``
  (the same union bound); ``H0: P(S|x) <= exp(E) P(S|x') + delta`` — approximate
  LDP for the event S — is rejected when it exceeds ``delta``, and its p-value
  inverts it the same way.
* Holm (1979) step-down and Bonferroni corrections across the pairs tested;
  both control the family-wise error under any dependence between the tests.
"""

from __future__ import annotations

import math

import numpy as np

#: Bisection steps for the p-value (on log a; 80 steps reach 1e-20 relative width).
P_VALUE_STEPS = 80
#: The smallest p-value resolved (below, the p-value is reported as this bound).
SMALLEST_P_VALUE = 1e-300


def clopper_pearson_lower(successes, trials, error) -> np.ndarray:
    """One-sided Clopper–Pearson lower bound on a binomial probability.

    Parameters
    ----------
    successes, trials : array_like of int
    error : float or array_like
        One-sided error probability ``a`` (the bound holds with probability ``>= 1 - a``).

    Returns
    -------
    ndarray of float: ``Beta(c, n - c + 1)`` quantile ``a``, 0 where ``c = 0``.
    """
    from scipy.special import betaincinv

    c, n, a = np.broadcast_arrays(np.asarray(successes, float), np.asarray(trials, float), np.asarray(error, float))
    bound = np.zeros(c.shape)
    positive = c > 0
    bound[positive] = betaincinv(c[positive], n[positive] - c[positive] + 1, a[positive])
    return bound


def clopper_pearson_upper(successes, trials, error) -> np.ndarray:
    """One-sided Clopper–Pearson upper bound: ``Beta(c + 1, n - c)`` quantile ``1 - a``, 1 where ``c = n``."""
    from scipy.special import betaincinv

    c, n, a = np.broadcast_arrays(np.asarray(successes, float), np.asarray(trials, float), np.asarray(error, float))
    bound = np.ones(c.shape)
    below = c < n
    bound[below] = betaincinv(c[below] + 1, n[below] - c[below], 1 - a[below])
    return bound


def log_ratio_lower_bound(count_x, trials_x, count_other, trials_other, error) -> np.ndarray:
    """Lower confidence bound on ``log P(S|x) / P(S|x')`` at total error ``error`` (split in halves).

    ``-inf`` when the event was never seen under ``x``.
    """
    lower, upper = _pair_bounds(count_x, trials_x, count_other, trials_other, error)
    with np.errstate(divide="ignore"):
        return np.log(lower) - np.log(upper)


def _pair_bounds(count_x, trials_x, count_other, trials_other, error) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson lower bound on ``P(S|x)`` and upper bound on ``P(S|x')``, each at half of ``error``."""
    half = np.asarray(error, float) / 2
    return clopper_pearson_lower(count_x, trials_x, half), clopper_pearson_upper(count_other, trials_other, half)


def hockey_stick_lower_bound(count_x, trials_x, count_other, trials_other, allowed, error) -> np.ndarray:
    """Lower confidence bound on ``P(S|x) - exp(allowed) P(S|x')`` at total error ``error`` (split in halves)."""
    lower, upper = _pair_bounds(count_x, trials_x, count_other, trials_other, error)
    return lower - np.exp(np.asarray(allowed, float)) * upper


def excess_p_value(count_x, trials_x, count_other, trials_other, allowed, delta: float = 0.0) -> np.ndarray:
    """p-value of ``H0: P(S|x) <= exp(allowed) P(S|x') + delta`` (``delta = 0``: the log-ratio test).

    Inverts :func:`log_ratio_lower_bound` (``delta = 0``) or
    :func:`hockey_stick_lower_bound`: the smallest error ``a`` at which the lower
    bound exceeds ``allowed`` (resp. ``delta``); bisection on ``log a``, 1 when even
    ``a = 1`` does not reject.
    """
    shape = np.broadcast(np.asarray(count_x), np.asarray(allowed)).shape
    arrays = [np.broadcast_to(np.asarray(v, float), shape) for v in (count_x, trials_x, count_other, trials_other)]
    allowed = np.broadcast_to(np.asarray(allowed, float), shape)

    def rejects(error):
        if delta > 0:
            return hockey_stick_lower_bound(*arrays, allowed, error) > delta
        return log_ratio_lower_bound(*arrays, error) > allowed

    at_one = rejects(np.ones(shape))
    low = np.full(shape, math.log(SMALLEST_P_VALUE))
    high = np.zeros(shape)
    already = rejects(np.exp(low))
    for _ in range(P_VALUE_STEPS):
        middle = (low + high) / 2
        below = rejects(np.exp(middle))
        high = np.where(below, middle, high)
        low = np.where(below, low, middle)
    p_value = np.where(at_one, np.exp(high), 1.0)
    return np.where(already, SMALLEST_P_VALUE, p_value)


def holm_rejections(p_values, alpha: float) -> np.ndarray:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level ``alpha``.

    Sort the m p-values; reject the i-th smallest (i = 1..m) while ``p_(i) <= alpha / (m - i + 1)``.
    """
    p_values = np.asarray(p_values, float)
    m = p_values.size
    rejected = np.zeros(m, dtype=bool)
    for rank, index in enumerate(np.argsort(p_values, kind="stable")):
        if p_values[index] > alpha / (m - rank):
            break
        rejected[index] = True
    return rejected


def bonferroni_rejections(p_values, alpha: float) -> np.ndarray:
    """Bonferroni: reject where ``p <= alpha / m``."""
    p_values = np.asarray(p_values, float)
    return p_values <= alpha / max(p_values.size, 1)


def normal_quantile(probability: float) -> float:
    """The standard normal quantile (``scipy.special.ndtri``)."""
    from scipy.special import ndtri

    return float(ndtri(probability))
