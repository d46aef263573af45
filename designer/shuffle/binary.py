"""The exact worst case of a binary channel after shuffling: the count of ones, every composition of the others.

With two outputs the shuffled multiset is the count of ones. User 1 reports 1 with
probability ``r`` (``x``) or ``r'`` (``x'``); another user holding ``z`` with probability
``r_z = Q[z, 1]``. For fixed other values

    delta(eps) = sum_c max(0, alpha f(c - 1) + beta f(c)),
    alpha = r - e^eps r',  beta = (1 - r) - e^eps (1 - r'),

where ``f`` is the law of the others' count (a Poisson-binomial law). That law is affine in
each ``r_z`` separately (a convolution of Bernoulli laws), so ``delta(eps)`` is a convex
function of each ``r_z`` on ``[r_lo, r_hi]`` (the smallest and largest ``Q[z, 1]`` of the
channel): raising the others one at a time to the better end never lowers it. Hence the
worst case over the other values is attained with every other user at ``r_lo`` or ``r_hi``
(both are rows of the channel), and by exchangeability it depends only on the number
``a`` of them at ``r_hi``: ``sup = max_a delta_a(eps)``, ``a = 0 .. n - 1``. Nothing about
the other users is revealed beyond the count (unlike the clone reduction).

Each ``f_a`` (others' count ``Bin(a, r_hi) + Bin(n - 1 - a, r_lo)``) is computed by a real
inverse FFT of its characteristic function ``exp(a l_hi(t) + b l_lo(t) - i t c_a)``,
``l(t) = log(1 - r + r e^it)`` (modulus through ``log1p``, argument through ``atan2``),
on a window of ``+-h`` around ``c_a = round(mean)``, or on the whole support for small n.
Every evaluation adds, times ``1 + e^eps >= |alpha| + |beta|``: the window's points times
the mean of ``2 kappa |phi|`` (``kappa`` bounds the exponent's rounding error, the rounding of
the frequencies included; the exact transform maps it to at most that mean per point), the
square root of the window's points times the transform's rounding in the 2-norm
(``8 (log2 L + 2) u`` times the root mean square of ``|phi|``), the aliased mass and twice
the mass outside the window (Bernstein: centred steps in
``[-1, 1]``, variance at most ``(n - 1) max r (1 - r)``), and ``n`` times the largest
``|Q[z,0] + Q[z,1] - 1|`` (the float rows are read as Bernoulli laws), and ``16 u`` for the
rounding of ``alpha``, ``beta``, ``e^eps`` and each term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from solvers.bisection import boundary, first_proved

#: Relative steps by which the float search result is raised until the full pass proves it.
PROOF_STEPS = (0.0, 1e-9, 1e-6, 1e-4, 1e-3, 1e-2, 5e-2)
#: Compositions evaluated per transform batch.
BATCH = 256
#: Most other users evaluated (the pass costs one FFT of ~ 28 sqrt(n r (1 - r)) points per composition);
#: with more, the bound of this many is used (more users never raise the exact worst case).
MAX_OTHERS = 200_000
#: The exponent's rounding bound must stay below this for the bound ``|dphi| <= 2 kappa |phi|``.
MAX_KAPPA = 0.25

_U = 2.0 ** -53


@dataclass(frozen=True)
class BinaryPair:
    """The direction ``x -> x'`` of a binary channel with ``others`` other users.

    ``first, second``: ``Q[x, 1]``, ``Q[x', 1]``; ``low, high``: the smallest and largest
    ``Q[z, 1]`` over the inputs; ``defect``: the largest ``|Q[z, 0] + Q[z, 1] - 1|``.
    """

    first: float
    second: float
    low: float
    high: float
    others: int
    defect: float = 0.0

    @property
    def usable(self) -> bool:
        """Whether the exact evaluation applies (at least one other user, ``log1p`` well conditioned)."""
        curvature = max(r * (1 - r) for r in (self.low, self.high))
        return 1 <= self.others <= MAX_OTHERS and 4 * curvature <= 0.99 and self.first != self.second


def binary_delta(epsilon: float, pair: BinaryPair, compositions=None) -> float:
    """An outward upper bound on ``max_a delta_a(epsilon)`` (``compositions``: only those ``a``, for the search)."""
    return float(_pass(pair, [epsilon], compositions)[0])


def binary_epsilon(delta: float, pair: BinaryPair) -> tuple[float, float]:
    """The smallest ``epsilon`` found whose outward ``max_a delta_a <= delta``, and that delta.

    Bisection on the compositions near both ends and on a grid (cached laws), then a
    pass over every composition at the result, raised by :data:`PROOF_STEPS` until proved;
    ``(inf, 1.0)`` when none of them is proved.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    sample = list(_batches(pair, _sample(pair)))
    ceiling = abs(math.log(pair.first / pair.second)) if pair.first * pair.second > 0 else 60.0
    ceiling = max(ceiling, abs(math.log((1 - pair.first) / (1 - pair.second)))
                  if (1 - pair.first) * (1 - pair.second) > 0 else 60.0)
    high = 0.0
    if _evaluate(pair, sample, [0.0])[0] > delta:
        high = boundary(lambda epsilon: _evaluate(pair, sample, [epsilon])[0] <= delta, 0.0, ceiling, 1e-10, 60)[1]
    # a full pass over every composition per step; the first nearly always proves
    proved = first_proved(high, PROOF_STEPS, lambda epsilon: binary_delta(epsilon, pair), delta)
    return (math.inf, 1.0) if proved is None else proved


def _sample(pair: BinaryPair) -> tuple[int, ...]:
    """Compositions for the search: 64 at each end and a grid of 64 between."""
    m = pair.others
    ends = list(range(min(64, m + 1))) + list(range(max(0, m - 63), m + 1))
    return tuple(sorted(set(ends + np.linspace(0, m, 64).round().astype(int).tolist())))


@lru_cache(maxsize=8)
def _layout(pair: BinaryPair):
    """The frequencies, the two log-characteristic functions and their rounding bounds, the window."""
    m = pair.others
    variance = m * max(r * (1 - r) for r in (pair.low, pair.high))
    sd = math.sqrt(variance)
    half = int(math.ceil(14 * sd)) + 8
    full = 2 * half + 1 >= m + 1
    size = 1 << max(3, math.ceil(math.log2((m + 2) if full else (2 * half + 2))))
    t = 2 * math.pi * np.arange(size // 2 + 1) / size
    logs, errors = [], []
    for r in (pair.high, pair.low):
        g = 4 * r * (1 - r) * np.sin(t / 2) ** 2  # 1 - |1 - r + r e^it|^2
        real = 0.5 * np.log1p(-g)
        angle = np.arctan2(r * np.sin(t), 1 - r + r * np.cos(t))
        logs.append((real, angle))
        # per user: g relative 6u -> 3u g / (1 - g) on the modulus; atan2 of (r sin t, 1 - r + r cos t)
        # (errors 2u |y|, 3u; x^2 + y^2 = 1 - g) -> 5u |y| / (1 - g); t relative 2u, |dl/dt| <= 1 / (1 - g);
        # each function's own rounding u |value|
        errors.append(16 * _U * (np.abs(real) + np.abs(angle) + (g + np.abs(r * np.sin(t)) + t) / (1 - g)))
    if full:
        outside = aliased = 0.0
    else:
        def tail(distance: float) -> float:  # Bernstein, two-sided
            return 2 * math.exp(-distance ** 2 / (2 * (variance + distance / 3))) if distance > 0 else 2.0

        # the window's centre is the rounded float mean: within 1/2 + 1e-9 of the exact one
        outside = tail(half - 1)
        aliased = tail(size - half - 2)
    return t, logs, errors, size, half, full, outside, aliased


def _pass(pair: BinaryPair, epsilons: list[float], compositions) -> np.ndarray:
    """``max_a`` of the outward ``delta_a`` at each epsilon, over ``compositions`` (every ``a`` when ``None``)."""
    return _evaluate(pair, _batches(pair, compositions), epsilons)


def _batches(pair: BinaryPair, compositions):
    """Per batch of compositions: the laws ``f_a`` on the window (zero-padded) and the slack per unit of ``1 + e^eps``.

    ``None`` as a batch when the exponent's rounding bound exceeds :data:`MAX_KAPPA` (nothing proved).
    """
    m = pair.others
    t, (log_high, log_low), (error_high, error_low), size, half, full, outside, aliased = _layout(pair)
    every = np.arange(m + 1) if compositions is None else np.asarray(compositions, dtype=np.int64)
    offsets = np.arange(m + 1) if full else np.arange(-half, half + 1)
    weights = np.full(t.size, 2.0)  # the mean over the L points of the Hermitian spectrum, from its half
    weights[0] = weights[-1] = 1.0
    for start in range(0, every.size, BATCH):
        a = every[start:start + BATCH][:, None].astype(float)
        b = m - a
        centre = np.zeros_like(a) if full else np.round(a * pair.high + b * pair.low)
        modulus = a * log_high[0] + b * log_low[0]  # log |phi|
        # beyond the last column where |phi| >= e^-745 somewhere, phi is left 0 (an error under 1e-300 per point)
        kept = int(np.flatnonzero(modulus.max(axis=0) > -745.0)[-1]) + 1
        tc, modulus = t[:kept], modulus[:, :kept]
        angle_high, angle_low = log_high[1][:kept], log_low[1][:kept]
        phase = a * angle_high + b * angle_low - tc * centre
        # kappa = a e_hi + b e_lo + 8u (2 t |c| + |modulus| + a |angle_hi| + b |angle_lo|) + 16u per point (the
        # sums' rounding by their terms' sizes): its largest value bounded here, its mean against |phi| below
        unit = 8 * _U
        largest = (a * error_high[:kept].max() + b * error_low[:kept].max() + unit * (
            2 * math.pi * np.abs(centre) - modulus.min(axis=1, keepdims=True) + a * np.abs(angle_high).max()
            + b * np.abs(angle_low).max()) + 2 * unit)
        if float(largest.max()) > MAX_KAPPA:
            yield None
            return
        magnitude = np.exp(modulus)
        phi = np.zeros((a.shape[0], t.size), dtype=complex)
        phi.real[:, :kept] = magnitude * np.cos(phase)
        phi.imag[:, :kept] = -magnitude * np.sin(phase)  # the conjugate: irfft sums phi e^{+itd}
        weighted = magnitude * weights[:kept]
        kappa_mass = (a[:, 0] * (weighted @ error_high[:kept]) + b[:, 0] * (weighted @ error_low[:kept]) + unit * (
            2 * np.abs(centre[:, 0]) * (weighted @ tc) - (weighted * modulus).sum(axis=1)
            + a[:, 0] * (weighted @ np.abs(angle_high)) + b[:, 0] * (weighted @ np.abs(angle_low))
            + 2 * weighted.sum(axis=1)))
        # error over the window: input errors |dphi| <= 2 kappa |phi| through the exact transform (per point
        # at most their mean), and the transform's rounding, normwise (8 (log2 L + 2) u relative in the
        # 2-norm): at most sqrt(points) times that norm over the window; e^-745 per dropped point
        input_error = 2 * kappa_mass / size
        rounding = 8 * (math.log2(size) + 2) * _U * np.sqrt((weighted * magnitude).sum(axis=1) / size)
        window = offsets.size
        error = window * (input_error + 1e-300) + math.sqrt(window) * rounding
        law = np.fft.irfft(phi, n=size, axis=1)[:, offsets % size]  # f(centre + d), d in the window
        padded = np.pad(law, ((0, 0), (1, 1)))
        # plus the rounding of alpha, beta, e^eps and of each term (16 u of the total mass, about 1)
        yield padded, error + aliased + 2 * outside + (m + 1) * pair.defect + 16 * _U


def _evaluate(pair: BinaryPair, batches, epsilons: list[float]) -> np.ndarray:
    growth = np.exp(np.asarray(epsilons, dtype=float))
    alpha = pair.first - growth * pair.second
    beta = (1 - pair.first) - growth * (1 - pair.second)
    worst = np.zeros(growth.size)
    ceiling = _largest_ratio(pair)
    for batch in batches:
        if batch is None:
            return np.ones(growth.size)
        padded, slack_unit = batch
        for index, (al, be, gr) in enumerate(zip(alpha, beta, growth)):
            if gr >= ceiling:
                continue  # delta = 0: every report's likelihood ratio is within e^eps
            terms = np.maximum(al * padded[:, :-1] + be * padded[:, 1:], 0.0).sum(axis=1)
            value = terms * (1 + 1e-12) + (1 + gr) * slack_unit + 1e-300
            worst[index] = max(worst[index], float(value.max()))
    return np.minimum(worst, 1.0)


def _largest_ratio(pair: BinaryPair) -> float:
    ratios = []
    for p, q in ((pair.first, pair.second), (1 - pair.first, 1 - pair.second)):
        if p > 0:
            ratios.append(math.inf if q == 0 else p / q)
    return max(ratios) * (1 + 4 * _U)
