"""Numbers in input cells: what each kind of file accepts, cell by cell and vectorised.

A :class:`NumberRule` states what a file's cells may hold (infinity, negatives,
integers only, ...). :func:`parse_float_cell` / :func:`parse_exact_cell` read one
cell strictly (the grammar of :func:`designer.exact.parse_rational`: decimals,
scientific notation, ``p/q``; plus ``inf`` where allowed) and return the reason a
value is refused; :func:`satisfies` checks a whole float array at once (the fast
path's guard: any failure sends the file to the cell-by-cell reader, whose error
names the row, column and value).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from designer.exact import DECIMAL_PATTERN, INFINITY_WORDS, ExactEpsilon, is_zero_literal, parse_rational

#: Smallest positive normal double (2.2250738585072014e-308); below it floats lose precision.
SMALLEST_NORMAL = sys.float_info.min


@dataclass(frozen=True)
class NumberRule:
    """What the cells of one kind of file may hold.

    Attributes
    ----------
    infinite : bool
        ``inf`` (``infinity``, any case, optional ``+``) is allowed.
    negative : bool
        Negative values are allowed (otherwise even ``-1e-300`` is refused; ``-0`` is zero).
    integer : bool
        Only integers.
    positive : bool
        Only values > 0.
    faithful : bool
        Float mode only: refuse a value that underflows to 0 or is subnormal
        (its float would change a zero pattern or a ratio); exact mode reads it.
    privacy_level : bool
        Cells are privacy levels (``inf``, ``log(r)``, rationals; :class:`~designer.exact.ExactEpsilon`).
    """

    infinite: bool = False
    negative: bool = False
    integer: bool = False
    positive: bool = False
    faithful: bool = False
    privacy_level: bool = False

    def requirement(self) -> str:
        """Words for the accepted values, used in messages."""
        if self.integer and self.positive:
            return "a positive integer"
        if self.positive:
            return "a positive number"
        words = "a number" if self.negative else "a number >= 0"
        return words + (" or inf" if self.infinite else "") + (" or log(r)" if self.privacy_level else "")


NON_NEGATIVE = NumberRule()
REAL = NumberRule(negative=True)
NON_NEGATIVE_OR_INFINITE = NumberRule(infinite=True)
PROBABILITY = NumberRule(faithful=True)
PRIVACY_LEVEL = NumberRule(infinite=True, privacy_level=True)
POSITIVE_INTEGER = NumberRule(integer=True, positive=True)


def parse_float_cell(text: str, rule: NumberRule) -> tuple[float, str | None]:
    """``(value, reason)``: the cell as a float and why it is refused (None if accepted).

    Decimals are converted by ``float`` (correctly rounded); only a cell written
    ``p/q`` (or ``log(r)`` for privacy levels) goes through exact rationals.
    """
    if text.lower() in INFINITY_WORDS:
        return math.inf, None if rule.infinite else "is infinite, which is not allowed here"
    if _is_decimal(text):
        value = float(text)
        if math.isinf(value):
            return value, LEVEL_TOO_LARGE if rule.privacy_level else TOO_LARGE
        if value == 0 and text.startswith("-") and not rule.negative and not is_zero_literal(text):
            return value, "is negative"  # -1e-400 rounds to -0.0 but is written negative
        return value, _float_check(value, text, rule)
    if rule.privacy_level:
        try:
            level = ExactEpsilon.parse(text)
        except (ValueError, ArithmeticError) as error:
            return math.nan, _refusal(error, rule)
        return float(level), LEVEL_TOO_LARGE if level.beyond_double else None
    try:
        exact = parse_rational(text)
        value = float(exact)
    except OverflowError:
        return math.inf, TOO_LARGE
    except ValueError as error:
        return math.nan, _refusal(error, rule)
    return value, _float_check(value, text, rule, exact)


def parse_exact_cell(text: str, rule: NumberRule) -> tuple[object, str | None]:
    """``(value, reason)``: the cell exactly (Fraction, or ExactEpsilon for privacy levels).

    The caller converts accepted values to floats (an overflow there is refused too).
    """
    try:
        value = ExactEpsilon.parse(text) if rule.privacy_level else parse_rational(text)
    except (ValueError, ArithmeticError) as error:
        if text.lower() in INFINITY_WORDS:
            return None, "is infinite, which is not allowed here"
        return None, _refusal(error, rule)
    return value, None if rule.privacy_level else _check(None, value, rule)


TOO_LARGE = "is too large for a double-precision float"
#: A finite privacy level beyond the double range, in float mode (exact mode keeps it, in log space).
LEVEL_TOO_LARGE = TOO_LARGE + (
    ": a finite level beyond the double range, which float mode cannot keep (exact mode, --exact, "
    "compares it exactly; write inf if the pair needs no constraint)"
)


def _is_decimal(text: str) -> bool:
    match = DECIMAL_PATTERN.fullmatch(text)
    return match is not None and bool(match.group(2) or match.group(3))


def _refusal(error: Exception, rule: NumberRule) -> str:
    """Why a cell did not parse: what was expected, and the parser's detail when it adds one."""
    message = str(error)
    if message.startswith("not an exact number"):
        detail = message[message.rfind(" (") + 2 : -1] if message.endswith(")") else ""
        return f"is not {rule.requirement()}" + (f" ({detail})" if detail else "")
    return f"is not {rule.requirement()} ({message})"


#: Why float mode refuses an underflowing or subnormal probability, and what to do.
_FLOAT_RISK = "a float verdict could be wrong (its zero pattern or ratios change); certify it with --exact"


def _float_check(value: float, text: str, rule: NumberRule, exact: Fraction | None = None) -> str | None:
    """Sign/integrality, and for faithful rules underflow (text not zero, float 0) and subnormals."""
    reason = _check(value, exact, rule)
    if reason is None and rule.faithful and abs(value) < SMALLEST_NORMAL:
        written_zero = exact == 0 if exact is not None else is_zero_literal(text)
        if value == 0 and not written_zero:
            return f"underflows to 0 in double precision, so {_FLOAT_RISK}"
        if value != 0:
            return (
                f"is subnormal in double precision (below {SMALLEST_NORMAL:.4g}, rounded by up to "
                f"{math.ulp(0.0) / abs(value):.1g} relative), so {_FLOAT_RISK}"
            )
    return reason


def _check(value: float | None, exact: Fraction | None, rule: NumberRule) -> str | None:
    """Sign and integrality, on the exact value when known (``-1e-400`` is negative too)."""
    if exact is not None:
        sign, integral = (exact.numerator > 0) - (exact.numerator < 0), exact.denominator == 1
    else:
        sign, integral = (value > 0) - (value < 0), value == math.floor(value)
    if sign < 0 and not rule.negative:
        return "is negative"
    if rule.positive and sign <= 0:
        return "must be > 0"
    if rule.integer and not integral:
        return "is not an integer"
    return None


def satisfies(values: np.ndarray, rule: NumberRule) -> bool:
    """Whether every float in ``values`` obeys ``rule`` (the fast path's vectorised guard).

    Underflow cannot be seen in floats (a 0 may come from ``1e-400``), so the
    caller also checks the text for extreme numbers (:func:`designer.io.fast.has_extreme_numbers`).
    """
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(values) | ((values == np.inf) if rule.infinite else False)
        if not rule.negative:
            ok &= values >= 0
        if rule.positive:
            ok &= values > 0
        if rule.integer:
            ok &= values == np.floor(values)
    return bool(ok.all())
