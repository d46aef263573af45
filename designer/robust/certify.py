"""Decide (eps, F)-RLDP (Definition 1, eq. (2)) for a channel and a chi-square confidence set F.

For an output y and secrets ``s1 != s2``, (2) reads (as in (52))

    max_{P in F}  Q_{y,s1} . P_{U|s1}  -  e^eps Q_{y,s2} . P_{U|s2}  <=  0.

Only the two conditionals ``(R1, R2) = (P_{U|s1}, P_{U|s2})`` matter, and their
joint range over F is exactly (minimise (4) over the secret marginal and the other
conditionals; Cauchy-Schwarz gives ``min_t sum_s a_s^2 / t_s = (sum_s a_s)^2``)

    P̂_{s1} h_{s1}(R1) + P̂_{s2} h_{s2}(R2) <= sqrt(B + 1) - 1 + P̂_{s1} + P̂_{s2},
    h_s(R) = sqrt(sum_u P̂_{u|s}^2 / R_u),                                     (J)

a convex set (``h_s`` is convex). With ``R2 = P̂_{U|s2}`` it gives back Lemma 8's
projection ``{R1 : sum_u P̂_{u|s1}^2 / R1_u <= B_{s1} + 1}``. The certifier works per
``(y, s1, s2)`` in three steps (:func:`solvers.chi2ball.maximise_over_two_balls`):

1. Proposition 4 screen: ``max_u Q[(s1,u),y] <= e^eps min_u Q[(s2,u),y]`` settles
   the triple for every distribution (compared as logarithms).
2. Sound mode: maximise over the product of the projected balls ``F_{U|s1} x F_{U|s2}``
   (Lemma 8, a superset of (J)); each ball maximum has a closed-form dual bound
   (:func:`solvers.chi2ball.maximise_over_ball`, computed once per ``(s, y)``), so
   ``bound <= tolerance`` is a proof. Failing that, the Lemma 9 lower bounds
   ``P_{u|s2} >= P^min_{u|s2}`` give ``P(y|s2) >= sum_u Q[(s2,u),y] P^min_{u|s2}``,
   compared with ``max_u Q[(s1,u),y]`` in log space (this settles large eps).
   If ``Q[(s2,u),y] = 0`` on the support of ``P̂_{U|s2}`` then ``P(y|s2) = 0`` at
   ``P̂``: the best ``R1`` of the Lemma 8 ball is tried as a witness (violated at every eps).
3. Violation search over (J) (concave one-dimensional search, then branch and
   bound with the same rigorous bounds, which can prove what step 2 could not).
   A point of (J) beating the tolerance becomes an explicit ``P in F``
   (``P_{s,u} = t_s R^s_u``, ``t ∝ P̂_s h_s(R^s)``,
   :meth:`ConfidenceSet.lift_conditionals`), which is re-checked directly:
   ``F.contains(P)`` and the ratio of (2) ``> e^eps``.

Verdicts: ``certified`` (every triple proved), ``violated`` (a checked witness),
``inconclusive`` (neither within the branch-and-bound budget).

Tolerance: each column ``Q_y`` is divided by its largest entry ((2) is invariant
under this) and (2) is checked as ``P(y|s1) - e^eps P(y|s2) <= tolerance`` on the
scaled column; default 1e-9, like :func:`designer.certify.certify`.

Floating point. Every finite ``eps >= 0`` is handled: the bounds of steps 2-3 are
computed for (2) divided by ``K = max(1, 2^-512 e^eps max_u Q[(s2,u),y])`` (obtained
from logarithms): as written while ``e^eps`` times the column stays below ``2^512``, and
otherwise scaled so that no coefficient exceeds ``2^512`` (no overflow in the duals; a
factor that underflows to 0 only loosens a bound), and the screens compare logarithms with an explicit rounding allowance. The radii of F
are rounded outwards (a superset of F gives valid bounds) and ``sqrt(B+1) - 1`` is
computed without cancellation (:attr:`ConfidenceSet.root_excess`), so a tiny ``B``
(huge n, alpha near 1) does not collapse F to the point P̂. A bound that is NaN or
infinite proves nothing (the triple stays open), and a witness is re-checked
against F itself in log space with a rounding allowance, so no verdict rests on a
NaN or an overflow.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from designer.channel import Channel
from solvers.chi2ball import maximise_over_ball, maximise_over_two_balls

from designer.defaults import ROBUST_MAX_INTERVALS as DEFAULT_MAX_INTERVALS
from designer.defaults import ROBUST_TOLERANCE as DEFAULT_TOLERANCE


@dataclass(frozen=True)
class RobustWitness:
    """A distribution ``P in F`` under which the channel breaks (2).

    Attributes
    ----------
    distribution : ndarray, shape (|S|, |U|)
        ``P[s, u]``.
    y : int
        The output.
    s, s_prime : int
        Secrets with ``P(Y=y | S=s) > e^eps P(Y=y | S=s')``.
    ratio : float
        ``P(Y=y | S=s) / P(Y=y | S=s')`` (``inf`` when ``P(Y=y | S=s') = 0`` or when it
        overflows; :attr:`log_ratio` is then the meaningful number).
    chi_square : float
        ``sum_x (P̂_x - P_x)^2 / P_x`` (``<= B``).
    log_ratio : float
        ``log P(Y=y | S=s) - log P(Y=y | S=s')`` (``> eps``; ``inf`` when ``P(Y=y | S=s') = 0``).
    """

    distribution: np.ndarray
    y: int
    s: int
    s_prime: int
    ratio: float
    chi_square: float
    log_ratio: float


@dataclass(frozen=True)
class RobustCertificate:
    """Outcome of :func:`certify_robust`.

    Attributes
    ----------
    verdict : str
        ``"certified"``, ``"violated"`` or ``"inconclusive"``.
    epsilon, tolerance : float
    worst_bound : float
        Largest proven upper bound of ``P(y|s1) - e^eps P(y|s2)`` (scaled column) over
        the triples settled by a bound (``-inf`` if the screen settled all).
    witness : RobustWitness or None
        The strongest violation found (largest ratio).
    n_triples, n_screened, n_decoupled, n_branched, n_violated, n_inconclusive : int
        How many (y, s1, s2) triples there are, were settled by Proposition 4, by
        the decoupled (sound-mode) bound, by branch and bound, were violated, or stayed open.
    seconds : float
    """

    verdict: str
    epsilon: float
    tolerance: float
    worst_bound: float
    witness: RobustWitness | None
    n_triples: int
    n_screened: int
    n_decoupled: int
    n_branched: int
    n_violated: int
    n_inconclusive: int
    seconds: float
    labels: tuple = field(default=(), repr=False)

    @property
    def certified(self) -> bool:
        return self.verdict == "certified"

    def to_dict(self) -> dict:
        """JSON-ready summary (the witness P with its labels when violated)."""
        out = {
            "verdict": self.verdict, "epsilon": self.epsilon, "tolerance": self.tolerance,
            "worst_bound": None if not np.isfinite(self.worst_bound) else self.worst_bound,
            "triples": self.n_triples, "screened": self.n_screened, "decoupled": self.n_decoupled,
            "branched": self.n_branched, "violated": self.n_violated, "inconclusive": self.n_inconclusive,
            "seconds": self.seconds,
        }
        if self.witness is not None:
            secrets, publics = self.labels or (None, None)
            w = self.witness
            out["witness"] = {
                "y": w.y, "s": secrets[w.s] if secrets else w.s, "s_prime": secrets[w.s_prime] if secrets else w.s_prime,
                # JSON has no infinity: null means P(y|s') = 0 (or a ratio beyond the float range)
                "ratio": w.ratio if math.isfinite(w.ratio) else None,
                "log_ratio": w.log_ratio if math.isfinite(w.log_ratio) else None,
                "zero_denominator": not math.isfinite(w.log_ratio),
                "chi_square": w.chi_square,
                "P": [
                    {"secret": secrets[s] if secrets else s, "public": publics[u] if publics else u,
                     "probability": float(w.distribution[s, u])}
                    for s in range(w.distribution.shape[0]) for u in range(w.distribution.shape[1])
                ],
            }
        return out


def conditional_ratio(matrix: np.ndarray, distribution: np.ndarray, y: int, s: int, s_prime: int) -> float:
    """``P(Y=y | S=s) / P(Y=y | S=s')`` under ``X ~ distribution`` (rows of ``matrix`` ordered by (s, u)).

    ``inf`` when only the denominator is 0 (or the quotient overflows), and 0 when the
    numerator is 0 ((2) holds).
    """
    numerator, denominator = _conditionals(matrix, distribution, y, s, s_prime)
    if numerator == 0:
        return 0.0
    with np.errstate(over="ignore"):
        return float(numerator / denominator) if denominator > 0 else float("inf")


def certify_robust(channel, confidence, epsilon: float, tolerance: float = DEFAULT_TOLERANCE,
                   max_intervals: int = DEFAULT_MAX_INTERVALS) -> RobustCertificate:
    """Decide (eps, F)-RLDP for a channel whose rows are ordered by (s, u).

    Every finite ``epsilon >= 0`` is handled, including levels where ``e^eps``
    overflows (``eps > 709.78``): the screens compare logarithms, and the bounds
    maximise (2) divided by ``K = max(1, 2^-512 e^eps max_u Q[(s2,u),y])`` (computed as a
    logarithm), whose coefficients stay below ``2^512`` in magnitude. A bound or a search value that is
    not finite never proves anything: the triple stays open (``inconclusive``).

    Parameters
    ----------
    channel : Channel or array_like, shape (|S| |U|, m)
    confidence : designer.robust.confidence.ConfidenceSet
        Supplies P̂ (``conditional_estimate``, ``secret_marginal``), ``B`` of (3)
        (``radius``) and the lift of conditionals to ``P in F``.
    epsilon : float
        Finite, ``>= 0``.
    tolerance : float
        On the column-scaled difference of (2) (module docstring).
    max_intervals : int
        Branch-and-bound budget per triple.

    Returns
    -------
    RobustCertificate

    Raises
    ------
    ValueError
        Shape mismatch, or ``epsilon`` negative, NaN or infinite.
    """
    start = time.perf_counter()
    matrix = (channel if isinstance(channel, Channel) else Channel(channel)).matrix
    n_secret, n_public = confidence.shape
    if matrix.shape[0] != n_secret * n_public:
        raise ValueError(f"the channel has {matrix.shape[0]} rows but |S| x |U| = {n_secret} x {n_public}")
    epsilon = float(epsilon)
    if not 0 <= epsilon < math.inf:
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    scale = matrix.max(axis=0)
    scaled = np.divide(matrix, scale, out=np.zeros_like(matrix), where=scale > 0).reshape(n_secret, n_public, -1)
    highest, lowest = scaled.max(axis=1), scaled.min(axis=1)  # (|S|, m)
    weights, conditional = confidence.secret_marginal, confidence.conditional_estimate
    # Lemma 8 radii and the slack of (J), rounded outwards: a superset of F only loosens
    # the bounds (sound), and a witness is always re-checked against F itself.
    radius = _round_up(1.0 + confidence.conditional_radius * OUTWARD)
    slack = confidence.root_excess * OUTWARD
    lower_conditional = confidence.conditional_bounds()[0] * INWARD  # Lemma 9, rounded down
    # P(y|s) >= sum_u Q[(s,u),y] P^min_{u|s}: its logarithm, per (s, y), without underflow
    log_lower = _log_dot(scaled, lower_conditional)
    with np.errstate(divide="ignore"):
        log_highest, log_lowest = np.log(highest), np.log(lowest)
        # each (s, y) block divided by its own largest entry, in [0, 1] (0 where the block is 0)
        unit = np.exp(np.log(scaled) - np.where(np.isfinite(log_highest), log_highest, 0.0)[:, None, :])
    cache: dict[tuple[int, int, int], float] = {}

    def ball_bound(s: int, y: int, sign: int) -> float:
        """Sound bound of ``max sign * unit[s, :, y] . R`` over the Lemma 8 ball of s (coefficients in [-1, 1])."""
        key = (s, y, sign)
        if key not in cache:
            cache[key] = maximise_over_ball(sign * unit[s, :, y], conditional[s], radius[s]).upper_bound
        return cache[key]

    counts = dict(screened=0, decoupled=0, branched=0, violated=0, inconclusive=0)
    worst, witness, n_triples = -np.inf, None, 0
    for s1 in range(n_secret):
        for s2 in range(n_secret):
            if s1 == s2:
                continue
            settled = _proposition4_screen(log_highest[s1], log_lowest[s2], epsilon, tolerance)
            open_outputs = np.flatnonzero(~settled)
            n_triples += matrix.shape[1]
            counts["screened"] += matrix.shape[1] - open_outputs.size
            gamma = _round_up(slack + weights[s1] + weights[s2], ulps=3)
            for y in open_outputs:
                # (2) / K: P(y|s1) h1 / K - P(y|s2) e^eps h2 / K with unit columns, K = max(1, e^eps h2 / 2^512)
                log_k = max(0.0, epsilon + log_highest[s2, y] - LOG_HEADROOM)
                first = math.exp(log_highest[s1, y] - log_k)
                second = math.exp(epsilon + log_highest[s2, y] - log_k) if highest[s2, y] > 0 else 0.0
                target = tolerance * math.exp(-log_k)
                decoupled = first * ball_bound(s1, y, 1) + second * ball_bound(s2, y, -1)  # balls solved once per (s, y)
                if _proves(decoupled, target):
                    counts["decoupled"] += 1
                    worst = max(worst, _unscale(decoupled, log_k))
                    continue
                if _proposition4_screen(log_highest[s1, y:y + 1], log_lower[s2, y:y + 1], epsilon, tolerance)[0]:
                    counts["decoupled"] += 1  # the Lemma 9 lower bound on P(y|s2), in log space
                    continue
                if _reaches_zero(scaled[s2, :, y], conditional[s2]):
                    # P(y|s2) = 0 at P = P̂ while P(y|s1) > 0 somewhere: violated for every eps
                    best = maximise_over_ball(scaled[s1, :, y], conditional[s1], 1.0 + confidence.conditional_radius[s1]).point
                    found = _witness(matrix, confidence, (best, conditional[s2]), y, s1, s2, epsilon, tolerance)
                    if found is not None:
                        counts["violated"] += 1
                        witness = _stronger(witness, found)
                        continue
                result = maximise_over_two_balls(
                    first * unit[s1, :, y], conditional[s1], weights[s1],
                    -second * unit[s2, :, y], conditional[s2], weights[s2], gamma,
                    target=target, max_intervals=max_intervals)
                if result.points is not None and np.isfinite(result.value) and result.value > target:
                    found = _witness(matrix, confidence, result.points, y, s1, s2, epsilon, tolerance)
                    if found is not None:
                        counts["violated"] += 1
                        witness = _stronger(witness, found)
                        continue
                if result.converged and _proves(result.upper_bound, target):
                    counts["branched"] += 1
                    worst = max(worst, _unscale(result.upper_bound, log_k))
                else:
                    counts["inconclusive"] += 1
    verdict = "violated" if counts["violated"] else "inconclusive" if counts["inconclusive"] else "certified"
    labels = (tuple(confidence.secret_labels), tuple(confidence.public_labels))
    return RobustCertificate(verdict, epsilon, tolerance, float(worst), witness, n_triples,
                             counts["screened"], counts["decoupled"], counts["branched"], counts["violated"],
                             counts["inconclusive"], time.perf_counter() - start, labels)


#: ``log`` of the largest double: ``e^eps`` overflows beyond it.
LOG_LARGEST_FLOAT = math.log(np.finfo(float).max)
#: Coefficients of the chi-square bounds are kept below ``e^LOG_HEADROOM = 2^512``: far from
#: overflow in the dual's intermediate sums, and unscaled (as written) up to ``e^eps ~ 1e154``.
LOG_HEADROOM = 512 * math.log(2.0)
#: Relative rounding allowance of the certifier's own arithmetic (a few ulps, generously).
ROUNDING = 64 * np.finfo(float).eps
OUTWARD, INWARD = 1.0 + ROUNDING, 1.0 - ROUNDING


def _round_up(value, ulps: int = 2):
    """``value`` moved up by ``ulps`` units in the last place: covers the rounding of a sum of that many terms."""
    for _ in range(ulps):
        value = np.nextafter(value, np.inf)
    return value


def _proves(bound: float, target: float) -> bool:
    """A bound proves a triple only when it is a finite number ``<= target`` (never a NaN or inf accident)."""
    return bool(np.isfinite(bound) and bound <= target)


def _unscale(bound: float, log_k: float) -> float:
    """``K bound``: a bound on (2) divided by ``K = e^log_k`` back in the units of (2) (``-inf`` if it overflows)."""
    if bound == 0:
        return 0.0
    magnitude = math.log(abs(bound)) + log_k
    return math.copysign(math.exp(magnitude) if magnitude <= LOG_LARGEST_FLOAT else math.inf, bound)


def _proposition4_screen(log_highest: np.ndarray, log_lowest: np.ndarray, epsilon: float,
                         tolerance: float) -> np.ndarray:
    """Outputs where ``highest <= e^eps lowest`` is proved, compared in log space (Proposition 4).

    ``highest = max_u Q[(s1,u),y]`` bounds ``P(y|s1)`` from above and ``lowest`` bounds
    ``P(y|s2)`` from below (the row minimum, or the Lemma 9 bound). With
    ``delta = log highest - eps - log lowest`` computed up to ``eta`` (rounding of the
    three terms), ``delta <= -eta`` proves ``highest <= e^eps lowest``; ``delta <= 0``
    proves ``P(y|s1) - e^eps P(y|s2) <= highest (1 - e^-eta) <= eta``, enough when
    ``eta <= tolerance`` (column scaled to 1). ``highest <= tolerance`` settles the output
    (``P(y|s1) <= highest``), whatever ``lowest``.
    """
    log_highest, log_lowest = np.asarray(log_highest, float), np.asarray(log_lowest, float)
    settled = np.exp(log_highest) <= tolerance * INWARD
    both = ~settled & (log_highest > -np.inf) & (log_lowest > -np.inf)
    high, low = np.where(both, log_highest, 0.0), np.where(both, log_lowest, 0.0)  # finite where used
    delta = high - epsilon - low
    eta = ROUNDING * (1.0 + abs(high) + epsilon + abs(low))
    return settled | (both & ((delta <= -eta) | ((delta <= 0) & (eta <= tolerance))))


def _log_dot(scaled: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """``log sum_u scaled[s, u, y] lower[s, u]`` per (s, y), in log space (``-inf`` for an exact 0)."""
    with np.errstate(divide="ignore"):
        terms = np.log(scaled) + np.log(lower)[:, :, None]  # (|S|, |U|, m); -inf where a factor is 0
    peak = terms.max(axis=1)
    safe = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        total = safe + np.log(np.exp(terms - safe[:, None, :]).sum(axis=1))
    # rounding of the exp/log/sum chain: pull the logarithm down by a relative allowance
    return np.where(np.isfinite(peak), total - ROUNDING * (1.0 + np.abs(total)) * scaled.shape[1], -np.inf)


def _reaches_zero(column: np.ndarray, conditional: np.ndarray) -> bool:
    """Is ``Q_{y,s} . P̂_{U|s} = 0`` exactly (every entry on the support of ``P̂_{U|s}`` is 0)?"""
    return not np.any(column[conditional > 0] > 0)


def _stronger(current: RobustWitness | None, found: RobustWitness) -> RobustWitness:
    """The witness with the larger log-ratio of (2)."""
    return found if current is None or found.log_ratio > current.log_ratio else current


def _conditionals(matrix, distribution, y, s1, s2) -> tuple[float, float]:
    """``(P(Y=y | S=s1), P(Y=y | S=s2))`` under ``X ~ distribution``."""
    column = matrix[:, y].reshape(distribution.shape)
    return (float(column[s1] @ distribution[s1] / distribution[s1].sum()),
            float(column[s2] @ distribution[s2] / distribution[s2].sum()))


def _witness(matrix, confidence, points, y, s1, s2, epsilon, tolerance) -> RobustWitness | None:
    """Turn a point of (J) into ``P in F`` and re-check it directly; None if it fails.

    The check is in log space and allows for rounding: ``log P(y|s1) - log P(y|s2) > eps``
    (or ``P(y|s2) = 0 < P(y|s1)``) and ``P(y|s1) - e^eps P(y|s2) > tolerance +`` its
    rounding error, on the column scaled to 1. No step can turn a NaN into a witness.
    """
    rows = np.array(confidence.conditional_estimate)
    rows[s1], rows[s2] = points
    try:
        distribution = confidence.lift_conditionals(rows, slack=1e-12)
    except ValueError:
        return None
    estimate, limit = confidence.estimate, confidence.radius * (1 - 1e-9)  # margin against rounding
    statistic = confidence.chi_square(distribution)
    if statistic > limit:  # pull towards P̂ (the statistic is convex, about quadratic, and 0 at P̂)
        quadratic = (1 - math.sqrt(limit / statistic)) * (1 + 1e-9)
        linear = min(1.0, (statistic - limit) / statistic + 1e-12)  # enough by convexity alone
        for theta in (quadratic, linear):
            pulled = (1 - theta) * distribution + theta * estimate
            statistic = confidence.chi_square(pulled)
            if statistic <= limit:
                break
        distribution = pulled
    if not (statistic <= limit and confidence.contains(distribution)):
        return None
    numerator, denominator = _conditionals(matrix, distribution, y, s1, s2)
    peak = float(matrix[:, y].max())
    if not (np.isfinite(numerator) and np.isfinite(denominator) and numerator > 0 and peak > 0):
        return None
    if denominator > 0:
        log_ratio = math.log(numerator) - math.log(denominator)
        exponent = epsilon + math.log(denominator)  # log(e^eps P(y|s2))
        allowed = math.exp(exponent) if exponent <= LOG_LARGEST_FLOAT else math.inf
        # relative error of exp(exponent) and of the two sums
        error = (numerator + allowed) * (ROUNDING * (1.0 + abs(exponent)) + ROUNDING * matrix.shape[0])
        excess = (numerator - allowed - error) / peak
    else:
        log_ratio, excess = math.inf, numerator * (1 - ROUNDING) / peak
    if not (log_ratio > epsilon and excess > tolerance):
        return None
    ratio = math.exp(log_ratio) if log_ratio <= LOG_LARGEST_FLOAT else math.inf
    return RobustWitness(distribution, int(y), int(s1), int(s2), ratio, statistic, log_ratio)
