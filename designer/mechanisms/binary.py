"""The optimal binary mechanism Q* and its special cases (context-aware-ldp.md, Section 4).

Privacy guarantee: ``binary_optimal(eps12, eps21)`` is E-LDP for
``E = [[0, eps12], [eps21, 0]]`` and is *tight*: ``Q*[0,0] / Q*[1,0] = exp(eps12)``
and ``Q*[1,1] / Q*[0,1] = exp(eps21)`` (eq. 9). By Theorem 2 it maximises every
utility obeying the data-processing inequality among E-LDP channels.

Inputs given exactly (``"log(3)"``, ``"inf"``, ``0``) produce a channel with
exact rational entries, so the exact certifier can prove tightness.
"""

from __future__ import annotations

import math
from fractions import Fraction

from designer.channel import Channel
from designer.exact import ExactEpsilon
from designer.spec import PrivacyMatrix

Level = float | str | ExactEpsilon


def binary_privacy(eps12: Level, eps21: Level) -> PrivacyMatrix:
    """The binary E matrix ``[[0, eps12], [eps21, 0]]``."""
    return PrivacyMatrix([[0, _as_entry(eps12)], [_as_entry(eps21), 0]], name=f"binary E ({eps12}, {eps21})")


def binary_optimal(eps12: Level, eps21: Level) -> Channel:
    """Q* of Theorem 2, eq. (9), with its limits at 0 and infinity.

    With ``a = exp(eps21)`` and ``b = exp(-eps12)``::

        Q* = [[a - 1, 1 - b], [b (a - 1), a (1 - b)]] / (a - b)

    ``eps12 = inf`` gives Mangat's scheme (11); ``eps21 = inf`` its mirror image;
    both infinite the identity; ``eps21 = 0`` (or ``eps12 = 0``) forces equal rows.
    Rows are inputs (1, 2 in the paper = 0, 1 here), columns outputs.
    """
    a = exp_of_level(eps21, sign=+1)
    b = exp_of_level(eps12, sign=-1)
    exact = isinstance(b, Fraction) and (isinstance(a, Fraction) or a == math.inf)
    one = Fraction(1) if exact else 1.0
    zero = one - one
    if a == math.inf:
        rows = [[one, zero], [b, one - b]]
    elif a == b:  # eps12 = eps21 = 0: the channel must be constant
        rows = [[zero, one], [zero, one]]
    else:
        scale = a - b
        rows = [[(a - 1) / scale, (one - b) / scale], [b * (a - 1) / scale, a * (one - b) / scale]]
    return Channel(rows if exact else [[float(v) for v in row] for row in rows], ["1", "2"], ["1", "2"])


def warner(epsilon: Level) -> Channel:
    """Warner's randomised response, eq. (10): ``[[e^eps, 1], [1, e^eps]] / (e^eps + 1)``.

    Privacy guarantee: epsilon-LDP (Definition 1), tight.
    """
    return binary_optimal(epsilon, epsilon)


def mangat(eps21: Level) -> Channel:
    """Mangat's improved randomised response, eq. (11): ``[[1 - p, p], [0, 1]]``, ``p = e^-eps21``.

    Privacy guarantee: E-LDP for ``E = [[0, inf], [eps21, 0]]`` (symbol 1 is not
    sensitive), tight.
    """
    return binary_optimal(math.inf, eps21)


def _as_entry(level: Level):
    return level if isinstance(level, str) else ExactEpsilon.parse(level)


def exp_of_level(level: Level, sign: int):
    """``exp(sign * level)`` for ``sign = +1`` or ``-1``.

    A Fraction when it is exactly rational (``log(r)``, ``0``, ``exp(-inf) = 0``),
    ``inf`` for ``exp(+inf)``, else a float.
    """
    parsed = ExactEpsilon.parse(level)
    if parsed.infinite:
        return math.inf if sign > 0 else Fraction(0)
    if parsed.exp_value is not None:
        return parsed.exp_value if sign > 0 else 1 / parsed.exp_value
    if parsed.value == 0:
        return Fraction(1)
    return math.exp(sign * float(parsed.value))
