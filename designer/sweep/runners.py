"""One sweep cell: a thin call into the library, returned as one tidy row.

* ``design`` — :func:`designer.design.vertex.design_by_vertices` (vertex LP) or, for
  ``expected-loss``, :func:`designer.design.design_expected_loss` with loss
  ``|x - y|`` (Bordenabe et al. 2014); objective = the optimal utility (nats) or loss;
  ``certified`` = the design's :func:`designer.certify.certify` verdict.
* ``robust-design`` — :func:`designer.robust.polyopt.polyopt` (float vertices, as in
  the notebooks) or a protocol of :data:`designer.robust.protocols.PROTOCOLS`;
  objective = ``I_P̂(X;Y) / H_P̂(X)`` (the vertical axis of Figures 2-8 of
  robust-ldp-chi-square.md); with ``certify = true`` also
  :func:`designer.robust.certify.certify_robust`.
* ``certify`` — :func:`designer.certify.certify` of a channel file under E(eps);
  objective = the margin ``min(E - E_Q)``.
* ``simulate`` — :func:`designer.simulation.simulate`, seeded from the cell hash;
  objective = the total-variation error of the projected estimate.

A failing cell is a row with ``error`` set (exception class and first line of its
message), never an exception.
"""

from __future__ import annotations

import time

import numpy as np

from designer.errors import first_line
from designer.sweep.cells import canonical_hash, canonical_json

#: Columns of a result row, with their Arrow types (see :mod:`designer.sweep.store`).
COLUMNS = {
    "hash": "string", "plan": "string", "task": "string", "family": "string", "protocol": "string",
    "utility": "string", "k": "int64", "sensitive": "string", "blocks": "string", "E_hash": "string",
    "epsilon": "float64", "shape": "string", "records": "int64",
    "alpha": "float64", "draw": "int64", "replicate": "int64", "objective": "float64", "certified": "bool",
    "verdict": "string", "seconds": "float64", "vertices": "int64", "outputs": "int64", "error": "string",
    "version": "string", "params": "string",
}
#: Inputs that define a family's E at unit level (their canonical JSON hashed is ``E_hash``).
E_KEYS = ("family", "k", "sensitive", "blocks", "sha256")
#: Inputs left out of ``params`` (columns already, or the bulky drawn counts of robust cells).
NOT_PARAMS = {*COLUMNS, "counts"}


def run_cell(cell: dict, cell_hash: str, version: str) -> dict:
    """Run one cell and return its row (see :data:`COLUMNS`); errors are recorded, not raised."""
    row = base_row(cell, cell_hash, version)
    start = time.perf_counter()
    try:
        row.update(RUNNERS[cell["task"]](cell, cell_hash))
    except Exception as error:  # noqa: BLE001 - any failure of a cell is its result
        row["error"] = error_text(error)
    row["seconds"] = time.perf_counter() - start
    return row


def base_row(cell: dict, cell_hash: str, version: str) -> dict:
    """The row of a cell before it runs: its inputs in the tidy columns, results empty."""
    row = dict.fromkeys(COLUMNS)
    row.update(hash=cell_hash, version=version, plan=cell["plan"], task=cell["task"], epsilon=float(cell["epsilon"]))
    for key in ("family", "protocol", "utility", "k", "records", "alpha", "draw", "replicate"):
        if key in cell:
            row[key] = cell[key]
    if "shape" in cell:
        row["shape"] = "x".join(map(str, cell["shape"]))
        row["k"] = int(np.prod(cell["shape"]))
    for key in ("sensitive", "blocks"):
        if key in cell:
            row[key] = ",".join(map(str, cell[key]))
    if "family" in cell:
        row["E_hash"] = canonical_hash({key: cell[key] for key in E_KEYS if key in cell})
    row["params"] = canonical_json({key: value for key, value in cell.items() if key not in NOT_PARAMS})
    return row



def error_text(error: BaseException) -> str:
    """``Class: first line of the message``."""
    message = first_line(str(error), "")
    return f"{error.__class__.__name__}: {message}" if message else error.__class__.__name__


def seed_of(cell_hash: str) -> int:
    """The simulation seed of a cell: its hash's first 64 bits."""
    return int(cell_hash[:16], 16)


def _design(cell: dict, cell_hash: str) -> dict:
    from designer.design.expected_loss import design_expected_loss
    from designer.design.vertex import design_by_vertices
    from designer.sweep.cells import privacy_matrix

    privacy = privacy_matrix(cell)
    if cell["utility"] == "expected-loss":
        index = np.arange(privacy.k, dtype=float)
        result = design_expected_loss(privacy, np.abs(index[:, None] - index[None, :]))
    else:
        result = design_by_vertices(privacy, cell["utility"])
    return {"objective": float(result.objective), "certified": bool(result.certified),
            "verdict": result.certificate.verdict, "vertices": int(result.n_vertices), "outputs": int(result.n_outputs)}


def _robust_design(cell: dict, cell_hash: str) -> dict:
    from designer.robust.certify import certify_robust
    from designer.robust.confidence import ConfidenceSet
    from designer.robust.polyopt import polyopt
    from designer.robust.protocols import PROTOCOLS

    confidence = ConfidenceSet(np.asarray(cell["counts"]), float(cell["alpha"]))
    eps = float(cell["epsilon"])
    if cell["protocol"] == "polyopt":
        protocol = polyopt(confidence, eps, exact=False)
        vertices = protocol.params.get("vertices")
    else:
        protocol, vertices = PROTOCOLS[cell["protocol"]](confidence, eps), None
    row = {"objective": float(protocol.normalised_utility), "vertices": vertices,
           "outputs": protocol.channel.n_outputs if protocol.channel is not None else None}
    if cell["certify"] and protocol.channel is not None:
        verdict = certify_robust(protocol.channel, confidence, eps).verdict
        row.update(verdict=verdict, certified=verdict == "certified")
    return row


def _certify(cell: dict, cell_hash: str) -> dict:
    from designer.certify import certify
    from designer.io import read_channel
    from designer.sweep.cells import privacy_matrix

    certificate = certify(read_channel(cell["channel"], exact=False), privacy_matrix(cell))
    return {"objective": float(certificate.margin), "certified": certificate.verdict == "certified",
            "verdict": certificate.verdict}


def _simulate(cell: dict, cell_hash: str) -> dict:
    from designer.mechanisms import (
        BlockHadamardResponse,
        GeneralizedRandomizedResponse,
        HadamardResponse,
        HighLowHadamardResponse,
    )
    from designer.simulation import named_distribution, simulate

    k, eps, name = cell["k"], float(cell["epsilon"]), cell["protocol"]
    if name == "grr":
        mechanism = GeneralizedRandomizedResponse(k, eps)
    elif name == "hr":
        mechanism = HadamardResponse(k, eps)
    elif name == "block-hr":
        mechanism = BlockHadamardResponse(list(cell["blocks"]), eps)
    else:
        mechanism = HighLowHadamardResponse(k, len(cell["sensitive"]), eps)
    result = simulate(mechanism, named_distribution(cell["distribution"], k), cell["n"], rng=seed_of(cell_hash))
    return {"objective": float(result.tv_error), "outputs": int(mechanism.n_outputs)}


RUNNERS = {"design": _design, "robust-design": _robust_design, "certify": _certify, "simulate": _simulate}
#: The library modules each runner imports on its first cell.
RUNNER_MODULES = {
    "design": ("designer.design.vertex", "designer.certify"),
    "robust-design": ("designer.robust.certify", "designer.robust.confidence", "designer.robust.polyopt",
                      "designer.robust.protocols"),
    "certify": ("designer.certify", "designer.io"),
    "simulate": ("designer.mechanisms", "designer.simulation"),
}


def warm_up(task: str) -> None:
    """Import what the runner of ``task`` needs (on each worker as it starts, so no cell pays for it)."""
    import importlib

    for module in RUNNER_MODULES[task]:
        importlib.import_module(module)
