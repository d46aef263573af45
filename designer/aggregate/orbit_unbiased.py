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

Since ``G_phi = conj(B_phi) B_phi^T``, the singular values of ``Q`` are those of the ``B_phi``:
each block is solved through the SVD of ``B_phi`` and the rank counted on it
(:class:`OrbitSpectrum`).

Cost: ``O(sum_a n_a log n_a + sum_o T_o log T_o)`` for the transforms, one SVD of an
r x (orbits) block per frequency, and ``O(r m log m)`` for the variances; ``Q`` is never materialised.
The dense ``lstsq`` and ``pinv`` of :mod:`designer.estimation` are the reference in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from designer.deploy.orbit_operator import OrbitOperator


@dataclass(frozen=True)
class _Frequencies:
    """The frequencies ``num / q`` (``gcd(num, q) = 1``) of one denominator q, with their blocks.

    ``transfer = U diag(sigma) V^H`` per frequency (reduced SVD, ``min(classes, orbits)`` values).
    """

    q: int
    numerators: np.ndarray  # (f,)
    classes: np.ndarray  # the classes a with q | n_a
    orbits: np.ndarray  # the orbits o with q | T_o
    transfer: np.ndarray  # B_phi, (f, classes, orbits)
    left: np.ndarray  # U, (f, classes, r)
    sigma: np.ndarray  # singular values of B_phi, (f, r), r = min(classes, orbits)
    right: np.ndarray  # V^H, (f, r, orbits)

    def lost(self, tolerance: float) -> np.ndarray:
        """Per frequency, the directions of its classes' modes the reports cannot see (classes minus kept values)."""
        return self.classes.size - (self.sigma > tolerance).sum(axis=1)

    def solve(self, observed: np.ndarray) -> np.ndarray:
        """``G_phi^{-1} conj(B_phi) y = conj(U) diag(1 / sigma) V^T y`` for a stack y of shape (f, orbits)."""
        rotated = np.einsum("fro,fo->fr", np.conj(self.right), observed) / self.sigma
        return np.einsum("fcr,fr->fc", np.conj(self.left), rotated)

    def dual(self, unit: np.ndarray) -> np.ndarray:
        """``B_phi^T G_phi^{-1} e = conj(V) diag(1 / sigma) U^T e`` for a stack e of shape (f, classes)."""
        rotated = np.einsum("fcr,fc->fr", self.left, unit) / self.sigma
        return np.einsum("fro,fr->fo", self.right, rotated)


class OrbitSpectrum:
    """The block-diagonal form of ``Q`` of an orbit package (module docstring), and its rank.

    The singular values of ``Q`` are those of the blocks ``B_phi`` (``Q`` is block diagonal
    in unitary Fourier bases), so :attr:`rank` applies to them the rule of
    ``numpy.linalg.matrix_rank``: a singular value counts iff it exceeds
    ``sigma_max * max(k, m) * eps`` (Press et al., *Numerical Recipes*, 2nd ed., sec. 2.6; the
    default of ``matrix_rank``), and each block is solved through its SVD, never through the
    Gram matrix ``G_phi`` (whose eigenvalues are ``sigma^2``: a cut on them would drop every
    ``sigma / sigma_max <= sqrt(max(k, m) eps)``, and its inverse squares the condition number).

    Parameters
    ----------
    operator : OrbitOperator
        The package's channel (its bands: per orbit and class, the counts j, l and the values).

    Attributes
    ----------
    tolerance : float
        ``sigma_max * max(k, m) * eps``.
    condition : float
        ``sigma_max / sigma_min`` of ``Q`` over the singular values kept (``inf`` if none is).
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
            left, sigma, right = np.linalg.svd(transfer, full_matrices=False)
            self.groups.append(_Frequencies(q, numerators, classes, orbits, transfer, left, sigma, right))
        values = np.concatenate([group.sigma.ravel() for group in self.groups])
        largest = float(values.max()) if values.size else 0.0
        self.tolerance = largest * max(operator.k, operator.n_outputs) * np.finfo(float).eps
        kept = values[values > self.tolerance]
        self.condition = largest / float(kept.min()) if kept.size else np.inf

    @property
    def rank(self) -> int:
        """``rank Q``: the singular values of the blocks above :attr:`tolerance` (class docstring)."""
        return self.operator.k - sum(int(group.lost(self.tolerance).sum()) for group in self.groups)

    def unidentifiable(self) -> str | None:
        """None if ``rank Q = k``; else the rank, the first frequency that loses a direction, and its classes.

        The lost direction is a left singular vector of ``B_phi`` (a combination of the classes'
        modes of that frequency) whose singular value is at most :attr:`tolerance`; the message
        names the classes with a weight above 1e-8 in it. Computed once per spectrum.
        """
        return self._reason

    @cached_property
    def _reason(self) -> str | None:
        for group in self.groups:
            lost = np.flatnonzero(group.lost(self.tolerance))
            if lost.size:
                f = lost[0]
                left, sigma, _ = np.linalg.svd(group.transfer[f])  # full U: its null columns too
                direction = left[:, int((sigma > self.tolerance).sum())]
                classes = ", ".join(str(int(a)) for a in group.classes[np.abs(direction) > 1e-8])
                return (f"the channel has rank {self.rank} < k = {self.operator.k}: the reports cannot see the "
                        f"cyclic mode of frequency {group.numerators[f]}/{group.q} of the ranks of class(es) {classes}")
        return None

    def estimate(self, counts) -> np.ndarray:
        """``p_hat = (Q Q^T)^{-1} Q f`` with ``f`` the output frequencies of ``counts``.

        Raises
        ------
        ValueError
            ``rank Q < k`` (:meth:`unidentifiable`): no unbiased estimator exists.
        """
        counts = np.asarray(counts, dtype=float)
        return self._solve(counts / counts.sum())

    def interval(self, counts) -> tuple[np.ndarray, np.ndarray]:
        """The unbiased estimate and its exact plug-in standard errors ``sqrt(diag Cov)`` (module docstring).

        Raises
        ------
        ValueError
            ``rank Q < k``, as :meth:`estimate`.
        """
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
        reason = self.unidentifiable()
        if reason is not None:  # a lost direction has sigma ~ 0: dividing by it gives NaN or noise
            raise ValueError(f"no unbiased estimator: {reason}")
        op = self.operator
        outputs = [np.fft.fft(frequencies[op.offsets[o]: op.offsets[o + 1]]) / np.sqrt(period)
                   for o, period in enumerate(op.periods)]
        spectra = [np.zeros(n, dtype=complex) for n in op.sizes]
        for group in self.groups:
            observed = np.stack([outputs[o][group.numerators * (op.periods[o] // group.q)] for o in group.orbits],
                                axis=1) if group.orbits.size else np.zeros((group.numerators.size, 0), complex)
            modes = group.solve(observed)
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
            modes = group.dual(unit)
            for column, o in enumerate(group.orbits):
                spectra[o][group.numerators * (op.periods[o] // group.q)] = modes[:, column]
        return np.concatenate([(np.sqrt(spectrum.size) * np.fft.ifft(spectrum)).real for spectrum in spectra])
