"""The fast float path: a whole numeric CSV parsed by ``numpy.loadtxt`` in C.

Measured on a dense 1000 x 1000 channel (22 MB; ``benchmarks/bench_cli_certify.py``,
three runs on a shared machine): pandas' C engine parses 1.7-4.7x faster than
``numpy.loadtxt`` but importing pandas costs 0.3-1.1 s, so parse plus import is
0.7-1.3x loadtxt's time; pyarrow (0.29 s + 0.05 s import against loadtxt's 0.51 s
in a quiet run) is not a dependency; Python ``float`` per cell is 1.1-1.7x slower.
numpy needs no extra import and converts with CPython's correctly rounded
``PyOS_string_to_double``, so it is the fast path.

The fast path only ever *accepts* a file; it never reports an error. It gives up
(returns None, and the strict cell-by-cell reader takes over, whose message names
the row, column and value) on anything it cannot vouch for:

* a byte outside ``0-9 . e E + - , space tab newline`` (and the letters of ``inf``
  where infinity is allowed): quotes, fractions ``p/q``, ``log(r)``, ``nan``,
  non-ASCII text, a lone ``\\r`` line end, a ``#`` after data on a line;
* anything ``loadtxt`` refuses (empty cells, ragged rows, malformed numbers);
* a value the rule refuses (negative, infinite, non-integer, ...);
* zeros, subnormals or infinities when the text holds an *extreme* number (a cell
  of 100 characters or more, or an exponent of three digits or more): only then
  can a float underflow to 0, be subnormal or overflow, which floats alone cannot
  tell from a written ``0`` or ``inf``.
"""

from __future__ import annotations

import io
import warnings

import numpy as np

from designer.io.numbers import SMALLEST_NORMAL, NumberRule, satisfies

_NUMERIC_BYTES = b"0123456789.eE+-, \t\n"
_INFINITY_BYTES = b"infINFtyTY"
#: Cells at least this long, or exponents with this many digits, are extreme.
_EXTREME_CELL_LENGTH = 100
_EXTREME_EXPONENT_DIGITS = 3


def fast_float_matrix(data: bytes, rule: NumberRule) -> tuple[np.ndarray, list[tuple[int, str]]] | None:
    """``(values, comments)`` parsed in C, or None when the strict reader must decide.

    ``data`` is the file's bytes (BOM removed); ``comments`` are the whole-line
    ``#`` comments as ``(line number, stripped text)``.
    """
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
        if b"\r" in data:
            return None
    comments: list[tuple[int, str]] = []
    if b"#" in data:
        stripped = _without_comment_lines(data, comments)
        if stripped is None:
            return None
        data = stripped
    allowed = _NUMERIC_BYTES + (_INFINITY_BYTES if rule.infinite else b"")
    if data.translate(None, allowed):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data"
            values = np.loadtxt(io.BytesIO(data), delimiter=",", dtype=float, ndmin=2, comments=None)
    except (ValueError, TypeError, IndexError):
        return None
    if values.size == 0:
        return None
    with np.errstate(invalid="ignore"):
        unusual = not np.isfinite(values).all() or bool((np.abs(values) < SMALLEST_NORMAL).any())
    if unusual and has_extreme_numbers(data):
        return None
    if not satisfies(values, rule):
        return None
    return values, comments


def has_extreme_numbers(data: bytes) -> bool:
    """Whether some cell of numeric CSV ``data`` could underflow, be subnormal or overflow.

    Without a cell of 100+ characters or a 3-digit exponent every non-zero value
    lies between 1e-198 and 1e198, far inside the normal doubles.
    """
    codes = np.frombuffer(data, dtype=np.uint8)
    bounds = np.concatenate(([-1], np.flatnonzero((codes == ord(",")) | (codes == ord("\n"))), [codes.size]))
    if np.diff(bounds).max() > _EXTREME_CELL_LENGTH:
        return True
    exponents = np.flatnonzero((codes == ord("e")) | (codes == ord("E")))
    if exponents.size == 0:
        return False
    ends = bounds[np.searchsorted(bounds, exponents)]
    following = codes[np.minimum(exponents + 1, codes.size - 1)]
    signed = (following == ord("+")) | (following == ord("-"))
    return bool(np.any(ends - exponents - 1 - signed >= _EXTREME_EXPONENT_DIGITS))


def _without_comment_lines(data: bytes, comments: list[tuple[int, str]]) -> bytes | None:
    """``data`` with whole-line comments blanked (line count kept); None if a ``#`` follows data."""
    pieces = []
    start = 0
    line_number, counted_to = 1, 0
    position = data.find(b"#")
    while position != -1:
        line_start = data.rfind(b"\n", 0, position) + 1
        if data[line_start:position].strip(b" \t"):
            return None
        line_end = data.find(b"\n", position)
        line_end = len(data) if line_end == -1 else line_end
        line_number += data.count(b"\n", counted_to, line_start)
        counted_to = line_start
        try:
            comments.append((line_number, data[line_start:line_end].decode("utf-8").strip()))
        except UnicodeDecodeError:
            return None
        pieces.append(data[start:line_start])
        start = line_end
        position = data.find(b"#", line_end)
    pieces.append(data[start:])
    return b"".join(pieces)
