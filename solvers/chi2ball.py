"""Linear functions over chi-square balls of the probability simplex, with rigorous bounds.

The ball around a probability vector ``w`` of "radius" ``beta >= 1`` is

    K(w, beta) = { r in simplex : sum_u w_u^2 / r_u <= beta }

(``g(r) = sum_u w_u^2 / r_u`` equals ``1 + chi2(w, r)``; terms with ``w_u = 0``
vanish). ``K`` is convex, so maximising ``c . r`` over it is a convex program. It
has a one-dimensional dual with a closed form: for every ``nu >= max_u c_u``

    c . r <= D(nu) = nu - (sum_u w_u sqrt(nu - c_u))^2 / beta      for all r in K,   (*)

because, by Cauchy-Schwarz, ``(sum_u w_u sqrt(nu - c_u))^2 <= g(r) sum_u (nu - c_u) r_u``
and ``c . r = nu - sum_u (nu - c_u) r_u``. ``D`` is convex and its minimum equals
the maximum (strong duality; equality in Cauchy-Schwarz at
``r_u ∝ w_u / sqrt(nu - c_u)``). So *any* ``nu`` gives a bound that is valid
whatever the accuracy of the numerical minimisation: this is what makes the
bounds below rigorous (up to the floating-point error of evaluating ``D``, which
we add as an explicit margin).

The two-ball problem couples two such balls through the convex function
``h(r) = sqrt(g(r))`` (convex: ``h = H(r / w)^(-1/2)`` with ``H`` a weighted
harmonic mean, which is concave):

    maximise c1 . r1 + c2 . r2   over simplex pairs with   p1 h1(r1) + p2 h2(r2) <= gamma.

Its value ``V(t) = max{c1.r1 : h1 <= t} + max{c2.r2 : h2 <= (gamma - p1 t) / p2}``
is concave in ``t``; the first term increases and the second decreases with ``t``,
which gives rigorous upper bounds on any interval of ``t`` (branch and bound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class BallMaximum:
    """Result of :func:`maximise_over_ball`.

    Attributes
    ----------
    upper_bound : float
        Rigorous upper bound on ``max c . r`` over the ball (dual value (*) plus
        a floating-point safety margin).
    point : ndarray
        A point of the ball (``g(point) <= beta`` checked) nearly attaining it.
    value : float
        ``c . point`` (a lower bound on the maximum).
    """

    upper_bound: float
    point: np.ndarray
    value: float


def ball_function(center, point) -> float:
    """``g(r) = sum_u w_u^2 / r_u`` (``+inf`` if some ``r_u = 0 < w_u``)."""
    center = np.asarray(center, dtype=float)
    point = np.asarray(point, dtype=float)
    support = center > 0
    if np.any(point[support] <= 0):
        return float("inf")
    return float(np.sum(center[support] ** 2 / point[support]))


def maximise_over_ball(c, center, beta: float) -> BallMaximum:
    """Maximise ``c . r`` over ``K(center, beta)`` with a rigorous dual bound.

    Parameters
    ----------
    c : array_like, shape (m,)
    center : array_like, shape (m,)
        A probability vector ``w``.
    beta : float
        Radius, ``>= 1`` (``beta = 1`` is the single point ``w``).

    Returns
    -------
    BallMaximum
    """
    c = np.asarray(c, dtype=float)
    w = np.asarray(center, dtype=float)
    if beta <= 1.0:
        value = float(c @ w)
        return BallMaximum(value + _margin(abs(value)), w.copy(), value)
    c_max = float(c.max())
    gap = c_max - c  # nu = c_max + tau, tau >= 0
    support = w > 0
    ws, gs = w[support], gap[support]

    def dual(tau: float) -> float:
        a = float(ws @ np.sqrt(tau + gs))
        return c_max + tau - a * a / beta

    def slope(tau: float) -> float:
        root = np.sqrt(tau + gs)
        with np.errstate(divide="ignore"):
            s = float(np.sum(ws / root))
        return 1.0 - float(ws @ root) * s / beta

    spread = float(gs.max()) if gs.size else 0.0
    if spread == 0.0:  # c constant on the support of w
        tau = 0.0
    else:
        hi = 2.0 * spread / (beta * beta - 1.0) + 1e-300
        while slope(hi) < 0:  # safety: the bracket follows from D' > 0 beyond spread / (beta^2 - 1)
            hi *= 2.0
        from scipy.optimize import brentq

        tau = 0.0 if slope(0.0) >= 0 else brentq(slope, 0.0, hi, xtol=1e-300, rtol=4 * _EPS, maxiter=500)
    bound = dual(tau)
    a = float(ws @ np.sqrt(tau + gs))
    bound += _margin(abs(c_max) + tau + a * a / beta)
    point = _primal(w, gap, tau, a, beta)
    return BallMaximum(bound, point, float(c @ point))


def _margin(scale: float) -> float:
    return 64 * _EPS * (1.0 + scale)


def _primal(w: np.ndarray, gap: np.ndarray, tau: float, a: float, beta: float) -> np.ndarray:
    """The Cauchy-Schwarz equality point ``r_u ∝ w_u / sqrt(nu - c_u)``, made feasible."""
    point = np.zeros_like(w)
    support = w > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        point[support] = (a / beta) * w[support] / np.sqrt(tau + gap[support])
    if not np.all(np.isfinite(point)) or a == 0.0:
        point = w.copy()
    leftover = 1.0 - point.sum()
    if leftover > 0:  # the optimum puts the rest on a best coordinate outside the support of w
        best = np.flatnonzero((gap == gap.min()) & ~support)
        point[best[0] if best.size else int(np.argmin(gap))] += leftover
    point = np.clip(point, 0.0, None)
    point /= point.sum()
    value = ball_function(w, point)
    if value > beta:  # pull towards the centre (g convex, g(w) = 1)
        theta = min(1.0, (value - beta) / (value - 1.0) * (1 + 1e-9) + 1e-15)
        point = (1 - theta) * point + theta * w
    return point


@dataclass(frozen=True)
class TwoBallMaximum:
    """Result of :func:`maximise_over_two_balls`.

    Attributes
    ----------
    upper_bound : float
        Rigorous upper bound on the maximum: the largest bound of the intervals of
        the branch and bound (when ``converged`` and ``upper_bound <= target``,
        this proves the maximum is ``<= target``).
    points : tuple of two ndarrays, or None
        ``(r1, r2)`` feasible for the coupled constraint, nearly maximising; None
        when the first (decoupled) bound already settled the question.
    value : float
        ``c1 . r1 + c2 . r2`` at ``points`` (``-inf`` without points).
    converged : bool
        False if the search stopped (``max_intervals``) with the bound still above ``target``
        and no point above it.
    """

    upper_bound: float
    points: tuple[np.ndarray, np.ndarray] | None
    value: float
    converged: bool


def maximise_over_two_balls(
    c1, center1, weight1: float, c2, center2, weight2: float, gamma: float,
    target: float = 0.0, max_intervals: int = 2048,
) -> TwoBallMaximum:
    """Decide whether ``max c1.r1 + c2.r2 <= target`` subject to ``weight1 h1(r1) + weight2 h2(r2) <= gamma``.

    ``h_i(r) = sqrt(sum_u center_i[u]^2 / r_u)`` (``>= 1`` on the simplex).

    1. Decoupled bound: ``M1(t_max^2) + M2(1 + ...)`` where ``t_max = (gamma - weight2) / weight1``
       and ``M_i(beta)`` is the rigorous bound of :func:`maximise_over_ball` - the
       maximum over the product of the two projected balls. If it is ``<= target``, done.
    2. Search: ``V(t) = max{c1.r1 : h1 <= t} + max{c2.r2 : h2 <= (gamma - weight1 t) / weight2}``
       is concave in ``t``; a bounded scalar search returns a feasible pair. If its
       value beats ``target``, done (a witness).
    3. Branch and bound over ``t in [1, t_max]``: on ``[lo, hi]``,
       ``V <= M1(hi^2) + M2(((gamma - weight1 lo) / weight2)^2)``; intervals whose bound
       is ``<= target`` are discarded, the others halved, up to ``max_intervals`` evaluations.

    Parameters
    ----------
    c1, c2 : array_like
    center1, center2 : array_like
        Probability vectors.
    weight1, weight2 : float
        Positive weights.
    gamma : float
        ``>= weight1 + weight2`` (otherwise the set is empty).
    target : float
    max_intervals : int

    Returns
    -------
    TwoBallMaximum
    """
    c1, c2 = np.asarray(c1, float), np.asarray(c2, float)
    if gamma < weight1 + weight2:
        raise ValueError("the coupled chi-square set is empty (gamma < weight1 + weight2)")
    t_max = (gamma - weight2) / weight1

    def first(t: float) -> BallMaximum:
        return maximise_over_ball(c1, center1, t * t)

    def second(t: float) -> BallMaximum:
        return maximise_over_ball(c2, center2, max(1.0, (gamma - weight1 * t) / weight2) ** 2)

    def bound(lo: float, hi: float) -> float:
        return first(hi).upper_bound + second(lo).upper_bound

    root = bound(1.0, t_max)
    if root <= target:
        return TwoBallMaximum(root, None, -np.inf, True)

    def negative_value(t: float) -> float:
        return -(first(t).value + second(t).value)

    candidates = [1.0, t_max]
    if t_max > 1.0:
        from scipy.optimize import minimize_scalar

        search = minimize_scalar(negative_value, bounds=(1.0, t_max), method="bounded",
                                 options={"xatol": 1e-10 * t_max})
        candidates.append(float(search.x))
    best_t = min(candidates, key=negative_value)
    m1, m2 = first(best_t), second(best_t)
    points, value = (m1.point, m2.point), m1.value + m2.value
    if value > target:
        return TwoBallMaximum(root, points, value, True)
    middle = 0.5 * (1.0 + t_max)
    stack, evaluations, proven = [(1.0, middle), (middle, t_max)], 1, -np.inf
    while stack:
        lo, hi = stack.pop()
        interval_bound = bound(lo, hi)
        evaluations += 1
        if interval_bound <= target:
            proven = max(proven, interval_bound)
            continue
        if evaluations >= max_intervals or hi - lo <= 1e-12 * t_max:
            remaining = [interval_bound] + [bound(a, b) for a, b in stack]
            return TwoBallMaximum(max(remaining), points, value, False)
        middle = 0.5 * (lo + hi)
        stack.extend([(lo, middle), (middle, hi)])
    return TwoBallMaximum(proven, points, value, True)
