"""Packages of symmetric designs at class level (kind ``"orbit"``): no k x m table at any k.

A design of the orbit LP (:mod:`designer.design.symmetry.design`) is a few support orbits; orbit o
becomes ``T_o`` columns, column t putting a high value on the members of class a at ranks
``(i - t) mod n_a < j_a``, a low value on the next ``l_a`` ranks and 0 on the rest (the
cyclic materialisation of :func:`designer.design.symmetry.design.materialise_channel`). The
package stores exactly that structure: the classes (ranges of symbols), the class-level
E (``class_E``), and per orbit its ``columns`` T, counts ``high`` j and ``low`` l, and
the integer cells ``cells_high`` H and ``cells_low`` L of every class (over ``2^bits``,
summing to ``2^bits`` per class; :func:`designer.deploy.sampler.check_orbit_structure`).
Member x of class a then has, exactly,

    Q(t | x) = H n_a / (2^b T j_a)  where x is high,   L n_a / (2^b T l_a)  where it is low,

and 0 elsewhere (:class:`designer.deploy.sampler.OrbitSampler`).

Structural certificate (:func:`prove_orbit`, exact). Every column of orbit o holds, on
class a, exactly ``j_a`` high, ``l_a`` low and ``n_a - j_a - l_a`` zero members, so the set
``V_a(o)`` of values of class a is the same in every column of o. Hence the largest ratio
``Q(y|x) / Q(y|x')`` over x in class a, x' in class b (distinct) and y is

    rho_ab = max_o max V_a(o) / min V_b(o)   (x/0 = inf; orbits with max V_a(o) = 0 skipped),

attained by some pair (for a = b it needs ``n_a >= 2``: the two values sit on distinct
members). The channel is E-LDP (Definition 2, eq. 4 of context-aware-ldp.md) iff
``rho_ab <= exp(E_ab)`` for every such class pair, decided in exact arithmetic
(:meth:`designer.exact.ExactEpsilon.allows`), and its margin
``min_ab E_ab - log max(rho_ab, 1)`` over finite levels is the exact certifier's
``min (E - E_Q)`` on the materialised channel (checked in the tests at small k).

Building (:func:`build_orbit_package`). The float optimum is tight (high / low =
``e^eps``), so rounding its cells could break privacy. The builder lowers each ratio to
``r_a (1 - delta)``, re-solves the support's weights for exact class row sums, rounds every
class's cells to ``2^bits`` by largest remainders, and proves the result; ``delta`` starts
at ``2^-(bits/2)`` and grows until the proof holds (the rounding error of a cell of size C
is below ``1 / C``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from designer.deploy.sampler import (
    FORMAT,
    MAX_ORBIT_CHECKS,
    SCHEMA_VERSION,
    OrbitStructure,
    PackageError,
    PackageTampered,
    check_common,
    check_orbit_structure,
    most_orbits,
    verify_digest,
)
from designer.deploy.proof import HadamardVerification, recheck, sealed
from designer.deploy.table import check_bits
from designer.exact import ExactEpsilon
from designer.io.writing import format_number

#: Members of an orbit package's ``utility``.
ORBIT_UTILITY_MEMBERS = ("prior", "mutual_information_design", "mutual_information_package", "relative_utility_loss")
#: Slack factors tried by the builder (times ``2^-(bits/2)``) before it gives up.
SLACK_STEPS = (1, 16, 256, 4096)


def build_orbit_package(design, bits: int = 32) -> dict:
    """An ``orbit`` package (with its ``sha256``) of a certified symmetric design.

    Parameters
    ----------
    design : designer.design.symmetry.design.SymmetricDesign
        A certified float design (its support orbits, row levels and class structure).
    bits : int
        Precision of the cells (each class's cells sum to ``2^bits``).

    Raises
    ------
    ValueError
        The design is not certified, has more support orbits than a package may hold
        (:func:`designer.deploy.sampler.most_orbits`), or no slack up to ``4096 * 2^-(bits/2)`` rounds
        to a proved package.
    """
    check_bits(bits)
    if not design.certified:
        raise ValueError("only a certified design can be packaged")
    structure = design.structure
    most = most_orbits(structure.r)
    if len(design.support) > most:
        raise ValueError(f"the design has {len(design.support)} support orbits over {structure.r} classes; an orbit "
                         f"package holds at most {most} with {structure.r} classes (its exact proof compares every "
                         f"class pair in every orbit: at most {MAX_ORBIT_CHECKS} comparisons), so this design has "
                         "no orbit package")
    high = np.array([column.high for column in design.support], dtype=np.int64)
    low = np.array([column.low for column in design.support], dtype=np.int64)
    periods = [int(column.columns) for column in design.support]
    ratio = np.exp(np.where(np.isfinite(design.row_levels), design.row_levels, 0.0))
    skeleton = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "kind": "orbit",
        "bits": bits,
        "classes": [_ranges(members) for members in structure.class_members()],
        "class_E": [[str(structure.exact_level(a, b)) for b in range(structure.r)] for a in range(structure.r)],
    }
    design_weights = np.array([column.weight for column in design.support])
    ideal = _cells(structure.sizes, high, low, ratio, design_weights)
    design_information = orbit_information(structure.sizes, periods, high, low, *ideal)
    failure = ""
    for step in SLACK_STEPS:
        delta = step * 2.0 ** -(bits / 2)
        lowered = np.where(high.any(axis=0) & (ratio > 1), ratio * (1 - delta), ratio)
        weights = _resolved(structure.sizes, high, low, lowered, design_weights)
        if weights is None:
            failure = "the support's weights turn negative when the ratios are lowered"
            continue
        cells_high, cells_low = _rounded(*_cells(structure.sizes, high, low, lowered, weights), bits)
        document = dict(skeleton, orbits=[
            {"columns": str(periods[o]), "high": _texts(high[o]), "low": _texts(low[o]),
             "cells_high": _texts(cells_high[o]), "cells_low": _texts(cells_low[o])}
            for o in range(len(periods))
        ], certificate={})
        checked = check_orbit_structure(dict(document, utility={}, sha256="0" * 64))
        verification = prove_orbit(checked)
        if verification.certified:
            package_information = orbit_information(checked.sizes, periods, high, low, *_fractions(checked))
            document["utility"] = orbit_utility(design_information, package_information)
            return sealed(document, verification)
        failure = "; ".join(verification.failed)
    raise ValueError(f"the cells do not round to an E-LDP package at {bits} bits ({failure})")


def orbit_utility(design_information: float, package_information: float) -> dict:
    """The ``utility`` of an orbit package: mutual information (uniform prior) before and after rounding."""
    loss = 0.0 if design_information == 0 else (design_information - package_information) / design_information
    return {
        "prior": "uniform",
        "mutual_information_design": format_number(design_information),
        "mutual_information_package": format_number(package_information),
        "relative_utility_loss": format_number(loss),
    }


def orbit_information(sizes, periods, high, low, mass_high, mass_low) -> float:
    """``I(X; Y)`` in nats under the uniform prior, from the class-level cells (no k x m table).

    ``mass_high[o, a]`` is the probability that a member of class a reports a column of o
    where it is high (spread over ``T j_a / n_a`` columns); every column of o has the same
    class counts, so ``P(y) = sum_a (j_a h_a + l_a l_a') / k`` is the same on its T columns and
    ``I = sum_o T_o sum_a (j_a h log(h / P) + l_a l log(l / P)) / k`` (``0 log 0 = 0``).
    """
    sizes = np.asarray(sizes, dtype=float)
    k = sizes.sum()
    periods = np.asarray(periods, dtype=float)[:, None]
    high, low = np.asarray(high, dtype=float), np.asarray(low, dtype=float)
    value_high = column_value(np.asarray(mass_high, dtype=float), sizes, periods, high)
    value_low = column_value(np.asarray(mass_low, dtype=float), sizes, periods, low)
    with np.errstate(divide="ignore", invalid="ignore"):
        column = (high * value_high + low * value_low).sum(axis=1, keepdims=True) / k
        terms = (high * _plogq(value_high, column) + low * _plogq(value_low, column)).sum(axis=1)
    return float((periods[:, 0] * terms).sum() / k)


def column_value(mass, n, period, count):
    """``mass n / (T count)``: the value of one column of an orbit where a member of the class is high (or low).

    A member of a class of n ranks is high on ``j`` of every n consecutive columns (the cyclic
    window, module docstring), so on ``T j / n`` of the orbit's T columns, sharing the cell's
    mass ``H / 2^b`` equally: each gets ``H n / (2^b T j)``. 0 where ``count = 0`` (no such
    column). ``mass`` a Fraction with integer n, T, count (exact), or float arrays (broadcast).
    """
    if isinstance(count, np.ndarray):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 0, mass * n / (period * count), 0.0)
    return mass * n / (period * count) if count else 0 * mass


def _plogq(value: np.ndarray, column: np.ndarray) -> np.ndarray:
    return np.where(value > 0, value * np.log(np.where(value > 0, value, 1.0) / np.where(column > 0, column, 1.0)), 0.0)


def prove_orbit(structure: OrbitStructure) -> HadamardVerification:
    """The exact structural certificate of the module docstring for a checked orbit package."""
    sizes, r = structure.sizes, len(structure.sizes)
    try:
        levels = [[ExactEpsilon.parse(text) for text in row] for row in structure.levels]
    except ValueError as error:
        raise PackageError(f"bad class_E in the package: {error}") from None
    values_high, values_low = _fractions(structure, values=True)
    # every class has a positive cell, hence a positive value somewhere: each pair gets its ratio
    largest: dict[tuple[int, int], Fraction | None] = {}
    for o, period in enumerate(structure.columns):
        top, bottom = [], []
        for a, n in enumerate(sizes):
            j, l = structure.high[o][a], structure.low[o][a]
            present = ([values_high[o][a]] if j else []) + ([values_low[o][a]] if l else []) + (
                [Fraction(0)] if j + l < n else [])
            top.append(max(present))
            bottom.append(min(present))
        for a in (a for a in range(r) if top[a] > 0):
            for b in range(r):
                if a == b and sizes[a] < 2:
                    continue
                ratio = None if bottom[b] == 0 else top[a] / bottom[b]
                seen = largest.get((a, b), Fraction(0))
                largest[a, b] = None if ratio is None or seen is None else max(seen, ratio)
    failed, margin, tightest = [], math.inf, None
    pairs = 0
    for (a, b), ratio in sorted(largest.items()):
        level = levels[a][b]
        if level.infinite:
            continue
        pairs += 1
        holds = ratio is not None and level.allows(ratio, Fraction(1))
        gap = -math.inf if ratio is None else level.gap(max(ratio, Fraction(1)))
        if gap < margin:
            margin, tightest = gap, (a, b, ratio, level)
        if not holds:
            failed.append(f"classes {a}, {b}: max Q(y|x)/Q(y|x') = {'inf' if ratio is None else ratio} > exp({level})")
    k = sum(sizes)
    steps = [
        f"k = {k} in {r} classes; {len(structure.columns)} orbits, {structure.n_outputs} outputs (cyclic columns); "
        "every class's cells sum to 2^bits",
        "each column of an orbit holds, per class, j high, l low and n - j - l zero members: "
        "max_y Q(y|x)/Q(y|x') over a class pair = max over orbits of (largest value of a)/(smallest of b)",
        f"{pairs} class pairs with a finite level: " + ("all within exp(E) (exact)" if not failed else
                                                         f"{len(failed)} above exp(E)"),
    ]
    if tightest is not None:
        a, b, ratio, level = tightest
        steps.append(f"tightest: classes {a}, {b}: ratio {'inf' if ratio is None else ratio} vs exp({level}) (exact)")
    return HadamardVerification(not failed, tightest[2] if tightest else None, margin, tuple(steps), k,
                                structure.n_outputs, f"symmetric design at class level, {r} classes", tuple(failed),
                                structure)


def verify_orbit_package(document: dict) -> HadamardVerification:
    """Check structure (exit 2), SHA-256 (exit 1) and re-prove the privacy of an orbit package exactly."""
    if check_common(document) != "orbit":
        raise PackageError(f"a {document['kind']} package is not an orbit design")
    structure = check_orbit_structure(document)
    certificate, utility = document["certificate"], document["utility"]
    if not isinstance(certificate, dict) or set(certificate) != {"verdict", "mode", "margin", "proof"}:
        raise PackageError("certificate must have exactly the members verdict, mode, margin, proof")
    if not isinstance(utility, dict) or set(utility) != set(ORBIT_UTILITY_MEMBERS):
        raise PackageError(f"utility must have exactly the members {', '.join(ORBIT_UTILITY_MEMBERS)}")
    verify_digest(document)  # a tampered package is refused before the proof's cost
    verification = recheck(document, prove_orbit(structure))
    if verification.certified:
        from designer.deploy.package import UTILITY_ATOL, UTILITY_RTOL, check_stored, text_number

        high, low = np.array(structure.high), np.array(structure.low)
        package = orbit_information(structure.sizes, structure.columns, high, low, *_fractions(structure))
        if utility["prior"] != "uniform":
            raise PackageTampered(f"utility.prior {utility['prior']!r} is not 'uniform'")
        recomputed = orbit_utility(text_number(utility["mutual_information_design"]), package)
        for member in ORBIT_UTILITY_MEMBERS[2:]:
            check_stored(f"utility.{member}", text_number(utility[member]), float(recomputed[member]),
                         UTILITY_RTOL, UTILITY_ATOL)
    return verification


def orbit_channel(document: dict) -> np.ndarray:
    """The k x m channel of an orbit package as exact Fractions (small k only: tests and inspection)."""
    structure = check_orbit_structure(document)
    values_high, values_low = _fractions(structure, values=True)
    located = [structure.locate(x) for x in range(structure.k)]
    blocks = []
    for o, period in enumerate(structure.columns):
        block = np.full((structure.k, period), Fraction(0), dtype=object)
        for x, (a, rank) in enumerate(located):
            n, j, l = structure.sizes[a], structure.high[o][a], structure.low[o][a]
            for t in range(period):
                offset = (rank - t) % n
                if offset < j:
                    block[x, t] = values_high[o][a]
                elif offset < j + l:
                    block[x, t] = values_low[o][a]
        blocks.append(block)
    return np.hstack(blocks)


# ------------------------------------------------------------------ helpers
def _fractions(structure: OrbitStructure, values: bool = False) -> tuple[list, list]:
    """Per orbit and class: the cell masses ``H / 2^b``, ``L / 2^b`` (or, ``values``, the column values)."""
    total = 1 << structure.bits  # every class's cells sum to it (checked by the structure check)
    highs, lows = [], []
    for o, period in enumerate(structure.columns):
        row_high, row_low = [], []
        for a, n in enumerate(structure.sizes):
            j, l = structure.high[o][a], structure.low[o][a]
            mass_high = Fraction(structure.cells_high[o][a], total)
            mass_low = Fraction(structure.cells_low[o][a], total)
            if values:
                mass_high, mass_low = column_value(mass_high, n, period, j), column_value(mass_low, n, period, l)
            row_high.append(mass_high)
            row_low.append(mass_low)
        highs.append(row_high)
        lows.append(row_low)
    return highs, lows


def _ranges(members: np.ndarray) -> list[list[str]]:
    """Increasing symbols as ``[first, last]`` ranges of decimal strings."""
    members = np.sort(np.asarray(members, dtype=np.int64))
    breaks = np.flatnonzero(np.diff(members) != 1)
    firsts = np.concatenate([members[:1], members[breaks + 1]])
    lasts = np.concatenate([members[breaks], members[-1:]])
    return [[str(int(first)), str(int(last))] for first, last in zip(firsts, lasts)]


def _texts(values) -> list[str]:
    return [str(int(value)) for value in values]


def _cells(sizes, high, low, ratio, weights) -> tuple[np.ndarray, np.ndarray]:
    """Cell masses: ``theta_o j_a r_a / n_a`` (high) and ``theta_o l_a / n_a`` (low)."""
    sizes = np.asarray(sizes, dtype=float)
    return weights[:, None] * high * ratio / sizes, weights[:, None] * low / sizes


def _resolved(sizes, high, low, ratio, design_weights) -> np.ndarray | None:
    """Support weights with class row sums ``sum_o theta_o (j_a r_a + l_a) = n_a`` (to rounding), nearest
    to the design's: its weights plus the least-norm correction of their row sums (None if one turns <= 0)."""
    sums = (high * ratio + low).T
    correction, *_ = np.linalg.lstsq(sums, np.asarray(sizes, dtype=float) - sums @ design_weights, rcond=None)
    weights = design_weights + correction
    return weights if np.all(weights > 0) else None


def _rounded(mass_high: np.ndarray, mass_low: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer cells over ``2^bits`` per class (largest remainders: each class sums to ``2^bits`` exactly)."""
    total = 1 << bits
    orbits, r = mass_high.shape
    cells_high = np.zeros((orbits, r), dtype=object)
    cells_low = np.zeros((orbits, r), dtype=object)
    for a in range(r):
        masses = np.concatenate([mass_high[:, a], mass_low[:, a]])
        masses = masses / masses.sum()
        scaled = [Fraction(float(value)) * total for value in masses]
        floors = [math.floor(value) for value in scaled]
        order = sorted(range(len(scaled)), key=lambda i: scaled[i] - floors[i], reverse=True)
        for i in order[: total - sum(floors)]:
            floors[i] += 1
        cells_high[:, a], cells_low[:, a] = floors[:orbits], floors[orbits:]
    return cells_high, cells_low

