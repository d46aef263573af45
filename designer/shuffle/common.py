"""The common-part reduction: every other user reports a sample of the rows' common part with probability s.

Let ``s K(y) = min_z Q[z, y]`` over the inputs the other users may hold (``s = sum_y min_z Q[z, y]``,
``K`` a distribution): every row is ``Q[z] = s K + (1 - s) E_z`` with ``E_z >= 0``. So each other
user reports, with probability ``s``, a sample of ``K`` (a *K-user*), and otherwise a report
independent of user 1's input. Revealing which users are K-users and the others' reports is a
post-processing in reverse (the analyst learns more), so the shuffled view is dominated by
``(U, the multiset of U K-samples and user 1's report)``, ``U ~ Bin(m, s)`` (with the share rounded
down, more K-users only add independent reports: ``U`` may be taken binomial with the smallest
share). Given ``U`` the multiset's likelihood ratio is ``sum_y h_y R(y)/K(y)`` over
``sum_y h_y R'(y)/K(y)`` (rows ``R = Q[x]``, ``R' = Q[x']``). When the rows differ on two outputs
``y1, y2`` only and ``R = c K`` on every other output (randomised response: ``K`` uniform; a block
of it under ``--population``), it depends only on ``(U, h1, h2)``, the counts of ``y1`` and ``y2``:

    delta(eps) = sum_u P(U = u) sum_{h1, h2} max(0, P_u(h1, h2) - e^eps P'_u(h1, h2)),
    P_u(h1, h2) = R(y1) M_u(h1 - 1, h2) + R(y2) M_u(h1, h2 - 1) + (1 - R(y1) - R(y2)) M_u(h1, h2),

with ``M_u`` the multinomial law of ``u`` samples of ``K`` on ``(y1, y2, rest)``. This reveals the
number of K-users, not of the pair's *clones* (FMT's ``C``, with share ``2/(e^eps0 + 1)`` for
randomised response against ``k/(e^eps0 + k - 1)`` here), and is much tighter when few clones
would be expected: k-ary RR with k = 100, eps0 = 4, n = 1000 gives 0.7614 against 0.9208 for the
clone reduction and 0.7612 for the exact divergence of the dataset with every other user at one z.

**Computation.** ``H_u`` does not increase with ``u`` (one more K-sample is a post-processing),
so ``U`` is binned as in :func:`designer.shuffle.divergence.binomial_bins` (relative width
1e-3; each bin at its left end; the mass below the window is charged 1). Per bin, ``M_u`` on a window of each count's
Bernstein reach (tail 1e-30, scipy's log-pmf), and every cell of every bin with its loss
``log(P/P')``: the cells of positive loss sorted once, the divergence at any epsilon is a
difference of prefix sums. Added, per unit of ``1 + e^eps``: the mass outside the windows
(Bernstein), the cells lighter than 1e-24 of their bin (dropped), ``1e-12`` relative per bin for
the float pmfs and ``1e-13`` per bin mass, and the prefix sums' rounding (``N u``).
Evaluated only up to :data:`MAX_CELLS` cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from designer.shuffle.divergence import MAX_BINS, bernstein_reach, bernstein_tail, binomial_bins
from solvers.bisection import boundary

#: Most cells (bins times windows) evaluated.
MAX_CELLS = 20_000_000
#: Tail of each count left outside its window.
WINDOW_TAIL = 1e-30
#: Relative width of the bins of U (about half of it, relatively, in epsilon).
U_BIN_WIDTH = 1e-3
#: Cells lighter than this (times the bin's mass) are dropped, their mass charged to the bound.
LIGHT = 1e-24

_U = 2.0 ** -53


@dataclass(frozen=True)
class CommonExperiment:
    """The reduced experiment of a pair: ``others`` users, share ``share`` (rounded down) of the common part.

    ``kappa``: ``(K(y1), K(y2))``; ``first``, ``second``: ``(R(y1), R(y2))`` and ``(R'(y1), R'(y2))``;
    ``defect``: how far (in total variation) the rows are from the exact structure (float rows).
    """

    share: float
    others: int
    kappa: tuple[float, float]
    first: tuple[float, float]
    second: tuple[float, float]
    defect: float = 0.0


def common_delta(epsilon: float, experiment: CommonExperiment) -> float:
    """An outward upper bound on the experiment's ``delta(epsilon)`` (1 when the cells exceed :data:`MAX_CELLS`)."""
    law = _law(experiment)
    return 1.0 if law is None else law.delta(epsilon)


def common_epsilon(delta: float, experiment: CommonExperiment) -> tuple[float, float]:
    """The smallest epsilon found (to 1e-10 relative) whose outward ``delta(epsilon) <= delta``, and that delta."""
    law = _law(experiment)
    return (math.inf, 1.0) if law is None else law.epsilon(delta)


def common_pld(experiment: CommonExperiment):
    """``(losses, masses, infinity mass, slack)`` of the experiment for composition, or None (too many cells)."""
    law = _law(experiment)
    if law is None:
        return None
    return (*law.cells, law.below, law.slack)


class CellLaw:
    """Every cell's loss and masses, sorted by loss (descending), prefix sums and the error terms.

    ``below`` is charged as it is (mass whose cells were not built, delta <= 1 there); ``slack`` times
    ``1 + e^eps`` (mass dropped from both laws, float error).
    """

    def __init__(self, losses: np.ndarray, first: np.ndarray, second: np.ndarray, below: float, slack: float):
        self.cells = (losses, first)  # every cell, for composition
        positive = losses > 0  # only these count at any epsilon >= 0
        losses, first, second = losses[positive], first[positive], second[positive]
        order = np.argsort(-losses)
        self.losses, self.first, self.second = losses[order], first[order], second[order]
        self.plain, self.tilted = np.cumsum(self.first), np.cumsum(self.second)
        self.below, self.slack = below, slack
        finite = self.losses[np.isfinite(self.losses)]
        self.top = max(float(finite[0]), 0.0) if finite.size else 60.0

    def delta(self, epsilon: float) -> float:
        count = int(np.searchsorted(-self.losses, -epsilon, side="left"))  # cells with loss > epsilon
        growth = math.exp(epsilon)
        if count == 0:
            value = rounding = 0.0
        else:
            value = float(self.plain[count - 1] - growth * self.tilted[count - 1])
            rounding = count * _U * float(self.plain[count - 1] + growth * self.tilted[count - 1])
        return min(1.0, self.below + max(value, 0.0) + rounding + (1 + growth) * self.slack + 1e-300)

    def epsilon(self, delta: float) -> tuple[float, float]:
        """The smallest epsilon found (to 1e-10 relative) whose outward ``delta(epsilon) <= delta``, and that delta."""
        if self.delta(self.top) > delta:
            return math.inf, 1.0
        if self.delta(0.0) <= delta:
            return 0.0, self.delta(0.0)
        high = boundary(lambda epsilon: self.delta(epsilon) <= delta, 0.0, self.top, 1e-10, 200)[1]
        return high, self.delta(high)


class CellCollector:
    """The cells of a :class:`CellLaw`, bin by bin: cells lighter than :data:`LIGHT` times their bin's mass are
    dropped and their masses (both laws) added to ``slack``."""

    def __init__(self, slack: float):
        self.losses: list[np.ndarray] = []
        self.firsts: list[np.ndarray] = []
        self.seconds: list[np.ndarray] = []
        self.slack = slack

    def add(self, first: np.ndarray, second: np.ndarray, mass: float) -> None:
        first, second = first.ravel(), second.ravel()
        keep = first > LIGHT * mass
        self.slack += float(first[~keep].sum() + second[~keep].sum())
        first, second = first[keep], second[keep]
        with np.errstate(divide="ignore"):
            self.losses.append(np.log(first) - np.log(second))
        self.firsts.append(first)
        self.seconds.append(second)

    def law(self, below: float) -> CellLaw | None:
        if not self.losses:
            return None
        return CellLaw(np.concatenate(self.losses), np.concatenate(self.firsts), np.concatenate(self.seconds), below,
                       self.slack)


@lru_cache(maxsize=8)
def _law(experiment: CommonExperiment) -> CellLaw | None:
    from scipy import stats

    bins = binomial_bins(experiment.others, experiment.share, MAX_BINS, U_BIN_WIDTH)
    k1, k2 = experiment.kappa
    windows = []
    for u in bins.left.tolist():
        first = _window(u, k1)
        second = _window(u, k2)  # marginally Bin(u, K(y2))
        windows.append((first, second))
    if sum(a.size * b.size for a, b in windows) > MAX_CELLS:
        return None
    cells = CellCollector(1e-13 * bins.mass.size + experiment.defect)
    (r1, r2), (q1, q2) = experiment.first, experiment.second
    rest, rest_second = max(0.0, 1 - r1 - r2), max(0.0, 1 - q1 - q2)
    for u, mass, (h1, h2) in zip(bins.left.tolist(), bins.mass.tolist(), windows):
        if mass <= 0:
            continue
        # M_u(h1, h2) on the window extended by one on each side: the cells run to one beyond the window (user 1's
        # report adds one to a count) and need M one below
        a = np.arange(h1[0] - 1, h1[-1] + 2)
        b = np.arange(h2[0] - 1, h2[-1] + 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_first = stats.binom.logpmf(a, u, k1)
            log_second = stats.binom.logpmf(b[None, :], np.maximum(u - a, 0)[:, None], k2 / (1 - k1) if k1 < 1 else 0.0)
        law = np.nan_to_num(np.exp(log_first[:, None] + log_second), nan=0.0)
        here, left, down = law[1:, 1:], law[:-1, 1:], law[1:, :-1]  # M(h1, h2), M(h1 - 1, h2), M(h1, h2 - 1)
        cells.add(mass * (r1 * left + r2 * down + rest * here), mass * (q1 * left + q2 * down + rest_second * here),
                  mass)
        variance_first, variance_second = u * k1, u * k2
        outside = (bernstein_tail(_reach(variance_first) - 1, variance_first)
                   + bernstein_tail(_reach(variance_second) - 1, variance_second))
        cells.slack += mass * (2 * outside + 1e-12)
    return cells.law(bins.below)


def _reach(variance: float) -> int:
    return bernstein_reach(variance, WINDOW_TAIL)


def _window(trials: int, probability: float) -> np.ndarray:
    """The counts within Bernstein's reach of the mean (every count for small ``trials``)."""
    if trials == 0 or probability <= 0:
        return np.zeros(1, dtype=np.int64)
    mean = trials * probability
    reach = _reach(trials * probability)
    return np.arange(max(0, math.floor(mean) - reach), min(trials, math.ceil(mean) + reach) + 1)
