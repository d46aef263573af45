"""The power statement of an audit: the smallest excess over E it would have detected.

Normal approximation (the delta method on the Clopper–Pearson bounds). With an
event of probability ``p`` under x on ``n`` fresh reports and ``p'`` under x'
on ``n'``, the one-sided bounds at error ``a`` are about
``log p - z s`` and ``log p' + z s'`` with ``z`` the ``1 - a`` normal quantile,
``s = sqrt((1 - p) / (n p))`` and ``s' = sqrt((1 - p') / (n' p'))``. The
estimated log-ratio is about normal with mean ``E + delta`` and variance
``s^2 + s'^2``, so the lower bound exceeds E with probability
``Phi((delta - z (s + s')) / sqrt(s^2 + s'^2))``. Detecting with probability
``power`` needs ``delta = z (s + s') + z_power sqrt(s^2 + s'^2)``, where
``p' = p exp(-(E + delta))`` (solved by bisection, since s' grows with delta).
"""

from __future__ import annotations

import math

from designer.audit.statistics import normal_quantile

#: Detection probability of the power statement.
POWER = 0.9


def detectable_excess(probability: float, trials: int, trials_other: int, allowed: float, error: float,
                      power: float = POWER) -> float:
    """Smallest ``delta`` such that ``log P(S|x)/P(S|x') = allowed + delta`` is detected with ``power``.

    Parameters
    ----------
    probability : float
        ``P(S | x)``, held fixed (the witness event's estimate).
    trials, trials_other : int
        Fresh reports of x and of x'.
    allowed : float
        ``E[x, x']``.
    error : float
        Total error of the lower bound (split in halves between the two sides).
    power : float

    Returns
    -------
    float (``inf`` when no excess is detectable: p = 0, or even an event impossible under x' is missed).
    """
    if not 0 < probability < 1 or trials < 1 or trials_other < 1:
        return math.inf
    z = normal_quantile(1 - error / 2)
    z_power = normal_quantile(power)
    s = math.sqrt((1 - probability) / (trials * probability))

    def needed(delta: float) -> float:
        other = probability * math.exp(-(allowed + delta))
        s_other = math.sqrt((1 - other) / (trials_other * other))
        return z * (s + s_other) + z_power * math.hypot(s, s_other) - delta

    low, high = 0.0, 1 / 64  # the first doubling that detects brackets the smallest root
    while needed(high) > 0:
        low, high = high, high * 2
        if high > 700:
            return math.inf
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if needed(middle) > 0 else (low, middle)
    return high
