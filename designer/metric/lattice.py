"""The released noise of the E-LDP matrix mechanism: discrete Laplace on dyadic lattices.

metric-ldp-range-counting.md, Section III-A, with the continuous Laplace noise
replaced by exact discrete noise (see :mod:`designer.metric.strategy` for why).
Row k of a strategy A lies on the dyadic lattice ``gamma_k Z``, ``gamma_k =
2^g_k`` (:func:`designer.metric.strategy_matrices.snap_to_lattice`; a noisy row never finer than
``2^(floor(log2 s_k) - 20)``), and a user with value x reports
``r_k = gamma_k (C[k, x] + Z_k)`` with integer centres ``C = A / gamma`` and
``Z_k`` discrete Laplace of rational rate ``rho_k`` (``gamma_k / s_k`` rounded
down to 32 significant bits, :func:`designer.noise.rational_rate`).

Privacy guarantee (Proposition 1 for what is released): E-LDP if and only if
``L(x, x') = sum_k rho_k |C[k, x] - C[k, x']| <= E(x, x')`` for every pair;
:class:`LatticeNoise` evaluates L on any list of pairs from the rows where the
two columns differ (:meth:`designer.metric.strategy_matrices.StrategyMatrix.difference_pattern`),
in floating point or exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.metric.strategy_matrices import PrefixStrategyMatrix, StrategyMatrix
from designer.noise import discrete_laplace_variance, rational_rate

#: A noisy row's lattice step is at least ``2^(floor(log2 s_k) - NOISE_LATTICE_BITS)`` (:func:`lattice_noise`).
NOISE_LATTICE_BITS = 20


@dataclass(frozen=True)
class LatticeNoise:
    """The noise of a strategy as released (see module docstring).

    Row k reports ``2^g_k (C[k, x] + Z_k)`` with ``Z_k`` discrete Laplace of rate
    ``rho_k`` (rows with noise), ``2^g_k C[k, x]`` (``s_k = 0``), or 0 (``s_k = inf``);
    ``C[k, x] = A[k, x] / 2^g_k`` rounded to the nearest integer (exact unless the
    noise lattice is coarser than the row's own, see :func:`lattice_noise`).

    Attributes
    ----------
    matrix : StrategyMatrix
        The designed A (on its rows' lattices).
    exponents : int64 array (p,)
        ``g_k``: row k is released on ``2^g_k Z``.
    rates : tuple of Fraction or None, length p
        ``rho_k`` for rows with noise; ``None`` for rows without (``s_k = 0`` or ``inf``).
    unused : bool array (p,)
        Rows with ``s_k = inf`` (they report 0).
    """

    matrix: StrategyMatrix
    exponents: np.ndarray
    rates: tuple
    unused: np.ndarray

    @property
    def noisy(self) -> np.ndarray:
        """Rows that carry discrete Laplace noise."""
        return np.array([rate is not None for rate in self.rates], dtype=bool)

    @property
    def exact(self) -> np.ndarray:
        """Rows reported without noise (``s_k = 0``)."""
        return ~self.noisy & ~self.unused

    def float_rates(self) -> np.ndarray:
        """``rho_k`` as doubles (``inf`` on rows without noise, 0 on unused rows)."""
        rates = np.array([float(rate) if rate is not None else np.inf for rate in self.rates])
        return np.where(self.unused, 0.0, rates)

    def variances(self) -> np.ndarray:
        """``V_k = 4^g_k * 2 e^-rho_k / (1 - e^-rho_k)^2`` per row (0 without noise)."""
        rates = np.array([float(rate) if rate is not None else np.inf for rate in self.rates])
        return np.where(self.noisy, np.ldexp(discrete_laplace_variance(rates), 2 * self.exponents), 0.0)

    def centres(self, columns: np.ndarray | None = None) -> np.ndarray:
        """Integer centres ``C[:, columns]`` (all columns by default), int64 (p, len(columns))."""
        columns = np.arange(self.matrix.shape[1]) if columns is None else np.asarray(columns, dtype=np.int64)
        return np.rint(np.ldexp(self.matrix.columns(columns), -self.exponents[:, None])).astype(np.int64)

    def released_matrix(self) -> np.ndarray:
        """The released A, ``2^g_k C[k, :]`` (dense; small sizes)."""
        return np.ldexp(self.centres().astype(float), self.exponents[:, None])

    def pair_differences(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pair, row, |C[row, first] - C[row, second]|)`` over the non-zero differences (int64)."""
        pairs, rows = self.matrix.difference_pattern(np.asarray(first), np.asarray(second))
        shift = -self.exponents[rows]
        left = np.rint(np.ldexp(self.matrix.entries(rows, first[pairs]), shift))
        right = np.rint(np.ldexp(self.matrix.entries(rows, second[pairs]), shift))
        values = np.abs(left - right).astype(np.int64)
        keep = values > 0  # the noise lattice may round two different entries to one centre
        return pairs[keep], rows[keep], values[keep]

    def pair_losses(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``L`` per pair in floating point (``inf`` when a row without noise separates it) and the number of terms."""
        pairs, rows, values = self.pair_differences(first, second)
        rates = self.float_rates()[rows]
        with np.errstate(invalid="ignore"):
            loss = np.bincount(pairs, weights=values * rates, minlength=len(first))
        blocked = np.bincount(pairs, weights=np.isinf(rates), minlength=len(first)) > 0
        return np.where(blocked, np.inf, loss), np.bincount(pairs, minlength=len(first))

    def rate_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """Numerators and denominators of the rates of the noisy rows (int64, or Python ints if larger)."""
        fractions = [rate for rate in self.rates if rate is not None]
        numerators = np.array([rate.numerator for rate in fractions], dtype=object)
        denominators = np.array([rate.denominator for rate in fractions], dtype=object)
        if all(v < 2**62 for v in numerators) and all(v < 2**62 for v in denominators):
            return numerators.astype(np.int64), denominators.astype(np.int64)
        return numerators, denominators

    def integer_rates(self) -> tuple[np.ndarray, int] | None:
        """Every rate as ``w_k / 2^D`` over one common denominator: int64 ``w`` (0 on rows without noise) and D.

        None when a numerator reaches ``2^62`` (then use exact rationals).
        """
        noisy = np.flatnonzero(self.noisy)
        weights = np.zeros(len(self.rates), dtype=np.int64)
        if noisy.size == 0:
            return weights, 0
        exponent = max(self.rates[k].denominator.bit_length() - 1 for k in noisy)
        scaled = [self.rates[k].numerator << (exponent - (self.rates[k].denominator.bit_length() - 1)) for k in noisy]
        if max(scaled) >= 2**62:
            return None
        weights[noisy] = scaled
        return weights, exponent

    def scaled_pair_losses(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Exact ``2^D L(x, y)`` per pair as int64 integers, with the common exponent D.

        Every rate is ``q / 2^d``; over the common denominator ``2^D`` the loss is the
        integer ``sum_k q_k 2^(D - d_k) |C[k, x] - C[k, y]|``. Returns None when a row
        without noise separates a pair or a sum could leave int64 (then use
        :meth:`exact_privacy_loss`).
        """
        pairs, rows, values = self.pair_differences(first, second)
        integer = self.integer_rates()
        if integer is None or np.any(self.exact[rows]):
            return None
        weights, exponent = integer
        bound = np.bincount(pairs, weights=weights[rows].astype(float) * values, minlength=len(first))
        if bound.max(initial=0.0) >= 2.0**62:
            return None
        totals = np.zeros(len(first), dtype=np.int64)
        np.add.at(totals, pairs, weights[rows] * values)
        return totals, exponent

    def scaled_loss_matrix(self) -> tuple[np.ndarray, int, np.ndarray] | None:
        """Exact ``2^D L`` for every pair as an int64 ``m x m`` matrix, D, and where a row without noise separates.

        ``L_m`` on the integer lattice uses prefix sums of the integer rates
        (``L(x, y) = sum_{x <= k < y} rho_k``: O(m^2)); other strategies add one
        row at a time (O(p m^2)). None if a sum could leave int64.
        """
        integer = self.integer_rates()
        if integer is None:
            return None
        weights, exponent = integer
        centres = self.centres()
        spread = centres.max(axis=1, initial=0) - centres.min(axis=1, initial=0)
        if float(np.sum(weights.astype(float) * spread)) >= 2.0**62:
            return None
        m = centres.shape[1]
        blocked = np.zeros((m, m), dtype=bool)
        for k in np.flatnonzero(self.exact & (spread > 0)):
            blocked |= centres[k][:, None] != centres[k][None, :]
        if isinstance(self.matrix, PrefixStrategyMatrix) and np.array_equal(centres, self.matrix.dense()):
            prefix = np.concatenate([[0], np.cumsum(weights)])
            return np.abs(prefix[:, None] - prefix[None, :]), exponent, blocked
        totals = np.zeros((m, m), dtype=np.int64)
        for k in np.flatnonzero(weights):
            totals += weights[k] * np.abs(centres[k][:, None] - centres[k][None, :])
        return totals, exponent, blocked

    def exact_privacy_loss(self, x: int, y: int) -> Fraction | float:
        """``L(x, y)`` as an exact rational (``inf`` when a row without noise separates them)."""
        pairs, rows, values = self.pair_differences(np.array([x]), np.array([y]))
        total = Fraction(0)
        for row, value in zip(rows, values):
            if self.unused[row]:
                continue
            if self.rates[row] is None:
                return math.inf
            total += self.rates[row] * int(value)
        return total

    def privacy_loss(self) -> np.ndarray:
        """The dense ``m x m`` matrix of ``L(x, x')`` in floating point, one row of A at a time.

        Relative rounding below ``(p + 1) 2^-53``; ``inf`` where a row without noise separates.
        """
        centres = self.centres()
        rates = self.float_rates()
        m = centres.shape[1]
        loss = np.zeros((m, m))
        for row, rate in zip(centres, rates):
            if rate == 0:
                continue
            difference = np.abs(row[:, None] - row[None, :])
            if np.isinf(rate):
                loss[difference > 0] = np.inf
            else:
                loss += difference.astype(float) * rate
        return loss


def lattice_noise(matrix: StrategyMatrix, noise_scales: np.ndarray) -> LatticeNoise:
    """The released noise for A and the designed Laplace scales s (see :class:`LatticeNoise`).

    Lattice of row k: the matrix's own (:meth:`StrategyMatrix.lattice_exponents`,
    at most 52 bits), coarsened for a noisy row to at least
    ``2^(floor(log2 s_k) - 20)`` (more than ``s_k 2^-21``), so the noise spans at
    most about 2^21 lattice steps. Integer and dyadic rows are never moved by
    this (their lattice is coarser already unless ``s_k >= 2^20``); a finer row
    is rounded to the nearest lattice point (each entry moves by at most
    ``s_k 2^-21``), and the rounded row is what users report: privacy is
    decided on it exactly. ``rho_k = gamma_k / s_k`` rounded down to 32
    significant bits (exact rational arithmetic on the doubles ``s_k``).
    """
    scales = np.asarray(noise_scales, dtype=float).ravel()
    if scales.shape[0] != matrix.shape[0]:
        raise ValueError(f"{scales.shape[0]} noise scales for {matrix.shape[0]} rows")
    noisy = (scales > 0) & np.isfinite(scales)
    resolution = np.frexp(np.where(noisy, scales, 1.0))[1].astype(np.int64) - 1 - NOISE_LATTICE_BITS
    exponents = matrix.lattice_exponents()
    exponents = np.where(noisy, np.maximum(exponents, resolution), exponents)
    cache: dict[tuple[int, float], Fraction] = {}  # many rows share a scale (m = 65,536 prefix rows: one)
    rates = []
    for g, s in zip(exponents.tolist(), scales.tolist()):
        if not 0 < s < math.inf:
            rates.append(None)
            continue
        if (g, s) not in cache:
            cache[(g, s)] = rational_rate(Fraction(2) ** g / Fraction(s))
        rates.append(cache[(g, s)])
    return LatticeNoise(matrix, exponents.astype(np.int64), tuple(rates), np.isinf(scales))
