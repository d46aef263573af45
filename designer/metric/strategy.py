"""The matrix mechanism under E-LDP (metric-ldp-range-counting.md, Section III).

A strategy ``(A, B, s)``: in the paper every user with value x reports
``A h_x + Lap(s)`` (``h_x`` the indicator of x, independent Laplace noise of
scale ``s_k`` on entry k); the collector answers the workload ``W c`` as
``B sum_i r_i`` with ``B A = W``. The design (problem (1)) works with the
Laplace scales s; what is released is the discrete noise described next.

Deployed noise (no floating-point leak). Continuous Laplace noise cannot be
released as doubles without leaking the input through its low-order bits
(Mironov, CCS 2012; ``tests/test_float_laplace_attack.py`` runs that attack).
:meth:`Strategy.respond` therefore releases the *discrete* analogue
(:class:`LatticeNoise`): row k of A lies on the dyadic lattice ``gamma_k Z``,
``gamma_k = 2^g_k`` the coarsest power of two containing the row exactly (every
double is a dyadic rational; a row spanning more than 52 bits is first snapped
to 52 bits below its largest entry, i.e. moved by at most one unit in the last
place of that entry), but never finer than ``2^(floor(log2 s_k) - 20)`` on a
noisy row (a finer row is rounded to it, moving entries by at most
``s_k 2^-21``; the rounded row is the released strategy and privacy is
decided on it), and the report is
``r_k = gamma_k (C[k, x] + Z_k)``, ``C = A / gamma`` exact integers, ``Z_k``
discrete Laplace with rate ``rho_k`` (:func:`designer.noise.discrete_laplace`,
exact sampler from uniform integers, ``secrets`` by default). The rate is
``gamma_k / s_k`` rounded *down* to 32 significant bits
(:func:`designer.noise.rational_rate`): a rational, never less noise than the
designed Laplace scale ``s_k``; the sensitivity is computed on the released
integer centres, so it is exact.

Privacy guarantee (Proposition 1, for the released values): the report is
E-LDP if and only if
``L(x, x') = sum_k rho_k |C[k, x] - C[k, x']| <= E(x, x')`` for every pair. For
a row with rate rho the log-ratio ``rho (|z - c'| - |z - c|)`` of the two
discrete Laplace probabilities is at most ``rho |c - c'|`` and equals it for z
beyond both centres, independently per row, so the supremum is exactly L:
:func:`certify_strategy` decides E-LDP of what is released, exactly (rational
arithmetic where floating point cannot decide). With the continuous scales,
``L <= sum_k |A[k, x] - A[k, x']| / s_k`` (Proposition 1 as printed), since
``rho_k <= gamma_k / s_k``. Conventions: ``s_k = 0`` (no noise) is allowed when
row k of A is constant on every constrained pair, otherwise the loss is
infinite; ``s_k = inf`` marks a row that the reconstruction does not use (it
reports 0 and costs no privacy).

Error (Proposition 2 with the released noise): the noise is independent, zero
mean, with variance ``V_k = gamma_k^2 * 2 e^-rho_k / (1 - e^-rho_k)^2`` on row k,
so ``E||B sum_i r_i - W c||^2 = n sum_k V_k ||B[:, k]||^2`` (:meth:`Strategy.error`).
``V_k < 2 s_k^2`` (Laplace of scale ``s_k``; :meth:`Strategy.laplace_error` is the
paper's ``2 n sum_k s_k^2 ||B[:, k]||^2``, the objective of problem (1)).

Design (problem (1)): for a fixed strategy matrix A the problem is convex in
``t = 1/s``: minimise ``sum_k ||B[:, k]||^2 / t_k^2`` subject to the linear
constraints ``|A (h_x - h_x')|^T t <= E(x, x')``. The loss L is a pseudo-metric
(a weighted L1 distance between columns of A), so constraints on the
non-redundant pairs of E (:meth:`designer.spec.PrivacyMatrix.nonredundant_pairs`,
which imply every other pair through paths) imply all of them.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

from designer.noise import MAX_MAGNITUDE, discrete_laplace, discrete_laplace_variance, rational_rate
from designer.spec import PrivacyMatrix

#: Default absolute slack of :func:`certify_strategy` on ``L(x, x') <= E(x, x')``: none (the decision is exact).
STRATEGY_TOLERANCE = 0.0
#: Bits of a strategy row kept on its lattice (a double has 53; see :func:`snap_to_lattice`).
LATTICE_BITS = 52
#: A noisy row's lattice step is at least ``2^(floor(log2 s_k) - NOISE_LATTICE_BITS)`` (:func:`lattice_noise`).
NOISE_LATTICE_BITS = 20
#: Relative accuracy requested from the conic solver in :func:`optimal_noise_scales`.
SOLVER_TOLERANCE = 1e-10


# ------------------------------------------------------------------ lattice noise
def snap_to_lattice(strategy_matrix: np.ndarray, bits: int = LATTICE_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Each row of A on its coarsest dyadic lattice ``2^g Z`` spanning at most ``bits`` bits.

    Every double is ``M 2^e`` with an odd integer M, so row k lies exactly on
    ``2^g_k Z`` with ``g_k`` the smallest such e over its non-zero entries. When
    the row's largest entry needs more than ``bits`` bits on that lattice, g_k is
    raised to ``top - bits`` (``|A[k, :]| < 2^top``) and the row rounded to it:
    each entry moves by at most ``2^(top - bits - 1)``, one unit in the last place
    of the largest entry for ``bits = 52``. Integer and dyadic strategies (prefix,
    identity, 0/1 CSV files) never move. All-zero rows get ``g = 0``.

    Returns
    -------
    (snapped A, g) : float array (p, m) on the lattices, int64 array (p,)
    """
    A = np.atleast_2d(np.asarray(strategy_matrix, dtype=float))
    mantissas, exponents = np.frexp(A)  # A = mantissa 2^exponent, 0.5 <= |mantissa| < 1
    integers = np.abs(np.ldexp(mantissas, 53)).astype(np.int64)  # A = +-integers 2^(exponent - 53)
    lowest = np.frexp((integers & -integers).astype(float))[1] - 1  # trailing zero bits
    nonzero = A != 0
    finest = np.where(nonzero, exponents - 53 + lowest, 10**6).min(axis=1, initial=10**6)
    top = np.where(nonzero, exponents, -(10**6)).max(axis=1, initial=-(10**6))
    lattice = np.where(nonzero.any(axis=1), np.maximum(finest, top - bits), 0).astype(np.int64)
    snapped = np.ldexp(np.rint(np.ldexp(A, -lattice[:, None])), lattice[:, None])
    return snapped, lattice


@dataclass(frozen=True)
class LatticeNoise:
    """The noise of a strategy as released: discrete Laplace on dyadic lattices (see module docstring).

    Row k reports ``2^g_k (C[k, x] + Z_k)`` with ``Z_k`` discrete Laplace of rate
    ``rho_k`` (rows with noise), ``2^g_k C[k, x]`` (``s_k = 0``), or 0 (``s_k = inf``).

    Privacy guarantee: E-LDP iff ``sum_k rho_k |C[k, x] - C[k, x']| <= E(x, x')``
    for all pairs (``rho_k = inf`` on rows without noise), decided by
    :func:`certify_strategy`.

    Attributes
    ----------
    exponents : int64 array (p,)
        ``g_k``: row k lives on ``2^g_k Z``.
    centres : int64 array (p, m)
        ``C = A / 2^g`` (exact integers, ``|C| <= 2^52``).
    rates : tuple of Fraction or None, length p
        ``rho_k`` for rows with noise; ``None`` for rows without (``s_k = 0`` or ``inf``).
    unused : bool array (p,)
        Rows with ``s_k = inf`` (they report 0).
    """

    exponents: np.ndarray
    centres: np.ndarray
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

    def variances(self) -> np.ndarray:
        """``V_k = 4^g_k * 2 e^-rho_k / (1 - e^-rho_k)^2`` per row (0 without noise)."""
        rates = np.array([float(rate) if rate is not None else np.inf for rate in self.rates])
        return np.where(self.noisy, np.ldexp(discrete_laplace_variance(rates), 2 * self.exponents), 0.0)

    def rate_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """Numerators and denominators of the rates of the noisy rows (int64, or Python ints if larger)."""
        fractions = [rate for rate in self.rates if rate is not None]
        numerators = np.array([rate.numerator for rate in fractions], dtype=object)
        denominators = np.array([rate.denominator for rate in fractions], dtype=object)
        if all(v < 2**62 for v in numerators) and all(v < 2**62 for v in denominators):
            return numerators.astype(np.int64), denominators.astype(np.int64)
        return numerators, denominators

    def privacy_loss(self) -> np.ndarray:
        """``L[x, x'] = sum_k rho_k |C[k, x] - C[k, x']|`` in floating point (relative error below ``(p + 1) 2^-53``)."""
        m = self.centres.shape[1]
        loss = np.zeros((m, m))
        for row, rate, unused in zip(self.centres, self.rates, self.unused):
            if unused:
                continue
            difference = np.abs(row[:, None] - row[None, :])
            if rate is None:
                loss[difference > 0] = np.inf
            else:
                loss += difference.astype(float) * float(rate)
        return loss

    def scaled_privacy_losses(self, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, int] | None:
        """Exact ``2^D L(x, y)`` for many pairs as int64 integers, with the common exponent D.

        Every rate is ``q / 2^d``; over the common denominator ``2^D`` the loss is the
        integer ``sum_k q_k 2^(D - d_k) |C[k, x] - C[k, y]|``. Returns None when a row
        without noise separates a pair or the sum could leave int64 (then use
        :meth:`exact_privacy_loss`).
        """
        noisy = [k for k, rate in enumerate(self.rates) if rate is not None]
        difference = np.abs(self.centres[:, xs] - self.centres[:, ys])
        if np.any(difference[self.exact]):
            return None
        if not noisy:
            return np.zeros(len(xs), dtype=np.int64), 0
        exponent = max(self.rates[k].denominator.bit_length() - 1 for k in noisy)
        numerators = [self.rates[k].numerator << (exponent - (self.rates[k].denominator.bit_length() - 1)) for k in noisy]
        largest = difference[noisy].max(axis=1, initial=0) if len(xs) else np.zeros(len(noisy), dtype=np.int64)
        bound = sum(int(n) * int(d) for n, d in zip(numerators, largest))
        if bound >= 2**63:
            return None
        weights, used = np.asarray(numerators, dtype=np.int64), difference[noisy]
        if bound < 2**53:  # every partial sum is an integer below 2^53: exact in doubles, and BLAS is fast
            return (weights.astype(float) @ used.astype(float)).astype(np.int64), exponent
        return weights @ used, exponent

    def exact_privacy_loss(self, x: int, y: int) -> Fraction | float:
        """``L(x, y)`` as an exact rational (``inf`` when a row without noise separates them)."""
        total = Fraction(0)
        for row, rate, unused in zip(self.centres, self.rates, self.unused):
            difference = abs(int(row[x]) - int(row[y]))
            if unused or difference == 0:
                continue
            if rate is None:
                return math.inf
            total += rate * difference
        return total


def lattice_noise(strategy_matrix: np.ndarray, noise_scales: np.ndarray) -> LatticeNoise:
    """The released noise for A and the designed Laplace scales s (see :class:`LatticeNoise`).

    Lattice of row k: the one of :func:`snap_to_lattice`, coarsened for a noisy
    row to at least ``2^(floor(log2 s_k) - 20)`` (more than ``s_k 2^-21``), so the
    noise spans at most about 2^21 lattice steps. Integer and dyadic rows are
    never moved by this (their lattice is coarser already unless ``s_k >= 2^20``);
    a finer row is rounded to the nearest lattice point (each entry moves by at
    most ``s_k 2^-21``), and the rounded row is what users report: privacy is
    decided on it exactly. ``rho_k = gamma_k / s_k`` rounded down to 32
    significant bits (exact rational arithmetic on the doubles ``s_k``).
    """
    snapped, exponents = snap_to_lattice(strategy_matrix)
    scales = np.asarray(noise_scales, dtype=float).ravel()
    noisy = (scales > 0) & np.isfinite(scales)
    resolution = np.frexp(np.where(noisy, scales, 1.0))[1].astype(np.int64) - 1 - NOISE_LATTICE_BITS
    exponents = np.where(noisy, np.maximum(exponents, resolution), exponents)
    centres = np.rint(np.ldexp(snapped, -exponents[:, None]))
    if np.abs(centres).max(initial=0.0) > 2**LATTICE_BITS:
        raise ValueError("the strategy matrix does not fit its lattice")  # unreachable after snapping
    rates = tuple(
        rational_rate(Fraction(2) ** int(g) / Fraction(float(s))) if 0 < s < math.inf else None
        for g, s in zip(exponents, scales)
    )
    return LatticeNoise(exponents, centres.astype(np.int64), rates, np.isinf(scales))


# ------------------------------------------------------------------ strategies
@dataclass(frozen=True)
class Strategy:
    """A strategy ``(A, B, s)`` of the E-LDP matrix mechanism (Section III-A).

    Attributes
    ----------
    strategy_matrix : ndarray (p, m)
        A as released, on its rows' lattices (:func:`lattice_noise`; unchanged
        for integer and dyadic matrices); users report ``A h_x`` plus noise.
    reconstruction_matrix : ndarray (q, p)
        B; the collector answers ``B sum_i r_i``.
    noise_scales : ndarray (p,)
        s, the designed Laplace scales (0 = no noise, inf = unused row).
    noise : LatticeNoise
        The noise actually released (derived from A and s).
    """

    strategy_matrix: np.ndarray
    reconstruction_matrix: np.ndarray
    noise_scales: np.ndarray
    noise: LatticeNoise = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        A = np.atleast_2d(np.asarray(self.strategy_matrix, dtype=float))
        B = np.atleast_2d(np.asarray(self.reconstruction_matrix, dtype=float))
        s = np.asarray(self.noise_scales, dtype=float).ravel()
        if B.shape[1] != A.shape[0] or s.shape[0] != A.shape[0]:
            raise ValueError(f"shapes do not match: A {A.shape}, B {B.shape}, s {s.shape}")
        if not np.all(s >= 0):
            raise ValueError("noise scales must be >= 0 (inf allowed)")
        if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
            raise ValueError("A and B must be finite")
        unused = np.isinf(s) & np.any(B != 0, axis=0)
        if unused.any():
            raise ValueError(f"row {int(np.flatnonzero(unused)[0])} has infinite noise but B uses it")
        noise = lattice_noise(A, s)
        object.__setattr__(self, "strategy_matrix", np.ldexp(noise.centres.astype(float), noise.exponents[:, None]))
        object.__setattr__(self, "reconstruction_matrix", B)
        object.__setattr__(self, "noise_scales", s)
        object.__setattr__(self, "noise", noise)

    @property
    def workload(self) -> np.ndarray:
        """``W = B A``, the workload this strategy answers."""
        return self.reconstruction_matrix @ self.strategy_matrix

    def privacy_loss(self) -> np.ndarray:
        """``L[x, x'] = sum_k rho_k |C[k, x] - C[k, x']|`` (Proposition 1 for the released noise), m x m.

        The exact E-LDP level of the report for each pair (see module docstring),
        evaluated in floating point; :func:`certify_strategy` decides exactly.
        """
        return self.noise.privacy_loss()

    def noise_variances(self) -> np.ndarray:
        """Variance of each released coordinate: ``gamma_k^2 * 2 e^-rho_k / (1 - e^-rho_k)^2`` (0 without noise)."""
        return self.noise.variances()

    def error(self, n: int) -> float:
        """Total expected squared error of the released mechanism, ``n sum_k V_k ||B[:, k]||^2`` (Proposition 2).

        Proposition 2's proof with the discrete noise: the reports are unbiased
        (``B A = W``) and the noise of the n users and p rows is independent with
        variances ``V_k`` (:meth:`noise_variances`).
        """
        costs = np.sum(self.reconstruction_matrix**2, axis=0)
        return float(n * np.sum(np.where(costs > 0, costs * self.noise_variances(), 0.0)))

    def laplace_error(self, n: int) -> float:
        """Proposition 2 as printed, ``2 n Trace(B^T B diag(s^2))``: the objective of problem (1).

        The error continuous Laplace noise of scales s would have; an upper bound
        on :meth:`error` up to the rate rounding (``V_k < 2 (gamma_k / rho_k)^2``).
        """
        return expected_error(self.reconstruction_matrix, self.noise_scales, n)

    def respond_lattice(self, values: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """The released reports as integers: coordinate k of a report is ``2^g_k`` times column k (shape (n, p)).

        ``C[k, x] + Z_k`` with exact discrete Laplace ``Z_k`` on rows with noise,
        ``C[k, x]`` on rows with ``s_k = 0`` and 0 on unused rows.

        Privacy guarantee: E-LDP for every E that :func:`certify_strategy` certifies
        (``sum_k rho_k |C[k, x] - C[k, x']| <= E(x, x')``).

        Parameters
        ----------
        values : int array (n,)
            0-based private values.
        rng : numpy Generator or None
            None (default): the operating system's cryptographic generator
            (``secrets``). Pass a seeded Generator only for reproducible simulation.
        """
        values = np.asarray(values).ravel()
        m = self.strategy_matrix.shape[1]
        if not np.issubdtype(values.dtype, np.integer) or values.size and (values.min() < 0 or values.max() >= m):
            raise ValueError(f"values must be integers in 0..{m - 1}")
        reports = self.noise.centres[:, values].T.copy()
        noisy = self.noise.noisy
        if noisy.any() and values.size:
            numerators, denominators = self.noise.rate_terms()
            shape = (values.size, int(noisy.sum()))
            reports[:, noisy] += discrete_laplace(
                np.broadcast_to(numerators, shape), np.broadcast_to(denominators, shape), rng
            )
        reports[:, self.noise.unused] = 0
        if reports.size and np.abs(reports).max() >= 2 * MAX_MAGNITUDE:
            raise OverflowError("a report left the range where doubles represent the lattice exactly")
        return reports

    def respond(self, values: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """Reports ``A h_x`` plus discrete Laplace noise on the rows' lattices, as doubles (shape (n, p)).

        ``2^g_k`` times :meth:`respond_lattice` (exact: the integers are below
        ``2^53``), so every released double is a lattice point whose probability
        is the one certified; unused rows report 0. ``rng`` as in :meth:`respond_lattice`.

        Privacy guarantee: E-LDP for every E that :func:`certify_strategy` certifies.
        """
        return np.ldexp(self.respond_lattice(values, rng).astype(float), self.noise.exponents[None, :])

    def answer(self, reports: np.ndarray) -> np.ndarray:
        """The estimate ``B sum_i r_i`` of ``W c`` (Proposition 2, unbiased)."""
        return self.reconstruction_matrix @ np.asarray(reports, dtype=float).sum(axis=0)

    def to_dict(self, n: int = 1) -> dict:
        """JSON-ready summary (noise scales, error for n users; A and B are not included)."""
        return {
            "p": int(self.strategy_matrix.shape[0]),
            "m": int(self.strategy_matrix.shape[1]),
            "q": int(self.reconstruction_matrix.shape[0]),
            "noise_scales": [_json_number(v) for v in self.noise_scales],
            "noise": {
                "distribution": "discrete Laplace on 2^g Z per row (exact sampler)",
                "lattice_exponents": [int(g) for g in self.noise.exponents],
                "rates": [str(rate) if rate is not None else None for rate in self.noise.rates],
            },
            "n": n,
            "total_error": self.error(n),
            "laplace_total_error": self.laplace_error(n),
        }


def expected_error(reconstruction_matrix: np.ndarray, noise_scales: np.ndarray, n: int) -> float:
    """Proposition 2 for Laplace scales s: ``2 n sum_k s_k^2 ||B[:, k]||^2`` (``0 * inf = 0`` for unused rows).

    The objective of problem (1); the released mechanism's error is :meth:`Strategy.error`.
    """
    costs = np.sum(np.asarray(reconstruction_matrix, dtype=float) ** 2, axis=0)
    scales = np.asarray(noise_scales, dtype=float)
    terms = np.where(costs > 0, costs * np.where(np.isfinite(scales), scales, 0.0) ** 2, 0.0)
    if np.any((costs > 0) & np.isinf(scales)):
        return math.inf
    return float(2 * n * terms.sum())


# ------------------------------------------------------------------ certificate
@dataclass
class StrategyCertificate:
    """Outcome of :func:`certify_strategy` (Proposition 1 for the released noise, necessary and sufficient).

    Attributes
    ----------
    verdict : "certified" or "violated"
    margin : float
        ``min (E - L)`` over pairs with finite E (``inf`` if none).
    tightest_pair : tuple (x, x') or None
        The pair attaining the margin.
    privacy_loss : ndarray (m, m)
        ``L``.
    violations : list of (x, x') with ``L > E + tolerance`` (decided exactly).
    tolerance : float
        Absolute slack allowed (0 by default: the verdict is exact).
    """

    verdict: Literal["certified", "violated"]
    margin: float
    tightest_pair: tuple[int, int] | None
    privacy_loss: np.ndarray
    violations: list[tuple[int, int]] = field(default_factory=list)
    tolerance: float = STRATEGY_TOLERANCE

    @property
    def certified(self) -> bool:
        return self.verdict == "certified"

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict,
            "margin": _json_number(self.margin),
            "tightest_pair": list(self.tightest_pair) if self.tightest_pair is not None else None,
            "tolerance": self.tolerance,
            "violations": [list(pair) for pair in self.violations],
        }


def certify_strategy(
    strategy: Strategy, epsilon: PrivacyMatrix | np.ndarray, tolerance: float = STRATEGY_TOLERANCE
) -> StrategyCertificate:
    """Decide whether the released report of a strategy is E-LDP (Proposition 1), exactly.

    The report is the one :meth:`Strategy.respond` releases (discrete Laplace on
    the rows' lattices, :class:`LatticeNoise`), whose exact level is
    ``L(x, x') = sum_k rho_k |C[k, x] - C[k, x']|``. A pair is accepted when
    ``L(x, x') <= E(x, x') + tolerance`` as rational numbers (the doubles in E
    and the tolerance read exactly): pairs that the floating-point loss decides
    with room to spare for its rounding (relative ``(p + 2) 2^-52``) are settled
    in floating point, the others in rational arithmetic.
    """
    epsilon = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon)
    m = strategy.strategy_matrix.shape[1]
    if epsilon.k != m:
        raise ValueError(f"the strategy has {m} inputs but E is {epsilon.k} x {epsilon.k}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    loss = strategy.privacy_loss()
    allowed = epsilon.epsilon
    finite = np.isfinite(allowed) & ~np.eye(m, dtype=bool)
    if not finite.any():
        return StrategyCertificate("certified", math.inf, None, loss, [], tolerance)
    with np.errstate(invalid="ignore"):
        slack = np.where(finite, allowed - loss, np.inf)
    flat = int(np.argmin(slack))
    pair = (flat // m, flat % m)
    rounding = 2 * (strategy.strategy_matrix.shape[0] + 2) * 2.0**-52
    limit = allowed + tolerance
    with np.errstate(invalid="ignore"):
        surely_private = loss * (1 + rounding) <= limit
        surely_violated = loss * (1 - rounding) > limit * (1 + rounding)
    violations = [(int(x), int(y)) for x, y in np.argwhere(finite & surely_violated)]
    undecided = np.argwhere(finite & ~surely_private & ~surely_violated)
    scaled = strategy.noise.scaled_privacy_losses(undecided[:, 0], undecided[:, 1]) if tolerance == 0 else None
    if scaled is not None and undecided.size:  # integers: N <= E 2^D  <=>  N <= floor(E 2^D)
        numerators, exponent = scaled
        bounds = np.floor(np.ldexp(allowed[undecided[:, 0], undecided[:, 1]], exponent))
        within = bounds >= 2.0**63
        within |= numerators <= np.where(within, 0, bounds).astype(np.int64)
        violations += [(int(x), int(y)) for x, y in undecided[~within]]
    else:
        for x, y in undecided:
            exact_limit = Fraction(float(allowed[x, y])) + Fraction(float(tolerance))
            if strategy.noise.exact_privacy_loss(int(x), int(y)) > exact_limit:
                violations.append((int(x), int(y)))
    violations.sort()
    return StrategyCertificate(
        "violated" if violations else "certified", float(slack[pair]), (int(pair[0]), int(pair[1])), loss, violations, tolerance
    )


# ------------------------------------------------------------------ design
def reconstruction(strategy_matrix: np.ndarray, workload: np.ndarray, noise_scales: np.ndarray | None = None) -> np.ndarray:
    """The error-minimising B with ``B A = W`` (Proposition 2 for fixed A and s).

    Without ``noise_scales``, A must be square and invertible and ``B = W A^{-1}``.
    With them, B solves the weighted least-squares problem
    ``min sum_k s_k^2 ||B[:, k]||^2  s.t.  B A = W`` through its KKT system
    ``[[S^2, A], [A^T, 0]] [B^T; Lambda] = [0; W^T]`` (rows with ``s_k = inf``
    are excluded; ``s_k = 0`` rows are free). Raises ValueError when W is not
    reachable from the usable rows of A.
    """
    A = np.asarray(strategy_matrix, dtype=float)
    W = np.asarray(workload, dtype=float)
    if W.shape[1] != A.shape[1]:
        raise ValueError(f"the workload has {W.shape[1]} columns but A has {A.shape[1]}")
    if noise_scales is None:
        if A.shape[0] != A.shape[1]:
            raise ValueError("B = W A^{-1} needs a square A; pass noise scales for an over-complete A")
        try:
            return np.linalg.solve(A.T, W.T).T
        except np.linalg.LinAlgError:
            raise ValueError("the strategy matrix A is singular") from None
    scales = np.asarray(noise_scales, dtype=float)
    usable = np.isfinite(scales)
    A_used = A[usable]
    p, m = A_used.shape
    kkt = np.zeros((p + m, p + m))
    kkt[:p, :p] = np.diag(scales[usable] ** 2)
    kkt[:p, p:] = A_used
    kkt[p:, :p] = A_used.T
    rhs = np.vstack([np.zeros((p, W.shape[0])), W.T])
    solution = np.linalg.lstsq(kkt, rhs, rcond=None)[0]
    B = np.zeros((W.shape[0], A.shape[0]))
    B[:, usable] = solution[:p].T
    if not np.allclose(B @ A, W, atol=1e-8 * max(1.0, np.abs(W).max())):
        raise ValueError("the workload is not in the row space of the usable rows of A")
    return B


def optimal_noise_scales(
    strategy_matrix: np.ndarray, reconstruction_matrix: np.ndarray, epsilon: PrivacyMatrix
) -> np.ndarray:
    """The noise scales minimising Proposition 2's error for fixed A and B (problem (1)).

    With ``t = 1/s`` the problem ``min sum_k c_k / t_k^2`` (``c_k = ||B[:, k]||^2``)
    subject to ``sum_k |A[k, x] - A[k, x']| t_k <= E(x, x')`` over the
    non-redundant pairs of E is convex (CVXPY, power-cone form). Rows that
    differ on no constrained pair need no noise (``s_k = 0``); rows that B does
    not use get ``s_k = inf``. Pairs ``(x, x')`` and ``(x', x)`` share one
    constraint with the smaller level (L is symmetric).

    Raises
    ------
    ValueError
        If a used row must separate a pair with ``E = 0`` (infinite error), or the
        solver fails.
    """
    A = np.asarray(strategy_matrix, dtype=float)
    costs = np.sum(np.asarray(reconstruction_matrix, dtype=float) ** 2, axis=0)
    sensitivity, levels = _pair_constraints(A, epsilon)
    active = np.any(sensitivity > 0, axis=0)
    scales = np.zeros(A.shape[0])
    scales[active & (costs <= 0)] = np.inf
    free = np.flatnonzero(active & (costs > 0))
    if free.size == 0:
        return scales
    block = sensitivity[:, free]
    blocked = (levels <= 0) & np.any(block > 0, axis=1)
    if blocked.any():
        j = int(np.flatnonzero(blocked)[0])
        raise ValueError(f"the workload needs rows of A that separate a pair with E = 0 (constraint {j}); infinite error")
    rows = np.any(block > 0, axis=1)
    import cvxpy as cp  # heavy (about 1 s): only when a strategy is designed

    t = cp.Variable(free.size, pos=True)
    objective = cp.Minimize(cp.sum(cp.multiply(costs[free], cp.power(t, -2))))
    problem = cp.Problem(objective, [block[rows] @ t <= levels[rows]])
    try:
        with warnings.catch_warnings():  # OPTIMAL_INACCURATE is accepted: the result is projected below
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(
                solver=cp.CLARABEL, tol_gap_abs=SOLVER_TOLERANCE, tol_gap_rel=SOLVER_TOLERANCE, tol_feas=SOLVER_TOLERANCE
            )
    except cp.error.SolverError as error:
        raise ValueError(f"the noise-scale program failed: {error}") from None
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or t.value is None:
        raise ValueError(f"the noise-scale program ended with status {problem.status}")
    rates = np.asarray(t.value, dtype=float)
    # Make the solver's answer exactly feasible: scale t down until every level holds.
    usage = block[rows] @ rates
    factor = float(np.min(np.where(usage > 0, levels[rows] / usage, np.inf), initial=1.0))
    rates *= min(1.0, factor)
    scales[free] = 1.0 / rates
    return scales


def _pair_constraints(A: np.ndarray, epsilon: PrivacyMatrix) -> tuple[np.ndarray, np.ndarray]:
    """``|A (h_x - h_x')|`` (one row per unordered non-redundant pair) and the level ``min(E[x,x'], E[x',x])``."""
    if epsilon.k != A.shape[1]:
        raise ValueError(f"A has {A.shape[1]} columns but E is {epsilon.k} x {epsilon.k}")
    pairs = epsilon.nonredundant_pairs()
    if pairs.size == 0:
        return np.zeros((0, A.shape[0])), np.zeros(0)
    values = epsilon.epsilon[pairs[:, 0], pairs[:, 1]]
    unordered = np.sort(pairs, axis=1)
    keys, inverse = np.unique(unordered, axis=0, return_inverse=True)
    levels = np.full(len(keys), np.inf)
    np.minimum.at(levels, inverse.ravel(), values)
    sensitivity = np.abs(A[:, keys[:, 0]] - A[:, keys[:, 1]]).T
    return sensitivity, levels


def design_strategy(workload: np.ndarray, epsilon: PrivacyMatrix, strategy_matrix: np.ndarray) -> Strategy:
    """Problem (1) for a fixed invertible A: ``B = W A^{-1}``, then :func:`optimal_noise_scales`.

    A is first put on its lattices (:func:`snap_to_lattice`), so B reconstructs W
    from what users release.
    """
    A = snap_to_lattice(strategy_matrix)[0]
    B = reconstruction(A, workload)
    return absorb_lattice_rounding(Strategy(A, B, optimal_noise_scales(A, B, epsilon)), epsilon)


def absorb_lattice_rounding(strategy: Strategy, epsilon: PrivacyMatrix, attempts: int = 4) -> Strategy:
    """Scale the noise up just enough that rounding a row to its noise lattice keeps a tight design E-LDP.

    Rows finer than ``s_k 2^-21`` are rounded by :func:`lattice_noise`, which can
    raise ``L(x, x')`` by up to one lattice step per row (``rho_k <= 2^-20``)
    above a design that was tight for the unrounded A. When the exact certificate
    fails by such a hair (``max L / E <= 1 + 2^-10``), every ``s_k`` is multiplied
    by ``max L / E`` (plus ``2^-20``) and the strategy rebuilt; a larger
    violation is returned unchanged (it is not a rounding effect). Integer and
    dyadic strategies are never rounded and come back unchanged.
    """
    allowed = epsilon.epsilon
    constrained = np.isfinite(allowed) & (allowed > 0) & ~np.eye(allowed.shape[0], dtype=bool)
    for _ in range(attempts):
        certificate = certify_strategy(strategy, epsilon)
        if certificate.certified:
            return strategy
        loss = certificate.privacy_loss
        factor = float(np.max(loss[constrained] / allowed[constrained], initial=0.0))
        if not 1 < factor <= 1 + 2.0**-10:
            return strategy
        strategy = Strategy(
            strategy.strategy_matrix, strategy.reconstruction_matrix, strategy.noise_scales * factor * (1 + 2.0**-20)
        )
    return strategy


def uniform_noise_scales(strategy_matrix: np.ndarray, epsilon: PrivacyMatrix) -> np.ndarray:
    """The feasible start with one common scale: ``t_k = tau`` for every row that needs noise.

    ``tau = min over pairs of E(x, x') / ||A (h_x - h_x')||_1`` (Proposition 1 with equal t).
    """
    A = np.asarray(strategy_matrix, dtype=float)
    sensitivity, levels = _pair_constraints(A, epsilon)
    active = np.any(sensitivity > 0, axis=0)
    totals = sensitivity.sum(axis=1)
    tau = float(np.min(np.where(totals > 0, levels / np.where(totals > 0, totals, 1.0), np.inf), initial=np.inf))
    if tau <= 0:
        raise ValueError("a row of A separates a pair with E = 0; no finite noise is private")
    scales = np.zeros(A.shape[0])
    scales[active] = 1.0 / tau
    return scales


@dataclass
class AlternatingResult:
    """Outcome of :func:`design_overcomplete`: the strategy and the error (per user) after each step."""

    strategy: Strategy
    history: list[float]


def design_overcomplete(
    workload: np.ndarray,
    epsilon: PrivacyMatrix,
    strategy_matrix: np.ndarray,
    start_scales: np.ndarray | None = None,
    iterations: int = 30,
    rtol: float = 1e-6,
) -> AlternatingResult:
    """Problem (1) for a fixed over-complete A (p > m) by alternating minimisation.

    Start from ``s_0`` (default :func:`uniform_noise_scales`) and ``B_0`` =
    :func:`reconstruction` for ``s_0``; then alternate the convex step
    (:func:`optimal_noise_scales` for the current B) and the weighted
    least-squares step (:func:`reconstruction` for the current s). Each step
    minimises the error over one block with the other fixed and the current
    point stays feasible, so the error never increases; a step that does not
    lower it (solver round-off) is rejected and the iteration stops. Stops when
    the relative decrease falls below ``rtol``.

    ``history[0]`` is the starting error and ``history[-1]`` the final one, both
    ``2 sum_k s_k^2 ||B[:, k]||^2`` (Proposition 2 with Laplace noise and n = 1,
    the objective of problem (1): :meth:`Strategy.laplace_error`). A is first put
    on its lattices (:func:`snap_to_lattice`).
    """
    A = snap_to_lattice(strategy_matrix)[0]
    W = np.asarray(workload, dtype=float)
    scales = uniform_noise_scales(A, epsilon) if start_scales is None else np.asarray(start_scales, dtype=float)
    current = absorb_lattice_rounding(Strategy(A, reconstruction(A, W, scales), scales), epsilon)
    start_check = certify_strategy(current, epsilon)
    if not start_check.certified:
        raise ValueError(f"the starting noise scales are not E-LDP (pair {start_check.tightest_pair})")
    history = [current.laplace_error(1)]
    for _ in range(iterations):
        new_scales = optimal_noise_scales(A, current.reconstruction_matrix, epsilon)
        candidate = absorb_lattice_rounding(Strategy(A, reconstruction(A, W, new_scales), new_scales), epsilon)
        error = candidate.laplace_error(1)
        if not error < history[-1]:
            break
        current = candidate
        history.append(error)
        if history[-2] - error <= rtol * history[-2]:
            break
    return AlternatingResult(current, history)


def _json_number(value: float):
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
