"""A float filter with a proven error bound for exact E-LDP certification.

Exact certification (Definition 2 of context-aware-ldp.md, in the per-output
form of :mod:`designer.certify`) decides, for every pair ``(x, x')`` with a
finite level, whether ``T[x, x'] = max_y log(Q[x, y] / Q[x', y]) <= E[x, x']``.
Deciding all ``k^2 m`` comparisons in rational arithmetic takes about a minute
at ``k = m = 1000``. This module decides almost every pair in floating point
with a rigorous bound on the rounding error, and leaves only the pairs within
that bound of their level to exact arithmetic:

1. Each entry ``Q[x, y] = p / q`` gets a float log ``L[x, y] = fl(l(p) - l(q))``
   where ``l`` are Arb logs of the integers rounded to floats
   (:func:`designer.exact.integer_logs`: ``|l(n) - log n| <= 2^-51 |l(n)| + R``).
   Hence ``|L[x, y] - log Q[x, y]| <= err[x, y]`` with
   ``err = 2^-51 (|l(p)| + |l(q)|) + 2 R + 2^-52 |L|`` (the last term is the
   rounding of the IEEE subtraction, at most ``2^-53`` of its exact result).
   A channel read lazily from decimals (:class:`~designer.exact.DecimalCells`) uses
   the cells' correctly rounded floats instead (:func:`decimal_logs`:
   ``err = 2^-51 |L| + R + 2^-52``), and its rationals are read only for the
   candidate cells of the pairs left undecided (:func:`find_candidates`).
2. The max-plus product ``D[x, x'] = max_y fl(L[x, y] - L[x', y])``
   (:func:`solvers.maxplus.max_log_difference`) differs from ``T[x, x']`` by at
   most ``w[x, x'] = err_x + err_x' + 2^-52 (mag_x + mag_x')``, where ``err_x``
   and ``mag_x`` are the maxima of ``err`` and ``|L|`` over the positive entries
   of row ``x``: every difference is within that bound of the exact log-ratio,
   and a maximum of perturbed values moves by at most the perturbation. The
   window used is ``w`` times ``1 + 2^-20``, which absorbs the rounding of the
   few float operations that compute ``w`` itself.
3. A level is enclosed by its float widened by two units in the last place
   (``PrivacyMatrix.epsilon`` holds ``float(ExactEpsilon)``, which is faithful:
   see :meth:`designer.exact.ExactEpsilon.__float__`); a finite level beyond the
   double range holds the largest double, whose widening reaches ``+inf``, so such
   a pair is certified (any finite log-ratio is far below) or a support break, never
   unconstrained.
4. A pair is *certified* when ``D + w < low`` and *violated* when ``D - w > high``
   (each sum rounded outward with ``nextafter``); otherwise it is *undecided* and
   goes to exact rationals. Zero patterns are decided exactly (a zero entry is
   the sentinel :data:`~solvers.maxplus.ZERO_LOG`, so a positive entry over a
   zero gives ``+inf``).

Columns where both rows are zero contribute ``0`` to ``D`` and nothing to ``T``;
they can only raise ``D``, so the certified test stays sound, and a violation
needs ``D > w > 0``, which only a column with both entries positive can give.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.exact import DecimalCells, ExactEpsilon, integer_logs
from solvers.maxplus import ZERO_LOG, max_log_difference

#: ``w`` is scaled by this factor to absorb the rounding of its own computation.
WINDOW_SAFETY = 1.0 + 2.0**-20
#: Precision of the Arb logs of a decimal channel's floats: the radius ``R`` it adds to every
#: error (at most ``k m 2^-80 max|log|``, about 1e-17 at ``k = m = 1000``) is far below the
#: ``2^-52`` each error holds anyway, and the logs take half the time of 128 bits.
FLOAT_LOG_BITS = 80

CERTIFIED, VIOLATED, UNDECIDED, SUPPORT_BREAK, UNCONSTRAINED = 0, 1, 2, 3, 4
_ONE = Fraction(1)


@dataclass(frozen=True)
class RationalLogs:
    """Float logs of a rational channel with a rigorous per-row error bound.

    Attributes
    ----------
    values : ndarray (k, m)
        ``fl(log Q[x, y])``; :data:`~solvers.maxplus.ZERO_LOG` where ``Q[x, y] = 0``.
    positive : ndarray of bool (k, m)
    row_error : ndarray (k,)
        ``err_x``: bound on ``|values - log Q|`` over the positive entries of row x.
    row_magnitude : ndarray (k,)
        ``mag_x``: largest ``|values|`` over the positive entries of row x.
    parts : callable
        ``parts(rows, columns)``: the exact entries at those cells as two object
        arrays of Python integers, numerators and denominators (read only when asked for).
    """

    values: np.ndarray
    positive: np.ndarray
    row_error: np.ndarray
    row_magnitude: np.ndarray
    parts: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def rational_logs(matrix: np.ndarray) -> RationalLogs:
    """Rigorous float logs of a non-negative matrix of :class:`~fractions.Fraction` (step 1).

    Arb logs are computed once per distinct numerator and once per distinct
    denominator (a channel written as counts over row totals has few).
    """
    shape = matrix.shape
    flat = matrix.ravel().tolist()
    numerators = [value.numerator for value in flat]
    denominators = [value.denominator for value in flat]
    # numerators and denominators apart: a decimal channel has about k*m distinct numerators
    # that fit 64 bits and a few denominators beyond 64 bits (powers of ten) that need hashing
    distinct, inverse = _distinct_integers(numerators)
    has_zero = distinct[0] == 0  # sorted, so a zero numerator comes first (index 0)
    integer_log, radius = integer_logs(distinct[1:] if has_zero else distinct)
    if has_zero:
        integer_log = np.concatenate([[0.0], integer_log])
    numerator_log = integer_log[inverse].reshape(shape)
    positive = (inverse != 0).reshape(shape) if has_zero else np.ones(shape, dtype=bool)
    distinct, inverse = _distinct_integers(denominators)
    integer_log, denominator_radius = integer_logs(distinct)
    denominator_log = integer_log[inverse].reshape(shape)
    radius = max(radius, denominator_radius)  # bounds both calls' errors
    values = numerator_log - denominator_log
    error = 2.0**-51 * (np.abs(numerator_log) + np.abs(denominator_log)) + 2 * radius + 2.0**-52 * np.abs(values)
    values[~positive] = ZERO_LOG
    row_error = np.where(positive, error, 0.0).max(axis=1)
    row_magnitude = np.where(positive, np.abs(values), 0.0).max(axis=1)
    numerators, denominators = _object_array(numerators, shape), _object_array(denominators, shape)
    return RationalLogs(
        values=values,
        positive=positive,
        row_error=row_error,
        row_magnitude=row_magnitude,
        parts=lambda rows, columns: (numerators[rows, columns], denominators[rows, columns]),
    )


def decimal_logs(floats: np.ndarray, cells: DecimalCells) -> RationalLogs:
    """Step 1 for a channel read lazily: rigorous logs from the cells' floats, rationals on demand.

    Each positive float ``v`` is a normal double within ``2^-53 v`` of the written
    value ``q`` (the guarantee of :class:`~designer.exact.DecimalCells`), so
    ``|log v - log q| <= -log(1 - 2^-53) < 2^-52``; its Arb log rounded to a float
    (:func:`designer.exact.integer_logs`, exact for a double) adds at most
    ``2^-51 |L| + R``. Hence ``err = 2^-51 |L| + R + 2^-52``. A float is 0 exactly
    when the cell is written as zero, so the zero pattern is exact.
    """
    positive = floats > 0
    distinct, inverse = np.unique(floats[positive], return_inverse=True)
    distinct_log, radius = integer_logs(distinct.tolist(), FLOAT_LOG_BITS)
    values = np.full(floats.shape, ZERO_LOG)
    values[positive] = distinct_log[inverse.ravel()]
    error = np.where(positive, 2.0**-51 * np.abs(values) + radius + 2.0**-52, 0.0)
    row_magnitude = np.where(positive, np.abs(values), 0.0).max(axis=1)

    return RationalLogs(values, positive, error.max(axis=1), row_magnitude, cells.parts)


@dataclass(frozen=True)
class Screen:
    """Outcome of the float filter for every pair.

    Attributes
    ----------
    status : ndarray of int8 (k, k)
        :data:`CERTIFIED`, :data:`VIOLATED`, :data:`UNDECIDED`,
        :data:`SUPPORT_BREAK` (a positive entry over a zero, finite level) or
        :data:`UNCONSTRAINED` (infinite level, or the diagonal).
    difference : ndarray (k, k)
        ``D`` (``+inf`` where a positive entry meets a zero).
    witness : ndarray of int (k, k)
        A column attaining ``D``.
    window : ndarray (k, k)
        ``w`` (times :data:`WINDOW_SAFETY`).
    several : ndarray of bool (k, k)
        Whether a column besides the witness has a float log-ratio at least
        ``D - 2 w`` (otherwise the witness is the only candidate of :func:`find_candidates`).
    """

    status: np.ndarray
    difference: np.ndarray
    witness: np.ndarray
    window: np.ndarray
    several: np.ndarray


def screen_pairs(logs: RationalLogs, allowed: np.ndarray) -> Screen:
    """Steps 2-4: classify every pair against the float levels ``allowed`` (faithful floats)."""
    error, magnitude = logs.row_error, logs.row_magnitude
    window = (error[:, None] + error[None, :] + 2.0**-52 * (magnitude[:, None] + magnitude[None, :])) * WINDOW_SAFETY
    difference, witness, several = max_log_difference(logs.values, slack=2 * window)
    low = np.nextafter(np.nextafter(allowed, -np.inf), -np.inf)
    with np.errstate(over="ignore"):  # a level beyond the double range: its enclosure reaches inf
        high = np.nextafter(np.nextafter(allowed, np.inf), np.inf)
    with np.errstate(invalid="ignore"):  # inf - inf where a support break meets the window
        upper = np.nextafter(difference + window, np.inf)
        lower = np.nextafter(difference - window, -np.inf)
    status = np.full(allowed.shape, UNDECIDED, dtype=np.int8)
    status[upper < low] = CERTIFIED
    status[lower > high] = VIOLATED
    status[np.isinf(difference)] = SUPPORT_BREAK
    status[np.isinf(allowed)] = UNCONSTRAINED
    np.fill_diagonal(status, UNCONSTRAINED)
    return Screen(status=status, difference=difference, witness=witness, window=window, several=several)


@dataclass(frozen=True)
class Candidates:
    """Columns that may attain a pair's exact maximal ratio, for a list of pairs.

    Only columns whose float log-ratio is within ``2 w`` of ``D`` can attain the
    exact maximum (it is at least ``D - w``, and each float is within ``w`` of its
    exact value). When the exact maximum is below 0 the floor may hide it, but
    then every candidate's ratio is below 1 as well and the pair's tight level is
    0 either way. Sorted by pair; ``Q[x, y] / Q[x', y] = top / bottom``.
    """

    pair: np.ndarray
    column: np.ndarray
    top: np.ndarray
    bottom: np.ndarray
    start: np.ndarray  # start[i]:start[i + 1] are the candidates of pair i

    def best(self, pair: int) -> tuple[Fraction, int] | None:
        """The exact maximal ratio of one pair and its column (``None``: no candidate)."""
        best: tuple[Fraction, int] | None = None
        for index in range(self.start[pair], self.start[pair + 1]):
            ratio = Fraction(self.top[index], self.bottom[index])
            if best is None or ratio > best[0]:
                best = (ratio, int(self.column[index]))
        return best


def find_candidates(logs: RationalLogs, screen: Screen, rows: np.ndarray, others: np.ndarray) -> Candidates:
    """The :class:`Candidates` of the pairs ``(rows[i], others[i])`` (sorted by row).

    A pair with no other column near its witness (:attr:`Screen.several`) has its
    witness alone; the rows of the other pairs are scanned, vectorised one row ``x`` at a
    time. The ratios are exact products of the entries' integers
    (``top = p_xy q_x'y``, ``bottom = q_xy p_x'y``), read only for the candidates.
    """
    floor = screen.difference[rows, others] - 2 * screen.window[rows, others]
    bounds = np.searchsorted(rows, np.arange(logs.values.shape[0] + 1))
    alone = ~screen.several[rows, others]  # found by the screen with the same floats: the witness only
    columns = np.where(alone, screen.witness[rows, others], -1)  # the candidate of a pair that has exactly one
    extra: list[tuple[np.ndarray, np.ndarray]] = []  # (pair, column) of pairs with several

    def scan(x: int) -> None:
        first, last = bounds[x], bounds[x + 1]
        block = np.take(logs.values, others[first:last], axis=0)
        np.subtract(logs.values[x], block, out=block)
        near = block >= floor[first:last, None]
        counts = np.count_nonzero(near, axis=1)
        single = np.flatnonzero(counts == 1)
        columns[first + single] = near[single].argmax(axis=1)
        several = np.flatnonzero(counts > 1)
        if several.size:
            found_pair, found_column = np.nonzero(near[several])
            extra.append((first + several[found_pair], found_column))

    row_list = np.unique(rows[~alone]).tolist()  # rows with a pair of several candidates are scanned
    workers = min(os.cpu_count() or 1, len(row_list))
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:  # NumPy releases the GIL
            list(pool.map(scan, row_list))
    else:
        for x in row_list:
            scan(x)
    alone = np.flatnonzero(columns >= 0)
    pair_index = np.concatenate([alone] + [pair for pair, _ in extra])
    column = np.concatenate([columns[alone]] + [found for _, found in extra])
    order = np.argsort(pair_index, kind="stable")
    pair_index, column = pair_index[order], column[order]
    # a column where both rows are zero has float ratio 0 and may pass the floor: drop it
    # (x positive over x' zero would be a support break, never in this list)
    keep = logs.positive[rows[pair_index], column]
    pair_index, column = pair_index[keep], column[keep]
    x, x_prime = rows[pair_index], others[pair_index]
    numerator, denominator = logs.parts(x, column)
    numerator_prime, denominator_prime = logs.parts(x_prime, column)
    return Candidates(
        pair=pair_index,
        column=column,
        top=numerator * denominator_prime,
        bottom=denominator * numerator_prime,
        start=np.searchsorted(pair_index, np.arange(len(rows) + 1)),
    )


def exact_signs(candidates: Candidates, ratios: tuple[np.ndarray, np.ndarray, np.ndarray],
                level: Callable[[int], ExactEpsilon]) -> np.ndarray:
    """Exact sign of ``E - max(0, max_y log(Q[x, y] / Q[x', y]))`` for each pair (finite levels).

    ``ratios``: ``exp`` of each pair's level where it is rational (``log(r)``, or 0 with
    ``r = 1``), as :meth:`designer.spec.PrivacyMatrix.exact_exp_ratios` gives them; those are
    compared with every candidate ratio at once in integer arithmetic:
    ``sign(r_num * bottom - top * r_den)``. Any other level (``level(pair)``) has an
    irrational ``exp``: the pair's exact maximal ratio is compared in Arb
    (:meth:`~designer.exact.ExactEpsilon.gap`), one pair at a time.
    """
    rational, numerator, denominator = ratios
    sign = np.where(rational, numerator != denominator, 1).astype(np.int8)  # the sign of E itself
    chosen = rational[candidates.pair]
    if chosen.any():
        pair = candidates.pair[chosen]
        difference = numerator[pair] * candidates.bottom[chosen] - candidates.top[chosen] * denominator[pair]
        per_candidate = (difference > 0).astype(np.int8) - (difference < 0).astype(np.int8)
        np.minimum.at(sign, pair, per_candidate)
    for pair in np.flatnonzero(~rational).tolist():
        best = candidates.best(pair)
        if best is not None and best[0] > 1:
            gap = level(pair).gap(best[0])
            sign[pair] = min(sign[pair], (gap > 0) - (gap < 0))
    return sign


def _distinct_integers(values: list[int]) -> tuple[list[int], np.ndarray]:
    """Sorted distinct integers and, for each input, its index among them."""
    try:
        array = np.array(values, dtype=np.int64)
    except OverflowError:  # integers beyond 64 bits: hash them
        distinct = sorted(set(values))
        index = {value: position for position, value in enumerate(distinct)}
        return distinct, np.fromiter(map(index.__getitem__, values), dtype=np.intp, count=len(values))
    distinct, inverse = np.unique(array, return_inverse=True)
    return distinct.tolist(), inverse.ravel()


def _object_array(values: list[int], shape: tuple[int, ...]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array.reshape(shape)
