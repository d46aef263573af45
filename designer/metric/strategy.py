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
non-redundant pairs of E (:class:`designer.metric.pairs.PrivacyPairs`: the
adjacent pairs of a line, the edges of an L1 grid) imply all of them; the
certificate checks the same pairs. The costs ``||B[:, k]||^2`` come from the
workload's Gram matrix (:mod:`designer.metric.workloads`,
:mod:`designer.metric.strategy_matrices`): W is never built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

from designer.metric.lattice import LatticeNoise, lattice_noise
from designer.metric.pairs import PrivacyPairs
from designer.metric.strategy_matrices import DenseStrategyMatrix, StrategyMatrix
from designer.metric.workloads import MatrixWorkload, Workload
from designer.noise import MAX_MAGNITUDE, discrete_laplace
from designer.spec import PrivacyMatrix
from solvers.inverse_squares import minimize_inverse_squares

#: Default absolute slack of :func:`certify_strategy` on ``L(x, x') <= E(x, x')``: none (the decision is exact).
STRATEGY_TOLERANCE = 0.0
#: Relative accuracy requested from the conic solver in :func:`optimal_noise_scales`.
SOLVER_TOLERANCE = 1e-10


def as_pairs(epsilon: PrivacyPairs | PrivacyMatrix | np.ndarray) -> PrivacyPairs:
    """The pairs Proposition 1 is checked on: given, or the non-redundant pairs of an explicit E."""
    return epsilon if isinstance(epsilon, PrivacyPairs) else PrivacyPairs.from_matrix(epsilon)


def as_strategy_matrix(matrix: StrategyMatrix | np.ndarray) -> StrategyMatrix:
    """A :class:`~designer.metric.strategy_matrices.StrategyMatrix` (an array becomes a dense one)."""
    return matrix if isinstance(matrix, StrategyMatrix) else DenseStrategyMatrix(matrix)


def as_workload(workload: Workload | np.ndarray) -> Workload:
    """A :class:`~designer.metric.workloads.Workload` (an array becomes an explicit one)."""
    return workload if isinstance(workload, Workload) else MatrixWorkload(workload)


# ------------------------------------------------------------------ strategies
@dataclass(frozen=True)
class Strategy:
    """A strategy ``(A, B, s)`` of the E-LDP matrix mechanism (Section III-A), B implicit.

    Attributes
    ----------
    strategy_matrix : StrategyMatrix (an array is wrapped as a dense one)
        A, on its rows' lattices; users report ``A h_x`` plus noise.
    workload : Workload (an array is wrapped as an explicit one)
        W; the collector answers ``B sum_i r_i = W x_hat`` (:meth:`answer`).
    noise_scales : ndarray (p,)
        s, the designed Laplace scales (0 = no noise, inf = unused row).
    weights : ndarray (p,) or None
        The least-squares weights defining B for ``p > m`` (B minimises
        ``sum_k weights_k^2 ||B[:, k]||^2`` with ``B A = W``); None means the noise
        scales (the error-optimal B for s). Ignored for square A (``B = W A^-1``).
    costs : ndarray (p,)
        ``||B[:, k]||^2`` (derived, from the Gram matrix of W).
    noise : LatticeNoise
        The noise actually released (derived from A and s).
    """

    strategy_matrix: StrategyMatrix
    workload: Workload
    noise_scales: np.ndarray
    weights: np.ndarray | None = None
    costs: np.ndarray = field(init=False, repr=False, compare=False)
    noise: LatticeNoise = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        matrix = as_strategy_matrix(self.strategy_matrix)
        workload = as_workload(self.workload)
        s = np.asarray(self.noise_scales, dtype=float).ravel()
        p, m = matrix.shape
        if s.shape[0] != p or workload.m != m:
            raise ValueError(f"shapes do not match: A {matrix.shape}, W on {workload.m} cells, s {s.shape}")
        if not np.all(s >= 0):
            raise ValueError("noise scales must be >= 0 (inf allowed)")
        weights = None if p == m else (s if self.weights is None else np.asarray(self.weights, dtype=float))
        costs = matrix.costs(workload, weights)
        unused = np.isinf(s) & (costs > 0)
        if unused.any():
            raise ValueError(f"row {int(np.flatnonzero(unused)[0])} has infinite noise but B uses it")
        object.__setattr__(self, "strategy_matrix", matrix)
        object.__setattr__(self, "workload", workload)
        object.__setattr__(self, "noise_scales", s)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "costs", costs)
        object.__setattr__(self, "noise", lattice_noise(matrix, s))

    def privacy_loss(self) -> np.ndarray:
        """``L[x, x'] = sum_k rho_k |C[k, x] - C[k, x']|`` (Proposition 1 for the released noise), m x m, small m.

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
        return float(n * np.sum(np.where(self.costs > 0, self.costs * self.noise_variances(), 0.0)))

    def laplace_error(self, n: int) -> float:
        """Proposition 2 as printed, ``2 n Trace(B^T B diag(s^2)) = 2 n sum_k s_k^2 ||B[:, k]||^2``: problem (1)'s objective.

        The error continuous Laplace noise of scales s would have; an upper bound
        on :meth:`error` up to the rate rounding (``V_k < 2 (gamma_k / rho_k)^2``).
        """
        return laplace_error(self.costs, self.noise_scales, n)

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
        reports = self.noise.centres(values).T.copy()
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
        """The estimate ``B sum_i r_i = W x_hat`` of ``W c`` (Proposition 2, unbiased), without building B or W."""
        totals = np.asarray(reports, dtype=float).sum(axis=0)
        return self.workload.matvec(self.strategy_matrix.estimate(totals, self.weights))

    def to_dict(self, n: int = 1) -> dict:
        """JSON-ready summary (noise scales, error for n users; A and B are not included)."""
        p, m = self.strategy_matrix.shape
        return {
            "p": int(p),
            "m": int(m),
            "q": int(self.workload.queries),
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


def laplace_error(costs: np.ndarray, noise_scales: np.ndarray, n: int) -> float:
    """Proposition 2 for Laplace scales s: ``2 n sum_k s_k^2 ||B[:, k]||^2`` (``0 * inf = 0`` for unused rows).

    The objective of problem (1); the released mechanism's error is :meth:`Strategy.error`.
    """
    costs = np.asarray(costs, dtype=float)
    scales = np.asarray(noise_scales, dtype=float)
    if np.any((costs > 0) & np.isinf(scales)):
        return math.inf
    terms = np.where(costs > 0, costs * np.where(np.isfinite(scales), scales, 0.0) ** 2, 0.0)
    return float(2 * n * terms.sum())


# ------------------------------------------------------------------ certificate
@dataclass
class StrategyCertificate:
    """Outcome of :func:`certify_strategy` (Proposition 1 for the released noise, necessary and sufficient).

    Attributes
    ----------
    verdict : "certified" or "violated"
    margin : float
        ``min (E - L)`` over the checked pairs (``inf`` if none).
    tightest_pair : tuple (x, x') or None
        The pair attaining the margin.
    pairs : int array (n, 2)
        The pairs checked: every finite pair of an explicit E, the edges of a line or grid family.
    levels, losses : float arrays (n,)
        E and L (floating point) on those pairs.
    violations : list of (x, x') with ``L > E + tolerance`` (decided exactly).
    tolerance : float
        Absolute slack allowed (0 by default: the verdict is exact).
    """

    verdict: Literal["certified", "violated"]
    margin: float
    tightest_pair: tuple[int, int] | None
    pairs: np.ndarray = field(repr=False)
    levels: np.ndarray = field(repr=False)
    losses: np.ndarray = field(repr=False)
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
            "pairs_checked": int(len(self.pairs)),
            "tolerance": self.tolerance,
            "violations": [list(pair) for pair in self.violations],
        }


def certify_strategy(
    strategy: Strategy, epsilon: PrivacyPairs | PrivacyMatrix | np.ndarray, tolerance: float = STRATEGY_TOLERANCE
) -> StrategyCertificate:
    """Decide whether the released report of a strategy is E-LDP (Proposition 1), exactly.

    The report is the one :meth:`Strategy.respond` releases (discrete Laplace on
    the rows' lattices), whose exact level is
    ``L(x, x') = sum_k rho_k |C[k, x] - C[k, x']|``. Which pairs are checked:

    * E of a metric family (:meth:`PrivacyPairs.line`, :meth:`PrivacyPairs.grid_l1`):
      its edges. L is a pseudo-metric (a weighted L1 distance between columns),
      and the family's E of any pair is by definition the sum of the levels
      along a shortest path of edges, so ``L <= E`` on the edges gives it on
      every pair exactly (m = 65,536 has 65,535 edges and 2.1e9 pairs).
    * An explicit E (a matrix, or :meth:`PrivacyPairs.from_matrix`, which keeps
      it): every finite pair. Its non-redundant pairs are found in floating
      point with a relative tolerance, so they serve the design, not the
      certificate; all pairs are decided at once from one exact ``m x m``
      integer matrix (:meth:`~designer.metric.lattice.LatticeNoise.scaled_loss_matrix`).

    A pair is accepted when ``L(x, x') <= E(x, x') + tolerance`` as rational
    numbers (the doubles in E and the tolerance read exactly): pairs that the
    floating-point loss decides with room to spare for its rounding are settled
    in floating point, the others in exact integer or rational arithmetic.
    """
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    m = strategy.strategy_matrix.shape[1]
    noise = strategy.noise
    if isinstance(epsilon, PrivacyPairs) and epsilon.matrix is None:
        if epsilon.m != m:
            raise ValueError(f"the strategy has {m} inputs but E has {epsilon.m}")
        first, second, levels = epsilon.pairs[:, 0], epsilon.pairs[:, 1], epsilon.levels
        losses, terms = noise.pair_losses(first, second)
        rounding = 2 * (terms + 2) * 2.0**-52

        def integers(index):
            scaled = noise.scaled_pair_losses(first[index], second[index])
            return None if scaled is None else (scaled[0], scaled[1], np.zeros(len(index), dtype=bool))
    else:
        matrix = epsilon.matrix if isinstance(epsilon, PrivacyPairs) else epsilon
        allowed = (matrix if isinstance(matrix, PrivacyMatrix) else PrivacyMatrix(matrix)).epsilon
        if allowed.shape[0] != m:
            raise ValueError(f"the strategy has {m} inputs but E is {allowed.shape[0]} x {allowed.shape[0]}")
        first, second = np.nonzero(np.isfinite(allowed) & ~np.eye(m, dtype=bool))
        levels = allowed[first, second]
        scaled = noise.scaled_loss_matrix() if tolerance == 0 else None
        if scaled is not None:  # exact integers for every pair; floats only to report the margin
            numerators, exponent, blocked = scaled
            losses = np.where(blocked[first, second], np.inf, np.ldexp(numerators[first, second].astype(float), -exponent))
            rounding = np.full(len(first), 4 * 2.0**-52)
        else:
            losses = noise.privacy_loss()[first, second]
            rounding = np.full(len(first), 2 * (strategy.strategy_matrix.shape[0] + 2) * 2.0**-52)

        def integers(index):
            return None if scaled is None else (numerators[first[index], second[index]], exponent, blocked[first[index], second[index]])

    if len(first) == 0:
        return StrategyCertificate("certified", math.inf, None, np.zeros((0, 2), dtype=np.int64), levels, losses, [], tolerance)
    violated = _violations(noise, first, second, levels, losses, rounding, integers, tolerance)
    with np.errstate(invalid="ignore"):
        slack = levels - losses
    tightest = int(np.argmin(slack))
    violations = [(int(first[i]), int(second[i])) for i in np.flatnonzero(violated)]
    return StrategyCertificate(
        "violated" if violations else "certified",
        float(slack[tightest]),
        (int(first[tightest]), int(second[tightest])),
        np.stack([first, second], axis=1),
        levels,
        losses,
        violations,
        tolerance,
    )


def _violations(noise: LatticeNoise, first, second, levels, losses, rounding, integers, tolerance: float) -> np.ndarray:
    """``L > E + tolerance`` per pair, exactly: a floating-point screen, then integers or rationals for the close calls."""
    limit = levels + tolerance
    with np.errstate(invalid="ignore"):
        surely_private = losses * (1 + rounding) <= limit
        surely_violated = losses * (1 - rounding) > limit * (1 + rounding)
    violated = surely_violated.copy()
    undecided = np.flatnonzero(~surely_private & ~surely_violated)
    exact = integers(undecided) if tolerance == 0 and undecided.size else None
    if exact is not None:  # integers: N <= E 2^D  <=>  N <= floor(E 2^D)
        numerators, exponent, blocked = exact
        bounds = np.floor(np.ldexp(levels[undecided], exponent))
        within = bounds >= 2.0**63
        within |= numerators <= np.where(within, 0, bounds).astype(np.int64)
        violated[undecided[~within | blocked]] = True
        return violated
    for index in undecided:
        exact_limit = Fraction(float(levels[index])) + Fraction(float(tolerance))
        if noise.exact_privacy_loss(int(first[index]), int(second[index])) > exact_limit:
            violated[index] = True
    return violated


# ------------------------------------------------------------------ design
def optimal_noise_scales(
    strategy_matrix: StrategyMatrix | np.ndarray, costs: np.ndarray, epsilon: PrivacyPairs | PrivacyMatrix
) -> np.ndarray:
    """The noise scales minimising Proposition 2's error for fixed A and B (problem (1)).

    With ``t = 1/s`` the problem ``min sum_k c_k / t_k^2`` (``c_k = ||B[:, k]||^2``)
    subject to ``sum_k |A[k, x] - A[k, x']| t_k <= E(x, x')`` over the
    non-redundant pairs of E is convex (:func:`solvers.inverse_squares.minimize_inverse_squares`:
    exact when every pair involves one row, as for ``L_m`` on a line; Clarabel
    otherwise). Rows that differ on no constrained pair need no noise
    (``s_k = 0``); rows that B does not use get ``s_k = inf``.

    Raises
    ------
    ValueError
        If a used row must separate a pair with ``E = 0`` (infinite error), or the
        solver fails.
    """
    matrix = as_strategy_matrix(strategy_matrix)
    pairs = as_pairs(epsilon)
    costs = np.asarray(costs, dtype=float)
    sensitivity = matrix.sensitivity(pairs.pairs[:, 0], pairs.pairs[:, 1]).tocsc()
    active = np.diff(sensitivity.indptr) > 0
    scales = np.zeros(matrix.shape[0])
    scales[active & (costs <= 0)] = np.inf
    free = np.flatnonzero(active & (costs > 0))
    if free.size == 0:
        return scales
    block = sensitivity[:, free].tocsr()
    rows = np.diff(block.indptr) > 0
    blocked = rows & (pairs.levels <= 0)
    if blocked.any():
        x, y = pairs.pairs[int(np.flatnonzero(blocked)[0])]
        raise ValueError(f"the workload needs rows of A that separate the pair ({x}, {y}) with E = 0; infinite error")
    result = minimize_inverse_squares(costs[free], block[rows], pairs.levels[rows], SOLVER_TOLERANCE)
    scales[free] = 1.0 / result.rates
    return scales


def design_strategy(
    workload: Workload | np.ndarray,
    epsilon: PrivacyPairs | PrivacyMatrix,
    strategy_matrix: StrategyMatrix | np.ndarray,
    weights: np.ndarray | None = None,
) -> Strategy:
    """Problem (1) for a fixed A whose reconstruction does not depend on s: the optimal noise scales.

    For a square A, ``B = W A^-1``; for ``p > m`` pass the least-squares
    ``weights`` that fix B (e.g. ones for a Kronecker product of over-complete
    factors; :func:`design_overcomplete` optimises B and s together). A is put on
    its lattices first (:func:`designer.metric.strategy_matrices.snap_to_lattice`),
    so B reconstructs W from what users release.
    """
    matrix = as_strategy_matrix(strategy_matrix)
    workload = as_workload(workload)
    p, m = matrix.shape
    if p != m and weights is None:
        raise ValueError(f"A has {p} rows for m = {m}: pass reconstruction weights or use design_overcomplete")
    costs = matrix.costs(workload, None if p == m else weights)
    scales = optimal_noise_scales(matrix, costs, epsilon)
    return absorb_lattice_rounding(Strategy(matrix, workload, scales, weights), epsilon)


def absorb_lattice_rounding(strategy: Strategy, epsilon: PrivacyPairs | PrivacyMatrix, attempts: int = 4) -> Strategy:
    """Scale the noise up just enough that rounding a row to its noise lattice keeps a tight design E-LDP.

    Rows finer than ``s_k 2^-21`` are rounded by :func:`designer.metric.lattice.lattice_noise`,
    which can raise ``L(x, x')`` by up to one lattice step per row (``rho_k <= 2^-20``)
    above a design that was tight for the unrounded A. When the exact certificate
    fails by such a hair (``max L / E <= 1 + 2^-10``), every ``s_k`` is multiplied
    by ``max L / E`` (plus ``2^-20``) and the strategy rebuilt; a larger
    violation is returned unchanged (it is not a rounding effect). Integer and
    dyadic strategies are never rounded and come back unchanged.
    """
    for _ in range(attempts):
        certificate = certify_strategy(strategy, epsilon)
        if certificate.certified:
            return strategy
        constrained = certificate.levels > 0
        factor = float(np.max(certificate.losses[constrained] / certificate.levels[constrained], initial=0.0))
        if not 1 < factor <= 1 + 2.0**-10:
            return strategy
        strategy = Strategy(
            strategy.strategy_matrix, strategy.workload, strategy.noise_scales * factor * (1 + 2.0**-20), strategy.weights
        )
    return strategy


def uniform_noise_scales(strategy_matrix: StrategyMatrix | np.ndarray, epsilon: PrivacyPairs | PrivacyMatrix) -> np.ndarray:
    """The feasible start with one common scale: ``t_k = tau`` for every row that needs noise.

    ``tau = min over pairs of E(x, x') / ||A (h_x - h_x')||_1`` (Proposition 1 with equal t).
    """
    matrix = as_strategy_matrix(strategy_matrix)
    pairs = as_pairs(epsilon)
    sensitivity = matrix.sensitivity(pairs.pairs[:, 0], pairs.pairs[:, 1])
    totals = np.asarray(sensitivity.sum(axis=1)).ravel()
    tau = float(np.min(np.where(totals > 0, pairs.levels / np.where(totals > 0, totals, 1.0), np.inf), initial=np.inf))
    if tau <= 0:
        raise ValueError("a row of A separates a pair with E = 0; no finite noise is private")
    scales = np.zeros(matrix.shape[0])
    scales[np.diff(sensitivity.tocsc().indptr) > 0] = 1.0 / tau
    return scales


@dataclass
class AlternatingResult:
    """Outcome of :func:`design_overcomplete`: the strategy and the error (per user) after each step."""

    strategy: Strategy
    history: list[float]


def design_overcomplete(
    workload: Workload | np.ndarray,
    epsilon: PrivacyPairs | PrivacyMatrix,
    strategy_matrix: StrategyMatrix | np.ndarray,
    start_scales: np.ndarray | None = None,
    iterations: int = 30,
    rtol: float = 1e-6,
) -> AlternatingResult:
    """Problem (1) for a fixed over-complete A (p > m) by alternating minimisation.

    Start from ``s_0`` (default :func:`uniform_noise_scales`) and ``B_0`` = the
    least-squares reconstruction weighted by ``s_0``; then alternate the convex
    step (:func:`optimal_noise_scales` for the current B) and the weighted
    least-squares step (B for the current s). Each step minimises the error
    over one block with the other fixed and the current point stays feasible,
    so the error never increases; a step that does not lower it (solver
    round-off) is rejected and the iteration stops. Stops when the relative
    decrease falls below ``rtol``.

    ``history[0]`` is the starting error and ``history[-1]`` the final one, both
    ``2 sum_k s_k^2 ||B[:, k]||^2`` (Proposition 2 with Laplace noise and n = 1,
    the objective of problem (1): :meth:`Strategy.laplace_error`).
    """
    matrix = as_strategy_matrix(strategy_matrix)
    workload = as_workload(workload)
    pairs = as_pairs(epsilon)
    scales = uniform_noise_scales(matrix, pairs) if start_scales is None else np.asarray(start_scales, dtype=float)
    current = absorb_lattice_rounding(Strategy(matrix, workload, scales), pairs)
    start_check = certify_strategy(current, pairs)
    if not start_check.certified:
        raise ValueError(f"the starting noise scales are not E-LDP (pair {start_check.tightest_pair})")
    history = [current.laplace_error(1)]
    for _ in range(iterations):
        new_scales = optimal_noise_scales(matrix, current.costs, pairs)
        candidate = absorb_lattice_rounding(Strategy(matrix, workload, new_scales), pairs)
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
