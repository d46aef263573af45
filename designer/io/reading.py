"""Reading input files: one reader layer for every command's CSV inputs.

Every reading error is an :class:`InputError` whose message is one line naming
the file, the row (its line in the file, as a text editor shows it, comments and
blank lines counted), the column and the offending value.

Two modes:

* float (``exact=False``): a purely numeric file is parsed in C by the fast path
  (:mod:`designer.io.fast`); anything else, or anything suspicious, is read cell
  by cell with correctly rounded ``float`` (rationals only for cells written
  ``p/q`` or ``log(r)``). No file is parsed twice unless it has an error.
* exact (``exact=True``): every cell is read exactly (``Fraction``,
  :class:`~designer.exact.ExactEpsilon`), as written. A plain numeric channel
  with no extreme number is parsed in C and its rationals are built only when
  needed (:class:`~designer.exact.DecimalCells`: the exact certifier reads the
  few cells its float filter cannot decide).

File format rules are those of :mod:`designer.io.table`; a ``# labels:`` comment
line names the rows (:mod:`designer.io.labels`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from designer.channel import ROW_SUM_ATOL, Channel
from designer.exact import (
    DecimalCells,
    collector_paused,
    faithful_log_ratios,
    parse_integer_log_ratios,
    parse_plain_decimals,
    plain_decimal_floats,
    quoted_token,
    ratio_level,
)
from designer.io.fast import fast_float_matrix, has_extreme_numbers
from designer.io.labels import declared_labels
from designer.io.numbers import (
    NON_NEGATIVE,
    NON_NEGATIVE_OR_INFINITE,
    PRIVACY_LEVEL,
    PROBABILITY,
    TOO_LARGE,
    NumberRule,
    parse_exact_cell,
    parse_float_cell,
)
from designer.io.table import Table, parse_table, read_table
from designer.io.text import InputError, decode, read_bytes
from designer.spec import PrivacyMatrix

__all__ = [
    "InputError",
    "NumberTable",
    "Table",
    "read_channel",
    "read_matrix",
    "read_numbers",
    "read_privacy_matrix",
    "read_table",
    "read_vector",
]


@dataclass
class NumberTable:
    """A numeric file, parsed.

    Attributes
    ----------
    path : Path
    values : ndarray of float, shape (rows, columns)
    exact : ndarray of object, DecimalCells or None
        Exact mode: the cells as ``Fraction``; for privacy levels ``ExactEpsilon``,
        or the text of a plain decimal (read lazily by :class:`~designer.spec.PrivacyMatrix`);
        for a plain numeric channel, :class:`~designer.exact.DecimalCells` (read lazily).
    comments : list of (int, str)
        Comment lines (line number, text).
    """

    path: Path
    values: np.ndarray
    exact: np.ndarray | None
    comments: list[tuple[int, str]]
    _line_numbers: Callable[[], list[int]] = field(repr=False)

    def line(self, row: int) -> int:
        """The file line of row ``row`` (0-based): found again only when a message needs it."""
        if callable(self._line_numbers):
            self._line_numbers = self._line_numbers()
        return self._line_numbers[row]

    def labels(self, count: int) -> list[str] | None:
        """Row labels from a ``# labels:`` line (checked to be ``count`` of them), or None."""
        return declared_labels(self.comments, self.path, count)


def read_numbers(
    path: str | Path, what: str, rule: NumberRule, exact: bool = False, cell_name: str | None = None, data: bytes | None = None
) -> NumberTable:
    """Read a rectangular CSV of numbers obeying ``rule`` (float or exact; see the module).

    ``what`` names the file in messages ("channel"), ``cell_name`` one of its
    values (default ``"<what> value"``, e.g. "probability"); ``data``: the file's
    bytes when the caller has read them already.
    """
    path = Path(path)
    data = read_bytes(path, what) if data is None else data
    if not exact:
        fast = fast_float_matrix(data, rule)
        if fast is not None:
            values, comments = fast
            values += 0.0  # -0.0 is 0
            lines = lambda: parse_table(decode(data, path, what), path, what).line_numbers  # noqa: E731
            return NumberTable(path, values, None, comments, lines)
    table = parse_table(decode(data, path, what), path, what)
    values, exact_values = _parse_cells(path, table, cell_name or f"{what} value", rule, exact)
    return NumberTable(path, values, exact_values, table.comments, table.line_numbers)


def _parse_cells(path: Path, table: Table, name: str, rule: NumberRule, exact: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Every cell by the strict parser; the first refused cell names its file line and column.

    Exact mode reads plain decimals in one batch (:func:`designer.exact.parse_plain_decimals`:
    never negative, so never refused; for E only their floats, :func:`designer.exact.plain_decimal_floats`,
    the text being the exact level), the other cells one by one.
    The cyclic garbage collector is paused meanwhile (:func:`designer.exact.collector_paused`).
    """
    with collector_paused():
        return _parse_all_cells(path, table, name, rule, exact)


def _parse_all_cells(path: Path, table: Table, name: str, rule: NumberRule, exact: bool) -> tuple[np.ndarray, np.ndarray | None]:
    width = len(table[0])
    cells = [cell for row in table for cell in row]
    position: dict[str, int] = {}
    inverse = np.fromiter((position.setdefault(cell, len(position)) for cell in cells), dtype=np.intp, count=len(cells))
    distinct = list(position)  # repeated values (GRR, block E) are read and converted once, in file order
    if exact and not (rule.integer or rule.positive):
        if rule.privacy_level:  # a plain decimal level stays text until its rational is needed
            floats = plain_decimal_floats(distinct)
            parsed = [None if value is None else token for token, value in zip(distinct, floats)]
            unread = [index for index, value in enumerate(parsed) if value is None]
            ratios = parse_integer_log_ratios([distinct[index] for index in unread])
            logs = [(index, ratio) for index, ratio in zip(unread, ratios) if ratio is not None]
            numerators, denominators = [ratio[0] for _, ratio in logs], [ratio[1] for _, ratio in logs]
            for (index, ratio), value in zip(logs, faithful_log_ratios(numerators, denominators)):
                parsed[index], floats[index] = ratio, value  # log(p/q) of integers: read at once, kept as (p, q)
        else:
            parsed, floats = parse_plain_decimals(distinct)
    else:
        parsed, floats = [None] * len(distinct), [None] * len(distinct)
    parse = parse_exact_cell if exact else parse_float_cell

    def refuse(token: str, reason: str) -> InputError:  # at the token's first cell, the first refused in the file
        row, column = divmod(cells.index(token), width)
        return InputError(f"{path}: row {table.line_numbers[row]}, column {column + 1}: {name} {quoted_token(token)} {reason}")

    for index, token in enumerate(distinct):
        if floats[index] is not None:
            continue
        value = parsed[index]
        if value is None:
            value, reason = parse(token, rule)
            if reason is not None:
                raise refuse(token, reason)
            parsed[index] = value
        if exact:
            try:
                floats[index] = float(value)
            except OverflowError:
                raise refuse(token, TOO_LARGE) from None
        else:
            floats[index] = value
    shape = (len(table), width)
    values = np.array(floats, dtype=float)[inverse].reshape(shape)
    if not exact:
        return values + 0.0, None  # -0.0 is 0
    exact_values = np.fromiter(parsed, dtype=object, count=len(parsed))  # (p, q) pairs stay objects, not rows
    return values, exact_values[inverse].reshape(shape)


def read_privacy_matrix(path: str | Path, exact: bool = True) -> PrivacyMatrix:
    """Read E from a CSV of k rows of k entries (numbers >= 0, ``inf``, ``log(r)``).

    ``exact=True`` keeps every entry as written (what the exact certifier and the
    designer use); ``exact=False`` reads floats (the float certifier, fast path).
    A ``# labels:`` line names the symbols.
    """
    numbers = read_numbers(path, "E", PRIVACY_LEVEL, exact)
    values = numbers.values
    if values.shape[0] != values.shape[1]:
        raise InputError(f"{numbers.path}: E must be square, got {values.shape[0]} rows of {values.shape[1]} values")
    diagonal = np.flatnonzero(np.diag(values) != 0)
    if diagonal.size:
        x = int(diagonal[0])
        shown = numbers.exact[x, x] if numbers.exact is not None else values[x, x]
        shown = ratio_level(shown) if type(shown) is tuple else shown  # log(p/q) read as the pair (p, q)
        raise InputError(f"{numbers.path}: row {numbers.line(x)}, column {x + 1}: diagonal of E must be 0, got {str(shown)!r}")
    labels = numbers.labels(values.shape[0])
    return PrivacyMatrix(values, labels, name=numbers.path.name, exact_epsilon=numbers.exact)


def read_channel(path: str | Path, exact: bool = True) -> Channel:
    """Read Q from a CSV of k rows of probabilities.

    ``exact=True`` keeps the entries exactly as written (``Channel.is_exact``);
    ``exact=False`` reads floats and refuses entries that underflow to 0 or are
    subnormal (their float would change a zero pattern or a ratio; exact mode
    reads them). Rows must sum to 1 within ``ROW_SUM_ATOL`` (summed in floats).
    A ``# labels:`` line names the inputs (rows).
    """
    path = Path(path)
    data = read_bytes(path, "channel")  # once: the file may be a pipe
    numbers = _lazy_channel_numbers(path, data) if exact else None
    if numbers is None:
        numbers = read_numbers(path, "channel", PROBABILITY, exact, cell_name="probability", data=data)
    values = numbers.values
    sums = values.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_ATOL)
    if off.size:
        x = int(off[0])
        raise InputError(
            f"{numbers.path}: row {numbers.line(x)} sums to {float(sums[x])!r}, not 1 (tolerance {ROW_SUM_ATOL:g})"
        )
    labels = numbers.labels(values.shape[0])
    return Channel(values, input_labels=labels, exact_matrix=numbers.exact)


def _lazy_channel_numbers(path: Path, data: bytes) -> NumberTable | None:
    """Exact mode's fast path: floats parsed in C, the rationals kept as text (:class:`~designer.exact.DecimalCells`).

    Taken only when the file has no extreme number (:func:`~designer.io.fast.has_extreme_numbers`),
    so every float is normal or a written zero; otherwise None (every cell read exactly now).
    """
    fast = fast_float_matrix(data, NON_NEGATIVE)
    if fast is None or has_extreme_numbers(data):
        return None
    values, comments = fast
    values += 0.0  # -0.0 is 0
    table = lambda: parse_table(decode(data, path, "channel"), path, "channel")  # noqa: E731
    cells = DecimalCells(table, values.shape)
    return NumberTable(path, values, cells, comments, lambda: table().line_numbers)


def read_vector(path: str | Path, what: str, rule: NumberRule = NON_NEGATIVE) -> np.ndarray:
    """Read numbers (floats) from a CSV with one row or one column (e.g. a prior, block sizes)."""
    numbers = read_numbers(path, what, rule)
    if min(numbers.values.shape) != 1:
        rows, columns = numbers.values.shape
        raise InputError(f"{numbers.path}: {what} must be one row or one column, got {rows} x {columns}")
    return numbers.values.ravel()


def read_matrix(path: str | Path, what: str, allow_infinite: bool = False, rule: NumberRule | None = None) -> np.ndarray:
    """Read a rectangular matrix of numbers as floats.

    By default entries must be finite and >= 0 (a loss, a distance); with
    ``allow_infinite`` ``inf`` is accepted (the distance between disconnected
    symbols); ``rule`` overrides both (e.g. :data:`~designer.io.numbers.REAL`
    for a workload or strategy matrix, whose entries may be negative).
    """
    if rule is None:
        rule = NON_NEGATIVE_OR_INFINITE if allow_infinite else NON_NEGATIVE
    return read_numbers(path, what, rule).values

