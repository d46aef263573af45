"""The result of a channel design: the channel with its proof material (dual certificate, certificate, timings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from designer.certify import Certificate
from designer.channel import Channel
from designer.io import json_writer, matrix_csv_writer, write_files
from designer.spec import PrivacyMatrix


@dataclass
class DesignResult:
    """An optimal channel with its proof material.

    Attributes
    ----------
    channel : Channel
        The designed channel (rows inputs, columns outputs).
    privacy : PrivacyMatrix
    utility : str
        ``"mutual-information"``, an f-divergence name, or ``"expected-loss"``.
    objective : float
        Optimal value: the utility (nats) for vertex designs, the expected loss
        for expected-loss designs.
    duals : ndarray (k,) or None
        Vertex designs: the dual certificate ``y`` (``mu(v) <= y . v`` for every
        vertex, ``sum(y) = objective``).
    dual_residual, duality_gap : float or None
        ``max_v mu(v) - y . v`` and ``sum(y) - objective`` (both ~0 at optimality).
    n_vertices : int
        Cone vertices considered (0 for expected-loss designs).
    n_outputs : int
    seconds : float
        Total wall-clock time; ``timings`` splits it.
    certificate : Certificate
    exact : bool
        Whether vertices and channel entries are exact rationals.
    methods : list of str
        How each component's vertices were obtained.
    dual_bound : float or None
        Vertex designs: ``sum(y) + k delta``, the dual made feasible for every vertex
        (:mod:`designer.design.vertex`), an upper bound on every E-LDP channel's utility.
    """

    channel: Channel
    privacy: PrivacyMatrix
    utility: str
    objective: float
    duals: np.ndarray | None
    dual_residual: float | None
    duality_gap: float | None
    n_vertices: int
    n_outputs: int
    seconds: float
    certificate: Certificate
    exact: bool = False
    methods: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    dual_bound: float | None = None

    @property
    def certified(self) -> bool:
        return self.certificate.certified

    def summary(self) -> dict:
        """A JSON-ready summary (objective, n_vertices, n_outputs, seconds, certified, ...)."""
        return {
            "E": self.privacy.name,
            "k": self.privacy.k,
            "utility": self.utility,
            "objective": self.objective,
            "n_vertices": self.n_vertices,
            "n_outputs": self.n_outputs,
            "seconds": round(self.seconds, 6),
            "certified": self.certified,
            "certificate_mode": self.certificate.mode,
            "margin": json_float(self.certificate.margin),
            "exact": self.exact,
            "components": len(self.methods),
            "vertex_methods": self.methods,
            "duals": None if self.duals is None else [float(v) for v in self.duals],
            "dual_residual": self.dual_residual,
            "duality_gap": self.duality_gap,
            "dual_bound": self.dual_bound,
            "timings": {name: round(value, 6) for name, value in self.timings.items()},
        }

    def save(self, channel_path: str | Path, summary_path: str | Path | None = None, extra: dict | None = None) -> None:
        """Write the channel as CSV (rows inputs) and, optionally, the JSON summary (with ``extra`` fields).

        Both files are written all or nothing (:func:`designer.io.write_files`).
        """
        writes = [(channel_path, matrix_csv_writer(self.channel.exact_matrix if self.exact else self.channel.matrix))]
        if summary_path is not None:
            writes.append((summary_path, json_writer({**self.summary(), **(extra or {})})))
        write_files(writes)


def json_float(value: float) -> float | str:
    """A float for JSON: the number when finite, else its text (``inf``, ``nan``)."""
    return float(value) if np.isfinite(value) else str(value)
