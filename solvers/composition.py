"""The hockey-stick divergence of n-fold products of two finite distributions.

For distributions ``P`` and ``R`` on a finite set and ``n`` independent draws,

    H_n(t) = sum over outcomes o of (P^n(o) - e^t R^n(o))_+ ,

the largest ``P^n(S) - e^t R^n(S)`` over events ``S``. The log-ratio
``L(o) = log P(o) / R(o)`` of one draw takes finitely many values ``v_j``
(masses ``p_j`` under ``P``), plus ``+inf`` with mass ``p_inf`` where
``R(o) = 0 < P(o)``. The n-fold log-ratio is ``sum_j c_j v_j`` for the counts
``c`` (a composition of n into the distinct values) with multinomial mass, and
the outcomes holding an infinite part weigh ``1 - (1 - p_inf)^n``:

    H_n(t) = 1 - (1 - p_inf)^n + sum_c Mult(n; c) prod_j p_j^{c_j} (1 - e^{t - c.v})_+ .

:func:`composed_atoms` enumerates the compositions exactly (equal values merged
first, so a three-valued log-ratio at n = 365 has 67,525 atoms); beyond
``max_atoms`` atoms :func:`smallest_level` falls back on the pessimistic
discretisation of ``dp_accounting`` (losses rounded up to a grid: an upper bound on
``H_n``, hence on the level), imported there only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: Most atoms of an n-fold log-ratio enumerated exactly (then dp_accounting's discretisation).
MAX_ATOMS = 2_000_000
#: Grid of dp_accounting's pessimistic discretisation of the log-ratio.
DISCRETISATION = 1e-4


@dataclass(frozen=True)
class LossAtoms:
    """A finite log-ratio distribution: ``values[i]`` with masses ``upper[i]`` under P and ``lower[i]`` under R,
    plus ``infinite``, the mass under P of outcomes R cannot produce."""

    values: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    infinite: float


def loss_atoms(upper, lower) -> LossAtoms:
    """The log-ratio distribution of one draw of ``upper`` (P) against ``lower`` (R), equal values merged.

    Outcomes with ``P(o) = 0`` are left out (they add nothing to ``H``).
    """
    upper, lower = np.asarray(upper, dtype=float), np.asarray(lower, dtype=float)
    both = (upper > 0) & (lower > 0)
    infinite = float(upper[(upper > 0) & (lower == 0)].sum())
    values = np.log(upper[both]) - np.log(lower[both])
    distinct, where = np.unique(values, return_inverse=True)
    return LossAtoms(distinct, np.bincount(where, upper[both], distinct.size),
                     np.bincount(where, lower[both], distinct.size), infinite)


def composition_count(parts: int, total: int) -> int:
    """The number of compositions of ``total`` into ``parts`` non-negative parts: C(total + parts - 1, parts - 1)."""
    return math.comb(total + parts - 1, parts - 1) if parts else int(total == 0)


def _compositions(parts: int, total: int) -> np.ndarray:
    """Every composition of ``total`` into ``parts`` parts, one per row (stars and bars, vectorised)."""
    rows = np.array([[total]], dtype=np.int64)
    for _ in range(parts - 1):
        remaining = rows[:, -1]
        repeats = remaining + 1
        head = np.repeat(rows[:, :-1], repeats, axis=0)
        first = np.concatenate([np.arange(r + 1) for r in remaining.tolist()])
        rows = np.column_stack([head, first, np.repeat(remaining, repeats) - first])
    return rows


def composed_atoms(atoms: LossAtoms, n: int, max_atoms: int = MAX_ATOMS) -> LossAtoms | None:
    """The exact n-fold log-ratio distribution, or None when it has more than ``max_atoms`` atoms."""
    from scipy.special import gammaln

    parts = atoms.values.size
    if composition_count(parts, n) > max_atoms:
        return None
    infinite = 1.0 - (1.0 - atoms.infinite) ** n
    if parts == 0:
        return LossAtoms(np.zeros(0), np.zeros(0), np.zeros(0), infinite)
    counts = _compositions(parts, n)
    multinomial = gammaln(n + 1) - gammaln(counts + 1).sum(axis=1)
    with np.errstate(divide="ignore"):
        log_upper, log_lower = np.log(atoms.upper), np.log(atoms.lower)
    upper = np.exp(multinomial + _weighted(counts, log_upper))
    lower = np.exp(multinomial + _weighted(counts, log_lower))
    return LossAtoms(counts @ atoms.values, upper, lower, infinite)


def _weighted(counts: np.ndarray, logs: np.ndarray) -> np.ndarray:
    """``counts @ logs`` with ``0 * log 0 = 0``."""
    return np.where(counts > 0, counts * logs, 0.0).sum(axis=1)


def hockey_stick(atoms: LossAtoms, t: float) -> float:
    """``H(t) = infinite + sum over values > t of (upper - e^t lower)``."""
    above = atoms.values > t
    return atoms.infinite + float(np.sum(atoms.upper[above]) - math.exp(t) * np.sum(atoms.lower[above]))


def level_for(atoms: LossAtoms, delta: float) -> float:
    """The smallest ``t >= 0`` with ``H(t) <= delta`` (``inf`` when the infinite part alone exceeds delta).

    ``H`` is ``A - e^t B`` between consecutive atom values (A, B the masses above), so the
    crossing is solved in closed form on the segment where ``H`` passes ``delta``.
    """
    if atoms.infinite > delta:
        return math.inf
    order = np.argsort(-atoms.values)
    values = atoms.values[order]
    above_upper = atoms.infinite + np.cumsum(atoms.upper[order])
    above_lower = np.cumsum(atoms.lower[order])
    # H at t just below values[i] counts atoms 0..i: H = above_upper[i] - e^t above_lower[i] on [values[i+1], values[i])
    for i in range(values.size):
        low = values[i + 1] if i + 1 < values.size else -math.inf
        if values[i] <= 0:
            break
        at_low = above_upper[i] - math.exp(max(low, 0.0)) * above_lower[i]
        if at_low > delta:  # H crosses delta inside [max(low, 0), values[i])
            if above_lower[i] <= 0:  # masses under R underflowed: H jumps at values[i]
                return float(values[i])
            return max(math.log((above_upper[i] - delta) / above_lower[i]), 0.0)
    return 0.0


@dataclass(frozen=True)
class ComposedLevel:
    """Outcome of :func:`smallest_level`: the level ``t``, how it was found, the atoms of the exact method."""

    level: float
    method: str  # "exact" or "discretised"
    atoms: int


def smallest_level(upper, lower, n: int, delta: float, max_atoms: int = MAX_ATOMS) -> ComposedLevel:
    """The smallest ``t >= 0`` with ``H_n(t) <= delta`` for ``P = upper``, ``R = lower``.

    Exact (:func:`composed_atoms`, :func:`level_for`) up to ``max_atoms`` atoms; beyond,
    ``dp_accounting``'s pessimistic discretisation (grid :data:`DISCRETISATION`), which
    over-estimates ``H_n`` and so the level.
    """
    atoms = loss_atoms(upper, lower)
    composed = composed_atoms(atoms, n, max_atoms)
    if composed is not None:
        return ComposedLevel(level_for(composed, delta), "exact", composed.values.size)
    return ComposedLevel(_discretised_level(atoms, n, delta), "discretised", 0)


def _discretised_level(atoms: LossAtoms, n: int, delta: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution

    if 1.0 - (1.0 - atoms.infinite) ** n > delta:
        return math.inf
    upper = {i: math.log(mass) for i, mass in enumerate(atoms.upper.tolist()) if mass > 0}
    lower = {i: math.log(mass) for i, mass in enumerate(atoms.lower.tolist()) if mass > 0}
    if atoms.infinite > 0:
        upper["infinite"] = math.log(atoms.infinite)
    distribution = privacy_loss_distribution.from_two_probability_mass_functions(
        lower, upper, pessimistic_estimate=True, value_discretization_interval=DISCRETISATION, symmetric=False)
    return max(float(distribution.self_compose(n).get_epsilon_for_delta(delta)), 0.0)
