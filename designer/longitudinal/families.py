"""Two-stage mechanisms of the literature: RAPPOR, L-GRR and L-OSUE.

* **RAPPOR** (Erlingsson, Pihur, Korolova, CCS 2014): a value's Bloom filter ``B`` (h of m
  bits set) passes the permanent randomised response (each bit set with probability ``f/2``,
  cleared with ``f/2``, kept otherwise) and, every round, the instantaneous one (a bit
  ``B'_i = 1`` is reported 1 with probability ``q``, ``B'_i = 0`` with probability ``p``).
  Section 4 of the paper: ``eps_inf = 2 h ln((1 - f/2) / (f/2))`` and, for the first report,
  ``eps_1 = h ln(q* (1 - p*) / (p* (1 - q*)))`` with ``q* = f (p + q) / 2 + (1 - f) q`` and
  ``p* = f (p + q) / 2 + (1 - f) p`` (two values whose filters share no bit).
* **L-GRR** and **L-OSUE** (Arcolezi et al., "Improving the utility of locally differentially
  private protocols for longitudinal and multidimensional frequency estimates", 2022;
  ``multi_freq_ldpy.long_freq_est``): generalised randomised response twice, and optimised
  unary encoding (``p1 = 1/2``, ``q1 = 1 / (e^eps_inf + 1)``) followed by a symmetric unary
  encoding ``(p2, 1 - p2)``, with the second stage chosen so that one report is
  ``eps_1``-LDP (for L-GRR by the binary equation, which leaves budget unused when k > 2:
  :func:`l_grr_parameters`). Their estimator's variance at frequency 0 is
  ``q'(1 - q') / (n (p' - q')^2)`` with ``p' = P(report supports v | v)``,
  ``q' = P(report supports v | v' != v)`` (``VAR_Long_Pure`` at ``f = 0``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.channel import Channel
from designer.longitudinal.two_stage import TwoStage


def rappor_levels(h: int, f: float, p: float, q: float) -> tuple[float, float]:
    """``(eps_inf, eps_1)`` of RAPPOR by the closed forms of Erlingsson et al. (Section 4)."""
    q_star = 0.5 * f * (p + q) + (1 - f) * q
    p_star = 0.5 * f * (p + q) + (1 - f) * p
    return 2 * h * math.log((1 - f / 2) / (f / 2)), h * math.log(q_star * (1 - p_star) / (p_star * (1 - q_star)))


def _bit_product(rows: list[tuple[int, ...]], one_given: dict[int, Fraction], m: int) -> np.ndarray:
    """``P(output bits | input bits)`` of m independent bits, ``one_given[b]`` = P(output bit 1 | input bit b)."""
    outputs = list(itertools.product((0, 1), repeat=m))
    matrix = np.empty((len(rows), len(outputs)), dtype=object)
    for i, bits in enumerate(rows):
        for j, reported in enumerate(outputs):
            value = Fraction(1)
            for b, s in zip(bits, reported):
                value *= one_given[b] if s else 1 - one_given[b]
            matrix[i, j] = value
    return matrix


def rappor(filters, f, p, q, labels=None) -> TwoStage:
    """RAPPOR's two stages as exact channels over the ``2^m`` bit vectors.

    Parameters
    ----------
    filters : sequence of sequence of int
        The Bloom filter of each value: the positions (``0..m-1``) of its set bits; ``m`` is one
        more than the largest position.
    f, p, q : number or str
        Permanent flip rate and instantaneous probabilities, read exactly (``"1/2"``, ``0.75``).
    labels : sequence of str, optional
        Names of the values (default: their filters).
    """
    f, p, q = (Fraction(str(value)) if isinstance(value, float) else Fraction(value) for value in (f, p, q))
    m = 1 + max(position for bits in filters for position in bits)
    inputs = [tuple(int(i in set(bits)) for i in range(m)) for bits in filters]
    states = list(itertools.product((0, 1), repeat=m))
    names = ["".join(map(str, bits)) for bits in states]
    permanent = Channel(_bit_product(inputs, {1: 1 - f / 2, 0: f / 2}, m),
                        labels or ["".join(map(str, bits)) for bits in inputs], names)
    instantaneous = Channel(_bit_product(states, {1: q, 0: p}, m), names, names)
    return TwoStage(permanent, instantaneous)


@dataclass(frozen=True)
class LongitudinalParameters:
    """``(p1, q1, p2, q2)`` of a chained protocol, and ``(p', q')`` of one report (support probabilities)."""

    p1: float
    q1: float
    p2: float
    q2: float
    p_report: float
    q_report: float

    def variance(self, n: int = 1) -> float:
        """The estimator's variance at frequency 0: ``q'(1 - q') / (n (p' - q')^2)``."""
        return support_variance(self.p_report, self.q_report, n)


def support_variance(p_report: float, q_report: float, n: int = 1) -> float:
    """Variance of the support-count estimator of a frequency 0: ``q'(1 - q') / (n (p' - q')^2)``."""
    return q_report * (1 - q_report) / (n * (p_report - q_report) ** 2)


def l_grr_parameters(k: int, eps_inf: float, eps_1: float, exact_report: bool = False) -> LongitudinalParameters:
    """L-GRR: GRR(eps_inf), then GRR(p2, q2 = (1 - p2)/(k - 1)), ``p2`` linear in the level equation.

    One report supports v with ``p' = p1 p2 + (1 - p1) q2`` given v and
    ``q' = q1 p2 + (1 - q1) q2`` given another value, so its level is ``ln(p'/q')``.

    ``exact_report=False`` solves the published equation
    ``e^eps_1 = (p1 p2 + q1 q2) / (p1 q2 + q1 p2)`` (multi_freq_ldpy's ``L_GRR_Client``), the
    level of the binary case: for k > 2 one report is then ``ln(p'/q') < eps_1``-LDP (budget
    left unused). ``exact_report=True`` solves ``p' = e^eps_1 q'``: one report is exactly eps_1-LDP.
    """
    _check_levels(eps_inf, eps_1)
    p1 = math.exp(eps_inf) / (math.exp(eps_inf) + k - 1)
    q1 = (1 - p1) / (k - 1)
    ratio = math.exp(eps_1)
    if exact_report:
        p2 = (ratio * (1 - q1) - (1 - p1)) / ((k - 1) * (p1 - ratio * q1) - (1 - p1) + ratio * (1 - q1))
    else:
        p2 = (ratio * p1 - q1) / ((k - 1) * p1 - q1 + ratio * p1 - ratio * (k - 1) * q1)
    q2 = (1 - p2) / (k - 1)
    return LongitudinalParameters(p1, q1, p2, q2, p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2)


def l_osue_parameters(eps_inf: float, eps_1: float) -> LongitudinalParameters:
    """L-OSUE: OUE(eps_inf) per bit, then a symmetric bit flip ``(p2, 1 - p2)``.

    With ``p1 = 1/2`` one report has ``p' = 1/2``, so its level ``ln(p'(1 - q') / (q'(1 - p')))``
    is ``eps_1`` exactly when ``q' = 1 / (e^eps_1 + 1)``: ``p2 = ((1 - q1) - q') / (1 - 2 q1)``.
    """
    _check_levels(eps_inf, eps_1)
    p1, q1 = 0.5, 1 / (math.exp(eps_inf) + 1)
    q_report = 1 / (math.exp(eps_1) + 1)
    p2 = ((1 - q1) - q_report) / (1 - 2 * q1)
    q2 = 1 - p2
    return LongitudinalParameters(p1, q1, p2, q2, p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2)


def _check_levels(eps_inf: float, eps_1: float) -> None:
    if not 0 < eps_1 < eps_inf:
        raise ValueError(f"a chained protocol needs 0 < eps_1 < eps_inf, got eps_1 = {eps_1}, eps_inf = {eps_inf}")


def grr_channel(k: int, p: float, q: float) -> Channel:
    """Randomised response on k symbols: ``p`` on the diagonal, ``q`` elsewhere."""
    matrix = np.full((k, k), q)
    np.fill_diagonal(matrix, p)
    return Channel(matrix)


def l_grr(k: int, eps_inf: float, eps_1: float, exact_report: bool = False) -> TwoStage:
    """The L-GRR stages as float channels (permanent GRR, instantaneous GRR; see :func:`l_grr_parameters`)."""
    parameters = l_grr_parameters(k, eps_inf, eps_1, exact_report)
    return TwoStage(grr_channel(k, parameters.p1, parameters.q1), grr_channel(k, parameters.p2, parameters.q2))
