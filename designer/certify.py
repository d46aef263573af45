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
  ``Q[x,y] <= exp(E[x,x']) Q[x',y]`` is decided exactly. "certified" is then a
  proof. A float filter with a proven error bound
  (:mod:`designer.exact_filter`) decides most pairs at NumPy speed; the pairs
  within that bound of their level, and the violated pairs (for their exact
  witness), are finished in rational arithmetic and rigorous Arb balls in log
  space (:meth:`designer.exact.ExactEpsilon.gap`). Zero patterns are exact. The
  margin and each violation's ``excess`` carry the exact sign: a violation by
  ``1e-17`` reports a negative margin, never ``0.0``.

Float mode refuses a channel with a subnormal entry, or an exact entry that
underflows to 0 as a float: their float ratios are quantised or lost, so the
float tight E would be wrong (exact mode handles them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

import numpy as np

from designer.channel import Channel
from designer.exact import LARGEST_LEVEL, ExactEpsilon, collector_paused, describe_fraction, log_fraction
from designer.spec import PrivacyMatrix
from solvers.maxplus import max_log_ratio

if TYPE_CHECKING:
    from designer.metric.strategy import Strategy, StrategyCertificate

#: Absolute log-space tolerance of the float certifier.
FLOAT_TOLERANCE = 1e-9
#: Exact mode: a violation's excess is taken from floats when it exceeds the filter's
#: error window this many times over (its sign and leading digits are then certain);
#: closer ones are computed in Arb.
FLOAT_GAP_TRUSTED = 1e6

#: Digits beyond which a level is printed in scientific notation (:attr:`Violation.level_text`).
LEVEL_DIGITS = 17

Verdict = Literal["certified", "violated"]


@dataclass(frozen=True)
class Violation:
    """A pair ``(x, x')`` whose constraint fails, with the witness output ``y``.

    ``log_ratio = log(Q[x, y] / Q[x', y])`` (``inf`` if ``Q[x', y] = 0``) exceeds
    ``allowed = E[x, x']``. In exact mode ``exact_ratio`` is the ratio as a
    rational, ``level`` the exact level, and ``excess = log_ratio - allowed`` is
    computed from them with its sign exact (so it is positive even when the two
    floats round to the same number).
    """

    x: int
    x_prime: int
    y: int
    log_ratio: float
    allowed: float
    exact_ratio: Fraction | None = None
    excess: float | None = None
    level: ExactEpsilon | None = None

    @property
    def level_text(self) -> str:
        """The level for messages: its float, or for a level beyond the double range
        (whose float is only a stand-in, :data:`~designer.exact.LARGEST_LEVEL`) its exact value."""
        if self.level is not None and self.level.beyond_double:
            return self.level.describe(LEVEL_DIGITS)
        return f"{self.allowed:.6g}"

    def describe(self, bound: str = "E", digits: int = 6) -> str:
        """The broken constraint for a one-line message: pair, witness, log-ratio and the level it exceeds."""
        return (f"x={self.x}, x'={self.x_prime}, witness y={self.y}: log-ratio {self.log_ratio:.{digits}g} "
                f"> {bound} = {self.level_text}")

    def to_dict(self) -> dict:
        payload = {
            "x": self.x,
            "x_prime": self.x_prime,
            "y": self.y,
            "log_ratio": _json_number(self.log_ratio),
            "allowed": _json_number(self.allowed),
        }
        if self.level is not None and self.level.beyond_double:
            payload["level"] = self.level_text
        if self.excess is not None:
            payload["excess"] = _json_number(self.excess)
        if self.exact_ratio is not None:
            payload["ratio"] = describe_fraction(self.exact_ratio)
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
        A :class:`~designer.metric.strategy.Strategy` is decided by Proposition 1
        of metric-ldp-range-counting.md (:func:`~designer.metric.strategy.certify_strategy`).
    epsilon : PrivacyMatrix or array (k, k)
    exact : bool
        Decide every comparison exactly (see module docstring); for a strategy,
        Proposition 1 with no tolerance (it is decided in rational arithmetic anyway).
    tolerance : float
        Float mode only: absolute slack in log space.

    Returns
    -------
    Certificate (a StrategyCertificate for a strategy)
    """
    if not isinstance(channel, (Channel, np.ndarray)):  # perhaps a strategy: only then load its module
        from designer.metric.strategy import Strategy, certify_strategy

        if isinstance(channel, Strategy):
            # Proposition 1 for the released discrete Laplace noise is decided in rational
            # arithmetic; exact mode allows no tolerance at all.
            return certify_strategy(channel, epsilon, 0.0 if exact else tolerance)
    channel = channel if isinstance(channel, Channel) else Channel(channel)
    epsilon = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon)
    if channel.k != epsilon.k:
        raise ValueError(f"the channel has {channel.k} inputs but E is {epsilon.k} x {epsilon.k}")
    if not tolerance >= 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    if exact:
        with collector_paused():  # up to a million exact ratios and levels, no cycles
            return _certify_exact(channel, epsilon)
    _check_float_entries(channel)
    return _certify_float(channel, epsilon, tolerance)


def _check_float_entries(channel: Channel) -> None:
    """Refuse float mode for entries whose float ratios are quantised or lost.

    A subnormal entry carries fewer than 53 significant bits (``1.2e-323`` and
    ``7.5e-324`` both round to 2 units of ``2^-1074``: their float ratio is 1, the
    written one 1.6), and an exact entry that underflows to 0 turns a finite
    ratio into none at all.
    """
    values = channel.matrix
    subnormal = np.argwhere((values > 0) & (values < np.finfo(float).tiny))
    if subnormal.size:
        x, y = subnormal[0]
        raise ValueError(
            f"channel row {x}, column {y}: value {float(values[x, y])!r} is subnormal, so its float ratios "
            "are quantised and float mode cannot certify it; use exact=True (--exact)"
        )
    if channel.is_exact and channel.lazy_exact is None:  # a lazily read channel's zeros are written zeros
        zeros = np.argwhere(values == 0)
        lost = np.flatnonzero(channel.exact_matrix[zeros[:, 0], zeros[:, 1]] != 0) if zeros.size else []
        if len(lost):
            x, y = zeros[lost[0]]
            raise ValueError(
                f"channel row {x}, column {y}: value {describe_fraction(channel.exact_matrix[x, y], 40)} "
                "underflows to 0 as a float, so float mode cannot certify it; use exact=True (--exact)"
            )


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
    pairs = np.argwhere(excess)
    # a level beyond the double range (the library's exact E) is named by its exact value
    stand_in = allowed[pairs[:, 0], pairs[:, 1]] == LARGEST_LEVEL
    levels = [None] * len(pairs)
    if stand_in.any():
        for index, level in zip(np.flatnonzero(stand_in), epsilon.exact_levels(*pairs[stand_in].T)):
            levels[index] = level
    violations = [
        Violation(
            int(x), int(x_prime), int(witness[x, x_prime]), float(tight[x, x_prime]), float(allowed[x, x_prime]),
            excess=float(tight[x, x_prime] - allowed[x, x_prime]), level=level,
        )
        for (x, x_prime), level in zip(pairs.tolist(), levels)
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
    """Exact mode: the float filter decides most pairs, rationals and Arb the rest."""
    # imported here: float mode (every command's default) never needs the filter
    from designer.exact_filter import (
        SUPPORT_BREAK,
        UNDECIDED,
        VIOLATED,
        decimal_logs,
        exact_signs,
        find_candidates,
        rational_logs,
        screen_pairs,
    )

    lazy = channel.lazy_exact  # a channel read from decimals: its rationals only where the filter needs them
    logs = rational_logs(channel.exact_matrix) if lazy is None else decimal_logs(channel.matrix, lazy)
    allowed = epsilon.epsilon
    screen = screen_pairs(logs, allowed)
    status = screen.status
    tight = np.maximum(screen.difference, 0.0)
    np.fill_diagonal(tight, 0.0)
    finite = np.isfinite(allowed)
    np.fill_diagonal(finite, False)
    # filter-decided pairs: the float gap is within the window of the exact one, and
    # the window is below |gap|, so its sign is exact
    with np.errstate(invalid="ignore"):  # inf - inf on unconstrained pairs, masked out
        gaps = np.where(finite, allowed - tight, np.inf)
    gaps[status == SUPPORT_BREAK] = -np.inf
    found: dict[tuple[int, int], Violation] = {}
    broken_rows, broken_others = np.nonzero(status == SUPPORT_BREAK)
    broken_levels = epsilon.exact_levels(broken_rows, broken_others)  # only the levels needed are read
    for x, x_prime, level in zip(broken_rows.tolist(), broken_others.tolist(), broken_levels):
        found[x, x_prime] = Violation(
            x, x_prime, int(screen.witness[x, x_prime]), math.inf, float(allowed[x, x_prime]),
            excess=math.inf, level=level,
        )
    rows, others = np.nonzero((status == UNDECIDED) | (status == VIOLATED))
    if len(rows):
        candidates = find_candidates(logs, screen, rows, others)
        signs = exact_signs(candidates, epsilon.exact_exp_ratios(rows, others),
                            lambda pair: epsilon.exact_levels(rows[pair:pair + 1], others[pair:pair + 1])[0])
        if np.any(signs[status[rows, others] == VIOLATED] >= 0):
            raise ArithmeticError("the float filter was contradicted by exact arithmetic")
        tied = signs == 0
        tight[rows[tied], others[tied]] = allowed[rows[tied], others[tied]]
        gaps[rows[tied], others[tied]] = 0.0
        exact_gaps: dict[tuple, float] = {}  # many pairs share a ratio and a level: integer keys hash fast
        negative = np.flatnonzero(signs < 0)  # the levels of the few violated pairs are built
        for pair, level in zip(negative.tolist(), epsilon.exact_levels(rows[negative], others[negative])):
            x, x_prime = int(rows[pair]), int(others[pair])
            ratio, y = candidates.best(pair)
            log_ratio = log_fraction(ratio)
            gap = allowed[x, x_prime] - log_ratio
            if gap > -FLOAT_GAP_TRUSTED * screen.window[x, x_prime]:  # too close for the float: Arb
                number = level.exp_value if level.exp_value is not None else level.value
                key = (level.exp_value is None, number.numerator, number.denominator, ratio.numerator, ratio.denominator)
                gap = exact_gaps[key] if key in exact_gaps else exact_gaps.setdefault(key, level.gap(ratio))
            tight[x, x_prime], gaps[x, x_prime] = log_ratio, gap
            found[x, x_prime] = Violation(
                x, x_prime, y, log_ratio, float(allowed[x, x_prime]), ratio, excess=-gap, level=level
            )
        # the margin needs the exact positive gaps only when nothing is tied or violated
        exact_positive = not found and not tied.any() and not np.any(status == VIOLATED)
        positive = np.flatnonzero(signs > 0)
        if not exact_positive:
            gaps[rows[positive], others[positive]] = math.inf  # above the (tied or negative) minimum
            positive = positive[:0]
        for pair, level in zip(positive.tolist(), epsilon.exact_levels(rows[positive], others[positive])):
            best = candidates.best(pair)
            ratio = best[0] if best is not None and best[0] > 1 else Fraction(1)
            gaps[int(rows[pair]), int(others[pair])] = level.gap(ratio)
    violations = [found[pair] for pair in sorted(found)]
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
