"""The group reduction for k-ary randomised response: reveal every other user's blanket draw but one group's.

Randomised response on ``k`` outputs whose inputs are some of them: input ``z`` reports ``z`` with
probability ``high`` and each other output with ``low`` (``high = 1 - (k - 1) low``). Every row is
``Q[z] = s U + (1 - s) 1_z``, ``U`` uniform on the outputs and ``s = k low``: each user draws from ``U``
with probability ``s`` (a *blanket draw*, Balle et al.'s blanket) and otherwise reports its input.
Revealing which other users drew is a post-processing in reverse, and a revealed user who did not
draw reports its known input, which the analyst takes out of the multiset. Take any dataset of the
other ``n - 1`` users: ``a`` at ``x``, ``b`` at ``x'``, the rest over the other ``J = inputs - 2``
inputs, the largest group ``g`` of them at one input ``z``, so ``g >= ceil((n - 1 - a - b) / J)``.
Its shuffled view is dominated by either of

* (A) every draw revealed but the group's at ``z``: ``u ~ Bin(m, s)`` uniform reports
  (``m = n - 1 - g``, ``u`` known) and ``g`` users at ``z``. Its divergence ``A(m)`` does not decrease
  with ``m`` (one more draw revealed); given ``u`` the counts of ``(x, x', the k - 3 outputs outside
  {x, x', z})`` are sufficient (the split of the last among its outputs is uniform under both inputs);
  with ``t = u + Bin(g, s)`` draws they are multinomial ``(t; 1/k, 1/k, (k - 3)/k)`` and the undrawn
  group reports ``z``;
* (B) every draw outside ``{x, x'}`` revealed: ``u ~ Bin(n - 1 - a - b, s)`` uniform reports, ``a`` users
  at ``x`` and ``b`` at ``x'``, with the counts of ``x`` and ``x'`` sufficient: ``B(a, b)``.

With ``m(t) = n - 1 - ceil((n - 1 - t) / J)``, for every threshold ``t0`` (datasets with ``a + b <= t0``
through A, the others through B):

    delta(eps) <= max( A(m(t0)), max_{a + b > t0} B(a, b) ).

The reveal-all bound of :mod:`designer.shuffle.common` is ``A(n - 1)``; an exact dataset, every other user
at ``z``, is ``A(0)``: the reduction closes most of the gap when few draws are expected (k = 10,
eps0 = 6, n = 10^3: 5.2536 before, the all-at-z dataset 5.1956).

**Computation.** The threshold is searched by bisection over the distinct ``m(t)`` (the predicate
"every B below A's value" is monotone in ``t0``; each threshold returned has been checked, so the bound
holds whatever the bisection meets). At a given delta each law's own epsilon is compared with A's: a
law proved at its epsilon holds above it, the true divergence not increasing with epsilon. B over ``a + b > t0`` is bounded on cells
``t = a + b in [t1, t2]``, ``a in [a1, a2]``: ``B(a, b) <= B`` evaluated at ``(a1, max(0, t1 - a2))`` with
``Bin(n - 1 - t2, s)`` uniform reports (one more user, a post-processing, never raises the divergence,
and fewer trials make ``u`` stochastically smaller); a cell above the target is halved until it holds or
a single dataset exceeds. The laws are :class:`designer.shuffle.common.CellLaw` over (bin of ``u``,
counts): ``u`` binned as in :func:`designer.shuffle.divergence.binomial_bins` (each bin at its left end:
the divergence does not increase with ``u``); the group's counts are nested binomials on windows of tail
:data:`TAIL` per side; the uniform reports are added one at a time from one bin to the next (exact sums
of nonnegative terms, end slices lighter than ``LIGHT * TAIL`` trimmed); the mass missing from each
bin's law is charged, cells lighter than :data:`LIGHT` of their bin are dropped and charged, and
``1e-13`` per bin covers the float pmfs. Within :data:`MAX_CELLS` cells per law; a search stops after
:data:`SEARCH_CELLS` cells with the best threshold proved (at worst the reveal-all bound ``A(n - 1)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from designer.shuffle.common import LIGHT, CellCollector, CellLaw
from designer.shuffle.divergence import MAX_BINS, bernstein_reach, binomial_bins

#: Most cells of one law.
MAX_CELLS = 30_000_000
#: Most cells built by one search (about 10 s); the best threshold proved by then stands.
SEARCH_CELLS = 40_000_000
#: Tail of each count left outside its window.
TAIL = 1e-20
#: Relative width of the bins of u.
U_BIN_WIDTH = 1e-3
#: Most blanket draws expected (n s): beyond, revealing them costs little (the common-part reduction is tight)
#: and the laws grow with them.
MAX_DRAWS = 128


@dataclass(frozen=True)
class GroupExperiment:
    """Randomised response on ``outputs`` outputs with ``inputs`` inputs (``3 <= inputs <= outputs``), each other
    output ``low``; ``others`` users besides user 1; ``defect``: the largest total variation between a real row
    and that form (charged ``n`` times: the n users' reports couple within ``n defect``)."""

    outputs: int
    inputs: int
    low: float
    others: int
    defect: float = 0.0

    @property
    def high(self) -> float:
        return 1.0 - (self.outputs - 1) * self.low

    @property
    def share(self) -> float:
        return self.outputs * self.low

    def level(self, threshold: int) -> int:
        """``m(t)``: the users revealed by A for the datasets with ``a + b <= t``."""
        rest = self.others - threshold
        return self.others - (-(-rest // (self.inputs - 2)))


def group_experiment(outputs: int, inputs: int, low: float, defect: float, others: int) -> GroupExperiment | None:
    """The experiment, or None when more than :data:`MAX_DRAWS` blanket draws are expected."""
    if (others + 1) * outputs * low > MAX_DRAWS:
        return None
    return GroupExperiment(outputs, inputs, low, others, defect)


def group_epsilon(delta: float, experiment: GroupExperiment) -> float:
    """The smallest epsilon proved at ``delta`` (the best threshold's within the budget; ``inf`` if none)."""
    return _Search(experiment, lambda law: law.epsilon(delta)[0], math.inf).run()


def group_delta(epsilon: float, experiment: GroupExperiment) -> float:
    """An outward upper bound on the central delta at ``epsilon`` (the best threshold's within the budget; 1 if
    none)."""
    return min(1.0, _Search(experiment, lambda law: law.delta(epsilon), 1.0).run())


def all_at_z_cells(experiment: GroupExperiment) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The cells ``(P, P')`` of the dataset with every other user at one third input z, ``A(0)``, and the total
    variation between them and the real table's (``n defect``): a concrete dataset, exact but for the cells left
    out (which only lower its divergence), for the lower bound."""
    law = _law_a(experiment, 0)
    return None if law is None else (law.first, law.second, (experiment.others + 1) * experiment.defect)


class _Search:
    """The threshold search of one experiment; ``score`` maps a law to its epsilon (or delta): smaller is better."""

    def __init__(self, experiment: GroupExperiment, score, worst: float):
        self.experiment, self.score, self.worst = experiment, score, worst
        self.cells: dict = {}
        self.built = 0  # cells built; past SEARCH_CELLS every new cell fails, so the search keeps what it proved

    def run(self) -> float:
        e = self.experiment
        if e.inputs < 3 or e.outputs < e.inputs or not 0 < e.low < 1 / e.outputs or e.others < 1:
            return self.worst
        tops = _thresholds(e.others, e.inputs - 2)
        low, high = -1, len(tops) - 1  # the last threshold leaves B nothing: A(n - 1) alone, the reveal-all bound
        value = self._a(tops[high])
        while high - low > 1 and self.built <= SEARCH_CELLS:
            middle = (low + high) // 2
            target = self._a(tops[middle])
            if self._region_holds(tops[middle], target):
                high, value = middle, target
            else:
                low = middle
        return value

    def _a(self, threshold: int) -> float:
        return self._score(_law_a(self.experiment, self.experiment.level(threshold)))

    def _score(self, law: CellLaw | None) -> float:
        if law is None:
            return self.worst
        self.built += law.cells[0].size
        return self.score(law)

    def _region_holds(self, threshold: int, target: float) -> bool:
        """Whether every dataset with ``a + b > threshold`` has B at most ``target`` (cells halved as needed)."""
        for t1, t2 in _dyadic_cover(threshold + 1, self.experiment.others):
            if not self._cell_holds(t1, t2, 0, t2, target):
                return False
        return True

    def _cell_holds(self, t1: int, t2: int, a1: int, a2: int, target: float) -> bool:
        if self._cell(t1, t2, a1, a2) <= target:
            return True
        if t1 == t2 and a1 == a2:
            return False
        if t2 - t1 >= a2 - a1:
            half = (t1 + t2) // 2
            parts = ((t1, half, a1, min(a2, half)), (half + 1, t2, a1, a2))
        else:
            half = (a1 + a2) // 2
            parts = ((t1, t2, a1, half), (t1, t2, half + 1, a2))
        return all(self._cell_holds(*part, target) for part in parts if part[2] <= part[3])

    def _cell(self, t1: int, t2: int, a1: int, a2: int) -> float:
        key = (t1, t2, a1, a2)
        if key not in self.cells:
            if self.built > SEARCH_CELLS:
                return self.worst  # not built: the region is not proved
            e = self.experiment
            self.cells[key] = self._score(_law_b(e, a1, max(0, t1 - a2), e.others - t2))
        return self.cells[key]


def _thresholds(others: int, groups: int) -> list[int]:
    """The largest ``t`` of each distinct ``m(t)``, increasing: ``m(t) = others - r`` for ``t`` in
    ``[others - r groups, others - (r - 1) groups - 1]``, ``r = 1 ... ceil(others / groups)``; and ``others``
    (``r = 0``)."""
    count = -(-others // groups)
    return [others - (r - 1) * groups - 1 for r in range(count, 0, -1)] + [others]


def _dyadic_cover(first: int, last: int) -> list[tuple[int, int]]:
    """``[first, last]`` as maximal aligned dyadic intervals (the same pieces for every threshold, so cells repeat)."""
    pieces = []
    while first <= last:
        size = 1
        while first % (2 * size) == 0 and first + 2 * size - 1 <= last:
            size *= 2
        pieces.append((first, first + size - 1))
        first += size
    return pieces


def _window(trials: int, probability: float) -> tuple[int, int]:
    """Counts ``[first, last]`` of ``Bin(trials, probability)`` with at most :data:`TAIL` below and above (scipy's
    cdf and sf within Bernstein's reach of the mean)."""
    from scipy import stats

    if trials == 0 or probability <= 0:
        return 0, 0
    if probability >= 1:
        return trials, trials
    mean = trials * probability
    reach = bernstein_reach(mean * (1 - probability), TAIL)
    candidates = np.arange(max(0, math.floor(mean) - reach), min(trials, math.ceil(mean) + reach) + 1)
    below = stats.binom.cdf(candidates - 1, trials, probability)  # P(count < c)
    above = stats.binom.sf(candidates, trials, probability)  # P(count > c)
    first = candidates[np.flatnonzero(below <= TAIL)[-1]] if (below <= TAIL).any() else candidates[0]
    last = candidates[np.flatnonzero(above <= TAIL)[0]] if (above <= TAIL).any() else candidates[-1]
    return int(first), int(last)


def _nested(trials: np.ndarray, first: np.ndarray, second: np.ndarray, p1: float, p2: float) -> np.ndarray:
    """``P(c1 = first, c2 = second)`` for ``c1 ~ Bin(trials, p1)``, ``c2 | c1 ~ Bin(trials - c1, p2)``."""
    from scipy import stats

    with np.errstate(invalid="ignore"):
        outer = stats.binom.pmf(first, trials, p1)[:, None]
        inner = stats.binom.pmf(second[None, :], np.maximum(trials - first, 0)[:, None], p2)
    return np.nan_to_num(outer * inner)


def _cells(experiment: GroupExperiment, bins, laws, first_weights, second_weights) -> CellLaw | None:
    """The law over (bin, count cell): ``laws(u)`` gives the shifts of the others' count array for ``u`` uniform
    reports and its mass; the two rows' weights on the shifts give user 1's report."""
    cells = CellCollector((experiment.others + 1) * experiment.defect)
    built = 0
    for u, mass in zip(bins.left.tolist(), bins.mass.tolist()):
        if mass <= 0:
            continue
        shifts, kept = laws(u)
        built += shifts[0].size
        if built > MAX_CELLS:
            return None
        cells.slack += mass * (max(0.0, 1.0 - kept) + 1e-13)
        cells.add(mass * sum(w * s for w, s in zip(first_weights, shifts)),
                  mass * sum(w * s for w, s in zip(second_weights, shifts)), mass)
    return cells.law(bins.below)


def _placed(shape: tuple[int, ...], axis: int | None) -> tuple[slice, ...]:
    """Where an array of ``shape`` sits in a larger one: at offset 1 on ``axis`` (one count more), 0 elsewhere."""
    return tuple(slice(int(a == axis), int(a == axis) + size) for a, size in enumerate(shape))


def _shifted(law: np.ndarray) -> list[np.ndarray]:
    """``law`` padded by one on every axis, placed at offset 0 and at offset 1 on each axis (user 1's report)."""
    result = []
    for axis in (None, *range(law.ndim)):
        placed = np.zeros(tuple(size + 1 for size in law.shape))
        placed[_placed(law.shape, axis)] = law
        result.append(placed)
    return result


class _Uniform:
    """The others' count law as uniform reports are added one at a time (exact sums of nonnegative terms): a
    report moves one count up (``moves``: the probability of each axis) or none (the rest of the mass)."""

    def __init__(self, law: np.ndarray, moves: tuple[float, ...]):
        self.law, self.moves, self.users = law, moves, 0

    def at(self, users: int) -> tuple[list[np.ndarray], float]:
        """User 1's shifts of the law with ``users`` uniform reports (at least the previous call's), and its mass."""
        law = self.law
        for _ in range(users - self.users):
            grown = np.zeros(tuple(size + (move > 0) for size, move in zip(law.shape, self.moves)))
            grown[_placed(law.shape, None)] += (1 - sum(self.moves)) * law
            for axis, move in enumerate(self.moves):
                if move > 0:
                    grown[_placed(law.shape, axis)] += move * law
            law = _trimmed(grown)
        self.law, self.users = law, users
        return _shifted(law), float(law.sum())


def _trimmed(law: np.ndarray) -> np.ndarray:
    """``law`` without its end slices lighter than :data:`LIGHT` times :data:`TAIL` (their mass is then missing from
    the law's total, which the caller charges)."""
    for axis in range(law.ndim):
        other = tuple(a for a in range(law.ndim) if a != axis)
        mass = law.sum(axis=other)
        heavy = np.flatnonzero(mass >= LIGHT * TAIL)
        if heavy.size and (heavy[0] > 0 or heavy[-1] < mass.size - 1):
            law = np.take(law, np.arange(heavy[0], heavy[-1] + 1), axis=axis)
    return law


def _law_a(experiment: GroupExperiment, revealed: int) -> CellLaw | None:
    """A(m): ``u ~ Bin(m, s)`` revealed uniform reports, ``g = n - 1 - m`` users at z; cells (u, h_x, h_x', h_r)."""
    from scipy import stats

    k, s, low, high = experiment.outputs, experiment.share, experiment.low, experiment.high
    group = experiment.others - revealed
    bins = binomial_bins(revealed, s, MAX_BINS, U_BIN_WIDTH)
    (x_first, x_last), (r_first, r_last) = _window(group, low), _window(group, (k - 3) * low)
    first, rest = np.arange(x_first, x_last + 1), np.arange(r_first, r_last + 1)
    pair = _nested(np.full(first.size, group), first, first, low, low / (1 - low))  # (h_x, h_x') of the group
    left = np.maximum(group - first[:, None] - first[None, :], 0)
    with np.errstate(invalid="ignore"):
        third = np.nan_to_num(stats.binom.pmf(rest[None, None, :], left[:, :, None], (k - 3) * low / (1 - 2 * low)))
    others = _Uniform(pair[:, :, None] * third, (1 / k, 1 / k, (k - 3) / k))
    # user 1's report: z (no shift), x, x', one of the k - 3 others
    return _cells(experiment, bins, others.at, (low, high, low, (k - 3) * low), (low, low, high, (k - 3) * low))


def _law_b(experiment: GroupExperiment, at_x: int, at_x2: int, revealed: int) -> CellLaw | None:
    """B: ``u ~ Bin(revealed, s)`` uniform reports, ``at_x`` users at x and ``at_x2`` at x'; cells (u, h_x, h_x')."""
    from scipy import signal

    k, s, low, high = experiment.outputs, experiment.share, experiment.low, experiment.high
    bins = binomial_bins(revealed, s, MAX_BINS, U_BIN_WIDTH)

    def group(users: int) -> np.ndarray:
        """(h_x, h_x') of users at x from h_x = its window's first count (the offset does not matter: user 1's
        report shifts the cells, their losses are the same): h_x ~ Bin(users, high), h_x' | h_x."""
        first, last = _window(users, high)
        second = _window(users, low)[1]  # h_x' ~ Bin(users, low) marginally
        return _nested(np.full(last - first + 1, users), np.arange(first, last + 1), np.arange(second + 1),
                       high, low / (1 - high))

    base = signal.convolve2d(group(at_x), group(at_x2).T)
    others = _Uniform(base, (1 / k, 1 / k))
    # user 1's report: one of the k - 2 others (no shift), x, x'
    return _cells(experiment, bins, others.at, ((k - 2) * low, high, low), ((k - 2) * low, low, high))
