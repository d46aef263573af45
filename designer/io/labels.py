"""Symbol labels beside a matrix: a ``# labels: a,b,c`` comment line.

The line is a comment, so any CSV reader that skips ``#`` lines still reads the
matrix; :func:`designer.io.read_privacy_matrix`, :func:`designer.io.read_channel`
and :func:`designer.io.read_graph` read it: the labels name the rows (the input
symbols) in order. After ``# labels:`` comes one CSV row (quoted like any CSV
cell when a label holds a comma or a quote).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from designer.io.text import InputError

LABELS_PREFIX = "# labels:"


def labels_line(labels: Sequence[str]) -> str:
    """The comment line declaring ``labels`` (no line end)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="").writerow([str(label) for label in labels])
    return f"{LABELS_PREFIX} {buffer.getvalue()}"


def declared_labels(comments: list[tuple[int, str]], path: str | Path, count: int | None = None) -> list[str] | None:
    """The labels declared in a file's comment lines ``(line, text)``, or None when there is none.

    Raises :class:`InputError` for two labels lines, a malformed or empty one,
    repeated labels, or (with ``count``) a number of labels other than ``count``.
    """
    found = [(number, text) for number, text in comments if text.lower().startswith(LABELS_PREFIX)]
    if not found:
        return None
    if len(found) > 1:
        raise InputError(f"{path}: rows {found[0][0]} and {found[1][0]} both declare labels; keep one '# labels:' line")
    number, text = found[0]
    try:
        rows = list(csv.reader([text[len(LABELS_PREFIX) :]], strict=True, skipinitialspace=True))
    except csv.Error as error:
        raise InputError(f"{path}: row {number}: malformed labels line ({error})") from None
    labels = [label.strip() for label in rows[0]] if rows else []
    if not labels or any(label == "" for label in labels):
        raise InputError(f"{path}: row {number}: the labels line has an empty label")
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise InputError(f"{path}: row {number}: label {repeated[0]!r} appears more than once")
    if count is not None and len(labels) != count:
        raise InputError(f"{path}: row {number}: {len(labels)} labels for {count} rows")
    return labels


def labelled_writer(
    labels: Iterable[str], write_matrix: Callable[[object], None]
) -> Callable[[object], None]:
    """A file writer that writes the labels line, then the matrix (``write_matrix``)."""
    line = labels_line(list(labels))

    def write(handle) -> None:
        handle.write(line + "\n")
        write_matrix(handle)

    return write


def check_same_labels(
    first: Sequence[str], second: Sequence[str], first_path: str | Path, second_path: str | Path
) -> None:
    """Refuse two files whose declared labels differ (rows would be matched to the wrong symbols).

    Labels ``0 .. k-1`` are the default (nothing declared) and match anything.
    """
    default = tuple(str(index) for index in range(len(first)))
    first, second = tuple(first), tuple(second)
    if first == second or default in (first, second):
        return
    position = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), min(len(first), len(second)))
    shown = [labels[position] if position < len(labels) else "(none)" for labels in (first, second)]
    raise InputError(
        f"{first_path}: symbol {position + 1} is labelled {shown[0]!r} but {second_path} labels it {shown[1]!r}; "
        "the files must list the symbols in the same order"
    )
