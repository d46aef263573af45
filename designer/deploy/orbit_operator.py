"""The channel of an ``orbit`` package as a linear operator: ``p @ Q`` and ``Q @ w`` without the k x m table.

An orbit package (:mod:`designer.deploy.orbit`) puts, in column t of orbit o, the value
``h_a = H n_a / (2^b T j_a)`` (:func:`designer.deploy.orbit.column_value`) on the members of class a
at ranks ``i`` with
``(i - t) mod n_a < j_a``, ``w_a = L n_a / (2^b T l_a)`` on the next ``l_a`` ranks and 0 on
the rest. Both ranks and columns are cyclic, so each product is a sum of cyclic interval
sums, computed from prefix sums in ``O(sum_o T_o r_o + k)`` (``r_o`` the classes with a
positive cell on orbit o) instead of ``O(k m)``:

* forward, ``(p Q)_t = sum_a (h_a P_a[s, s + j_a) + w_a P_a[s + j_a, s + j_a + l_a))`` with
  ``s = t mod n_a`` and ``P_a[u, v)`` the mass of ranks u..v-1 of class a, read cyclically
  (prefix sums of ``p`` over the class's ranks, doubled): it depends on t only through
  ``t mod n_a`` (``n_a`` divides ``T_o`` unless the class is constant on o, checked by
  :func:`designer.deploy.sampler.check_orbit_structure`);
* adjoint, ``(Q w)_x = sum_o (h_a W_a(i - j_a, i] + w_a W_a(i - j_a - l_a, i - j_a])`` for x
  at rank i of class a, with ``W_a`` the weights of orbit o folded modulo ``n_a``
  (``W_a[s] = sum_{t = s mod n_a} w_t``), again read cyclically by prefix sums.

A class constant on an orbit (all members high, or all low) needs no special case: with
``s = t mod n_a`` its interval is the whole class (forward), or the whole folded orbit
(adjoint). The dense table of
:func:`designer.deploy.orbit.orbit_channel` is the independent reference in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.deploy.orbit import column_value
from designer.deploy.sampler import OrbitStructure


@dataclass(frozen=True)
class _Band:
    """Class a on orbit o: its counts and column values (``high`` on j ranks, ``low`` on the next l)."""

    orbit: int
    a: int
    j: int
    l: int
    high: float
    low: float


class OrbitOperator:
    """The exact channel of a checked orbit package, as ``forward``/``adjoint`` products.

    Every band (orbit o, class a, not constant zero) is laid out once as index arrays, so a
    product is a few gathers, one cumulative sum and one ``np.bincount`` over all bands at once:
    prefix sums are taken over the concatenation of every class's doubled ranks (forward) or of
    every band's doubled folded weights (adjoint), and a difference of two prefix sums inside one
    segment is that segment's cyclic interval sum. With ``s = t mod n_a`` the same formulas hold
    for a class constant on the orbit (an interval of length ``n_a`` is the whole class), whether
    or not ``n_a`` divides ``T_o``.

    Parameters
    ----------
    structure : OrbitStructure
        From :func:`designer.deploy.sampler.check_orbit_structure` (verify the package first:
        :func:`designer.deploy.orbit.verify_orbit_package`).

    Attributes
    ----------
    k, n_outputs : int
        Inputs and outputs (output ``offset_o + t`` is column t of orbit o, as the samplers report it).
    bands : list of _Band
        The (orbit, class) pairs with a positive cell, with their counts and column values.
    """

    def __init__(self, structure: OrbitStructure):
        self.k, self.n_outputs = structure.k, structure.n_outputs
        self.sizes = [int(n) for n in structure.sizes]
        self.periods = [int(period) for period in structure.columns]
        self.offsets = np.concatenate([[0], np.cumsum(self.periods)]).astype(np.int64)
        self.members = _members(structure)
        total = float(1 << structure.bits)  # every class's cells sum to 2^bits
        sizes, periods = np.array(self.sizes, dtype=float), np.array(self.periods, dtype=float)[:, None]
        counts_high, counts_low = np.array(structure.high, dtype=float), np.array(structure.low, dtype=float)
        cells_high = np.array(structure.cells_high, dtype=float)
        cells_low = np.array(structure.cells_low, dtype=float)
        values_high = column_value(cells_high / total, sizes, periods, counts_high)  # one formula, all bands at once
        values_low = column_value(cells_low / total, sizes, periods, counts_low)
        self.bands = [
            _Band(int(o), int(a), int(structure.high[o][a]), int(structure.low[o][a]), float(values_high[o, a]),
                  float(values_low[o, a]))
            for o, a in zip(*np.nonzero((cells_high > 0) | (cells_low > 0)))  # else class a never reports orbit o
        ]
        self._laid_out = False

    def _layout(self) -> None:
        """Index arrays of every band (class docstring), built at the first product (every class has a band: its
        cells sum to 2^b). They take ``O(m + k)`` memory: a size check on :attr:`n_outputs` runs before."""
        if self._laid_out:
            return
        class_start = np.concatenate([[0], np.cumsum([2 * n for n in self.sizes])])  # doubled ranks, forward prefix
        self._doubled_members = np.concatenate([np.concatenate([members, members]) for members in self.members])
        forward, adjoint, fold_start = [], [], 0  # fold_start: the band's folded weights (n), then doubled (2n)
        for band in self.bands:
            n, period = self.sizes[band.a], self.periods[band.orbit]
            columns, ranks = np.arange(period, dtype=np.int64), np.arange(n, dtype=np.int64)
            first = class_start[band.a] + columns % n  # P[first + c] - P[first]: ranks s..s+c-1 of class a
            forward.append((first, self.offsets[band.orbit] + columns, np.full(period, band.j),
                            np.full(period, band.l), np.full(period, band.high), np.full(period, band.low)))
            end = 2 * fold_start + ranks + n + 1  # P[end] - P[end - c]: folded weights i-c+1..i, cyclically
            adjoint.append((fold_start + columns % n, self.offsets[band.orbit] + columns,
                            fold_start + np.arange(2 * n) % n, end, self.members[band.a], np.full(n, band.j),
                            np.full(n, band.l), np.full(n, band.high), np.full(n, band.low)))
            fold_start += n
        self._folds = fold_start
        (self._f_first, self._f_target, self._f_j, self._f_l, self._f_high,
         self._f_low) = (np.concatenate(parts) for parts in zip(*forward))
        (self._a_fold, self._a_column, self._a_doubled, self._a_end, self._a_member, self._a_j, self._a_l,
         self._a_high, self._a_low) = (np.concatenate(parts) for parts in zip(*adjoint))
        self._laid_out = True

    def forward(self, p) -> np.ndarray:
        """``p @ Q``: the output distribution (length ``n_outputs``) of the input distribution ``p``."""
        self._layout()
        prefix = np.concatenate([[0.0], np.cumsum(np.asarray(p, dtype=float)[self._doubled_members])])
        first, middle = prefix[self._f_first], prefix[self._f_first + self._f_j]
        last = prefix[self._f_first + self._f_j + self._f_l]
        values = self._f_high * (middle - first) + self._f_low * (last - middle)
        return np.bincount(self._f_target, weights=values, minlength=self.n_outputs)

    def adjoint(self, w) -> np.ndarray:
        """``Q @ w``: for every input x, ``sum_y Q(y|x) w_y`` (length ``k``)."""
        self._layout()
        folded = np.bincount(self._a_fold, weights=np.asarray(w, dtype=float)[self._a_column], minlength=self._folds)
        prefix = np.concatenate([[0.0], np.cumsum(folded[self._a_doubled])])
        end, middle = prefix[self._a_end], prefix[self._a_end - self._a_j]
        values = self._a_high * (end - middle) + self._a_low * (middle - prefix[self._a_end - self._a_j - self._a_l])
        return np.bincount(self._a_member, weights=values, minlength=self.k)


def _members(structure: OrbitStructure) -> list[np.ndarray]:
    """The symbols of each class in rank order (from the package's ``[first, last]`` ranges)."""
    pieces: list[list[np.ndarray]] = [[] for _ in structure.sizes]
    for first, last, a, _ in sorted(structure.ranges, key=lambda item: (item[2], item[3])):
        pieces[a].append(np.arange(first, last + 1, dtype=np.int64))
    return [np.concatenate(parts) for parts in pieces]
