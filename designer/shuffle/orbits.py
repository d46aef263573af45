"""The pair classes of an ``orbit`` package (a symmetric design at class level), without its k x m table.

An orbit package (:mod:`designer.deploy.orbit`) gives, per support orbit o and class a,
``T_o`` cyclic columns on which the member of rank i is high (value ``h``) where
``(i - t) mod n_a < j_a``, low (value ``l``) on the next ``l_a`` ranks and 0 elsewhere. For
x in class a (rank i) and x' in class b (rank i'), the pairs of values ``(R_t, R'_t)`` met on
the columns of o depend only on the *offset* ``c = (i - i') mod g`` with ``g = gcd(n_a, n_b)``
(``g = n_a`` and ``c != 0`` when a = b): the ranks ``u = (i - t) mod n_a`` and
``u' = (i' - t) mod n_b`` run through every pair with ``u - u' = c (mod g)``, each
``T_o / lcm(n_a, n_b)`` times. So the number ``N_o[v, v'](c)`` of columns where x has value
v and x' has value v' is an exact cyclic correlation of two count vectors of length g
(a class constant on o, ``j = n``, ``l = n`` or ``j + l = 0``, contributes the same for every
offset). From these counts, exactly for every offset (:mod:`designer.shuffle.clones` for the
meaning of each number):

* the local levels ``max log(v/v')`` and ``max log(v'/v)`` and ``p`` over the value pairs met;
* ``TV(c) = sum |v - v'| N / 2`` (float sum of exact integers times rounded values; charged
  ``(terms + 2)`` units in the last place as in :func:`~designer.shuffle.clones.table_pairs`);
* the share ``min_z min_y Q[z,y] / M[y]``: in every column of o each class b' holds its whole
  value multiset (the rank of x included), so ``min_z Q[z, t]`` is the smallest value
  ``m_o`` of the classes considered, and the share is ``min_o 2 m_o / max (v + v')`` over the
  value pairs met -- exact over every input (``share_all``); for ``share_class`` the classes
  are those joined to a or b through orbits where both have positive values (a superset of
  the pair's component, so the minimum is at most the component's: rounded the safe way).

The offsets are grouped by their exact ``(p, local levels, shares)``; a group becomes one
:class:`~designer.shuffle.clones.PairClass` with the group's largest TV. That is sound for
every pair of the group, for any ``p`` (``inf`` included): the pair's decomposition has
informative weight ``w``; moving ``lambda`` of the common part W into both informative laws,
``G0'' = (w G0 + lambda W)/(w + lambda)`` and likewise ``G1''``, writes both rows and the
clones' ``M`` with weight ``w + lambda`` and the same ``p`` (the weights ``p/(p+1)``, ``1/(p+1)``
of ``G0, G1`` in each row are unchanged). The experiment at ``w + lambda`` thus post-processes
to the real pair (a report labelled ``G0''`` is drawn from ``G0''``), for the worst case and the
population assumption alike, and bounds its divergence: the bound at the group's largest TV
(a larger ``w``, at most 1) holds for every member; a smaller share stays a valid clone
probability. Within a group only TV varies, so the group's bound is the table analysis's
bound of its largest-TV pair. The lower-bound test uses that
pair (x at rank 0, x' at the offset) and, as a table does, the input z whose reports fall least
in ``Y+ | Y-`` (worst case), or the least among those whose reports meet x's or x''s (under the
population assumption: they lie in the pair's component): for every class, ``Q[z, Y+-]`` of all
its ranks at once is a sum of values times exact counts, each a cyclic convolution over the
joint period of pair and class (rounded FFT; float values, like a table's sums; a class whose
joint period exceeds :data:`MAX_TEST_COLUMNS` is left out, x and x' are always candidates).
A concrete dataset, hence a valid lower bound.

No class carries the exact count analysis of a two-output table (``PairClass.binary``): a
two-output package has the clone bound only, where the table analysis keeps the smallest of
its valid bounds (count analysis, clones). The two are equally valid and may differ either
way: the table's can be smaller by its count analysis, and the package's by rounding (exact
fractions rounded outward against float sums).

Cost: per class pair, one correlation of length g per orbit where both classes vary (FFT,
rounded to the exact integers it computes), vectorised work over the offsets, and per group
one convolution per orbit of the pair and *kind* of class met there (size, counts and values
on those orbits: classes of one kind give the same candidates); a class whose values are 0 on
all of the pair's orbits is one closed-form candidate (masses exactly ``(0, 0)``, never meeting
the pair). Class pairs with equal numbers (equal blocks) are computed once. The work is counted
before it is done (the class pairs up front, the tests once grouped) and an analysis above
:data:`MAX_WORK_UNITS` (about a minute) is refused.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from math import gcd

import numpy as np

from designer.deploy.sampler import OrbitStructure
from designer.exact import ExactEpsilon, float_outward
from designer.shuffle.clones import _ULP, PairClass, _log_up, row_components, share_reason

#: Value indices of a class on an orbit's column: high, low, zero.
HIGH, LOW, ZERO = 0, 1, 2
#: Most counts ``N_o[v, v'](c)`` (orbits x 9 x offsets) of one class pair (8 bytes each).
MAX_OFFSET_CELLS = 1 << 25
#: Most columns of one orbit's joint period (pair and other user) spelt out to choose the test's other input.
MAX_TEST_COLUMNS = 1 << 22
#: Most work units of one analysis, about a minute on one core (some 2 x 10^8 units a second, measured):
#: a unit is an array element of a test's convolutions; the fixed costs are counted in units too.
MAX_WORK_UNITS = 12 * 10**9
#: Units of a class pair's fixed cost (its counts and groups), of each entry of its signature (a class's
#: kind on one of its orbits, Python objects) and of one orbit's convolutions in a test.
PAIR_UNITS, ENTRY_UNITS, CALL_UNITS = 60_000, 60, 20_000


def orbit_pairs(structure: OrbitStructure) -> list[PairClass]:
    """The pair classes of a checked orbit package: per class pair and group of offsets (module docstring).

    Parameters
    ----------
    structure : OrbitStructure
        From :func:`designer.deploy.sampler.check_orbit_structure` (the package verified first).
    """
    from designer.deploy.orbit import _fractions

    sizes, r = structure.sizes, len(structure.sizes)
    # up front: every class pair's signature (a kind per class and orbit of the pair), counts and groups;
    # the tests are counted once grouped. A class has a positive value on an orbit where it holds cells.
    holds = [(np.array(counts) > 0) & (np.array(cells) > 0)
             for counts, cells in ((structure.high, structure.cells_high), (structure.low, structure.cells_low))]
    positive = int(np.count_nonzero(holds[0] | holds[1]))
    pair_work = r * (r + 1) // 2 * PAIR_UNITS + ENTRY_UNITS * r * (r + 1) * positive
    _within_budget(pair_work, f"{r} classes, {r * (r + 1) // 2:,} class pairs")
    highs, lows = _fractions(structure, values=True)
    values = [[(highs[o][a], lows[o][a], Fraction(0)) for a in range(r)] for o in range(len(structure.columns))]
    present = [[_present(structure, o, a) for a in range(r)] for o in range(len(structure.columns))]
    smallest = [[min(values[o][a][v] for v in present[o][a]) for a in range(r)] for o in range(len(values))]
    active = [[max(values[o][a][v] for v in present[o][a]) > 0 for a in range(r)] for o in range(len(values))]
    # classes joined when both have positive values on some orbit (transitively)
    component = row_components(np.array(active, dtype=bool).reshape(-1, r).T).tolist()
    everyone = [min(row) for row in smallest]
    members: dict = {}
    for a, label in enumerate(component):
        members.setdefault(label, []).append(a)
    near = {label: [min(row[a] for a in group) for row in smallest] for label, group in members.items()}
    infinite = [[ExactEpsilon.parse(text).infinite for text in row] for row in structure.levels]
    kinds: dict = {}  # a class's size, counts and values on an orbit, numbered
    kind = [[kinds.setdefault((sizes[a], structure.high[o][a], structure.low[o][a], values[o][a]), len(kinds))
             for a in range(r)] for o in range(len(values))]
    known, order = {}, []
    for a in range(r):
        for b in range(a, r):
            if a == b and sizes[a] < 2:
                continue
            joined = near[component[a]] if component[a] == component[b] else None
            orbits = [o for o, row in enumerate(active) if row[a] or row[b]]
            protected = (not infinite[a][b], not infinite[b][a])
            # class pairs with the same sizes, orbits, values, neighbours and other classes there have the
            # same classes (equal blocks): computed once
            others = tuple(sorted(tuple(kind[o][c] for o in orbits) for c in range(r) if c not in (a, b)))
            signature = (a == b, protected, joined is None, others) + tuple(
                (structure.columns[o], kind[o][a], kind[o][b], everyone[o], joined and joined[o]) for o in orbits)
            if signature not in known:
                known[signature] = _class_pair(structure, values, a, b, orbits, everyone, joined, protected)
            order.append((a, b, signature))
    # the lower-bound tests: per group, one convolution per kind of class met on the pair's orbits
    met_kinds = {signature: _met_kinds(kind, active, groups[0].pair, groups[0].orbits) if groups else ([], True)
                 for signature, groups in known.items()}
    test_work = sum(len(groups) * _test_units(structure, met_kinds[signature][0], groups[0].pair, groups[0].orbits)
                    for signature, groups in known.items() if groups)
    _within_budget(pair_work + test_work, f"{sum(map(len, known.values())):,} groups of rank offsets to test")
    finished = {signature: [group.finish(structure, values, *met_kinds[signature]) for group in groups]
                for signature, groups in known.items()}
    classes = []
    for a, b, signature in order:
        prefix = f"x in class {a}, x' in class {b}"
        classes.extend(dataclasses.replace(pair, name=prefix + pair.name) for pair in finished[signature])
    return classes


def _present(structure: OrbitStructure, o: int, a: int) -> tuple[int, ...]:
    """The value indices met by class a's members on orbit o."""
    n, j, l = structure.sizes[a], structure.high[o][a], structure.low[o][a]
    return tuple(v for v, count in ((HIGH, j), (LOW, l), (ZERO, n - j - l)) if count)


def _constant(structure: OrbitStructure, o: int, a: int) -> bool:
    """Whether class a takes one value on every column of orbit o (all high, all low or all zero)."""
    n, j, l = structure.sizes[a], structure.high[o][a], structure.low[o][a]
    return j == n or l == n or j + l == 0


def _pattern_period(structure: OrbitStructure, o: int, a: int) -> int:
    """The length of :func:`_pattern` (1 when class a is constant on orbit o, else n_a), without building it."""
    return 1 if _constant(structure, o, a) else structure.sizes[a]


def _pattern(structure: OrbitStructure, o: int, a: int) -> np.ndarray:
    """Value index of each rank offset ``u in [0, n)`` of class a on orbit o (length 1 when a is constant)."""
    n, j, l = structure.sizes[a], structure.high[o][a], structure.low[o][a]
    if _constant(structure, o, a):
        return np.array([HIGH if j == n else LOW if l == n else ZERO])
    pattern = np.full(n, ZERO)
    pattern[:j] = HIGH
    pattern[j:j + l] = LOW
    return pattern


def _counts(structure: OrbitStructure, o: int, a: int, b: int, offsets: np.ndarray, period: int) -> np.ndarray:
    """``N_o[v, v'](c)``: columns of orbit o where x (class a) has value v and x' (class b, offset c) has v'."""
    first, second = _pattern(structure, o, a), _pattern(structure, o, b)
    total = structure.columns[o]
    counts = np.zeros((3, 3, offsets.size), dtype=np.int64)
    if first.size == 1 or second.size == 1:  # the same for every offset
        for v in range(3):
            for w in range(3):
                counts[v, w] = total * np.count_nonzero(first == v) * np.count_nonzero(second == w) // (
                    first.size * second.size)
        return counts
    # both vary: n_a and n_b divide T_o, and the offsets are residues modulo period = gcd(n_a, n_b)
    repeat = total // math.lcm(first.size, second.size)
    residues_a, residues_b = np.arange(first.size) % period, np.arange(second.size) % period
    for v in range(3):
        left = np.fft.rfft(np.bincount(residues_a, weights=first == v, minlength=period))
        for w in range(3):
            right = np.fft.rfft(np.bincount(residues_b, weights=second == w, minlength=period))
            correlation = np.fft.irfft(left * np.conj(right), n=period)
            counts[v, w] = repeat * np.rint(correlation[offsets]).astype(np.int64)
    return counts


def _class_pair(structure: OrbitStructure, values: list, a: int, b: int, orbits: list, everyone: list,
                joined: list | None, protected: tuple[bool, bool]) -> list[PairClass]:
    """The pair classes of x in class a, x' in class b (``orbits``: those where either has a positive value):
    one per group of offsets with equal exact numbers, named by the group only (the caller adds the classes)."""
    sizes = structure.sizes
    period = sizes[a] if a == b else gcd(sizes[a], sizes[b])
    varying = any(_pattern_period(structure, o, a) > 1 and _pattern_period(structure, o, b) > 1 for o in orbits)
    # without an orbit where both vary every offset meets the same values (a = b then has equal rows)
    offsets = (np.arange(1, period) if a == b else np.arange(period)) if varying else np.array([1 if a == b else 0])
    if len(orbits) * 9 * offsets.size > MAX_OFFSET_CELLS:
        raise ValueError(f"classes {a} and {b} meet at {offsets.size:,} rank offsets on {len(orbits)} orbits: more "
                         f"than {MAX_OFFSET_CELLS:,} counts for the shuffle analysis")
    counts = np.stack([_counts(structure, o, a, b, offsets, period) for o in orbits])  # (orbits, 3, 3, offsets)
    met = counts > 0
    cells = [(i, v, w) for i in range(len(orbits)) for v in range(3) for w in range(3)]
    first = [values[orbits[i]][a][v] for i, v, _ in cells]
    second = [values[orbits[i]][b][w] for i, _, w in cells]
    forward = [_ratio(x, y) for x, y in zip(first, second)]
    backward = [_ratio(y, x) for x, y in zip(first, second)]
    share_all = [_share(everyone[orbits[i]], x + y) for (i, _, _), x, y in zip(cells, first, second)]
    share_near = ([_share(joined[orbits[i]], x + y) for (i, _, _), x, y in zip(cells, first, second)]
                  if joined is not None else [Fraction(0)] * len(cells))
    flat = met.reshape(len(cells), -1)
    keys = np.stack([_extreme(forward, flat, max), _extreme(backward, flat, max),
                     _extreme(share_all, flat, min), _extreme(share_near, flat, min)])
    gap = np.array([float(abs(x - y)) for x, y in zip(first, second)])
    tv = 0.5 * (gap[:, None] * counts.reshape(len(cells), -1)).sum(axis=0)
    slack = (len(cells) + 2) * _ULP
    groups = np.unique(keys, axis=1)
    result = []
    for number, key in enumerate(groups.T):
        members = np.flatnonzero((keys == key[:, None]).all(axis=0))
        worst = members[np.argmax(tv[members])]
        ratios = [_value(forward, key[0]), _value(backward, key[1])]
        shares = [_value(share_all, key[2]), _value(share_near, key[3])]
        name = "" if len(groups.T) == 1 else (
            f" (offsets group {number + 1} of {len(groups.T)}: {members.size} rank offsets)")
        result.append(_Group(name, ratios, shares, float(tv[worst]), slack, protected, joined is not None, (a, b),
                             orbits, int(offsets[worst]), flat[:, worst], counts.reshape(len(cells), -1)[:, worst],
                             first, second))
    return result


@dataclasses.dataclass(frozen=True)
class _Group:
    """A group of rank offsets of one class pair, its numbers known, its lower-bound test to run (largest TV's)."""

    name: str
    ratios: list
    shares: list
    tv: float
    slack: float
    protected: tuple[bool, bool]
    same_component: bool
    pair: tuple[int, int]
    orbits: list
    offset: int
    met: np.ndarray
    counts: np.ndarray
    first: list
    second: list

    def finish(self, structure: OrbitStructure, values: list, kinds: list, silent: bool) -> PairClass:
        """The pair class, with the test over one class of each kind met and a silent class (:func:`_met_kinds`)."""
        test = _test(structure, values, *self.pair, self.orbits, self.offset, self.met, self.counts, self.first,
                     self.second, kinds, silent)
        return _pair_class(self.name, self.ratios, self.shares, self.tv, self.slack, self.protected, test,
                           self.same_component)


def _met_kinds(kind: list, active: list, pair: tuple[int, int], orbits: list) -> tuple[list[int], bool]:
    """One class of each kind (size, counts, values on each of ``orbits``) with a positive value there, and whether a
    *silent* class exists (0 on all of them: its test masses are exactly ``(0, 0)`` and it never meets the pair).
    Classes of one kind give the same test candidates, so one of each stands for all (exact)."""
    representatives, silent = {}, False
    for c in range(len(kind[0]) if kind else 0):
        if any(active[o][c] for o in orbits):
            representatives.setdefault(tuple(kind[o][c] for o in orbits), c)
        else:
            silent = True
    return list(representatives.values()), silent


def _test_units(structure: OrbitStructure, kinds: list, pair: tuple[int, int], orbits: list) -> int:
    """Work units of one group's test (:data:`MAX_WORK_UNITS`): per class met and orbit, its joint period."""
    units = 0
    for o in orbits:
        period = math.lcm(*(_pattern_period(structure, o, d) for d in pair))
        for c in kinds:
            joint = math.lcm(period, _pattern_period(structure, o, c))
            units += CALL_UNITS + (joint + structure.sizes[c] if joint <= MAX_TEST_COLUMNS else 0)
    return units


def _within_budget(units: int, what: str) -> None:
    """Refuse (one line) an analysis above :data:`MAX_WORK_UNITS`."""
    if units > MAX_WORK_UNITS:
        raise ValueError(f"the orbit package's shuffle analysis needs {units:,} work units ({what}): more than "
                         f"the {MAX_WORK_UNITS:,} (about a minute) it may spend")


def _ratio(x: Fraction, y: Fraction) -> Fraction | None:
    """``x / y`` as a likelihood ratio (``None`` = inf; 1 where ``x = 0``: no constraint)."""
    if x == 0:
        return Fraction(1)
    return None if y == 0 else x / y


def _share(smallest: Fraction, total: Fraction) -> Fraction | None:
    """``2 m / (v + v')`` (``None`` where both are 0: that output is outside M's support)."""
    return None if total == 0 else 2 * smallest / total


def _extreme(candidates: list, met: np.ndarray, pick) -> np.ndarray:
    """Per offset, the rank among the distinct finite candidates of the largest (``pick = max``) or smallest
    (``min``) candidate met; ``None`` ranks above every finite value (an infinite ratio; for a share, an
    output outside M's support, never the smallest unless nothing else is met)."""
    distinct = sorted({value for value in candidates if value is not None})
    order = np.array([len(distinct) if value is None else distinct.index(value) for value in candidates])
    if pick is max:
        return np.where(met, order[:, None], -1).max(axis=0)
    return np.where(met, order[:, None], len(distinct)).min(axis=0)


def _value(candidates: list, rank: int) -> Fraction | None:
    """The candidate of a rank from :func:`_extreme` (``None``: inf for a ratio, no output for a share)."""
    distinct = sorted({value for value in candidates if value is not None})
    return distinct[rank] if 0 <= rank < len(distinct) else None


def _test(structure: OrbitStructure, values: list, a: int, b: int, orbits: list, offset: int, met: np.ndarray,
          counts: np.ndarray, first: list, second: list, kinds: list, silent: bool) -> tuple:
    """``(R(Y+), R(Y-))``, ``(R'(Y+), R'(Y-))`` of one offset's pair, and ``(Q[z,Y+], Q[z,Y-])`` of the other users'
    input: the one whose reports fall least in ``Y+ | Y-`` (worst case), and among the inputs whose reports
    meet x's or x''s (under the population assumption); ``kinds`` and ``silent`` from :func:`_met_kinds`."""
    plus = [i for i in np.flatnonzero(met) if first[i] > second[i]]
    minus = [i for i in np.flatnonzero(met) if first[i] < second[i]]

    def mass(rows: list, side: list) -> float:
        return float(sum(rows[i] * int(counts[i]) for i in side))

    test_first = (mass(first, plus), mass(first, minus))
    test_second = (mass(second, plus), mass(second, minus))
    # x and x' themselves are candidates (they meet their own reports); so is every member of every class
    held = min(test_first, test_second, key=sum)
    candidates = [(sum(held), held, True)] + ([(0.0, (0.0, 0.0), False)] if silent else [])
    for c in kinds:
        events = _other_masses(structure, values, a, b, orbits, offset, c)
        if events is None:
            continue
        plus_mass, minus_mass, meets = events
        total = plus_mass + minus_mass
        for chosen in (np.argmin(total), np.argmin(np.where(meets, total, np.inf))):
            if chosen < total.size:
                candidates.append((total[chosen], (float(plus_mass[chosen]), float(minus_mass[chosen])),
                                   bool(meets[chosen])))
    worst = min(candidates, key=lambda item: item[0])[1]
    near = min((item for item in candidates if item[2]), key=lambda item: item[0])[1]
    return test_first, test_second, worst, near


def _other_masses(structure: OrbitStructure, values: list, a: int, b: int, orbits: list, offset: int,
                  c: int) -> tuple | None:
    """For every rank e of class c: ``Q[z, Y+]``, ``Q[z, Y-]`` and whether z's reports meet x's or x''s (x at rank
    0 of a, x' at the offset in b); None when an orbit's joint period exceeds :data:`MAX_TEST_COLUMNS`.

    On orbit o the pair repeats every ``L = lcm`` of its classes' periods (``n_c`` divides ``T_o`` when c
    varies there, so ``T_o / L`` is an integer); z's value at column t is ``w((e - t) mod n_c)``, so the
    number of the event's columns where z has value v is a cyclic convolution of v's indicator with the
    event's indicator folded modulo ``n_c``: an exact integer (rounded FFT), and each mass is
    ``sum v count`` (float values times exact counts, like a table's float sums: an empty event is
    exactly 0)."""
    n_c = structure.sizes[c]
    plus_mass, minus_mass, meets = np.zeros(n_c), np.zeros(n_c), np.zeros(n_c, dtype=bool)
    partner = (-offset) % structure.sizes[b]
    for o in orbits:
        pattern_a, pattern_b, pattern_c = (_pattern(structure, o, d) for d in (a, b, c))
        period = math.lcm(pattern_a.size, pattern_b.size)
        joint = math.lcm(period, pattern_c.size)
        if joint > MAX_TEST_COLUMNS:
            return None
        t = np.arange(period)
        value_a = np.array([float(v) for v in values[o][a]])[pattern_a[(-t) % pattern_a.size]]
        value_b = np.array([float(v) for v in values[o][b]])[pattern_b[(partner - t) % pattern_b.size]]
        ranks = np.arange(n_c) % pattern_c.size
        repeat = structure.columns[o] // joint
        for event, total in ((value_a > value_b, plus_mass), (value_a < value_b, minus_mass)):
            folded = _folded(event, joint, pattern_c.size)
            for v in (HIGH, LOW):
                if values[o][c][v] > 0 and (pattern_c == v).any():
                    count = np.rint(_convolved((pattern_c == v).astype(float), folded)).astype(np.int64)
                    total += float(values[o][c][v]) * (repeat * count[ranks])
        # integer counts of shared columns (rounded FFT): z meets the pair where both are positive
        weight = np.array([float(v) for v in values[o][c]])[pattern_c]
        shared = _convolved((weight > 0).astype(float), _folded((value_a > 0) | (value_b > 0), joint, pattern_c.size))
        meets |= np.rint(shared)[ranks] > 0
    return plus_mass, minus_mass, meets


def _folded(event: np.ndarray, joint: int, size: int) -> np.ndarray:
    """An indicator over one period of the pair, repeated over ``joint`` columns and summed modulo ``size``."""
    return np.bincount(np.arange(joint) % size, weights=np.tile(event, joint // event.size), minlength=size)


def _convolved(weight: np.ndarray, folded: np.ndarray) -> np.ndarray:
    """``sum_s weight((e - s) mod n) folded(s)`` for every e (cyclic convolution by FFT)."""
    if weight.size == 1:
        return weight * folded
    return np.fft.irfft(np.fft.rfft(weight) * np.fft.rfft(folded), n=weight.size)


def _pair_class(name: str, ratios: list, shares: list, tv: float, slack: float, protected: tuple[bool, bool],
                test: tuple, same_component: bool) -> PairClass:
    forward, backward = (math.inf if ratio is None else float_outward(ratio, math.inf) for ratio in ratios)
    largest = max(forward, backward)
    share_all, share_class = (0.0 if share is None else float_outward(share, -math.inf) for share in shares)
    reason = share_reason(share_all, share_class, same_component)
    return PairClass(name, largest if largest > 1 else 1.0, (tv * (1 - slack), tv * (1 + slack)), share_all,
                     share_class, (_log_up(forward), _log_up(backward)), protected, *test, reason)
