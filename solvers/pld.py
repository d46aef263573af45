"""Self-composition of a finite loss distribution: the hockey-stick curve of a sum of T independent copies.

Plain numerics (the privacy layer supplies the meaning). A *loss distribution* is a finite
random variable ``L`` (values ``losses``, masses ``probabilities``, plus a mass at ``+inf``);
its hockey-stick curve is

    delta(eps) = P(L = inf) + E[(1 - e^(eps - L))_+].

For a pair of laws ``(P, P')`` with ``L = log(P/P')`` under ``P`` (a privacy-loss
distribution, Dwork-Rothblum; Sommer, Meiser and Mohammadi 2019; Koskela, Jälkö and Honkela
2020) this is ``sum max(0, P - e^eps P')``, and the curve of the product ``(P^T, P'^T)`` is the
same functional of ``L_1 + ... + L_T`` (independent copies). :func:`compose_pld` evaluates it
with every approximation on the safe side (or, for a lower bound, on the other side):

* **Grid.** Each loss is rounded *up* to a multiple of ``h`` (``down`` for a lower bound); the
  functional increases with every loss, so the rounded sum bounds the true one. Losses below
  ``-U`` are raised to ``-U`` (``U`` the largest finite loss kept), losses whose upper tail has
  mass at most ``tail`` are moved to ``+inf`` (upper bound) or dropped (lower bound).
* **Sum of T copies.** An FFT of length ``N >= T (span) + 1`` (no wrap-around), the T-th
  power taken as ``exp(T log phi)``. Error (Parseval: the 1-norm over ``N`` points is at most
  ``sqrt(N)`` times the 2-norm, which is the spectrum's 2-norm over ``sqrt(N)``): at most
  ``T e^(T eta_1) ||dphi||_2 + ||power rounding||_2 + eta ||phi^T||_2`` with
  ``eta = 8 (log2 N + 2) u`` the transform's relative 2-norm rounding, ``||dphi||_2 <= eta
  sqrt(N) ||p||_2`` and ``eta_1`` its largest entry; each functional value is a difference of suffix sums of
  ``N`` terms, charged ``N u`` of their absolute terms. These are added to an upper
  bound and taken off a lower one.
* ``slack`` (per copy): how far the caller's masses may be from the exact laws, in the sum of
  ``|dP| + e^eps |dP'|``; ``T`` copies move the product's curve by at most ``T`` times it, added
  to an upper bound and taken off a lower one.

The infinite mass composes to ``1 - (1 - P(L = inf))^T``.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.bisection import boundary

_U = 2.0 ** -53
#: Default grid step relative to a first epsilon over T (see :func:`compose_pld`).
RELATIVE_STEP = 3e-3
#: Mass of the upper tail moved to +inf (or dropped), as a share of delta over T.
TAIL_SHARE = 1e-4
#: Largest FFT length.
MAX_POINTS = 1 << 24


class ComposedCurve:
    """The curve of ``T`` copies on a grid: ``mass[j]`` at loss ``(first + j) h``, plus ``infinite`` mass.

    ``error`` bounds the absolute error of the masses in the 1-norm (the FFT); :meth:`delta` adds it,
    the suffix sums' rounding and ``T (1 + e^eps) slack`` (or takes them off for a lower bound).
    """

    def __init__(self, step: float, first: int, mass: np.ndarray, infinite: float, error: float, slack: float,
                 rounds: int, upper: bool):
        self.step, self.first, self.mass, self.infinite = step, first, mass, infinite
        self.error, self.slack, self.rounds, self.upper = error, slack, rounds, upper
        self.losses = (first + np.arange(mass.size)) * step
        # suffix sums of the masses and of mass e^-loss: delta(eps) = S0(j) - e^eps S1(j), j the first loss > eps
        weighted = mass * np.exp(-self.losses)
        self.plain = np.append(np.cumsum(mass[::-1])[::-1], 0.0)
        self.tilted = np.append(np.cumsum(weighted[::-1])[::-1], 0.0)
        # a sequential sum of N terms errs by at most (N - 1) u times the sum of their absolute values
        self.rounding = mass.size * _U * np.append(np.cumsum(np.abs(mass)[::-1])[::-1], 0.0)
        self.tilted_rounding = mass.size * _U * np.append(np.cumsum(np.abs(weighted)[::-1])[::-1], 0.0)

    def delta(self, epsilon: float) -> float:
        """An upper (or lower) bound on the hockey-stick curve of the ``T``-fold sum at ``epsilon``."""
        index = int(np.searchsorted(self.losses, epsilon, side="right"))
        growth = math.exp(epsilon)
        value = float(self.plain[index] - growth * self.tilted[index])
        margin = (self.error + float(self.rounding[index] + growth * self.tilted_rounding[index])
                  + 4 * _U * abs(value) + self.rounds * (1 + growth) * self.slack)
        if self.upper:
            return min(1.0, self.infinite + value + margin)
        return max(0.0, self.infinite + value - margin)


def compose_pld(losses, probabilities, rounds: int, delta: float | None = None, epsilon: float | None = None,
                infinity_mass: float = 0.0, slack: float = 0.0, step: float | None = None,
                upper: bool = True) -> tuple[float, float]:
    """The hockey-stick curve of ``rounds`` independent copies of a finite loss distribution, at one point.

    Parameters
    ----------
    losses, probabilities : array_like
        The finite losses ``log(P/P')`` and their masses under ``P`` (``inf`` losses may be given here
        too: they join ``infinity_mass``). Masses should sum to about ``1 - infinity_mass``.
    rounds : int
        ``T >= 1``.
    delta, epsilon : float
        Exactly one: ``delta`` gives the smallest ``epsilon`` found whose bound is at most ``delta``
        (the largest whose lower bound exceeds it, with ``upper=False``); ``epsilon`` gives the
        bound at ``epsilon``.
    infinity_mass : float
        ``P(L = inf)`` per copy.
    slack : float
        Per copy, a bound on ``sum |P - P_exact| + e^eps sum |P' - P'_exact|`` per unit of ``1 + e^eps``
        (the caller's numerical error in the masses).
    step : float, optional
        The loss grid ``h``. By default a coarse grid (512 steps over the losses' range) finds a first
        epsilon, then ``h = RELATIVE_STEP * epsilon / T``: the grid moves the composed loss, hence the
        result, by at most that fraction (the FFT length capped at :data:`MAX_POINTS`).
    upper : bool
        ``True``: an upper bound (losses rounded up, errors added); ``False``: a lower bound.

    Returns
    -------
    ``(epsilon, delta)``: with ``delta`` given, the epsilon found and its bound (``(inf, 1.0)`` when
    none is found below the largest composed loss); with ``epsilon`` given, that epsilon and the bound.
    """
    if (delta is None) == (epsilon is None):
        raise ValueError("give exactly one of delta and epsilon")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    prepared = _prepared(losses, probabilities, rounds, infinity_mass, upper, delta)
    if step is None:
        span = prepared[2]
        if epsilon is None:
            first = _solve(_curve(prepared, span / 512, rounds, slack, upper), delta, upper)
            if upper and math.isinf(first[0]):
                return first  # the coarse grid is an upper bound too: nothing finite to refine
            scale = first[0] if math.isfinite(first[0]) and first[0] > 0 else span
        else:
            scale = epsilon if epsilon > 0 else span
        step = max(RELATIVE_STEP * scale / rounds, span * rounds / MAX_POINTS, 1e-300)
    curve = _curve(prepared, step, rounds, slack, upper)
    if epsilon is not None:
        return epsilon, curve.delta(epsilon)
    return _solve(curve, delta, upper)


def _solve(curve: ComposedCurve, delta: float, upper: bool) -> tuple[float, float]:
    """The smallest epsilon whose bound is at most ``delta`` (upper), or the largest whose bound exceeds it (lower)."""
    if curve.delta(0.0) <= delta:
        return 0.0, curve.delta(0.0)
    # the bound's margin grows with e^eps (the slack): scan for the first passing point, then bisect
    top = max((curve.first + curve.mass.size) * curve.step, 0.0)
    scan = np.linspace(0.0, top, 65)[1:]
    passing = next((value for value in scan if curve.delta(value) <= delta), None)
    if passing is None:
        return math.inf, 1.0
    low, high = boundary(lambda value: curve.delta(value) <= delta, passing - scan[0], passing, 1e-9, 200)
    found = high if upper else low
    return found, curve.delta(found)


def _prepared(losses, probabilities, rounds: int, infinity_mass: float, upper: bool, delta: float | None):
    """Sorted finite losses and masses (upper tail cut, floor applied), the infinite mass per copy, the range."""
    losses = np.asarray(losses, dtype=float).ravel()
    probabilities = np.asarray(probabilities, dtype=float).ravel()
    keep = probabilities > 0
    losses, probabilities = losses[keep], probabilities[keep]
    infinite = np.isposinf(losses)
    infinity_mass = float(infinity_mass) + float(probabilities[infinite].sum())
    finite = np.isfinite(losses)
    losses, probabilities = losses[finite], probabilities[finite]
    if losses.size == 0:
        losses, probabilities = np.zeros(1), np.zeros(1)
    order = np.argsort(losses)
    losses, probabilities = losses[order], probabilities[order]
    # the upper tail of mass at most TAIL_SHARE delta / T goes to +inf (upper bound) or is dropped (lower bound)
    tail = TAIL_SHARE * (delta if delta is not None else 1e-9) / rounds
    above = np.cumsum(probabilities[::-1])[::-1]  # mass at or above each loss
    cut = min(max(int(np.searchsorted(-above, -tail, side="left")), 1), losses.size)
    if upper:
        infinity_mass += float(probabilities[cut:].sum())
    losses, probabilities = losses[:cut], probabilities[:cut]
    ceiling = max(float(np.abs(losses[-1])), float(abs(losses[0])) if losses[0] > -losses[-1] else 0.0, 1e-12)
    if upper:
        losses = np.maximum(losses, -ceiling)  # raising a loss only raises the curve
    else:  # dropping mass only lowers it
        losses, probabilities = losses[losses >= -ceiling], probabilities[losses >= -ceiling]
    return losses, probabilities, 2 * ceiling, infinity_mass


def _curve(prepared, step: float, rounds: int, slack: float, upper: bool) -> ComposedCurve:
    """The grid, the ``T``-fold sum by FFT and its error bound (see the module docstring)."""
    losses, probabilities, _, infinity_mass = prepared
    rounding = np.ceil if upper else np.floor
    index = rounding(losses / step).astype(np.int64)
    low, high = int(index.min()), int(index.max())
    size = rounds * (high - low) + 1
    base = np.bincount(index - low, weights=probabilities, minlength=high - low + 1)
    points = 1 << max(3, math.ceil(math.log2(size)))
    eta = 8 * (math.log2(points) + 2) * _U
    spectrum = np.fft.rfft(base, points)
    modulus = np.abs(spectrum)
    with np.errstate(divide="ignore"):
        log_modulus = np.log(modulus)
    power = np.exp(rounds * log_modulus + 1j * rounds * np.angle(spectrum))
    power[modulus == 0] = 0.0
    mass = np.fft.irfft(power, points)[:size]
    # error bound (module docstring): spectrum norms over all N points from the half spectrum
    weights = np.full(spectrum.size, 2.0)
    weights[0] = 1.0
    if points % 2 == 0:
        weights[-1] = 1.0
    spectrum_error = eta * math.sqrt(points) * math.sqrt(float(np.dot(base, base)))  # also bounds each entry's
    amplification = rounds * math.exp(rounds * spectrum_error)
    power_rounding = 4 * _U * (1 + rounds * (np.abs(np.nan_to_num(log_modulus, neginf=0.0)) + math.pi)) * np.abs(power)
    power_norm = math.sqrt(float(np.dot(weights, np.abs(power) ** 2)))
    error = (amplification * spectrum_error + math.sqrt(float(np.dot(weights, power_rounding ** 2)))
             + eta * power_norm)
    infinite_total = -math.expm1(rounds * math.log1p(-infinity_mass)) if infinity_mass < 1 else 1.0
    return ComposedCurve(step, rounds * low, mass, infinite_total, error, slack, rounds, upper)
