"""Optimal E-LDP channels by linear programming.

Vertex designs (:func:`design_channel`). For a utility that is a sum over
output columns of a sublinear ``mu`` (mutual information under a prior, an
f-divergence between two hypotheses), an optimal E-LDP channel uses scaled
cone vertices as columns (Kairouz, Oh, Viswanath 2014, Theorem 4; Theorem 12
of robust-ldp-chi-square.md):

    maximise  sum_v theta_v mu(v)   s.t.  sum_v theta_v v = 1,  theta >= 0;
    Q[x, v] = theta_v v_x.

The LP dual ``y`` (``V y >= mu(V)``, ``1 . y = objective``) certifies optimality
against *every* E-LDP channel: each column q of such a channel is a
non-negative combination of vertices, so ``mu(q) <= y . q`` by sublinearity,
and summing over columns gives ``U(Q) <= y . 1``.

The cone is a product over the components of E (:mod:`designer.cone`), the
constraints ``sum theta_v v = 1`` split by component and the column utility
of a vertex depends only on its own component, so the LP splits into one LP
per component and the channel is the direct sum of the per-component designs.
For mutual information this is the design under the block-conditional prior:
``I(X; Y) = H(B) + sum_b P(b) I_b`` with ``B`` the component of ``X``.

Expected-loss designs (:func:`design_expected_loss`): minimise
``sum_x prior_x sum_y Q[x, y] loss[x, y]`` over E-LDP channels, a direct LP
(Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014), with only the
non-redundant pairs of E as constraints (for a graph metric: its edges).

Every float design is repaired onto the cone (:func:`project_into_cone`,
which moves entries by about the solver's feasibility tolerance) and every
design is certified with :func:`designer.certify.certify`.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from designer.certify import LEVEL_DIGITS, Certificate, certify
from designer.channel import Channel
from designer.exact import describe_fraction, fmpq_fraction
from designer.cone import Cone
from designer.defaults import DEFAULT_MAX_SECONDS, DEFAULT_MAX_VERTICES, VERTEX_UTILITIES
from designer.io import json_writer, matrix_csv_writer, write_files
from designer.spec import PrivacyMatrix
from designer.utility import F_DIVERGENCES, column_f_divergence, column_information
from solvers.linear import solve_ratio_bounded_stochastic_lp, solve_vertex_lp
from solvers.maxplus import min_plus_product, safe_log

#: Columns whose normalised entries agree to this many decimals are merged.
MERGE_DECIMALS = 12
#: Relative shrink of E in the interior-point expected-loss LP (see design_expected_loss).
INTERIOR_POINT_SHRINK = 1e-6
#: Columns of a repaired channel with less total mass than this are dropped.
NEGLIGIBLE_COLUMN = 1e-12
#: Least-squares refinement steps when restoring row sums by column scaling.
REFINEMENT_STEPS = 3
#: Weights below this (relative to the largest) are treated as zero by the LP clean-up.
WEIGHT_CUTOFF = 1e-13


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
            "margin": _json_float(self.certificate.margin),
            "exact": self.exact,
            "components": len(self.methods),
            "vertex_methods": self.methods,
            "duals": None if self.duals is None else [float(v) for v in self.duals],
            "dual_residual": self.dual_residual,
            "duality_gap": self.duality_gap,
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


def column_utility(utility: str, prior, alternative=None):
    """The per-column utility ``mu`` as a function of a (k, n) column array.

    ``"mutual-information"``: ``I_prior(X; Y)`` (:func:`designer.utility.column_information`).
    An f-divergence name (``"kl"``, ``"chi-square"``, ...): ``D_f(prior Q || alternative Q)``
    (:func:`designer.utility.column_f_divergence`), the utility of telling the two
    input distributions apart from the reports; ``alternative`` defaults to the
    uniform distribution, and must differ from ``prior`` (else every channel scores 0).
    """
    if utility == "mutual-information":
        return lambda columns: column_information(prior, columns)
    if utility in F_DIVERGENCES:
        prior = np.asarray(prior, dtype=float)
        alternative = _default_uniform(alternative, prior.size)
        if np.allclose(prior, alternative, rtol=0, atol=1e-12):
            raise ValueError(
                f"the {utility} utility compares the prior with an alternative distribution (default uniform), "
                "and they are equal, so every channel scores 0: give a non-uniform prior (--prior) or an "
                "alternative (--alternative)"
            )
        return lambda columns: column_f_divergence(prior, alternative, columns, utility)
    raise ValueError(f"unknown utility {utility!r}; choose one of {', '.join(VERTEX_UTILITIES)} or expected-loss")


def design_channel(
    privacy: PrivacyMatrix,
    utility: str = "mutual-information",
    prior=None,
    alternative=None,
    exact: bool = False,
    row_order=None,
    vertex_method: str = "auto",
    max_vertices: int | None = DEFAULT_MAX_VERTICES,
    backend: str = "highs",
    max_seconds: float | None = DEFAULT_MAX_SECONDS,
) -> DesignResult:
    """The optimal E-LDP channel for a column-sublinear utility (see module docstring).

    Parameters
    ----------
    privacy : PrivacyMatrix
    utility : str
        One of :data:`VERTEX_UTILITIES`.
    prior : array_like (k,), optional
        Input distribution (default uniform).
    alternative : array_like (k,), optional
        Second hypothesis of the f-divergence utilities (positive entries;
        default uniform).
    exact : bool
        Exact rational vertices (cdd GMP / rational closed form) and channel
        entries; the certificate is then an exact proof.
    row_order : str, optional
        cdd row order for enumerated components (see :mod:`solvers.vertices`).
    vertex_method : {"auto", "closed-form", "enumerate"}
    max_vertices : int or None
        Refuse when the cone has more vertices than this: before enumerating
        where the count is known in closed form, after it otherwise (None: no limit).
    backend : {"highs", "cvxpy"}
    max_seconds : float or None
        Wall-clock budget of each enumeration that may be large (see
        :meth:`designer.cone.ComponentCone.vertices`; None: no limit).

    Returns
    -------
    DesignResult
    """
    start = time.perf_counter()
    check_design_levels(privacy, exact)
    k = privacy.k
    prior = _default_uniform(prior, k)
    mu = column_utility(utility, prior, alternative)
    timings = {"cone": 0.0, "vertices": 0.0, "lp": 0.0, "certify": 0.0}
    tick = time.perf_counter()
    cone = Cone.from_privacy(privacy)
    cone.check_size(max_vertices)
    timings["cone"] = time.perf_counter() - tick
    columns, exact_columns, duals = [], [], np.zeros(k)
    methods, n_vertices, objective, residual, gap = [], 0, 0.0, -np.inf, 0.0
    for component in cone.components:
        tick = time.perf_counter()
        found = component.vertices(exact, row_order, vertex_method, max_vertices, max_seconds)
        timings["vertices"] += time.perf_counter() - tick
        symbols = found.symbols
        padded = np.zeros((found.n_vertices, k))
        padded[:, symbols] = found.vertices
        values = mu(padded.T)
        tick = time.perf_counter()
        solution = solve_vertex_lp(found.vertices, values, np.ones(symbols.size), backend=backend)
        weights = _polished_weights(found.vertices, solution.weights)
        timings["lp"] += time.perf_counter() - tick
        duals[symbols] = solution.duals
        residual = max(residual, solution.dual_residual)
        gap += solution.gap
        objective += float(values @ weights)
        n_vertices += found.n_vertices
        methods.append(found.method)
        for index in np.flatnonzero(weights):
            column = np.zeros(k)
            column[symbols] = weights[index] * found.vertices[index]
            columns.append(column)
            if exact:
                exact_columns.append((symbols, index, found))
    if exact:
        matrix = _exact_channel_matrix(k, exact_columns)
        matrix = matrix[:, _column_order(matrix.astype(float))]
        channel = Channel(matrix)
    else:
        matrix = merge_proportional_columns(np.column_stack(columns))
        matrix = project_into_cone(privacy, matrix[:, _column_order(matrix)])
        channel = Channel(matrix)
    tick = time.perf_counter()
    certificate = _certify_design(channel, privacy, exact)
    timings["certify"] = time.perf_counter() - tick
    return DesignResult(
        channel=channel,
        privacy=privacy,
        utility=utility,
        objective=objective,
        duals=duals,
        dual_residual=float(residual),
        duality_gap=float(gap),
        n_vertices=n_vertices,
        n_outputs=channel.n_outputs,
        seconds=time.perf_counter() - start,
        certificate=certificate,
        exact=exact,
        methods=methods,
        timings=timings,
    )


def design_expected_loss(
    privacy: PrivacyMatrix, loss, prior=None, constraints: str = "nonredundant", backend: str = "clarabel"
) -> DesignResult:
    """The E-LDP channel of least expected loss ``sum_x prior_x sum_y Q[x,y] loss[x,y]``.

    Bordenabe, Chatzikokolakis, Palamidessi (CCS 2014): a direct LP over the
    k x m entries of Q, outputs indexed like the columns of ``loss`` (e.g.
    outputs = inputs with ``loss = distance``).

    Parameters
    ----------
    privacy : PrivacyMatrix
    loss : array_like (k, m)
        Finite loss of reporting y when the truth is x.
    prior : array_like (k,), optional
        Default uniform.
    constraints : {"nonredundant", "all-pairs"}
        ``"nonredundant"`` uses :meth:`PrivacyMatrix.nonredundant_pairs` (for a
        graph metric, the graph's edges); ``"all-pairs"`` every finite pair
        (same optimum, for comparison).
    backend : {"clarabel", "highs"}
        LP solver (see :func:`solvers.linear.solve_ratio_bounded_stochastic_lp`):
        Clarabel's interior point (default, fastest on large grids) or HiGHS
        (a vertex solution). An interior-point solution violates constraints
        by up to its tolerance, so with Clarabel the LP uses the levels
        ``E * (1 - INTERIOR_POINT_SHRINK)``: the slack absorbs the solver's
        errors and the channel certifies against E with a positive margin, at
        a relative cost of about 1e-6 in expected loss (scaling E keeps
        redundant pairs redundant, so edges and all pairs still agree).
    """
    start = time.perf_counter()
    check_design_levels(privacy)
    k = privacy.k
    loss = np.asarray(loss, dtype=float)
    if loss.ndim != 2 or loss.shape[0] != k:
        raise ValueError(f"loss must have {k} rows (one per input), got shape {loss.shape}")
    if not np.all(np.isfinite(loss)):
        raise ValueError("loss entries must be finite")
    prior = _default_uniform(prior, k)
    if constraints == "nonredundant":
        pairs = privacy.nonredundant_pairs()
    elif constraints == "all-pairs":
        pairs = np.argwhere(np.isfinite(privacy.epsilon) & ~np.eye(k, dtype=bool))
    else:
        raise ValueError(f"constraints must be 'nonredundant' or 'all-pairs', got {constraints!r}")
    levels = privacy.epsilon[pairs[:, 0], pairs[:, 1]] if pairs.size else np.empty(0)
    shrink = INTERIOR_POINT_SHRINK if backend == "clarabel" else 0.0
    ratios = np.exp(levels * (1.0 - shrink))
    solution = solve_ratio_bounded_stochastic_lp(prior[:, None] * loss, pairs, ratios, backend=backend)
    lp_seconds = solution.seconds
    channel = Channel(project_into_cone(privacy, solution.matrix))
    tick = time.perf_counter()
    certificate = _certify_design(channel, privacy, exact=False)
    certify_seconds = time.perf_counter() - tick
    objective = float(np.sum(prior[:, None] * loss * channel.matrix))
    return DesignResult(
        channel=channel,
        privacy=privacy,
        utility="expected-loss",
        objective=objective,
        duals=None,
        dual_residual=None,
        duality_gap=None,
        n_vertices=0,
        n_outputs=channel.n_outputs,
        seconds=time.perf_counter() - start,
        certificate=certificate,
        methods=[f"direct LP, {solution.n_constraints} ratio constraints ({constraints}, {backend})"],
        timings={"lp": lp_seconds, "certify": certify_seconds},
    )


#: Largest finite level a float design accepts: ``-log`` of the smallest normal double
#: (708.396...). Entries of a channel for larger levels (``~exp(-level)``) are subnormal
#: or underflow, which float mode cannot certify (:func:`designer.certify.certify`).
MAX_FLOAT_DESIGN_LEVEL = -math.log(sys.float_info.min)
#: Largest finite level any design accepts: ``log`` of the largest double (709.78...);
#: beyond it ``exp(level)`` overflows in the cone's vertex estimates and the LP's bounds.
MAX_DESIGN_LEVEL = math.log(sys.float_info.max)


def check_design_levels(privacy: PrivacyMatrix, exact: bool = False) -> None:
    """Refuse finite levels a design in double precision cannot represent (before designing).

    Float designs accept levels up to :data:`MAX_FLOAT_DESIGN_LEVEL`, exact vertex
    designs up to :data:`MAX_DESIGN_LEVEL`; ``inf`` (no constraint) is always fine.

    Raises
    ------
    ValueError
        One line naming the first such entry, the limit and what to do.
    """
    limit = MAX_DESIGN_LEVEL if exact else MAX_FLOAT_DESIGN_LEVEL
    values = privacy.epsilon
    too_large = np.argwhere(np.isfinite(values) & (values > limit))
    if too_large.size:
        x, x_prime = too_large[0]
        accepted = f"designs accept finite levels up to {limit:.2f}" if exact else (
            f"float designs accept finite levels up to {limit:.2f}, --exact up to {MAX_DESIGN_LEVEL:.2f}"
        )
        level = privacy.exact_levels(too_large[:1, 0], too_large[:1, 1])[0]
        shown = describe_fraction(level.value, LEVEL_DIGITS) if level.beyond_double else f"{float(values[x, x_prime]):g}"
        raise ValueError(
            f"E row {x}, column {x_prime}: level {shown} is beyond the double range "
            f"({accepted}); lower it, or write inf if the pair needs no constraint"
        )


def _certify_design(channel: Channel, privacy: PrivacyMatrix, exact: bool) -> Certificate:
    """Certify a designed channel; a float design with subnormal entries is refused in one clear line."""
    try:
        return certify(channel, privacy, exact=exact)
    except ValueError as error:
        if exact or "subnormal" not in str(error):
            raise
        raise ValueError(
            "the designed channel has entries below the normal double range (subnormal), which float mode "
            "cannot certify; design with --exact, or lower E's largest finite levels"
        ) from None


def merge_proportional_columns(matrix, decimals: int = MERGE_DECIMALS) -> np.ndarray:
    """Sum columns that are proportional (equal after normalising to sum 1); drop zero columns.

    Merging keeps every likelihood ratio (so E-LDP) and, for a positively
    homogeneous column utility, the utility: ``mu(a v) + mu(b v) = mu((a + b) v)``.
    Merged columns keep the position of their first member.
    """
    matrix = np.asarray(matrix, dtype=float)
    totals = matrix.sum(axis=0)
    keep = np.flatnonzero(totals > 0)
    shapes = np.round(matrix[:, keep] / totals[keep], decimals)
    _, first, groups = np.unique(shapes.T, axis=0, return_index=True, return_inverse=True)
    merged = np.zeros((matrix.shape[0], first.size))
    np.add.at(merged.T, groups.ravel(), matrix[:, keep].T)
    return merged[:, np.argsort(first)]


def project_into_cone(privacy: PrivacyMatrix, matrix) -> np.ndarray:
    """Repair a nearly E-LDP channel into an E-LDP one, moving entries by about the violation.

    1. Column by column, the largest vector below Q inside ``C_E``:
       ``Q[x,y] <- min_z exp(E*[x,z]) Q[z,y]`` (``E*`` is the closure, which obeys
       the triangle inequality, so the result satisfies every constraint).
    2. Drop columns of total mass below :data:`NEGLIGIBLE_COLUMN` (an interior-point
       solver leaves ~1e-13 in unused outputs), then give back the lost row mass
       by scaling *columns* (which keeps every likelihood ratio):
       ``Q <- Q diag(1 + d)`` with ``Q d = 1 - rowsums`` (least squares, a few
       refinement steps, each kept only when ``1 + d >= 0`` and it brings the
       rows closer to 1).
    3. Divide each row by its sum; this changes log-ratios by at most
       ``max_x |1 - rowsum_x|`` (about 1e-16 after step 2).
    """
    logs = min_plus_product(privacy.closure().epsilon, safe_log(matrix))
    projected = np.where(logs > -745.0, np.exp(np.minimum(logs, 0.0)), 0.0)
    projected[:, projected.sum(axis=0) < NEGLIGIBLE_COLUMN] = 0.0
    active = np.flatnonzero(projected.sum(axis=0) > 0)
    for _ in range(REFINEMENT_STEPS):
        deficit = 1.0 - projected.sum(axis=1)
        step, *_ = np.linalg.lstsq(projected[:, active], deficit, rcond=None)
        scaled = projected.copy()
        scaled[:, active] *= 1.0 + step
        if np.any(1.0 + step < 0) or np.abs(1.0 - scaled.sum(axis=1)).max() >= np.abs(deficit).max():
            break
        projected = scaled
    return projected / projected.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- internals
def _default_uniform(prior, k: int) -> np.ndarray:
    if prior is None:
        return np.full(k, 1.0 / k)
    prior = np.asarray(prior, dtype=float).ravel()
    if prior.shape != (k,):
        raise ValueError(f"prior must have {k} entries, got {prior.size}")
    if np.any(~np.isfinite(prior)) or np.any(prior < 0) or abs(prior.sum() - 1) > 1e-9:
        raise ValueError("prior must be non-negative and sum to 1")
    return prior


def _column_order(matrix: np.ndarray) -> np.ndarray:
    """Order outputs by the input they favour most (then by decreasing entry): RR comes out diagonal."""
    favoured = matrix.argmax(axis=0)
    return np.lexsort((-matrix.max(axis=0), favoured))


def _polished_weights(vertices: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Re-solve ``vertices[S].T w_S = 1`` on the LP's support S, so rows sum to 1 to ~1e-15.

    Kept only when the re-solve is non-negative and more accurate than the LP's answer.
    """
    support = np.flatnonzero(weights > WEIGHT_CUTOFF * max(weights.max(), 1e-300))
    polished = np.zeros_like(weights)
    solved, *_ = np.linalg.lstsq(vertices[support].T, np.ones(vertices.shape[1]), rcond=None)
    polished[support] = solved
    before = np.abs(vertices.T @ weights - 1).max()
    after = np.abs(vertices.T @ polished - 1).max()
    if np.all(solved >= 0) and after <= before:
        return polished
    cleaned = np.zeros_like(weights)
    cleaned[support] = weights[support]
    return cleaned


def _exact_channel_matrix(k: int, picked: list) -> np.ndarray:
    """Exact rational channel from the chosen vertices: solve ``sum_v theta_v v = 1`` exactly.

    ``picked`` holds (symbols, vertex index, ComponentVertices) for every column.
    Per component, the weights solve the normal equations ``(V V^T) theta = V 1``
    in exact rationals (python-flint); the result must satisfy the constraints
    exactly and be non-negative, else ``ArithmeticError``.
    """
    import flint

    columns: list[list[Fraction]] = []
    by_component: dict[int, list] = {}
    for symbols, index, found in picked:
        by_component.setdefault(id(found), []).append((symbols, index, found))
    for members in by_component.values():
        symbols = members[0][0]
        rows = [found.exact_vertex(index) for _, index, found in members]
        s, d = len(rows), len(symbols)
        gram = flint.fmpq_mat(s, s, [fmpq_fraction(_dot(a, b)) for a in rows for b in rows])
        target = flint.fmpq_mat(s, 1, [fmpq_fraction(sum(row, Fraction(0))) for row in rows])
        theta = [Fraction(int(value.p), int(value.q)) for value in gram.solve(target).entries()]
        totals = [sum(theta[i] * rows[i][x] for i in range(s)) for x in range(d)]
        if any(total != 1 for total in totals) or any(value < 0 for value in theta):
            raise ArithmeticError("the LP's vertex support has no exact non-negative solution; retry without exact")
        for weight, row in zip(theta, rows):
            column = [Fraction(0)] * k
            for position, value in zip(symbols, row):
                column[int(position)] = weight * value
            columns.append(column)
    matrix = np.empty((k, len(columns)), dtype=object)
    for y, column in enumerate(columns):
        matrix[:, y] = column
    return matrix


def _dot(a: list[Fraction], b: list[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _json_float(value: float):
    return value if np.isfinite(value) else str(value)
