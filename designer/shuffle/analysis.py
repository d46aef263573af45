"""The central guarantee of shuffling n reports of a channel: per pair, worst case, lower bound.

Model: n users each apply the channel to their own value; a shuffler passes on the
multiset of reports. Neighbouring datasets differ in one user's value (replace-one),
and the other users' values are arbitrary (worst case) unless a population assumption
is stated. For an ordered pair ``(x, x')`` the central epsilon at ``delta`` is the
smallest ``epsilon`` with ``P_x(S) <= e^eps P_x'(S) + delta`` for every event S of the
multiset and every choice of the other values. Valid bounds are combined (the smallest
wins):

* the local level ``max_y log(Q[x,y]/Q[x',y])`` (post-processing of one report, ``delta = 0``);
* for a two-output channel (or, under ``--population``, a class of binary sub-channels), the
  exact worst case of the shuffled count over every composition of the other users
  (:mod:`designer.shuffle.binary`);
* the clone reduction (:mod:`designer.shuffle.clones`) evaluated with
  :func:`designer.shuffle.divergence.epsilon_of`, worst case over the other users,
  and, under ``--population m``, with only ``m`` users of the pair's class counted;
* for rows differing on two outputs and proportional to the rows' common part elsewhere
  (randomised response), the common-part reduction (:mod:`designer.shuffle.common`);
* for a randomised-response table, worst case over the other users, the group reduction
  (:mod:`designer.shuffle.groups`): every blanket draw revealed but one group's, or every draw outside
  the pair's inputs, whichever suits the dataset.

With ``rounds > 1`` the same users are shuffled that many times and each pair's
dominating pairs are composed (:mod:`designer.shuffle.rounds`).

``epsilon`` is the largest central epsilon over the pairs that E protects (every pair
without E); ``epsilon_lower`` is the exact divergence of a concrete test
(:mod:`designer.shuffle.lower`) for the pair attaining ``epsilon``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from designer.shuffle.binary import binary_deltas, binary_epsilons
from designer.shuffle.clones import PairClass
from designer.shuffle.common import common_delta, common_epsilon
from designer.shuffle.divergence import delta_estimate, epsilon_estimate, epsilon_of, fmt_generic
from designer.shuffle.divergence import delta_of as divergence_delta_of
from designer.shuffle.groups import all_at_z_cells, group_delta, group_epsilon
from designer.shuffle.lower import CountTest, cells_delta_lower, cells_epsilon_lower, test_delta
from designer.shuffle.lower import epsilon_lower as test_epsilon_lower

#: Largest n analysed (the FFT laws of the bins of C grow like sqrt(n)).
MAX_USERS = 10**9
#: Most rounds composed (the composed loss grid grows like T^1.5).
MAX_ROUNDS = 10_000


@dataclass(frozen=True)
class PairGuarantee:
    """The central guarantee of one pair class, both directions (``x -> x'`` then ``x' -> x``).

    ``value`` holds epsilons (``delta`` given) or deltas (``epsilon`` given); ``source``
    says which bound gave each (``"local"``, ``"binary count"``, ``"clones"``, ``"clones+population"``,
    ``"common part"``, ``"groups"``).
    """

    pair: PairClass
    value: tuple[float, float]
    source: tuple[str, str]

    @property
    def reason(self) -> str:
        return self.pair.reason if any(math.isinf(v) or v >= 1 for v in self.value) else ""


@dataclass(frozen=True)
class ShuffleGuarantee:
    """The central guarantee of shuffling ``n`` reports.

    Attributes
    ----------
    n : int
    delta, epsilon : float
        One was given; the other is the proved worst case over the protected pairs.
    lower : float
        ``epsilon_lower`` (``delta`` given) or ``delta_lower`` (``epsilon`` given).
    pairs : list of PairGuarantee
    population : int or None
        The assumption: at least this many other users hold inputs of the pair's class.
    generic : float
        Feldman-McMillan-Talwar's generic bound from the largest finite local level of the
        protected pairs alone (the same numerics), for comparison.
    rounds : int
        Releases of the same users composed (1: a single shuffle).
    """

    n: int
    delta: float
    epsilon: float
    lower: float
    pairs: list[PairGuarantee] = field(repr=False)
    population: int | None = None
    generic: float = math.nan
    epsilon_given: bool = False
    rounds: int = 1

    @property
    def assumption(self) -> str:
        if self.population is None:
            return "none: worst case over the other users' values"
        return (f"at least {self.population} of the other {self.n - 1} users hold inputs of the pair's class "
                "(inputs whose reports share outputs with the pair's, e.g. the same block)")


def shuffle_guarantee(pairs: list[PairClass], n: int, delta: float | None = None, epsilon: float | None = None,
                      population: int | None = None, generic: bool = False, rounds: int = 1) -> ShuffleGuarantee:
    """The central guarantee of ``n`` shuffled reports for the given pair classes.

    Parameters
    ----------
    pairs : list of PairClass
        From :func:`designer.shuffle.clones.table_pairs` or the structured-package builders.
    n : int
        Number of shuffled reports (users).
    delta, epsilon : float
        Exactly one: ``delta`` gives epsilon, ``epsilon`` gives delta.
    population : int, optional
        The assumption: at least this many other users hold inputs of the pair's class.
    generic : bool
        Also compute FMT's generic bound from the largest local level (``delta`` given; one round).
    rounds : int
        The same users shuffled this many times (independent reports each round): the guarantee
        after ``rounds`` releases (:mod:`designer.shuffle.rounds`).
    """
    if not 2 <= n <= MAX_USERS:
        raise ValueError(f"--n must be from 2 to {MAX_USERS:,} (above, the FFT laws need more than ~200 MB), got {n}")
    if (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of --delta and --epsilon")
    if delta is not None and not 0 < delta < 1:
        raise ValueError(f"--delta must be in (0, 1), got {delta!r}")
    if epsilon is not None and not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"--epsilon must be a finite number >= 0, got {epsilon!r}")
    if population is not None and not 1 <= population <= n - 1:
        raise ValueError(f"--population must be between 1 and n - 1 = {n - 1}, got {population}")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"--rounds must be from 1 to {MAX_ROUNDS:,}, got {rounds}")
    if rounds == 1:
        evaluator = _Evaluator(delta, epsilon)
        results = [_pair_guarantee(pair, n, population, evaluator) for pair in pairs]
    else:
        from designer.shuffle.rounds import pair_rounds

        results = [PairGuarantee(pair, (0.0, 0.0), ("equal rows", "equal rows")) if pair.ratio <= 1 else
                   PairGuarantee(pair, *pair_rounds(pair, n, rounds, population, delta, epsilon)) for pair in pairs]
    protected = [(result, direction) for result in results for direction in (0, 1)
                 if result.pair.protected[direction]]
    if not protected:
        raise ValueError("E protects no pair of distinct inputs: nothing to guarantee")
    worst, direction = max(protected, key=lambda item: item[0].value[item[1]])
    value = worst.value[direction]
    # any protected direction of the worst pair is a lower bound; both are tried (the bounds of a
    # symmetric pair tie up to rounding, and its test's dataset suits one direction only)
    lower = max(_lower(worst.pair, side, n, population, delta, epsilon, rounds)
                for side in (0, 1) if worst.pair.protected[side])
    locals_ = [r.pair.local[d] for r, d in protected if math.isfinite(r.pair.local[d]) and r.pair.local[d] > 0]
    generic_value = math.nan
    if generic and locals_ and delta is not None and rounds == 1:
        generic_value = epsilon_of(delta, fmt_generic(max(locals_), n))[0]
    if delta is not None:
        return ShuffleGuarantee(n, delta, value, lower, results, population, generic_value, rounds=rounds)
    return ShuffleGuarantee(n, value, epsilon, lower, results, population, generic_value, epsilon_given=True,
                            rounds=rounds)


def shuffle_channel(channel, n: int, delta: float | None = None, epsilon: float | None = None, privacy=None,
                    population: int | None = None) -> ShuffleGuarantee:
    """The central guarantee of ``n`` shuffled reports of ``channel`` (E ``privacy`` optional: protected directions).

    A convenience over :func:`designer.shuffle.sources.channel_pairs` and :func:`shuffle_guarantee`.
    """
    from designer.shuffle.sources import channel_pairs

    return shuffle_guarantee(channel_pairs(channel, privacy), n, delta=delta, epsilon=epsilon, population=population)


class _Evaluator:
    """Bounds of one run: epsilons at the given ``delta``, or deltas at the given ``epsilon`` (cached)."""

    def __init__(self, delta: float | None, epsilon: float | None):
        self.delta, self.epsilon = delta, epsilon
        self.cache: dict = {}

    def clones(self, experiments: list, beat: float = math.inf) -> float:
        """The best outward bound of equally valid experiments (only the most promising one is evaluated outward).

        ``inf`` (epsilon) or 1 (delta) without the outward evaluation when even the float estimate is not
        below ``beat`` (a bound already proved for every direction of the pair).
        """
        key = (tuple(experiments), beat)
        if key not in self.cache:
            if self.delta is not None:
                estimates = {experiment: epsilon_estimate(self.delta, experiment) for experiment in experiments}
                best = min(experiments, key=estimates.get)
                self.cache[key] = epsilon_of(self.delta, best)[0] if estimates[best] < beat else math.inf
            else:
                hopeful = [e for e in experiments if delta_estimate(self.epsilon, e) < beat]
                self.cache[key] = min([1.0] + [min(1.0, divergence_delta_of(self.epsilon, e)) for e in hopeful])
        return self.cache[key]

    def binary(self, pair) -> tuple[float, float]:
        """The exact count analysis of a binary pair, both directions (epsilons, or deltas capped at 1)."""
        if pair not in self.cache:
            if self.delta is not None:
                self.cache[pair] = tuple(value for value, _ in binary_epsilons(self.delta, pair))
            else:
                self.cache[pair] = tuple(min(1.0, value) for value in binary_deltas(self.epsilon, pair))
        return self.cache[pair]

    def common(self, experiment) -> float:
        """The common-part reduction of one direction (an epsilon, or a delta capped at 1)."""
        if experiment not in self.cache:
            if self.delta is not None:
                self.cache[experiment] = common_epsilon(self.delta, experiment)[0]
            else:
                self.cache[experiment] = min(1.0, common_delta(self.epsilon, experiment))
        return self.cache[experiment]

    def group(self, experiment) -> float:
        """The group reduction, both directions alike (an epsilon, or a delta capped at 1)."""
        if experiment not in self.cache:
            if self.delta is not None:
                self.cache[experiment] = group_epsilon(self.delta, experiment)
            else:
                self.cache[experiment] = group_delta(self.epsilon, experiment)
        return self.cache[experiment]

    def local(self, level: float) -> float:
        """The local level as a central bound: epsilon itself, or delta 0 (level within epsilon) / 1."""
        if self.delta is not None:
            return level
        return 0.0 if level <= self.epsilon else 1.0


def _pair_guarantee(pair: PairClass, n: int, population: int | None, evaluator: _Evaluator) -> PairGuarantee:
    """Both directions of one pair: the smaller of the local level and the clone bounds."""
    if pair.ratio <= 1:  # equal rows: indistinguishable
        return PairGuarantee(pair, (0.0, 0.0), ("equal rows", "equal rows"))
    exact = pair.binary_pair(n - 1, population)
    counts = evaluator.binary(exact) if exact is not None else None
    count_source = "binary count" + ("+population" if pair.binary_scope == "class" else "")
    # every valid bound is a candidate, the smallest wins: the exact count analysis (its float numerics,
    # outward rounding) can lie above a clone bound; the symmetric clone bounds are proved only where their
    # estimate could beat it in some direction
    beat = math.inf if counts is None else max(counts)
    candidates = []
    worst = pair.experiments(n - 1, pair.share_all)
    if worst:
        candidates.append((evaluator.clones(worst, beat), "clones"))
    if population is not None and pair.share_class > 0:
        candidates.append((evaluator.clones(pair.experiments(population, pair.share_class), beat), "clones+population"))
    common = [([evaluator.common(experiment) for experiment in experiments], source)
              for experiments, source in pair.common_experiments(n - 1, population)] if counts is None else []
    group = pair.group_experiment(n - 1) if population is None and counts is None else None
    if group is not None:
        candidates.append((evaluator.group(group), "groups"))
    values, sources = [], []
    for direction in (0, 1):
        count = [(counts[direction], count_source)] if counts is not None else []
        directed = [(bounds[direction], source) for bounds, source in common]
        value, source = min([(evaluator.local(pair.local[direction]), "local")] + count + candidates + directed,
                            key=lambda item: item[0])
        values.append(value)
        sources.append(source)
    return PairGuarantee(pair, tuple(values), tuple(sources))


def _lower(pair: PairClass, direction: int, n: int, population: int | None, delta, epsilon, rounds: int = 1) -> float:
    """The concrete tests' bound for the worst pair's direction (epsilon_lower, or delta_lower): the largest.

    Under a population assumption the dataset must satisfy it: the other users hold the
    class's test input (only ``population`` of them when an input whose reports never enter
    the test exists for the rest). A table pair also tries every other user at x and at x'
    (one round).
    """
    use_class = population is not None
    others = population if use_class and pair.test_all == (0.0, 0.0) else n - 1
    tests = [pair.test(others, use_class)]
    if rounds == 1:
        tests += [CountTest(pair.test_first, pair.test_second, other, n - 1) for other in pair.test_others]
    if direction == 1:
        tests = [CountTest(test.second, test.first, test.other, test.others) for test in tests]
    if rounds > 1:
        from designer.shuffle.rounds import rounds_lower

        return rounds_lower(tests[0], rounds, delta, epsilon)
    # a randomised-response table: also the exact divergence of every other user at one third input (h_x, h_x',
    # h_rest), the group reduction's A(0) (the same both ways)
    group = pair.group_experiment(n - 1) if population is None else None
    cells = all_at_z_cells(group) if group is not None else None
    if delta is not None:
        return max([test_epsilon_lower(delta, test) for test in tests]
                   + ([cells_epsilon_lower(delta, *cells)] if cells else []))
    return max(0.0, max([test_delta(epsilon, test) for test in tests]
                        + ([cells_delta_lower(epsilon, *cells)] if cells else [])))
