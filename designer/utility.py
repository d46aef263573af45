"""Information-theoretic utilities of channels.

For a prior ``p`` on the inputs, mutual information splits over output columns:

    I_p(X; Y) = sum_y mu(Q[:, y]),
    mu(q) = sum_x p_x q_x log(q_x / sum_x' p_x' q_x')

(Kairouz, Oh, Viswanath 2014; robust-ldp-chi-square.md, Appendix A, eq. after
(74)). ``mu`` is positively homogeneous and convex (sublinear), which is what
makes the optimal channel a combination of scaled cone vertices (Theorem 12 of
robust-ldp-chi-square.md). Natural logarithms (nats) throughout.
"""

from __future__ import annotations

import numpy as np


def _validated_prior(prior, k: int) -> np.ndarray:
    prior = np.asarray(prior, dtype=float).ravel()
    if prior.shape != (k,):
        raise ValueError(f"prior must have {k} entries, got {prior.size}")
    if np.any(~np.isfinite(prior)) or np.any(prior < 0) or abs(prior.sum() - 1) > 1e-9:
        raise ValueError("prior must be non-negative and sum to 1")
    return prior


def entropy(distribution) -> float:
    """Shannon entropy ``H(p) = -sum p log p`` in nats (``0 log 0 = 0``)."""
    p = np.asarray(distribution, dtype=float).ravel()
    positive = p[p > 0]
    return float(-(positive * np.log(positive)).sum())


def column_information(prior, columns) -> np.ndarray:
    """``mu(q)`` for each column q: the contribution of one output to ``I(X; Y)``.

    Parameters
    ----------
    prior : array_like, shape (k,)
    columns : array_like, shape (k,) or (k, n)
        Non-negative, not necessarily normalised (``mu`` is homogeneous).

    Returns
    -------
    float or ndarray, shape (n,)
    """
    columns = np.asarray(columns, dtype=float)
    single = columns.ndim == 1
    columns = columns[:, None] if single else columns
    prior = _validated_prior(prior, columns.shape[0])
    weighted = prior[:, None] * columns
    output_mass = weighted.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(weighted > 0, weighted * np.log(columns / output_mass), 0.0)
    values = terms.sum(axis=0)
    return float(values[0]) if single else values


def mutual_information(prior, channel) -> float:
    """``I_p(X; Y)`` in nats for ``X ~ prior`` and ``Y ~ channel[X, :]``.

    ``channel`` is a :class:`~designer.channel.Channel` or a k x m array.
    """
    matrix = getattr(channel, "matrix", channel)
    return float(np.sum(column_information(prior, np.asarray(matrix, dtype=float))))
