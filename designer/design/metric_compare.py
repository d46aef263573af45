"""Baselines beside the optimal expected loss on metric E: exponential mechanism, randomised response, truncated geometric.

Each baseline is a k x k channel (outputs = inputs) followed by the consumer's optimal remap to the
loss's reports (:func:`designer.design.geometric.optimal_remap`: post-processing, so the remapped
channel keeps the baseline's guarantee), and is certified against E like any design:

- **exponential mechanism** ``Q[x, y] ∝ exp(-E*[x, y] / 2)`` (McSherry and Talwar, FOCS 2007, with the
  closure ``E*`` as the distance; for ``E = epsilon d`` this is ``exp(-epsilon d(x, y) / 2)``). For a
  symmetric ``E*`` it is E-LDP by the triangle inequality: ``Q[x, y] / Q[x', y] =
  exp((E*[x', y] - E*[x, y]) / 2) Z_x' / Z_x <= exp(E*[x, x'] / 2) exp(E*[x, x'] / 2)``;
- **randomised response** at the smallest level ``min E`` (k-ary, Warner 1965 / Kairouz et al. 2016):
  ``min E``-LDP, hence E-LDP;
- **truncated geometric mechanism** where it applies (E is ``epsilon |i - j|`` after relabelling,
  :mod:`designer.design.geometric`); with the optimal remap it is the optimum for monotone losses.

Where E's closure reaches beyond the double range (a line of 300 values at epsilon 3 reaches 897), the
exponential mechanism takes the truncated closure of :func:`designer.design.repair.within_doubles` as its
distance (a metric below ``E*``, so the argument above still gives E-LDP) and the truncated geometric
mechanism is repaired into it: otherwise their far entries underflow and the comparison had stopped on a
subnormal entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.certify import certify
from designer.channel import Channel
from designer.design.geometric import line_order, optimal_remap, truncated_geometric
from designer.design.repair import repair_into_cone, within_doubles
from designer.spec import PrivacyMatrix


@dataclass(frozen=True)
class BaselineLoss:
    """One baseline's expected loss (after the optimal remap), its ratio to the optimum and its certificate verdict."""

    name: str
    loss: float
    ratio: float
    certified: bool


def exponential_mechanism(privacy: PrivacyMatrix) -> np.ndarray:
    """``Q[x, y] ∝ exp(-E*[x, y] / 2)`` (rows sum to 1); E's closure must be symmetric (a metric E)."""
    closure = privacy.closure().epsilon
    if not np.array_equal(closure, closure.T):
        raise ValueError("the exponential mechanism needs a symmetric E (a metric)")
    logs = -closure / 2
    weights = np.exp(logs - logs.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def randomised_response(k: int, epsilon: float) -> np.ndarray:
    """k-ary randomised response at ``epsilon``: ``e^epsilon / (e^epsilon + k - 1)`` on the diagonal."""
    channel = np.full((k, k), 1.0 / (np.exp(epsilon) + k - 1))
    np.fill_diagonal(channel, np.exp(epsilon) / (np.exp(epsilon) + k - 1))
    return channel


def baseline_channels(privacy: PrivacyMatrix) -> list[tuple[str, np.ndarray]]:
    """``(name, k x k channel)`` of every baseline of the module docstring that applies to E."""
    k = privacy.k
    baselines = []
    representable = within_doubles(privacy)
    closure = representable.closure().epsilon
    if np.array_equal(closure, closure.T):
        baselines.append(("exponential mechanism", exponential_mechanism(representable)))
    off = privacy.epsilon[~np.eye(k, dtype=bool)]
    smallest = float(off.min()) if off.size else 0.0
    if np.isfinite(smallest):
        baselines.append((f"randomised response (epsilon {smallest:g})", randomised_response(k, smallest)))
    line = line_order(privacy)
    if line is not None:
        order, epsilon = line
        geometric = np.empty((k, k))
        geometric[np.ix_(order, order)] = truncated_geometric(k, epsilon)
        if representable is not privacy:
            geometric = repair_into_cone(representable, geometric)
        baselines.append((f"truncated geometric (epsilon {epsilon:g})", geometric))
    return baselines


def compare_expected_loss(privacy: PrivacyMatrix, loss, prior, optimum: float) -> list[BaselineLoss]:
    """Each baseline's expected loss after the optimal remap, its ratio to ``optimum`` and whether it certifies (prior default uniform)."""
    loss = np.asarray(loss, dtype=float)
    prior = np.full(privacy.k, 1.0 / privacy.k) if prior is None else np.asarray(prior, dtype=float)
    rows = []
    for name, channel in baseline_channels(privacy):
        _, remapped = optimal_remap(channel, prior, loss)
        value = float(np.sum(prior[:, None] * loss * remapped))
        verdict = certify(Channel(remapped), privacy).certified
        rows.append(BaselineLoss(name, value, value / optimum if optimum > 0 else np.inf, verdict))
    return rows
