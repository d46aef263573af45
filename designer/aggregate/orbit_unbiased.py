"""The least-squares unbiased estimate of an orbit package and its exact variance, by Fourier blocks.

The channel of an orbit package (:mod:`designer.deploy.orbit_operator`) is invariant under the
cyclic shift that moves every member of class a to the next rank (mod ``n_a``) and every column
of orbit o to the next (mod ``T_o``): ``Q[(a, i), (o, t)] = v_ao((i - t) mod n_a)``, and ``n_a``
divides ``T_o`` unless the class is constant on the orbit. So ``Q`` maps the Fourier mode of
frequency ``phi`` of a class (``u_a(i) = e^{2 pi i phi i} / sqrt(n_a)``, ``phi = s / n_a``) onto the
modes of the *same* frequency of the orbits (``w_o(t) = e^{2 pi i phi t} / sqrt(T_o)``):

    Q^T u_a = sum_o B_phi[a, o] w_o,   B_phi[a, o] = sqrt(T_o / n_a) sum_d v_ao(d) e^{2 pi i phi d},

and ``Q Q^T`` is block diagonal in these bases, one Hermitian block ``G_phi = conj(B_phi) B_phi^T``
per frequency, over the classes whose size ``phi`` divides (at most r x r). Hence

* the unbiased estimator of :func:`designer.estimation.unbiased_estimate`,
  ``p_hat = (Q Q^T)^{-1} Q f``, is ``G_phi^{-1} conj(B_phi) f_hat_phi`` per frequency, then an
  inverse FFT per class; it exists iff every ``G_phi`` is invertible (``rank Q = k``); a
  frequency whose block is singular is a direction of p the reports cannot see;
* its covariance ``A (diag(q) - q q^T) A^T / n`` (``A = (Q Q^T)^{-1} Q``, the module docstring of
  :mod:`designer.aggregate.estimate`) has diagonal ``(sum_y A_xy^2 f_y - p_hat_x^2) / n``, and ``A``
  is shift-invariant too: ``A[(a, i), (o, t)] = r_a(o, (t - i) mod T_o)`` with ``r_a`` the row of
  the rank-0 member of class a, so ``sum_y A_xy^2 f_y`` is one cyclic correlation of ``r_a(o)^2``
  with ``f_o`` per class and orbit (FFT).

Cost: ``O(sum_a n_a log n_a + sum_o T_o log T_o)`` for the transforms, one eigendecomposition of
an r x r block per frequency, and ``O(r m log m)`` for the variances; ``Q`` is never materialised.
The dense ``lstsq`` and ``pinv`` of :mod:`designer.estimation` are the reference in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.deploy.orbit_operator import OrbitOperator


@dataclass(frozen=True)
class _Frequencies:
    """The frequencies ``num / q`` (``gcd(num, q) = 1``) of one denominator q, with their blocks."""

    q: int
    numerators: np.ndarray  # (f,)
    classes: np.ndarray  # the classes a with q | n_a
    orbits: np.ndarray  # the orbits o with q | T_o
    transfer: np.ndarray  # B_phi, (f, classes, orbits)
    values: np.ndarray  # eigenvalues of G_phi, (f, classes)
    vectors: np.ndarray  # eigenvectors of G_phi, (f, classes, classes)

    def inverse(self, right: np.ndarray) -> np.ndarray:
        """``G_phi^{-1} right`` for a stack ``right`` of shape (f, classes)."""
        rotated = np.einsum("fca,fc->fa", self.vectors.conj(), right) / self.values
        return np.einsum("fca,fa->fc", self.vectors, rotated)


class OrbitSpectrum:
    """The block-diagonal form of ``Q Q^T`` of an orbit package (module docstring).

    Parameters
    ----------
    operator : OrbitOperator
        The package's channel (its bands: per orbit and class, the counts j, l and the values).
    """

    def __init__(self, operator: OrbitOperator):
        self.operator = operator
        sizes, periods = np.array(operator.sizes), np.array(operator.periods)
        patterns = {}
        for band in operator.bands:
            n = operator.sizes[band.a]
            pattern = np.zeros(n)
            pattern[: band.j] = band.high
            pattern[band.j: band.j + band.l] = band.low
            patterns[band.orbit, band.a] = np.conj(np.fft.fft(pattern))  # sum_d v(d) e^{+2 pi i s d / n}
        denominators = sorted({int(q) for n in set(sizes.tolist()) for q in range(1, n + 1) if n % q == 0})
        self.groups = []
        for q in denominators:
            numerators = np.flatnonzero(np.gcd(np.arange(q), q) == 1) if q > 1 else np.array([0])
            classes, orbits = np.flatnonzero(sizes % q == 0), np.flatnonzero(periods % q == 0)
            transfer = np.zeros((numerators.size, classes.size, orbits.size), dtype=complex)
            for c, a in enumerate(classes):
                for column, o in enumerate(orbits):
                    if (o, a) in patterns:
                        spectrum = patterns[o, a][numerators * (sizes[a] // q)]
                        transfer[:, c, column] = spectrum * np.sqrt(periods[o] / sizes[a])
            gram = np.conj(transfer) @ np.transpose(transfer, (0, 2, 1))
            values, vectors = np.linalg.eigh(gram)
            self.groups.append(_Frequencies(q, numerators, classes, orbits, transfer, values, vectors))
        largest = max(float(group.values.max()) for group in self.groups)
        self.tolerance = largest * max(operator.k, operator.n_outputs) * np.finfo(float).eps

    @property
    def rank(self) -> int:
        """``rank Q``: k minus the block eigenvalues at most :attr:`tolerance` (each is one lost direction)."""
        return self.operator.k - sum(int((group.values <= self.tolerance).sum()) for group in self.groups)

    def unidentifiable(self) -> str | None:
        """None if ``rank Q = k``; else the rank and the first frequency whose block is singular."""
        for group in self.groups:
            singular = np.argwhere(group.values <= self.tolerance)
            if singular.size:
                classes = ", ".join(str(int(a)) for a in group.classes)
                return (f"the channel has rank {self.rank} < k = {self.operator.k}: Q Q^T is singular at frequency "
                        f"{group.numerators[singular[0][0]]}/{group.q} of the cyclic ranks of class(es) {classes}")
        return None

    def estimate(self, counts) -> np.ndarray:
        """``p_hat = (Q Q^T)^{-1} Q f`` with ``f`` the output frequencies of ``counts``."""
        counts = np.asarray(counts, dtype=float)
        return self._solve(counts / counts.sum())

    def interval(self, counts) -> tuple[np.ndarray, np.ndarray]:
        """The unbiased estimate and its exact plug-in standard errors ``sqrt(diag Cov)`` (module docstring)."""
        counts = np.asarray(counts, dtype=float)
        n = counts.sum()
        frequencies = counts / n
        estimate = self._solve(frequencies)
        op = self.operator
        weighted = np.zeros(op.k)
        for a, members in enumerate(op.members):
            row = self._row(a)
            ranks = np.arange(op.sizes[a])
            total = np.zeros(op.sizes[a])
            for o, period in enumerate(op.periods):
                square = row[op.offsets[o]: op.offsets[o + 1]] ** 2
                if not square.any():
                    continue
                observed = frequencies[op.offsets[o]: op.offsets[o + 1]]
                # c(i) = sum_t r((t - i) mod T)^2 f(t): cyclic cross-correlation
                correlation = np.fft.ifft(np.conj(np.fft.fft(square)) * np.fft.fft(observed)).real
                total += correlation[ranks % period]
            weighted[members] = total
        variances = (weighted - estimate**2) / n
        return estimate, np.sqrt(np.maximum(variances, 0.0))  # >= 0 in exact arithmetic; clip rounding only

    # ------------------------------------------------------------ transforms
    def _solve(self, frequencies: np.ndarray) -> np.ndarray:
        op = self.operator
        outputs = [np.fft.fft(frequencies[op.offsets[o]: op.offsets[o + 1]]) / np.sqrt(period)
                   for o, period in enumerate(op.periods)]
        spectra = [np.zeros(n, dtype=complex) for n in op.sizes]
        for group in self.groups:
            observed = np.stack([outputs[o][group.numerators * (op.periods[o] // group.q)] for o in group.orbits],
                                axis=1) if group.orbits.size else np.zeros((group.numerators.size, 0), complex)
            modes = group.inverse(np.einsum("fco,fo->fc", np.conj(group.transfer), observed))
            for c, a in enumerate(group.classes):
                spectra[a][group.numerators * (op.sizes[a] // group.q)] = modes[:, c]
        estimate = np.empty(op.k)
        for members, spectrum in zip(op.members, spectra):
            estimate[members] = (np.sqrt(spectrum.size) * np.fft.ifft(spectrum)).real
        return estimate

    def _row(self, a: int) -> np.ndarray:
        """Row of ``A = (Q Q^T)^{-1} Q`` for the rank-0 member of class a, over all outputs."""
        op = self.operator
        spectra = [np.zeros(period, dtype=complex) for period in op.periods]
        for group in self.groups:
            where = np.flatnonzero(group.classes == a)
            if not where.size:
                continue
            unit = np.zeros((group.numerators.size, group.classes.size), dtype=complex)
            unit[:, where[0]] = 1.0 / np.sqrt(op.sizes[a])  # the modes of e_(a, 0)
            modes = np.einsum("fco,fc->fo", group.transfer, group.inverse(unit))
            for column, o in enumerate(group.orbits):
                spectra[o][group.numerators * (op.periods[o] // group.q)] = modes[:, column]
        return np.concatenate([(np.sqrt(spectrum.size) * np.fft.ifft(spectrum)).real for spectrum in spectra])
