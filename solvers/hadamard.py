"""Walsh–Hadamard transforms and the Euclidean projection onto the simplex.

Numeric only: arrays in, arrays out.

* :func:`hadamard_matrix` — Sylvester's construction ``H_{2m} = [[H_m, H_m], [H_m, -H_m]]``,
  whose entries are ``H[r, c] = (-1) ** popcount(r & c)`` (0-based indices).
* :func:`hadamard_sign` — those entries for index arrays, without the matrix.
* :func:`fwht` — ``H @ a`` along the last axis in ``O(K log K)`` per row
  (in-place butterflies on a reshaped view; batched over leading axes).
* :func:`project_onto_simplex` — ``argmin_{p >= 0, sum p = 1} ||p - v||_2``
  by the sort-and-threshold algorithm (Held, Wolfe & Crowder 1974; Duchi et al. 2008),
  ``O(k log k)``.
"""

from __future__ import annotations

import numpy as np


def is_power_of_two(size: int) -> bool:
    """Whether ``size`` is 1, 2, 4, 8, ..."""
    return size >= 1 and size & (size - 1) == 0


def next_power_of_two_above(count: int) -> int:
    """The smallest power of two strictly larger than ``count`` (``2 ** ceil(log2(count + 1))``)."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    return 1 << int(count).bit_length()


def hadamard_matrix(size: int) -> np.ndarray:
    """The ``size x size`` Sylvester Hadamard matrix (entries +-1, int8)."""
    if not is_power_of_two(size):
        raise ValueError(f"the size must be a power of two, got {size}")
    matrix = np.ones((1, 1), dtype=np.int8)
    while matrix.shape[0] < size:
        matrix = np.block([[matrix, matrix], [matrix, -matrix]])
    return matrix


def hadamard_sign(rows, columns) -> np.ndarray:
    """Entries ``H[r, c] = (-1) ** popcount(r & c)`` of any Sylvester matrix containing them (int8)."""
    parity = np.bitwise_count(np.bitwise_and(rows, columns)) & 1
    return (1 - 2 * parity.astype(np.int8)).astype(np.int8)


def fwht(values, axis: int = -1) -> np.ndarray:
    """Fast Walsh–Hadamard transform: ``H @ values`` along ``axis`` (unnormalised).

    Parameters
    ----------
    values : array_like
        Length along ``axis`` must be a power of two. Integers stay exact
        (int64); anything else is computed in float64.
    axis : int

    Returns
    -------
    ndarray, a new array of the same shape.
    """
    array = np.asarray(values)
    dtype = np.int64 if np.issubdtype(array.dtype, np.integer) else np.float64
    data = np.moveaxis(np.array(array, dtype=dtype, copy=True), axis, -1)
    size = data.shape[-1]
    if not is_power_of_two(size):
        raise ValueError(f"the transform length must be a power of two, got {size}")
    lead = data.shape[:-1]
    flat = np.ascontiguousarray(data).reshape(-1, size)
    half = 1
    while half < size:
        view = flat.reshape(flat.shape[0], size // (2 * half), 2, half)
        top = view[:, :, 0, :].copy()
        bottom = view[:, :, 1, :]
        view[:, :, 0, :] += bottom
        np.subtract(top, bottom, out=view[:, :, 1, :])
        half *= 2
    return np.moveaxis(flat.reshape(*lead, size), -1, axis)


def project_onto_simplex(values) -> np.ndarray:
    """Euclidean projection of a vector onto ``{p : p >= 0, sum(p) = 1}``.

    The projection is ``max(v - tau, 0)`` with the threshold ``tau`` found from
    the sorted entries (Duchi, Shalev-Shwartz, Singer & Chandra 2008, Fig. 1).
    """
    vector = np.asarray(values, dtype=float)
    if vector.ndim != 1 or vector.size == 0:
        raise ValueError(f"expected a non-empty vector, got shape {vector.shape}")
    if not np.all(np.isfinite(vector)):
        raise ValueError("the vector has a non-finite entry")
    ordered = np.sort(vector)[::-1]
    cumulative = np.cumsum(ordered) - 1.0
    index = np.arange(1, vector.size + 1)
    rho = np.flatnonzero(ordered - cumulative / index > 0)[-1]
    threshold = cumulative[rho] / (rho + 1.0)
    return np.maximum(vector - threshold, 0.0)
