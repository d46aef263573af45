"""Columns of the E-LDP cone from subsets: the lowest (or highest) column that is 1 on a subset S.

For the closure E* of E (shortest paths, :meth:`designer.spec.PrivacyMatrix.closure`) and a
non-empty subset S of inputs,

    low_S(x)  = max_{s in S} exp(-E*[s, x])      (the smallest values a column equal to 1 on S allows)
    high_S(x) = min_{s in S} exp(E*[x, s])       (the largest ones)

are points of the cone ``C_E = {v >= 0 : v_x <= e^{E[x, x']} v_x'}``. Proof for ``low_S``: for any
x, x' and s in S, the triangle inequality of the closure gives ``E*[s, x'] <= E*[s, x] + E*[x, x']``,
so ``low_S(x') >= exp(-E*[s, x]) exp(-E*[x, x'])`` for every s, i.e.
``low_S(x) <= e^{E*[x, x']} low_S(x') <= e^{E[x, x']} low_S(x')``; ``high_S`` is the mirror image
(``E*[x, s] <= E*[x, x'] + E*[x', s]``). Both are max-plus (tropical) combinations of the closure's
rows, the shape of the optimal columns of subset selection (Ye and Barg, IEEE Trans. Inf. Theory
2018: ``e^eps`` on S, 1 elsewhere) and of their E-LDP analogues.

Pricing over subsets: with master duals y and prior p, a column v improves the master iff its
reduced cost ``mu(v) / (p . v) - y . v / (p . v) > 0`` (``mu`` the column's mutual-information
term, positively homogeneous). :func:`subset_pricing` maximises it by local search over S
(best single flip per step, from many starts); it is a heuristic and proves nothing — every
column it returns is a point of the cone, so the master stays a feasible (lower-bound) design.
"""

from __future__ import annotations

import numpy as np

from designer.utility import column_information


def subset_columns(closure: np.ndarray, subsets: np.ndarray, high: bool = False) -> np.ndarray:
    """``low_S`` (or ``high_S``) of the module docstring for each row of the 0/1 matrix ``subsets`` (n, k)."""
    subsets = np.asarray(subsets, dtype=bool)
    generators = _generators(closure, high)
    columns = np.stack([generators[row].max(axis=0) for row in subsets])
    return 1.0 / columns if high else columns


def reduced_costs(prior: np.ndarray, duals: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``(mu(v) - y . v) / (p . v)`` for each row v of ``columns``: the reduced cost of the normalised column."""
    mass = columns @ prior
    return (column_information(prior, columns.T) - columns @ duals) / mass


def subset_pricing(
    closure: np.ndarray,
    prior: np.ndarray,
    duals: np.ndarray,
    starts: np.ndarray,
    max_steps: int = 100,
    tolerance: float = 1e-9,
) -> np.ndarray:
    """Local search over subsets S from the 0/1 rows of ``starts``; improving columns, each with ``p . v = 1``.

    Both families (``low_S`` and ``high_S``) are searched; a step flips the one input that raises
    the reduced cost most (all k flips evaluated at once, O(k^2)) and the search stops at a local maximum.
    """
    k = closure.shape[0]
    found = []
    for high in (False, True):
        generators = _generators(closure, high)
        for start in np.asarray(starts, dtype=bool):
            subset = start.copy() if start.any() else np.eye(k, dtype=bool)[0]
            cost = -np.inf
            for _ in range(max_steps):
                members = np.flatnonzero(subset)
                rows = generators[members]
                order = np.argsort(-rows, axis=0)
                best = rows[order[0], np.arange(k)]
                second = rows[order[1], np.arange(k)] if members.size > 1 else np.zeros(k)
                neighbours = np.maximum(best[None, :], generators)  # add s (rows s in S: unchanged)
                neighbours[members] = np.where(members[order[0]][None, :] == members[:, None], second[None, :], best[None, :])
                if members.size == 1:
                    neighbours[members] = best  # never empty: removing the last member is no move
                columns = 1.0 / neighbours if high else neighbours
                values = reduced_costs(prior, duals, columns)
                if members.size == 1:
                    values[members] = -np.inf
                flip = int(np.argmax(values))
                if values[flip] <= cost + 1e-13:
                    break
                subset[flip] = ~subset[flip]
                cost = values[flip]
            if cost > tolerance:
                column = generators[subset].max(axis=0)  # subset_columns for this subset, from the generators at hand
                column = 1.0 / column if high else column
                found.append(column / (column @ prior))
    if not found:
        return np.zeros((0, k))
    return np.unique(np.round(np.vstack(found), 14), axis=0)


def _generators(closure: np.ndarray, high: bool) -> np.ndarray:
    """Rows M[s] with ``low_S = max_{s in S} M[s]`` (``exp(-E*)``) or ``high_S = 1 / max_{s in S} M[s]`` (``exp(-E*^T)``)."""
    return np.exp(-closure.T) if high else np.exp(-closure)
