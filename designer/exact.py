"""Exact numbers for certification: rationals, ``log`` of rationals, infinity.

Channel entries are read as exact rationals (``0.25``, ``1/3``, ``2.5e-3``), as
written in the file.  Privacy levels ``epsilon`` are read as

* a rational (``1``, ``0.5``): then ``exp(epsilon)`` is irrational (Lindemann)
  for ``epsilon != 0`` and every comparison ``a <= exp(epsilon) * b`` with
  rationals ``a, b`` is decided by rigorous interval bounds on ``exp(epsilon)``
  (Arb ball arithmetic from python-flint), refined until the interval separates;
* ``log(r)`` / ``ln(r)`` for a rational ``r >= 1``: then ``exp(epsilon) = r``
  exactly and the comparison is exact rational arithmetic;
* ``inf``: no constraint.

This is what makes an exact-mode ``certified`` a proof.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

import flint

_LOG_PATTERN = re.compile(r"^\s*(?:log|ln)\s*\(\s*([^()]+?)\s*\)\s*$", re.IGNORECASE)
INFINITY_WORDS = {"inf", "+inf", "infinity", "+infinity"}
_MAX_PRECISION = 1 << 16


def parse_rational(text: str | int | float | Fraction) -> Fraction:
    """Read a number exactly: decimals, scientific notation and ``p/q``.

    Floats are converted exactly (their binary value). Raises ``ValueError``
    for anything else, including ``nan`` and infinities.
    """
    if isinstance(text, Fraction):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if isinstance(text, float) and not math.isfinite(text):
            raise ValueError(f"not a finite number: {text!r}")
        return Fraction(text)
    token = str(text).strip()
    try:
        if "/" in token:
            numerator, denominator = token.split("/", 1)
            return Fraction(Fraction(numerator.strip()), Fraction(denominator.strip()))
        return Fraction(token)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not an exact number: {token!r}") from None


@dataclass(frozen=True)
class ExactEpsilon:
    """An exactly known privacy level ``epsilon >= 0``.

    Exactly one form is used: ``infinite``; ``exp_value`` (``epsilon = log(exp_value)``);
    or ``value`` (``epsilon`` itself, a rational).
    """

    value: Fraction | None = None
    exp_value: Fraction | None = None
    infinite: bool = False

    @classmethod
    def parse(cls, text: str | int | float | Fraction) -> "ExactEpsilon":
        """Read ``inf``, ``log(r)``/``ln(r)`` or a rational; reject negatives and NaN."""
        if isinstance(text, ExactEpsilon):
            return text
        if isinstance(text, float) and math.isinf(text) and text > 0:
            return cls(infinite=True)
        token = str(text).strip()
        if token.lower() in INFINITY_WORDS:
            return cls(infinite=True)
        match = _LOG_PATTERN.match(token)
        if match:
            ratio = parse_rational(match.group(1))
            if ratio < 1:
                raise ValueError(f"log({match.group(1)}) is negative: epsilon must be >= 0")
            return cls(exp_value=ratio)
        value = parse_rational(text if isinstance(text, (int, float, Fraction)) else token)
        if value < 0:
            raise ValueError(f"epsilon must be >= 0, got {token}")
        return cls(value=value)

    def __float__(self) -> float:
        if self.infinite:
            return math.inf
        if self.exp_value is not None:
            return math.log(self.exp_value.numerator) - math.log(self.exp_value.denominator)
        return float(self.value)

    def __str__(self) -> str:
        if self.infinite:
            return "inf"
        if self.exp_value is not None:
            return f"log({self.exp_value})"
        return str(self.value)

    def allows(self, numerator: Fraction, denominator: Fraction) -> bool:
        """Decide ``numerator <= exp(self) * denominator`` exactly (both >= 0)."""
        if self.infinite or numerator == 0:
            return True
        if denominator == 0:
            return False
        ratio = numerator / denominator
        if self.exp_value is not None:
            return ratio <= self.exp_value
        if self.value == 0:
            return ratio <= 1
        return _ratio_below_exp(ratio, self.value)


    def gap(self, ratio: Fraction) -> float:
        """``self - log(ratio)`` as a float; exactly 0 when ``exp(self) == ratio``."""
        if self.infinite:
            return math.inf
        if ratio == 0:
            return math.inf
        if self.exp_value is not None:
            return log_fraction(self.exp_value / ratio)
        saved = flint.ctx.prec
        try:  # 256 bits: no cancellation when the gap is tiny
            flint.ctx.prec = 256
            difference = _arb(self.value) - _arb(ratio).log()
            return float(difference.mid())
        finally:
            flint.ctx.prec = saved


def _arb(value: Fraction) -> "flint.arb":
    return flint.arb(flint.fmpq(value.numerator, value.denominator))


def _arb_to_fraction(ball_endpoint: "flint.arb") -> Fraction:
    mantissa, exponent = ball_endpoint.man_exp()
    mantissa, exponent = int(mantissa), int(exponent)
    return Fraction(mantissa * 2**exponent) if exponent >= 0 else Fraction(mantissa, 2 ** (-exponent))


def exp_bounds(value: Fraction, precision: int) -> tuple[Fraction, Fraction]:
    """Rational ``lo <= exp(value) <= hi`` from an Arb ball at ``precision`` bits."""
    saved = flint.ctx.prec
    try:
        flint.ctx.prec = precision
        ball = _arb(value).exp()
        return _arb_to_fraction(ball.lower()), _arb_to_fraction(ball.upper())
    finally:
        flint.ctx.prec = saved


def _ratio_below_exp(ratio: Fraction, value: Fraction) -> bool:
    """Decide ``ratio <= exp(value)`` for a rational ``value != 0``.

    ``exp`` of a non-zero rational is irrational, so equality never holds and
    doubling the precision terminates.
    """
    precision = 64
    while precision <= _MAX_PRECISION:
        low, high = exp_bounds(value, precision)
        if ratio <= low:
            return True
        if ratio > high:
            return False
        precision *= 2
    raise ArithmeticError(f"could not separate {ratio} from exp({value}) at {_MAX_PRECISION} bits")


def log_fraction(value: Fraction) -> float:
    """Float ``log`` of a positive rational without underflow (``-inf`` for 0)."""
    if value == 0:
        return -math.inf
    return math.log(value.numerator) - math.log(value.denominator)
