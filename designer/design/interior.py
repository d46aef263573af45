"""Move a float channel's tight entries inside E, so that the exact certifier certifies it as returned.

An LP optimum is tight: many ratios ``Q[x, y] / Q[x', y]`` equal ``e^{E[x, x']}``, and their
floats land on either side of it (a ratio above e by 2.6e-16 makes the exact certifier of
:mod:`designer.certify` say *violated* although the float certifier, with its 1e-9 tolerance in
log space, says certified). Every float design of :func:`designer.design.front.design_channel`
therefore goes through :func:`move_inside`, which shrinks each column's spread in log space towards
its largest entry,

    log Q'[x, y] = c_y + g (log Q[x, y] - c_y),    c_y = max_x log Q[x, y],   0 < g <= 1,

so every log-ratio is multiplied by g (zeros stay zeros), with ``g`` chosen so that each ratio is
provably at most ``e^E`` in exact arithmetic:

* ``T[x, x']`` is the float certifier's tight level of the input channel,
  ``max_y fl(fl(log Q[x, y]) - fl(log Q[x', y]))``; numpy's ``log`` and ``exp`` are within
  4 units in the last place (numpy PR 19478, the SVML bound), so ``T`` is within
  ``8u (|L_x| + |L_x'|) + u |T|`` of the exact log-ratio (``u = 2^-53``, ``L_x`` the largest
  ``|log Q|`` of row x).
* each new entry is ``exp(c + fl(g fl(L - c)))``; its log is within ``11 u (|L| + |c| + 1)`` of
  ``c + g (log Q - c)``, and the column scaling that restores the row sums (below) adds ``u``.
* so the exact new log-ratio is at most ``g T + budget`` with
  ``budget = ERROR_UNITS u (L_x + L_x' + C + 2)`` (``C = max |c_y|``; :data:`ERROR_UNITS` = 64 is
  more than the sum of the terms above), and the level ``E`` (a faithful float of the exact level,
  :meth:`designer.exact.ExactEpsilon.__float__`) is at least ``E (1 - 4u)``.

``g = min(1, min (E (1 - 4u) - budget) / T)`` over the constrained pairs; when ``g = 1`` the
channel is already inside and is returned unchanged. Pairs whose level is below :data:`SMALL_LEVEL_BUDGETS` budgets
(``E = 0`` twins, or levels under about 1e-11) gain too little from a shrink; for them the new floats
are compared directly (``Q'[x, y] <= Q'[x', y]`` in every column, an exact comparison of doubles,
proves the ratio is at most ``1 <= e^E``).

Row sums. The shrink raises entries by about ``(1 - g)`` times the column's log-spread; the rows
are restored by scaling *columns* (``Q' diag(1 + d)``, least squares on ``Q' d = 1 - rowsums``, kept
when ``1 + d > 0`` and it brings the rows closer to 1), which keeps every ratio up to the rounding
counted above. The utility this costs is about ``(1 - g)`` times the utility (``1e-15`` relative
on the README's block E) and is reported by the front door.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

#: Unit roundoff of IEEE doubles.
UNIT_ROUNDOFF = 2.0**-53
#: Units of roundoff per pair budgeted for the logs, the shrink, the exponential and the column scaling.
ERROR_UNITS = 64
#: A level below this many budgets is not shrunk towards (the shrink would flatten every column):
#: its pairs are compared directly.
SMALL_LEVEL_BUDGETS = 100


@dataclass(frozen=True)
class Interior:
    """A channel moved inside E (:func:`move_inside`).

    Attributes
    ----------
    matrix : ndarray (k, m)
        The moved channel (the input itself when nothing had to move).
    shrink : float
        ``1 - g``: the relative shrink of every column's log-spread (0 when nothing moved).
    proven : bool
        Whether every ratio is proven at most ``e^E`` in exact arithmetic by the bounds of the
        module docstring (False when the input is not within the float tolerance of E).
    """

    matrix: np.ndarray = field(repr=False)
    shrink: float = 0.0
    proven: bool = False


def move_inside(matrix: np.ndarray, tight: np.ndarray, allowed: np.ndarray) -> Interior:
    """Shrink the channel's log-spread so that every ratio is provably within ``e^E`` (module docstring).

    Parameters
    ----------
    matrix : ndarray (k, m)
        A float channel that the float certifier certifies.
    tight : ndarray (k, k) or (k, 1)
        Its tight levels ``max_y log(Q[x, y] / Q[x', y])`` as the float certifier computes them
        (:attr:`designer.certify.Certificate.tight_epsilon`), clipped at 0; ``(k, 1)``: one level per
        row against every other input (a row-constant E).
    allowed : ndarray, the shape of ``tight``
        The levels ``E`` as faithful floats; ``inf`` for no constraint. Diagonal entries of a
        ``(k, k)`` array are ignored. Row levels (``(k, 1)``) below :data:`SMALL_LEVEL_BUDGETS`
        budgets leave the result unproven (their partners are not known here).
    """
    matrix = np.asarray(matrix, dtype=float)
    tight = np.asarray(tight, dtype=float)
    allowed = np.asarray(allowed, dtype=float)
    positive = matrix > 0
    logs = np.log(np.where(positive, matrix, 1.0))  # 0 where the entry is 0
    top = np.where(positive, logs, -np.inf).max(axis=0)
    used = np.isfinite(top)
    row_size = np.abs(logs).max(axis=1)
    largest_top = float(np.abs(top[used]).max()) if used.any() else 0.0
    partner = row_size[None, :] if tight.shape[1] == matrix.shape[0] else np.full((1, 1), row_size.max())
    budget = ERROR_UNITS * UNIT_ROUNDOFF * (row_size[:, None] + partner + largest_top + 2.0)
    constrained = np.isfinite(allowed)
    if tight.shape == (matrix.shape[0], matrix.shape[0]):
        constrained &= ~np.eye(matrix.shape[0], dtype=bool)
    low = allowed * (1.0 - 4 * UNIT_ROUNDOFF)
    small = constrained & (low <= SMALL_LEVEL_BUDGETS * budget)
    shrinkable = constrained & ~small
    if np.any(np.where(shrinkable, tight > low + np.sqrt(UNIT_ROUNDOFF) * (1 + low), False)):
        return Interior(matrix, 0.0, False)  # not certified in float to begin with: nothing to prove
    needing = shrinkable & (tight + budget > low)
    if not needing.any():
        return Interior(matrix, 0.0, _small_pairs_hold(matrix, small))
    factor = float(np.min((low[needing] - budget[needing]) / tight[needing]))
    centre = np.where(used, top, 0.0)  # an unused (all-zero) column stays zero, without -inf + inf on the way
    moved = np.where(positive, np.exp(centre + factor * (logs - centre)), 0.0)
    moved = _restore_row_sums(moved)
    return Interior(moved, 1.0 - factor, _small_pairs_hold(moved, small))


def _restore_row_sums(matrix: np.ndarray) -> np.ndarray:
    """Scale columns (every ratio kept) so that the rows sum to 1 again, when that brings them closer.

    Rows with equal sums (a symmetric design) share one factor; otherwise least squares.
    """
    sums = matrix.sum(axis=1)
    deficit = 1.0 - sums
    if np.ptp(sums) <= 4 * UNIT_ROUNDOFF * matrix.shape[1]:
        step = np.full(matrix.shape[1], 1.0 / sums.mean() - 1.0)
    else:
        step, *_ = scipy.linalg.lstsq(matrix, deficit, lapack_driver="gelsy", check_finite=False)  # QR: 10x SVD's speed
    scaled = matrix * (1.0 + step)
    if np.any(1.0 + step <= 0) or np.abs(1.0 - scaled.sum(axis=1)).max() >= np.abs(deficit).max():
        return matrix
    return scaled


def _small_pairs_hold(matrix: np.ndarray, small: np.ndarray) -> bool:
    """Pairs with a level below their error budget: ``Q[x, y] <= Q[x', y]`` in every column, compared exactly."""
    rows, others = np.nonzero(small)
    if small.shape[1] == 1:  # row-constant levels: the partners are not known here
        return rows.size == 0
    return all(np.all(matrix[x] <= matrix[x_prime]) for x, x_prime in zip(rows.tolist(), others.tolist()))
