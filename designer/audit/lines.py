"""Reports written as lines of text (``--command``, ``--reports``): read as their bytes, or by a declared parser.

A collector receives bytes. By default (:class:`ExactReader`) two reports are
the same output only when their bytes are the same: ``7``, ``07``, ``+7``,
``7 `` and ``7.0`` are five outputs, and a client that writes one of them for
one input only has an infinite privacy loss. To keep the structure the attacks
need (numbers, bit vectors) without merging anything, a line is read as a
number only when it is that number's one *canonical spelling*:

* an integer: ``0`` or ``-?[1-9][0-9]*`` (no sign ``+``, no leading zero, no ``-0``,
  no space, no ``_``, ASCII digits only);
* a float: ``repr(float(line)) == line`` (Python's shortest round-trip form:
  ``7.0``, ``0.1``, ``1e-05``, ``-0.0``, ``inf``; never ``nan``);
* a vector: canonical numbers of one kind joined by the source's separator
  (one of :data:`SEPARATORS`, fixed by the first batch).

Canonical spellings are one-to-one with their values, so reading them as
numbers merges nothing; a batch with any other line is kept as text (the exact
lines), and when text meets numbers the numbers are written back in their
canonical spelling (:meth:`ExactReader.as_text`), which is their line. Integers
and floats are different outputs (``7`` is not ``7.0``).

A declared parser (``--parser``) reads every line into a value and the audit
audits the values: :class:`NumbersParser` (``--parser numbers``: surrounding
whitespace removed, numbers compared by value as floats, vectors split on commas
and whitespace) counts the normalisations it applied; :class:`UserParser`
(``--parser module:function``) calls ``function(line) -> value``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from designer.audit.reports import as_report_array, as_text
from designer.audit.usercode import call_user, load_callable

#: Separators of vector reports, tried in this order (the first batch decides the source's).
SEPARATORS = (", ", ",", " ", "\t", ";")
#: Lines of the first batch that decide between scalars and vectors.
DECIDING_LINES = 1024
#: Examples kept of each normalisation or respelling.
EXAMPLES = 3
_INTEGER = re.compile(r"(?:0|-?[1-9][0-9]*)\Z")


def split_lines(data: bytes) -> list[str]:
    """The lines of ``data``: split on ``\\n`` only (a ``\\r`` is part of its line), the last line's ``\\n``
    optional; bytes that are not UTF-8 kept one-to-one (``surrogateescape``)."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def canonical_number(token: str) -> int | float | None:
    """The number ``token`` is the canonical spelling of, or None (see the module docstring)."""
    if _INTEGER.match(token):
        return int(token)
    try:
        value = float(token)
    except ValueError:
        return None
    return value if value == value and repr(value) == token else None


class Examples:
    """Counts of lines by what happened to them, with the first few examples (line, input; input -1, written
    None, for a line of the state probe's sequence of inputs)."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.examples: dict[str, list[tuple[str, int]]] = {}

    def add(self, kind: str, line: str, x: int) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES and all(line != seen for seen, _ in shown):
            shown.append((line, x))

    def to_dict(self) -> dict:
        return {kind: {"reports": count, "examples": [{"line": line, "input": x if x >= 0 else None}
                                                      for line, x in self.examples[kind]]}
                for kind, count in self.counts.items()}


class ExactReader:
    """Lines read as their bytes; canonical spellings as numbers (see the module docstring).

    The first batch decides between scalars and vectors (the format most of its
    first :data:`DECIDING_LINES` lines have); :attr:`separator` is then the
    vectors' separator (None: scalars). :attr:`respelled` records lines that a
    lenient parser would read as a number but that are not its canonical
    spelling (``07``, ``+7``, ``7 ``): they are outputs of their own.
    """

    def __init__(self):
        self.decided = False
        self.separator: str | None = None
        self.vector_kind: type | None = None
        self.dimension = 0
        self.respelled = Examples()

    def read(self, lines: list[str], x: int, where: str) -> np.ndarray:
        """The reports of ``lines`` (all of input ``x``): numbers when every line is canonical, else text."""
        if not self.decided:
            self._decide(lines)
        if self.separator is not None:
            array = self._vectors(lines)
        else:
            array = self._scalars(lines)
        if array is None:
            self._note_respelled(lines, x)
            return _interned(lines)
        return as_report_array(array, len(lines), where)

    def as_text(self, array: np.ndarray) -> np.ndarray:
        """Numeric reports written back as their lines (canonical spellings joined by the separator)."""
        return as_text(array, self.separator)

    def describe(self) -> dict:
        return {"reading": "bytes", "respelled": self.respelled.to_dict()}

    def _decide(self, lines: list[str]) -> None:
        sample = lines[:DECIDING_LINES]
        scalars = sum(canonical_number(line) is not None for line in sample)
        best = (scalars, None, None, 0)
        for separator in SEPARATORS:
            formats: dict[tuple, int] = {}
            for line in sample:
                if separator in line:
                    shape = _vector_shape(line.split(separator))
                    if shape is not None:
                        formats[shape] = formats.get(shape, 0) + 1
            for (kind, dimension), count in formats.items():
                if count > best[0]:
                    best = (count, separator, kind, dimension)
        _, self.separator, self.vector_kind, self.dimension = best
        self.decided = True

    def _scalars(self, lines: list[str]) -> list | None:
        """Every line a canonical integer, or every line a canonical float; else None."""
        try:
            integers = list(map(int, lines))
        except ValueError:
            integers = None
        if integers is not None and list(map(str, integers)) == lines:
            return integers
        try:
            floats = list(map(float, lines))
        except ValueError:
            return None
        if list(map(repr, floats)) == lines and all(value == value for value in floats):
            return floats
        return None

    def _vectors(self, lines: list[str]) -> np.ndarray | None:
        """Every line a canonical vector of the source's kind and dimension; else None."""
        rows = [line.split(self.separator) for line in lines]
        if any(len(row) != self.dimension for row in rows):
            return None
        try:
            values = [list(map(self.vector_kind, row)) for row in rows]
        except ValueError:
            return None
        spell = str if self.vector_kind is int else repr
        if [list(map(spell, row)) for row in values] != rows:
            return None
        if self.vector_kind is float and any(value != value for row in values for value in row):
            return None
        return np.array(values, dtype=np.int64 if self.vector_kind is int else float)

    def _note_respelled(self, lines: list[str], x: int) -> None:
        separator = self.separator
        for line in lines:
            tokens = line.split(separator) if separator is not None else [line]
            if all(canonical_number(token) is not None for token in tokens):
                continue
            if all(_lenient_number(token) is not None for token in tokens):
                self.respelled.add("not the canonical spelling of a number", line, x)


def _vector_shape(tokens: list[str]) -> tuple[type, int] | None:
    """(int or float, length) when ``tokens`` are at least 2 canonical numbers of one kind."""
    if len(tokens) < 2:
        return None
    values = [canonical_number(token) for token in tokens]
    if any(value is None for value in values):
        return None
    kinds = {type(value) for value in values}
    return (kinds.pop(), len(values)) if len(kinds) == 1 else None


def _lenient_number(token: str):
    for parse in (int, float):
        try:
            return parse(token)
        except ValueError:
            pass
    return None


def _interned(lines: list[str]) -> np.ndarray:
    """The lines as a text array, equal lines sharing one object (a finite alphabet takes a pointer a report)."""
    shared: dict[str, str] = {}
    text = np.empty(len(lines), dtype=object)
    text[:] = [shared.setdefault(line, line) for line in lines]
    return text


class NumbersParser:
    """``--parser numbers``: every line read as numbers where it can be, the normalisations counted.

    Surrounding whitespace is removed; a line of one number is that number and a
    line of several (separated by commas and/or whitespace) a vector; numbers are
    compared by value, as floats (``7``, ``07``, ``+7``, ``7.0``, ``7e0`` are one
    report); any other line is its stripped text.
    """

    separator = None

    def __init__(self):
        self.applied = Examples()
        self._separator: str | None = None

    def read(self, lines: list[str], x: int, where: str) -> np.ndarray:
        return as_report_array([self._parse(line, x) for line in lines], len(lines), where)

    def as_text(self, array: np.ndarray) -> np.ndarray:
        return as_text(array)

    def describe(self) -> dict:
        return {"reading": "parser numbers", "normalisations": self.applied.to_dict()}

    def _parse(self, line: str, x: int):
        stripped = line.strip()
        if stripped != line:
            self.applied.add("surrounding whitespace removed", line, x)
        tokens = stripped.replace(",", " ").split()
        values = [_lenient_number(token) for token in tokens]
        if not tokens or any(value is None for value in values):
            return stripped
        if any(canonical_number(token) is None for token in tokens):
            self.applied.add("numbers read by value whatever their spelling (+7, 07, 7.50)", line, x)
        if any(isinstance(value, float) and value.is_integer() for value in values):
            self.applied.add("floats equal to integers read as those integers (7.0 is 7)", line, x)
        if len(tokens) > 1:
            separators = re.sub(r"[^,\s]+", "|", stripped)
            if self._separator is None:
                self._separator = separators
            elif separators != self._separator:
                self.applied.add("vector separators read alike (commas and whitespace)", line, x)
            return tuple(float(value) for value in values)
        return float(values[0])


class UserParser:
    """``--parser module:function``: every line is ``function(line)``; the audit audits those values."""

    separator = None

    def __init__(self, spec: str, function: Callable):
        self.spec = spec
        self.function = function

    def read(self, lines: list[str], x: int, where: str) -> np.ndarray:
        return as_report_array([call_user(self.function, f"the parser {self.spec} ({where})", line)
                                for line in lines], len(lines), where)

    def as_text(self, array: np.ndarray) -> np.ndarray:
        return as_text(array)

    def describe(self) -> dict:
        return {"reading": f"parser {self.spec}", "normalisations": None}


def make_reader(parser: str | None):
    """The reader of ``--parser`` (None: the exact reader)."""
    if parser is None:
        return ExactReader()
    if parser == "numbers":
        return NumbersParser()
    return UserParser(parser, load_callable(parser, "parser"))
