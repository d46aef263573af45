"""The matrix mechanism under E-LDP (metric-ldp-range-counting.md, Section III).

A strategy ``(A, B, s)``: every user with value x reports
``A h_x + Lap(s)`` (``h_x`` the indicator of x, independent Laplace noise of
scale ``s_k`` on entry k); the collector answers the workload ``W c`` as
``B sum_i r_i`` with ``B A = W``.

Privacy guarantee (Proposition 1): the report is E-LDP when
``L(x, x') = sum_k |A[k, x] - A[k, x']| / s_k <= E(x, x')`` for every pair.
For independent Laplace coordinates the supremum of the log density ratio
between inputs x and x' is exactly ``L(x, x')``, so the condition is also
necessary: :func:`certify_strategy` decides E-LDP, it does not only bound it.
Conventions: ``s_k = 0`` (no noise) is allowed when row k of A is constant on
every constrained pair (``0 / 0 = 0``), otherwise the loss is infinite;
``s_k = inf`` marks a row that the reconstruction does not use (its report is
pure noise and costs no privacy).

Error (Proposition 2): ``E||B sum_i r_i - W c||^2 = 2 n sum_k s_k^2 ||B[:, k]||^2``.

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
from typing import Literal

import cvxpy as cp
import numpy as np

from designer.spec import PrivacyMatrix

#: Absolute tolerance of :func:`certify_strategy` on ``L(x, x') <= E(x, x')``.
STRATEGY_TOLERANCE = 1e-9
#: Relative accuracy requested from the conic solver in :func:`optimal_noise_scales`.
SOLVER_TOLERANCE = 1e-10


# ------------------------------------------------------------------ workloads
def identity_workload(m: int) -> np.ndarray:
    """All single-value counts: ``W = I_m``."""
    return np.eye(_size(m))


def prefix_workload(m: int) -> np.ndarray:
    """All prefix counts ``[1, r]``: ``W = L_m`` (lower-triangular ones, eq. 2)."""
    return np.tril(np.ones((_size(m), _size(m))))


def all_range_workload(m: int) -> np.ndarray:
    """All ``m(m+1)/2`` one-dimensional ranges ``[l, r]`` (``W_m`` of eq. 2), rows ordered by l then r."""
    m = _size(m)
    lower, upper = np.triu_indices(m)
    index = np.arange(m)
    return ((index[None, :] >= lower[:, None]) & (index[None, :] <= upper[:, None])).astype(float)


def prefix_strategy(m: int) -> np.ndarray:
    """The strategy matrix ``A = L_m`` of Section III-B (every prefix sum)."""
    return prefix_workload(m)


def _size(m: int) -> int:
    if int(m) != m or m < 1:
        raise ValueError(f"the domain size m must be a positive integer, got {m!r}")
    return int(m)


# ------------------------------------------------------------------ strategies
@dataclass(frozen=True)
class Strategy:
    """A strategy ``(A, B, s)`` of the E-LDP matrix mechanism (Section III-A).

    Attributes
    ----------
    strategy_matrix : ndarray (p, m)
        A; users report ``A h_x + Lap(s)``.
    reconstruction_matrix : ndarray (q, p)
        B; the collector answers ``B sum_i r_i``.
    noise_scales : ndarray (p,)
        s (Laplace scales; 0 = no noise, inf = unused row).
    """

    strategy_matrix: np.ndarray
    reconstruction_matrix: np.ndarray
    noise_scales: np.ndarray

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
        object.__setattr__(self, "strategy_matrix", A)
        object.__setattr__(self, "reconstruction_matrix", B)
        object.__setattr__(self, "noise_scales", s)

    @property
    def workload(self) -> np.ndarray:
        """``W = B A``, the workload this strategy answers."""
        return self.reconstruction_matrix @ self.strategy_matrix

    def privacy_loss(self) -> np.ndarray:
        """``L[x, x'] = sum_k |A[k, x] - A[k, x']| / s_k`` (Proposition 1), an m x m matrix.

        The exact E-LDP level of the report for each pair (see module docstring).
        """
        return _privacy_loss(self.strategy_matrix, self.noise_scales)

    def error(self, n: int) -> float:
        """Total expected squared error ``2 n Trace(B^T B diag(s^2))`` (Proposition 2)."""
        return expected_error(self.reconstruction_matrix, self.noise_scales, n)

    def respond(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Reports ``A h_x + Lap(s)`` for 0-based values, shape (n, p); unused rows report 0.

        Privacy guarantee: E-LDP for every E that :func:`certify_strategy` certifies.
        """
        values = np.asarray(values).ravel()
        m = self.strategy_matrix.shape[1]
        if not np.issubdtype(values.dtype, np.integer) or values.size and (values.min() < 0 or values.max() >= m):
            raise ValueError(f"values must be integers in 0..{m - 1}")
        scales = np.where(np.isfinite(self.noise_scales), self.noise_scales, 0.0)
        noise = rng.laplace(0.0, 1.0, size=(values.size, scales.size)) * scales
        reports = self.strategy_matrix[:, values].T + noise
        reports[:, np.isinf(self.noise_scales)] = 0.0
        return reports

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
            "n": n,
            "total_error": self.error(n),
        }


def expected_error(reconstruction_matrix: np.ndarray, noise_scales: np.ndarray, n: int) -> float:
    """Proposition 2: ``2 n sum_k s_k^2 ||B[:, k]||^2`` (``0 * inf = 0`` for unused rows)."""
    costs = np.sum(np.asarray(reconstruction_matrix, dtype=float) ** 2, axis=0)
    scales = np.asarray(noise_scales, dtype=float)
    terms = np.where(costs > 0, costs * np.where(np.isfinite(scales), scales, 0.0) ** 2, 0.0)
    if np.any((costs > 0) & np.isinf(scales)):
        return math.inf
    return float(2 * n * terms.sum())


def _privacy_loss(A: np.ndarray, scales: np.ndarray) -> np.ndarray:
    m = A.shape[1]
    loss = np.zeros((m, m))
    for row, scale in zip(A, scales):
        if np.isinf(scale):
            continue
        difference = np.abs(row[:, None] - row[None, :])
        if scale == 0:
            loss[difference > 0] = np.inf
        else:
            loss += difference / scale
    return loss


# ------------------------------------------------------------------ certificate
@dataclass
class StrategyCertificate:
    """Outcome of :func:`certify_strategy` (Proposition 1, necessary and sufficient).

    Attributes
    ----------
    verdict : "certified" or "violated"
    margin : float
        ``min (E - L)`` over pairs with finite E (``inf`` if none).
    tightest_pair : tuple (x, x') or None
        The pair attaining the margin.
    privacy_loss : ndarray (m, m)
        ``L``.
    violations : list of (x, x') with ``L > E + tolerance``.
    tolerance : float
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
    """Decide whether a strategy's report is E-LDP (Proposition 1).

    A pair is accepted when ``L(x, x') <= E(x, x') + tolerance`` (absolute).
    """
    epsilon = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon)
    m = strategy.strategy_matrix.shape[1]
    if epsilon.k != m:
        raise ValueError(f"the strategy has {m} inputs but E is {epsilon.k} x {epsilon.k}")
    loss = strategy.privacy_loss()
    allowed = epsilon.epsilon
    finite = np.isfinite(allowed) & ~np.eye(m, dtype=bool)
    if not finite.any():
        return StrategyCertificate("certified", math.inf, None, loss, [], tolerance)
    with np.errstate(invalid="ignore"):
        slack = np.where(finite, allowed - loss, np.inf)
    flat = int(np.argmin(slack))
    pair = (flat // m, flat % m)
    violations = [(int(x), int(y)) for x, y in np.argwhere(slack < -tolerance)]
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
    """Problem (1) for a fixed invertible A: ``B = W A^{-1}``, then :func:`optimal_noise_scales`."""
    A = np.asarray(strategy_matrix, dtype=float)
    B = reconstruction(A, workload)
    return Strategy(A, B, optimal_noise_scales(A, B, epsilon))


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
    ``2 sum_k s_k^2 ||B[:, k]||^2`` (Proposition 2 with n = 1).
    """
    A = np.asarray(strategy_matrix, dtype=float)
    W = np.asarray(workload, dtype=float)
    scales = uniform_noise_scales(A, epsilon) if start_scales is None else np.asarray(start_scales, dtype=float)
    current = Strategy(A, reconstruction(A, W, scales), scales)
    start_check = certify_strategy(current, epsilon)
    if not start_check.certified:
        raise ValueError(f"the starting noise scales are not E-LDP (pair {start_check.tightest_pair})")
    history = [current.error(1)]
    for _ in range(iterations):
        new_scales = optimal_noise_scales(A, current.reconstruction_matrix, epsilon)
        candidate = Strategy(A, reconstruction(A, W, new_scales), new_scales)
        error = candidate.error(1)
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
