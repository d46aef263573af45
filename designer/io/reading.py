"""Reading input files: strict CSV parsing with precise errors.

Every reading error is an :class:`InputError` naming the file, the row (1-based,
as a text editor shows it), the column and the offending value.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from designer.channel import ROW_SUM_ATOL, Channel
from designer.exact import INFINITY_WORDS, ExactEpsilon, parse_rational
from designer.spec import PrivacyMatrix


class InputError(ValueError):
    """Bad user input; ``str(error)`` is one line naming file, row and value."""


class Table(list):
    """Rows of stripped cells, with ``line_numbers[i]``: the file line of row ``i`` (1-based)."""

    def __init__(self, rows: list[list[str]], line_numbers: list[int]):
        super().__init__(rows)
        self.line_numbers = line_numbers


def read_table(path: str | Path, what: str) -> Table:
    """Read a CSV of cells (stripped strings); blank lines and ``#`` comments are skipped.

    Every row is reported by its line in the file (``Table.line_numbers``), so
    error messages point where a text editor shows the value.
    Raises :class:`InputError` for a missing/unreadable/empty file or ragged rows.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read {what} file ({error.__class__.__name__}: {error})") from None
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    for line_number, row in enumerate(csv.reader(text.splitlines()), start=1):
        cells = [cell.strip() for cell in row]
        if not cells or all(cell == "" for cell in cells) or cells[0].startswith("#"):
            continue
        rows.append(cells)
        line_numbers.append(line_number)
    if not rows:
        raise InputError(f"{path}: the {what} file has no rows")
    width = len(rows[0])
    for cells, line_number in zip(rows, line_numbers):
        if len(cells) != width:
            raise InputError(
                f"{path}: row {line_number} has {len(cells)} values, expected {width} like the first row (ragged CSV)"
            )
    return Table(rows, line_numbers)


def _parse_cells(path: Path, rows: Table, parse: Callable[[str], object], what: str) -> np.ndarray:
    """Parse every cell; a value that is malformed or overflows a float names its file line and column."""
    out = np.empty((len(rows), len(rows[0])), dtype=object)
    for i, cells in enumerate(rows):
        for j, cell in enumerate(cells):
            try:
                out[i, j] = parse(cell)
                float(out[i, j])
            except ValueError as error:
                raise InputError(
                    f"{path}: row {rows.line_numbers[i]}, column {j + 1}: bad {what} value {cell!r} ({error})"
                ) from None
            except OverflowError:
                raise InputError(
                    f"{path}: row {rows.line_numbers[i]}, column {j + 1}: {what} value {cell!r} is too large "
                    "for a double-precision float"
                ) from None
    return out


def read_privacy_matrix(path: str | Path) -> PrivacyMatrix:
    """Read E from a CSV of k rows of k entries (numbers, ``inf``, ``log(r)``)."""
    path = Path(path)
    rows = read_table(path, "E")
    cells = _parse_cells(path, rows, ExactEpsilon.parse, "E")
    if cells.shape[0] != cells.shape[1]:
        raise InputError(f"{path}: E must be square, got {cells.shape[0]} rows of {cells.shape[1]} values")
    for x in range(cells.shape[0]):
        if float(cells[x, x]) != 0:
            raise InputError(f"{path}: row {rows.line_numbers[x]}, column {x + 1}: diagonal of E must be 0, got {rows[x][x]!r}")
    return PrivacyMatrix(cells, name=path.name)


def read_channel(path: str | Path) -> Channel:
    """Read Q from a CSV of k rows of probabilities, kept exactly as written."""
    path = Path(path)
    rows = read_table(path, "channel")
    cells = _parse_cells(path, rows, parse_rational, "probability")
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            if value < 0:
                raise InputError(
                    f"{path}: row {rows.line_numbers[i]}, column {j + 1}: negative probability {rows[i][j]!r}"
                )
        total = float(sum(row))
        if abs(total - 1) > ROW_SUM_ATOL:
            raise InputError(
                f"{path}: row {rows.line_numbers[i]} sums to {total!r}, not 1 (tolerance {ROW_SUM_ATOL:g})"
            )
    return Channel(cells)


def read_vector(path: str | Path, what: str) -> np.ndarray:
    """Read numbers from a CSV with one row or one column."""
    path = Path(path)
    rows = read_table(path, what)
    cells = _parse_cells(path, rows, parse_rational, what)
    if min(cells.shape) != 1:
        raise InputError(f"{path}: {what} must be one row or one column, got {cells.shape[0]} x {cells.shape[1]}")
    return np.array([float(v) for v in cells.ravel()])


def read_matrix(path: str | Path, what: str, allow_infinite: bool = False) -> np.ndarray:
    """Read a rectangular matrix of numbers (e.g. a loss or distance matrix) as floats.

    Entries must be finite unless ``allow_infinite`` (then ``inf`` is accepted,
    e.g. the distance between disconnected symbols).
    """
    path = Path(path)
    rows = read_table(path, what)
    parse = _parse_number_or_infinity if allow_infinite else parse_rational
    cells = _parse_cells(path, rows, parse, what)
    return np.array([[float(v) for v in row] for row in cells])


def _parse_number_or_infinity(text: str):
    return math.inf if text.strip().lower() in INFINITY_WORDS else parse_rational(text)
