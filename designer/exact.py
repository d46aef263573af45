"""Exact numbers for certification: rationals, ``log`` of rationals, infinity.

Channel entries are read as exact rationals (``0.25``, ``1/3``, ``2.5e-3``), as
written in the file.  Privacy levels ``epsilon`` are read as

* a rational (``1``, ``0.5``, ``1e300``): then ``exp(epsilon)`` is irrational
  (Lindemann) for ``epsilon != 0`` and every comparison ``a <= exp(epsilon) * b``
  with rationals ``a, b`` is decided in log space, ``log(a / b) <= epsilon``, by
  rigorous Arb balls (python-flint) refined until they separate;
* ``log(r)`` / ``ln(r)`` for a rational ``r >= 1``: then ``exp(epsilon) = r``
  exactly and the comparison is exact rational arithmetic;
* ``inf``: no constraint.

This is what makes an exact-mode ``certified`` a proof.
"""

from __future__ import annotations

import gc
import math
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # python-flint is imported where exact mode needs it (fast start)
    import flint

_LOG_PATTERN = re.compile(r"^\s*(?:log|ln)\s*\(\s*([^()]+?)\s*\)\s*$", re.IGNORECASE)
INFINITY_WORDS = {"inf", "+inf", "infinity", "+infinity"}
_MAX_PRECISION = 1 << 16
#: Bits of the Arb balls behind float logs of integers (their radii are then negligible).
_LOG_BITS = 128
#: Bits of the first Arb pass of :func:`faithful_log_ratios` (radii checked; a wide ball is refined).
_FAST_LOG_BITS = 80
_SMALLEST_FLOAT = 5e-324
#: Most digits :func:`separating_decimals` prints before switching to ``level + difference``.
SEPARATING_DIGITS = 40
_LOG10_2 = math.log10(2)
#: The float of a finite level beyond the double range (see :meth:`ExactEpsilon.__float__`).
LARGEST_LEVEL = sys.float_info.max
_LARGEST_FRACTION = Fraction(LARGEST_LEVEL)


#: A decimal number as written in a file: sign, digits with an optional point, optional
#: exponent (ASCII digits only; no underscores, no ``inf``/``nan``).
DECIMAL_PATTERN = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?", re.ASCII)
#: Largest number of significant digits (mantissa) or decimal exponent read exactly.
#: ``1e-30000`` and ratios of integers with tens of thousands of digits are fine; the
#: bound keeps a malicious ``1e-999999999`` from allocating gigabytes.
MAX_EXACT_DIGITS = 200_000
#: Digit strings are converted to ``int`` in pieces this long: below the smallest limit
#: Python allows for ``int(str)`` (640 digits, ``sys.set_int_max_str_digits``), so reading
#: never depends on, nor changes, the interpreter-wide limit.
_INT_CHUNK_DIGITS = 600


def parse_rational(text: str | int | float | Fraction) -> Fraction:
    """Read a number exactly: decimals, scientific notation and ``p/q``.

    Grammar (ASCII): ``[+-]digits[.digits][e[+-]digits]``, or two such numbers
    separated by one ``/`` (``1/3``, ``2.5e-3/7``); a nested fraction such as
    ``1/2/4`` is an error, not ``1/(2/4)``. Numbers of any length up to
    :data:`MAX_EXACT_DIGITS` digits (and exponents up to that size) are read
    without Python's 4,300-digit ``int``/``str`` limit. Floats are converted
    exactly (their binary value).

    Raises
    ------
    ValueError
        Anything else: ``nan``, infinities, a zero denominator, a malformed or
        nested fraction, a number beyond :data:`MAX_EXACT_DIGITS`.
    """
    if isinstance(text, Fraction):
        return text
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if isinstance(text, float) and not math.isfinite(text):
            raise ValueError(f"not a finite number: {text!r}")
        return Fraction(text)
    token = str(text).strip()
    if "/" not in token:
        return _parse_decimal(token, token)
    parts = token.split("/")
    if len(parts) > 2:
        raise ValueError(f"not an exact number: {quoted_token(token)} (a fraction has one '/': write p/q)")
    numerator, denominator = (_parse_decimal(part.strip(), token) for part in parts)
    if denominator == 0:
        raise ValueError(f"not an exact number: {quoted_token(token)} (zero denominator)")
    return numerator / denominator


def is_zero_literal(text: str) -> bool:
    """Whether a number matching :data:`DECIMAL_PATTERN` is written as zero (``0``, ``-0.0e5``)."""
    match = DECIMAL_PATTERN.fullmatch(text.strip())
    return bool(match) and not ((match.group(2) or "") + (match.group(3) or "")).strip("0")


def _parse_decimal(token: str, whole: str) -> Fraction:
    match = DECIMAL_PATTERN.fullmatch(token)
    if match is None:
        raise ValueError(f"not an exact number: {quoted_token(whole)}")
    sign, integer, fraction, exponent = match.groups()
    if not (integer or fraction):
        raise ValueError(f"not an exact number: {quoted_token(whole)}")
    digits = (integer + fraction if fraction else integer).lstrip("0") or "0"
    power = -len(fraction) if fraction else 0
    if exponent:
        if len(exponent.lstrip("+-").lstrip("0")) > len(str(MAX_EXACT_DIGITS)):
            raise ValueError(f"not an exact number: {quoted_token(whole)} (exponent beyond {MAX_EXACT_DIGITS:,})")
        power += int(exponent)
    if len(digits) > MAX_EXACT_DIGITS or abs(power) > 2 * MAX_EXACT_DIGITS:
        raise ValueError(
            f"not an exact number: {quoted_token(whole)} (more than {MAX_EXACT_DIGITS:,} digits, or an exponent beyond that)"
        )
    mantissa = int(digits) if len(digits) <= _INT_CHUNK_DIGITS else _digits_to_int(digits)
    if sign == "-":
        mantissa = -mantissa
    if power >= 0:
        return _coprime_fraction(mantissa * 10**power, 1)
    denominator = _POWERS_OF_TEN[-power] if -power < len(_POWERS_OF_TEN) else 10**-power
    common = math.gcd(mantissa, denominator)
    return _coprime_fraction(mantissa // common, denominator // common)


#: An unsigned decimal without exponent (``0.25``, ``3``, ``.5``): most cells of a channel file.
_PLAIN_DECIMAL = re.compile(r"(\d*)(?:\.(\d*))?", re.ASCII)


def parse_plain_decimals(tokens: list[str]) -> tuple[list[Fraction | None], list[float | None]]:
    """Exact and float values of many stripped tokens at once; None where a token is not plain.

    The fast path of :func:`parse_rational` for a whole file: an unsigned
    decimal without exponent and with at most 63 decimals is read here (about
    three times faster than one call per cell); any other token gives None and
    is left to :func:`parse_rational` (which also words the error). The float is
    correctly rounded value (``int / int`` true division).
    """
    exact: list[Fraction | None] = []
    floats: list[float | None] = []
    powers, gcd, make = _POWERS_OF_TEN, math.gcd, _coprime_fraction
    for token in tokens:
        # str methods instead of a regular expression: a third faster on a million cells
        integer, _, fraction = token.partition(".")
        digits = integer + fraction
        if not (digits.isdigit() and digits.isascii()) or len(fraction) >= len(powers) or len(token) > _INT_CHUNK_DIGITS:
            exact.append(None)
            floats.append(None)
            continue
        numerator, denominator = int(digits), powers[len(fraction)]
        floats.append(numerator / denominator)
        common = gcd(numerator, denominator)
        exact.append(make(numerator // common, denominator // common))
    return exact, floats


def plain_decimal_floats(tokens: list[str]) -> list[float | None]:
    """Correctly rounded floats of the stripped tokens that are plain decimals; None for the others.

    The tokens :func:`parse_plain_decimals` reads (unsigned, no exponent, at most
    63 decimals and :data:`_INT_CHUNK_DIGITS` characters), converted by ``float``
    (correctly rounded, like ``float(Fraction)``) without building the rational:
    for privacy levels, whose rational is needed only for the few pairs that the
    exact certifier's float filter leaves undecided. Such a token is never refused
    by :func:`parse_rational`, so reading it later cannot fail. A token whose float
    overflows gives None too: its level is finite (:meth:`ExactEpsilon.__float__`).
    """
    match = _PLAIN_DECIMAL.fullmatch
    floats: list[float | None] = []
    for token in tokens:
        found = match(token)
        if found is None or len(token) > _INT_CHUNK_DIGITS or token in ("", ".") or len(found.group(2) or "") >= 64:
            floats.append(None)
        else:
            value = float(token)  # a plain decimal beyond the double range: left to ExactEpsilon (finite)
            floats.append(value if value != math.inf else None)
    return floats


#: ``log(p/q)`` or ``log(p)`` with unsigned integers, lower case, no spaces: how tight levels are written.
_LOG_OF_INTEGERS = re.compile(r"log\((\d+)(?:/(\d+))?\)", re.ASCII)


def parse_integer_log_ratios(tokens: list[str]) -> list[tuple[int, int] | None]:
    """``log(p/q)`` levels with integer ``p >= q > 0`` read in one pass, as coprime ``(p, q)``; None for other tokens.

    The fast path of :meth:`ExactEpsilon.parse` for an E whose every entry is the
    log of a ratio of integers (a tight E): no decimal grammar, one gcd per token, and
    no rational or level object (a million of them cost more than the reading;
    :func:`ratio_level` makes one when a level is needed). A token it leaves (a ratio
    below 1, a zero denominator, decimals, spaces, ``ln``) goes to
    :meth:`ExactEpsilon.parse`, which also words any error.
    """
    match, gcd = _LOG_OF_INTEGERS.fullmatch, math.gcd
    ratios: list[tuple[int, int] | None] = []
    for token in tokens:
        found = match(token) if len(token) <= _INT_CHUNK_DIGITS else None
        if found is None:
            ratios.append(None)
            continue
        numerator, denominator = int(found.group(1)), int(found.group(2) or 1)
        if denominator == 0 or numerator < denominator:
            ratios.append(None)
            continue
        common = gcd(numerator, denominator)
        ratios.append((numerator // common, denominator // common))
    return ratios


def ratio_level(ratio: tuple[int, int]) -> "ExactEpsilon":
    """The level ``log(p/q)`` of a coprime pair ``(p, q)`` of :func:`parse_integer_log_ratios`."""
    return ExactEpsilon(exp_value=_coprime_fraction(*ratio))


#: 10**0 .. 10**63, the denominators of ordinary decimals.
_POWERS_OF_TEN = [10**n for n in range(64)]


def _fraction_from_slots(numerator: int, denominator: int) -> Fraction:
    """``Fraction(numerator, denominator)`` for coprime ints, denominator > 0, without normalising again.

    Reading a million channel entries exactly is dominated by ``Fraction``'s
    normalisation; the decimal reader already divided out the gcd. Python 3.12+
    has ``Fraction._from_coprime_ints`` for this; on 3.11 the two slots are set
    the same way (checked once at import against the public constructor).
    """
    fraction = object.__new__(Fraction)
    fraction._numerator = numerator
    fraction._denominator = denominator
    return fraction


if hasattr(Fraction, "_from_coprime_ints"):
    _coprime_fraction = Fraction._from_coprime_ints  # the interpreter's own
elif _fraction_from_slots(-3, 4) == Fraction(-3, 4) and hash(_fraction_from_slots(1, 2)) == hash(Fraction(1, 2)):
    _coprime_fraction = _fraction_from_slots
else:
    _coprime_fraction = Fraction  # slots differ: fall back to the public constructor


def _digits_to_int(digits: str) -> int:
    """``int(digits)`` for any length, converting pieces of at most :data:`_INT_CHUNK_DIGITS`."""
    if len(digits) <= _INT_CHUNK_DIGITS:
        return int(digits)
    low = len(digits) // 2
    return _digits_to_int(digits[:-low]) * 10**low + _digits_to_int(digits[-low:])


def quoted_token(token: str, limit: int = 40) -> str:
    """``repr`` of a token, shortened when long (an error message stays one readable line)."""
    if len(token) <= limit:
        return repr(token)
    return f"{token[: limit // 2]!r}...({len(token):,} characters)"


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
        if type(text) is float and text >= 0:  # fast path: PrivacyMatrix.exact_epsilon of a float matrix
            return cls(infinite=True) if text == math.inf else cls(value=Fraction(text))
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
        """The level as a float, faithfully rounded (within one unit in the last place).

        A rational is correctly rounded (``float(Fraction)``, an exact integer
        division); ``log(r)`` is rounded from a 128-bit Arb ball, not from the
        platform's ``log``. The exact certifier's float filter relies on this: it
        encloses the level by widening its float by two units in the last place.
        A finite rational level beyond the float range (:attr:`beyond_double`)
        becomes :data:`LARGEST_LEVEL`, the largest finite double: a lower bound
        that is still a constraint (a positive entry over a zero breaks it), never
        ``inf`` (no constraint). The filter encloses it by ``[LARGEST_LEVEL - 2 ulp, inf]``.
        """
        if self.infinite:
            return math.inf
        if self.exp_value is not None:
            return _faithful_log(self.exp_value)
        try:
            return float(self.value)
        except OverflowError:
            return LARGEST_LEVEL

    @property
    def beyond_double(self) -> bool:
        """Whether the level is finite but its float would overflow (``1e309``; ``log(r)`` never does)."""
        if self.value is None or self.value <= _LARGEST_FRACTION:
            return False
        try:
            float(self.value)
        except OverflowError:
            return True
        return False

    def __str__(self) -> str:
        return self.describe()

    def describe(self, max_digits: int | None = None) -> str:
        """``inf``, ``log(r)`` or the rational, with :func:`describe_fraction`'s ``max_digits``."""
        if self.infinite:
            return "inf"
        if self.exp_value is not None:
            return f"log({describe_fraction(self.exp_value, max_digits)})"
        return describe_fraction(self.value, max_digits)

    def allows(self, numerator: Fraction, denominator: Fraction) -> bool:
        """Decide ``numerator <= exp(self) * denominator`` exactly (both >= 0)."""
        if self.infinite or numerator == 0:
            return True
        if denominator == 0:
            return False
        ratio = numerator / denominator
        if self.exp_value is not None:  # exp(self) is rational: compare exactly, no Arb
            return ratio <= self.exp_value
        if self.value == 0:
            return ratio <= 1
        return self.gap(ratio) >= 0

    def gap(self, ratio: Fraction) -> float:
        """``self - log(ratio)`` for a rational ``ratio >= 0``, with its sign decided exactly.

        The sign is exact: ``0.0`` iff ``exp(self) == ratio`` (a ``log(r)`` level
        with ``r == ratio``, or level 0 with ratio 1; ``exp`` of any other rational
        is irrational by Lindemann's theorem, so the Arb ball is refined until it
        excludes 0). The magnitude is correctly rounded to about 64 bits and then to
        a float; a non-zero gap below the float range is returned as the smallest
        float of its sign (``±5e-324``), never as ``0.0``. In log space, so a level
        such as ``1e300`` (whose ``exp`` no float or Arb ball can hold) is fine.
        """
        if self.infinite or ratio == 0:
            return math.inf
        ball = self.gap_ball(ratio)
        if ball is None:
            return 0.0
        result = float(ball.mid())
        return result if result != 0 else math.copysign(_SMALLEST_FLOAT, float(ball.mid().sgn()))

    def gap_ball(self, ratio: Fraction) -> "flint.arb | None":
        """``self - log(ratio)`` (finite level, rational ``ratio > 0``) as an Arb ball excluding 0.

        ``None`` when the gap is exactly 0. The precision doubles from 128 bits
        until the ball excludes 0 and its radius is below ``2**-64`` of its
        midpoint, up to a limit proportional to the sizes of the rationals (a
        gap between rationals of ``b`` bits is at least about ``2**-b``).
        """
        if self.exp_value is not None:
            if ratio == self.exp_value:
                return None
            quotient = self.exp_value / ratio
            return _nonzero_ball(lambda: arb_fraction(quotient).log(), _bits(quotient))
        if self.value == 0 and ratio == 1:
            return None
        return _nonzero_ball(lambda: arb_fraction(self.value) - arb_fraction(ratio).log(), _bits(self.value) + _bits(ratio))

    def log_ball(self) -> "flint.arb":
        """An Arb ball containing the level (finite levels), at the current precision."""
        if self.exp_value is not None:
            return arb_fraction(self.exp_value).log()
        return arb_fraction(self.value)


@contextmanager
def arb_precision(bits: int):
    """Run a block with python-flint's working precision set to ``bits`` (restored after)."""
    import flint

    saved = flint.ctx.prec
    flint.ctx.prec = bits
    try:
        yield flint
    finally:
        flint.ctx.prec = saved


def arb_fraction(value: Fraction) -> "flint.arb":
    """``value`` as an exact Arb ball (at the current precision)."""
    import flint

    return flint.arb(fmpq_fraction(value))


def fmpq_fraction(value: Fraction) -> "flint.fmpq":
    """``value`` as a FLINT rational."""
    import flint

    return flint.fmpq(value.numerator, value.denominator)


def float_outward(value: Fraction, direction: float) -> float:
    """The double nearest ``value`` on the side of ``direction`` (``-inf``: at most ``value``; ``inf``: at least)."""
    nearest = float(value)
    if (direction < 0 and Fraction(nearest) > value) or (direction > 0 and Fraction(nearest) < value):
        return math.nextafter(nearest, direction)
    return nearest


def _bits(value: Fraction) -> int:
    return abs(value.numerator).bit_length() + value.denominator.bit_length()


def _nonzero_ball(ball: Callable[[], "flint.arb"], operand_bits: int) -> "flint.arb":
    """The ball ``ball()`` of a non-zero real, refined until it excludes 0 with 64 correct bits."""
    limit = max(_MAX_PRECISION, 4 * operand_bits + 1024)
    precision = 128
    while True:
        with arb_precision(precision):
            value = ball()
            if (value > 0 or value < 0) and value.rad() <= abs(value.mid()) * 2.0**-64:
                return value
        if precision >= limit:
            raise ArithmeticError(f"could not separate a non-zero gap from 0 at {limit} bits")
        precision = min(2 * precision, limit)


@lru_cache(maxsize=4096)
def _faithful_log(value: Fraction) -> float:
    """``log(value)`` of a rational ``value > 0``, faithfully rounded (:func:`faithful_log_ratios`)."""
    return faithful_log_ratios([value.numerator], [value.denominator])[0]


def faithful_logs(values: list[Fraction]) -> list[float]:
    """:func:`_faithful_log` of many rationals at once (no cache: a tight E has a distinct level per pair)."""
    return faithful_log_ratios([value.numerator for value in values], [value.denominator for value in values])


def faithful_log_ratios(numerators: Sequence[int], denominators: Sequence[int]) -> list[float]:
    """Faithful floats of ``log(p / q)`` for positive integers ``p, q``: each within one unit in the last place.

    Each log is an Arb ball, first at :data:`_FAST_LOG_BITS` bits; its midpoint ``m`` rounded to
    the nearest double is ``f``, with ``|f - m| <= ulp(f) / 2`` (and at most ``ulp(f) / 4`` when
    ``m < f`` lies in the binade below). A ball whose radius ``r`` exceeds ``ulp(f) / 4`` (``log``
    near 0, huge integers) is recomputed at doubled precision until it does not; then the exact
    log is within ``ulp(f) / 2`` of ``f`` on the side of the larger spacing and within a quarter
    ulp below a power of two, so ``f`` is one of the two doubles around it.
    """
    if not numerators:
        return []  # python-flint is imported only when needed (fast start)
    with arb_precision(_FAST_LOG_BITS) as flint:
        arb = flint.arb
        balls = [(arb(numerator) / denominator).log() for numerator, denominator in zip(numerators, denominators)]
        logs = np.array([float(ball.mid()) for ball in balls])
        radii = np.array([float(ball.rad()) for ball in balls])
    # float(rad) may round down: four times a radius enlarged by 2^-50 against one ulp (no underflow)
    wide = np.flatnonzero(4 * (1 + 2.0**-50) * radii > np.spacing(np.abs(logs)))
    for index in wide.tolist():
        logs[index] = _refined_log(int(numerators[index]), int(denominators[index]))
    return logs.tolist()


def _refined_log(numerator: int, denominator: int) -> float:
    """``log(numerator / denominator)`` at doubling precision until the ball gives a faithful double."""
    precision = 2 * _FAST_LOG_BITS
    limit = max(_MAX_PRECISION, 4 * (numerator.bit_length() + denominator.bit_length()) + 1024)
    while True:
        with arb_precision(precision) as flint:
            ball = (flint.arb(numerator) / denominator).log()
            value = float(ball.mid())
            if 4 * (1 + 2.0**-50) * float(ball.rad()) <= math.ulp(value):
                return value
        if precision >= limit:
            raise ArithmeticError(f"could not round log({numerator}/{denominator}) faithfully at {limit} bits")
        precision = min(2 * precision, limit)


def integer_logs(integers: Sequence[int], bits: int = _LOG_BITS) -> tuple[np.ndarray, float]:
    """Float logs of positive integers with a rigorous error bound.

    Each log is an Arb ball at ``bits`` bits (python-flint) rounded to a float, so
    its error is at most one unit in the last place of the ball's midpoint plus
    the ball's radius. The radii are bounded all at once by the radius of the
    ball sum (a sum of balls contains every sum of their points, so its radius
    is at least the sum of theirs).

    Parameters
    ----------
    integers : sequence of int
        Positive integers of any size (or positive floats: each is an exact
        binary rational, and the same bound holds).
    bits : int
        Precision of the balls: the bound holds at any, a lower one is faster and
        gives a larger ``radius`` (about ``len(integers) * 2**-bits * max |log|``).

    Returns
    -------
    logs : ndarray of float
    radius : float
        For every i, ``|logs[i] - log(integers[i])| <= 2**-51 * |logs[i]| + radius``.
    """
    import flint

    if not integers:
        return np.zeros(0), 0.0
    with arb_precision(bits):
        arb = flint.arb
        balls = [arb(value).log() for value in integers]
        total = flint.arb_poly(balls)(1)
        radius = float(total.rad())
        logs = np.array([float(ball) for ball in balls])
    # float(rad) may round down by one unit: step up twice to stay an upper bound
    return logs, float(np.nextafter(np.nextafter(radius, math.inf), math.inf))


def describe_fraction(value: Fraction, max_digits: int | None = None) -> str:
    """A rational as ``p/q`` (or ``p``), or ``~d.ddddde±N`` when it is too long to print.

    Parameters
    ----------
    value : Fraction
    max_digits : int, optional
        Longest numerator or denominator printed in full (default: Python's
        integer-to-string limit, ``sys.get_int_max_str_digits()``, 4,300 unless
        changed; unlimited when that limit is 0). Longer rationals (``1e-30000``)
        are shown as a 17-digit scientific approximation prefixed with ``~``.
    """
    limit = sys.get_int_max_str_digits() if max_digits is None else max_digits
    longest = max(abs(value.numerator).bit_length(), value.denominator.bit_length())
    if not limit or longest * _LOG10_2 + 1 < limit:
        return str(value)
    with arb_precision(_LOG_BITS):
        return "~" + arb_fraction(value).str(17, radius=False, more=True)


def separating_decimals(ratio: Fraction, level: ExactEpsilon) -> tuple[str, str]:
    """``log(ratio)`` and a finite ``level`` in decimal, printed so that they compare like the exact values.

    Used to print a violation whose log-ratio exceeds the level by less than a
    float can show. Both get the digits needed to differ (7 at least); when that
    would be more than :data:`SEPARATING_DIGITS`, the log-ratio is printed as the
    level plus (or minus) the difference, e.g. ``1.098612288668110 + 1.5e-30000``.
    Equal values print identically.
    """
    gap = level.gap_ball(ratio)
    digits = 7
    if gap is not None:
        with arb_precision(128):
            size = float(abs(level.log_ball()).log() - abs(gap).log()) / math.log(10)
        digits = max(digits, math.ceil(size) + 3)
    if digits > SEPARATING_DIGITS:
        with arb_precision(128):
            shown = level.log_ball().str(17, radius=False, more=True)
        sign = "-" if gap > 0 else "+"
        return f"{shown} {sign} {abs(gap).str(2, radius=False, more=True)}", shown
    while True:
        with arb_precision(int(digits * 3.33) + 128):
            left = arb_fraction(ratio).log().str(digits, radius=False, more=True)
            right = level.log_ball().str(digits, radius=False, more=True)
        order = (Fraction(left) > Fraction(right)) - (Fraction(left) < Fraction(right))
        if gap is None or order == (-1 if gap > 0 else 1) or digits > SEPARATING_DIGITS:
            return left, right
        digits += 2


def exp_bounds(value: Fraction, precision: int) -> tuple[Fraction, Fraction]:
    """Rational ``lo <= exp(value) <= hi`` from an Arb ball at ``precision`` bits."""
    with arb_precision(precision):
        return ball_bounds(arb_fraction(value).exp())


def ball_bounds(ball: "flint.arb") -> tuple[Fraction, Fraction]:
    """Rational ``lo <= x <= hi`` for every ``x`` in an Arb ball (its endpoints, exactly)."""
    return _arb_to_fraction(ball.lower()), _arb_to_fraction(ball.upper())


def _arb_to_fraction(ball_endpoint: "flint.arb") -> Fraction:
    mantissa, exponent = ball_endpoint.man_exp()
    mantissa, exponent = int(mantissa), int(exponent)
    return Fraction(mantissa * 2**exponent) if exponent >= 0 else Fraction(mantissa, 2 ** (-exponent))


def log_fraction(value: Fraction) -> float:
    """Float ``log`` of a positive rational without underflow (``-inf`` for 0)."""
    if value == 0:
        return -math.inf
    return math.log(value.numerator) - math.log(value.denominator)


@contextmanager
def collector_paused():
    """Pause Python's cyclic garbage collector (restored on exit, as it was).

    Building a million ``Fraction``, integer or level objects would otherwise trigger
    collections that rescan all of them (the exact reader was measured 3-4x slower at
    k = 1000, the exact certifier's tight pairs 15-40%); these objects hold no cycles.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class DecimalCells:
    """Exact entries of a numeric CSV read lazily: each cell's rational is built only when asked for.

    The reader gives the correctly rounded floats of the cells (``values``, parsed
    in C) and, only when they can stand in for the text in a rigorous float filter,
    this object for the exact values. The reader guarantees (no cell of 100
    characters or more, no exponent of three digits, :func:`designer.io.fast.has_extreme_numbers`)
    that every non-zero value lies between ``1e-198`` and ``1e198``, so each float is a
    normal double within half a unit in the last place of the written value
    (relative error at most ``2^-53``) and a float is 0 exactly when the cell is
    written as zero. The exact certifier (:func:`designer.exact_filter.rational_logs`)
    then needs the rationals of only the cells its filter leaves undecided.

    Parameters
    ----------
    tokens : callable
        Returns the cells as rows of stripped strings (parsed again only when needed).
    shape : (int, int)
    """

    def __init__(self, tokens: Callable[[], list[list[str]]], shape: tuple[int, int]):
        self._tokens = tokens
        self.shape = shape
        self._cells: list[str] | None = None
        self._known = np.zeros(shape[0] * shape[1], dtype=bool)
        self._numerators = np.zeros(shape[0] * shape[1], dtype=object)
        self._denominators = np.ones(shape[0] * shape[1], dtype=object)

    def parts(self, rows: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Numerators and denominators (object arrays of Python ints, lowest terms) of the
        cells ``(rows[i], columns[i])``; each distinct cell is read from its text once."""
        flat = np.ravel_multi_index((rows, columns), self.shape)
        self._read(np.unique(flat[~self._known[flat]]))
        return self._numerators[flat], self._denominators[flat]

    def matrix(self) -> np.ndarray:
        """Every cell exactly (an object array of ``Fraction``)."""
        self._read(np.flatnonzero(~self._known))
        fractions = [_coprime_fraction(p, q) for p, q in zip(self._numerators.tolist(), self._denominators.tolist())]
        matrix = np.empty(len(fractions), dtype=object)
        matrix[:] = fractions
        return matrix.reshape(self.shape)

    def _read(self, flat: np.ndarray) -> None:
        if not flat.size:
            return
        if self._cells is None:
            self._cells = [cell for row in self._tokens() for cell in row]
        tokens = [self._cells[index] for index in flat.tolist()]
        exact, _ = parse_plain_decimals(tokens)  # the batch reader; any other cell one by one
        values = [parse_rational(token) if value is None else value for token, value in zip(tokens, exact)]
        for target, part in ((self._numerators, "numerator"), (self._denominators, "denominator")):
            integers = np.empty(len(values), dtype=object)  # Python ints of any size, never converted
            integers[:] = [getattr(value, part) for value in values]
            target[flat] = integers
        self._known[flat] = True
