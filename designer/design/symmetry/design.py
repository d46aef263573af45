"""Optimal E-LDP channels through the orbit LP (:mod:`designer.design.symmetry.orbits`).

Deployable channels with few outputs. A basic optimum of the orbit LP uses at
most r orbits. An orbit with counts ``j_a`` becomes T columns: column t puts
``e^{eps_a}`` on the members of class a at positions ``(i - t) mod n_a < j_a`` and
1 on the rest of its component, with ``T = lcm`` of the sizes of the classes whose
``j_a`` is neither 0 nor ``n_a``; over the T cyclic shifts every member of class a
is high exactly ``T j_a / n_a`` times, so the columns with weight ``theta / T`` give
each input of class a exactly ``theta s_a / n_a``: the symmetrised orbit, with T
columns instead of the orbit's ``prod_a C(n_a, j_a)``. Classic LDP at k = 1000
needs 1000 outputs, not ``C(1000, j)``. A free-unit orbit becomes the ``n_b`` unit
columns of its class.

Certification. A materialised channel (k m entries within :data:`MAX_CHANNEL_ENTRIES`)
is certified by :func:`designer.design.symmetry.certify.certify_row_constant`, which decides
the same per-output condition as :func:`designer.certify.certify` in O(k m) instead
of O(k^2 m) (E is row-constant), or by :func:`designer.certify.certify` itself when
``k^2 m`` is small. Above that, the design is returned at class level with the
structural certificate of :func:`designer.design.symmetry.certify.structural_certificate`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from designer.channel import Channel
from designer.design.result import json_float
from designer.design.symmetry.certify import (
    FULL_CERTIFIER_WORK,
    StructureCertificate,
    certify_materialised,
    structural_certificate,
)
from designer.design.symmetry.classes import ClassStructure
from designer.design.symmetry.exact import OptimalityBracket
from designer.design.symmetry.orbits import Orbits, enumerate_orbits, orbit_values, row_levels
from designer.utility import F_DIVERGENCES
from solvers.linear import TIGHT_TOLERANCES, solve_vertex_lp

#: Largest channel (k x m entries) that is materialised.
MAX_CHANNEL_ENTRIES = 30_000_000
#: Orbit weights below this (relative to the largest) are dropped from the support.
WEIGHT_CUTOFF = 1e-12


@dataclass
class OrbitColumn:
    """One orbit of the optimum: counts per class, its weight, its number of cyclic columns and ``value``,
    the utility of its representative scaled to largest entry 1."""

    high: list
    low: list
    component: int
    weight: float
    columns: int
    value: float
    exact_weight: str | None = None


@dataclass
class SymmetricDesign:
    """The optimum of the orbit LP, its certificate and (when small enough) its channel.

    Attributes
    ----------
    structure : ClassStructure
    utility : str
    objective : float
        Optimal utility (nats for mutual information).
    duals : ndarray (r,)
        Per-class dual ``y_a``: ``mu(v) <= sum_a y_a s_a(v)`` for every vertex v (the
        per-symbol dual of the full LP is ``y_{c(x)}``) and ``sum_a n_a y_a = objective``.
    dual_residual, duality_gap : float
        ``max_o mu(v_o) - y . s(v_o)`` over every orbit, each representative scaled to largest entry 1
        (:meth:`~designer.design.symmetry.orbits.Orbits.scale`), and ``n . y - objective``.
    n_orbits : int
        Orbits in the LP (every vertex lies in one of them).
    support : list of OrbitColumn
    channel : Channel or None
        The materialised channel (None above :data:`MAX_CHANNEL_ENTRIES`).
    certificate : StructureCertificate
    row_levels : ndarray (r,)
    exact : bool
        Rational weights and channel, exact certificate (:mod:`designer.design.symmetry.exact`).
    bracket : OptimalityBracket or None
        Exact mutual-information designs: rigorous bounds on the optimum.
    note : str or None
        Exact designs with an irrational ``e^eps``: the one line saying so.
    exact_ratios : list of str or None
        Exact designs: the rational high value ``r_a`` of each class (``exact_weight`` of
        each support column is its rational weight).
    method : str
    seconds : float
    timings : dict
    """

    structure: ClassStructure
    utility: str
    objective: float
    duals: np.ndarray
    dual_residual: float
    duality_gap: float
    n_orbits: int
    support: list
    channel: Channel | None
    certificate: StructureCertificate
    row_levels: np.ndarray
    method: str = "symmetry (orbit LP)"
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)
    exact: bool = False
    bracket: OptimalityBracket | None = None
    note: str | None = None
    exact_ratios: list | None = None

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    @property
    def n_outputs(self) -> int:
        return int(sum(column.columns for column in self.support))

    def summary(self) -> dict:
        """A JSON-ready summary (objective, classes, orbits, outputs, certificate, timings)."""
        structure = self.structure
        return {
            "E": structure.name,
            "k": structure.k,
            "utility": self.utility,
            "objective": self.objective,
            "method": self.method,
            "classes": structure.r,
            "class_sizes": structure.sizes.tolist(),
            "row_levels": [json_float(value) for value in self.row_levels],
            "n_orbits": self.n_orbits,
            "n_outputs": self.n_outputs,
            "materialised": self.channel is not None,
            "certified": self.certified,
            "certificate_mode": self.certificate.mode,
            "margin": json_float(self.certificate.margin),
            "duals": [float(v) for v in self.duals],
            "dual_residual": self.dual_residual,
            "duality_gap": self.duality_gap,
            "support": [column.__dict__ for column in self.support],
            "seconds": round(self.seconds, 6),
            "timings": {name: round(value, 6) for name, value in self.timings.items()},
            "exact": self.exact,
            **({"optimum_bounds": [self.bracket.lower, self.bracket.upper]} if self.bracket else {}),
            **({"exact_note": self.note} if self.note else {}),
            **({"exact_ratios": self.exact_ratios} if self.exact_ratios else {}),
        }


@dataclass(frozen=True)
class OrbitOptimum:
    """The orbit LP of a row-constant class structure, solved (:func:`solve_orbits`).

    ``epsilon`` and ``components`` are :func:`designer.design.symmetry.orbits.row_levels`; ``orbits`` every
    orbit (:func:`designer.design.symmetry.orbits.enumerate_orbits`), ``values`` their scaled
    ``mu(v_o / sigma_o)`` (:meth:`~designer.design.symmetry.orbits.Orbits.scale`), ``weights`` the LP's
    (polished) weights ``theta_o`` of the unscaled orbits and ``duals`` its per-class duals ``y_a``.
    """

    epsilon: np.ndarray
    components: list
    orbits: Orbits
    values: np.ndarray
    weights: np.ndarray
    duals: np.ndarray

    @property
    def objective(self) -> float:
        return float(self.values @ (self.weights * self.orbits.scale()))


def solve_orbits(structure: ClassStructure, utility: str = "mutual-information", timings: dict | None = None) -> OrbitOptimum:
    """Row levels, every orbit and the orbit LP's optimum (:mod:`designer.design.symmetry.orbits`), each computed once.

    ``timings``: when given, receives the seconds of ``"orbits"`` (enumeration and values) and ``"lp"``.
    Raises :class:`designer.design.symmetry.orbits.SymmetryLostError` as :func:`design_symmetric`.
    """
    timings = {} if timings is None else timings
    tick = time.perf_counter()
    epsilon, components = row_levels(structure)
    orbits = enumerate_orbits(structure, epsilon, components)
    values = orbit_values(structure, orbits, utility, scaled=True)
    timings["orbits"] = time.perf_counter() - tick
    tick = time.perf_counter()
    # the LP over v_o / sigma_o (the same duals; weights theta_o = scaled weight / sigma_o): at eps = 40 the
    # unscaled rows span 17 orders of magnitude and HiGHS reports the LP empty
    weights, duals = solve_orbit_lp(structure, components, orbits, orbits.class_sums(scaled=True), values)
    weights = weights / orbits.scale()
    timings["lp"] = time.perf_counter() - tick
    return OrbitOptimum(epsilon, components, orbits, values, weights, duals)


def design_symmetric(
    structure: ClassStructure, utility: str = "mutual-information", materialise: bool = True, exact: bool = False
) -> SymmetricDesign:
    """The optimal channel of a row-constant class-structured E by the orbit LP.

    Parameters
    ----------
    structure : ClassStructure
        E, the prior and (f-divergences) the alternative, all constant on classes;
        an f-divergence with no alternative compares the prior with the uniform distribution.
    utility : str
        ``"mutual-information"`` or an f-divergence name (both depend on a column
        only through class counts; expected loss does not reduce this way).
    materialise : bool
        Build the k x m channel when it has at most :data:`MAX_CHANNEL_ENTRIES` entries.
    exact : bool
        Rational weights (and channel, up to :data:`designer.design.symmetry.exact.MAX_EXACT_ENTRIES`
        entries), certified exactly; for mutual information a rigorous bracket of the optimum
        (:mod:`designer.design.symmetry.exact`).

    Raises
    ------
    designer.design.symmetry.orbits.SymmetryLostError
        When E is not row-constant in some component or has too many orbits.
    """
    start = time.perf_counter()
    timings = {}
    if utility in F_DIVERGENCES and structure.alternative is None:
        structure = replace(structure, alternative=np.full(structure.r, 1.0 / structure.k))
        if np.allclose(structure.prior, structure.alternative, rtol=0, atol=1e-15):
            raise ValueError(f"the {utility} utility compares the prior with the uniform distribution, and they are equal")
    optimum = solve_orbits(structure, utility, timings)
    epsilon, components, orbits = optimum.epsilon, optimum.components, optimum.orbits
    values, weights, duals = optimum.values, optimum.weights, optimum.duals
    objective = optimum.objective
    residual = float(np.max(values - orbits.class_sums(scaled=True) @ duals))
    rhs = structure.sizes.astype(float)
    if exact:
        return _exact_design(structure, utility, orbits, values, weights, duals, epsilon, components, materialise, start, timings)
    support = _support(structure, orbits, weights, values)
    channel = None
    tick = time.perf_counter()
    entries = structure.k * sum(column.columns for column in support)
    if materialise and entries <= MAX_CHANNEL_ENTRIES:
        channel = Channel(materialise_channel(structure, orbits, weights))
        timings["materialise"] = time.perf_counter() - tick
        tick = time.perf_counter()
        certificate = certify_materialised(channel, structure, epsilon, components)
    else:
        certificate = structural_certificate(structure, epsilon, components, orbits, weights)
    timings["certify"] = time.perf_counter() - tick
    return SymmetricDesign(
        structure, utility, objective, duals, residual, float(rhs @ duals - objective), orbits.count, support,
        channel, certificate, epsilon, seconds=time.perf_counter() - start, timings=timings,
    )


def _exact_design(structure, utility, orbits, values, weights, duals, epsilon, components, materialise, start, timings):
    """The exact branch of :func:`design_symmetric` (:mod:`designer.design.symmetry.exact`)."""
    from designer.certify import certify
    import designer.design.symmetry.exact as rational

    tick = time.perf_counter()
    levels = rational.exact_row_levels(structure, components, epsilon)
    ratios = rational.exact_ratios(levels)
    chosen = {o: theta for o, theta in rational.exact_weights(structure, orbits, np.flatnonzero(weights), ratios).items() if theta}
    weights = np.zeros(orbits.count)
    for o, theta in chosen.items():
        weights[o] = float(theta)
    support = _support(structure, orbits, weights, values)
    for column, o in zip(support, np.flatnonzero(weights)):
        column.exact_weight = str(chosen[o])
    periods = {o: cyclic_period(structure, orbits, o) for o in chosen}
    solution = rational.ExactSupport(structure, components, epsilon, orbits, ratios, chosen, levels)
    timings["exact weights"] = time.perf_counter() - tick
    tick = time.perf_counter()
    channel = None
    if materialise and structure.k * sum(periods.values()) <= rational.MAX_EXACT_ENTRIES:
        channel = Channel(materialise_channel(structure, orbits, chosen, ratios))
    if channel is not None and structure.k ** 2 * channel.n_outputs <= FULL_CERTIFIER_WORK:
        verdict = certify(channel, structure.privacy(), exact=True)
        certificate = StructureCertificate(verdict.certified, "exact", float(verdict.margin))
    else:
        certificate = rational.exact_structural_certificate(solution)
    timings["certify"] = time.perf_counter() - tick
    bracket = None
    if utility == "mutual-information":
        tick = time.perf_counter()
        bracket = rational.information_bracket(solution, duals)
        timings["bracket"] = time.perf_counter() - tick
    objective = float(values @ (weights * orbits.scale()))
    return SymmetricDesign(
        structure, utility, objective, duals, float(np.max(values - orbits.class_sums(scaled=True) @ duals)),
        float(structure.sizes @ duals - objective), orbits.count, support, channel, certificate, epsilon,
        seconds=time.perf_counter() - start, timings=timings, exact=True, bracket=bracket,
        note=rational.irrational_note(levels), exact_ratios=[str(ratio) for ratio in ratios],
    )


def solve_orbit_lp(structure, components, orbits, sums, values) -> tuple[np.ndarray, np.ndarray]:
    """The orbit LP, one LP per component (they share no row), solved once per distinct component.

    Components with the same class sizes, levels and distributions (the blocks of
    a block E) have the same LP. HiGHS runs with tight tolerances
    (:data:`solvers.linear.TIGHT_TOLERANCES`) and the weights are polished on their support.
    """
    weights = np.zeros(orbits.count)
    duals = np.zeros(structure.r)
    solved: dict[bytes, tuple] = {}
    for index, group in enumerate(components):
        rows = np.flatnonzero(orbits.component == index)
        key = b"".join(
            np.ascontiguousarray(part).tobytes()
            for part in (
                structure.sizes[group], structure.levels[np.ix_(group, group)], structure.prior[group],
                np.zeros(0) if structure.alternative is None else structure.alternative[group],
            )
        )
        if key not in solved:
            local = sums[np.ix_(rows, group)]
            rhs = structure.sizes[group].astype(float)
            solution = solve_vertex_lp(local, values[rows], rhs, options=TIGHT_TOLERANCES)
            solved[key] = (_polished(local, solution.weights, rhs), solution.duals)
        weights[rows], duals[group] = solved[key]
    return weights, duals


def _polished(sums: np.ndarray, weights: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The LP weights re-solved on their support by least squares (exact row sums to rounding)."""
    keep = np.flatnonzero(weights > WEIGHT_CUTOFF * max(weights.max(), 1e-300))
    solved, *_ = np.linalg.lstsq(sums[keep].T, rhs, rcond=None)
    result = np.zeros_like(weights)
    result[keep] = np.where(solved > 0, solved, weights[keep])
    return result


def cyclic_period(structure: ClassStructure, orbits: Orbits, o: int) -> int:
    """Columns needed for orbit o: the unit orbit's class size, else the lcm of its mixed classes' sizes."""
    sizes = structure.sizes
    if orbits.high[o].sum() == 0 and orbits.low[o].sum() == 1:
        return int(sizes[np.flatnonzero(orbits.low[o])[0]])
    mixed = [int(sizes[a]) for a in range(structure.r) if 0 < orbits.high[o, a] < sizes[a]]
    return math.lcm(*mixed) if mixed else 1


def _support(structure, orbits, weights, values) -> list[OrbitColumn]:
    return [
        OrbitColumn(
            orbits.high[o].tolist(), orbits.low[o].tolist(), int(orbits.component[o]), float(weights[o]),
            cyclic_period(structure, orbits, o), float(values[o]),
        )
        for o in np.flatnonzero(weights)
    ]


def materialise_channel(structure: ClassStructure, orbits: Orbits, weights, ratios: list | None = None) -> np.ndarray:
    """The k x m channel: each support orbit as its cyclic shifts (module docstring).

    ``weights``: the orbit weights as a float array; or, exactly, a dict ``{orbit: Fraction}``
    with ``ratios`` the rational high values ``r_a``, giving an object array of Fractions.
    """
    exact = ratios is not None
    ratio = ratios if exact else orbits.ratio
    zero = Fraction(0) if exact else 0.0
    members = structure.class_members()
    blocks = []
    for o in (list(weights) if exact else np.flatnonzero(weights)):
        period = cyclic_period(structure, orbits, o)
        scale = weights[o] / period
        block = np.full((structure.k, period), zero, dtype=object if exact else float)
        shifts = np.arange(period)
        unit = orbits.high[o].sum() == 0 and orbits.low[o].sum() == 1
        for a, group in enumerate(members):
            if unit:
                if orbits.low[o, a]:
                    block[group, shifts] = scale
                continue
            high, low = orbits.high[o, a], orbits.low[o, a]
            if high + low == 0:
                continue
            is_high = (np.arange(group.size)[:, None] - shifts[None, :]) % group.size < high
            block[group, :] = np.where(is_high, scale * ratio[a], scale)
        blocks.append(block)
    return np.hstack(blocks)
