"""The channel of an ``orbit`` package as a linear operator: ``p @ Q`` and ``Q @ w`` without the k x m table.

An orbit package (:mod:`designer.deploy.orbit`) puts, in column t of orbit o, the value
``h_a = H n_a / (2^b T j_a)`` on the members of class a at ranks ``i`` with
``(i - t) mod n_a < j_a``, ``w_a = L n_a / (2^b T l_a)`` on the next ``l_a`` ranks and 0 on
the rest. Both ranks and columns are cyclic, so each product is a sum of cyclic interval
sums, computed from prefix sums in ``O(sum_o T_o r_o + k)`` (``r_o`` the classes not constant
zero on orbit o) instead of ``O(k m)``:

* forward, ``(p Q)_t = sum_a (h_a P_a[s, s + j_a) + w_a P_a[s + j_a, s + j_a + l_a))`` with
  ``s = t mod n_a`` and ``P_a[u, v)`` the mass of ranks u..v-1 of class a, read cyclically
  (prefix sums of ``p`` over the class's ranks, doubled): it depends on t only through
  ``t mod n_a`` (``n_a`` divides ``T_o`` unless the class is constant on o, checked by
  :func:`designer.deploy.sampler.check_orbit_structure`);
* adjoint, ``(Q w)_x = sum_o (h_a W_a(i - j_a, i] + w_a W_a(i - j_a - l_a, i - j_a])`` for x
  at rank i of class a, with ``W_a`` the weights of orbit o folded modulo ``n_a``
  (``W_a[s] = sum_{t = s mod n_a} w_t``), again read cyclically by prefix sums.

A class constant on an orbit (all members high, or all low) contributes its value times the
class's total mass (forward) or the orbit's total weight (adjoint). The dense table of
:func:`designer.deploy.orbit.orbit_channel` is the independent reference in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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

    Parameters
    ----------
    structure : OrbitStructure
        From :func:`designer.deploy.sampler.check_orbit_structure` (verify the package first:
        :func:`designer.deploy.orbit.verify_orbit_package`).

    Attributes
    ----------
    k, n_outputs : int
        Inputs and outputs (output ``offset_o + t`` is column t of orbit o, as the samplers report it).
    work : int
        Elements touched by one product, ``sum_o sum_{a active} (T_o + n_a) + k`` (the cost of EM's steps).
    """

    def __init__(self, structure: OrbitStructure):
        self.k, self.n_outputs = structure.k, structure.n_outputs
        self.sizes = [int(n) for n in structure.sizes]
        self.periods = [int(period) for period in structure.columns]
        self.offsets = np.concatenate([[0], np.cumsum(self.periods)]).astype(np.int64)
        self.members = _members(structure)
        total = float(sum(structure.cells_high[o][0] + structure.cells_low[o][0] for o in range(len(self.periods))))
        self.bands = []
        for o, period in enumerate(self.periods):
            for a, n in enumerate(self.sizes):
                j, l = int(structure.high[o][a]), int(structure.low[o][a])
                cell_high, cell_low = int(structure.cells_high[o][a]), int(structure.cells_low[o][a])
                if cell_high == 0 and cell_low == 0:
                    continue  # class a never reports orbit o: a zero block
                high = cell_high * n / (total * period * j) if j else 0.0
                low = cell_low * n / (total * period * l) if l else 0.0
                self.bands.append(_Band(o, a, j, l, high, low))
        self.work = sum(self.periods[band.orbit] + self.sizes[band.a] for band in self.bands) + self.k

    def forward(self, p) -> np.ndarray:
        """``p @ Q``: the output distribution (length ``n_outputs``) of the input distribution ``p``."""
        p = np.asarray(p, dtype=float)
        by_class = [p[members] for members in self.members]
        doubled = [np.concatenate([[0.0], np.cumsum(np.concatenate([values, values]))]) for values in by_class]
        output = np.zeros(self.n_outputs)
        for band in self.bands:
            n, period = self.sizes[band.a], self.periods[band.orbit]
            column = output[self.offsets[band.orbit]: self.offsets[band.orbit + 1]]
            if _constant(band, n):
                column += (band.high if band.j else band.low) * doubled[band.a][n]
                continue
            sums, start = doubled[band.a], np.arange(n)
            values = band.high * (sums[start + band.j] - sums[start])
            if band.l:
                values += band.low * (sums[start + band.j + band.l] - sums[start + band.j])
            column.reshape(period // n, n)[:] += values
        return output

    def adjoint(self, w) -> np.ndarray:
        """``Q @ w``: for every input x, ``sum_y Q(y|x) w_y`` (length ``k``)."""
        w = np.asarray(w, dtype=float)
        by_class = [np.zeros(n) for n in self.sizes]
        for band in self.bands:
            n, period = self.sizes[band.a], self.periods[band.orbit]
            weights = w[self.offsets[band.orbit]: self.offsets[band.orbit + 1]]
            if _constant(band, n):
                by_class[band.a] += (band.high if band.j else band.low) * weights.sum()
                continue
            folded = weights.reshape(period // n, n).sum(axis=0)
            sums = np.concatenate([[0.0], np.cumsum(np.concatenate([folded, folded]))])
            end = np.arange(n) + n + 1  # W(i - c, i] = sums[i + n + 1] - sums[i + n + 1 - c]
            by_class[band.a] += band.high * (sums[end] - sums[end - band.j])
            if band.l:
                by_class[band.a] += band.low * (sums[end - band.j] - sums[end - band.j - band.l])
        result = np.empty(self.k)
        for members, values in zip(self.members, by_class):
            result[members] = values
        return result


def _constant(band: _Band, n: int) -> bool:
    """Every member of the class has the same value in every column of the orbit."""
    return band.j == n or band.l == n


def _members(structure: OrbitStructure) -> list[np.ndarray]:
    """The symbols of each class in rank order (from the package's ``[first, last]`` ranges)."""
    pieces: list[list[np.ndarray]] = [[] for _ in structure.sizes]
    for first, last, a, _ in sorted(structure.ranges, key=lambda item: (item[2], item[3])):
        pieces[a].append(np.arange(first, last + 1, dtype=np.int64))
    return [np.concatenate(parts) for parts in pieces]
