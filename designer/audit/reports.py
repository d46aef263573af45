"""Report arrays: what a source's reports become, and how arrays of several batches and inputs are joined.

Reports may be integers, floats, strings, or vectors/tuples (unary-encoding bit
vectors, OLH ``(value, seed)`` pairs, Laplace histograms). :func:`as_report_array`
turns them into a 1-D array (scalar reports) or a 2-D numeric array (one row
per vector report). Two reports are one output only when they are the same
value *of the same kind*: an integer is not a float (``7`` is not ``7.0``),
``-0.0`` is not ``0.0``; reports of several kinds (within a batch, or across
batches and inputs: :func:`unify_reports`) are text, each written as Python
writes it (``7``, ``7.0``, ``True``, ``(1, 0)``), so nothing is merged.
Missing reports, NaN and vectors of different lengths are refused, naming the
input and the report.
"""

from __future__ import annotations

import math

import numpy as np


def as_report_array(raw, n: int, where: str) -> np.ndarray:
    """Check that ``raw`` holds ``n`` well-formed reports and return them as an array.

    Numeric scalars of one kind give a 1-D numeric array; equal-length numeric
    vectors of one kind (per coordinate) a 2-D ``(n, d)`` array; scalars that
    include text or several kinds of numbers (booleans, integers, floats) a 1-D
    object array of text (``0, 1, "debug"`` is the alphabet ``"0", "1", "debug"``;
    ``7, 7.0`` is ``"7", "7.0"``). A missing report (``None``), a NaN, vectors of
    different lengths, or vectors mixed with scalars are refused naming ``where``
    and the report.
    """
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise ValueError(f"{where} returned {type(raw).__name__}, expected a sequence of {n} reports")
    if len(raw) != n:
        raise ValueError(f"{where} returned {len(raw)} reports for n = {n}")
    if isinstance(raw, list) and raw and all(isinstance(report, np.ndarray) and report.dtype.kind in "iuf"
                                             and report.dtype == raw[0].dtype and report.shape == raw[0].shape
                                             for report in raw):
        raw = np.stack(raw)  # vectors from a numpy client: one copy, no per-value check
    if isinstance(raw, np.ndarray) and raw.dtype != object:
        array = raw.reshape(n, -1) if raw.ndim > 1 else raw
        if array.dtype.kind in "US":
            return as_text(array)
        if array.dtype.kind == "b":
            array = array.astype(np.int8)
        if array.dtype.kind not in "iuf":
            raise ValueError(f"{where} returned reports of type {array.dtype}, expected numbers, text or vectors")
        _refuse_nan(array, where)
        return compact_integers(array)
    items = [_plain(report) for report in raw]
    vectors = [index for index, report in enumerate(items) if isinstance(report, tuple)]
    for index, report in enumerate(items):
        if report is None:
            raise ValueError(f"{where}: report {index} is missing (None)")
        if isinstance(report, float) and math.isnan(report):
            raise ValueError(f"{where}: report {index} is NaN")
    if vectors:
        if len(vectors) < n:
            scalar = next(index for index, report in enumerate(items) if not isinstance(report, tuple))
            raise ValueError(f"{where}: report {scalar} is a scalar but report {vectors[0]} is a vector")
        return _vectors(items, where)
    kinds = {type(report) for report in items}
    if str in kinds or len(kinds & {bool, int, float}) > 1:
        return _text_of(items)
    array = np.asarray(items)
    if array.dtype == object:  # integers beyond 64 bits, or other hashable values: kept as they are
        return np.array(items, dtype=object)
    if array.dtype.kind == "b":
        array = array.astype(np.int8)
    return compact_integers(array)


def compact_integers(array: np.ndarray) -> np.ndarray:
    """Integer reports in the smallest signed type that holds them (bit vectors: one byte a coordinate).

    Float vectors whose values are all small integers (|v| <= 2048) become float16: exact, and still
    floats (an integer vector ``(1, 0)`` stays another output than ``(1.0, 0.0)``, ``-0.0`` another than
    ``0.0``); float scalars are kept. 16 million 16-bit unary-encoding reports of floats take 512 MB
    instead of 2 GB.
    """
    if array.dtype.kind == "f" and array.ndim == 2 and array.size:
        if array.dtype.itemsize > 2 and np.all(np.abs(array) <= 2048) and np.all(array == np.round(array)):
            return array.astype(np.float16)
        return array
    if array.dtype.kind not in "iu" or array.size == 0 or array.dtype.itemsize == 1:
        return array
    low, high = int(array.min()), int(array.max())
    for kind in (np.int8, np.int16, np.int32):
        if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max:
            return array.astype(kind) if np.dtype(kind).itemsize < array.dtype.itemsize else array
    return array


def _plain(report):
    """A report as a Python scalar (booleans kept), text, or a tuple of plain values."""
    if isinstance(report, np.ndarray):
        return tuple(_plain(value) for value in report.ravel().tolist())
    if isinstance(report, np.generic):
        return report.item()
    if isinstance(report, (list, tuple)):
        return tuple(_plain(value) for value in report)
    return report


def _vectors(items: list[tuple], where: str) -> np.ndarray:
    """Equal-length vectors of numbers as a 2-D array (the first report of another length is named); vectors
    whose coordinates are not of the same kinds in every report (``(1, 0)`` and ``(1.0, 0)``) as text."""
    length = len(items[0])
    kinds = set()
    for index, report in enumerate(items):
        if len(report) != length:
            raise ValueError(f"{where}: report {index} has {len(report)} coordinates, report 0 has {length}")
        for value in report:
            if value is None or isinstance(value, (str, tuple)) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: report {index} has a coordinate {value!r} that is not a number")
            if isinstance(value, float) and math.isnan(value):
                raise ValueError(f"{where}: report {index} has a NaN coordinate")
        kinds.add(tuple(map(type, report)))
    if len(kinds) > 1:
        return _text_of(items)
    try:
        integers = all(kind in (int, bool) for kind in next(iter(kinds)))
        return compact_integers(np.asarray(items, dtype=np.int64 if integers else float))
    except OverflowError:  # integers beyond 64 bits (a long hash): exact, as Python integers
        return np.array(items, dtype=object).reshape(len(items), length)


def _refuse_nan(array: np.ndarray, where: str) -> None:
    if array.dtype.kind == "f":
        bad = np.flatnonzero(np.isnan(array).reshape(len(array), -1).any(axis=1))
        if bad.size:
            raise ValueError(f"{where}: report {int(bad[0])} is NaN")


def _text_of(items: list) -> np.ndarray:
    text = np.empty(len(items), dtype=object)
    text[:] = [str(item) for item in items]
    return text


def as_text(array: np.ndarray, separator: str | None = None) -> np.ndarray:
    """Reports as a 1-D object array of ``str``: scalars as Python writes them (``7``, ``7.0``); vectors as a
    tuple (``(1, 0)``), or their values joined by ``separator`` (the line a text source read them from)."""
    if array.ndim == 1:
        return _text_of(array.tolist())
    if separator is None:
        return _text_of([tuple(row) for row in array.tolist()])
    spell = str if array.dtype.kind in "iuO" else repr
    return _text_of([separator.join(map(spell, row)) for row in array.tolist()])


def report_kind(values: np.ndarray) -> str:
    """``text``, ``float`` or ``integer`` (integers beyond 64 bits included)."""
    if is_text(values):
        return "text"
    return "float" if values.dtype.kind == "f" else "integer"


def unify_reports(reports: dict[int, np.ndarray], label: str = "input",
                  separator: str | None = None) -> dict[int, np.ndarray]:
    """Reports of all inputs in one representation: text everywhere as soon as one input has text, or
    integers and floats meet (:func:`as_text`, vectors joined by ``separator`` when given).

    Vector reports must have the same length for every input (the first input
    of another length is named).
    """
    arrays = {x: values if isinstance(values, np.ndarray) else as_report_array(values, len(values), f"{label} {x}")
              for x, values in reports.items()}
    shapes = {x: values.shape[1:] for x, values in arrays.items() if len(values)}
    first = next(iter(shapes.values()), ())
    for x, shape in shapes.items():
        if shape != first and "text" not in {report_kind(arrays[x]), report_kind(arrays[next(iter(shapes))])}:
            def describe(s):
                return f"vectors of {s[0]} coordinates" if s else "scalars"

            raise ValueError(f"reports of {label} {x} are {describe(shape)}, those of {label} "
                             f"{next(iter(shapes))} are {describe(first)}")
    kinds = {report_kind(values) for values in arrays.values() if len(values)}
    if len(kinds) > 1:
        return {x: values if is_text(values) else as_text(values, separator) for x, values in arrays.items()}
    return arrays


def is_text(values: np.ndarray) -> bool:
    return values.dtype == object and values.ndim == 1 and len(values) > 0 and isinstance(values[0], str)


def concatenate_reports(parts: list[np.ndarray], where: str, separator: str | None = None) -> np.ndarray:
    """Join report arrays of successive batches (vectors must keep their length; text, or integers meeting
    floats, make all text)."""
    if not parts:
        return np.empty(0)
    try:
        unified = unify_reports(dict(enumerate(parts)), "batch", separator)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return np.concatenate(list(unified.values()))
