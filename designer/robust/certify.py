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
   the triple for every distribution.
2. Sound mode: maximise over the product of the projected balls ``F_{U|s1} x F_{U|s2}``
   (Lemma 8, a superset of (J)); each ball maximum has a closed-form dual bound
   (:func:`solvers.chi2ball.maximise_over_ball`, computed once per ``(s, y)``), so
   ``bound <= tolerance`` is a proof.
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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from designer.channel import Channel
from solvers.chi2ball import maximise_over_ball, maximise_over_two_balls

DEFAULT_TOLERANCE = 1e-9
#: Branch-and-bound budget (intervals) per (y, s, s') triple before a triple is inconclusive.
DEFAULT_MAX_INTERVALS = 2048


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
        ``P(Y=y | S=s) / P(Y=y | S=s')``.
    chi_square : float
        ``sum_x (P̂_x - P_x)^2 / P_x`` (``<= B``).
    """

    distribution: np.ndarray
    y: int
    s: int
    s_prime: int
    ratio: float
    chi_square: float


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
                "ratio": w.ratio, "log_ratio": float(np.log(w.ratio)), "chi_square": w.chi_square,
                "P": [
                    {"secret": secrets[s] if secrets else s, "public": publics[u] if publics else u,
                     "probability": float(w.distribution[s, u])}
                    for s in range(w.distribution.shape[0]) for u in range(w.distribution.shape[1])
                ],
            }
        return out


def conditional_ratio(matrix: np.ndarray, distribution: np.ndarray, y: int, s: int, s_prime: int) -> float:
    """``P(Y=y | S=s) / P(Y=y | S=s')`` under ``X ~ distribution`` (rows of ``matrix`` ordered by (s, u)).

    ``inf`` when only the denominator is 0, and 0 when the numerator is 0 ((2) holds).
    """
    n_public = distribution.shape[1]
    column = matrix[:, y].reshape(-1, n_public)
    numerator = column[s] @ distribution[s] / distribution[s].sum()
    denominator = column[s_prime] @ distribution[s_prime] / distribution[s_prime].sum()
    if numerator == 0:
        return 0.0
    return float(numerator / denominator) if denominator > 0 else float("inf")


def certify_robust(channel, confidence, epsilon: float, tolerance: float = DEFAULT_TOLERANCE,
                   max_intervals: int = DEFAULT_MAX_INTERVALS) -> RobustCertificate:
    """Decide (eps, F)-RLDP for a channel whose rows are ordered by (s, u).

    Parameters
    ----------
    channel : Channel or array_like, shape (|S| |U|, m)
    confidence : designer.robust.confidence.ConfidenceSet
        Supplies P̂ (``conditional_estimate``, ``secret_marginal``), ``B`` of (3)
        (``radius``) and the lift of conditionals to ``P in F``.
    epsilon : float
    tolerance : float
        On the column-scaled difference of (2) (module docstring).
    max_intervals : int
        Branch-and-bound budget per triple.

    Returns
    -------
    RobustCertificate
    """
    start = time.perf_counter()
    matrix = (channel if isinstance(channel, Channel) else Channel(channel)).matrix
    n_secret, n_public = confidence.shape
    if matrix.shape[0] != n_secret * n_public:
        raise ValueError(f"the channel has {matrix.shape[0]} rows but |S| x |U| = {n_secret} x {n_public}")
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    growth = float(np.exp(epsilon))
    scale = matrix.max(axis=0)
    scaled = np.divide(matrix, scale, out=np.zeros_like(matrix), where=scale > 0).reshape(n_secret, n_public, -1)
    highest, lowest = scaled.max(axis=1), scaled.min(axis=1)  # (|S|, m)
    weights, conditional = confidence.secret_marginal, confidence.conditional_estimate
    root = np.sqrt(confidence.radius + 1.0)

    radius = confidence.conditional_radius + 1.0
    cache: dict[tuple[int, int, int], float] = {}

    def ball_bound(s: int, y: int, sign: int) -> float:
        """Sound bound of max (sign = 1) or -e^eps min (sign = -1) of Q_{y,s} . R over the Lemma 8 ball of s."""
        key = (s, y, sign)
        if key not in cache:
            c = scaled[s, :, y] if sign > 0 else -growth * scaled[s, :, y]
            cache[key] = maximise_over_ball(c, conditional[s], radius[s]).upper_bound
        return cache[key]

    counts = dict(screened=0, decoupled=0, branched=0, violated=0, inconclusive=0)
    worst, witness, n_triples = -np.inf, None, 0
    for s1 in range(n_secret):
        for s2 in range(n_secret):
            if s1 == s2:
                continue
            open_outputs = np.flatnonzero(highest[s1] > growth * lowest[s2])
            n_triples += matrix.shape[1]
            counts["screened"] += matrix.shape[1] - open_outputs.size
            gamma = root - 1.0 + weights[s1] + weights[s2]
            for y in open_outputs:
                decoupled = ball_bound(s1, y, 1) + ball_bound(s2, y, -1)  # each ball solved once per (s, y)
                if decoupled <= tolerance:
                    counts["decoupled"] += 1
                    worst = max(worst, decoupled)
                    continue
                result = maximise_over_two_balls(
                    scaled[s1, :, y], conditional[s1], weights[s1],
                    -growth * scaled[s2, :, y], conditional[s2], weights[s2], gamma,
                    target=tolerance, max_intervals=max_intervals)
                if result.value > tolerance:
                    found = _witness(matrix, confidence, result.points, y, s1, s2, growth, tolerance)
                    if found is not None:
                        counts["violated"] += 1
                        witness = found if witness is None or found.ratio > witness.ratio else witness
                        continue
                if result.converged and result.upper_bound <= tolerance:
                    counts["branched"] += 1
                    worst = max(worst, result.upper_bound)
                else:
                    counts["inconclusive"] += 1
    verdict = "violated" if counts["violated"] else "inconclusive" if counts["inconclusive"] else "certified"
    labels = (tuple(confidence.secret_labels), tuple(confidence.public_labels))
    return RobustCertificate(verdict, float(epsilon), tolerance, float(worst), witness, n_triples,
                             counts["screened"], counts["decoupled"], counts["branched"], counts["violated"],
                             counts["inconclusive"], time.perf_counter() - start, labels)


def _witness(matrix, confidence, points, y, s1, s2, growth, tolerance) -> RobustWitness | None:
    """Turn a point of (J) into ``P in F`` and re-check it directly; None if it fails."""
    rows = np.array(confidence.conditional_estimate)
    rows[s1], rows[s2] = points
    try:
        distribution = confidence.lift_conditionals(rows, slack=1e-12)
    except ValueError:
        return None
    estimate, limit = confidence.estimate, confidence.radius * (1 - 1e-9)  # margin against rounding
    statistic = confidence.chi_square(distribution)
    if statistic > limit:  # pull towards P̂ (the statistic is convex and 0 at P̂)
        theta = min(1.0, (statistic - limit) / statistic + 1e-12)
        distribution = (1 - theta) * distribution + theta * estimate
        statistic = confidence.chi_square(distribution)
    if not (statistic <= limit and confidence.contains(distribution)):
        return None
    ratio = conditional_ratio(matrix, distribution, y, s1, s2)
    column = matrix[:, y].reshape(distribution.shape)
    gap = (column[s1] @ distribution[s1] / distribution[s1].sum()
           - growth * column[s2] @ distribution[s2] / distribution[s2].sum()) / matrix[:, y].max()
    if not (ratio > growth and gap > tolerance):
        return None
    return RobustWitness(distribution, int(y), int(s1), int(s2), ratio, statistic)
