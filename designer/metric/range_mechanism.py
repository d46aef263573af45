"""The L1 range mechanism for ``[m_1] x ... x [m_D]`` (metric-ldp-range-counting.md, Section IV).

Privacy guarantee (Proposition 3, for the flips actually drawn):
:meth:`L1RangeMechanism.encode` is ``E_{L1}``-LDP with
``E(x, x') = epsilon * ||x - x'||_1``. Each coordinate ``x[d]`` becomes the +-1
vector ``b_d`` (``-1`` before position ``x[d]``, ``+1`` from it on); moving
``x[d]`` by one changes exactly one entry of ``b_d``. Each entry is flipped
independently when a uniform 32-bit integer is below the threshold
``T = ceil(2^32 / (e^epsilon + 1))`` (:func:`designer.noise.flip_threshold`,
decided in exact arithmetic), so the realised flip probability is exactly the
rational ``p = T / 2^32 >= 1 / (e^epsilon + 1)`` and one flip has log-ratio
``epsilon' = ln((2^32 - T) / T) <= epsilon`` (:attr:`L1RangeMechanism.privacy_level`;
``epsilon - epsilon' < 2^-32 / (p (1 - p))``). The likelihood ratio of any report
is therefore at most ``exp(epsilon' * ||x - x'||_1)``. No floating-point number
enters a flip decision. The estimators use ``alpha = 1 - 2p`` of the realised p,
so they stay exactly unbiased.
:meth:`L1RangeMechanism.channel` builds the full channel on small domains so
the project certifier can check this claim.

Indices are 0-based here (the paper counts from 1): value ``x[d]`` lies in
``0 .. m_d - 1``, a range is ``lower <= x <= upper`` inclusive. Tensors are
indexed by the D coordinates (C order). The paper's ``ind(x)`` numbers cells
with dimension 1 fastest, so its ``B_{m,D}`` (eq. 5) equals
``B_{m_D} (x) ... (x) B_{m_1}`` and ``B_{m,D}^{-1}`` (eq. 8) the Kronecker product
of the 1-dimensional inverses; we apply these factors axis by axis
(:func:`solvers.kronecker.mode_product`) and never build the
``m^D x m^D`` matrix.

Notation: ``alpha = 1 - 2p`` (``(e^epsilon - 1) / (e^epsilon + 1)`` in the
paper, up to the threshold rounding of p), so that ``E[r_d[k]] = alpha * b_d[k]``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from designer.channel import Channel
from designer.noise import flip_threshold, random_words
from designer.spec import PrivacyMatrix
from solvers.kronecker import contract_separable, khatri_rao_gram, mode_product

#: Entries ``(user, position)`` encoded per block (the temporary words and bits take ~5 bytes each).
ENCODE_BLOCK_BYTES = 2**22
#: Report bytes (one per user and position) collected per block by :meth:`L1RangeMechanism.collect`.
COLLECT_BLOCK_BYTES = 2**24
#: Bits of the uniform integers compared with the flip threshold.
FLIP_BITS = 32
#: Largest output alphabet :meth:`L1RangeMechanism.channel` will enumerate.
MAX_CHANNEL_OUTPUTS = 2**16


# ----------------------------------------------------------- 1-dimensional parts
def basis_matrix(m: int) -> np.ndarray:
    """``B_{m,1}`` of eq. (5), base case: ``B[k, x] = +1`` if ``x <= k`` else ``-1``.

    Column ``x`` is the encoding ``b`` of value ``x``; ``E[o] = alpha^D B c`` (eq. 4).
    """
    index = np.arange(m)
    return np.where(index[None, :] <= index[:, None], 1.0, -1.0)


def inverse_basis_matrix(m: int) -> sp.csr_matrix:
    """``B_{m,1}^{-1}`` of eq. (8), base case, as a sparse matrix (2m - 1 non-zeros).

    Row 0 is ``(e_0 + e_{m-1}) / 2``; row ``k >= 1`` is ``(e_k - e_{k-1}) / 2``.
    """
    if m < 1:
        raise ValueError(f"a dimension size must be >= 1, got {m}")
    rows = np.concatenate([[0, 0], np.arange(1, m), np.arange(1, m)])
    cols = np.concatenate([[0, m - 1], np.arange(1, m), np.arange(0, m - 1)])
    data = np.concatenate([[0.5, 0.5], np.full(m - 1, 0.5), np.full(m - 1, -0.5)])
    return sp.coo_matrix((data, (rows, cols)), shape=(m, m)).tocsr()


def _range_corners(lower: np.ndarray, upper: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Non-zeros of ``B_{m,1}^{-T} 1_{[l, u]}``: two observation indices and coefficients per range.

    Telescoping eq. (7) in one dimension: ``sum_{k=l}^{u} (B^{-1} o)_k`` equals
    ``(o_u - o_{l-1}) / 2`` for ``l >= 1`` and ``(o_u + o_{m-1}) / 2`` for ``l = 0``
    (the two terms merge into ``o_{m-1}`` when the range is all of ``[m]``).
    """
    first = upper
    second = np.where(lower > 0, lower - 1, m - 1)
    second_coefficient = np.where(lower > 0, -0.5, 0.5)
    return first, np.full(upper.shape, 0.5), second, second_coefficient


def _uniform_16(count: int, rng: np.random.Generator | None) -> np.ndarray:
    """``count`` uniform 16-bit words (quarters of uniform 64-bit words, :func:`designer.noise.random_words`)."""
    return random_words((count + 3) // 4, rng, bits=64).view(np.uint16)[:count]


def _signs(bits: np.ndarray) -> np.ndarray:
    """Booleans (True = +1) as +-1 int8, in place."""
    signs = bits.view(np.int8)
    signs *= 2
    signs -= 1
    return signs


# --------------------------------------------------------------- the mechanism
class L1RangeMechanism:
    """E_{L1}-LDP encoder and range-query estimator (Section IV-A, IV-C).

    Parameters
    ----------
    shape : int or sequence of int
        Domain sizes ``(m_1, ..., m_D)``; different sizes per dimension are
        allowed (Section IV-C).
    epsilon : float
        The scale of the metric ``E(x, x') = epsilon * ||x - x'||_1``; must be > 0.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> mechanism = L1RangeMechanism((8, 8), epsilon=1.0)
    >>> values = rng.integers(0, 8, size=(1000, 2))
    >>> oracle = mechanism.estimate(mechanism.observations(mechanism.encode(values, rng)), n=1000)
    >>> oracle.frequencies().shape
    (8, 8)
    """

    def __init__(self, shape: int | Sequence[int], epsilon: float):
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(m) for m in shape)
        if not shape or min(shape) < 1:
            raise ValueError(f"domain sizes must be positive integers, got {shape}")
        if not (float(epsilon) > 0 and math.isfinite(float(epsilon))):
            raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
        self.shape: tuple[int, ...] = shape
        self.epsilon = float(epsilon)
        #: Flip when a uniform integer in ``[0, 2^32)`` is below this (:func:`designer.noise.flip_threshold`).
        self.threshold = flip_threshold(self.epsilon, FLIP_BITS)

    @property
    def dimensions(self) -> int:
        """D, the number of dimensions."""
        return len(self.shape)

    @property
    def flip_fraction(self) -> Fraction:
        """The realised flip probability ``p = T / 2^32`` exactly (``>= 1 / (e^epsilon + 1)``)."""
        return Fraction(self.threshold, 2**FLIP_BITS)

    @property
    def flip_probability(self) -> float:
        """``p = T / 2^32`` as a double (exact: T has at most 32 bits)."""
        return float(self.flip_fraction)

    @property
    def privacy_level(self) -> float:
        """``epsilon' = ln((2^32 - T) / T) <= epsilon``: the log-ratio of one realised flip (Proposition 3)."""
        return math.log((2**FLIP_BITS - self.threshold) / self.threshold)

    @property
    def alpha(self) -> float:
        """``1 - 2p`` for the realised p (exact as a double): ``E[r_d[k]] = alpha * b_d[k]``."""
        return float(1 - 2 * self.flip_fraction)

    def privacy_matrix(self) -> PrivacyMatrix:
        """The guarantee of Proposition 3 as an E matrix (cells in C order); small domains only."""
        return PrivacyMatrix.grid_l1(self.shape, self.epsilon)

    # ----------------------------------------------------------- encoding
    def _check_values(self, values) -> np.ndarray:
        values = np.asarray(values)
        if values.ndim == 1 and self.dimensions == 1:
            values = values[:, None]
        if values.ndim != 2 or values.shape[1] != self.dimensions:
            raise ValueError(f"values must have shape (n, {self.dimensions}), got {values.shape}")
        if not np.issubdtype(values.dtype, np.integer):
            raise ValueError("values must be integers (0-based cell coordinates)")
        for d, m in enumerate(self.shape):
            bad = np.flatnonzero((values[:, d] < 0) | (values[:, d] >= m))
            if bad.size:
                raise ValueError(f"value {bad[0]}: coordinate {d} is {values[bad[0], d]}, outside 0..{m - 1}")
        return values

    def encode(self, values, rng: np.random.Generator | None = None) -> list[np.ndarray]:
        """Each user's report ``R = [r_1, ..., r_D]`` (Section IV-A).

        Privacy guarantee: E_{L1}-LDP with ``E = epsilon' ||x - x'||_1``,
        ``epsilon' = ln((2^32 - T) / T) <= epsilon`` (Proposition 3; module docstring).

        Parameters
        ----------
        values : int array, shape (n, D)
            0-based coordinates of each user's value.
        rng : numpy Generator or None
            None (default): the operating system's cryptographic generator
            (``secrets``). Pass a seeded Generator only for reproducible simulation.

        Returns
        -------
        list of D int8 arrays, array d of shape (n, m_d)
            ``r_d = b_d`` with each entry flipped with probability exactly
            ``T / 2^32`` (:meth:`_flips`: a uniform 32-bit integer below
            :attr:`threshold`, decided on its high 16 bits first).
        """
        values = self._check_values(values)
        return [_signs(self._bits(values[:, d], m, rng)) for d, m in enumerate(self.shape)]

    def _bits(self, coordinates: np.ndarray, m: int, rng: np.random.Generator | None) -> np.ndarray:
        """``r_d`` of every user in one dimension as booleans (True = +1): ``b_d`` XOR the flips, in blocks."""
        n = coordinates.shape[0]
        bits = np.empty((n, m), dtype=bool)
        positions = np.arange(m)
        block = max(1, ENCODE_BLOCK_BYTES // m)
        for start in range(0, n, block):
            stop = min(start + block, n)
            part = bits[start:stop]
            np.greater_equal(positions[None, :], coordinates[start:stop, None], out=part)  # b_d = +1 where True
            part ^= self._flips((stop - start, m), rng)
        return bits

    def _flips(self, shape: tuple[int, int], rng: np.random.Generator | None) -> np.ndarray:
        """Independent flips of probability exactly ``T / 2^32``, from 16-bit words.

        With ``T = 2^16 T_high + T_low``: flip when a uniform 16-bit word is below
        ``T_high``; when it equals ``T_high`` (probability ``2^-16``) flip when a
        second word is below ``T_low``. So ``P(flip) = T_high 2^-16 + 2^-16 T_low 2^-16
        = T / 2^32``, with half the random bits of one 32-bit comparison.
        """
        high, low = divmod(self.threshold, 2**16)
        words = _uniform_16(shape[0] * shape[1], rng).reshape(shape)
        flips = words < np.uint16(high)
        ties = np.flatnonzero(words == np.uint16(high))
        if ties.size:
            flips.ravel()[ties] = _uniform_16(ties.size, rng) < np.uint16(low)
        return flips

    def observations(self, reports: Sequence[np.ndarray], weights: np.ndarray | None = None) -> np.ndarray:
        """The observation tensor ``o`` of eq. (3): ``o_x = sum_i prod_d R_i[d, x[d]]``.

        Computed as chunked matrix products over users (row-wise Khatri-Rao
        products), never a Python loop over users. With public ``weights``
        ``w_i`` the sum is weighted, ``o_x = sum_i w_i prod_d R_i[d, x[d]]``,
        which answers weighted range queries (Section IV-C: summing
        ``w * c_hat_{g_w}`` over weight groups is the same linear estimate).
        """
        if len(reports) != self.dimensions:
            raise ValueError(f"expected {self.dimensions} report arrays, got {len(reports)}")
        for d, (report, m) in enumerate(zip(reports, self.shape)):
            if report.ndim != 2 or report.shape[1] != m:
                raise ValueError(f"report array {d} must have shape (n, {m}), got {report.shape}")
        if weights is not None:
            weights = np.asarray(weights, dtype=float)
            if weights.shape != (reports[0].shape[0],):
                raise ValueError(f"weights must have shape ({reports[0].shape[0]},), got {weights.shape}")
        if len(reports) == 1 and weights is None:  # D = 1: column sums of the +-1 reports
            return reports[0].sum(axis=0, dtype=np.int64).astype(float)
        return khatri_rao_gram(list(reports), weights)

    def expected_observations(self, counts: np.ndarray) -> np.ndarray:
        """``E[o] = alpha^D B_{m,D} c`` (eq. 4), by mode products with ``B_{m_d,1}``."""
        counts = self._check_counts(counts)
        return self.alpha**self.dimensions * mode_product(counts, [basis_matrix(m) for m in self.shape])

    def estimate(self, observations: np.ndarray, n: int | None = None) -> "RangeOracle":
        """The collector's oracle for frequencies and range queries (eqs. 6-7)."""
        observations = np.asarray(observations, dtype=float)
        if observations.shape != self.shape:
            raise ValueError(f"observations must have shape {self.shape}, got {observations.shape}")
        return RangeOracle(self, observations, n)

    def collect(self, values, rng: np.random.Generator | None = None, weights: np.ndarray | None = None) -> "RangeOracle":
        """Encode ``values`` and build the oracle (simulation of one collection round), in blocks of users.

        Each block of users is encoded (:meth:`encode`) and summed into the
        observation tensor (eq. 3) before the next is drawn, so memory holds one
        block of reports, not all n (at m = 1024, n = 10^6 the reports alone are 1 GB).
        """
        values = self._check_values(values)
        n = values.shape[0]
        if weights is not None:
            weights = np.asarray(weights, dtype=float)
            if weights.shape != (n,):
                raise ValueError(f"weights must have shape ({n},), got {weights.shape}")
        observations = np.zeros(self.shape)
        block = max(1, COLLECT_BLOCK_BYTES // sum(self.shape))
        for start in range(0, n, block):
            stop = min(start + block, n)
            bits = [self._bits(values[start:stop, d], m, rng) for d, m in enumerate(self.shape)]
            if self.dimensions == 1 and weights is None:  # o = (number of +1) - (number of -1) per position
                observations += 2.0 * bits[0].sum(axis=0, dtype=np.int64) - (stop - start)
            else:
                observations += self.observations([_signs(part) for part in bits], None if weights is None else weights[start:stop])
        return self.estimate(observations, n=n)

    # ----------------------------------------------------------- analysis
    def variance_bound(self, n: int) -> float:
        """Theorems 2-3 with the big-O constant set to 1 (as in Figure 1).

        ``n * ((e^eps + 1)/(e^eps - 1))^{2D} * 2^{-D} * (1 - ((e^eps - 1)/(e^eps + 1))^{2D})``.
        """
        a2 = self.alpha**2
        dims = self.dimensions
        return float(n * a2**-dims * 2.0**-dims * (1.0 - a2**dims))

    def worst_case_variance(self, n: int, full_dimensions: int = 0) -> float:
        """The largest variance of a range estimate over all datasets of n users (from :meth:`variance`).

        A user inside the box contributes
        ``alpha^{-2D} (((1 + alpha^2)/2)^{D-f} - alpha^{2D})``, where f counts the
        dimensions the box covers entirely (there ``||v_d||^2 = 1`` and the factor
        is 1), and every other user contributes less; so the maximum puts all
        users in the box. For D = 1 and f = 0 this equals :meth:`variance_bound`;
        in general it is Theorems 2-3's bound times
        ``((1 + alpha^2)^{D-f} 2^f - (2 alpha^2)^D) / (1 - alpha^{2D})``
        (a constant of the O(.), at most 2^D).
        """
        if not 0 <= full_dimensions <= self.dimensions:
            raise ValueError(f"full_dimensions must be in 0..{self.dimensions}, got {full_dimensions}")
        a2 = self.alpha**2
        dims = self.dimensions
        return float(n * (((1.0 + a2) / 2.0) ** (dims - full_dimensions) - a2**dims) / a2**dims)

    def variance(self, counts: np.ndarray, functionals: Sequence[np.ndarray]) -> float:
        """Exact variance of the estimate of ``sum_x c_hat_x prod_d u_d[x[d]]`` (eqs. 6-7).

        Derivation (one user with value x; the estimate is
        ``alpha^{-D} prod_d Z_d`` with ``Z_d = <v_d, r_d>``, ``v_d = B^{-T} u_d``):
        the entries of ``r_d`` are independent +-1 with mean ``alpha b_d``, so
        ``E[Z_d] = alpha u_d[x[d]]`` and
        ``E[Z_d^2] = (1 - alpha^2) ||v_d||^2 + alpha^2 u_d[x[d]]^2``; dimensions
        are independent, users too. Hence
        ``Var = alpha^{-2D} (sum_x c_x prod_d g_d[x[d]] - alpha^{2D} sum_x c_x prod_d u_d[x[d]]^2)``
        with ``g_d = (1 - alpha^2) ||v_d||^2 + alpha^2 u_d^2``. For a range,
        ``||v_d||^2 = 1/2`` unless the range covers all of dimension d (then 1);
        this is the quantity Theorems 2-3 bound. With public weights pass
        ``counts`` = sum of squared weights per cell.
        """
        counts = self._check_counts(counts)
        u = self._check_functionals(functionals)
        a2 = self.alpha**2
        factors = []
        for vector, m in zip(u, self.shape):
            dual = inverse_basis_matrix(m).T @ vector
            factors.append((1.0 - a2) * float(dual @ dual) + a2 * vector**2)
        total = contract_separable(counts, factors) - a2**self.dimensions * contract_separable(counts, [v**2 for v in u])
        return float(total / a2**self.dimensions)

    def range_variances(self, counts: np.ndarray, lower, upper) -> np.ndarray:
        """Exact variances of the range estimates of eq. (7), one per query (see :meth:`variance`)."""
        lower, upper = self._check_ranges(lower, upper)
        return np.array([self.variance(counts, self.range_functionals(lo, up)) for lo, up in zip(lower, upper)])

    def frequency_variances(self, counts: np.ndarray) -> np.ndarray:
        """Exact variance of every single-cell estimate ``c_hat_x`` (eq. 6), as a tensor.

        For a single cell every dimension's dual functional has ``||v_d||^2 = 1/2``
        (``m_d >= 2``), so ``g_d = (1 - alpha^2)/2 + alpha^2 [x[d] = y[d]]``: one mode
        product of ``c`` with ``(1 - alpha^2)/2 * J + alpha^2 * I`` per axis, applied as a
        sum along the axis plus a multiple of ``c`` (never the ``m_d x m_d`` matrix).
        """
        counts = self._check_counts(counts)
        a2 = self.alpha**2
        mixed = counts
        for axis, m in enumerate(self.shape):  # (1 - alpha^2) half J + alpha^2 I along the axis, in O(cells)
            half = 1.0 if m == 1 else 0.5
            mixed = (1.0 - a2) * half * mixed.sum(axis=axis, keepdims=True) + a2 * mixed
        return (mixed - a2**self.dimensions * counts) / a2**self.dimensions

    # ----------------------------------------------------------- small domains
    def channel(self) -> Channel:
        """The full channel ``Q[x, R]`` over all sign patterns (small domains only).

        Rows are cells in C order (matching :meth:`privacy_matrix`), columns all
        ``2^{sum m_d}`` reports. Raises ValueError above ``MAX_CHANNEL_OUTPUTS``.
        """
        bits = sum(self.shape)
        if 2**bits > MAX_CHANNEL_OUTPUTS:
            raise ValueError(f"the channel has 2^{bits} outputs; only domains with sum(m_d) <= 16 are enumerated")
        flip = self.flip_probability
        per_dimension = []
        for m in self.shape:
            patterns = np.array(list(itertools.product([-1, 1], repeat=m)))  # (2^m, m)
            encodings = basis_matrix(m).T  # row x = b for value x
            agree = (patterns[None, :, :] == encodings[:, None, :]).sum(axis=2)
            per_dimension.append((1 - flip) ** agree * flip ** (m - agree))  # (m, 2^m)
        matrix = per_dimension[0]
        for factor in per_dimension[1:]:
            matrix = np.kron(matrix, factor)
        return Channel(matrix)

    # ----------------------------------------------------------- validation
    def _check_counts(self, counts) -> np.ndarray:
        counts = np.asarray(counts, dtype=float)
        if counts.shape != self.shape:
            raise ValueError(f"counts must have shape {self.shape}, got {counts.shape}")
        return counts

    def _check_functionals(self, functionals) -> list[np.ndarray]:
        if len(functionals) != self.dimensions:
            raise ValueError(f"expected {self.dimensions} functionals, got {len(functionals)}")
        out = []
        for d, (vector, m) in enumerate(zip(functionals, self.shape)):
            vector = np.asarray(vector, dtype=float)
            if vector.shape != (m,):
                raise ValueError(f"functional {d} must have length {m}, got shape {vector.shape}")
            out.append(vector)
        return out

    def _check_ranges(self, lower, upper) -> tuple[np.ndarray, np.ndarray]:
        lower = np.atleast_2d(np.asarray(lower))
        upper = np.atleast_2d(np.asarray(upper))
        if lower.shape != upper.shape or lower.shape[1] != self.dimensions:
            raise ValueError(f"lower and upper must both have shape (q, {self.dimensions})")
        if not (np.issubdtype(lower.dtype, np.integer) and np.issubdtype(upper.dtype, np.integer)):
            raise ValueError("range bounds must be integers")
        sizes = np.array(self.shape)
        bad = np.flatnonzero(np.any((lower < 0) | (upper >= sizes) | (lower > upper), axis=1))
        if bad.size:
            q = bad[0]
            raise ValueError(f"range {q}: need 0 <= lower <= upper < {list(self.shape)}, got {lower[q].tolist()}..{upper[q].tolist()}")
        return lower.astype(np.int64), upper.astype(np.int64)

    def range_functionals(self, lower: Sequence[int], upper: Sequence[int]) -> list[np.ndarray]:
        """The box ``lower <= x <= upper`` as one indicator vector per dimension (for linear queries)."""
        checked_lower, checked_upper = self._check_ranges([list(lower)], [list(upper)])
        out = []
        for lo, up, m in zip(checked_lower[0], checked_upper[0], self.shape):
            vector = np.zeros(m)
            vector[lo : up + 1] = 1.0
            out.append(vector)
        return out


@dataclass
class RangeOracle:
    """Answers queries from the observation tensor ``o`` (eqs. 6-7).

    Attributes
    ----------
    mechanism : L1RangeMechanism
    observations : ndarray with the mechanism's shape
    n : int or None
        Number of users (needed for percentiles and quantiles only).
    """

    mechanism: L1RangeMechanism
    observations: np.ndarray
    n: int | None = None

    @property
    def _scale(self) -> float:
        return self.mechanism.alpha ** -self.mechanism.dimensions

    def frequencies(self) -> np.ndarray:
        """All single-cell estimates ``c_hat = alpha^{-D} B_{m,D}^{-1} o`` (eq. 6).

        ``B_{m,D}^{-1}`` (eq. 8) is applied as its Kronecker factors, one sparse
        ``m_d x m_d`` matrix per axis: ``O(D * prod m_d)`` work.
        """
        inverses = [inverse_basis_matrix(m) for m in self.mechanism.shape]
        return self._scale * mode_product(self.observations, inverses)

    def range_queries(self, lower, upper) -> np.ndarray:
        """Estimates ``c_hat(R) = sum_{x in R} c_hat_x`` (eq. 7) for q boxes at once.

        Parameters
        ----------
        lower, upper : int arrays, shape (q, D)
            Inclusive 0-based bounds of each box.

        Notes
        -----
        The sum over the box of rows of ``B_{m,D}^{-1}`` telescopes (the
        cancellation behind Theorem 3): per dimension only two observation
        indices remain, so each query reads ``2^D`` entries of ``o``, whatever
        the box size.
        """
        lower, upper = self.mechanism._check_ranges(lower, upper)
        q, dims = lower.shape
        corners = [_range_corners(lower[:, d], upper[:, d], m) for d, m in enumerate(self.mechanism.shape)]
        total = np.zeros(q)
        for choice in itertools.product((0, 1), repeat=dims):
            index = tuple(corners[d][2 * c] for d, c in enumerate(choice))
            coefficient = np.prod([corners[d][2 * c + 1] for d, c in enumerate(choice)], axis=0)
            total += coefficient * self.observations[index]
        return self._scale * total

    def range_query(self, lower: Sequence[int], upper: Sequence[int]) -> float:
        """One box ``[lower_1, upper_1] x ... x [lower_D, upper_D]`` (eq. 7), ``2^D`` reads of ``o``.

        Same telescoped sum as :meth:`range_queries`, in plain Python for a low
        per-call overhead.
        """
        shape = self.mechanism.shape
        if len(lower) != len(shape) or len(upper) != len(shape):
            raise ValueError(f"a range needs {len(shape)} lower and upper bounds")
        terms = []
        for d, (lo, up, m) in enumerate(zip(lower, upper, shape)):
            if int(lo) != lo or int(up) != up or not 0 <= lo <= up < m:
                raise ValueError(f"dimension {d}: need 0 <= lower <= upper < {m}, got {lo}..{up}")
            terms.append(((int(up), 0.5), (int(lo) - 1, -0.5) if lo > 0 else (m - 1, 0.5)))
        total = 0.0
        for corner in itertools.product(*terms):
            coefficient = 1.0
            for _, weight in corner:
                coefficient *= weight
            total += coefficient * self.observations[tuple(index for index, _ in corner)]
        return float(self._scale * total)

    def linear_query(self, functionals: Sequence[np.ndarray]) -> float:
        """Estimate ``sum_x c_x prod_d u_d[x[d]]`` as ``sum_x c_hat_x prod_d u_d[x[d]]`` (eqs. 6-7).

        Computed as ``alpha^{-D} <(B^{-T} u_1) (x) ... (x) (B^{-T} u_D), o>`` on
        the non-zeros only. Weighted range queries with private weights
        (Section IV-C) use a weight axis: indicators on the D data axes and the
        weight levels on the extra axis (see :meth:`weighted_range_query`).
        """
        u = self.mechanism._check_functionals(functionals)
        duals = [inverse_basis_matrix(m).T @ vector for vector, m in zip(u, self.mechanism.shape)]
        return self._scale * contract_separable(self.observations, duals)

    def weighted_range_query(self, lower: Sequence[int], upper: Sequence[int], weight_levels: np.ndarray) -> float:
        """``sum_i w_i [x_i in R]`` when the weight is a private last dimension (Section IV-C).

        The mechanism's last axis holds the weight level index; ``weight_levels[j]``
        is the weight of level j. ``lower``/``upper`` bound the D - 1 data axes.
        """
        dims = self.mechanism.dimensions
        if len(lower) != dims - 1 or len(upper) != dims - 1:
            raise ValueError(f"a weighted range on this mechanism has {dims - 1} data dimensions")
        levels = np.asarray(weight_levels, dtype=float)
        last = self.mechanism.shape[-1] - 1
        functionals = self.mechanism.range_functionals(list(lower) + [0], list(upper) + [last])
        return self.linear_query(functionals[:-1] + [levels])

    # ----------------------------------------------------------- quantiles (1-D)
    def percentile(self, x: int) -> float:
        """``sigma_hat(x) = c_hat([0, x]) / n`` (Section V); ``sigma_hat(-1) = 0``."""
        self._require_quantiles()
        if x < 0:
            return 0.0
        return self.range_query([0], [int(x)]) / self.n

    def quantile(self, p: float) -> int:
        """Estimated p-quantile by binary search on ``sigma_hat`` (Section V).

        Returns ``x_hat`` (0-based) with ``sigma_hat(x_hat - 1) < p <= sigma_hat(x_hat)``,
        where the conditions at the ends of the domain are dropped
        (``x_hat = 0`` needs no left condition, ``x_hat = m - 1`` no right one).
        The invariants hold for the probed points even if ``sigma_hat`` is not
        monotone; ``ceil(log2 m)`` range estimates are used.
        """
        self._require_quantiles()
        if not 0 < p <= 1:
            raise ValueError(f"p must be in (0, 1], got {p}")
        low, high = 0, self.mechanism.shape[0] - 1
        while low < high:
            middle = (low + high) // 2
            if self.percentile(middle) >= p:
                high = middle
            else:
                low = middle + 1
        return low

    def _require_quantiles(self) -> None:
        if self.mechanism.dimensions != 1:
            raise ValueError("percentiles and quantiles are defined for one-dimensional domains")
        if not self.n:
            raise ValueError("the number of users n is needed for percentiles")


# --------------------------------------------------------------- quantile analysis
def quantile_error(values: np.ndarray, estimate: int, p: float) -> float:
    """``Err[x_hat] = inf_{p_hat in I(x_hat)} |p_hat - p|`` with ``I(x) = (sigma(x-1), sigma(x)]`` (Section V)."""
    values = np.asarray(values).ravel()
    below = float(np.mean(values <= estimate - 1))
    at_most = float(np.mean(values <= estimate))
    if p <= below:
        return below - p
    if p > at_most:
        return p - at_most
    return 0.0


def quantile_error_bound(n: int, epsilon: float, m: int, delta: float) -> float:
    """Theorem 4: ``Err <= 2 (e^eps + 1)/(e^eps - 1) * sqrt(2/n * log(2 log m / delta))`` w.p. ``1 - delta``.

    ``log m`` counts binary-search steps, read as ``ceil(log2 m)`` (at least 1);
    the outer log is natural (Hoeffding's inequality with a union bound).
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    steps = max(1, math.ceil(math.log2(m)))
    return 2.0 / math.tanh(epsilon / 2.0) * math.sqrt(2.0 / n * math.log(2.0 * steps / delta))


# --------------------------------------------------------------- synthetic data
def zipf_values(shape: Sequence[int], n: int, rng: np.random.Generator, exponent: float = 1.1) -> np.ndarray:
    """``n`` points of ``[m_1] x ... x [m_D]`` with independent truncated Zipf coordinates (Figure 1).

    ``P(x[d] = k) ~ (k + 1)^{-exponent}`` for ``k = 0 .. m_d - 1``.
    """
    columns = []
    for m in shape:
        weights = np.arange(1, m + 1, dtype=float) ** -exponent
        columns.append(rng.choice(m, size=n, p=weights / weights.sum()))
    return np.stack(columns, axis=1)


def random_ranges(shape: Sequence[int], q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``q`` random boxes: per dimension two uniform cells, sorted into ``lower <= upper``."""
    ends = np.stack([rng.integers(0, m, size=(q, 2)) for m in shape], axis=1)  # (q, D, 2)
    return ends.min(axis=2), ends.max(axis=2)


def cell_counts(shape: Sequence[int], values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The frequency tensor ``c`` (or per-cell weight sums) of 0-based values."""
    flat = np.ravel_multi_index(tuple(np.asarray(values).T), tuple(shape))
    return np.bincount(flat, weights=weights, minlength=int(np.prod(shape))).astype(float).reshape(tuple(shape))


def true_range_counts(counts: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Exact ``c(R)`` for q boxes via an inclusive prefix-sum tensor (2^D lookups each)."""
    dims = counts.ndim
    prefix = counts
    for axis in range(dims):
        prefix = np.cumsum(prefix, axis=axis)
    prefix = np.pad(prefix, [(1, 0)] * dims)
    total = np.zeros(len(lower))
    for choice in itertools.product((0, 1), repeat=dims):
        index = tuple(np.where(c, upper[:, d] + 1, lower[:, d]) for d, c in enumerate(choice))
        total += (-1) ** (dims - sum(choice)) * prefix[index]
    return total
