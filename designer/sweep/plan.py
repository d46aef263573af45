"""Sweep plans: a TOML file naming the grid and what to compute in each cell.

Every field is checked and every cell built (:mod:`designer.sweep.cells`) when the
plan is read, so a bad plan fails with one line before any work starts. The plan's
size is counted from its numbers before any cell is built (:func:`plan_size`): more
than :data:`MAX_CELLS` cells are refused with the size and its product.

Format (all tasks)::

    name = "tradeoff"                  # optional, stored with every row
    task = "design"                    # design | robust-design | certify | simulate
    epsilons = [0.5, 1.0, 2.0]         # or {start = 0.1, stop = 8, num = 14, spacing = "geometric"}

``design``, ``certify`` and ``simulate`` sweep E families::

    [[families]]
    family = "ldp"          # k                      -> PrivacyMatrix.classic
    k = 6
    [[families]]
    family = "high-low"     # k, sensitive = [0, 1]  -> PrivacyMatrix.high_low
    [[families]]
    family = "block"        # blocks = [3, 3]        -> PrivacyMatrix.block
    [[families]]
    family = "metric-line"  # k: E[x, x'] = eps |x - x'| (path-graph metric)
    [[families]]
    family = "file"         # path = "E.csv": E scaled by eps (entries times eps)

    [design]   utilities = ["mutual-information"]   # VERTEX_UTILITIES, or "expected-loss"
                                                      # (loss |x - y|, outputs = inputs)
    [certify]  channels = ["Q.csv"]                  # certify each channel under each E
    [simulate] mechanisms = ["grr", "hr"]            # grr, hr, block-hr (block family),
               n = 100000                            # high-low-hr (sensitive = 0..S-1)
               distribution = "zipf:1.1"             # designer.simulation.named_distribution
               replicates = 3                        # seeded per cell from the cell hash

``robust-design`` sweeps confidence sets drawn from the Jeffreys prior
(robust-ldp-chi-square.md, Section VIII)::

    protocols = ["polyopt", "ir", "grr-cr", "ue-cr", "srr", "grr"]
    certify = false                    # also run certify_robust on every design
    [draws]
    shapes = [[3, 3]]                  # (|S|, |U|)
    records = [1000]                   # n, records per data set
    alphas = [0.05]
    count = 200                        # distributions per (shape, records)
    seed = 2022
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from designer.errors import first_line
from designer.sweep.cells import FAMILIES, MECHANISMS, PROTOCOL_NAMES, TASKS, Cell, build_cells

#: The most cells a plan may have (each is a task and a stored row; split larger grids into plans).
MAX_CELLS = 1_000_000
#: Keys allowed at the top level of a plan.
TOP_LEVEL = {"name", "task", "epsilons", "families", "design", "certify", "simulate", "protocols", "draws"}


class PlanError(ValueError):
    """A plan that cannot be run (one line, naming the file and the field)."""


@dataclass(frozen=True)
class Plan:
    """A validated plan: its name, task and every cell (in plan order)."""

    name: str
    task: str
    cells: list[Cell] = field(repr=False)
    source: str = ""


def load_plan(path: str | Path) -> Plan:
    """Read and validate a TOML plan file; :class:`PlanError` (one line) if it cannot run."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PlanError(f"{path}: cannot read the plan ({getattr(error, 'strerror', None) or error})") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PlanError(f"{path}: not valid TOML ({error})") from None
    try:
        return parse_plan(document, base=path.parent, source=str(path))
    except PlanError as error:
        raise PlanError(f"{path}: {error}") from None


def parse_plan(document: dict, base: str | Path = ".", source: str = "") -> Plan:
    """Validate a parsed plan (see the module docstring) and build its cells.

    Relative file paths in the plan are resolved against ``base`` (the plan's folder).
    """
    unknown = sorted(set(document) - TOP_LEVEL)
    if unknown:
        raise PlanError(f"unknown field {unknown[0]!r} (allowed: {', '.join(sorted(TOP_LEVEL))})")
    task = _required(document, "task", str)
    if task not in TASKS:
        raise PlanError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    name = document.get("name", Path(source).stem if source else "sweep")
    if not isinstance(name, str):
        raise PlanError("name must be text")
    grid = _required(document, "epsilons", (list, dict))
    check_size(task, epsilon_count(grid), document)
    epsilons = parse_epsilons(grid)
    try:
        cells = build_cells(task, name, epsilons, document, Path(base))
    except (ValueError, TypeError, KeyError) as error:
        message = f"missing field {error.args[0]!r}" if isinstance(error, KeyError) else str(error)
        raise PlanError(first_line(message, error.__class__.__name__)) from None
    if not cells:
        raise PlanError("the plan has no cells")
    return Plan(name=name, task=task, cells=cells, source=source)


def epsilon_count(value) -> int:
    """How many epsilons a grid has, read without building it (``num`` may be an integral float)."""
    if not isinstance(value, dict):
        return len(value)
    num = value.get("num")
    if isinstance(num, float) and num.is_integer():
        return int(num)
    return num if isinstance(num, int) and not isinstance(num, bool) else 1


def plan_size(task: str, epsilons: int, document: dict) -> tuple[int, str]:
    """The number of cells a plan asks for and its product written out, read before any cell is built.

    Malformed fields count as 1 here; :func:`parse_plan` names them afterwards.
    """
    def many(value) -> int:
        return len(value) if isinstance(value, list) else 1

    def whole(value) -> int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1

    section = document.get(task) if isinstance(document.get(task), dict) else {}
    draws = document.get("draws") if isinstance(document.get("draws"), dict) else {}
    factors = {
        "design": [("families", many(document.get("families"))), ("utilities", many(section.get("utilities", [0])))],
        "certify": [("families", many(document.get("families"))), ("channels", many(section.get("channels")))],
        "simulate": [("families", many(document.get("families"))), ("mechanisms", many(section.get("mechanisms"))),
                     ("replicates", whole(section.get("replicates", 1)))],
        "robust-design": [("shapes", many(draws.get("shapes"))), ("records", many(draws.get("records"))),
                          ("alphas", many(draws.get("alphas"))), ("draws.count", whole(draws.get("count"))),
                          ("protocols", many(document.get("protocols")))],
    }[task]
    size = epsilons
    for _, value in factors:
        size *= value
    return size, " x ".join([f"{epsilons} epsilons", *(f"{value} {name}" for name, value in factors)])


def check_size(task: str, epsilons: int, document: dict) -> None:
    """Refuse a plan of more than :data:`MAX_CELLS` cells (one line with its size), before building it."""
    size, product = plan_size(task, epsilons, document)
    if size > MAX_CELLS:
        raise PlanError(f"the plan has {size:,} cells ({product}); at most {MAX_CELLS:,} are allowed: "
                        "split it into several plans")


def parse_epsilons(value) -> list[float]:
    """The epsilon grid: a list of positive numbers, or ``{start, stop, num, spacing}``."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"start", "stop", "num", "spacing"})
        if unknown:
            raise PlanError(f"epsilons: unknown field {unknown[0]!r} (start, stop, num, spacing)")
        start, stop = _required(value, "start", (int, float), "epsilons."), _required(value, "stop", (int, float), "epsilons.")
        num = _required(value, "num", (int, float), "epsilons.")
        if not float(num).is_integer():
            raise PlanError(f"epsilons.num must be a whole number, got {num!r}")
        num = int(num)
        spacing = value.get("spacing", "linear")
        if spacing not in ("linear", "geometric"):
            raise PlanError(f"epsilons.spacing must be 'linear' or 'geometric', got {spacing!r}")
        if num < 1:
            raise PlanError(f"epsilons.num must be >= 1, got {num}")
        _check_positive([start, stop])
        grid = np.geomspace(start, stop, num) if spacing == "geometric" else np.linspace(start, stop, num)
        values = [float(np.round(v, 6)) for v in grid]
    else:
        values = value
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise PlanError("epsilons must be a non-empty list of numbers")
    _check_positive(values)
    return [float(v) for v in values]


def _check_positive(values) -> None:
    for v in values:
        if not (v > 0 and np.isfinite(v)):
            raise PlanError(f"every epsilon must be > 0 and finite, got {v!r}")


def _required(document: dict, key: str, kind, prefix: str = ""):
    if key not in document:
        raise PlanError(f"missing field {prefix}{key!r}")
    value = document[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise PlanError(f"{prefix}{key} has the wrong type ({type(value).__name__})")
    return value


__all__ = ["FAMILIES", "MAX_CELLS", "MECHANISMS", "PROTOCOL_NAMES", "Plan", "PlanError", "check_size", "epsilon_count",
           "load_plan", "parse_epsilons", "parse_plan", "plan_size"]
