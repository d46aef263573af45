"""The optimal instantaneous stage for a given permanent one.

Given the permanent channel ``Q1`` (k x m1, its level ``E_inf``) and the per-report level
``E1``, a column ``c`` of the instantaneous channel ``Q2`` (m1 x m2) gives the column ``Q1 c``
of one report's channel, which must lie in the cone of E1 (Definition 2 of
context-aware-ldp.md, per-output form). So the admissible columns form the polyhedral cone

    D = { c >= 0 : e^{E1[x, x']} (Q1 c)_{x'} - (Q1 c)_x >= 0 for the non-redundant pairs of E1 },

linear in ``c``. The mutual information ``I(X; Z)`` of one report is ``sum_z mu(Q1 c_z)``
with ``mu`` sublinear (:func:`designer.utility.column_information`), so, as for a one-stage
design (:mod:`designer.design.vertex`), an optimal ``Q2`` uses extreme rays of D as columns:

    maximise sum_v theta_v mu(Q1 v)  s.t.  sum_v theta_v v = 1 (m1 rows),  theta >= 0,

and the LP dual certifies optimality against every instantaneous stage (:func:`design_instantaneous`).

For randomised response as the permanent stage (``Q1 = GRR(k, eps_inf)``, L-GRR's) and a
classic level ``eps_1`` the problem is symmetric under relabelling, the LP's optimum is attained
by one orbit of columns, and ``Q1 c`` (normalised to sum 1) is one of the vertex types of
``{w : w_x >= q1, w_x <= e^{eps_1} w_x'}`` (``q1`` the off-diagonal entry of Q1):
two-level (``h`` entries ``e^{eps_1} lo``, the rest ``lo >= q1``), three-level (``h`` at
``e^{eps_1} q1``, ``k - 1 - h`` at ``q1``, one in between) or Q1's own column (when
``eps_inf <= eps_1``). :func:`symmetric_grr_design` scans these O(k) types in closed form, so
k = 100 costs milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.cone import Cone
from designer.design.repair import default_uniform
from designer.longitudinal.two_stage import TwoStage
from designer.spec import PrivacyMatrix
from designer.utility import column_information
from solvers.linear import solve_vertex_lp
from solvers.vertices import enumerate_cone_rays

#: LP weights below this share of the largest are dropped.
WEIGHT_CUTOFF = 1e-12


@dataclass(frozen=True)
class InstantaneousDesign:
    """Outcome of :func:`design_instantaneous`: the stages, ``I(X; Z)`` of one report and its LP dual bound."""

    stages: TwoStage
    mutual_information: float
    dual_bound: float
    n_rays: int
    certificate: Certificate


def instantaneous_rays(permanent: np.ndarray, report_privacy: PrivacyMatrix) -> np.ndarray:
    """Extreme rays of D (rows, normalised to sum 1), by the double description method (pycddlib)."""
    m1 = permanent.shape[1]
    rows = [np.eye(m1)]
    for component in Cone.from_privacy(report_privacy).components:
        for (x, x_prime), level in zip(component.pairs, component.levels):
            x, x_prime = component.symbols[x], component.symbols[x_prime]
            rows.append((math.exp(float(level)) * permanent[x_prime] - permanent[x])[None, :])
    return enumerate_cone_rays(np.vstack(rows)).vertices


def design_instantaneous(permanent: Channel, report_privacy: PrivacyMatrix, prior=None) -> InstantaneousDesign:
    """The instantaneous stage maximising ``I(X; Z)`` of one report subject to ``Q1 Q2`` being E1-LDP.

    Parameters
    ----------
    permanent : Channel
        Q1 (k x m1); m1 must be small enough to enumerate D (tens of outputs).
    report_privacy : PrivacyMatrix
        E1 (k x k).
    prior : array_like, optional
        Input distribution of the mutual information (default uniform).

    Returns
    -------
    InstantaneousDesign
        Its ``certificate`` is the float certificate of one report against E1
        (:func:`designer.certify.certify`, tolerance :data:`designer.certify.FLOAT_TOLERANCE`).
    """
    if report_privacy.k != permanent.k:
        raise ValueError(f"E1 is {report_privacy.k} x {report_privacy.k} but the permanent stage has {permanent.k} inputs")
    prior = default_uniform(prior, permanent.k)
    rays = instantaneous_rays(permanent.matrix, report_privacy)
    values = column_information(prior, permanent.matrix @ rays.T)
    solution = solve_vertex_lp(rays, values, np.ones(permanent.n_outputs))
    weights = solution.weights
    support = np.flatnonzero(weights > WEIGHT_CUTOFF * weights.max())
    columns = rays[support] * weights[support, None]
    instantaneous = Channel(_stochastic(columns.T), permanent.output_labels)
    stages = TwoStage(permanent, instantaneous)
    report = stages.report()
    return InstantaneousDesign(stages, float(column_information(prior, report.matrix).sum()),
                               float(np.ones(permanent.n_outputs) @ solution.duals), rays.shape[0],
                               certify(report, report_privacy))


def search_permanent(candidates: dict[str, Channel], long_term_privacy: PrivacyMatrix,
                     report_privacy: PrivacyMatrix, prior=None) -> tuple[str, InstantaneousDesign]:
    """The best two-stage design over permanent candidates: each must be ``E_inf``-LDP (certified, float),
    each gets its optimal instantaneous stage (:func:`design_instantaneous`); the largest ``I(X; Z)`` wins.

    ``candidates`` maps names to permanent channels (GRR(E_inf), RAPPOR's stage, the optimal
    E_inf design of :func:`designer.design.vertex.design_by_vertices`, ...). Returns the winner's name
    and design.
    """
    designs = {}
    for name, permanent in candidates.items():
        if not certify(permanent, long_term_privacy).certified:
            raise ValueError(f"the permanent candidate {name} is not E_inf-LDP")
        designs[name] = design_instantaneous(permanent, report_privacy, prior)
    best = max(designs, key=lambda name: designs[name].mutual_information)
    return best, designs[best]


def _stochastic(matrix: np.ndarray) -> np.ndarray:
    """Rows renormalised to sum 1 (the LP meets the row sums to about 1e-9)."""
    matrix = np.clip(matrix, 0.0, None)
    return matrix / matrix.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class SymmetricDesign:
    """One orbit type of :func:`symmetric_grr_design`: the normalised report column ``w`` (one representative)
    and the report's mutual information and estimator variance under the uniform prior."""

    kind: str  # "two-level", "three-level" or "permanent"
    high: int  # entries at the high level
    column: np.ndarray
    mutual_information: float
    variance: float

    def describe(self) -> str:
        return f"{self.kind}, {self.high} high of {self.column.size}"


def symmetric_types(k: int, eps_inf: float, eps_1: float) -> list[SymmetricDesign]:
    """Every vertex type of the report columns of ``GRR(k, eps_inf) Q2`` at level ``eps_1`` (module docstring)."""
    q1 = 1 / (math.exp(eps_inf) + k - 1)
    ratio = math.exp(eps_1)
    found = []
    for high in range(1, k):
        low = 1 / (high * ratio + k - high)
        if low >= q1 * (1 - 1e-12):
            found.append(_symmetric("two-level", high, [ratio * low] * high + [low] * (k - high)))
    for high in range(0, k):
        middle = 1 - q1 * (k - 1 - high) - ratio * q1 * high
        if q1 < middle < ratio * q1:
            found.append(_symmetric("three-level", high, [ratio * q1] * high + [middle] + [q1] * (k - 1 - high)))
    if eps_inf <= eps_1:
        found.append(_symmetric("permanent", 1, [1 - (k - 1) * q1] + [q1] * (k - 1)))
    return found


def _symmetric(kind: str, high: int, column) -> SymmetricDesign:
    column = np.array(column, dtype=float)
    k = column.size
    information = float(np.sum(column * np.log(k * column)))
    return SymmetricDesign(kind, high, column, information, symmetric_variance(column))


def symmetric_variance(column: np.ndarray) -> float:
    """Variance of the best unbiased estimator of one frequency, one report, uniform prior, for the channel
    whose columns are all relabellings of ``column`` (sum 1), rows summing to 1.

    With ``D`` the output distribution, the unbiased ``B`` (``B W^T = I``) of least variance gives
    ``Cov = (W D^{-1} W^T)^{-1} - pi pi^T``; by symmetry ``W D^{-1} W^T = k^2 ((a - b) I + b J)``
    with ``a = sum w^2 / k`` and ``b = (1 - sum w^2) / (k (k - 1))``.
    """
    k = column.size
    squares = float(np.sum(column ** 2))
    a, b = squares / k, (1 - squares) / (k * (k - 1))
    alpha, beta = k * k * (a - b), k * k * b
    return (1 - beta / (alpha + k * beta)) / alpha - 1 / k ** 2


def channel_variance(channel: np.ndarray, prior=None) -> float:
    """The same variance for any channel (mean over inputs): ``diag((W D^{-1} W^T)^{-1}) - pi^2``."""
    k = channel.shape[0]
    prior = default_uniform(prior, k)
    output = prior @ channel
    used = output > 0
    information = (channel[:, used] / output[used]) @ channel[:, used].T
    return float(np.mean(np.diag(np.linalg.inv(information)) - prior ** 2))


def symmetric_grr_design(k: int, eps_inf: float, eps_1: float, utility: str = "mutual-information") -> SymmetricDesign:
    """The best type of :func:`symmetric_types`: largest mutual information (the LP's optimum over every
    instantaneous stage), or (``utility="variance"``) smallest variance among single-type designs."""
    types = symmetric_types(k, eps_inf, eps_1)
    if not types:
        raise ValueError(f"no instantaneous stage meets eps_1 = {eps_1} after GRR(eps_inf = {eps_inf}) on k = {k}")
    if utility == "variance":
        return min(types, key=lambda design: design.variance)
    if utility != "mutual-information":
        raise ValueError(f"utility must be mutual-information or variance, got {utility!r}")
    return max(types, key=lambda design: design.mutual_information)
