"""A lower bound on the central epsilon: the exact divergence of one concrete distinguishing test.

Neighbouring datasets ``D = (x, z, ..., z)`` and ``D' = (x', z, ..., z)`` (``m`` other
users holding ``z``) and the test that counts the reports in ``Y+ = {y : Q[x,y] > Q[x',y]}``
and in ``Y- = {y : Q[x,y] < Q[x',y]}``. The pair of counts ``(h+, h-)`` is a
post-processing of the shuffled multiset, so its hockey-stick divergence is at most the
shuffled one (data processing): ``epsilon_lower`` is the largest ``epsilon`` at which the
test's divergence still exceeds ``delta``. Under ``D`` the other users' counts are
multinomial ``(m; pi+, pi-)`` and user 1 adds one report to ``Y+`` with probability
``u+ = Q[x, Y+]``, to ``Y-`` with probability ``u- = Q[x, Y-]``.

The sum runs over a window of counts (leaving terms out only lowers it) in log space
with :func:`scipy.stats.binom.logpmf`; an absolute margin of ``1e-12 (1 + e^eps)``,
far above the double-precision error of the terms, is taken off before the comparison.
When that window would exceed :data:`MAX_CELLS` (large n), the larger of two bounds is kept:
the counts on a window of that many cells around their means, and the difference
``h+ - h-`` alone (still a post-processing): the others' difference is a sum of ``m``
steps ``+1, -1, 0``, whose law comes from an FFT of ``(pi0 + pi+ e^it + pi- e^-it)^m``
(computed through ``log1p`` and ``atan2``), and the FFT's rounding and aliasing bounds are
taken off as well.
For binary randomised response (``Y+ + Y-`` is every output) the test is the shuffled
count itself, so the value is exact for that dataset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.bisection import boundary

#: Largest number of cells of the window of counts.
MAX_CELLS = 1 << 22
#: Absolute margin (times 1 + e^eps) taken off the float sum.
MARGIN = 1e-12


@dataclass(frozen=True)
class CountTest:
    """The probabilities of the test: user 1 under x (``first``) and x' (``second``), and each other user.

    Each is a pair ``(P(report in Y+), P(report in Y-))``; ``others`` users hold ``z``.
    """

    first: tuple[float, float]
    second: tuple[float, float]
    other: tuple[float, float]
    others: int


def test_delta(epsilon: float, test: CountTest) -> float:
    """The test's hockey-stick divergence ``sum max(0, P - e^eps P')`` minus the margin (a lower bound)."""
    return max(_divergence_lower(epsilon, first, second, margin) for first, second, margin in test_statistics(test))


def epsilon_lower(delta: float, test: CountTest, ceiling: float = 60.0) -> float:
    """The largest ``epsilon`` (to 1e-10 relative, rounded down) whose test divergence exceeds ``delta``.

    ``inf`` when the divergence exceeds ``delta`` even at ``epsilon = inf`` (reports of
    ``x`` impossible under ``x'``, with probability above ``delta``).
    """
    return max(_largest_epsilon(delta, *statistic, ceiling) for statistic in test_statistics(test))


def cells_epsilon_lower(delta: float, first: np.ndarray, second: np.ndarray, distance: float = 0.0,
                        ceiling: float = 60.0) -> float:
    """:func:`epsilon_lower` of a dataset given by cells of its shuffled view (``P``, ``P'``; cells left out only
    lower the divergence), with the same margin plus ``distance``, the total variation between the laws
    computed and the real ones (times ``1 + e^eps``)."""
    return _largest_epsilon(delta, first, second, MARGIN + distance, ceiling)


def cells_delta_lower(epsilon: float, first: np.ndarray, second: np.ndarray, distance: float = 0.0) -> float:
    """:func:`test_delta` of a dataset given by cells of its shuffled view, with the same margin plus ``distance``."""
    return max(0.0, _divergence_lower(epsilon, first, second, MARGIN + distance))


def _divergence_lower(epsilon: float, first: np.ndarray, second: np.ndarray, margin: float) -> float:
    """``sum max(0, P - e^eps P') - margin (1 + e^eps)``."""
    growth = math.exp(epsilon)
    return float(np.maximum(first - growth * second, 0.0).sum()) - margin * (1 + growth)


def _largest_epsilon(delta: float, first: np.ndarray, second: np.ndarray, margin: float, ceiling: float) -> float:
    impossible = float(first[second == 0].sum()) - margin
    if impossible > delta:
        return math.inf
    larger = first > second  # only these cells can count, at any epsilon >= 0
    first, second = first[larger], second[larger]

    def exceeds(epsilon: float) -> bool:
        return _divergence_lower(epsilon, first, second, margin) > delta

    if not exceeds(0.0):
        return 0.0
    if exceeds(ceiling):
        return ceiling
    return boundary(lambda epsilon: not exceeds(epsilon), 0.0, ceiling, 1e-10, 10_000)[0]


def test_statistics(test: CountTest) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """``P``, ``P'`` (flattened) and the absolute margin per unit of ``1 + e^eps`` of each statistic used.

    The counts on their window; beyond :data:`MAX_CELLS`, the difference ``h+ - h-`` and the
    counts on a window of ``MAX_CELLS`` cells around their means (the larger bound wins).
    """
    from scipy import stats

    m = test.others
    plus, minus = test.other
    plus_counts = _window(m, plus)
    # given h+ (others), h- ~ Bin(m - h+, minus / (1 - plus))
    minus_share = 0.0 if plus >= 1 else min(1.0, minus / (1 - plus))
    minus_counts = _window(m, minus)
    statistics = [_plus_count_laws(test)]
    if plus_counts.size * minus_counts.size > MAX_CELLS:
        statistics.append(_difference_laws(test))
        half = int(math.isqrt(MAX_CELLS) // 2)
        plus_counts = _centred(plus_counts, m * plus, half)
        minus_counts = _centred(minus_counts, m * minus, half)
    a = np.arange(plus_counts[0], plus_counts[-1] + 2)  # one more for user 1's report
    b = np.arange(minus_counts[0], minus_counts[-1] + 2)
    log_plus = stats.binom.logpmf(a, m, plus)
    log_minus = stats.binom.logpmf(b[None, :], np.maximum(m - a, 0)[:, None], minus_share)
    others = np.nan_to_num(np.exp(log_plus[:, None] + log_minus), nan=0.0)  # others' (h+, h-) on the window

    def law(u: tuple[float, float], rows: slice, columns: slice) -> np.ndarray:
        u_plus, u_minus = u
        total = np.zeros((a.size + 1, b.size + 1))
        total[1:, :-1] += u_plus * others
        total[:-1, 1:] += u_minus * others
        total[:-1, :-1] += max(0.0, 1.0 - u_plus - u_minus) * others
        return total[rows, columns].ravel()

    # a cell at the window's edge misses contributions from outside it unless nothing lies there:
    # keep only complete cells (leaving cells out only lowers the divergence)
    rows = slice(0 if a[0] == 0 else 1, a.size + 1 if a[-1] >= m else a.size)
    columns = slice(0 if b[0] == 0 else 1, b.size + 1 if b[-1] >= m else b.size)
    return statistics + [(law(test.first, rows, columns), law(test.second, rows, columns), MARGIN)]


def _plus_count_laws(test: CountTest) -> tuple[np.ndarray, np.ndarray, float]:
    """The laws of ``h+`` alone (a post-processing too): ``Bin(m, pi+)`` plus user 1's report, complete cells only.

    For a two-output channel this is the shuffled count itself.
    """
    from scipy import stats

    m = test.others
    counts = _window(m, test.other[0])
    others = np.exp(stats.binom.logpmf(counts, m, test.other[0]))
    padded = np.concatenate(([0.0], others, [0.0]))

    def law(u_plus: float) -> np.ndarray:
        # P(h+ = c) = u+ f(c - 1) + (1 - u+) f(c); the cells at the window's edges miss mass unless it ends there
        total = u_plus * padded[:-1] + max(0.0, 1.0 - u_plus) * padded[1:]  # c = counts[0] .. counts[-1] + 1
        first = 0 if counts[0] == 0 else 1
        last = total.size if counts[-1] >= m else total.size - 1
        return total[first:last]

    return law(test.first[0]), law(test.second[0]), MARGIN


def _centred(counts: np.ndarray, mean: float, half: int) -> np.ndarray:
    centre = int(round(mean))
    return counts[(counts >= centre - half) & (counts <= centre + half)]


def _window(m: int, probability: float) -> np.ndarray:
    if m == 0 or probability == 0:
        return np.array([0])
    if probability >= 1:
        return np.array([m])
    mean, sd = m * probability, math.sqrt(m * probability * (1 - probability))
    return np.arange(max(0, math.floor(mean - 13 * sd)), min(m, math.ceil(mean + 13 * sd)) + 1)


def _difference_laws(test: CountTest) -> tuple[np.ndarray, np.ndarray, float]:
    """The laws of ``h+ - h-`` under both datasets by FFT, and the margin (MARGIN + rounding + aliasing)."""
    u = 2.0 ** -53
    m = test.others
    plus, minus = test.other
    half = int(math.ceil(13 * math.sqrt(m * (plus + minus)))) + 4
    # aliasing folds mass at distance >= size - half - 1 from the centre onto the window: make that
    # at least 12 sqrt(m) beyond it (Hoeffding, m steps in [-1, 1]: below 2 e^-72)
    size = 1 << max(3, math.ceil(math.log2(2 * half + 12 * math.sqrt(m) + 8)))
    theta = 2 * math.pi * np.arange(size) / size
    x = 2 * (plus + minus) * np.sin(theta / 2) ** 2  # 1 - Re(phi)
    y = (plus - minus) * np.sin(theta)  # Im(phi)
    with np.errstate(divide="ignore"):  # |phi| = 0 (e.g. pi+ = pi- = 1/2 at t = pi): log 0 = -inf, phi^m = 0
        log_modulus = 0.5 * np.log1p(np.maximum(-2 * x + x * x + y * y, -1.0))
    phase = np.arctan2(y, 1 - x)
    phi = np.exp(m * log_modulus + 1j * m * phase)
    values = np.fft.fft(phi).real / size  # f(d) = mean_j phi(t_j) e^(-i t_j d)
    centre = int(round(m * (plus - minus)))
    d = np.arange(centre - half, centre + half + 1)
    law = np.maximum(values[d % size], 0.0)
    # per point: the transform's rounding, the phase m * arg (relative u) and the modulus (|phi|^m m |log|phi|| <= 1/e)
    eta = (8 * (math.log2(size) + 2) + 16) * u * float(np.abs(phi).mean()) + 4 * u * m * float(
        (np.abs(phi) * np.abs(phase)).mean()) + 2 * u
    reach = size - half - 2 - abs(centre - m * (plus - minus))
    aliased = 2 * math.exp(-(reach ** 2) / (2 * m)) if reach > 0 else 1.0

    def shifted(u_pair: tuple[float, float]) -> np.ndarray:
        u_plus, u_minus = u_pair
        padded = np.concatenate(([0.0], law, [0.0]))
        # user 1 adds +1, -1 or 0: P(D = d) = u+ f(d - 1) + u- f(d + 1) + u0 f(d), complete cells only
        return (u_plus * padded[:-2] + u_minus * padded[2:] + (1 - u_plus - u_minus) * padded[1:-1])[1:-1]

    return shifted(test.first), shifted(test.second), MARGIN + size * eta + aliased
