"""Writing output files atomically: a temporary file in the destination folder, then ``os.replace``.

A failure never leaves a partial output file; several files are written all or nothing.
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

from designer.io.reading import InputError


def format_number(value) -> str:
    """Shortest text that reads back to the same float (``inf`` for infinity)."""
    value = float(value)
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _staged_write(path: str | Path, write: Callable[[object], None]) -> Path:
    """Write to a temporary file beside ``path`` (mode 0666 less the umask); return its path."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{path}: the output folder {directory} does not exist")
    handle = tempfile.NamedTemporaryFile("w", dir=directory, prefix=f".{path.name}.", suffix=".tmp", delete=False)
    try:
        with handle:
            write(handle)
        os.chmod(handle.name, 0o666 & ~_umask())
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return Path(handle.name)


def write_files(writes: list[tuple[str | Path, Callable[[object], None]]]) -> None:
    """Write several files all or nothing: every file is staged first, then each is renamed.

    A failure while staging (a missing folder, a full disk) leaves no output file
    at all; nothing is renamed until every file is complete.
    """
    staged: list[tuple[Path, Path]] = []
    try:
        for path, write in writes:
            staged.append((_staged_write(path, write), Path(path)))
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        raise
    for temporary, path in staged:
        os.replace(temporary, path)


def matrix_csv_writer(matrix: Iterable[Iterable[float]]) -> Callable[[object], None]:
    """A writer of ``matrix`` as CSV with round-trip precision (Fractions as ``p/q``)."""
    rows = [
        [str(value) if isinstance(value, Fraction) else format_number(value) for value in row]
        for row in np.asarray(matrix, dtype=object)
    ]
    return lambda handle: csv.writer(handle, lineterminator="\n").writerows(rows)


def json_writer(payload: dict) -> Callable[[object], None]:
    """A writer of ``payload`` as indented JSON."""
    return lambda handle: json.dump(payload, handle, indent=2)


def write_matrix_csv(path: str | Path, matrix: Iterable[Iterable[float]]) -> None:
    """Write a numeric matrix as CSV, atomically, with round-trip precision.

    Fractions (exact channels) are written exactly as ``p/q``.
    """
    write_files([(path, matrix_csv_writer(matrix))])


def write_json(path: str | Path, payload: dict) -> None:
    """Write a JSON document atomically."""
    write_files([(path, json_writer(payload))])
