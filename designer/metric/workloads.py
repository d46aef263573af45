"""Workloads and fixed strategy matrices of metric-ldp-range-counting.md (eq. 2, Section III-B)."""

from __future__ import annotations

import numpy as np


def identity_workload(m: int) -> np.ndarray:
    """All single-value counts: ``W = I_m``."""
    return np.eye(_size(m))


def prefix_workload(m: int) -> np.ndarray:
    """All prefix counts ``[1, r]``: ``W = L_m`` (lower-triangular ones, eq. 2)."""
    return np.tril(np.ones((_size(m), _size(m))))


def all_range_workload(m: int) -> np.ndarray:
    """All ``m(m+1)/2`` one-dimensional ranges ``[l, r]`` (``W_m`` of eq. 2), rows ordered by l then r."""
    m = _size(m)
    lower, upper = np.triu_indices(m)
    index = np.arange(m)
    return ((index[None, :] >= lower[:, None]) & (index[None, :] <= upper[:, None])).astype(float)


def prefix_strategy(m: int) -> np.ndarray:
    """The strategy matrix ``A = L_m`` of Section III-B (every prefix sum)."""
    return prefix_workload(m)


def _size(m: int) -> int:
    if int(m) != m or m < 1:
        raise ValueError(f"the domain size m must be a positive integer, got {m!r}")
    return int(m)
