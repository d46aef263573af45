"""Chunked, multi-threaded max-plus products of log-matrices.

For a non-negative matrix ``Q`` (k x m) the pairwise row statistic

    M[x, x'] = max_y  log Q[x, y] - log Q[x', y]

is a max-plus product of ``log Q`` with ``-log Q`` transposed.  It costs
k * k * m operations; we bound the memory by processing a few rows of ``x`` at a
time (each chunk is a c x k x m block) and run the chunks on a thread pool
(NumPy releases the GIL inside ufuncs, so the threads use every core).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Finite stand-in for ``log 0``. Real logs of positive doubles lie in
#: [-745, 710]; with the sentinel, ``finite - ZERO_LOG`` exceeds ``INF_THRESHOLD``
#: (read back as +inf) and ``ZERO_LOG - ZERO_LOG == 0`` (a "both zero" column,
#: which can never raise a maximum that is >= 0 for stochastic rows).
ZERO_LOG = -1e200
INF_THRESHOLD = 1e100
DEFAULT_CHUNK_BYTES = 8 * 2**20  # small blocks stay in cache: 0.55 s vs 1.2 s at 64 MiB (k=m=1000)


def safe_log(matrix: np.ndarray) -> np.ndarray:
    """Natural log of a non-negative array with ``log 0`` replaced by ``ZERO_LOG``."""
    matrix = np.asarray(matrix, dtype=float)
    out = np.full(matrix.shape, ZERO_LOG)
    np.log(matrix, out=out, where=matrix > 0)
    return out


def max_log_ratio(
    matrix: np.ndarray,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise maximal log-ratio of rows, with the maximising column.

    Parameters
    ----------
    matrix : ndarray, shape (k, m)
        Non-negative entries.
    chunk_bytes : int
        Memory budget of one chunk (bytes); ``workers`` chunks live at once.
    workers : int, optional
        Threads to use (default: the number of CPUs).

    Returns
    -------
    values : ndarray, shape (k, k)
        ``values[x, x'] = max_y log(matrix[x, y] / matrix[x', y])`` with
        ``+inf`` where a positive entry meets a zero, and columns where both
        rows are zero contributing ``0``.
    argmax : ndarray of int, shape (k, k)
        A column ``y`` attaining the maximum.
    """
    return max_log_difference(safe_log(matrix), chunk_bytes, workers)


def max_log_difference(
    logs: np.ndarray,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    workers: int | None = None,
    slack: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Max-plus product ``values[x, x'] = max_y logs[x, y] - logs[x', y]``, with the argmax.

    The kernel of :func:`max_log_ratio`, for callers that computed the logs
    themselves (e.g. rigorous logs of exact rationals). Every difference is the
    correctly rounded IEEE subtraction ``fl(logs[x, y] - logs[x', y])`` and the
    maximum is taken exactly, so a caller that bounds the error of ``logs``
    bounds the error of ``values``.

    Parameters
    ----------
    logs : ndarray, shape (k, m)
        Logs of non-negative entries, :data:`ZERO_LOG` standing for ``log 0``.
    chunk_bytes, workers
        As in :func:`max_log_ratio`.
    slack : ndarray (k, k), optional
        Also tell, for each pair, whether a column other than the argmax has a
        difference at least ``fl(values - slack)`` (the same floats a caller gets
        by subtracting afterwards), while each block is in cache.

    Returns
    -------
    values, argmax : as in :func:`max_log_ratio` (``+inf`` where a real log meets ``ZERO_LOG``).
    several : ndarray of bool (k, k)
        Only with ``slack``: whether such another column exists.
    """
    logs = np.asarray(logs, dtype=float)
    k, m = logs.shape
    values = np.empty((k, k))
    argmax = np.empty((k, k), dtype=np.intp)
    several = None if slack is None else np.empty((k, k), dtype=bool)
    rows_per_chunk = max(1, int(chunk_bytes // max(1, 8 * k * m)))
    starts = range(0, k, rows_per_chunk)

    def work(chunk_starts: range) -> None:
        buffer = np.empty((min(rows_per_chunk, k), k, m))  # one block per thread, reused
        for start in chunk_starts:
            stop = min(k, start + rows_per_chunk)
            block = buffer[: stop - start]
            np.subtract(logs[start:stop, None, :], logs[None, :, :], out=block)
            best = block.argmax(axis=2)
            argmax[start:stop] = best
            values[start:stop] = np.take_along_axis(block, best[..., None], axis=2)[..., 0]
            if several is not None:  # the largest difference once the argmax is removed
                np.put_along_axis(block, best[..., None], -np.inf, axis=2)
                several[start:stop] = block.max(axis=2) >= values[start:stop] - slack[start:stop]

    n_workers = min(workers or os.cpu_count() or 1, len(starts))
    if n_workers == 1:
        work(starts)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            list(pool.map(work, [starts[i::n_workers] for i in range(n_workers)]))
    values[values > INF_THRESHOLD] = np.inf
    return (values, argmax) if several is None else (values, argmax, several)


def min_plus_closure(weights: np.ndarray) -> np.ndarray:
    """All-pairs shortest path lengths (Floyd–Warshall, vectorised over rows).

    Parameters
    ----------
    weights : ndarray, shape (k, k)
        Non-negative edge weights; ``inf`` means no edge. Zero weights are real
        edges (unlike SciPy's dense ``csgraph`` input, which drops zeros).

    Returns
    -------
    ndarray, shape (k, k)
        ``D[i, j]`` = length of the shortest directed path from i to j, with a
        zero diagonal.
    """
    dist = np.array(weights, dtype=float, copy=True)
    np.fill_diagonal(dist, 0.0)
    for via in range(dist.shape[0]):
        np.minimum(dist, dist[:, via, None] + dist[None, via, :], out=dist)
    return dist


def min_plus_product(left: np.ndarray, right: np.ndarray, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> np.ndarray:
    """Min-plus matrix product ``out[i, j] = min_z left[i, z] + right[z, j]``."""
    left = np.asarray(left, dtype=float)
    right = np.asarray(right, dtype=float)
    k, inner = left.shape
    cols = right.shape[1]
    out = np.empty((k, cols))
    rows_per_chunk = max(1, int(chunk_bytes // max(1, 8 * inner * cols)))
    for start in range(0, k, rows_per_chunk):
        stop = min(k, start + rows_per_chunk)
        out[start:stop] = (left[start:stop, :, None] + right[None, :, :]).min(axis=1)
    return out
