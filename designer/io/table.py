"""The strict CSV tokeniser: cells as stripped strings, each row with its line in the file.

Rules (shared by every input file):

* lines end with ``\\n``, ``\\r\\n`` or ``\\r``; rows are reported by their line in
  the file (1-based, blank and comment lines counted), as a text editor shows it;
* blank lines, rows of empty cells and lines starting with ``#`` (comments) are
  skipped; comments are kept in :attr:`Table.comments` (``# labels: ...`` is read
  by :mod:`designer.io.labels`);
* cells are separated by commas and stripped; double quotes follow RFC 4180, but
  a quoted value must end on the line where it starts (an unterminated quote is
  an error, it never swallows the rest of the file);
* a value longer than the csv module's field limit (131,072 characters) is an
  error naming its row, not a traceback; the limit is not changed;
* every row has as many cells as the first one.
"""

from __future__ import annotations

import csv
from pathlib import Path

from designer.io.text import InputError, decode, read_bytes


class Table(list):
    """Rows of stripped cells.

    Attributes
    ----------
    line_numbers : list of int
        ``line_numbers[i]``: the file line of row ``i`` (1-based).
    comments : list of (int, str)
        Comment lines (line number, stripped text), in file order.
    """

    def __init__(self, rows: list[list[str]], line_numbers: list[int], comments: list[tuple[int, str]] | None = None):
        super().__init__(rows)
        self.line_numbers = line_numbers
        self.comments = comments or []


def read_table(path: str | Path, what: str, rectangular: bool = True) -> Table:
    """Read a CSV file of cells (see the module rules).

    Raises :class:`InputError` (one line naming the file and the row) for an
    unreadable, binary, non-UTF-8 or empty file, a malformed or unterminated
    quote, an over-long value, or (when ``rectangular``) ragged rows.
    """
    return parse_table(decode(read_bytes(path, what), path, what), path, what, rectangular)


def parse_table(text: str, path: str | Path, what: str, rectangular: bool = True) -> Table:
    """Tokenise CSV ``text`` read from ``path`` (see :func:`read_table`)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    data_lines: list[str] = []
    data_numbers: list[int] = []
    comments: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            comments.append((number, stripped))
        elif stripped:
            data_lines.append(line)
            data_numbers.append(number)
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    reader = csv.reader(data_lines, strict=True)
    consumed = 0
    try:
        for cells in reader:
            if reader.line_num - consumed > 1:
                raise _unterminated(path, data_numbers[consumed])
            consumed = reader.line_num
            cells = [cell.strip() for cell in cells]
            if any(cells):
                rows.append(cells)
                line_numbers.append(data_numbers[consumed - 1])
    except csv.Error as error:
        start = data_numbers[consumed] if consumed < len(data_numbers) else data_numbers[-1]
        if "field limit" in str(error):
            raise InputError(
                f"{path}: row {start}: a value is longer than {csv.field_size_limit():,} characters "
                f"(the CSV field limit); is this a {what} file?"
            ) from None
        if reader.line_num - consumed > 1 or "end of data" in str(error):
            raise _unterminated(path, start) from None
        raise InputError(f"{path}: row {start}: malformed CSV ({error})") from None
    if not rows:
        raise InputError(f"{path}: the {what} file has no rows")
    width = len(rows[0])
    for cells, line_number in zip(rows, line_numbers) if rectangular else ():
        if len(cells) != width:
            raise InputError(
                f"{path}: row {line_number} has {len(cells)} values, expected {width} like the first row (ragged CSV)"
            )
    return Table(rows, line_numbers, comments)


def _unterminated(path: str | Path, line_number: int) -> InputError:
    return InputError(
        f"{path}: row {line_number}: a quoted value is not closed on its line (unterminated double quote)"
    )
