"""The same users shuffled over T rounds: (epsilon, delta) after T releases, by privacy-loss distributions.

Each round every user reports afresh (independent randomness) from the same value, and the
analyst sees the T shuffled multisets. For a pair ``(x, x')`` a *dominating pair* of one round
is a pair of laws ``(P, P')`` of which the round's view, under ``x`` and ``x'``, is a
post-processing for every choice of the other values; then the T-round view is a
post-processing of ``(P^T, P'^T)`` (each round's post-processing uses its own randomness and
the fixed dataset), and the T-round central epsilon at delta is at most that of the product.
Its privacy-loss distribution is the T-fold sum of one round's
(:func:`solvers.pld.compose_pld`: grid rounded up, FFT with an explicit error bound). Four
dominating pairs, the smallest result wins:

* **local**: the two rows themselves (one report is the whole of user 1's contribution);
  structured classes without a table use their local level (pure, composed to ``T eps0``);
* **clones**: the binned counting experiment of the clone reduction
  (:func:`designer.shuffle.divergence.experiment_pld`), worst case over the others, and under
  ``--population`` with the assumed users;
* **common part** (rows differing on two outputs, randomised-response-like): the experiment of
  :mod:`designer.shuffle.common`, every cell of every bin;
* **binary count** (a binary class): the count's laws for each composition of the others; the
  worst case over datasets is the largest T-round bound over compositions (the same users every
  round), evaluated on a grid of :data:`ROUNDS_GRID` compositions of ``m - g`` users (``g`` users
  dropped, a post-processing in every round, as for one round in :mod:`designer.shuffle.binary`;
  every composition up to :data:`ROUNDS_FULL` others).

The lower bound is the concrete test of one round (:mod:`designer.shuffle.lower`) composed
``T`` times with the grid rounded down and every error taken off.
"""

from __future__ import annotations

import math

import numpy as np

from designer.shuffle.clones import PairClass
from designer.shuffle.common import common_pld
from designer.shuffle.divergence import experiment_pld
from designer.shuffle.lower import CountTest, test_statistics
from solvers.pld import compose_pld

#: Most other users whose every composition is composed over rounds (binary classes).
ROUNDS_FULL = 128
#: Beyond, compositions of ``m - g`` users with ``g = ceil(m / ROUNDS_GRID)``: about ``1 / (2 ROUNDS_GRID)``
#: relatively in epsilon (each composition costs one composition of its PLD).
ROUNDS_GRID = 128


def pair_rounds(pair: PairClass, n: int, rounds: int, population: int | None, delta: float | None,
                epsilon: float | None) -> tuple[tuple[float, float], tuple[str, str]]:
    """Both directions of one pair after ``rounds`` releases: the value (epsilon, or delta) and its source."""
    target = {"delta": delta} if delta is not None else {"epsilon": epsilon}
    index = 0 if delta is not None else 1
    cap = math.inf if delta is not None else 1.0
    candidates: list[list[tuple[float, str]]] = [[], []]
    for direction in (0, 1):
        candidates[direction].append((_local(pair, direction, rounds, target)[index], "local"))
    experiments = []
    if pair.ratio > 1:
        experiments += [(e, "clones") for e in pair.experiments(n - 1, pair.share_all)]
        if population is not None and pair.share_class > 0:
            experiments += [(e, "clones+population") for e in pair.experiments(population, pair.share_class)]
    for experiment, source in experiments:
        losses, masses, infinite, slack = experiment_pld(experiment)
        value = compose_pld(losses, masses, rounds, infinity_mass=infinite, slack=slack, **target)[index]
        for direction in (0, 1):  # the experiment is symmetric
            candidates[direction].append((value, source))
    for experiments, source in pair.common_experiments(n - 1, population):
        for direction, experiment in enumerate(experiments):
            law = common_pld(experiment)
            if law is not None:
                losses, masses, infinite, slack = law
                value = compose_pld(losses, masses, rounds, infinity_mass=infinite, slack=slack, **target)[index]
                candidates[direction].append((value, source))
    exact = pair.binary_pair(n - 1, population)
    if exact is not None:
        source = "binary count" + ("+population" if pair.binary_scope == "class" else "")
        for direction, value in enumerate(_binary(exact, rounds, target, index)):
            candidates[direction].append((value, source))
    values, sources = [], []
    for direction in (0, 1):
        value, source = min(candidates[direction], key=lambda item: item[0])
        values.append(min(value, cap))
        sources.append(source + f" x{rounds}")
    return tuple(values), tuple(sources)


def _local(pair: PairClass, direction: int, rounds: int, target: dict) -> tuple[float, float]:
    """The rows' own privacy-loss distribution composed (a table), or the pure local level times T."""
    if pair.rows:
        first, second = (np.asarray(row, dtype=float) for row in pair.rows[::1 if direction == 0 else -1])
        support = first > 0
        with np.errstate(divide="ignore"):
            losses = np.log(first[support]) - np.log(second[support])
        # the rows' own float values are the channel analysed: a few ulp per entry
        return compose_pld(losses, first[support], rounds, slack=4 * first.size * 2.0 ** -53, **target)
    level = rounds * pair.local[direction]
    if "delta" in target:
        return level, 0.0
    return target["epsilon"], 0.0 if level <= target["epsilon"] else 1.0


def _binary(pair, rounds: int, target: dict, index: int) -> tuple[float, float]:
    """The largest T-round bound over the compositions evaluated, both directions."""
    from designer.shuffle.binary import count_laws

    worst = [0.0, 0.0]
    for laws in count_laws(pair, ROUNDS_FULL, ROUNDS_GRID):
        if laws is None:
            return (math.inf, math.inf) if index == 0 else (1.0, 1.0)
        first, second, slack = laws
        for direction, (p, q) in enumerate(((first, second), (second, first))):
            keep = p > 0
            with np.errstate(divide="ignore"):
                losses = np.log(p[keep]) - np.log(q[keep])
            value = compose_pld(losses, p[keep], rounds, slack=slack, **target)[index]
            worst[direction] = max(worst[direction], value)
    return worst[0], worst[1]


def rounds_lower(test: CountTest, rounds: int, delta: float | None, epsilon: float | None) -> float:
    """The concrete test composed over ``rounds``: epsilon_lower (``delta`` given) or delta_lower, the larger of
    its statistics' values (each a post-processing of the round's view)."""
    best = 0.0
    for first, second, margin in test_statistics(test):
        keep = first > 0
        with np.errstate(divide="ignore"):
            losses = np.log(first[keep]) - np.log(np.maximum(second[keep], 0.0))
        if delta is not None:
            value = compose_pld(losses, first[keep], rounds, delta=delta, slack=margin, upper=False)[0]
        else:
            value = compose_pld(losses, first[keep], rounds, epsilon=epsilon, slack=margin, upper=False)[1]
        best = max(best, value)
    return best
