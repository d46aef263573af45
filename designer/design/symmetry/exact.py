"""Exact orbit-LP designs: rational weights and channel, an exact certificate, rigorous bounds.

The same guarantees as ``design --exact`` on the enumeration path
(:func:`designer.design.vertex.design_by_vertices`), at class level:

* **Rational columns.** A box vertex of class a is high at ``r_a``: ``r`` exactly for a
  level ``log(r)``, a rigorous rational *lower* bound of ``e^eps`` (128 bits,
  :func:`designer.cone.exact_ratio`) for a rational level such as ``1``, whose ``e^eps``
  is irrational (Lindemann) -- the cone then shrinks by less than ``1e-38`` relative,
  as on the enumeration path. The float LP picks the support orbits; their weights solve
  ``sum_o theta_o s_a(v_o) = n_a`` exactly (python-flint), and must be non-negative.
* **Exact certificate.** :func:`exact_structural_certificate` checks the class-level proof
  of :mod:`designer.design.symmetry.certify` in rationals: counts within the class sizes, every
  high value ``r_a <= e^{eps_a}`` decided exactly (:meth:`designer.exact.ExactEpsilon.allows`),
  class row sums exactly 1. Small channels are also tabulated in rationals and given to the
  exact certifier (:func:`designer.certify.certify` with ``exact=True``).
* **Rigorous optimality bracket** (mutual information). The lower bound is the exact
  channel's information, ``sum_o theta_o mu(v_o)`` in Arb balls. The upper bound is the
  dual of :mod:`designer.design.symmetry.orbits` made rigorous: ``y`` (the LP's float duals, read
  as rationals) is raised by ``delta = max_o (mu(v_o) - y . s(v_o)) / sum_a s_a(v_o)``
  (``delta >= 0``), evaluated in Arb over *every* orbit with the true ``e^{eps_a}``; then
  ``mu(v) <= (y + delta) . s(v)`` for every generator of the true cone, so by sublinearity
  every E-LDP channel has ``I(X; Y) <= sum_a n_a (y_a + delta)`` (Kairouz, Oh, Viswanath
  2014, Theorem 4; the LP dual argument of :mod:`designer.design.vertex`). Both bounds are
  rounded outward to floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np

from designer.cone import exact_ratio, irrational_ratio_note
from designer.exact import ExactEpsilon, arb_fraction, arb_precision, ball_bounds, float_outward, fmpq_fraction
from designer.design.symmetry.certify import StructureCertificate
from designer.design.symmetry.classes import ClassStructure
from designer.design.symmetry.orbits import Orbits

#: Bits of the Arb balls of the optimality bracket.
BRACKET_BITS = 128
#: Largest rational channel (k x m entries) tabulated in exact mode.
MAX_EXACT_ENTRIES = 2_000_000


@dataclass(frozen=True)
class OptimalityBracket:
    """Rigorous ``lower <= optimum <= upper`` (nats), from Arb balls rounded outward."""

    lower: float
    upper: float
    delta: float

    @property
    def width(self) -> float:
        return self.upper - self.lower


def exact_row_levels(structure: ClassStructure, components: list[np.ndarray], epsilon: np.ndarray) -> list:
    """The exact row level of every class (None for a free class): its entries inside its component, which must all be equal.

    (:func:`designer.design.symmetry.orbits.row_levels` checks that the floats agree; two levels
    written differently with the same float, ``log(3)`` and ``1.0986122886681098``, are
    refused here, since the exact certificate assumes one level per row.) Computed once per design:
    every later step reads this list.
    """
    owner = {int(a): group for group in components for a in group}
    result = []
    for a in range(structure.r):
        if not np.isfinite(epsilon[a]):
            result.append(None)
            continue
        levels = {structure.exact_level(a, int(b)) for b in owner[a] if b != a or structure.sizes[a] >= 2}
        if len(levels) > 1:
            shown = ", ".join(sorted(map(str, levels))[:3])
            raise ValueError(f"--exact: the levels of class {a} differ exactly ({shown}) though their floats agree; write them alike")
        result.append(next(iter(levels), None))
    return result


def exact_ratios(levels: list) -> list[Fraction]:
    """``r_a``: ``e^{eps_a}`` exactly for ``log(r)``, a rigorous rational lower bound otherwise (1: free, 0).

    ``levels``: :func:`exact_row_levels`.
    """
    return [Fraction(1) if level is None else exact_ratio(level) for level in levels]


def irrational_note(levels: list) -> str | None:
    """:func:`designer.cone.irrational_ratio_note` for the row levels in use (:func:`exact_row_levels`)."""
    return irrational_ratio_note(level for level in levels if level is not None)


def with_exact_levels(privacy, structure: ClassStructure) -> ClassStructure | None:
    """Twin classes of a dense E with its exact entries as class levels, or None.

    Twin classes are found on the float levels; for ``--exact`` every block of E between
    two classes must hold one exact level (``log(3)`` everywhere, not ``log(3)`` next to its
    decimal), which is checked here on all k (k - 1) entries. Then the class structure's E
    *is* the file's E exactly, and its exact certificate certifies against it.
    """
    k = privacy.k
    rows, columns = np.nonzero(~np.eye(k, dtype=bool))
    levels = privacy.exact_levels(rows, columns)
    codes: dict = {}
    code = np.fromiter((codes.setdefault(level, len(codes)) for level in levels), dtype=np.int64, count=rows.size)
    by_code = list(codes)
    c = structure.class_of()
    pair = c[rows] * structure.r + c[columns]
    low = np.full(structure.r**2, np.iinfo(np.int64).max)
    high = np.full(structure.r**2, -1)
    np.minimum.at(low, pair, code)
    np.maximum.at(high, pair, code)
    if np.any((high >= 0) & (low != high)):
        return None
    exact = np.empty((structure.r, structure.r), dtype=object)
    for a in range(structure.r):
        for b in range(structure.r):
            index = a * structure.r + b
            exact[a, b] = by_code[high[index]] if high[index] >= 0 else ExactEpsilon(infinite=True)
            if float(exact[a, b]) != structure.levels[a, b]:
                return None
    return replace(structure, exact_levels=exact)


def exact_weights(
    structure: ClassStructure, orbits: Orbits, support: np.ndarray, ratios: list[Fraction]
) -> dict[int, Fraction]:
    """Exact weights of the support orbits: ``sum_o theta_o s_a(v_o) = n_a`` per component.

    Normal equations in rationals (python-flint), as :func:`designer.design._exact_channel_matrix`;
    raises ``ArithmeticError`` when the support has no exact non-negative solution.
    """
    import flint

    weights: dict[int, Fraction] = {}
    for component in np.unique(orbits.component[support]):
        members = [int(o) for o in support if orbits.component[o] == component]
        used = np.flatnonzero((orbits.high[members] + orbits.low[members]).any(axis=0))  # every other class sum is 0
        rows = [class_sums(orbits, o, ratios, used) for o in members]
        s = len(rows)
        gram = flint.fmpq_mat(s, s, [fmpq_fraction(sum((x * y for x, y in zip(u, v)), Fraction(0))) for u in rows for v in rows])
        sizes = [int(structure.sizes[a]) for a in used]
        target = flint.fmpq_mat(s, 1, [fmpq_fraction(sum((x * n for x, n in zip(u, sizes)), Fraction(0))) for u in rows])
        theta = [Fraction(int(value.p), int(value.q)) for value in gram.solve(target).entries()]
        nonzero = np.flatnonzero(np.any([[value != 0 for value in row] for row in rows], axis=0))
        totals = [sum((theta[i] * rows[i][j] for i in range(s)), Fraction(0)) for j in nonzero]
        if any(total != sizes[j] for total, j in zip(totals, nonzero)) or min(theta) < 0:
            raise ArithmeticError("the orbit LP's support has no exact non-negative solution; retry without --exact")
        weights.update(zip(members, theta))
    return weights


def class_sums(orbits: Orbits, o: int, ratios: list[Fraction], classes=None) -> list[Fraction]:
    """``s_a(v_o) = high_a r_a + low_a`` in rationals, for every class or for ``classes`` only."""
    classes = range(len(ratios)) if classes is None else classes
    return [int(orbits.high[o, a]) * ratios[a] + int(orbits.low[o, a]) for a in classes]


@dataclass(frozen=True)
class ExactSupport:
    """An exact orbit-LP solution: the E (classes, components, row levels), orbits, ``r_a`` and weights.

    ``levels``: the exact row levels (:func:`exact_row_levels`), computed here when not given.
    """

    structure: ClassStructure
    components: list
    epsilon: np.ndarray
    orbits: Orbits
    ratios: list
    weights: dict
    levels: list | None = None

    def __post_init__(self):
        if self.levels is None:
            object.__setattr__(self, "levels", exact_row_levels(self.structure, self.components, self.epsilon))


def exact_structural_certificate(solution: ExactSupport) -> StructureCertificate:
    """The class-level proof of :mod:`designer.design.symmetry.certify`, decided in exact arithmetic.

    ``margin`` is ``min eps_a - log r_a`` over the high classes of the support (0 for ``log(r)``).
    """
    structure, components, epsilon, orbits, ratios = (
        solution.structure, solution.components, solution.epsilon, solution.orbits, solution.ratios
    )
    weights = solution.weights
    sizes = structure.sizes
    row_sums = [Fraction(0)] * structure.r
    margin = math.inf
    for o, theta in weights.items():
        high, low = orbits.high[o], orbits.low[o]
        if theta < 0 or np.any(high < 0) or np.any(low < 0) or np.any(high + low > sizes):
            return StructureCertificate(False, "exact structural", -math.inf, f"orbit {o}: counts outside the class sizes")
        support = np.flatnonzero(high + low)
        if not np.isin(support, components[orbits.component[o]]).all() or np.any(high[~np.isfinite(epsilon)] > 0):
            return StructureCertificate(False, "exact structural", -math.inf, f"orbit {o}: outside its component")
        for a in np.flatnonzero(high):
            level = solution.levels[a]
            if level is None or not level.allows(ratios[a], Fraction(1)):
                return StructureCertificate(False, "exact structural", -math.inf, f"class {a}: ratio {ratios[a]} above e^eps")
            margin = min(margin, level.gap(ratios[a]))
        for a, value in zip(support, class_sums(orbits, o, ratios, support)):
            row_sums[a] += theta * value
    wrong = [a for a in range(structure.r) if row_sums[a] != int(sizes[a])]
    if wrong:
        return StructureCertificate(False, "exact structural", margin, f"class {wrong[0]}: row sum {row_sums[wrong[0]] / int(sizes[wrong[0]])}")
    return StructureCertificate(True, "exact structural", margin, "class row sums exactly 1")


def information_bracket(solution: ExactSupport, duals: np.ndarray) -> OptimalityBracket:
    """Rigorous bounds on the optimal mutual information (module docstring); ``duals``: the LP's ``y``."""
    import flint

    structure, orbits, ratios, weights = solution.structure, solution.orbits, solution.ratios, solution.weights
    with arb_precision(BRACKET_BITS):
        prior = _arb_prior(structure)
        chosen = [arb_fraction(ratio) for ratio in ratios]
        lower = flint.arb(0)
        for o, theta in weights.items():
            lower += arb_fraction(theta) * _information(orbits, o, chosen, prior)
        upper, delta = _dual_bound(structure, solution.levels, orbits, duals, prior)
        low, _ = ball_bounds(lower)
    return OptimalityBracket(float_outward(low, -math.inf), float_outward(upper, math.inf), float(delta))


def information_upper_bound(structure: ClassStructure, components: list[np.ndarray], epsilon: np.ndarray,
                            orbits: Orbits, duals: np.ndarray) -> float:
    """A rigorous upper bound on the optimal mutual information from any per-class duals ``y``.

    Weak duality of the orbit LP (module docstring): with ``delta = max_o (mu(v_o) - y . s(v_o)) / sum_a s_a(v_o)``
    over every orbit, evaluated in Arb at the true ratios ``e^{eps_a}``, ``y + delta`` is dual feasible, so
    ``OPT <= sum_a n_a (y_a + delta)`` (rounded up to a float).
    """
    with arb_precision(BRACKET_BITS):
        upper, _ = _dual_bound(structure, exact_row_levels(structure, components, epsilon), orbits, duals, _arb_prior(structure))
    return float_outward(upper, math.inf)


def _arb_prior(structure: ClassStructure) -> list:
    """The per-class prior (each member's probability) as Arb balls, normalised exactly."""
    prior = [Fraction(float(p)) for p in structure.prior]
    total = sum((int(n) * p for n, p in zip(structure.sizes, prior)), Fraction(0))
    return [arb_fraction(p / total) for p in prior]


def _dual_bound(structure, levels, orbits, duals, prior) -> tuple[Fraction, Fraction]:
    """``(sum_a n_a (y_a + delta), delta)`` of :func:`information_upper_bound`, as exact rationals (``levels``: :func:`exact_row_levels`).

    Each orbit's excess is an Arb ball; ``delta`` is the largest upper endpoint (exact points, compared
    exactly), converted to a rational once. Orbits are read per component, on that component's classes.
    """
    import flint

    true = [flint.arb(1) if level is None else _true_ratio(level) for level in levels]
    terms = [ratio * ratio.log() for ratio in true]
    y = [Fraction(float(value)) for value in duals]
    dual = [arb_fraction(value) for value in y]
    top = flint.arb(0)
    for component in np.unique(orbits.component):
        rows = np.flatnonzero(orbits.component == component)
        classes = np.flatnonzero((orbits.high[rows] + orbits.low[rows]).any(axis=0)).tolist()
        for high, low in zip(orbits.high[np.ix_(rows, classes)].tolist(), orbits.low[np.ix_(rows, classes)].tolist()):
            value, sums = _orbit_information(classes, high, low, true, terms, prior)
            paid = sum((dual[a] * part for a, part in zip(classes, sums)), flint.arb(0))
            excess = ((value - paid) / sum(sums, flint.arb(0))).upper()
            if excess > top:
                top = excess
    delta = ball_bounds(top)[1]
    return sum((int(n) * (value + delta) for n, value in zip(structure.sizes, y)), Fraction(0)), delta


def _information(orbits: Orbits, o: int, ratios, prior):
    """``mu(v_o)`` of a box vertex in Arb (:func:`_orbit_information` on its non-zero classes)."""
    classes = np.flatnonzero(orbits.high[o] + orbits.low[o]).tolist()
    terms = {a: ratios[a] * ratios[a].log() for a in classes}
    return _orbit_information(classes, orbits.high[o, classes].tolist(), orbits.low[o, classes].tolist(), ratios, terms, prior)[0]


def _orbit_information(classes, high, low, ratios, terms, prior):
    """``mu(v) = sum_a p_a high_a r_a log r_a - P log P`` of a box vertex in Arb (``P = sum_a p_a s_a``), and its class sums.

    ``high``, ``low``: the vertex's counts on ``classes``; ``terms[a] = r_a log r_a``.
    """
    import flint

    mass, own, sums = flint.arb(0), flint.arb(0), []
    for a, h, l in zip(classes, high, low):
        part = h * ratios[a] + l
        sums.append(part)
        mass += prior[a] * part
        if h:
            own += prior[a] * h * terms[a]
    return own - mass * mass.log(), sums


def _true_ratio(level):
    import flint

    if level.exp_value is not None:
        return arb_fraction(level.exp_value)
    return arb_fraction(level.value).exp() if level.value != 0 else flint.arb(1)
