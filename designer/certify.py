"""Certify that a channel satisfies E-LDP (Definition 2 of context-aware-ldp.md).

For a finite output alphabet the all-subsets condition (4) is equivalent to the
per-output condition ``Q[x, y] <= exp(E[x, x']) Q[x', y]`` for every y: summing
the per-output inequalities over y in S gives (4), and S = {y} is a special case
of (4). So E-LDP holds iff the channel's tight matrix
``E_Q[x, x'] = max_y log(Q[x, y] / Q[x', y])`` is at most E entrywise.

Two modes:

* ``float`` — a vectorised max-plus product of log-probabilities
  (:func:`solvers.maxplus.max_log_ratio`). A pair is accepted when
  ``E_Q[x, x'] <= E[x, x'] + tolerance`` (absolute, in log space; default
  :data:`FLOAT_TOLERANCE`). "certified" therefore means E-LDP up to a factor
  ``exp(tolerance)`` on each likelihood ratio; pairs accepted only thanks to the
  tolerance are counted in ``n_within_tolerance``.
* ``exact`` — entries are rationals as written, and every comparison
  ``Q[x,y] <= exp(E[x,x']) Q[x',y]`` is decided exactly (rational arithmetic and
  rigorous Arb bounds on ``exp``). "certified" is then a proof. Candidate
  witnesses come from the float pass: for each pair, every output whose float
  log-ratio is within :data:`EXACT_CANDIDATE_WINDOW` of the float maximum is
  checked exactly (float logs of rationals are accurate to ~1e-13, far inside
  the window), and all zero patterns are checked exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

from designer.channel import Channel
from designer.exact import log_fraction
from designer.matrix_mechanism import Strategy, StrategyCertificate, certify_strategy
from designer.spec import PrivacyMatrix
from solvers.maxplus import max_log_ratio

#: Absolute log-space tolerance of the float certifier.
FLOAT_TOLERANCE = 1e-9
#: Outputs within this log distance of the float maximum are re-checked exactly.
EXACT_CANDIDATE_WINDOW = 1e-6

Verdict = Literal["certified", "violated"]


@dataclass(frozen=True)
class Violation:
    """A pair ``(x, x')`` whose constraint fails, with the witness output ``y``.

    ``log_ratio = log(Q[x, y] / Q[x', y])`` (``inf`` if ``Q[x', y] = 0``) exceeds
    ``allowed = E[x, x']``.
    """

    x: int
    x_prime: int
    y: int
    log_ratio: float
    allowed: float
    exact_ratio: Fraction | None = None

    def to_dict(self) -> dict:
        payload = {
            "x": self.x,
            "x_prime": self.x_prime,
            "y": self.y,
            "log_ratio": _json_number(self.log_ratio),
            "allowed": _json_number(self.allowed),
        }
        if self.exact_ratio is not None:
            payload["ratio"] = str(self.exact_ratio)
        return payload


@dataclass
class Certificate:
    """Outcome of :func:`certify`.

    Attributes
    ----------
    verdict : "certified" or "violated"
    mode : "float" or "exact"
    tight_epsilon : ndarray (k, k)
        The channel's tight E, ``E_Q``.
    margin : float
        ``min (E - E_Q)`` over pairs with finite E (``inf`` if E has none);
        negative iff some constraint is broken (beyond the tolerance in float mode).
    violations : list of Violation
        Every violating pair, with a witness output.
    tolerance : float
        The log-space tolerance used (0 in exact mode).
    n_within_tolerance : int
        Float mode: pairs that exceed E by at most the tolerance (accepted).
    """

    verdict: Verdict
    mode: Literal["float", "exact"]
    tight_epsilon: np.ndarray
    margin: float
    violations: list[Violation] = field(default_factory=list)
    tolerance: float = 0.0
    n_within_tolerance: int = 0

    @property
    def certified(self) -> bool:
        return self.verdict == "certified"

    def to_dict(self) -> dict:
        """A JSON-ready dictionary (``inf`` becomes the string ``"inf"``)."""
        return {
            "verdict": self.verdict,
            "mode": self.mode,
            "margin": _json_number(self.margin),
            "tolerance": self.tolerance,
            "n_within_tolerance": self.n_within_tolerance,
            "tight_E": [[_json_number(v) for v in row] for row in self.tight_epsilon.tolist()],
            "violations": [violation.to_dict() for violation in self.violations],
        }


def certify(
    channel: Channel | np.ndarray | Strategy,
    epsilon: PrivacyMatrix | np.ndarray,
    exact: bool = False,
    tolerance: float = FLOAT_TOLERANCE,
) -> Certificate | StrategyCertificate:
    """Decide whether ``channel`` is E-LDP (Definition 2, eq. 4).

    Parameters
    ----------
    channel : Channel or array (k, m), or a matrix-mechanism Strategy
        A :class:`~designer.matrix_mechanism.Strategy` is decided by Proposition 1
        of metric-ldp-range-counting.md (:func:`~designer.matrix_mechanism.certify_strategy`).
    epsilon : PrivacyMatrix or array (k, k)
    exact : bool
        Decide every comparison exactly (see module docstring); channels only.
    tolerance : float
        Float mode only: absolute slack in log space.

    Returns
    -------
    Certificate (a StrategyCertificate for a strategy)
    """
    if isinstance(channel, Strategy):
        if exact:
            raise ValueError("exact mode certifies channels; a strategy is certified by Proposition 1 in floating point")
        return certify_strategy(channel, epsilon, tolerance)
    channel = channel if isinstance(channel, Channel) else Channel(channel)
    epsilon = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon)
    if channel.k != epsilon.k:
        raise ValueError(f"the channel has {channel.k} inputs but E is {epsilon.k} x {epsilon.k}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    if exact:
        return _certify_exact(channel, epsilon)
    return _certify_float(channel, epsilon, tolerance)


def _tight(channel: Channel) -> tuple[np.ndarray, np.ndarray]:
    values, witness = max_log_ratio(channel.matrix)
    np.fill_diagonal(values, 0.0)
    return np.maximum(values, 0.0), witness


def _margin(allowed: np.ndarray, tight: np.ndarray) -> float:
    finite = np.isfinite(allowed)
    np.fill_diagonal(finite, False)
    if not finite.any():
        return math.inf
    return float(np.min(allowed[finite] - tight[finite]))


def _certify_float(channel: Channel, epsilon: PrivacyMatrix, tolerance: float) -> Certificate:
    tight, witness = _tight(channel)
    allowed = epsilon.epsilon
    excess = tight > allowed + tolerance
    within = (tight > allowed) & ~excess
    violations = [
        Violation(int(x), int(x_prime), int(witness[x, x_prime]), float(tight[x, x_prime]), float(allowed[x, x_prime]))
        for x, x_prime in np.argwhere(excess)
    ]
    return Certificate(
        verdict="violated" if violations else "certified",
        mode="float",
        tight_epsilon=tight,
        margin=_margin(allowed, tight),
        violations=violations,
        tolerance=tolerance,
        n_within_tolerance=int(within.sum()),
    )


def _certify_exact(channel: Channel, epsilon: PrivacyMatrix) -> Certificate:
    exact_q = channel.exact_matrix
    logs = np.vectorize(log_fraction, otypes=[float])(exact_q)
    logs[logs == -math.inf] = 0.0  # zero entries are handled by the exact support masks below
    k = channel.k
    positive = exact_q != 0
    tight = np.zeros((k, k))
    gaps = np.full((k, k), math.inf)
    violations: list[Violation] = []
    constraints = epsilon.exact_epsilon
    for x in range(k):
        for x_prime in range(k):
            if x == x_prime:
                continue
            rule = constraints[x, x_prime]
            support_break = positive[x] & ~positive[x_prime]
            if support_break.any():
                tight[x, x_prime] = math.inf
                if not rule.infinite:
                    gaps[x, x_prime] = -math.inf
                    y = int(np.flatnonzero(support_break)[0])
                    violations.append(Violation(x, x_prime, y, math.inf, float(rule)))
                continue
            both = positive[x] & positive[x_prime]
            if not both.any():
                continue
            ratios = np.where(both, logs[x] - logs[x_prime], -math.inf)
            candidates = np.flatnonzero(ratios >= ratios.max() - EXACT_CANDIDATE_WINDOW)
            exact_ratios = [exact_q[x, y] / exact_q[x_prime, y] for y in candidates]
            best = int(np.argmax(exact_ratios))
            best_ratio, witness = exact_ratios[best], int(candidates[best])
            tight[x, x_prime] = max(log_fraction(best_ratio), 0.0)
            if rule.infinite:
                continue
            gaps[x, x_prime] = rule.gap(best_ratio)
            if not rule.allows(best_ratio, Fraction(1)):
                violations.append(Violation(x, x_prime, witness, log_fraction(best_ratio), float(rule), best_ratio))
    finite = np.isfinite(epsilon.epsilon)
    np.fill_diagonal(finite, False)
    return Certificate(
        verdict="violated" if violations else "certified",
        mode="exact",
        tight_epsilon=tight,
        margin=float(gaps[finite].min()) if finite.any() else math.inf,
        violations=violations,
        tolerance=0.0,
    )


def _json_number(value: float):
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return float(value)
