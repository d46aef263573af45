"""Class-structured E files (JSON, schema ``class-structure.schema.json`` next to this module).

A 43,750-symbol E as a dense CSV would be 15 GB; as classes it is a few lines::

    {"name": "35 cities", "classes": [{"name": "city 1", "size": 1250}, ...],
     "levels": [[1, "inf", ...], ...], "prior": [0.1, ...]}

``levels[a][b]`` is ``E[x, x']`` for x in class a, x' in class b (x != x'): a number,
``"inf"``, or text read exactly (``"log(3)"``, ``"1/2"``, for ``design --exact``); classes
are consecutive symbols in the order given; ``prior`` (optional) gives each class's
total probability, spread uniformly over its members.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from designer.design.symmetry.classes import ClassStructure
from designer.exact import ExactEpsilon

SCHEMA_PATH = Path(__file__).with_name("class-structure.schema.json")
#: Members of one class entry (the schema's ``additionalProperties: false``).
CLASS_MEMBERS = frozenset({"name", "size"})
#: Most digits of an integer in a class file (10^30 symbols is beyond any design).
MAX_INTEGER_DIGITS = 30


def read_class_structure(path: str | Path) -> ClassStructure:
    """Read and validate a class-structured E file; errors name the file and the field."""
    def small_integer(number: str) -> int:  # int() refuses 4300+ digits with a message naming no file
        if len(number.lstrip("-")) > MAX_INTEGER_DIGITS:
            raise ValueError(f"{path}: a {len(number.lstrip('-'))}-digit number ({number[:20]}...): class sizes "
                             f"and levels have at most {MAX_INTEGER_DIGITS} digits")
        return int(number)

    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"), parse_int=small_integer)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply (a class file is an object of lists and numbers)") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a JSON object with 'classes' and 'levels'")
    unknown = sorted(set(document) - {"name", "classes", "levels", "prior"})
    if unknown:
        raise ValueError(f"{path}: unknown field {unknown[0]!r} (allowed: name, classes, levels, prior)")
    classes = document.get("classes")
    if not isinstance(classes, list) or not classes:
        raise ValueError(f"{path}: 'classes' must be a non-empty list of {{\"size\": n}} objects")
    sizes = []
    for index, entry in enumerate(classes):
        size = entry.get("size") if isinstance(entry, dict) else None
        unknown = sorted(set(entry) - CLASS_MEMBERS) if isinstance(entry, dict) else []
        if unknown:
            raise ValueError(f"{path}: classes[{index}]: unknown field {unknown[0]!r} (allowed: name, size)")
        if isinstance(entry, dict) and not isinstance(entry.get("name", ""), str):
            raise ValueError(f"{path}: classes[{index}].name must be text, got {entry['name']!r}")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"{path}: classes[{index}].size must be a positive integer, got {size!r}")
        sizes.append(size)
    r = len(sizes)
    levels = document.get("levels")
    if not isinstance(levels, list) or len(levels) != r or any(not isinstance(row, list) or len(row) != r for row in levels):
        raise ValueError(f"{path}: 'levels' must be a {r} x {r} list of lists (one row per class)")
    values = np.empty((r, r))
    exact = np.empty((r, r), dtype=object)
    for a, row in enumerate(levels):
        for b, level in enumerate(row):
            number = isinstance(level, (int, float)) and not isinstance(level, bool) and level >= 0 and np.isfinite(level)
            try:
                if not (number or isinstance(level, str)):
                    raise ValueError
                exact[a, b] = ExactEpsilon.parse(level)
            except ValueError:
                raise ValueError(
                    f"{path}: levels[{a}][{b}] = {level!r} must be a number >= 0, \"inf\" or text such as \"log(3)\""
                ) from None
            values[a, b] = float(exact[a, b])
    k = sum(sizes)
    prior = document.get("prior")
    if prior is None:
        per_member = np.full(r, 1.0 / k)
    else:
        if not isinstance(prior, list) or len(prior) != r or not all(
            isinstance(p, (int, float)) and not isinstance(p, bool) and p >= 0 for p in prior
        ):
            raise ValueError(f"{path}: 'prior' must list {r} class probabilities >= 0")
        if abs(sum(prior) - 1) > 1e-9:
            raise ValueError(f"{path}: 'prior' must sum to 1 (sums to {sum(prior)!r})")
        per_member = np.asarray(prior, dtype=float) / np.asarray(sizes)
    return ClassStructure(sizes, values, per_member, name=str(document.get("name") or Path(path).name), exact_levels=exact)
