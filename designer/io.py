"""Reading and writing matrices: strict CSV parsing with precise errors, atomic writes.

Every reading error is an :class:`InputError` naming the file, the row (1-based,
as a text editor shows it), the column and the offending value. Writers go
through a temporary file in the destination folder and ``os.replace``, so a
failure never leaves a partial output file.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path

import numpy as np

from designer.channel import ROW_SUM_ATOL, Channel
from designer.exact import ExactEpsilon, parse_rational
from designer.spec import PrivacyMatrix


class InputError(ValueError):
    """Bad user input; ``str(error)`` is one line naming file, row and value."""


def read_table(path: str | Path, what: str) -> list[list[str]]:
    """Read a CSV of cells (stripped strings); blank lines and ``#`` comments are skipped.

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
    return rows


def _parse_cells(path: Path, rows: list[list[str]], parse: Callable[[str], object], what: str) -> np.ndarray:
    out = np.empty((len(rows), len(rows[0])), dtype=object)
    for i, cells in enumerate(rows):
        for j, cell in enumerate(cells):
            try:
                out[i, j] = parse(cell)
            except ValueError as error:
                raise InputError(f"{path}: row {i + 1}, column {j + 1}: bad {what} value {cell!r} ({error})") from None
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
            raise InputError(f"{path}: row {x + 1}, column {x + 1}: diagonal of E must be 0, got {rows[x][x]!r}")
    return PrivacyMatrix(cells, name=path.name)


def read_channel(path: str | Path) -> Channel:
    """Read Q from a CSV of k rows of probabilities, kept exactly as written."""
    path = Path(path)
    rows = read_table(path, "channel")
    cells = _parse_cells(path, rows, parse_rational, "probability")
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            if value < 0:
                raise InputError(f"{path}: row {i + 1}, column {j + 1}: negative probability {rows[i][j]!r}")
        total = float(sum(row))
        if abs(total - 1) > ROW_SUM_ATOL:
            raise InputError(f"{path}: row {i + 1} sums to {total!r}, not 1 (tolerance {ROW_SUM_ATOL:g})")
    return Channel(cells)


def read_vector(path: str | Path, what: str) -> np.ndarray:
    """Read numbers from a CSV with one row or one column."""
    path = Path(path)
    rows = read_table(path, what)
    cells = _parse_cells(path, rows, parse_rational, what)
    if min(cells.shape) != 1:
        raise InputError(f"{path}: {what} must be one row or one column, got {cells.shape[0]} x {cells.shape[1]}")
    return np.array([float(v) for v in cells.ravel()])


def read_matrix(path: str | Path, what: str) -> np.ndarray:
    """Read a rectangular matrix of finite numbers (e.g. a loss matrix) as floats."""
    path = Path(path)
    rows = read_table(path, what)
    cells = _parse_cells(path, rows, parse_rational, what)
    return np.array([[float(v) for v in row] for row in cells])


def format_number(value) -> str:
    """Shortest text that reads back to the same float (``inf`` for infinity)."""
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _atomic_write(path: str | Path, write: Callable[[object], None]) -> None:
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{path}: the output folder {directory} does not exist")
    handle = tempfile.NamedTemporaryFile("w", dir=directory, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            write(handle)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise


def write_matrix_csv(path: str | Path, matrix: Iterable[Iterable[float]]) -> None:
    """Write a numeric matrix as CSV, atomically, with round-trip precision.

    Fractions (exact channels) are written exactly as ``p/q``.
    """
    rows = [
        [str(value) if isinstance(value, Fraction) else format_number(value) for value in row]
        for row in np.asarray(matrix, dtype=object)
    ]
    _atomic_write(path, lambda handle: csv.writer(handle, lineterminator="\n").writerows(rows))


def write_json(path: str | Path, payload: dict) -> None:
    """Write a JSON document atomically."""
    _atomic_write(path, lambda handle: json.dump(payload, handle, indent=2))
