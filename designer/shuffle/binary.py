"""The exact worst case of a binary channel after shuffling: the count of ones, every composition of the others.

With two outputs the shuffled multiset is the count of ones. User 1 reports 1 with
probability ``r`` (``x``) or ``r'`` (``x'``); another user holding ``z`` with probability
``r_z = Q[z, 1]`` (each row is read as the Bernoulli law of a one, ``P(0) = 1 - Q[z, 1]``
exactly). For fixed other values

    delta(eps) = sum_c max(0, alpha f(c - 1) + beta f(c)),
    alpha = r - e^eps r',  beta = (1 - r) - e^eps (1 - r'),

where ``f`` is the law of the others' count (a Poisson-binomial law). That law is affine in
each ``r_z`` separately (a convolution of Bernoulli laws), so ``delta(eps)`` is a convex
function of each ``r_z`` on ``[r_lo, r_hi]`` (the smallest and largest ``Q[z, 1]`` of the
channel): raising the others one at a time to the better end never lowers it. Hence the
worst case over the other values is attained with every other user at ``r_lo`` or ``r_hi``
(both are rows of the channel), and by exchangeability it depends only on the number
``a`` of them at ``r_hi``: ``sup = max_a delta_a(eps)``, ``a = 0 .. m`` (``m`` others). The
direction ``x' -> x`` is the same sum with ``r`` and ``r'`` swapped (the same laws ``f_a``).

**Many users: a grid of compositions with g users dropped.** Up to :data:`FULL_OTHERS`
others every composition is evaluated. Beyond, with ``g = ceil(m / GRID)``, only the
compositions ``a0 = 0, g, 2g, ...`` and ``m - g`` of ``m - g`` others are: a dataset with
``a`` others at ``r_hi`` contains one with ``a0`` at ``r_hi`` and ``m - g - a0`` at ``r_lo``
(``a0`` the grid point at or below ``a``, or ``m - g`` when ``a > m - g``); the ``g`` users
left out add independent reports to the count, a post-processing, so
``delta_a <= delta_a0`` (of ``m - g`` others). The bound is therefore the exact worst case of
``m - g`` users, at most the exact one of ``m`` by about ``1 / (2 GRID)`` relatively in
epsilon (epsilon falls like ``1 / sqrt(m)``), and never below it. ``GRID`` is as large as keeps
the transforms within :data:`GRID_POINTS` points in all, from 256 (wide laws: a small local
epsilon at n = 10^9) to 4096 (``1/8192``: n = 10^5).

Each ``f_a`` is computed by a real inverse FFT of its characteristic function
``exp(a l_hi(t) + b l_lo(t) - i t c_a)``, ``l(t) = log(1 - r + r e^it)`` (its modulus through
``log1p`` where ``|phi|^2 >= 1/2`` and through ``(1 - 2r)^2 + 4 r (1 - r) cos^2(t/2)``
otherwise, so a row near 1/2, a small local epsilon, stays accurate; its argument through
``atan2``), on a window of ``+-h`` around ``c_a = round(mean)`` (Bernstein's reach for a
tail of :data:`LAW_TAIL`), or on the whole support for small m. Every evaluation adds,
times ``1 + e^eps >= |alpha| + |beta|``: the window's points times the mean of
``2 kappa |phi|`` (``kappa`` bounds the exponent's rounding error, the rounding of the
frequencies included; the exact transform maps it to at most that mean per point), the
square root of the window's points times the transform's rounding in the 2-norm
(``8 (log2 L + 2) u`` times the root mean square of ``|phi|``), the aliased mass and twice
the mass outside the window (Bernstein: centred steps in ``[-1, 1]``, variance at most
``m max r (1 - r)``), and ``16 u`` for the rounding of ``alpha``, ``beta``, ``e^eps`` and each
term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from designer.shuffle.divergence import bernstein_reach, bernstein_tail
from solvers.bisection import boundary

#: Relative steps by which the float search result is raised until the full pass proves it.
PROOF_STEPS = (0.0, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 5e-2)
#: Most other users whose every composition is evaluated.
FULL_OTHERS = 4096
#: Beyond, at most this many compositions are evaluated (``g = ceil(m / grid)`` users dropped) ...
GRID = 4096
#: ... as many as keep their transforms within this many points in all, but at least 256.
GRID_POINTS = 1 << 26
SMALLEST_GRID = 256
#: Floats per batch of laws (the transform's working memory).
BATCH_FLOATS = 1 << 22
#: Most compositions (and floats of their laws) kept for the epsilon search.
SEARCH_COMPOSITIONS = 192
SEARCH_FLOATS = 1 << 22
#: Largest mass of the others' count left outside the window (Bernstein).
LAW_TAIL = 1e-30
#: The exponent's rounding bound must stay below this for the bound ``|dphi| <= 2 kappa |phi|``.
MAX_KAPPA = 0.25

_U = 2.0 ** -53


@dataclass(frozen=True)
class BinaryPair:
    """A pair of a binary channel with ``others`` other users: ``x -> x'`` and ``x' -> x``.

    ``first, second``: ``Q[x, 1]``, ``Q[x', 1]``; ``low, high``: the smallest and largest
    ``Q[z, 1]`` over the inputs the other users may hold.
    """

    first: float
    second: float
    low: float
    high: float
    others: int

    @property
    def usable(self) -> bool:
        """Whether the count analysis applies (at least one other user, distinct rows)."""
        return self.others >= 1 and self.first != self.second


def compositions(others: int, full: int | None = None, grid: int | None = None) -> tuple[int, np.ndarray]:
    """The users evaluated and the compositions ``a`` (others at ``r_hi``) that bound every composition of ``others``.

    Every composition up to ``full`` (:data:`FULL_OTHERS`); beyond, the grid of ``m - g`` users with
    ``g = ceil(m / grid)`` (:data:`GRID`; module docstring).
    """
    full = FULL_OTHERS if full is None else full
    if others <= full:
        return others, np.arange(others + 1)
    dropped = -(-others // (GRID if grid is None else grid))
    kept = others - dropped
    points = np.arange(0, kept + 1, dropped)
    return kept, points if points[-1] == kept else np.append(points, kept)


def binary_deltas(epsilon: float, pair: BinaryPair) -> tuple[float, float]:
    """Outward upper bounds on ``max_a delta_a(epsilon)`` of both directions (``x -> x'``, ``x' -> x``)."""
    kept, every = compositions(pair.others, grid=_grid(pair))
    values = _evaluate(_batches(pair.low, pair.high, kept, every), _queries(pair, [epsilon], [epsilon]))
    return float(values[0]), float(values[1])


def binary_epsilons(delta: float, pair: BinaryPair) -> tuple[tuple[float, float], tuple[float, float]]:
    """Per direction, the smallest ``epsilon`` found whose outward ``max_a delta_a <= delta``, and that delta.

    Bisection on a sample of the compositions (both ends and a grid; laws kept), then a pass
    over every composition evaluated at the result raised by the first two of :data:`PROOF_STEPS`
    (and a second pass at the others if neither proves it); the first proved step is kept.
    ``(inf, 1.0)`` for a direction none of them proves.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    kept, every = compositions(pair.others, grid=_grid(pair))
    layout = _layout(pair.low, pair.high, kept)
    most = max(8, min(SEARCH_COMPOSITIONS, SEARCH_FLOATS // layout[-1]))
    sample = [batch for batch in _batches(pair.low, pair.high, kept, _sample(every, most))]
    highs = []
    for direction in (0, 1):
        oriented = pair if direction == 0 else replace(pair, first=pair.second, second=pair.first)
        ceiling = _largest_ratio(oriented)
        top = math.log(ceiling) if math.isfinite(ceiling) else 60.0
        # the float search sums only the half of a centred window where the terms can be positive: the upper
        # counts when x reports a one more often (alpha > 0), else the lower ones (an estimate, not a proof)
        part = _half(sample, layout[4], oriented.first > oriented.second)

        def estimate(epsilon: float, oriented=oriented, part=part) -> float:
            return float(_evaluate(part, _queries(oriented, [epsilon], []))[0])

        high = 0.0
        if estimate(0.0) > delta:
            high = boundary(lambda epsilon: estimate(epsilon) <= delta, 0.0, top, 1e-8, 60)[1]
        highs.append(high)
    result: list = [None, None]
    # a pass over every composition at the first two steps (nearly always enough), then at the others if needed
    for steps in (PROOF_STEPS[:2], PROOF_STEPS[2:]):
        open_ = [direction for direction in (0, 1) if result[direction] is None]
        if not open_:
            break
        candidates = [[high * (1 + step) if high > 0 else step for step in steps] if direction in open_ else []
                      for direction, high in enumerate(highs)]
        values = _evaluate(_batches(pair.low, pair.high, kept, every), _queries(pair, *candidates))
        offset = 0
        for direction in open_:
            proved = values[offset:offset + len(steps)]
            offset += len(steps)
            first = next((index for index, value in enumerate(proved) if value <= delta), None)
            if first is not None:
                result[direction] = (candidates[direction][first], float(proved[first]))
    result = [(math.inf, 1.0) if value is None else value for value in result]
    return result[0], result[1]


def count_laws(pair: BinaryPair, full: int, grid: int):
    """Per composition evaluated (:func:`compositions` with ``full``, ``grid``): the laws of the count of ones under
    ``x`` and ``x'`` on the window, and the laws' error in the 1-norm plus the mass outside the window.

    Yields ``(first, second, error)`` per composition; ``None`` when the exponent's rounding bound is too large.
    """
    kept, every = compositions(pair.others, full, grid)
    for batch in _batches(pair.low, pair.high, kept, every):
        if batch is None:
            yield None
            return
        padded, error = batch
        padded = np.maximum(padded, 0.0)  # moving a rounded value toward the exact (non-negative) one
        for row, slack in zip(padded, error):
            ones, zeros = row[:-1], row[1:]  # f(c - 1), f(c): user 1 reports 1 / 0
            yield (pair.first * ones + (1 - pair.first) * zeros, pair.second * ones + (1 - pair.second) * zeros,
                   float(slack))


def _grid(pair: BinaryPair) -> int:
    """The compositions' grid: :data:`GRID_POINTS` over the transform's length, within [256, :data:`GRID`]."""
    variance = pair.others * max(r * (1 - r) for r in (pair.low, pair.high))
    size = 1 << max(3, math.ceil(math.log2(2 * bernstein_reach(variance, LAW_TAIL) + 2)))
    return max(SMALLEST_GRID, min(GRID, GRID_POINTS // size))


def _half(batches: list, full: bool, upper: bool) -> list:
    """The batches' laws cut to the upper or lower half of a centred window (whole when the window is the support)."""
    if full:
        return batches
    result = []
    for batch in batches:
        if batch is None:
            return [None]
        padded, slack = batch
        middle = padded.shape[1] // 2
        result.append((padded[:, middle - 1:] if upper else padded[:, :middle + 2], slack))
    return result


def _sample(every: np.ndarray, most: int) -> np.ndarray:
    """At most about ``most`` compositions for the search: both ends and an even grid between."""
    if every.size <= most:
        return every
    third = max(1, most // 3)
    grid = every[np.linspace(0, every.size - 1, third).round().astype(int)]
    return np.unique(np.concatenate((every[:third], grid, every[-third:])))


def _queries(pair: BinaryPair, forward: list[float], backward: list[float]) -> list[tuple[float, float, float, float]]:
    """``(alpha, beta, e^eps, largest ratio)`` of each epsilon: ``forward`` ones of ``x -> x'``, then ``x' -> x``."""
    result = []
    for (first, second), epsilons in (((pair.first, pair.second), forward), ((pair.second, pair.first), backward)):
        ceiling = _largest_ratio(BinaryPair(first, second, pair.low, pair.high, pair.others))
        for epsilon in epsilons:
            growth = math.exp(epsilon)
            result.append((first - growth * second, (1 - first) - growth * (1 - second), growth, ceiling))
    return result


@lru_cache(maxsize=8)
def _layout(low: float, high: float, others: int):
    """The frequencies, the two log-characteristic functions and their rounding bounds, the window."""
    variance = others * max(r * (1 - r) for r in (low, high))
    half = bernstein_reach(variance, LAW_TAIL)
    full = 2 * half + 1 >= others + 1
    size = 1 << max(3, math.ceil(math.log2((others + 2) if full else (2 * half + 2))))
    t = 2 * math.pi * np.arange(size // 2 + 1) / size
    logs, errors = [], []
    sine, cosine = np.sin(t / 2) ** 2, np.cos(t / 2) ** 2
    for r in (high, low):
        g = 4 * r * (1 - r) * sine  # 1 - |1 - r + r e^it|^2
        rest = (1 - 2 * r) ** 2 + 4 * r * (1 - r) * cosine  # the same 1 - g, a sum of non-negative terms
        with np.errstate(divide="ignore"):
            real = 0.5 * np.where(g <= 0.5, np.log1p(-np.minimum(g, 0.5)), np.log(rest))
        angle = np.arctan2(r * np.sin(t), 1 - r + r * np.cos(t))
        logs.append((real, angle))
        # per user (then doubled): the modulus's argument has relative error <= 8u either way -> 8u g + u |real|
        # (g <= 1/2: times 1/(1 - g) <= 2; beyond, 4u <= 8u g); atan2 of (r sin t, 1 - r + r cos t), absolute
        # errors <= 2u |y|, 3u, radius^2 = 1 - g -> 5u |y| / (1 - g) + u |angle|; t relative 2u with
        # |dl/dt| <= r / sqrt(1 - g) <= r / (1 - g)
        errors.append(2 * _U * (8 * g + np.abs(real) + np.abs(angle)
                                + r * (5 * np.abs(np.sin(t)) + 2 * t) / np.maximum(rest, 1e-300)))
    if full:
        outside = aliased = 0.0
    else:
        # the window's centre is the rounded float mean: within 1/2 + 1e-9 of the exact one
        outside = bernstein_tail(half - 1, variance)
        aliased = bernstein_tail(size - half - 2, variance)
    offsets = np.arange(others + 1) if full else np.arange(-half, half + 1)
    return t, logs, errors, size, full, outside, aliased, offsets, offsets.size


def _batches(low: float, high: float, others: int, every):
    """Per batch of compositions: the laws ``f_a`` on the window (zero-padded) and the slack per unit of ``1 + e^eps``.

    ``None`` as a batch when the exponent's rounding bound exceeds :data:`MAX_KAPPA` (nothing proved).
    """
    m = others
    t, (log_high, log_low), (error_high, error_low), size, full, outside, aliased, offsets, window = _layout(
        low, high, others)
    every = np.asarray(every, dtype=np.int64)
    weights = np.full(t.size, 2.0)  # the mean over the L points of the Hermitian spectrum, from its half
    weights[0] = weights[-1] = 1.0
    rows = max(1, BATCH_FLOATS // size)
    for start in range(0, every.size, rows):
        a = every[start:start + rows][:, None].astype(float)
        b = m - a
        centre = np.zeros_like(a) if full else np.round(a * high + b * low)
        modulus = a * log_high[0] + b * log_low[0]  # log |phi|
        # beyond the last column where |phi| >= e^-745 somewhere, phi is left 0 (an error under 1e-300 per point)
        kept = int(np.flatnonzero(modulus.max(axis=0) > -745.0)[-1]) + 1
        tc, modulus = t[:kept], modulus[:, :kept]
        angle_high, angle_low = log_high[1][:kept], log_low[1][:kept]
        phase = a * angle_high + b * angle_low - tc * centre
        # kappa = a e_hi + b e_lo + u (5 t |c| + 3 |modulus| + 3 a |angle_hi| + 3 b |angle_lo|) + 4u per point: three
        # products and two sums in the phase (each rounding at most u of the terms' sizes), t |c| also for t's own
        # rounding (2u), the modulus's two products and sum, and the exponential's, cosine's and sine's roundings:
        # its largest value bounded here, each point's below
        largest = (a * error_high[:kept].max() + b * error_low[:kept].max() + _U * (
            5 * math.pi * np.abs(centre) - 3 * modulus.min(axis=1, keepdims=True) + 3 * a * np.abs(angle_high).max()
            + 3 * b * np.abs(angle_low).max()) + 4 * _U)
        if float(largest.max()) > MAX_KAPPA:
            yield None
            return
        magnitude = np.exp(modulus)
        phi = np.zeros((a.shape[0], t.size), dtype=complex)
        phi.real[:, :kept] = magnitude * np.cos(phase)
        phi.imag[:, :kept] = -magnitude * np.sin(phase)  # the conjugate: irfft sums phi e^{+itd}
        weighted = magnitude * weights[:kept]
        kappa = (a * error_high[:kept] + b * error_low[:kept] + _U * (
            5 * tc * np.abs(centre) - 3 * modulus + 3 * a * np.abs(angle_high) + 3 * b * np.abs(angle_low)) + 4 * _U)
        # error over the window in the 1-norm: at most sqrt(points) times the 2-norm over all L points, which is
        # (Parseval) the 2-norm of the spectrum's error over sqrt(L): the input errors |dphi| <= 2 kappa |phi|,
        # and the transform's rounding (8 (log2 L + 2) u relative in the 2-norm); e^-745 per dropped point
        input_error = 2 * np.sqrt((weighted * magnitude * kappa ** 2).sum(axis=1) / size)
        rounding = 8 * (math.log2(size) + 2) * _U * np.sqrt((weighted * magnitude).sum(axis=1) / size)
        error = math.sqrt(window) * (input_error + rounding) + window * 1e-300
        law = np.fft.irfft(phi, n=size, axis=1)[:, offsets % size]  # f(centre + d), d in the window
        padded = np.pad(law, ((0, 0), (1, 1)))
        # plus the rounding of alpha, beta, e^eps and of each term (16 u of the total mass, about 1)
        yield padded, error + aliased + 2 * outside + 16 * _U


def _evaluate(batches, queries: list[tuple[float, float, float, float]]) -> np.ndarray:
    """For each query ``(alpha, beta, e^eps, largest ratio)``: the largest outward ``delta_a`` over the batches."""
    worst = np.zeros(len(queries))
    for batch in batches:
        if batch is None:
            return np.ones(len(queries))
        padded, slack_unit = batch
        for index, (alpha, beta, growth, ceiling) in enumerate(queries):
            if growth >= ceiling:
                continue  # delta = 0: every report's likelihood ratio is within e^eps
            terms = np.maximum(alpha * padded[:, :-1] + beta * padded[:, 1:], 0.0).sum(axis=1)
            value = terms * (1 + 1e-12) + (1 + growth) * slack_unit + 1e-300
            worst[index] = max(worst[index], float(value.max()))
    return np.minimum(worst, 1.0)


def _largest_ratio(pair: BinaryPair) -> float:
    ratios = []
    for p, q in ((pair.first, pair.second), (1 - pair.first, 1 - pair.second)):
        if p > 0:
            ratios.append(math.inf if q == 0 else p / q)
    return max(ratios) * (1 + 4 * _U)
