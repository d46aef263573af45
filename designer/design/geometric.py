"""The line in closed form: the truncated geometric mechanism and the consumer's optimal remap.

On a line ``E[x, x'] = epsilon |x - x'|`` (a count query under epsilon-DP: neighbouring counts
differ by one), Ghosh, Roughgarden and Sundararajan (*Universally utility-maximizing privacy
mechanisms*, STOC 2009, and SIAM J. Comput. 41, 2012) prove that the **truncated geometric
mechanism** on ``{0, ..., k-1}``, with ``alpha = e^{-epsilon}``,

    G[i, j] = alpha^{|i-j|} (1 - alpha) / (1 + alpha)      for 0 < j < k - 1,
    G[i, 0] = alpha^i / (1 + alpha),   G[i, k-1] = alpha^{k-1-i} / (1 + alpha),

followed by the consumer's optimal remap is optimal for **every** prior and every loss
``loss[i, r]`` that is non-decreasing in ``|i - r|`` for each i (absolute error, squared error,
0/1 loss): no epsilon-DP channel has a smaller expected loss. The remap is the Bayes decision:
an output j is reported as ``r(j) = argmin_r sum_i prior_i G[i, j] loss[i, r]``, and the designed
channel is the composition ``Q[i, r] = sum_{j : r(j) = r} G[i, j]`` (post-processing keeps
epsilon-DP). Its expected loss is ``sum_j min_r sum_i prior_i G[i, j] loss[i, r]``.

E need not be written in line order: :func:`line_order` finds a relabelling (a permutation)
under which the closure of E is ``epsilon |i - j|``, so any such E goes to the closed form.
"""

from __future__ import annotations

import numpy as np

from designer.spec import PrivacyMatrix

#: Relative tolerance of :func:`line_order` when comparing E with ``epsilon |i - j|``.
LINE_RTOL = 1e-12


def truncated_geometric(k: int, epsilon: float) -> np.ndarray:
    """The k x k truncated geometric mechanism ``G`` of the module docstring (rows sum to 1)."""
    if k == 1:
        return np.ones((1, 1))
    alpha = np.exp(-epsilon)
    index = np.arange(k)
    channel = np.exp(-epsilon * np.abs(index[:, None] - index[None, :])) * (-np.expm1(-epsilon) / (1 + alpha))
    channel[:, 0] = np.exp(-epsilon * index) / (1 + alpha)
    channel[:, -1] = np.exp(-epsilon * (k - 1 - index)) / (1 + alpha)
    return channel


def optimal_remap(channel, prior, loss) -> tuple[np.ndarray, np.ndarray]:
    """The consumer's Bayes remap of a channel's outputs to reports, and the remapped channel.

    Parameters
    ----------
    channel : array_like (k, n)
    prior : array_like (k,)
    loss : array_like (k, m)
        ``loss[i, r]``: reporting r when the truth is i.

    Returns
    -------
    reports : ndarray (n,) of int
        ``reports[j] = argmin_r sum_i prior_i channel[i, j] loss[i, r]`` (the first on ties).
    remapped : ndarray (k, m)
        ``remapped[:, r] = sum_{j : reports[j] = r} channel[:, j]``; its expected loss is the least any
        remap of ``channel`` achieves.
    """
    channel = np.asarray(channel, dtype=float)
    posterior_loss = (np.asarray(prior, dtype=float)[:, None] * channel).T @ np.asarray(loss, dtype=float)
    reports = np.argmin(posterior_loss, axis=1)
    remapped = np.zeros((channel.shape[0], np.shape(loss)[1]))
    np.add.at(remapped.T, reports, channel.T)
    return reports, remapped


def line_order(privacy: PrivacyMatrix, closure: bool = True) -> tuple[np.ndarray, float] | None:
    """A relabelling that makes E a line: ``(order, epsilon)`` with ``E*[order[i], order[j]] = epsilon |i - j|``.

    E itself is tried first (O(k^2)); when it is not a line and ``closure`` is true, its
    shortest-path closure ``E*`` (which admits the same channels) is tried. The two ends of a line
    are the farthest pair, so ``order`` sorts the symbols by their level from the end farthest
    from symbol 0. Entries must agree to :data:`LINE_RTOL` relative; ``epsilon > 0``.

    Returns
    -------
    (order, epsilon) or None
        None when no relabelling makes E (or E*) a line with one positive finite epsilon.
    """
    if privacy.k < 2:
        return None
    found = _as_line(privacy.epsilon)
    if found is None and closure:  # the closure costs O(k^3): only when E itself is not a line
        found = _as_line(privacy.closure().epsilon)
    return found


def _as_line(levels: np.ndarray) -> tuple[np.ndarray, float] | None:
    if not np.all(np.isfinite(levels)):
        return None
    end = int(np.argmax(levels[0]))
    order = np.argsort(levels[end], kind="stable")
    if order[0] != end:
        return None
    epsilon = float(levels[end, order[1]])
    if not epsilon > 0:
        return None
    index = np.arange(levels.shape[0])
    target = epsilon * np.abs(index[:, None] - index[None, :])
    if not np.allclose(levels[np.ix_(order, order)], target, rtol=LINE_RTOL, atol=0.0):
        return None
    return order, epsilon


def monotone_about_truth(loss: np.ndarray) -> bool:
    """Whether ``loss[i, r]`` (square, line order) is non-decreasing in ``|i - r|`` on each side of i, for every i."""
    loss = np.asarray(loss, dtype=float)
    k = loss.shape[0]
    if loss.shape != (k, k):
        return False
    steps = np.diff(loss, axis=1)  # steps[i, r] = loss[i, r+1] - loss[i, r]
    right = np.arange(k - 1)[None, :] >= np.arange(k)[:, None]  # r >= i: moving away to the right
    return bool(np.all(steps[right] >= 0) and np.all(steps[~right] <= 0))


def design_line(order: np.ndarray, epsilon: float, loss, prior) -> np.ndarray:
    """The optimal channel of the module docstring, in E's own labels (rows inputs, columns reports).

    ``order`` and ``epsilon`` come from :func:`line_order`; ``loss`` (k, k) is indexed in E's labels.
    """
    geometric = truncated_geometric(order.size, epsilon)
    in_line = np.ix_(order, order)
    _, remapped = optimal_remap(geometric, np.asarray(prior, dtype=float)[order], np.asarray(loss, dtype=float)[in_line])
    channel = np.empty_like(remapped)
    channel[in_line] = remapped
    return channel
