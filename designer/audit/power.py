"""The power statement of an audit: the smallest excess over E it would have detected, and per attack class
the exact probability of detecting a violation of a stated kind and size.

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

:func:`detection_probability` is exact instead (binomial tails of the
Clopper–Pearson test itself; a lower bound on a coarser grid for very large budgets), and :func:`class_power` states it per attack
class and pair: "a violation of this kind and size, if chosen as the event,
would have been detected with probability p". Both are conditional on the
stated event being the one chosen for the pair on the training reports: the
probability that the attacks choose it is not part of the figure.
"""

from __future__ import annotations

import functools
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


#: Stated size of the per-class power: a log-ratio exceeding E by this much.
POWER_EXCESS = 0.25
#: Stated probability under x of the rare-output violation (an output x' never produces).
RARE_PROBABILITY = 1e-3
#: Binomial tails below this are left out of the exact power sums.
TAIL = 1e-12
#: Counts evaluated per range in the power sums (beyond, every ``step`` counts: a lower bound).
GRID = 512


@functools.lru_cache(maxsize=4096)  # pairs share rare-output figures, and classes often the same witness
def detection_probability(probability: float, trials: int, probability_other: float, trials_other: int,
                          allowed: float, error: float, delta: float = 0.0) -> float:
    """Probability that the audit's test rejects ``E[x, x'] = allowed`` (and ``delta``) on an event of known
    probabilities.

    The test rejects when ``L(c) > exp(allowed) U(c') + delta``, ``L`` and ``U`` the
    Clopper–Pearson lower bound on ``P(S|x)`` and upper bound on ``P(S|x')`` at half
    of ``error`` each: with ``delta = 0``, when the lower bound on ``log P(S|x)/P(S|x')``
    exceeds ``allowed`` (:func:`designer.audit.statistics.log_ratio_lower_bound`);
    else when the lower bound on the hockey-stick difference exceeds ``delta``
    (:func:`designer.audit.statistics.hockey_stick_lower_bound`).
    ``L`` is increasing in the count ``c`` under x and ``U`` in ``c'`` under x',
    so for each ``c'`` the test rejects exactly when ``c >= c*(c')``, and the power is

        ``sum_{c'} P(Bin(n', p') = c') P(Bin(n, p) >= c*(c'))``

    over the counts that carry more than :data:`TAIL` of probability. Exact when
    both count ranges hold at most :data:`GRID` values (up to about 10^5 reports
    at p = 0.1); beyond, ``L`` and ``U`` are evaluated every ``step`` counts and
    each block of ``c'`` takes its largest count and the first grid count past
    the threshold — both raise ``c*`` — so the result is a lower bound on the
    power (within about ``step / sd`` of a standard deviation's shift).

    Parameters
    ----------
    probability, probability_other : float
        ``P(S | x)`` and ``P(S | x')`` (``probability_other = 0``: an event x' never produces).
    trials, trials_other : int
        Fresh reports of x and of x'.
    allowed : float
        ``E[x, x']``.
    error : float
        The test's error (``(1 - confidence) / pairs tested``: Bonferroni; Holm rejects at least as often).
    delta : float
        The ``delta`` of an (E, delta) audit (0: pure E-LDP).

    Returns
    -------
    float in [0, 1].
    """
    import numpy as np
    from scipy.special import bdtrc

    from designer.audit.statistics import clopper_pearson_lower, clopper_pearson_upper

    if probability <= 0 or trials < 1 or trials_other < 1:
        return 0.0
    counts = _count_grid(trials, probability, first=1)
    lower = clopper_pearson_lower(counts, trials, error / 2)
    others = _count_grid(trials_other, probability_other)
    upper = clopper_pearson_upper(others, trials_other, error / 2)
    first = np.searchsorted(lower, math.exp(allowed) * upper + delta, side="right")  # first grid count past c*(c')
    reach = first < len(counts)
    tails = np.where(reach, bdtrc(counts[np.minimum(first, len(counts) - 1)] - 1, trials, probability), 0.0)
    below = np.concatenate([[others[0] - 1], others[:-1]])
    masses = _binomial_cdf(others, trials_other, probability_other) - _binomial_cdf(below, trials_other,
                                                                                      probability_other)
    return float(np.clip(np.sum(masses * tails), 0.0, 1.0))


def _count_grid(trials: int, probability: float, first: int = 0):
    """Counts from the :data:`TAIL` to the ``1 - TAIL`` quantile of ``Bin(trials, probability)``, every
    ``step`` counts so that at most :data:`GRID` + 1 are kept (both ends included)."""
    import numpy as np

    low, high = (_binomial_quantile(q, trials, probability) for q in (TAIL, 1 - TAIL))
    low = max(low, first)
    high = max(high, low)
    step = max(1, -(-(high - low) // GRID))
    return np.unique(np.append(np.arange(low, high + 1, step), high))


def _binomial_cdf(counts, trials: int, probability: float):
    """``P(Bin(trials, probability) <= counts)`` (0 below 0; ``scipy.special.bdtr``, without scipy.stats)."""
    import numpy as np
    from scipy.special import bdtr

    counts = np.asarray(counts)
    return np.where(counts < 0, 0.0, bdtr(np.maximum(counts, 0), trials, probability))


def _binomial_quantile(q: float, trials: int, probability: float) -> int:
    """The smallest count ``c`` with ``P(Bin(trials, probability) <= c) >= q`` (bisection on the counts)."""
    low, high = 0, trials
    while low < high:
        middle = (low + high) // 2
        if _binomial_cdf(middle, trials, probability) >= q:
            high = middle
        else:
            low = middle + 1
    return low


def class_power(kind: str, probability: float, trials: int, trials_other: int, allowed: float, error: float,
                training: int = 0, delta: float = 0.0) -> dict:
    """The power statement of one attack class on one tested pair.

    * ``event families`` and ``learned classifiers``: an event as likely under x
      as the class's witness (``probability``, its fresh frequency) whose
      log-ratio is ``allowed +`` :data:`POWER_EXCESS` — in an (E, delta) audit,
      as likely as the witness but at least ``2 delta``, whose hockey-stick
      difference ``P(S|x) - exp(allowed) P(S|x')`` is ``delta +`` :func:`hockey_excess` —
      if chosen as the event, is detected with the returned probability
      (:func:`detection_probability`);
    * ``rare outputs``: an output of probability :data:`RARE_PROBABILITY` under x
      that x' never produces (infinite loss) must show in x's ``training``
      reports to become an event, then, if chosen as the event, be rejected on
      the fresh split: ``(1 - (1 - rho)^training) * detection_probability(rho, ..., 0, ...)``.

    Returns
    -------
    dict with ``class``, ``event_probability``, ``excess`` (``inf`` for rare outputs; of the hockey-stick
    difference over ``delta`` in an (E, delta) audit) and ``probability``.
    """
    if kind == "rare outputs":
        seen = 1 - (1 - RARE_PROBABILITY) ** training
        detected = seen * detection_probability(RARE_PROBABILITY, trials, 0.0, trials_other, allowed, error, delta)
        return {"class": kind, "event_probability": RARE_PROBABILITY, "excess": math.inf, "probability": detected}
    if delta:
        excess = hockey_excess(delta)
        probability = max(probability, delta + excess)
        other = (probability - delta - excess) / math.exp(allowed)
    else:
        excess = POWER_EXCESS
        other = probability * math.exp(-(allowed + POWER_EXCESS))
    detected = detection_probability(probability, trials, other, trials_other, allowed, error, delta)
    return {"class": kind, "event_probability": probability, "excess": excess, "probability": detected}


def hockey_excess(delta: float) -> float:
    """The stated violation of an (E, delta) audit exceeds ``delta`` by ``delta``: a hockey-stick difference
    ``P(S|x) - e^E P(S|x')`` of twice ``delta``."""
    return delta


def detectable_leak(trials: int, trials_other: int, allowed: float, delta: float, error: float,
                    power: float = POWER) -> float:
    """Smallest ``h`` such that an event x' never produces, of probability ``delta + h`` under x, is detected
    with ``power`` by the (E, delta) test — the power statement of an (E, delta) audit per tested pair.

    Exact (:func:`detection_probability` at ``P(S|x') = 0``, increasing in ``h``), by bisection to
    1e-6; ``inf`` when even ``h = 1 - delta`` is missed.
    """
    def detected(h: float) -> float:
        return detection_probability(delta + h, trials, 0.0, trials_other, allowed, error, delta)

    low, high = 0.0, 1.0 - delta
    if detected(high) < power:
        return math.inf
    while high - low > 1e-6:
        middle = (low + high) / 2
        low, high = (middle, high) if detected(middle) < power else (low, middle)
    return high
