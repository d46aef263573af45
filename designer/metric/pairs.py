"""The pairs on which Proposition 1 must be checked (metric-ldp-range-counting.md, Section III-A).

For a strategy A the privacy loss of a pair, ``L(x, x') = sum_k |A[k, x] -
A[k, x']| / s_k`` (Proposition 1), is a weighted L1 distance between columns of
A: a pseudo-metric. So ``L <= E`` on the non-redundant pairs of E (those that no
path of other pairs implies, :meth:`designer.spec.PrivacyMatrix.nonredundant_pairs`)
gives ``L <= E`` everywhere, by the triangle inequality along the implying paths.
:class:`PrivacyPairs` holds those pairs and their levels (the constraints of
problem (1)); for the metric families it is built without the ``m x m`` matrix
(m = 65,536 has 4.3e9 pairs), and there the implication is exact, so the
certificate checks the edges only:

* the line ``E = epsilon |x - x'|``: the ``m - 1`` adjacent pairs at level epsilon
  (every other pair is a path of adjacent pairs of the same total length);
* the L1 grid ``E = epsilon ||x - x'||_1`` on ``[m_1] x ... x [m_D]``
  (Section IV): the grid edges (cells differing by one in one coordinate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from designer.spec import PrivacyMatrix


@dataclass(frozen=True)
class PrivacyPairs:
    """Unordered pairs ``(x, x')`` (x < x') with the level ``E`` that Proposition 1 must meet on each.

    Attributes
    ----------
    shape : tuple of int
        The domain ``(m_1, ..., m_D)``; cells in C order (``m = prod m_d``).
    pairs : int64 array (n, 2)
        The non-redundant pairs, smaller index first.
    levels : float array (n,)
        ``min(E[x, x'], E[x', x])`` over the orders that are non-redundant.
    name : str
    matrix : PrivacyMatrix or None
        The explicit E these pairs were read from (None for a metric family). The
        non-redundant pairs of an explicit E are decided in floating point with a
        relative tolerance, so its certificate checks every pair of the matrix.
    """

    shape: tuple[int, ...]
    pairs: np.ndarray = field(repr=False)
    levels: np.ndarray = field(repr=False)
    name: str
    matrix: PrivacyMatrix | None = field(default=None, repr=False, compare=False)

    @property
    def m(self) -> int:
        """Number of cells."""
        return int(np.prod(self.shape, dtype=np.int64))

    @classmethod
    def from_matrix(cls, epsilon: PrivacyMatrix | np.ndarray) -> "PrivacyPairs":
        """The non-redundant pairs of an explicit E (symmetrised: L is symmetric, so the smaller level binds)."""
        epsilon = epsilon if isinstance(epsilon, PrivacyMatrix) else PrivacyMatrix(epsilon)
        ordered = epsilon.nonredundant_pairs()
        if ordered.size == 0:
            return cls((epsilon.k,), np.zeros((0, 2), dtype=np.int64), np.zeros(0), epsilon.name, epsilon)
        values = epsilon.epsilon[ordered[:, 0], ordered[:, 1]]
        keys, inverse = np.unique(np.sort(ordered, axis=1), axis=0, return_inverse=True)
        levels = np.full(len(keys), np.inf)
        np.minimum.at(levels, inverse.ravel(), values)
        return cls((epsilon.k,), keys.astype(np.int64), levels, epsilon.name, epsilon)

    @classmethod
    def line(cls, m: int, epsilon: float) -> "PrivacyPairs":
        """``E = epsilon |x - x'|`` on ``0 .. m-1``: the adjacent pairs."""
        return cls.grid_l1((m,), epsilon)

    @classmethod
    def grid_l1(cls, shape: Sequence[int], epsilon: float) -> "PrivacyPairs":
        """``E = epsilon ||x - x'||_1`` on a grid (cells in C order): the grid edges, at level epsilon."""
        shape = tuple(int(m) for m in shape)
        if not shape or min(shape) < 1:
            raise ValueError(f"grid sizes must be positive integers, got {shape}")
        if not (np.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        cells = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
        edges = []
        for axis in range(len(shape)):
            first = np.delete(cells, -1, axis=axis).ravel()
            edges.append(np.stack([first, first + int(np.prod(shape[axis + 1 :], dtype=np.int64))], axis=1))
        pairs = np.concatenate(edges) if edges else np.zeros((0, 2), dtype=np.int64)
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
        name = f"line {epsilon:g}|x - x'|" if len(shape) == 1 else f"L1 grid {'x'.join(map(str, shape))} {epsilon:g}||x - x'||_1"
        return cls(shape, pairs.astype(np.int64), np.full(len(pairs), float(epsilon)), name)
