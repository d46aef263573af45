"""Kronecker-structured linear algebra on tensors, without forming the Kronecker product.

A matrix ``K = M_1 (x) M_2 (x) ... (x) M_D`` acting on a vector stored as a
C-ordered tensor ``T`` of shape ``(n_1, ..., n_D)`` equals applying ``M_d``
along axis ``d`` for every ``d`` (a sequence of mode products). That costs
``sum_d nnz(M_d) * prod_{j != d} n_j`` operations instead of ``(prod n_d)^2``.

Separable linear functionals ``<u_1 (x) ... (x) u_D, T>`` are contracted on the
sub-tensor indexed by the non-zero entries of each ``u_d`` only, so a
functional with few non-zeros per axis costs ``prod_d nnz(u_d)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits


def mode_product(tensor: np.ndarray, matrices: Sequence[np.ndarray | sp.spmatrix | None]) -> np.ndarray:
    """Apply ``matrices[d]`` along axis ``d`` of ``tensor`` (``None`` skips an axis).

    Parameters
    ----------
    tensor : ndarray, shape (n_1, ..., n_D)
    matrices : sequence of D matrices (dense or scipy.sparse), ``matrices[d]`` of
        shape ``(p_d, n_d)``, or ``None``.

    Returns
    -------
    ndarray, shape (p_1, ..., p_D)
        ``(M_1 (x) ... (x) M_D) vec(tensor)`` reshaped in C order.
    """
    result = np.asarray(tensor, dtype=float)
    if len(matrices) != result.ndim:
        raise ValueError(f"{len(matrices)} matrices for a tensor with {result.ndim} axes")
    for axis, matrix in enumerate(matrices):
        if matrix is None:
            continue
        if matrix.shape[1] != result.shape[axis]:
            raise ValueError(f"axis {axis}: matrix has {matrix.shape[1]} columns, tensor has {result.shape[axis]} entries")
        moved = np.moveaxis(result, axis, 0)
        flat = moved.reshape(moved.shape[0], -1)
        product = np.asarray(matrix @ flat)
        result = np.moveaxis(product.reshape((matrix.shape[0],) + moved.shape[1:]), 0, axis)
    return np.ascontiguousarray(result)


def contract_separable(tensor: np.ndarray, vectors: Sequence[np.ndarray]) -> float:
    """``<vectors[0] (x) ... (x) vectors[D-1], tensor>`` using only non-zero entries.

    Cost is ``prod_d nnz(vectors[d])`` (plus ``sum_d n_d`` to find the non-zeros).
    """
    if len(vectors) != tensor.ndim:
        raise ValueError(f"{len(vectors)} vectors for a tensor with {tensor.ndim} axes")
    supports = [np.flatnonzero(vector) for vector in vectors]
    if any(support.size == 0 for support in supports):
        return 0.0
    block = np.asarray(tensor[np.ix_(*supports)], dtype=float)
    for vector, support in zip(vectors, supports):
        block = np.tensordot(np.asarray(vector, dtype=float)[support], block, axes=(0, 0))
    return float(block)


#: Memory budget of one chunk of row-wise Khatri-Rao products.
DEFAULT_CHUNK_BYTES = 64 * 2**20
#: Below this many multiply-adds the BLAS thread cap is not applied (it costs more than it saves).
SMALL_PRODUCT = 2**26


def khatri_rao_gram(
    factors: Sequence[np.ndarray],
    weights: np.ndarray | None = None,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    blas_threads: int | None = 1,
) -> np.ndarray:
    """``sum_i w_i F_1[i] (x) F_2[i] (x) ... (x) F_D[i]`` as a tensor, by chunked matrix products.

    Each ``factors[d]`` has shape ``(n, m_d)`` (one row per record). The sum of
    the row-wise outer products is ``(F_1 * ... * F_{D-1})^T diag(w) F_D`` where
    ``*`` is the row-wise Khatri-Rao product; rows are processed in chunks whose
    Khatri-Rao block takes about ``chunk_bytes``.
    Products are taken in float32 when the factors are small integers (exact
    while partial sums stay below 2**24) and accumulated in float64.

    ``blas_threads`` caps the BLAS thread pool during the products (``None``
    keeps the library default; products below ``SMALL_PRODUCT`` multiply-adds
    are left alone). One thread is the default because these tall,
    thin products are memory-bound and a spinning multi-threaded BLAS collapses
    when the cores are shared: on the 2-core project machine under load ~6,
    n = 10^6, m = 64 took 4.4-5.2 s with 2 OpenBLAS threads and 0.45-0.9 s with one.

    Returns
    -------
    ndarray, shape (m_1, ..., m_D)
    """
    if not factors:
        raise ValueError("at least one factor is needed")
    n = factors[0].shape[0]
    if any(factor.shape[0] != n for factor in factors):
        raise ValueError("all factors must have the same number of rows")
    shape = tuple(factor.shape[1] for factor in factors)
    integer = all(np.issubdtype(factor.dtype, np.integer) for factor in factors) and weights is None
    work = np.float32 if integer else np.float64
    width = int(np.prod(shape[:-1], dtype=np.int64))
    chunk_rows = int(min(2**23, max(1, chunk_bytes // (np.dtype(work).itemsize * max(width, shape[-1])))))
    total = np.zeros((width, shape[-1]))
    large = n * width * shape[-1] >= SMALL_PRODUCT  # entering threadpool_limits costs ~10 ms
    limit = threadpool_limits(limits=blas_threads, user_api="blas") if blas_threads and large else contextlib.nullcontext()
    # Buffers are allocated once and reused: fresh 64 MiB arrays per chunk cost more in page
    # faults than the products themselves (78 ms vs 13 ms for a 16384 x 1024 block).
    converted = [np.empty((chunk_rows, m), dtype=work) for m in shape]
    stages = {d: np.empty((chunk_rows, int(np.prod(shape[: d + 1], dtype=np.int64))), dtype=work) for d in range(1, len(shape) - 1)}
    with limit:
        for start in range(0, n, chunk_rows):
            rows = min(chunk_rows, n - start)
            blocks = []
            for factor, buffer in zip(factors, converted):
                np.copyto(buffer[:rows], factor[start : start + rows], casting="unsafe")
                blocks.append(buffer[:rows])
            right = blocks[-1]
            if weights is not None:
                right *= np.asarray(weights[start : start + rows], dtype=work)[:, None]
            if len(blocks) == 1:
                total += right.sum(axis=0, dtype=np.float64)[None, :]
                continue
            left = blocks[0]
            for d, block in enumerate(blocks[1:-1], start=1):
                product = stages[d][:rows]
                np.multiply(left[:, :, None], block[:, None, :], out=product.reshape(rows, left.shape[1], block.shape[1]))
                left = product
            total += (left.T @ right).astype(np.float64)
    return total.reshape(shape)
