"""What every float design goes through: levels checked before, columns merged and repaired onto the cone after, then certified."""

from __future__ import annotations

import math
import sys

import numpy as np

from designer.certify import LEVEL_DIGITS, Certificate, certify
from designer.channel import Channel
from designer.exact import describe_fraction
from designer.spec import PrivacyMatrix
from solvers.maxplus import min_plus_product, safe_log

#: Columns whose normalised entries agree to this many decimals are merged.
MERGE_DECIMALS = 12


#: Columns of a repaired channel with less total mass than this are dropped.
NEGLIGIBLE_COLUMN = 1e-12


#: Least-squares refinement steps when restoring row sums by column scaling.
REFINEMENT_STEPS = 3


#: Weights of the uniform channel :func:`certified_mixture` searches between (a larger weight than the most is no
#: repair), and its bisection steps on the logarithm of the weight (8: within a factor 10^(10/256) = 1.09).
LEAST_MIXTURE, MOST_MIXTURE = 1e-11, 0.1
MIXTURE_STEPS = 8


#: Largest finite level a float design accepts: ``-log`` of the smallest normal double
#: (708.396...). Entries of a channel for larger levels (``~exp(-level)``) are subnormal
#: or underflow, which float mode cannot certify (:func:`designer.certify.certify`).
MAX_FLOAT_DESIGN_LEVEL = -math.log(sys.float_info.min)


#: Largest finite level any design accepts: ``log`` of the largest double (709.78...);
#: beyond it ``exp(level)`` overflows in the cone's vertex estimates and the LP's bounds.
MAX_DESIGN_LEVEL = math.log(sys.float_info.max)


#: Pairs per step of :func:`_implied` (a 4,096 x k block of sums at once).
IMPLIED_CHUNK = 4096
#: The level at which :func:`within_doubles` truncates a closure that reaches beyond the double range: a column of
#: its cone spans at most ``e^600``, so a weight down to ``e^-100`` times its entries is still a normal double.
TRUNCATION_LEVEL = 600.0


def within_doubles(privacy: PrivacyMatrix) -> PrivacyMatrix:
    """E itself when its finite levels fit a float design (:data:`MAX_FLOAT_DESIGN_LEVEL`), else the truncated
    closure ``min(E*, TRUNCATION_LEVEL)``.

    A metric line of 1,000 values at epsilon 1 has levels up to 999, implied by its neighbours' 1: the columns
    of its optimal channels reach ``e^-999``, which underflows to 0 next to a positive entry, and no float channel
    with such a column is E-LDP. The truncation is a metric (``min(d, c)`` keeps the triangle inequality) below
    E*, so every channel it admits is E-LDP; its cone holds each column of E's cone raised to at least
    ``e^-TRUNCATION_LEVEL`` times its largest entry, which moves the expected loss by at most that share of
    the largest loss. Designs repair into it (:func:`repair_into_cone`) and are
    certified against E. The truncation is :meth:`PrivacyMatrix.truncated_closure`, computed once per E.
    """
    values = privacy.epsilon
    if np.all(np.isfinite(values)) and values.max() <= MAX_FLOAT_DESIGN_LEVEL:
        return privacy  # E* <= E everywhere: no closure needed (a line's closed form stays at 0.7 s for k = 1,000)
    closure = privacy.closure().epsilon
    if not np.any(np.isfinite(closure) & (closure > MAX_FLOAT_DESIGN_LEVEL)):
        return privacy
    return privacy.truncated_closure(TRUNCATION_LEVEL)


def check_design_levels(privacy: PrivacyMatrix, exact: bool = False, nonredundant_only: bool = False) -> None:
    """Refuse finite levels a design in double precision cannot represent (before designing).

    Float designs accept levels up to :data:`MAX_FLOAT_DESIGN_LEVEL`, exact vertex
    designs up to :data:`MAX_DESIGN_LEVEL`; ``inf`` (no constraint) is always fine. With
    ``nonredundant_only`` a level that other pairs imply is accepted at any size (designs that
    repair into :func:`within_doubles` never constrain it on its own): only the non-redundant
    pairs' levels are checked.

    Raises
    ------
    ValueError
        One line naming the first such entry, the limit and what to do.
    """
    limit = MAX_DESIGN_LEVEL if exact else MAX_FLOAT_DESIGN_LEVEL
    values = privacy.epsilon
    too_large = np.argwhere(np.isfinite(values) & (values > limit))
    if too_large.size and nonredundant_only:
        too_large = too_large[~_implied(privacy, too_large)]
    if too_large.size:
        x, x_prime = too_large[0]
        accepted = f"designs accept finite levels up to {limit:.2f}" if exact else (
            f"float designs accept finite levels up to {limit:.2f}, --exact up to {MAX_DESIGN_LEVEL:.2f}"
        )
        level = privacy.exact_levels(too_large[:1, 0], too_large[:1, 1])[0]
        shown = describe_fraction(level.value, LEVEL_DIGITS) if level.beyond_double else f"{float(values[x, x_prime]):g}"
        raise ValueError(
            f"E row {x}, column {x_prime}: level {shown} is beyond the double range "
            f"({accepted}); lower it, or write inf if the pair needs no constraint"
        )


def _implied(privacy: PrivacyMatrix, pairs: np.ndarray) -> np.ndarray:
    """For each pair (x, x'), whether other pairs imply its constraint, by the two tests of
    :meth:`designer.spec.PrivacyMatrix.nonredundant_pairs` (here without their relative slack, whose
    product overflows at levels near the largest double): a shorter path (``E*[x, x'] < E[x, x']``, through
    zero levels too), or a symbol z with ``E*[x, z] > 0``, ``E*[z, x'] > 0`` and
    ``E*[x, z] + E*[z, x'] <= E[x, x']``; 4,096 pairs at a time."""
    with np.errstate(over="ignore"):  # a path beyond the doubles closes to inf: it implies nothing here
        closure = privacy.closure().epsilon
    positive = np.where(closure > 0, closure, np.inf)
    np.fill_diagonal(positive, np.inf)
    implied = np.zeros(len(pairs), dtype=bool)
    for begin in range(0, len(pairs), IMPLIED_CHUNK):
        rows, columns = pairs[begin:begin + IMPLIED_CHUNK].T
        with np.errstate(over="ignore"):  # a sum beyond the doubles is inf: no shorter path there
            legs = (positive[rows] + positive[:, columns].T).min(axis=1)
        levels = privacy.epsilon[rows, columns]
        implied[begin:begin + IMPLIED_CHUNK] = (legs <= levels) | (closure[rows, columns] < levels)
    return implied


def certify_design(channel: Channel, privacy: PrivacyMatrix, exact: bool) -> Certificate:
    """Certify a designed channel; a float design with subnormal entries is refused in one clear line."""
    try:
        return certify(channel, privacy, exact=exact)
    except ValueError as error:
        if exact or "subnormal" not in str(error):
            raise
        raise ValueError(
            "the designed channel has entries below the normal double range (subnormal), which float mode "
            "cannot certify; design with --exact, or lower E's largest finite levels"
        ) from None


def merge_proportional_columns(matrix, decimals: int = MERGE_DECIMALS) -> np.ndarray:
    """Sum columns that are proportional (equal after normalising to sum 1); drop zero columns.

    Merging keeps every likelihood ratio (so E-LDP) and, for a positively
    homogeneous column utility, the utility: ``mu(a v) + mu(b v) = mu((a + b) v)``.
    Merged columns keep the position of their first member.
    """
    matrix = np.asarray(matrix, dtype=float)
    totals = matrix.sum(axis=0)
    keep = np.flatnonzero(totals > 0)
    shapes = np.round(matrix[:, keep] / totals[keep], decimals)
    _, first, groups = np.unique(shapes.T, axis=0, return_index=True, return_inverse=True)
    merged = np.zeros((matrix.shape[0], first.size))
    np.add.at(merged.T, groups.ravel(), matrix[:, keep].T)
    return merged[:, np.argsort(first)]


def raise_into_cone(privacy: PrivacyMatrix, matrix) -> np.ndarray:
    """The smallest matrix above ``matrix`` whose columns lie in ``C_E``: ``Q'[x, y] = max_z exp(-E*[z, x]) Q[z, y]``.

    An LP solver's absolute tolerance (~1e-10) leaves tiny entries (``e^{-eps d}`` far from an
    output) relatively wrong, even 0; lowering the column onto the cone (:func:`project_into_cone`)
    would then pull the whole column down to them. Raising moves every entry by at most about the
    solver's absolute violation, and the result is in the cone by the triangle inequality of the
    closure E* (the mirror image of step 1 of :func:`project_into_cone`). Rows then sum to slightly
    more than 1: pass the result to :func:`project_into_cone`, which restores the row sums by scaling columns.
    """
    transposed_closure = privacy.closure().epsilon.T
    logs = -min_plus_product(transposed_closure, -safe_log(matrix))
    return np.where(logs > -745.0, np.exp(logs), 0.0)


def project_into_cone(privacy: PrivacyMatrix, matrix) -> np.ndarray:
    """Repair a nearly E-LDP channel into an E-LDP one, moving entries by about the violation.

    1. Column by column, the largest vector below Q inside ``C_E``:
       ``Q[x,y] <- min_z exp(E*[x,z]) Q[z,y]`` (``E*`` is the closure, which obeys
       the triangle inequality, so the result satisfies every constraint).
    2. Drop columns of total mass below :data:`NEGLIGIBLE_COLUMN` (an interior-point
       solver leaves ~1e-13 in unused outputs), then give back the lost row mass
       by scaling *columns* (which keeps every likelihood ratio):
       ``Q <- Q diag(1 + d)`` with ``Q d = 1 - rowsums`` (least squares, a few
       refinement steps, each kept only when ``1 + d >= 0`` and it brings the
       rows closer to 1).
    3. Divide each row by its sum; this changes log-ratios by at most
       ``max_x |1 - rowsum_x|`` (about 1e-16 after step 2).
    """
    logs = min_plus_product(privacy.closure().epsilon, safe_log(matrix))
    projected = np.where(logs > -745.0, np.exp(np.minimum(logs, 0.0)), 0.0)
    projected[:, projected.sum(axis=0) < NEGLIGIBLE_COLUMN] = 0.0
    active = np.flatnonzero(projected.sum(axis=0) > 0)
    for _ in range(REFINEMENT_STEPS):
        deficit = 1.0 - projected.sum(axis=1)
        step, *_ = np.linalg.lstsq(projected[:, active], deficit, rcond=None)
        scaled = projected.copy()
        scaled[:, active] *= 1.0 + step
        if np.any(1.0 + step < 0) or np.abs(1.0 - scaled.sum(axis=1)).max() >= np.abs(deficit).max():
            break
        projected = scaled
    return projected / projected.sum(axis=1, keepdims=True)


def repair_into_cone(privacy: PrivacyMatrix, matrix) -> np.ndarray:
    """Repair a solver's nearly E-LDP channel: raise each column into ``C_E``, then project back to a stochastic matrix.

    :func:`raise_into_cone` lifts each column to the smallest point of ``C_E`` above it
    (``Q'[x, y] = max_z exp(-E*[z, x]) Q[z, y]``), so entries the solver left at its absolute tolerance move
    by about that tolerance and none is pulled to 0; :func:`project_into_cone` then keeps the columns in the
    cone and restores the row sums the raise pushed above 1 by scaling columns (dropping columns of negligible
    mass) and dividing each row by its sum, which moves log-ratios by about ``1e-16``.

    Parameters
    ----------
    privacy : PrivacyMatrix
        The E whose closure defines the cone (usually :func:`within_doubles` of the design's E).
    matrix : array_like, shape (k, m)
        The channel to repair, rows nearly summing to 1, columns nearly in ``C_E``.

    Returns
    -------
    ndarray, shape (k, m)
        A row-stochastic matrix whose columns lie in ``C_E`` (to rounding).
    """
    return project_into_cone(privacy, raise_into_cone(privacy, matrix))


def certifies(privacy: PrivacyMatrix, matrix) -> bool:
    """Whether ``matrix`` is certified E-LDP in float mode (entries below the normal range count as not certified)."""
    try:
        return certify(Channel(matrix), privacy).verdict == "certified"
    except ValueError:
        return False


def certified_mixture(privacy: PrivacyMatrix, matrix) -> tuple[np.ndarray, float] | None:
    """``((1 - theta) Q + theta U, theta)`` for the least ``theta`` found that certifies, U uniform; None if none does.

    ``(Q, 0.0)`` when Q certifies as it is.

    Every row of U is the same, so U is E-LDP for every E, and mixing pulls every likelihood ratio towards 1:
    a pair (x, x') of column y with ``a = Q[x, y] > e^E b = e^E Q[x', y]`` holds after mixing when
    ``theta / (1 - theta) >= m (a - e^E b) / (e^E - 1)`` (m outputs), and a pair that holds keeps holding. So the
    certificate is monotone in ``theta``: one certification at :data:`MOST_MIXTURE` (None if it fails: two
    certifications in all, with the one of Q, for an iterate far from the cone), then :data:`MIXTURE_STEPS` bisections on
    ``log theta`` down to :data:`LEAST_MIXTURE`. A log-ratio violation v needs a weight of about
    ``m v / (e^E - 1)``, which raises the expected loss by at most ``theta`` times U's. PDLP's repaired iterates
    certify at weights of 8e-8 to 3.5e-6 on 3 x 4 to 5 x 5 grids and 2e-5 on a 10 x 10 grid. Pairs with E = 0 and unequal rows never certify this way.
    """
    matrix = np.asarray(matrix, dtype=float)
    if certifies(privacy, matrix):
        return matrix, 0.0
    uniform = np.full_like(matrix, 1.0 / matrix.shape[1])

    def mixed(theta: float) -> np.ndarray | None:
        candidate = (1.0 - theta) * matrix + theta * uniform
        return candidate if certifies(privacy, candidate) else None

    found, theta = mixed(MOST_MIXTURE), MOST_MIXTURE
    if found is None:
        return None
    failing, certified = math.log10(LEAST_MIXTURE), math.log10(MOST_MIXTURE)
    for _ in range(MIXTURE_STEPS):
        middle = (failing + certified) / 2
        candidate = mixed(10.0**middle)
        if candidate is None:
            failing = middle
        else:
            certified, found, theta = middle, candidate, 10.0**middle
    return found, theta


# ---------------------------------------------------------------- internals
def default_uniform(prior, k: int) -> np.ndarray:
    """The uniform distribution when ``prior`` is None, else the validated prior (:func:`designer.utility.validated_prior`)."""
    from designer.utility import validated_prior

    return np.full(k, 1.0 / k) if prior is None else validated_prior(prior, k)
