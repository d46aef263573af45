"""The hockey-stick divergence of the clone reduction, bounded with outward rounding.

After the clone decomposition (:mod:`designer.shuffle.clones`) the shuffled view of a
pair ``(x, x')`` is a post-processing of a counting experiment (Feldman, McMillan and
Talwar, "Hiding among the clones", FOCS 2021, Lemma 3.3 and Theorem 3.2, with the
common part of the two rows split off as in the variation-ratio reduction of Wang et
al., "Unified, tight and fast privacy amplification in the shuffle model", 2024):

* ``C ~ Bin(m, r)`` other users are *clones* (``m`` other users, share ``r``); a clone
  reports a sample of ``G0`` or of ``G1`` with probability ``w/2`` each and of the common
  part ``W`` otherwise;
* user 1 reports ``G0`` with probability ``w a``, ``G1`` with probability ``w (1 - a)`` and
  ``W`` otherwise under ``x`` (``G0`` and ``G1`` swapped under ``x'``), ``a = p/(p + 1)``,
  where ``p`` bounds the likelihood ratio of the two rows and ``w`` is the informative weight.

The counts ``(i, j, l)`` of ``G0``, ``G1`` and ``W`` reports are a sufficient post-processing
source (given them, the rest of the multiset has the same law under both inputs), and
their likelihood ratio ``(K/2 + (a - 1/2) d) / (K/2 - (a - 1/2) d)`` depends only on
``K = C + 1`` and ``d = i - j``. So

    delta(eps) = sum_c P(C = c) H_c(eps),   H_c = sum_d max(0, P_c(d) - e^eps P'_c(d)),
    P_c(d) = w a f_c(d - 1) + w (1 - a) f_c(d + 1) + (1 - w) f_c(d),

where ``f_c`` is the law of a sum of ``c`` steps ``+1, -1, 0`` with probabilities
``w/2, w/2, 1 - w``. ``H_c`` does not increase with ``c`` (one more clone adds an
independent step: a post-processing), so grouping the values of ``c`` into bins and
charging each bin its left end's ``H_c`` is an upper bound; the mass below the window
is charged 1.

Two evaluations, both outward:

* ``w = 1`` (FMT's own form): ``f_c`` is a shifted ``Bin(c, 1/2)`` and the likelihood ratio
  increases with ``d``, so ``H_c`` is a difference of binomial tails at one threshold,
  evaluated in Arb ball arithmetic (python-flint: regularised incomplete beta functions);
  the upper end of the ball is the proved ``delta``;
* ``w < 1``: ``f_c`` by an FFT of ``(1 - w + w cos t)^c`` on ``L`` points, with an explicit
  error bound added to ``delta``: the distance to the exact ``w`` (known to a few units in the
  last place; Pinsker on ``Bin(c, w)``: ``sqrt(c) dw / (2 sqrt(w (1 - w))) + dw``), the aliased mass (Hoeffding, ``2 exp(-(L/2 - 2)^2 / (2c))``)
  and the rounding error of the transform (``8 (log2 L + 2) u`` times the mean of
  ``|phi|`` per point, ``u = 2^-53``), each times ``(1 + e^eps)``; the bin masses are float
  binomial CDF differences, charged ``1e-13`` absolute per bin (their relative error is far smaller).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from designer.exact import arb_precision
from solvers.bisection import boundary, first_proved

#: Relative width of the bins of C: a bin ``[c, c + max(1, c * BIN_WIDTH))`` charged ``H_c`` costs at most
#: about half this, relatively, in epsilon (epsilon falls like ``1 / sqrt(c)``).
BIN_WIDTH = 2e-4
#: The same for the Arb evaluation of ``w = 1`` (each bin costs a few incomplete beta functions in Arb).
ARB_BIN_WIDTH = 1e-3
#: ... and at least this many standard deviations of C (about 100 bins in the bulk: a few seconds).
ARB_BIN_SPREAD = 1 / 8
#: Standard deviations of C around its mean binned at the relative width; beyond, bins grow geometrically.
BULK = 6.0
#: Most bins of C (each holds one law f_c); a wider window is split into this many equal bins.
MAX_BINS = 4096
#: Largest mass of C below the window (charged 1): far below any delta worth stating.
TAIL = 1e-30
#: Largest tail mass of a law f_c left outside its window (Bernstein).
LAW_TAIL = 1e-36
#: Bits of the Arb balls of the proof.
ARB_BITS = 64
#: Relative steps by which a float search result is raised until Arb proves it.
PROOF_STEPS = (0.0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2)


@dataclass(frozen=True)
class TwoCountExperiment:
    """The reduced experiment of one pair, its parameters rounded toward the worse case.

    Attributes
    ----------
    ratio : float
        ``p >= max_y max(Q[x,y]/Q[x',y], Q[x',y]/Q[x,y])`` (``inf`` allowed), ``p > 1``.
    informative : float
        ``w`` in ``(0, 1]`` (the float used).
    informative_spread : float
        The exact ``w`` of the decomposition lies within this distance of ``informative``
        (its total variation is known to a few units in the last place); 0 for ``w = 1``.
    clone_probability : float
        ``r`` in ``[0, 1]``, the probability that another user is a clone, rounded down.
    others : int
        ``m``, the number of other users counted.
    """

    ratio: float
    informative: float
    clone_probability: float
    others: int
    informative_spread: float = 0.0

    def __post_init__(self):
        if not self.ratio > 1 or not 0 < self.informative <= 1 or not 0 <= self.clone_probability <= 1 or self.others < 0:
            raise ValueError(f"not a two-count experiment: {self}")


@dataclass(frozen=True)
class _Bins:
    """Left ends of the bins of N and their masses (float); ``below`` is P(N < first left end)."""

    left: np.ndarray
    mass: np.ndarray
    below: float


def fmt_generic(epsilon0: float, n: int) -> TwoCountExperiment:
    """The experiment of any ``epsilon0``-LDP randomiser (FMT Theorem 3.2: ``q = e^-eps0``, ``w = 1``)."""
    return TwoCountExperiment(math.exp(epsilon0), 1.0, math.exp(-epsilon0), n - 1)


def delta_of(epsilon: float, experiment: TwoCountExperiment) -> float:
    """An outward upper bound on ``delta(epsilon)`` (see the module docstring for the two evaluations)."""
    return _bound(experiment).outward(epsilon)


def epsilon_of(delta: float, experiment: TwoCountExperiment) -> tuple[float, float]:
    """The smallest ``epsilon`` found whose outward ``delta(epsilon) <= delta``, and that outward delta.

    Bisection on the float bound (:func:`epsilon_estimate`), then the outward evaluation
    of the result, raised by small relative steps until it is ``<= delta``; ``(inf, 1.0)``
    when no finite ``epsilon`` is found.
    """
    bound = _bound(experiment)
    high = _search(bound, _checked(delta), experiment.ratio)
    if math.isinf(high):
        return math.inf, 1.0
    proved = first_proved(high, PROOF_STEPS, bound.outward, delta)
    if proved is not None:
        return proved
    if math.isfinite(experiment.ratio):  # the local guarantee: delta = 0 at log(p)
        return math.log(experiment.ratio), 0.0
    return math.inf, 1.0


def epsilon_estimate(delta: float, experiment: TwoCountExperiment) -> float:
    """The float search of :func:`epsilon_of` alone (no outward evaluation): to choose between bounds."""
    return _search(_bound(experiment), _checked(delta), experiment.ratio)


def delta_estimate(epsilon: float, experiment: TwoCountExperiment) -> float:
    """The float evaluation of :func:`delta_of` alone (no outward evaluation): to choose between bounds."""
    return _bound(experiment).estimate(epsilon)


def _checked(delta: float) -> float:
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return delta


def _search(bound, delta: float, ratio: float) -> float:
    """Bisection for the smallest epsilon whose float bound is at most ``delta (1 - 1e-9)``."""
    high = math.log(ratio) if math.isfinite(ratio) else 60.0
    if bound.estimate(high) > delta:
        return math.inf
    if bound.estimate(0.0) <= delta * (1 - 1e-9):
        return 0.0
    return boundary(lambda epsilon: bound.estimate(epsilon) <= delta * (1 - 1e-9), 0.0, high, 1e-11, 64)[1]


# ------------------------------------------------------------------ the bins of C
def binomial_bins(m: int, q: float, most: int = 4096, width: float = 2e-4, deviations: float = 0.0) -> _Bins:
    """Left ends of the bins of C: width ``max(1, width c, deviations sd)`` within :data:`BULK` sd of the mean, growing
    by half beyond (the mass there is below 1e-8 and ``H_c`` changes slowly across a bin)."""
    from scipy import stats

    if m == 0 or q == 0:
        return _Bins(np.zeros(1, dtype=np.int64), np.ones(1), 0.0)
    mean, sd = m * q, math.sqrt(m * q * (1 - q))
    # the mass below mean - L sd, charged 1, is at most exp(-L^2 (1 - q) / 2) (Chernoff): <= TAIL
    spread = math.sqrt(2 * math.log(1 / TAIL) / max(1 - q, 1e-12)) + 1
    first = max(0, math.floor(mean - spread * sd))
    last = min(m, math.ceil(mean + 8 * sd))
    left, step = [first], 1
    while left[-1] < last and len(left) <= most:
        c = left[-1]
        bulk = max(1, int(c * width), int(deviations * sd))
        step = bulk if abs(c - mean) <= BULK * sd else max(bulk, math.ceil(1.5 * step))
        if c < mean - BULK * sd:  # growing toward the bulk: never step over its edge
            step = max(bulk, min(step, math.ceil(mean - BULK * sd) - c))
        left.append(c + step)
    if len(left) > most:
        left = np.unique(np.round(np.linspace(first, last, most)).astype(np.int64))
    left = np.asarray([value for value in left if value <= last], dtype=np.int64)
    cdf = stats.binom.cdf(np.append(left - 1, m), m, q)
    mass = np.clip(np.diff(cdf), 0.0, None)
    return _Bins(left, mass, float(cdf[0]))


@lru_cache(maxsize=4)
def _bound(experiment: TwoCountExperiment):
    """The evaluator of an experiment; its bins depend on the experiment only, so a stored epsilon re-proves."""
    m, q = experiment.others, experiment.clone_probability
    if experiment.informative >= 1:
        return _BinomialBound(experiment, binomial_bins(m, q, MAX_BINS, ARB_BIN_WIDTH, ARB_BIN_SPREAD))
    return _LazyBound(experiment, binomial_bins(m, q, MAX_BINS, BIN_WIDTH))


# ------------------------------------------------------------------ w = 1: binomial tails, Arb
class _BinomialBound:
    """``w = 1``: float estimate for the search, Arb evaluation for the proof."""

    def __init__(self, experiment: TwoCountExperiment, bins: _Bins):
        self.experiment, self.bins = experiment, bins

    def estimate(self, epsilon: float) -> float:
        return _float_delta(epsilon, self.experiment, self.bins)

    def outward(self, epsilon: float) -> float:
        return _proved_delta(epsilon, self.experiment, self.bins)


def _threshold(epsilon: float, ratio: float, clones: np.ndarray) -> np.ndarray:
    """Float guess of the first ``i`` with likelihood ratio above ``e^epsilon`` (exact one within +-1)."""
    growth = math.exp(epsilon)
    share = growth / (growth + 1) if math.isinf(ratio) else (growth * ratio - 1) / ((ratio - 1) * (growth + 1))
    return np.floor(share * (clones + 1)).astype(np.int64) + 1


def _float_delta(epsilon: float, experiment: TwoCountExperiment, bins: _Bins) -> float:
    """``sum_c P(C = c) H_c`` in floats: for the search only."""
    from scipy import stats

    ratio = experiment.ratio
    growth = math.exp(epsilon)
    if growth >= ratio:
        return 0.0
    a = 1.0 if math.isinf(ratio) else ratio / (ratio + 1)
    n = bins.left
    start = _threshold(epsilon, ratio, n)
    best = np.zeros(n.size)
    for shift in (-1, 0, 1):
        i = start + shift
        upper, upper_next = stats.binom.sf(i - 2, n, 0.5), stats.binom.sf(i - 1, n, 0.5)
        value = a * upper + (1 - a) * upper_next - growth * ((1 - a) * upper + a * upper_next)
        best = np.maximum(best, value)
    return bins.below + float(np.dot(bins.mass, best))


def _proved_delta(epsilon: float, experiment: TwoCountExperiment, bins: _Bins) -> float:
    """The upper end of the Arb ball of ``P(C < first) + sum_bins mass * H_left``."""
    ratio = experiment.ratio
    with arb_precision(ARB_BITS) as flint:
        arb = flint.arb
        growth = arb(epsilon).exp()
        if math.isfinite(ratio) and growth > arb(ratio):
            return 0.0
        m, q = experiment.others, arb(experiment.clone_probability)
        left = [int(value) for value in bins.left]
        if m == 0 or experiment.clone_probability == 0:
            cdf = [arb(0), arb(1)]
        else:
            cdf = [_binomial_cdf(value - 1, m, q) for value in left] + [arb(1)]
        a = arb(1) if math.isinf(ratio) else arb(ratio) / (arb(ratio) + 1)
        total = cdf[0]
        guesses = _threshold(epsilon, ratio, np.asarray(left, dtype=np.int64))
        for index, clones in enumerate(left):
            mass = cdf[index + 1] - cdf[index]
            total += mass * _proved_h(clones, int(guesses[index]), a, growth, ratio)
        return float(total.upper())


# ------------------------------------------------------------------ w < 1: lazy steps, FFT
class _LazyBound:
    """``w < 1``: the laws ``P_c``, ``P'_c`` of the bins' left ends by FFT, once; each evaluation adds the error bound.

    Only ``d >= 1`` is kept: ``f_c`` is symmetric and unimodal (log-concave), so
    ``P_c(d) - P'_c(d) = w (2a - 1)(f_c(d - 1) - f_c(d + 1)) <= 0`` for ``d <= 0``.
    """

    def __init__(self, experiment: TwoCountExperiment, bins: _Bins):
        self.experiment, self.bins = experiment, bins
        ratio, w = experiment.ratio, experiment.informative
        a = 1.0 if math.isinf(ratio) else ratio / (ratio + 1)
        laws, errors = zip(*(_lazy_law(int(clones), w) for clones in bins.left.tolist()))
        # the exact w differs by at most `spread`: the laws move by at most (Pinsker on the number of
        # informative steps, Bin(c, w), plus user 1's step) sqrt(c) spread / (2 sqrt(w (1 - w))) + spread
        spread = experiment.informative_spread
        errors = [error + math.sqrt(clones) * spread / (2 * math.sqrt(w * (1 - w))) + spread
                  for error, clones in zip(errors, bins.left.tolist())]
        width = max(law.size // 2 + 2 for law in laws)  # d = 1 .. half + 1
        self.first = np.zeros((len(laws), width))
        self.second = np.zeros((len(laws), width))
        self.zero = np.zeros(len(laws))  # P_c(0) = P'_c(0) = w f(1) + (1 - w) f(0)
        for row, law in enumerate(laws):
            half = law.size // 2
            f = np.concatenate((law[half:], [0.0, 0.0]))  # f(0), f(1), ..., f(half), 0, 0
            self.zero[row] = w * f[1] + (1 - w) * f[0]
            before, here, after = f[:-2], f[1:-1], f[2:]  # f(d - 1), f(d), f(d + 1) for d = 1 .. half + 1
            self.first[row, :before.size] = w * a * before + w * (1 - a) * after + (1 - w) * here
            self.second[row, :before.size] = w * (1 - a) * before + w * a * after + (1 - w) * here
        self.errors = np.asarray(errors)

    def estimate(self, epsilon: float) -> float:
        return self.outward(epsilon)

    def outward(self, epsilon: float) -> float:
        growth = math.exp(epsilon)
        if growth >= self.experiment.ratio:
            return 0.0
        h = np.maximum(self.first - growth * self.second, 0.0).sum(axis=1)
        h = np.minimum(1.0, h + (1 + growth) * self.errors)
        # the bin masses are float binomial CDF differences (relative error far below 1e-13)
        return (self.bins.below + float(np.dot(self.bins.mass, h))) * (1 + 1e-12) + 1e-13 * float(h.sum()) + 1e-300


def experiment_pld(experiment: TwoCountExperiment) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The privacy-loss distribution of the binned experiment (``C`` at its bin's left end), for composition.

    The binned experiment (each bin's clones at its left end, C below the window revealing the
    input) is itself a valid dominating experiment: the exact one is its post-processing (add the
    bin's remaining clones' independent steps). Returns the losses ``log(P/P')`` and masses ``P``
    over every (bin, d), the mass at ``+inf`` (C below the window) and the masses' error per unit
    of ``1 + e^eps`` (the laws' error bounds, weighted by the bins' masses, and ``1e-13`` per bin).
    The experiment is symmetric (``P_c(d) = P'_c(-d)``), so both directions share it.
    """
    bound = _bound(experiment)
    bins = bound.bins
    if isinstance(bound, _LazyBound):
        first, second = bound.first, bound.second  # d = 1 .. : P, P'; d = -1 .. by symmetry
        masses = bins.mass[:, None]
        p = np.concatenate(((masses * first).ravel(), (masses * second).ravel(), bins.mass * bound.zero))
        q = np.concatenate(((masses * second).ravel(), (masses * first).ravel(), bins.mass * bound.zero))
        slack = float(np.dot(bins.mass, bound.errors)) + 1e-13 * bins.mass.size
    else:
        p, q = _binomial_laws(experiment, bins)
        slack = (1e-13 + 2 * LAW_TAIL) * bins.mass.size  # float pmfs; the mass beyond each window
    keep = p > 0
    p, q = p[keep], q[keep]
    with np.errstate(divide="ignore"):
        losses = np.log(p) - np.log(q)
    return losses, p, bins.below, slack


def _binomial_laws(experiment: TwoCountExperiment, bins: _Bins) -> tuple[np.ndarray, np.ndarray]:
    """``w = 1``: per bin, ``P(i) = a B(i - 1) + (1 - a) B(i)`` with ``B = Bin(c, 1/2)`` (i: G0 reports of K = c + 1)."""
    from scipy import stats

    ratio = experiment.ratio
    a = 1.0 if math.isinf(ratio) else ratio / (ratio + 1)
    first, second = [], []
    for clones, mass in zip(bins.left.tolist(), bins.mass.tolist()):
        reach = bernstein_reach(clones / 4, LAW_TAIL)
        i = np.arange(max(0, clones // 2 - reach), min(clones + 1, clones // 2 + reach + 1) + 1)
        before, here = stats.binom.pmf(i - 1, clones, 0.5), stats.binom.pmf(i, clones, 0.5)
        first.append(mass * (a * before + (1 - a) * here))
        second.append(mass * ((1 - a) * before + a * here))
    return np.concatenate(first), np.concatenate(second)


def _lazy_law(clones: int, w: float) -> tuple[np.ndarray, float]:
    """The law of ``c`` lazy steps on ``-c..c`` (or a centred window) and its error bound per unit of mass.

    Returns the law on the window ``-h..h`` and ``L * eta + aliased mass + mass outside`` (see the module
    docstring). The tails use Bernstein's inequality with the steps' true variance ``c w`` (steps in
    ``[-1, 1]``): ``P(|S| >= h) <= 2 exp(-h^2 / (2 (c w + h / 3)))``, so a small informative weight
    needs a window of about ``13 sqrt(c w) + 56`` points, not ``sqrt(c)``.
    """
    u = 2.0 ** -53
    if clones == 0:
        return np.ones(1), 0.0
    variance = clones * w
    half = min(clones, bernstein_reach(variance, LAW_TAIL))
    size = 1 << max(3, math.ceil(math.log2(2 * half + 8)))
    theta = 2 * math.pi * np.arange(size) / size
    # phi = 1 - 2 w sin^2(t/2); phi^c = sign^c exp(c log|phi|) with log1p where |phi| is not small:
    # relative error a few u, not amplified by c (where |phi| < 1/2, |phi|^c is below 2^-c anyway)
    drop = 2 * w * np.sin(theta / 2) ** 2
    base = 1 - drop
    with np.errstate(divide="ignore"):
        magnitude = np.where(drop < 0.5, np.log1p(-np.minimum(drop, 0.5)), np.log(np.abs(base)))
    phi = np.exp(clones * magnitude) * np.where((base < 0) & (clones % 2 == 1), -1.0, 1.0)
    values = np.fft.ifft(phi).real
    d = np.arange(-half, half + 1)
    law = np.maximum(values[d % size], 0.0)
    eta = 8 * (math.log2(size) + 2) * u * float(np.abs(phi).mean())
    # the transform folds the mass at |S| >= size - half onto the window; the window misses |S| > half
    aliased = 0.0 if size - half > clones else bernstein_tail(size - half, variance)
    outside = 0.0 if half >= clones else bernstein_tail(half + 1, variance)
    return law, size * eta + aliased + outside


def bernstein_tail(distance: float, variance: float) -> float:
    """Bernstein's bound on ``P(|S| >= distance)`` for a sum of independent centred steps in ``[-1, 1]``."""
    if distance <= 0:
        return 2.0
    return min(2.0, 2 * math.exp(-distance ** 2 / (2 * (variance + distance / 3))))


def bernstein_reach(variance: float, tail: float) -> int:
    """The smallest integer ``h`` whose :func:`bernstein_tail` is at most ``tail``."""
    level = math.log(2 / tail)
    return int(math.ceil(level / 3 + math.sqrt(level ** 2 / 9 + 2 * variance * level))) + 1


def _proved_h(clones: int, guess: int, a, growth, ratio: float):
    """An Arb ball containing an upper bound of ``H_N``: the tail sum at the exact threshold.

    ``i`` is in the positive set iff ``i (p - e^eps) > (N + 1 - i)(e^eps p - 1)``
    (``i > (N + 1 - i) e^eps`` for ``p = inf``); when a ball cannot decide the
    comparison, the larger of the two neighbouring tail sums is kept.
    """
    from flint import arb

    def positive(i: int):
        if math.isinf(ratio):
            difference = arb(i) - arb(clones + 1 - i) * growth
        else:
            p = arb(ratio)
            difference = arb(i) * (p - growth) - arb(clones + 1 - i) * (growth * p - 1)
        if difference > 0:
            return True
        if difference <= 0:
            return False
        return None

    def tail(i: int):
        upper, upper_next = _half_tail(clones, i - 1), _half_tail(clones, i)
        return a * upper + (1 - a) * upper_next - growth * ((1 - a) * upper + a * upper_next)

    # the exact threshold is the first positive i; the float guess is within one of it
    candidates = []
    for i in (guess - 1, guess, guess + 1):
        before, here = positive(i - 1), positive(i)
        if here is not False and before is not True:
            candidates.append(i)
    if not candidates:  # the guess was off by more than one: search (never seen; kept for safety)
        i = 0
        while i <= clones + 1 and positive(i) is False:
            i += 1
        candidates = [i]
    best = max((tail(i) for i in candidates), key=lambda ball: float(ball.upper()))
    return best if best > 0 or best.upper() > 0 else arb(0)


def _half_tail(clones: int, s: int):
    """``P(Bin(N, 1/2) >= s) = I_{1/2}(s, N - s + 1)`` as an Arb ball."""
    from flint import arb

    if s <= 0:
        return arb(1)
    if s > clones:
        return arb(0)
    return arb(0.5).beta_lower(s, clones - s + 1, 1)


def _binomial_cdf(k: int, m: int, q):
    """``P(Bin(m, q) <= k) = I_{1-q}(m - k, k + 1)`` as an Arb ball."""
    from flint import arb

    if k < 0:
        return arb(0)
    if k >= m:
        return arb(1)
    return (1 - q).beta_lower(m - k, k + 1, 1)
