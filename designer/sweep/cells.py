"""The cells of a sweep plan, each keyed by a content hash of its inputs and the package version.

A cell is a plain dictionary of JSON-ready inputs (so it pickles to any Dask worker
and hashes canonically). Its key is ``sha256(canonical JSON of {inputs, version})``:
the same inputs under the same ``ldp-designer`` version are the same cell, so a
stored result is reused; a new version recomputes everything. A file named by a
plan (an E or channel CSV) enters the hash by the SHA-256 of its bytes.

Confidence sets of ``robust-design`` plans are drawn here, not on the workers: the
counts are part of the cell's inputs. Draw ``i`` of shape ``(a1, a2)`` takes its true
distribution from the Jeffreys prior Dirichlet(1/2) on the ``a1 a2`` cells with the
generator seeded by ``(seed, i, a1, a2)`` (the same truth for every n, as in Figure 7)
and its records by ``(seed, i, a1, a2, n, attempt)``; a data set with an unobserved
secret value is redrawn (Lemma 8 of robust-ldp-chi-square.md needs ``P̂_s > 0``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from designer.io.text import file_sha256

TASKS = ("design", "robust-design", "certify", "simulate")
FAMILIES = ("ldp", "high-low", "block", "metric-line", "file")
MECHANISMS = ("grr", "hr", "block-hr", "high-low-hr")
PROTOCOL_NAMES = ("polyopt", "srr", "grr", "ir", "grr-cr", "ue-cr")
#: The most symbols a generated family (or a robust shape |S| |U|) may have: its k x k E fits in 128 MiB.
MAX_K = 4096
#: Fields each family entry takes (beyond ``family``).
FAMILY_FIELDS = {"ldp": {"k"}, "high-low": {"k", "sensitive"}, "block": {"blocks"}, "metric-line": {"k"}, "file": {"path"}}


@dataclass(frozen=True)
class Cell:
    """One task of a sweep: its content hash and its inputs (JSON-ready)."""

    hash: str
    inputs: dict


@lru_cache(maxsize=1)
def package_version() -> str:
    """The installed ``ldp-designer`` version (part of every cell hash)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ldp-designer")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0+unknown"


def canonical_json(value) -> str:
    """Compact JSON with sorted keys (the same text for the same value)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def canonical_hash(value) -> str:
    """SHA-256 (hex) of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def cell_hash(inputs: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of the inputs and the package version."""
    return canonical_hash({"inputs": inputs, "version": package_version()})


def make_cell(inputs: dict) -> Cell:
    """A cell from its inputs."""
    return Cell(cell_hash(inputs), inputs)


def build_cells(task: str, name: str, epsilons: list[float], document: dict, base: Path) -> list[Cell]:
    """Every cell of a plan (see :mod:`designer.sweep.plan` for the fields), in plan order."""
    if task == "robust-design":
        grid = _robust_grid(document, epsilons)
    else:
        families = [_family(entry, base) for entry in _entries(document)]
        options = {"design": _design_options, "certify": _certify_options, "simulate": _simulate_options}[task]
        # a family's options do not depend on epsilon: checked (files hashed) once per family
        extras = [options(document.get(task, {}), family, base) for family in families]
        grid = ({**family, "epsilon": eps, **extra} for family, found in zip(families, extras) for eps in epsilons
                for extra in found)
    cells = [make_cell({"plan": name, "task": task, **inputs}) for inputs in grid]
    if len({cell.hash for cell in cells}) != len(cells):
        raise ValueError("the plan lists the same cell twice (duplicate epsilons, families or options)")
    return cells


def privacy_matrix(cell: dict):
    """The E matrix of a family cell at its epsilon (``designer.spec.PrivacyMatrix``)."""
    from designer.spec import PrivacyMatrix

    family, eps = cell["family"], float(cell["epsilon"])
    if family == "ldp":
        return PrivacyMatrix.classic(cell["k"], eps)
    if family == "high-low":
        return PrivacyMatrix.high_low(cell["k"], cell["sensitive"], eps)
    if family == "block":
        return PrivacyMatrix.block(cell["blocks"], eps)
    if family == "metric-line":
        index = np.arange(cell["k"], dtype=float)
        return PrivacyMatrix.metric(np.abs(index[:, None] - index[None, :]), eps)
    from designer.io import read_privacy_matrix

    unit = read_privacy_matrix(cell["path"], exact=False)
    return PrivacyMatrix(unit.epsilon * eps, unit.labels, f"{Path(cell['path']).name} x {eps:g}")


def jeffreys_counts(shape: tuple[int, int], records: int, seed: int, draw: int) -> np.ndarray:
    """Records of draw ``draw`` (see the module docstring): an ``|S| x |U|`` count table."""
    a1, a2 = shape
    truth = np.random.default_rng([seed, draw, a1, a2]).dirichlet(np.full(a1 * a2, 0.5))
    for attempt in itertools.count():
        counts = np.random.default_rng([seed, draw, a1, a2, records, attempt]).multinomial(records, truth)
        counts = counts.reshape(a1, a2)
        if np.all(counts.sum(axis=1) > 0):
            return counts


# ----------------------------------------------------------------------------- helpers
def _entries(document: dict) -> list[dict]:
    entries = document.get("families")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ValueError("missing field 'families' (a non-empty [[families]] list)")
    return entries


def _family(entry: dict, base: Path) -> dict:
    family = entry.get("family")
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    needed = FAMILY_FIELDS[family]
    extra = sorted(set(entry) - needed - {"family"})
    if extra:
        raise ValueError(f"family {family}: unknown field {extra[0]!r} (takes {', '.join(sorted(needed))})")
    missing = sorted(needed - set(entry))
    if missing:
        raise ValueError(f"family {family}: missing field {missing[0]!r}")
    inputs = {"family": family, **{key: entry[key] for key in sorted(needed)}}
    if family == "file":
        path = (base / entry["path"]) if not Path(entry["path"]).is_absolute() else Path(entry["path"])
        inputs["path"] = str(path)
        inputs["sha256"] = file_sha256(path)
        inputs["k"] = privacy_matrix({**inputs, "epsilon": 1.0}).k
    else:
        _check_k(family, entry)
        privacy_matrix({**inputs, "epsilon": 1.0})  # validates k, sensitive, blocks now
        if family == "block":
            inputs["k"] = int(sum(entry["blocks"]))
    return inputs


def _check_k(family: str, entry: dict) -> None:
    """Refuse a generated family larger than :data:`MAX_K` symbols before its E is built."""
    sizes = entry["blocks"] if family == "block" else [entry["k"]]
    if not isinstance(sizes, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
        raise ValueError(f"family {family}: {'blocks' if family == 'block' else 'k'} must be whole numbers")
    if sum(sizes) > MAX_K:
        raise ValueError(f"family {family}: k = {sum(sizes):,} symbols; at most {MAX_K:,} are allowed")


def _section(options, name: str, allowed: set[str]) -> dict:
    if not isinstance(options, dict):
        raise ValueError(f"[{name}] must be a table")
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"[{name}]: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")
    return options


def _design_options(options, family: dict, base: Path):
    from designer.defaults import VERTEX_UTILITIES

    utilities = _section(options, "design", {"utilities"}).get("utilities", ["mutual-information"])
    for utility in utilities:
        if utility not in (*VERTEX_UTILITIES, "expected-loss"):
            raise ValueError(f"unknown utility {utility!r}; choose from {', '.join(VERTEX_UTILITIES)}, expected-loss")
    return [{"utility": utility} for utility in utilities]


def _certify_options(options, family: dict, base: Path):
    channels = _section(options, "certify", {"channels"}).get("channels")
    if not channels:
        raise ValueError("missing field 'certify.channels' (channel CSV files to certify)")
    found = []
    for name in channels:
        path = base / name if not Path(name).is_absolute() else Path(name)
        found.append({"channel": str(path), "channel_sha256": file_sha256(path)})
    return found


def _simulate_options(options, family: dict, base: Path):
    options = _section(options, "simulate", {"mechanisms", "n", "distribution", "replicates"})
    for key in ("mechanisms", "n"):
        if key not in options:
            raise ValueError(f"missing field 'simulate.{key}'")
    n, replicates = options["n"], options.get("replicates", 1)
    if not isinstance(n, int) or n < 1 or not isinstance(replicates, int) or replicates < 1:
        raise ValueError("simulate.n and simulate.replicates must be integers >= 1")
    distribution = options.get("distribution", "uniform")
    from designer.simulation import named_distribution

    named_distribution(distribution, family["k"])
    cells = []
    for mechanism in options["mechanisms"]:
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; choose one of {', '.join(MECHANISMS)}")
        if mechanism == "block-hr" and family["family"] != "block":
            raise ValueError("mechanism block-hr needs a block family")
        if mechanism == "high-low-hr" and sorted(family.get("sensitive", [-1])) != list(range(len(family.get("sensitive", [])))):
            raise ValueError("mechanism high-low-hr needs a high-low family with sensitive = [0, ..., S-1]")
        cells += [{"protocol": mechanism, "n": n, "distribution": distribution, "replicate": r} for r in range(replicates)]
    return cells


def _robust_grid(document: dict, epsilons: list[float]):
    protocols = document.get("protocols")
    if not isinstance(protocols, list) or not protocols:
        raise ValueError("missing field 'protocols' (a list of robust protocols)")
    for protocol in protocols:
        if protocol not in PROTOCOL_NAMES:
            raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOL_NAMES)}")
    certify = document.get("certify", False)
    if not isinstance(certify, bool):
        raise ValueError("certify must be true or false")
    if "draws" not in document:
        raise ValueError("missing field 'draws'")
    draws = _section(document["draws"], "draws", {"shapes", "records", "alphas", "count", "seed"})
    for key in ("shapes", "records", "alphas", "count", "seed"):
        if key not in draws:
            raise ValueError(f"missing field 'draws.{key}'")
    shapes = [tuple(shape) for shape in draws["shapes"]]
    if not shapes or not all(len(s) == 2 and all(isinstance(a, int) and a >= 2 for a in s) for s in shapes):
        raise ValueError("draws.shapes must be a list of [|S|, |U|] pairs of integers >= 2")
    for a1, a2 in shapes:
        if a1 * a2 > MAX_K:
            raise ValueError(f"draws.shapes: [{a1}, {a2}] has {a1 * a2:,} cells; at most {MAX_K:,} are allowed")
    if not all(isinstance(n, int) and n >= 1 for n in draws["records"]) or not draws["records"]:
        raise ValueError("draws.records must be a list of integers >= 1")
    if not all(isinstance(a, float) and 0 < a < 1 for a in draws["alphas"]) or not draws["alphas"]:
        raise ValueError("draws.alphas must be a list of numbers in (0, 1)")
    if not isinstance(draws["count"], int) or draws["count"] < 1 or not isinstance(draws["seed"], int):
        raise ValueError("draws.count must be an integer >= 1 and draws.seed an integer")
    for shape in shapes:
        for records in draws["records"]:
            for draw in range(draws["count"]):
                counts = jeffreys_counts(shape, records, draws["seed"], draw).tolist()
                for alpha in draws["alphas"]:
                    for eps in epsilons:
                        for protocol in protocols:
                            yield {"shape": list(shape), "records": records, "alpha": alpha, "draw": draw,
                                   "seed": draws["seed"], "counts": counts, "epsilon": eps,
                                   "protocol": protocol, "certify": certify}
