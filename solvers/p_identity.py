"""HDMM's p-Identity strategy optimisation with per-column L1 budgets.

API
---
``optimize_p_identity(gram, budgets, extra_rows, rng, max_iterations=500, restarts=3) -> PIdentityResult``

McKenna, Miklau, Hay, Machanavajjhala, "Optimizing error of high-dimensional
statistical queries under differential privacy" (VLDB 2018), Section 4.3:
the strategy is ``M(Theta) = [I; Theta] diag(delta)`` with ``Theta >= 0``
(``extra_rows x n``) and ``delta_j = b_j / (1 + sum_i Theta[i, j])``, so that
column j of M has L1 norm exactly ``b_j`` (HDMM: ``b_j = 1``, the L1
sensitivity). The objective is the least-squares error of a workload with
Gram matrix G under unit-variance noise per row,

    f(Theta) = trace((M^T M)^-1 G) = trace(G_hat) - trace(K^-1 Theta G_hat Theta^T),

with ``G_hat = S G S``, ``S = diag(1 / delta)``, ``K = I + Theta Theta^T``
(Woodbury), minimised by L-BFGS-B over ``Theta >= 0`` from ``restarts`` random
starts (the best is kept: on all ranges of m = 64 with 4 extra rows one start
stalls at ``Theta = 0`` and one drifts to ``Theta ~ 10^4``, both at the identity's
objective, while a third reaches 0.70 of it). Every evaluation costs one
``extra_rows x n`` by ``n x n`` product. The gradient (derived here, checked
against finite differences in the tests) is

    grad = -2 K^-1 (Theta G_hat - Theta G_hat Theta^T K^-1 Theta) + 1 v^T,
    v_j = 2 (G S P)[j, j] / b_j,   P = (I + Theta^T Theta)^-1 = I - Theta^T K^-1 Theta.

``Theta = 0`` is ``M = diag(b)`` (the identity strategy), whose objective is
``sum_j G[j, j] / b_j^2``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PIdentityResult:
    """The optimised ``theta``, the strategy ``matrix`` M, its ``objective`` f and the identity's (``Theta = 0``)."""

    theta: np.ndarray
    matrix: np.ndarray
    objective: float
    identity_objective: float
    iterations: int


def p_identity_matrix(theta: np.ndarray, budgets: np.ndarray) -> np.ndarray:
    """``M = [I; Theta] diag(b / (1 + 1^T Theta))``: every column's L1 norm is its budget."""
    n = theta.shape[1]
    delta = budgets / (1.0 + theta.sum(axis=0))
    return np.vstack([np.eye(n), theta]) * delta[None, :]


def p_identity_objective(theta: np.ndarray, gram: np.ndarray, budgets: np.ndarray) -> tuple[float, np.ndarray]:
    """``f(Theta)`` and its gradient (module docstring)."""
    sigma = (1.0 + theta.sum(axis=0)) / budgets
    scaled = theta * sigma[None, :]  # Theta S
    product = scaled @ gram  # Theta S G, (p, n)
    theta_g = product * sigma[None, :]  # Theta G_hat
    inner = theta_g @ theta.T  # Theta G_hat Theta^T
    K = np.eye(theta.shape[0]) + theta @ theta.T
    k_theta = np.linalg.solve(K, theta)  # K^-1 Theta
    value = float(np.sum(np.diag(gram) * sigma**2) - np.sum(k_theta * theta_g))  # trace(K^-1 Theta G_hat Theta^T)
    direct = np.linalg.solve(K, theta_g - inner @ k_theta)
    diagonal = np.diag(gram) * sigma - np.sum(product * k_theta, axis=0)  # (G S P)[j, j]
    gradient = -2.0 * direct + (2.0 * diagonal / budgets)[None, :]
    return value, gradient


def optimize_p_identity(
    gram: np.ndarray,
    budgets: np.ndarray,
    extra_rows: int,
    rng: np.random.Generator,
    max_iterations: int = 500,
    restarts: int = 3,
) -> PIdentityResult:
    """Minimise ``f`` over ``Theta >= 0`` (L-BFGS-B from ``restarts`` random starts; see module docstring)."""
    from scipy.optimize import minimize

    gram = np.asarray(gram, dtype=float)
    budgets = np.asarray(budgets, dtype=float)
    n = gram.shape[0]
    if gram.shape != (n, n) or budgets.shape != (n,) or not np.all(budgets > 0):
        raise ValueError("need an n x n Gram matrix and n positive budgets")
    if extra_rows < 1:
        raise ValueError(f"extra_rows must be >= 1, got {extra_rows}")
    identity = float(np.sum(np.diag(gram) / budgets**2))

    def objective(flat):
        value, gradient = p_identity_objective(flat.reshape(extra_rows, n), gram, budgets)
        return value, gradient.ravel()

    best = None
    for _ in range(max(1, restarts)):
        start = rng.uniform(0.0, 1.0, size=extra_rows * n)
        result = minimize(
            objective, start, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * start.size,
            options={"maxiter": max_iterations},
        )
        theta = result.x.reshape(extra_rows, n)
        value = p_identity_objective(theta, gram, budgets)[0]
        if best is None or value < best.objective:
            best = PIdentityResult(theta, p_identity_matrix(theta, budgets), value, identity, int(result.nit))
    return best
