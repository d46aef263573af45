"""Certificates of symmetric designs: per-output check in O(k m), and the class-level proof.

Row-constant E. Within a component where ``E[x, x'] = eps_x`` for every x' != x,
the per-output condition of Definition 2 (see :mod:`designer.certify`) reads

    Q[x, y] <= e^{eps_x} min_{x' != x} Q[x', y]   for every y,

and across components E is inf. So the tight level of row x is
``t_x = max_y log(Q[x, y] / min_{x' != x} Q[x', y])`` (the smallest and second
smallest entry of each column give every ``min_{x' != x}``), the channel is E-LDP
iff ``t_x <= eps_x`` for every x, and the margin ``min_x eps_x - t_x`` equals the
one of :func:`designer.certify.certify` (its ``min_{x,x'} E - E_Q``).
:func:`certify_row_constant` decides this with the float certifier's tolerance.

Class level (channels too large to tabulate). Every column of the design is
``theta u`` with u a box vertex: ``u_x in {1, e^{eps_x}}`` on its component (1 on free
symbols), 0 elsewhere. Then ``min u >= 1`` on the component, so
``u_x <= e^{eps_x} <= e^{eps_x} min u`` and the column lies in C_E. The
structural certificate checks these facts for every support orbit: counts within
class sizes, values ``e^{eps_a}`` whose log does not exceed ``eps_a`` (to the float
tolerance), support inside one component, and row sums 1 per class.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.certify import FLOAT_TOLERANCE, certify
from designer.channel import Channel
from designer.design.symmetry.classes import ClassStructure

#: Use the full certifier (O(k^2 m)) below this many pair-output checks.
FULL_CERTIFIER_WORK = 50_000_000
#: Largest deviation of a class row sum from 1 accepted by the structural certificate.
ROW_SUM_TOLERANCE = 1e-9


@dataclass(frozen=True)
class StructureCertificate:
    """Verdict of a symmetric design's certification.

    ``mode``: ``"float"`` (the full certifier), ``"row-constant"`` (the O(k m)
    per-output check) or ``"structural"`` (class level, not materialised).
    ``margin``: ``min_x eps_x - t_x`` (inf when nothing is constrained).
    """

    certified: bool
    mode: str
    margin: float
    detail: str = ""

    @property
    def verdict(self) -> str:
        return "certified" if self.certified else "violated"


def certify_materialised(
    channel: Channel, structure: ClassStructure, epsilon: np.ndarray, components: list[np.ndarray]
) -> StructureCertificate:
    """The full certifier when ``k^2 m`` is small, else :func:`certify_row_constant`."""
    k, m = channel.matrix.shape
    if k * k * m <= FULL_CERTIFIER_WORK:
        certificate = certify(channel, structure.privacy())
        return StructureCertificate(certificate.certified, "float", float(certificate.margin))
    return certify_row_constant(channel.matrix, structure, epsilon, components)


def certify_row_constant(
    matrix: np.ndarray, structure: ClassStructure, epsilon: np.ndarray, components: list[np.ndarray]
) -> StructureCertificate:
    """Decide E-LDP for a row-constant E in O(k m) (module docstring)."""
    level = structure.expand(epsilon)
    tight = row_tight_levels(matrix, structure, components)
    finite = np.isfinite(level)
    if not finite.any():
        return StructureCertificate(True, "row-constant", np.inf)
    excess = tight[finite] - level[finite]
    margin = float(-excess.max())
    worst = int(np.flatnonzero(finite)[np.argmax(excess)])
    detail = f"largest tight level {tight[worst]:.17g} at symbol {worst} (allowed {level[worst]:.17g})"
    return StructureCertificate(bool(excess.max() <= FLOAT_TOLERANCE), "row-constant", margin, detail)


def row_tight_levels(matrix: np.ndarray, structure: ClassStructure, components: list[np.ndarray]) -> np.ndarray:
    """``t_x = max_y log(Q[x, y] / min_{x' != x} Q[x', y])`` over x's component (module docstring), clipped at 0."""
    members = structure.class_members()
    tight = np.zeros(structure.k)
    for group in components:
        symbols = np.concatenate([members[a] for a in group])
        columns = np.flatnonzero(matrix[symbols].max(axis=0) > 0)
        part = matrix[np.ix_(symbols, columns)]
        if symbols.size == 1:
            continue
        order = np.partition(part, 1, axis=0)
        smallest, second = order[0], order[1]
        others_min = np.where(part == smallest, second, smallest)  # min over x' != x (ties give the same value)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(part > 0, np.log(part) - np.log(others_min), -np.inf)
        tight[symbols] = np.maximum(ratio.max(axis=1), 0.0)
    return tight


def structural_certificate(
    structure: ClassStructure, epsilon: np.ndarray, components: list[np.ndarray], orbits, weights: np.ndarray
) -> StructureCertificate:
    """The class-level proof of the module docstring for the support orbits."""
    sizes = structure.sizes
    finite = np.isfinite(epsilon)
    log_ratio = np.log(orbits.ratio)
    margin = np.inf
    row_sums = np.zeros(structure.r)
    for o in np.flatnonzero(weights):
        high, low = orbits.high[o], orbits.low[o]
        if np.any(high < 0) or np.any(low < 0) or np.any(high + low > sizes) or weights[o] < 0:
            return StructureCertificate(False, "structural", -np.inf, f"orbit {o}: counts outside the class sizes")
        support = np.flatnonzero(high + low)
        if not np.isin(support, components[orbits.component[o]]).all() or np.any(high[~finite] > 0):
            return StructureCertificate(False, "structural", -np.inf, f"orbit {o}: outside its component or a free class high")
        used = support[finite[support] & (high[support] > 0)]
        if used.size:
            margin = min(margin, float(np.min(epsilon[used] - log_ratio[used])))
        row_sums += weights[o] * (high * orbits.ratio + low)
    deviation = float(np.max(np.abs(row_sums / sizes - 1.0)))
    if deviation > ROW_SUM_TOLERANCE:
        return StructureCertificate(False, "structural", margin, f"class row sums differ from 1 by {deviation:.2g}")
    constrained = finite & (epsilon > 0)
    if constrained.any() and not np.isfinite(margin):
        margin = float(np.min(epsilon[constrained]))
    return StructureCertificate(bool(margin >= -FLOAT_TOLERANCE), "structural", margin, f"row sums within {deviation:.1e}")
