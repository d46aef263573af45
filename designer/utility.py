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


def validated_prior(prior, k: int) -> np.ndarray:
    """``prior`` as a float vector of ``k`` non-negative entries summing to 1 (within 1e-9), else ValueError."""
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
    prior = validated_prior(prior, columns.shape[0])
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


#: Convex generators ``f`` (``f(1) = 0``) of the f-divergences offered as design
#: utilities: ``D_f(P || R) = sum_y R_y f(P_y / R_y)``.
F_DIVERGENCES = {
    "kl": lambda t: np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0),
    "chi-square": lambda t: (t - 1.0) ** 2,
    "hellinger": lambda t: (np.sqrt(t) - 1.0) ** 2,
    "total-variation": lambda t: 0.5 * np.abs(t - 1.0),
}


def column_f_divergence(first, second, columns, divergence: str = "kl") -> np.ndarray:
    """Per-column contribution to ``D_f(first Q || second Q)``.

    For hypotheses ``X ~ first`` and ``X ~ second`` observed through a channel
    Q, the output distributions are ``first @ Q`` and ``second @ Q`` and

        D_f(first Q || second Q) = sum_y mu_f(Q[:, y]),
        mu_f(q) = (second . q) f((first . q) / (second . q)),

    the perspective of a convex f, hence sublinear in q (Kairouz, Oh,
    Viswanath 2014, "f-divergence" utilities; the same reduction as Theorem
    12 of robust-ldp-chi-square.md). ``divergence`` names f in
    :data:`F_DIVERGENCES`. ``second`` must be positive on every symbol (so
    ``second . q > 0`` for every non-zero column).

    Returns
    -------
    ndarray, shape (n,)
    """
    if divergence not in F_DIVERGENCES:
        raise ValueError(f"unknown f-divergence {divergence!r}; choose one of {', '.join(F_DIVERGENCES)}")
    columns = np.asarray(columns, dtype=float)
    columns = columns[:, None] if columns.ndim == 1 else columns
    k = columns.shape[0]
    first = validated_prior(first, k)
    second = validated_prior(second, k)
    if np.any(second <= 0):
        raise ValueError("the second (reference) distribution must be positive on every symbol")
    first_mass = first @ columns
    second_mass = second @ columns
    safe = np.where(second_mass > 0, second_mass, 1.0)
    values = np.where(second_mass > 0, second_mass * F_DIVERGENCES[divergence](first_mass / safe), 0.0)
    return values


def f_divergence(first, second, channel, divergence: str = "kl") -> float:
    """``D_f(first Q || second Q)`` for a channel (or k x m array) Q; see :func:`column_f_divergence`."""
    matrix = getattr(channel, "matrix", channel)
    return float(np.sum(column_f_divergence(first, second, np.asarray(matrix, dtype=float), divergence)))
