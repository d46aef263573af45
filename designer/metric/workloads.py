"""Workloads as implicit objects (metric-ldp-range-counting.md, eq. 2 and problem (1)).

A workload is a ``q x m`` matrix W of linear counting queries on the frequency
vector c (Section I-B). Problem (1) for a fixed strategy A never needs W
itself: the reconstruction ``B = W A^+`` enters the error (Proposition 2) only
through its squared column norms ``||B[:, k]||^2``, which are the diagonal of
``A^{+T} (W^T W) A^+`` and so depend on W only through its Gram matrix
``G = W^T W`` (m x m). Following HDMM (McKenna, Miklau, Hay, Machanavajjhala,
"Optimizing error of high-dimensional statistical queries under differential
privacy", VLDB 2018, Section 4), every workload here exposes

* :meth:`Workload.gram` — G as a dense ``m x m`` array (only when m allows),
* :meth:`Workload.gram_entries` — entries ``G[i, j]`` for index arrays, in
  closed form (what strategies with sparse inverses need at any m),
* :meth:`Workload.matvec` / :meth:`Workload.rmatvec` — ``W x`` and ``W^T y``,
* :attr:`Workload.queries` — q,

and :meth:`Workload.dense` materialises W for small sizes (tests). The all-range
workload of eq. (2) has ``q = m(m+1)/2`` rows (524,800 at m = 1024) but its
Gram matrix is ``G[i, j] = (min(i, j) + 1)(m - max(i, j))`` (0-based): the
number of ranges ``[l, r]`` with ``l <= min(i, j)`` and ``r >= max(i, j)``.

Multi-dimensional workloads on ``[m_1] x ... x [m_D]`` (cells in C order) are
Kronecker products ``W_1 (x) ... (x) W_D`` with ``G = G_1 (x) ... (x) G_D``
(HDMM, Section 5), and unions of workloads with weights stack
``[w_1 W_1; w_2 W_2; ...]`` with ``G = sum_i w_i^2 G_i`` (marginals are such a
union of Kronecker products of identity and total factors).
"""

from __future__ import annotations

import functools
import itertools
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

#: Largest m for which :meth:`Workload.gram` builds the dense ``m x m`` Gram matrix (128 MiB of doubles).
MAX_DENSE_GRAM = 4096
#: Largest ``q * m`` for which :meth:`Workload.dense` materialises W (64 MiB of doubles).
MAX_DENSE_WORKLOAD = 2**23


class Workload(ABC):
    """A ``q x m`` workload W given implicitly (see module docstring).

    Subclasses implement :attr:`queries`, :meth:`gram_entries`, :meth:`matvec`
    and :meth:`rmatvec`; :attr:`shape` is the domain ``(m_1, ..., m_D)``.
    """

    shape: tuple[int, ...]
    name: str

    @property
    def m(self) -> int:
        """Number of cells ``prod m_d`` (columns of W)."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    @abstractmethod
    def queries(self) -> int:
        """q, the number of queries (rows of W)."""

    @abstractmethod
    def gram_entries(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """``G[rows, columns]`` elementwise for equal-shaped integer arrays (``G = W^T W``)."""

    @abstractmethod
    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``W x`` for x of shape (m,) or (m, k)."""

    @abstractmethod
    def rmatvec(self, y: np.ndarray) -> np.ndarray:
        """``W^T y`` for y of shape (q,) or (q, k)."""

    def gram(self) -> np.ndarray:
        """The dense Gram matrix ``G = W^T W`` (m x m); ValueError above :data:`MAX_DENSE_GRAM`."""
        if self.m > MAX_DENSE_GRAM:
            raise ValueError(f"the {self.name} workload has m = {self.m:,} cells; its dense Gram matrix is only built up to {MAX_DENSE_GRAM:,}")
        index = np.arange(self.m)
        return self.gram_entries(index[:, None], index[None, :])

    def frobenius(self) -> float:
        """``||W||_F^2 = trace(G)``."""
        index = np.arange(self.m)
        return float(self.gram_entries(index, index).sum())

    def dense(self) -> np.ndarray:
        """W as a dense ``q x m`` array (small workloads only; for tests and inspection)."""
        if self.queries * self.m > MAX_DENSE_WORKLOAD:
            raise ValueError(f"the {self.name} workload is {self.queries:,} x {self.m:,}: too large to materialise")
        return self.matvec(np.eye(self.m))


def _size(m: int) -> int:
    if int(m) != m or m < 1:
        raise ValueError(f"the domain size m must be a positive integer, got {m!r}")
    return int(m)


def _indices(rows, columns) -> tuple[np.ndarray, np.ndarray]:
    rows, columns = np.broadcast_arrays(np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64))
    return rows, columns


class IdentityWorkload(Workload):
    """All single-value counts, ``W = I_m``; ``G = I``."""

    def __init__(self, m: int):
        self.shape, self.name = (_size(m),), "identity"

    @property
    def queries(self) -> int:
        return self.m

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return (rows == columns).astype(float)

    def matvec(self, x):
        return np.asarray(x, dtype=float).copy()

    def rmatvec(self, y):
        return np.asarray(y, dtype=float).copy()


class PrefixWorkload(Workload):
    """All prefix counts ``[0, r]``: ``W = L_m`` (lower-triangular ones, eq. 2); ``G[i, j] = m - max(i, j)``."""

    def __init__(self, m: int):
        self.shape, self.name = (_size(m),), "prefix"

    @property
    def queries(self) -> int:
        return self.m

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return (self.m - np.maximum(rows, columns)).astype(float)

    def matvec(self, x):
        return np.cumsum(np.asarray(x, dtype=float), axis=0)

    def rmatvec(self, y):
        return np.cumsum(np.asarray(y, dtype=float)[::-1], axis=0)[::-1].copy()


class AllRangeWorkload(Workload):
    """All ``m(m+1)/2`` ranges ``[l, r]`` (``W_m`` of eq. 2), rows ordered by l then r.

    ``G[i, j] = (min(i, j) + 1)(m - max(i, j))`` (0-based): the ranges containing
    both i and j have ``l <= min(i, j)`` and ``r >= max(i, j)``.
    """

    def __init__(self, m: int):
        self.shape, self.name = (_size(m),), "all-range"

    @property
    def queries(self) -> int:
        return self.m * (self.m + 1) // 2

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return ((np.minimum(rows, columns) + 1) * (self.m - np.maximum(rows, columns))).astype(float)

    def matvec(self, x):
        x = np.asarray(x, dtype=float)
        prefix = np.concatenate([np.zeros((1,) + x.shape[1:]), np.cumsum(x, axis=0)])
        lower, upper = np.triu_indices(self.m)
        return prefix[upper + 1] - prefix[lower]

    def rmatvec(self, y):
        # (W^T y)_x = sum over l <= x <= r of y[l, r]: cumulative sums of the upper-triangular table.
        y = np.asarray(y, dtype=float)
        lower, upper = np.triu_indices(self.m)
        table = np.zeros((self.m, self.m) + y.shape[1:])
        table[lower, upper] = y
        table = np.cumsum(table, axis=0)
        table = np.cumsum(table[:, ::-1], axis=1)[:, ::-1]
        index = np.arange(self.m)
        return table[index, index]


class TotalWorkload(Workload):
    """The single query ``sum_x c_x`` (one row of ones); ``G = J`` (all ones)."""

    def __init__(self, m: int):
        self.shape, self.name = (_size(m),), "total"

    @property
    def queries(self) -> int:
        return 1

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return np.ones(rows.shape)

    def matvec(self, x):
        return np.asarray(x, dtype=float).sum(axis=0, keepdims=True)

    def rmatvec(self, y):
        y = np.asarray(y, dtype=float)
        return np.broadcast_to(y[:1], (self.m,) + y.shape[1:]).copy()


class MatrixWorkload(Workload):
    """An explicit workload matrix W (q x m), e.g. weighted sums read from a CSV file."""

    def __init__(self, matrix: np.ndarray, name: str = "matrix"):
        self.matrix = np.atleast_2d(np.asarray(matrix, dtype=float))
        if not np.all(np.isfinite(self.matrix)):
            raise ValueError("the workload matrix must be finite")
        self.shape, self.name = (self.matrix.shape[1],), name
        self._gram = None

    @property
    def queries(self) -> int:
        return self.matrix.shape[0]

    def gram(self):
        if self._gram is None:
            self._gram = self.matrix.T @ self.matrix
        return self._gram

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return self.gram()[rows, columns]

    def matvec(self, x):
        return self.matrix @ np.asarray(x, dtype=float)

    def rmatvec(self, y):
        return self.matrix.T @ np.asarray(y, dtype=float)

    def dense(self):
        return self.matrix.copy()


class KroneckerWorkload(Workload):
    """``W_1 (x) ... (x) W_D`` on ``[m_1] x ... x [m_D]`` (cells in C order); ``G = G_1 (x) ... (x) G_D``.

    A query is a product of one factor query per dimension (e.g. all-range per
    axis gives every box). Entries of G are products of the factors' entries
    (HDMM, Section 5.1).
    """

    def __init__(self, factors: Sequence[Workload]):
        if not factors or any(len(factor.shape) != 1 for factor in factors):
            raise ValueError("a Kronecker workload needs one or more one-dimensional factors")
        self.factors = list(factors)
        self.shape = tuple(factor.m for factor in self.factors)
        self.name = " x ".join(factor.name for factor in self.factors)

    @property
    def queries(self) -> int:
        return int(np.prod([factor.queries for factor in self.factors], dtype=np.int64))

    def gram(self):
        if self.m > MAX_DENSE_GRAM:
            return super().gram()  # the refusal
        return functools.reduce(np.kron, [factor.gram() for factor in self.factors])

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        row_parts = np.unravel_index(rows, self.shape)
        column_parts = np.unravel_index(columns, self.shape)
        result = np.ones(rows.shape)
        for factor, i, j in zip(self.factors, row_parts, column_parts):
            result *= factor.gram_entries(i, j)
        return result

    def _apply(self, x: np.ndarray, operators, sizes_in, sizes_out) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        tail = x.shape[1:]
        tensor = x.reshape(tuple(sizes_in) + tail)
        for axis, operator in enumerate(operators):
            moved = np.moveaxis(tensor, axis, 0)
            flat = operator(moved.reshape(moved.shape[0], -1))
            tensor = np.moveaxis(flat.reshape((flat.shape[0],) + moved.shape[1:]), 0, axis)
        return tensor.reshape((int(np.prod(sizes_out, dtype=np.int64)),) + tail)

    def matvec(self, x):
        queries = [factor.queries for factor in self.factors]
        return self._apply(x, [factor.matvec for factor in self.factors], self.shape, queries)

    def rmatvec(self, y):
        queries = [factor.queries for factor in self.factors]
        return self._apply(y, [factor.rmatvec for factor in self.factors], queries, self.shape)


class UnionWorkload(Workload):
    """Workloads on one domain stacked with weights, ``[w_1 W_1; w_2 W_2; ...]``; ``G = sum_i w_i^2 G_i``."""

    def __init__(self, parts: Sequence[Workload], weights: Sequence[float] | None = None):
        if not parts or len({part.shape for part in parts}) != 1:
            raise ValueError("a union needs one or more workloads on the same domain")
        self.parts = list(parts)
        self.weights = np.ones(len(parts)) if weights is None else np.asarray(weights, dtype=float)
        if self.weights.shape != (len(parts),) or not np.all(np.isfinite(self.weights)):
            raise ValueError(f"a union of {len(parts)} workloads needs {len(parts)} finite weights")
        self.shape = self.parts[0].shape
        self.name = " + ".join(part.name for part in self.parts)

    @property
    def queries(self) -> int:
        return sum(part.queries for part in self.parts)

    def gram(self):
        if self.m > MAX_DENSE_GRAM:
            return super().gram()
        return sum(weight**2 * part.gram() for weight, part in zip(self.weights, self.parts))

    def gram_entries(self, rows, columns):
        rows, columns = _indices(rows, columns)
        return sum(weight**2 * part.gram_entries(rows, columns) for weight, part in zip(self.weights, self.parts))

    def matvec(self, x):
        return np.concatenate([weight * part.matvec(x) for weight, part in zip(self.weights, self.parts)])

    def rmatvec(self, y):
        y = np.asarray(y, dtype=float)
        bounds = np.cumsum([0] + [part.queries for part in self.parts])
        return sum(
            weight * part.rmatvec(y[start:stop])
            for weight, part, start, stop in zip(self.weights, self.parts, bounds[:-1], bounds[1:])
        )


def marginals_workload(shape: Sequence[int], order: int) -> UnionWorkload:
    """All ``order``-way marginals on ``[m_1] x ... x [m_D]``: a union of Kronecker products.

    The marginal on the dimensions S is ``(x)_d (I_{m_d} if d in S else 1^T)``
    (HDMM, Section 5.2).
    """
    shape = tuple(_size(m) for m in shape)
    if not 0 <= order <= len(shape):
        raise ValueError(f"marginals of order {order} need 0 <= order <= D = {len(shape)}")
    parts = [
        KroneckerWorkload([IdentityWorkload(m) if d in subset else TotalWorkload(m) for d, m in enumerate(shape)])
        for subset in itertools.combinations(range(len(shape)), order)
    ]
    return UnionWorkload(parts)


#: Named one-dimensional workloads (the ``--workload`` choices of ``ldp-designer strategy``).
NAMED_WORKLOADS = {"identity": IdentityWorkload, "prefix": PrefixWorkload, "all-range": AllRangeWorkload}


def named_workload(name: str, shape: Sequence[int]) -> Workload:
    """``name`` on every axis: the workload itself for D = 1, the Kronecker product for D > 1 (all boxes for all-range)."""
    if name not in NAMED_WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {', '.join(NAMED_WORKLOADS)}")
    factors = [NAMED_WORKLOADS[name](m) for m in shape]
    return factors[0] if len(factors) == 1 else KroneckerWorkload(factors)
