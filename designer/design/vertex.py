"""Optimal E-LDP channels by linear programming.

Vertex designs (:func:`design_by_vertices`). For a utility that is a sum over
output columns of a sublinear ``mu`` (mutual information under a prior, an
f-divergence between two hypotheses), an optimal E-LDP channel uses scaled
cone vertices as columns (Kairouz, Oh, Viswanath 2014, Theorem 4; Theorem 12
of robust-ldp-chi-square.md):

    maximise  sum_v theta_v mu(v)   s.t.  sum_v theta_v v = 1,  theta >= 0;
    Q[x, v] = theta_v v_x.

The LP dual ``y`` (``V y >= mu(V)``, ``1 . y = objective``) certifies optimality
against *every* E-LDP channel: each column q of such a channel is a
non-negative combination of vertices, so ``mu(q) <= y . q`` by sublinearity,
and summing over columns gives ``U(Q) <= y . 1``. A float dual may miss a vertex's
constraint by a rounding residual; ``y + delta 1`` with
``delta = max_v max(0, mu(v) - y . v) / (1 . v)`` meets every one (``v >= 0``), so
``sum(y) + k delta`` is the upper bound reported (``DesignResult.dual_bound``).

The cone is a product over the components of E (:mod:`designer.cone`), the
constraints ``sum theta_v v = 1`` split by component and the column utility
of a vertex depends only on its own component, so the LP splits into one LP
per component and the channel is the direct sum of the per-component designs.
For mutual information this is the design under the block-conditional prior:
``I(X; Y) = H(B) + sum_b P(b) I_b`` with ``B`` the component of ``X``.

Every float design is repaired onto the cone
(:func:`designer.design.repair.project_into_cone`, which moves entries by about the
solver's feasibility tolerance) and every design is certified with
:func:`designer.certify.certify`.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from designer.channel import Channel
from designer.cone import Cone
from designer.defaults import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_VERTICES,
    VERTEX_UTILITIES,
)
from designer.design.repair import (
    certify_design,
    check_design_levels,
    default_uniform,
    merge_proportional_columns,
    project_into_cone,
)
from designer.design.result import DesignResult
from designer.exact import fmpq_fraction
from designer.spec import PrivacyMatrix
from designer.utility import F_DIVERGENCES, column_f_divergence, column_information
from solvers.linear import solve_vertex_lp

#: Weights below this (relative to the largest) are treated as zero by the LP clean-up.
WEIGHT_CUTOFF = 1e-13


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
        alternative = default_uniform(alternative, prior.size)
        if np.allclose(prior, alternative, rtol=0, atol=1e-12):
            raise ValueError(
                f"the {utility} utility compares the prior with an alternative distribution (default uniform), "
                "and they are equal, so every channel scores 0: give a non-uniform prior (--prior) or an "
                "alternative (--alternative)"
            )
        return lambda columns: column_f_divergence(prior, alternative, columns, utility)
    raise ValueError(f"unknown utility {utility!r}; choose one of {', '.join(VERTEX_UTILITIES)} or expected-loss")


def design_by_vertices(
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
    """The optimal E-LDP channel for a column-sublinear utility by the vertex LP (see module docstring).

    One route of the front door :func:`designer.design.front.design_channel` (which chooses it for
    small dense E, moves the channel inside E for the exact certifier and reports bounds).

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
    prior = default_uniform(prior, k)
    mu = column_utility(utility, prior, alternative)
    timings = {"cone": 0.0, "vertices": 0.0, "lp": 0.0, "certify": 0.0}
    tick = time.perf_counter()
    cone = Cone.from_privacy(privacy)
    cone.check_size(max_vertices)
    timings["cone"] = time.perf_counter() - tick
    columns, exact_columns, duals = [], [], np.zeros(k)
    methods, n_vertices, objective, residual, gap, bound = [], 0, 0.0, -np.inf, 0.0, 0.0
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
        shortfall = (values - found.vertices @ solution.duals) / found.vertices.sum(axis=1)
        bound += float(solution.duals.sum()) + symbols.size * max(0.0, float(shortfall.max()))
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
    certificate = certify_design(channel, privacy, exact)
    timings["certify"] = time.perf_counter() - tick
    return DesignResult(
        channel=channel,
        privacy=privacy,
        utility=utility,
        objective=objective,
        duals=duals,
        dual_residual=float(residual),
        duality_gap=float(gap),
        dual_bound=bound,
        n_vertices=n_vertices,
        n_outputs=channel.n_outputs,
        seconds=time.perf_counter() - start,
        certificate=certificate,
        exact=exact,
        methods=methods,
        timings=timings,
    )


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


