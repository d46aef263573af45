"""The E-LDP channel of least expected loss (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014).

Minimise ``sum_x prior_x sum_y Q[x, y] loss[x, y]`` over E-LDP channels: a direct LP
over the k x m entries of Q, with only the non-redundant pairs of E as constraints (for
a graph metric: its edges), repaired onto the cone and certified like every float design
(:mod:`designer.design.repair`).
"""

from __future__ import annotations

import time

import numpy as np

from designer.channel import Channel
from designer.design.repair import (
    certify_design,
    check_design_levels,
    default_uniform,
    project_into_cone,
)
from designer.design.result import DesignResult
from designer.spec import PrivacyMatrix
from solvers.linear import solve_ratio_bounded_stochastic_lp

#: Relative shrink of E in the interior-point expected-loss LP (see design_expected_loss).
INTERIOR_POINT_SHRINK = 1e-6


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
    prior = default_uniform(prior, k)
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
    certificate = certify_design(channel, privacy, exact=False)
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
