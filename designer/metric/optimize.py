"""Optimising the strategy matrix A of problem (1) (metric-ldp-range-counting.md, Section III), beyond a fixed A.

The paper fixes A (``L_m`` for ranges) and notes that problem (1) is hard over
A. HDMM (McKenna et al., VLDB 2018) optimises A within parametrised families
for epsilon-DP; here two families are adapted to E-LDP, and every result is
finished by problem (1) for its A (:func:`designer.metric.strategy.design_overcomplete`
or :func:`~designer.metric.strategy.design_strategy`) and certified by
Proposition 1 on the released lattice noise.

**p-Identity in the difference basis (a line E).** Scaling row k of A by
``t_k = 1/s_k`` turns problem (1) into: unit-scale noise on every row, minimise
``||W A^+||_F^2`` subject to ``||A (h_x - h_x')||_1 <= E(x, x')`` on the
non-redundant pairs. For ``E(x, x+1) = b_x`` on a line (possibly different
levels per step) write ``A = M L_m``: the user's vector ``z = L_m h_x``
(``z_k = [x <= k]``, the prefix indicators) changes in exactly one coordinate,
``z_x``, between x and x + 1, so ``A (h_x - h_{x+1}) = M e_x`` and the E-LDP
constraint is exactly "column x of M has L1 norm at most ``b_x``" — HDMM's
epsilon-DP sensitivity constraint with per-column budgets (Haney,
Machanavajjhala, Ding, PVLDB 2015 transform Blowfish policies the same way).
The last coordinate ``z_{m-1} = 1`` is the same for every user: it is measured
without noise (the paper's ``s_m = 0``). So HDMM's p-Identity,
``M = [I; Theta] diag(b / (1 + 1^T Theta))``, optimised for the workload in
those coordinates, ``W' = W L_m^-1`` restricted to ``z_0 .. z_{m-2}`` (Gram
``G' = L^-T G L^-1``; for all ranges ``G' = (m + 1) I - J``), is a valid E-LDP
family that contains the paper's ``L_m`` with ``s = 1/epsilon`` at ``Theta = 0``
(:func:`solvers.p_identity.optimize_p_identity`).

**Kronecker products (a D-dimensional L1 grid).** For ``A = A_1 (x) ... (x) A_D``
and a Kronecker workload, ``||W A^+||_F^2`` is the product of the factors'
(HDMM, Section 5), but under ``E = epsilon ||x - x'||_1`` the sensitivity of a
grid edge along axis d is ``||A_d (h_a - h_{a+1})||_1 * prod_{j != d} ||A_j h_{x_j}||_1``:
the factors' column norms couple the axes (``L_m`` has columns of norm up to m,
which is why ``L_m (x) L_m`` is poor on a grid). HDMM's own p-Identity factors,
``A_d = [I; Theta_d] diag(1 / (1 + 1^T Theta_d))`` optimised for the factor
workload, have every column norm equal to 1, so the product's edge
sensitivity along axis d is ``||A_d (h_a - h_{a+1})||_1 <= 2`` whatever the
other factors are: each factor can be optimised alone, as in HDMM. The product
is then finished by problem (1) over all its rows (B fixed by the factors'
least squares, the noise scales optimal for it), which uses the exact
sensitivities.

**A lower bound for a line.** In the coordinates z the E-LDP constraint bounds
the L1, hence the L2, norm of every column of ``M diag(1/b)``; the least
error under L2 column norms at most 1 is ``(trace (D G' D)^(1/2))^2 / n``
(``D = diag(b)^-1``, n = m - 1; Li and Miklau, ICDT 2013, by Cauchy-Schwarz on
``trace(G X^-1)`` with ``trace X <= n``). So ``2`` times it bounds problem (1)
from below over every strategy A, any number of rows and any noise scales
(:func:`line_lower_bound`): it says how far the paper's ``L_m`` can be from optimal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.metric.pairs import PrivacyPairs
from designer.metric.strategy import AlternatingResult, Strategy, design_overcomplete, design_strategy
from designer.metric.strategy_matrices import (
    DenseStrategyMatrix,
    KroneckerStrategyMatrix,
    StrategyMatrix,
    named_strategy,
)
from designer.metric.workloads import KroneckerWorkload, Workload
from solvers.p_identity import optimize_p_identity

#: Extra rows of the p-Identity strategy per domain value (HDMM uses p = m/16 for ranges).
EXTRA_ROWS_FRACTION = 1 / 16
#: A candidate must beat L_m by this relative margin to be called best.
TIE_RTOL = 1e-9
#: Alternating iterations of problem (1) after an optimisation or for an over-complete baseline.
POLISH_ITERATIONS = 10


def line_budgets(pairs: PrivacyPairs) -> np.ndarray:
    """``b_x = E(x, x+1)`` when the non-redundant pairs are exactly the adjacent pairs of a line; else ValueError."""
    m = pairs.m
    expected = np.stack([np.arange(m - 1), np.arange(1, m)], axis=1)
    if len(pairs.shape) != 1 or pairs.pairs.shape != expected.shape or not np.array_equal(pairs.pairs, expected):
        raise ValueError("p-identity needs E on a line: its non-redundant pairs must be (x, x+1) for every x")
    if not np.all(pairs.levels > 0):
        raise ValueError("p-identity needs E(x, x+1) > 0 for every x")
    return pairs.levels.copy()


def difference_gram(gram: np.ndarray) -> np.ndarray:
    """``L^-T G L^-1`` (the Gram matrix in the prefix coordinates z = L c; column k of ``L^-1`` is ``e_k - e_{k+1}``)."""
    right = gram.copy()
    right[:, :-1] -= gram[:, 1:]
    both = right.copy()
    both[:-1, :] -= right[1:, :]
    return both


def p_identity_line_strategy(
    workload: Workload, pairs: PrivacyPairs, extra_rows: int | None = None, seed: int = 0
) -> tuple[DenseStrategyMatrix, np.ndarray, float]:
    """The optimised p-Identity strategy ``A = [M L_m[:m-1]; 1^T]`` for a line E (module docstring).

    Returns
    -------
    (A, noise scales, objective)
        A as a dense strategy matrix; the scales (1 on the rows of M, 0 on the
        noise-free total row) that make it E-LDP with every column budget tight;
        the objective ``2 f(Theta)`` (Proposition 2's error per user for this A
        and s with the least-squares B).
    """
    budgets = line_budgets(pairs)
    m = pairs.m
    if m < 2:
        raise ValueError("p-identity needs m >= 2")
    if workload.m != m:
        raise ValueError(f"the workload has {workload.m} cells but E has {m}")
    extra_rows = _extra_rows(m, extra_rows)
    gram = difference_gram(workload.gram())[:-1, :-1]
    result = optimize_p_identity(gram, budgets, extra_rows, np.random.default_rng(seed))
    prefix_rows = np.tril(np.ones((m - 1, m)))  # rows 0 .. m-2 of L_m: z_k = [x <= k]
    matrix = np.vstack([result.matrix @ prefix_rows, np.ones((1, m))])
    scales = np.concatenate([np.ones(result.matrix.shape[0]), [0.0]])
    return DenseStrategyMatrix(matrix, f"p-identity (p={extra_rows})"), scales, 2.0 * result.objective


def p_identity_factor(workload: Workload, extra_rows: int | None = None, seed: int = 0) -> DenseStrategyMatrix:
    """HDMM's p-Identity for a 1-D factor workload, every column of L1 norm 1 (module docstring, Kronecker)."""
    m = workload.m
    extra_rows = _extra_rows(m, extra_rows)
    result = optimize_p_identity(workload.gram(), np.ones(m), extra_rows, np.random.default_rng(seed))
    return DenseStrategyMatrix(result.matrix, f"p-identity (p={extra_rows})")


def _extra_rows(m: int, extra_rows: int | None) -> int:
    return max(1, round(m * EXTRA_ROWS_FRACTION)) if extra_rows is None else int(extra_rows)


def line_lower_bound(workload: Workload, pairs: PrivacyPairs) -> float:
    """``2 (trace (D G' D)^(1/2))^2 / (m - 1)``: no strategy has a smaller problem (1) error per user on a line E."""
    budgets = line_budgets(pairs)
    gram = difference_gram(workload.gram())[:-1, :-1] / np.outer(budgets, budgets)
    roots = np.sqrt(np.clip(np.linalg.eigvalsh(gram), 0.0, None))
    return float(2.0 * roots.sum() ** 2 / len(budgets))


@dataclass
class StrategyComparison:
    """Designed strategies for one workload and E: ``candidates`` by name, the ``best`` name, the ``baseline`` (L_m)."""

    candidates: dict[str, Strategy]
    best: str
    baseline: str = "prefix"

    def ratio(self, name: str) -> float:
        """Laplace error (problem (1)'s objective) of ``name`` over the baseline's."""
        return self.candidates[name].laplace_error(1) / self.candidates[self.baseline].laplace_error(1)


def design_named(workload: Workload, pairs: PrivacyPairs, name: str, branching: int = 4) -> Strategy:
    """Problem (1) for ``prefix``, ``identity`` or ``tree`` on every axis (alternating method for an over-complete A)."""
    return design_fixed(workload, pairs, named_strategy(name, pairs.shape, branching)).strategy


def design_fixed(
    workload: Workload, pairs: PrivacyPairs, matrix: StrategyMatrix, start_scales: np.ndarray | None = None
) -> AlternatingResult:
    """Problem (1) for a fixed A: the optimal scales for a square A or a Kronecker product (B fixed by its
    factors), the alternating method (:func:`~designer.metric.strategy.design_overcomplete`) otherwise.
    ``history`` has the one error of a direct design."""
    p, m = matrix.shape
    if p == m or isinstance(matrix, KroneckerStrategyMatrix):
        strategy = design_strategy(workload, pairs, matrix, None if p == m else np.ones(p))
        return AlternatingResult(strategy, [strategy.laplace_error(1)])
    return design_overcomplete(workload, pairs, matrix, start_scales, iterations=POLISH_ITERATIONS)


def optimize_strategy(
    workload: Workload, pairs: PrivacyPairs, family: str, branching: int = 4, extra_rows: int | None = None, seed: int = 0
) -> StrategyComparison:
    """Optimise A in ``family`` (``p-identity`` on a line, ``kronecker`` on a grid) and design the baselines.

    The baselines are designed at the same E: ``prefix`` (``L_m``, or its
    Kronecker product; on a line with uniform E this is the paper's
    ``s = 1/epsilon``), ``identity`` and ``tree`` (b-ary). Every candidate is a
    :class:`~designer.metric.strategy.Strategy` whose noise was designed by
    problem (1); certify them with :func:`~designer.metric.strategy.certify_strategy`.
    """
    if family == "p-identity":
        line_budgets(pairs)  # refuse an E that is not a line before any work
    elif family == "kronecker":
        if not isinstance(workload, KroneckerWorkload) or len(pairs.shape) < 2 or workload.shape != pairs.shape:
            raise ValueError("kronecker needs a Kronecker workload on the grid of E (D >= 2)")
    else:
        raise ValueError(f"unknown strategy family {family!r}; choose p-identity or kronecker")
    candidates = {name: design_named(workload, pairs, name, branching) for name in ("prefix", "identity", "tree")}
    if family == "p-identity":
        matrix, scales, _ = p_identity_line_strategy(workload, pairs, extra_rows, seed)
        candidates["p-identity"] = design_fixed(workload, pairs, matrix, scales).strategy
    else:
        factors = [p_identity_factor(factor, extra_rows, seed) for factor in workload.factors]
        candidates["kronecker p-identity"] = design_fixed(workload, pairs, KroneckerStrategyMatrix(factors)).strategy
    errors = {name: candidate.laplace_error(1) for name, candidate in candidates.items()}
    best = min(errors, key=errors.get)
    if errors[best] >= errors["prefix"] * (1 - TIE_RTOL):
        best = "prefix"  # an optimiser that only returns L_m again (up to round-off) does not replace it
    return StrategyComparison(candidates, best)
