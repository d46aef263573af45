"""The clone decomposition of a pair of inputs, read from a channel table or a structured package.

For inputs ``x, x'`` with rows ``R = Q[x,.]`` and ``R' = Q[x',.]`` (Feldman, McMillan and
Talwar, "Hiding among the clones", Lemma 3.3 generalised to a given channel; the
variation-ratio form of Wang et al. 2024, Definition 4.1):

* ``p`` bounds the likelihood ratio both ways, ``max_y max(R/R', R'/R)`` (``inf`` when a
  report of one is impossible under the other);
* ``TV = sum_y |R - R'| / 2`` is their total variation. With
  ``G0 = (R - min(R, R'))/TV``, ``G1 = (R' - min(R, R'))/TV`` and the common part
  ``W``, ``R = (TV p/(p-1)) G0 + (TV/(p-1)) G1 + (1 - w) W`` and ``R'`` likewise with
  ``G0, G1`` swapped, where the informative weight is ``w = TV (p+1)/(p-1)`` (``TV``
  for ``p = inf``); ``W >= 0`` exactly because ``R <= p R'`` and ``R' <= p R``;
* every other input ``z`` reports a sample of ``M = (R + R')/2`` with probability at
  least its *share* ``s_z = min_y Q[z,y] / M[y]`` (the ratio ``Q[z,y]/(Q[x,y]+Q[x',y])``
  times 2), and ``M = w (G0 + G1)/2 + (1 - w) W``: a *clone*, whose report is
  informative (``G0`` or ``G1``) with probability ``w``.

With the other users' values unknown (worst case), the share is the minimum over every
input; under a population assumption (at least ``m`` other users hold inputs of the
pair's class), the minimum over that class counts for ``m`` users.

Every number is rounded toward the worse case, by relative steps of a few units in the last
place (above the rounding error of the float sums): ``p`` up, shares down; ``TV``, hence ``w``,
is kept as an interval whose width the divergence accounts for. A structured package's numbers
are exact fractions, rounded outward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.exact import float_outward
from designer.shuffle.divergence import TwoCountExperiment
from designer.shuffle.lower import CountTest

_ULP = 2.0 ** -52


@dataclass(frozen=True)
class PairClass:
    """A pair of inputs ``(x, x')`` (or a class of pairs sharing every number) and its clone decomposition.

    Attributes
    ----------
    name : str
        The pair (``"x=a, x'=b"``) or the class (``"same block"``).
    ratio : float
        ``p`` (rounded up, ``inf`` allowed; 1 when the rows are equal).
    tv : tuple of float
        ``TV`` rounded down and up; for a class of pairs, an interval around a ``TV`` at least each
        member's (:mod:`designer.shuffle.orbits`: for any ``p``, moving ``lambda`` of the common part
        into both informative laws gives a valid decomposition of weight ``w + lambda``, whose
        experiment post-processes to the real pair).
    share_all, share_class : float
        Smallest share over every input, and over the pair's class (rounded down).
    local : tuple of float
        The local guarantee ``max_y log(R/R')`` and ``max_y log(R'/R)`` (rounded up, ``inf``
        allowed): the central epsilon of each direction with ``delta = 0``.
    protected : tuple of bool
        Whether E constrains each direction (``E[x,x']``, ``E[x',x]`` finite).
    test_first, test_second : tuple of float
        ``(R(Y+), R(Y-))`` and ``(R'(Y+), R'(Y-))`` for the lower-bound test.
    test_all, test_class : tuple of float
        ``(Q[z,Y+], Q[z,Y-])`` of the input ``z`` held by the other users in the lower-bound dataset
        (worst case / under the population assumption): the one whose reports fall least in ``Y+ | Y-``.
    reason : str
        Why no finite bound exists when there is none (empty otherwise).
    pairs : tuple of tuple of int
        The ordered table indices ``(x, x')`` (empty for a structured class).
    binary : tuple of float
        When every input of the pair's class reports on the same two outputs (a two-output table,
        or a block of binary sub-channels): ``(Q[x,1], Q[x',1], min_z Q[z,1], max_z Q[z,1])`` over the
        class, ``1`` the second of those outputs: the parameters of the exact count analysis
        (:mod:`designer.shuffle.binary`); empty otherwise.
    binary_scope : str
        ``"all"`` when that class is every input (the count analysis holds in the worst case), ``"class"``
        when it holds only for the users assumed in the class (``--population``); empty otherwise.
    rows : tuple
        ``(R, R')`` of a table pair (tuples of floats, for composition over rounds); empty otherwise.
    test_others : tuple
        More datasets for the lower bound, valid in the worst case and under a population assumption
        alike: ``(Q[x,Y+], Q[x,Y-])`` and ``(Q[x',Y+], Q[x',Y-])`` (every other user at x, or at x'; both
        in the pair's class). Empty for structured classes.
    common : tuple
        When the rows differ on two outputs ``y1, y2`` only and are proportional to the common part
        elsewhere (:mod:`designer.shuffle.common`): ``((s, K(y1), K(y2))`` over every input, the same
        over the pair's class, ``(R(y1), R(y2), R'(y1), R'(y2)), defect)``; empty otherwise.
    randomised_response : tuple
        When the whole table is randomised response (:mod:`designer.shuffle.groups`): ``(outputs, inputs,
        low, defect)``; empty otherwise.
    """

    name: str
    ratio: float
    tv: tuple[float, float]
    share_all: float
    share_class: float
    local: tuple[float, float]
    protected: tuple[bool, bool]
    test_first: tuple[float, float]
    test_second: tuple[float, float]
    test_all: tuple[float, float]
    test_class: tuple[float, float]
    reason: str = ""
    pairs: tuple[tuple[int, int], ...] = ()
    binary: tuple[float, ...] = ()
    binary_scope: str = ""
    rows: tuple = ()
    common: tuple = ()
    test_others: tuple = ()
    randomised_response: tuple = ()

    def group_experiment(self, others: int):
        """The group reduction's experiment (:mod:`designer.shuffle.groups`), or None (not randomised response, or
        more blanket draws expected than it handles)."""
        from designer.shuffle.groups import group_experiment

        return group_experiment(*self.randomised_response, others) if self.randomised_response else None

    def common_experiments(self, others: int, population: int | None = None) -> list:
        """The common-part experiments of both directions (:mod:`designer.shuffle.common`): worst case, and under
        a population assumption with the class's common part (empty where the rows' structure does not fit)."""
        from designer.shuffle.common import CommonExperiment

        if not self.common:
            return []
        worst, within, (r1, r2, q1, q2), defect = self.common
        result = []
        for (share, k1, k2), counted, source in ((worst, others, "common part"),
                                                   (within, population, "common part+population")):
            if share > 0 and counted:
                result.append((tuple(CommonExperiment(share, counted, (k1, k2), first, second, defect)
                                     for first, second in (((r1, r2), (q1, q2)), ((q1, q2), (r1, r2)))), source))
        return result

    def binary_pair(self, others: int, population: int | None = None):
        """The exact count analysis of both directions (``None`` unless the pair's class is binary and it applies).

        Worst case (``binary_scope == "all"``): every other user counts. Under a population
        assumption for a binary class of a larger channel: the ``population`` users of the class (the
        others never report on its two outputs; their reports, and any user beyond ``population``,
        are independent additions to the multiset, a post-processing).
        """
        from designer.shuffle.binary import BinaryPair

        if self.binary_scope == "all":
            counted = others
        elif self.binary_scope == "class" and population is not None:
            counted = population
        else:
            return None
        pair = BinaryPair(*self.binary, counted)
        return pair if pair.usable else None

    def experiments(self, others: int, share: float) -> list[TwoCountExperiment]:
        """The two valid decompositions with ``others`` users of share ``share`` (none if the rows are equal).

        With the common part split off (informative weight ``w`` as above) and without it
        (FMT's own form, ``R = a G0 + (1 - a) G1`` with ``a = p/(p+1)``: ``w = 1``; valid for
        finite ``p``). Either bounds the divergence; the smaller is kept. The clone
        probability is the share in both.
        """
        if self.ratio <= 1 or self.tv[1] == 0:
            return []
        p = self.ratio
        factor = 1.0 if math.isinf(p) else (p + 1) / (p - 1)
        informative = min(1.0, self.tv[1] * factor * (1 + 4 * _ULP))
        spread = informative - self.tv[0] * factor * (1 - 4 * _ULP)  # the exact w lies in [informative - spread, ...]
        share = max(0.0, min(1.0, share))
        others = others if share > 0 else 0
        result = [TwoCountExperiment(p, informative, share, others, spread if informative < 1 else 0.0)]
        if math.isfinite(p) and informative < 1:
            result.append(TwoCountExperiment(p, 1.0, share, others))
        return result

    def test(self, others: int, population: bool) -> CountTest:
        """The lower-bound test of the direction ``x -> x'`` (the reverse swaps ``test_first`` and ``test_second``)."""
        return CountTest(self.test_first, self.test_second, self.test_class if population else self.test_all, others)


def table_pairs(matrix: np.ndarray, protected: np.ndarray | None, labels) -> list[PairClass]:
    """The :class:`PairClass` of every unordered pair of a channel table (floats, read as exact binary values).

    ``protected[x, x']`` says whether E constrains ``x -> x'`` (every pair when ``None``).
    The class of a pair is the connected component of its inputs in the graph joining
    inputs whose rows share an output.
    """
    q = np.asarray(matrix, dtype=float)
    q = q / q.sum(axis=1, keepdims=True)  # rows accepted within a tolerance of 1: analysed as distributions
    k, m_out = q.shape
    component = row_components(q > 0)  # inputs joined when their rows share an output
    slack = (m_out + 2) * _ULP
    binary = _binary_classes(q, component)
    structure = _randomised_response(q)
    result = []
    for x in range(k):
        for x2 in range(x + 1, k):
            first, second = q[x], q[x2]
            with np.errstate(divide="ignore", invalid="ignore"):
                forward = np.where(first > 0, first / second, 1.0).max()
                backward = np.where(second > 0, second / first, 1.0).max()
            local = (_log_up(forward), _log_up(backward))
            ratio = float(np.nextafter(max(forward, backward), np.inf)) if max(forward, backward) > 1 else 1.0
            tv = 0.5 * float(np.abs(first - second).sum())
            middle = 0.5 * (first + second)
            support = middle > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                shares = (q[:, support] / middle[support]).min(axis=1) * (1 - 4 * _ULP)
            members = component == component[x] if component[x] == component[x2] else np.zeros(k, dtype=bool)
            in_class = np.flatnonzero(members)
            noise = 1e-12 * (first + second)  # normalised float rows differ by ulps where they are equal
            plus, minus = first - second > noise, second - first > noise
            # the lower-bound datasets: the other users hold the input whose reports fall least in Y+ and Y-
            counted = q[:, plus | minus].sum(axis=1)
            worst_test = int(np.argmin(counted))
            class_test = int(in_class[np.argmin(counted[in_class])]) if in_class.size else worst_test

            def counts(row: np.ndarray) -> tuple[float, float]:
                return float(row[plus].sum()), float(row[minus].sum())

            share_all = float(max(shares.min(), 0.0))
            share_class = float(max(shares[in_class].min(), 0.0)) if in_class.size else 0.0
            reason = share_reason(share_all, share_class, component[x] == component[x2])
            result.append(PairClass(
                f"x={labels[x]}, x'={labels[x2]}", ratio, (tv * (1 - slack), tv * (1 + slack)), share_all,
                share_class, local,
                (True, True) if protected is None else (bool(protected[x, x2]), bool(protected[x2, x])),
                counts(first), counts(second), counts(q[worst_test]), counts(q[class_test]), reason, ((x, x2), (x2, x)),
                *_binary_parameters(q, binary, component, x, x2), (tuple(first.tolist()), tuple(second.tolist())),
                _common_parameters(q, first, second, members), (counts(first), counts(second)), structure,
            ))
    return result


def _randomised_response(q: np.ndarray) -> tuple:
    """``(outputs, inputs, low, defect)`` when every row puts ``high`` on its own output (distinct outputs) and
    ``low < high`` on each other (``high = 1 - (outputs - 1) low``, at least 3 inputs), up to a total variation
    ``defect`` per row of at most 1e-12 (float rows; charged per user by the reduction); empty otherwise."""
    inputs, outputs = q.shape
    if inputs < 3:
        return ()
    own = q.argmax(axis=1)
    if np.unique(own).size != inputs:
        return ()
    rows = np.arange(inputs)
    others = np.ones(q.shape, dtype=bool)
    others[rows, own] = False
    low = float(q[others].mean())
    if not 0 < low < 1 - (outputs - 1) * low:
        return ()
    ideal = np.full(q.shape, low)
    ideal[rows, own] = 1 - (outputs - 1) * low
    defect = 0.5 * float(np.abs(q - ideal).sum(axis=1).max())
    if defect > 1e-12:
        return ()
    return outputs, inputs, low, defect + 8 * outputs * _ULP


def _common_parameters(q: np.ndarray, first: np.ndarray, second: np.ndarray, members: np.ndarray) -> tuple:
    """The common-part parameters of a pair (:attr:`PairClass.common`), or ``()`` when the structure does not fit.

    The rows must differ on exactly two outputs (by more than 1e-12 relative: normalised float rows differ by
    ulps elsewhere) and each be proportional to the common part ``min_z Q[z]`` on the others, up to a total
    variation ``defect`` of at most 1e-12 (charged to the bound).
    """
    differ = np.flatnonzero(np.abs(first - second) > 1e-12 * (first + second))
    if differ.size != 2:
        return ()
    y1, y2 = (int(y) for y in differ)
    neutral = np.ones(q.shape[1], dtype=bool)
    neutral[differ] = False
    shares = []
    defect = 0.0
    for rows in (q, q[members] if members.any() else q[:0]):
        if rows.shape[0] == 0:
            shares.append((0.0, 0.0, 0.0))
            continue
        least = rows.min(axis=0)
        total = float(least.sum())
        weight = float(least[neutral].sum())
        if total <= 0 or weight <= 0:
            shares.append((0.0, 0.0, 0.0))
            continue
        gap = max(float(np.abs(row[neutral] - float(row[neutral].sum()) / weight * least[neutral]).sum())
                  for row in (first, second))
        if gap > 1e-12:
            shares.append((0.0, 0.0, 0.0))
            continue
        defect = max(defect, gap + 8 * q.shape[1] * _ULP)
        shares.append((total * (1 - 8 * q.shape[1] * _ULP), float(least[y1]) / total, float(least[y2]) / total))
    if shares[0][0] == 0 and shares[1][0] == 0:
        return ()
    return (shares[0], shares[1], (float(first[y1]), float(first[y2]), float(second[y1]), float(second[y2])), defect)


def _binary_classes(q: np.ndarray, component: np.ndarray) -> dict:
    """Per component whose rows all report on the same two outputs: ``(column, low, high, scope)``.

    Each such row is read as the Bernoulli law of the second output (``P = Q[z, column]``, the
    first output ``1 - P`` exactly); ``low``, ``high`` are the smallest and largest ``P`` of the
    component; the scope is ``"all"`` when the component is every input, ``"class"`` otherwise.
    """
    result = {}
    labels = np.unique(component)
    for label in labels:
        members = component == label
        columns = np.flatnonzero((q[members] > 0).any(axis=0))
        if columns.size == 2:
            ones = q[members, columns[1]]
            result[int(label)] = (int(columns[1]), float(ones.min()), float(ones.max()),
                                  "all" if labels.size == 1 else "class")
    return result


def _binary_parameters(q: np.ndarray, binary: dict, component: np.ndarray, x: int, x2: int) -> tuple:
    """``(binary, binary_scope)`` of a pair (empty unless both inputs lie in one binary component)."""
    label = int(component[x])
    if label != int(component[x2]) or label not in binary:
        return (), ""
    column, low, high, scope = binary[label]
    return (float(q[x, column]), float(q[x2, column]), low, high), scope


def block_hadamard_pairs(sizes: list[int], coin: int, bits: int) -> list[PairClass]:
    """The pair classes of a block Hadamard response package (exact fractions from its parameters).

    Same block (rows ``i + 1`` of a Sylvester matrix, differing on half of the outputs):
    ``p = T/(2^b - T)``, ``TV = (2T - 2^b)/2^(b+1)``, so ``w = 1/2``; an input of the same
    block has share at least ``(2^b - T)/T`` (its smallest report probability over the
    largest of ``M``); an input of another block has share 0. Different blocks: disjoint
    outputs, no finite central guarantee.
    """
    high, low = max(coin, (1 << bits) - coin), min(coin, (1 << bits) - coin)
    total = 1 << bits
    classes = []
    if max(sizes) >= 2:
        # lower-bound datasets: the other users hold x itself (in the block) or another block's input
        same = _hadamard_class("same block", high, low, total, others_in_class=None,
                               others_outside=(Fraction(0), Fraction(0)), share_outside=Fraction(0))
        classes.append(same)
    if len(sizes) >= 2:
        classes.append(PairClass(
            "different blocks", math.inf, (1.0, 1.0), 0.0, 0.0, (math.inf, math.inf), (False, False),
            (1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.0, 0.0),
            "outputs reveal the block: the two inputs' reports never meet, for any n",
        ))
    return classes


def high_low_pairs(k: int, sensitive: int, coin: int, keep: int, bits: int) -> list[PairClass]:
    """The pair classes of a high-low Hadamard response package (exact fractions from its parameters).

    Two sensitive inputs: as in a block, and every input (a non-sensitive one reports
    ``2(2^b - T)/(S 2^b)`` on each of ``[S]``) has share at least ``(2^b - T)/T``: amplified
    whatever the other users hold. A sensitive ``x`` and a non-sensitive ``x'``: ``x'``
    reports ``S + i``, which no other input can, so no share; ``x -> x'`` keeps its local
    level centrally, ``x' -> x`` is unprotected (``E = inf``, Definition 3).
    """
    total = 1 << bits
    high, low = max(coin, total - coin), min(coin, total - coin)
    classes = []
    if sensitive >= 2:
        # lower-bound dataset: the other users hold a non-sensitive input (or x itself when there is none)
        outside = (Fraction(total - coin, 2 * total),) * 2 if k > sensitive else None
        classes.append(_hadamard_class("two sensitive inputs", high, low, total, others_in_class=outside,
                                       others_outside=outside, share_outside=Fraction(low, high)))
    if k > sensitive:
        local = _log_up(float_outward(Fraction(2 * high, total - keep), math.inf))
        classes.append(PairClass(
            "sensitive x, non-sensitive x'", math.inf, (0.0, 1.0), 0.0, 0.0, (local, math.inf), (True, False),
            # test: Y+ = S_x, Y- = {S + i}; the other users hold x (a sensitive input)
            (coin / total, 0.0), ((total - coin) / total, keep / total), (coin / total, 0.0), (coin / total, 0.0),
            "x' reports S + i, which no other input can (share 0): x -> x' keeps its local level, "
            "x' -> x is not protected (E = inf)",
        ))
    return classes


def _hadamard_class(name: str, high: int, low: int, total: int, others_in_class, others_outside,
                    share_outside: Fraction) -> PairClass:
    ratio = Fraction(high, low)
    tv = Fraction(high - low, 2 * total)
    share = Fraction(low, high)
    local = _log_up(float_outward(ratio, math.inf))
    first = (float(Fraction(high, 2 * total)), float(Fraction(low, 2 * total)))
    outside = first if others_outside is None else tuple(float(value) for value in others_outside)
    inside = first if others_in_class is None else tuple(float(value) for value in others_in_class)
    return PairClass(
        name, float_outward(ratio, math.inf), (float_outward(tv, -math.inf), float_outward(tv, math.inf)),
        float_outward(share_outside, -math.inf),
        float_outward(share, -math.inf), (local, local), (True, True), first, first[::-1], outside, inside,
    )


def share_reason(share_all: float, share_class: float, same_component: bool) -> str:
    """Why a pair has no finite clone bound, from its shares (empty when the worst-case share is positive)."""
    if share_all == 0 and share_class == 0 and not same_component:
        return ("the reports of the two inputs never meet: their outputs reveal which one (no input's "
                "reports contain a share of both rows)")
    return "no other input's reports contain a share of both rows" if share_all == 0 else ""


def row_components(support: np.ndarray) -> np.ndarray:
    """Component label of each row of a boolean incidence matrix (rows joined when they share a column)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    incidence = csr_matrix(np.asarray(support, dtype=np.int8))
    _, labels = connected_components(incidence @ incidence.T, directed=False)
    return labels


def _log_up(ratio: float) -> float:
    """``log(ratio)`` rounded up (``inf`` stays ``inf``; at most 1 gives 0)."""
    if not ratio > 1:
        return 0.0
    if math.isinf(ratio):
        return math.inf
    return float(np.nextafter(np.nextafter(math.log(ratio), np.inf), np.inf))
