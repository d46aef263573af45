"""Strategy matrices A of the E-LDP matrix mechanism, dense or structured (metric-ldp-range-counting.md, Section III).

A strategy matrix (p x m) answers what problem (1) and Proposition 1 need:

* :meth:`StrategyMatrix.costs` — the squared column norms ``||B[:, k]||^2`` of
  the reconstruction B with ``B A = W`` that minimises Proposition 2's error,
  computed from the workload's Gram matrix ``G = W^T W`` (never W). For a
  square invertible A, ``B = W A^-1`` and the costs are the diagonal of
  ``A^-T G A^-1``; for ``p > m`` with noise scales s, B minimises
  ``sum_k s_k^2 ||B[:, k]||^2`` subject to ``B A = W``, i.e. ``B = W Z^T`` with
  Z the top block of the KKT inverse ``[[S^2, A], [A^T, 0]]^-1 [0; I]``, and
  the costs are the diagonal of ``Z G Z^T``;
* :meth:`StrategyMatrix.difference_pattern` — the rows where two columns
  differ, for the pairs of Proposition 1 (``|A (h_x - h_x')|`` is sparse for
  structured strategies: one row per adjacent pair for ``L_m``);
* :meth:`StrategyMatrix.columns` and :meth:`StrategyMatrix.entries` — exact
  entries (every entry lies on its row's dyadic lattice,
  :meth:`StrategyMatrix.lattice_exponents`);
* :meth:`StrategyMatrix.estimate` — ``x`` with ``B y = W x`` (the collector's
  answer is ``W x``, evaluated implicitly).

Structured kinds: :class:`PrefixStrategyMatrix` (``L_m`` of Section III-B, its
inverse the bidiagonal difference matrix, so its costs are
``G[k, k] - 2 G[k, k+1] + G[k+1, k+1]`` at any m), :class:`IdentityStrategyMatrix`,
and :class:`KroneckerStrategyMatrix` (``A_1 (x) ... (x) A_D`` for D-dimensional
domains: for a Kronecker workload the costs are the Kronecker product of the
factors' costs). :class:`DenseStrategyMatrix` holds any A.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from designer.metric.workloads import KroneckerWorkload, UnionWorkload, Workload
from solvers.kronecker import mode_product

#: Bits of a strategy row kept on its lattice (a double has 53; see :func:`snap_to_lattice`).
LATTICE_BITS = 52
#: Pairs compared per block by the generic :meth:`StrategyMatrix.difference_pattern`.
PAIR_BLOCK = 512
#: Relative tolerance on ``W (Z^T A - I) = 0`` (the reconstruction answers the workload), through the Gram matrix.
RECONSTRUCTION_RTOL = 1e-8


def snap_to_lattice(strategy_matrix: np.ndarray, bits: int = LATTICE_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Each row of A on its coarsest dyadic lattice ``2^g Z`` spanning at most ``bits`` bits.

    Every double is ``M 2^e`` with an odd integer M, so row k lies exactly on
    ``2^g_k Z`` with ``g_k`` the smallest such e over its non-zero entries. When
    the row's largest entry needs more than ``bits`` bits on that lattice, g_k is
    raised to ``top - bits`` (``|A[k, :]| < 2^top``) and the row rounded to it:
    each entry moves by at most ``2^(top - bits - 1)``, one unit in the last place
    of the largest entry for ``bits = 52``. Integer and dyadic strategies (prefix,
    identity, 0/1 CSV files) never move. All-zero rows get ``g = 0``.

    Returns
    -------
    (snapped A, g) : float array (p, m) on the lattices, int64 array (p,)
    """
    A = np.atleast_2d(np.asarray(strategy_matrix, dtype=float))
    mantissas, exponents = np.frexp(A)  # A = mantissa 2^exponent, 0.5 <= |mantissa| < 1
    integers = np.abs(np.ldexp(mantissas, 53)).astype(np.int64)  # A = +-integers 2^(exponent - 53)
    lowest = np.frexp((integers & -integers).astype(float))[1] - 1  # trailing zero bits
    nonzero = A != 0
    finest = np.where(nonzero, exponents - 53 + lowest, 10**6).min(axis=1, initial=10**6)
    top = np.where(nonzero, exponents, -(10**6)).max(axis=1, initial=-(10**6))
    lattice = np.where(nonzero.any(axis=1), np.maximum(finest, top - bits), 0).astype(np.int64)
    snapped = np.ldexp(np.rint(np.ldexp(A, -lattice[:, None])), lattice[:, None])
    return snapped, lattice


class StrategyMatrix(ABC):
    """A p x m strategy matrix (see module docstring); subclasses implement the structure."""

    shape: tuple[int, int]
    name: str

    @abstractmethod
    def lattice_exponents(self) -> np.ndarray:
        """``g_k``: every entry of row k is an integer multiple of ``2^g_k`` with at most 52 bits."""

    @abstractmethod
    def entries(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``A[rows, columns]`` elementwise, exactly."""

    @abstractmethod
    def columns(self, xs: np.ndarray) -> np.ndarray:
        """``A[:, xs]`` as a dense (p, len(xs)) array."""

    @abstractmethod
    def costs(self, workload: Workload, weights: np.ndarray | None = None) -> np.ndarray:
        """``||B[:, k]||^2`` for the least-squares reconstruction (weights = noise scales; see module docstring)."""

    @abstractmethod
    def estimate(self, totals: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """``x`` with ``B totals = W x`` for the reconstruction of :meth:`costs` (same weights)."""

    def dense(self) -> np.ndarray:
        """A as a dense array (small sizes)."""
        return self.columns(np.arange(self.shape[1]))

    def difference_pattern(self, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(pair, row)`` index arrays of the non-zeros of ``A[:, first[i]] - A[:, second[i]]``, sorted by pair."""
        pair_parts, row_parts = [], []
        for start in range(0, len(first), PAIR_BLOCK):
            stop = min(start + PAIR_BLOCK, len(first))
            differs = self.columns(first[start:stop]) != self.columns(second[start:stop])  # (p, block)
            rows, pairs = np.nonzero(differs)
            order = np.argsort(pairs, kind="stable")
            pair_parts.append(pairs[order] + start)
            row_parts.append(rows[order])
        if not pair_parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(pair_parts).astype(np.int64), np.concatenate(row_parts).astype(np.int64)

    def sensitivity(self, first: np.ndarray, second: np.ndarray):
        """``|A (h_x - h_x')|`` for the pairs as a sparse (pairs x p) matrix (Proposition 1's coefficients)."""
        import scipy.sparse as sp

        pairs, rows = self.difference_pattern(first, second)
        values = np.abs(self.entries(rows, first[pairs]) - self.entries(rows, second[pairs]))
        return sp.csr_matrix((values, (pairs, rows)), shape=(len(first), self.shape[0]))

    def _check_workload(self, workload: Workload) -> None:
        if workload.m != self.shape[1]:
            raise ValueError(f"the workload has {workload.m} cells but the strategy has {self.shape[1]} columns")


class DenseStrategyMatrix(StrategyMatrix):
    """Any A, each row first put on its dyadic lattice (:func:`snap_to_lattice`)."""

    def __init__(self, matrix: np.ndarray, name: str = "matrix", bits: int = LATTICE_BITS):
        A = np.atleast_2d(np.asarray(matrix, dtype=float))
        if not np.all(np.isfinite(A)):
            raise ValueError("the strategy matrix must be finite")
        self.matrix, self._exponents = snap_to_lattice(A, bits)
        self.shape, self.name = self.matrix.shape, name
        self._reconstruction: tuple[bytes, np.ndarray] | None = None  # the last one (costs and estimate share it)

    def lattice_exponents(self):
        return self._exponents

    def entries(self, rows, columns):
        return self.matrix[rows, columns]

    def columns(self, xs):
        return self.matrix[:, np.asarray(xs, dtype=np.int64)]

    def dense(self):
        return self.matrix.copy()

    def reconstruction(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Z (p x m) with ``B = W Z^T``: ``A^-T`` for square A, else the weighted least-squares operator."""
        p, m = self.shape
        key = b"" if weights is None or p == m else np.asarray(weights, dtype=float).tobytes()
        if self._reconstruction is not None and self._reconstruction[0] == key:
            return self._reconstruction[1]
        if p == m:
            try:
                Z = np.linalg.inv(self.matrix).T
            except np.linalg.LinAlgError:
                raise ValueError("the strategy matrix A is singular") from None
        else:
            if weights is None:
                raise ValueError(f"A has {p} > m = {m} rows: the reconstruction needs noise scales as weights")
            Z = _weighted_least_squares(self.matrix, np.asarray(weights, dtype=float))
        self._reconstruction = (key, Z)
        return Z

    def costs(self, workload, weights=None):
        self._check_workload(workload)
        Z = self.reconstruction(weights)
        G = workload.gram()
        residual = Z.T @ self.matrix - np.eye(self.shape[1])
        lost = float(np.sum(residual * (G @ residual)))  # ||W (Z^T A - I)||_F^2
        if lost > RECONSTRUCTION_RTOL**2 * max(1.0, float(np.trace(G))):
            raise ValueError("the workload is not in the row space of the usable rows of A")
        return np.maximum(np.sum(Z * (Z @ G), axis=1), 0.0)

    def estimate(self, totals, weights=None):
        return self.reconstruction(weights).T @ np.asarray(totals, dtype=float)


def _weighted_least_squares(A: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Z of ``min sum_k s_k^2 ||B[:, k]||^2 s.t. B A = W`` for every W (``B = W Z^T``).

    In the scaled unknowns ``y_k = s_k b_k`` (rows with ``0 < s_k < inf``, where
    ``A~ = diag(1/s) A``) and the free ``b_k`` of the rows without noise
    (``s_k = 0``, ``A_0``), the KKT system is
    ``[[I, 0, A~], [0, 0, A_0], [A~^T, A_0^T, 0]] [Y; B_0; M] = [0; 0; I]``.
    Eliminating ``Y = -A~ M`` leaves the ``(m + p_0)``-sized system
    ``[[-A~^T A~, A_0^T], [A_0, 0]] [M; B_0] = [I; 0]``; then ``Z = [Y / s; B_0]``.
    Scaling by ``1/s`` keeps it well conditioned when the scales span many
    orders of magnitude; unused rows (``s = inf``) get 0.
    """
    p, m = A.shape
    free = scales == 0
    weighted = (scales > 0) & np.isfinite(scales)
    rates = 1.0 / scales[weighted]
    scaled, exact = A[weighted] * rates[:, None], A[free]
    p0 = exact.shape[0]
    system = np.zeros((m + p0, m + p0))
    system[:m, :m] = -(scaled.T @ scaled)
    system[:m, m:] = exact.T
    system[m:, :m] = exact
    rhs = np.zeros((m + p0, m))
    rhs[:m] = np.eye(m)
    try:
        solution = np.linalg.solve(system, rhs)
    except np.linalg.LinAlgError:
        solution = np.linalg.lstsq(system, rhs, rcond=None)[0]
    Z = np.zeros((p, m))
    Z[weighted] = -(scaled @ solution[:m]) * rates[:, None]
    Z[free] = solution[m:]
    return Z


class _ZeroOneSquare(StrategyMatrix):
    """An m x m 0/1 strategy given by a relation between row and column indices (on the integer lattice)."""

    relation: np.ufunc
    label: str

    def __init__(self, m: int):
        if int(m) != m or m < 1:
            raise ValueError(f"the domain size m must be a positive integer, got {m!r}")
        self.shape, self.name = (int(m), int(m)), self.label

    def lattice_exponents(self):
        return np.zeros(self.shape[0], dtype=np.int64)

    def entries(self, rows, columns):
        return self.relation(np.asarray(rows), np.asarray(columns)).astype(float)

    def columns(self, xs):
        return self.relation(np.arange(self.shape[0])[:, None], np.asarray(xs, dtype=np.int64)[None, :]).astype(float)


class PrefixStrategyMatrix(_ZeroOneSquare):
    """``A = L_m`` (Section III-B): row k counts the prefix ``[0, k]``; ``A^-1`` is the difference matrix."""

    relation, label = np.greater_equal, "prefix"

    def difference_pattern(self, first, second):
        # column x has ones in rows >= x: columns x < y differ exactly in rows x .. y-1
        low, high = np.minimum(first, second), np.maximum(first, second)
        lengths = high - low
        pairs = np.repeat(np.arange(len(first), dtype=np.int64), lengths)
        offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return pairs, np.repeat(low, lengths) + offsets

    def costs(self, workload, weights=None):
        # column k of L^-1 is e_k - e_{k+1} (k < m - 1) and e_{m-1}
        self._check_workload(workload)
        k = np.arange(self.shape[0] - 1)
        costs = np.empty(self.shape[0])
        costs[:-1] = workload.gram_entries(k, k) - 2 * workload.gram_entries(k, k + 1) + workload.gram_entries(k + 1, k + 1)
        costs[-1] = workload.gram_entries(np.array([self.shape[0] - 1]), np.array([self.shape[0] - 1]))[0]
        return np.maximum(costs, 0.0)

    def estimate(self, totals, weights=None):
        return np.diff(np.asarray(totals, dtype=float), prepend=0.0)


class IdentityStrategyMatrix(_ZeroOneSquare):
    """``A = I_m``: every user reports the indicator of her value."""

    relation, label = np.equal, "identity"

    def difference_pattern(self, first, second):
        pairs = np.repeat(np.arange(len(first), dtype=np.int64), 2)
        rows = np.stack([np.minimum(first, second), np.maximum(first, second)], axis=1).ravel()
        keep = np.repeat(first != second, 2)
        return pairs[keep], rows[keep].astype(np.int64)

    def costs(self, workload, weights=None):
        self._check_workload(workload)
        index = np.arange(self.shape[1])
        return workload.gram_entries(index, index)

    def estimate(self, totals, weights=None):
        return np.asarray(totals, dtype=float).copy()


class KroneckerStrategyMatrix(StrategyMatrix):
    """``A_1 (x) ... (x) A_D`` on ``[m_1] x ... x [m_D]`` (cells and rows in C order).

    Dense factors are put on lattices of ``52 // D`` bits, so every product of
    entries is exact in a double and row ``(k_1, ..., k_D)`` lies on
    ``2^(g_1 + ... + g_D) Z``. The reconstruction is the Kronecker product of the
    factors' (unweighted for over-complete factors): for a Kronecker workload
    ``B = (W_1 Z_1^T) (x) ... (x) (W_D Z_D^T)`` and the costs are the Kronecker
    product of the factors' costs (a union of Kronecker workloads sums them).
    """

    def __init__(self, factors: Sequence[StrategyMatrix]):
        if not factors:
            raise ValueError("a Kronecker strategy needs one or more factors")
        bits = LATTICE_BITS // len(factors)
        self.factors = [
            DenseStrategyMatrix(factor.matrix, factor.name, bits) if isinstance(factor, DenseStrategyMatrix) else factor
            for factor in factors
        ]
        self.rows_shape = tuple(factor.shape[0] for factor in self.factors)
        self.domain = tuple(factor.shape[1] for factor in self.factors)
        self.shape = (int(np.prod(self.rows_shape, dtype=np.int64)), int(np.prod(self.domain, dtype=np.int64)))
        self.name = " x ".join(factor.name for factor in self.factors)

    def lattice_exponents(self):
        total = np.zeros(1, dtype=np.int64)
        for factor in self.factors:
            total = (total[:, None] + factor.lattice_exponents()[None, :]).ravel()
        return total

    def entries(self, rows, columns):
        row_parts = np.unravel_index(np.asarray(rows, dtype=np.int64), self.rows_shape)
        column_parts = np.unravel_index(np.asarray(columns, dtype=np.int64), self.domain)
        result = np.ones(np.shape(rows))
        for factor, i, j in zip(self.factors, row_parts, column_parts):
            result *= factor.entries(i, j)
        return result

    def columns(self, xs):
        parts = np.unravel_index(np.asarray(xs, dtype=np.int64), self.domain)
        result = np.ones((1, len(parts[0])))
        for factor, part in zip(self.factors, parts):
            block = factor.columns(part)
            result = (result[:, None, :] * block[None, :, :]).reshape(-1, len(part))
        return result

    def _factor_workloads(self, workload: Workload) -> list[tuple[float, list[Workload]]]:
        parts = workload.parts if isinstance(workload, UnionWorkload) else [workload]
        weights = workload.weights if isinstance(workload, UnionWorkload) else np.ones(1)
        terms = []
        for weight, part in zip(weights, parts):
            if not isinstance(part, KroneckerWorkload) or part.shape != self.domain:
                return []
            terms.append((float(weight), part.factors))
        return terms

    def costs(self, workload, weights=None):
        self._check_workload(workload)
        self._check_weights(weights)
        terms = self._factor_workloads(workload)
        if not terms:
            return DenseStrategyMatrix(self.dense(), self.name).costs(workload, self._dense_weights(weights))
        total = np.zeros(self.shape[0])
        for weight, factors in terms:
            product = np.ones(1)
            for factor, part in zip(self.factors, factors):
                product = np.outer(product, factor.costs(part, self._unit(factor))).ravel()
            total += weight**2 * product
        return total

    def estimate(self, totals, weights=None):
        self._check_weights(weights)
        tensor = np.asarray(totals, dtype=float).reshape(self.rows_shape)
        operators = [_estimate_operator(factor, self._unit(factor)) for factor in self.factors]
        return mode_product(tensor, operators).ravel()

    @staticmethod
    def _unit(factor: StrategyMatrix) -> np.ndarray | None:
        return np.ones(factor.shape[0]) if factor.shape[0] != factor.shape[1] else None

    def _check_weights(self, weights) -> None:
        finite = np.asarray(weights, dtype=float)[np.isfinite(weights)] if weights is not None else np.zeros(0)
        if finite.size and finite.max() > finite.min():
            raise ValueError("a Kronecker strategy reconstructs with its factors' unweighted least squares; pass weights=None")

    def _dense_weights(self, weights):
        return None if self.shape[0] == self.shape[1] else np.ones(self.shape[0])


def _estimate_operator(factor: StrategyMatrix, weights) -> np.ndarray:
    """The factor's ``y -> x`` map as a dense (m_d x p_d) matrix (factors are small)."""
    return np.stack([factor.estimate(row, weights) for row in np.eye(factor.shape[0])], axis=1)


def hierarchical_strategy(m: int, branching: int = 4) -> DenseStrategyMatrix:
    """The b-ary tree of ranges (hierarchical histograms; Cormode, Kulkarni, Srivastava, PVLDB 2019).

    One row per node: level 0 is the root ``[0, m)``, each node splits into
    ``branching`` children of (nearly) equal size down to single values; the
    rows are the nodes' range indicators (0/1), root first.
    """
    if int(m) != m or m < 1 or int(branching) != branching or branching < 2:
        raise ValueError(f"need m >= 1 and branching >= 2, got m={m!r}, branching={branching!r}")
    rows = []
    level = [(0, int(m))]
    while level:
        rows.extend(level)
        children = []
        for start, stop in level:
            if stop - start > 1:
                edges = np.linspace(start, stop, min(branching, stop - start) + 1).round().astype(int)
                children.extend(zip(edges[:-1], edges[1:]))
        level = children
    index = np.arange(int(m))
    matrix = np.array([(index >= start) & (index < stop) for start, stop in rows], dtype=float)
    return DenseStrategyMatrix(matrix, f"tree (b={branching})")


def named_strategy(name: str, shape: Sequence[int], branching: int = 4) -> StrategyMatrix:
    """``prefix``, ``identity`` or ``tree`` on every axis (Kronecker product for D > 1)."""
    builders = {"prefix": PrefixStrategyMatrix, "identity": IdentityStrategyMatrix, "tree": lambda m: hierarchical_strategy(m, branching)}
    if name not in builders:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(builders)}")
    factors = [builders[name](int(m)) for m in shape]
    return factors[0] if len(factors) == 1 else KroneckerStrategyMatrix(factors)
