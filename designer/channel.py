"""Randomised channels ``Q[x, y] = P(Y = y | X = x)``.

Rows are true values, columns are reports; every row is a probability
distribution. A channel may carry its entries exactly (rationals), which the
exact certifier uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from designer.exact import DecimalCells, parse_rational
from designer.spec import PrivacyMatrix
from solvers.maxplus import max_log_ratio

#: Rows of a channel must sum to 1 within this absolute tolerance.
ROW_SUM_ATOL = 1e-9


class Channel:
    """A randomised mechanism on a finite domain.

    Parameters
    ----------
    matrix : array_like, shape (k, m)
        ``matrix[x, y] = P(Y = y | X = x)``. A float array is used as is (no
        parsing); numbers, or strings/Fractions read exactly (``"1/3"``), keep
        their exact entries in :attr:`exact_matrix`.
    input_labels, output_labels : sequence of str, optional
    row_sum_atol : float
        How far a row sum may be from 1 (rows are summed in floats).
    exact_matrix : array_like of Fraction, shape (k, m), optional
        The exact entries when ``matrix`` holds their floats already (as
        :func:`designer.io.read_channel` gives them): neither is parsed again.
        A :class:`~designer.exact.DecimalCells` is read only when asked for
        (:attr:`exact_matrix`, or cell by cell by the exact certifier).

    Raises
    ------
    ValueError
        Not 2-D, empty, a negative/NaN/infinite entry, or a row not summing to 1;
        the message names the row and value.
    """

    def __init__(
        self,
        matrix,
        input_labels: Sequence[str] | None = None,
        output_labels: Sequence[str] | None = None,
        row_sum_atol: float = ROW_SUM_ATOL,
        exact_matrix=None,
    ):
        self._lazy: DecimalCells | None = None
        if isinstance(exact_matrix, DecimalCells):  # exact entries read only when asked for
            self._lazy, exact_matrix = exact_matrix, None
        if exact_matrix is not None:
            raw = np.asarray(exact_matrix, dtype=object)
        else:
            raw = np.asarray(matrix, dtype=object if _has_exact_entries(matrix) else float)
        if raw.ndim != 2 or raw.shape[0] == 0 or raw.shape[1] == 0:
            raise ValueError(f"a channel must be a non-empty k x m matrix, got shape {raw.shape}")
        self._exact: np.ndarray | None = None
        if raw.dtype == object:
            exact = _exact_entries(raw)
            self._exact = exact
            if exact_matrix is not None:
                values = np.array(matrix, dtype=float)
                if values.shape != exact.shape:
                    raise ValueError(f"the float matrix {values.shape} and the exact matrix {exact.shape} differ in shape")
            else:
                values = exact.astype(float)
        else:
            values = np.array(raw, dtype=float)
        bad = np.argwhere(~np.isfinite(values) | (values < 0))
        if bad.size:
            x, y = bad[0]
            raise ValueError(f"channel row {x}, column {y}: value {float(values[x, y])!r} is not a probability")
        sums = values.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1.0) > row_sum_atol)
        if off.size:
            x = off[0]
            raise ValueError(f"channel row {x} sums to {float(sums[x])!r}, not 1 (tolerance {row_sum_atol:g})")
        values.setflags(write=False)
        self._matrix = values
        k, m = values.shape
        self.input_labels = tuple(map(str, input_labels)) if input_labels is not None else tuple(map(str, range(k)))
        self.output_labels = tuple(map(str, output_labels)) if output_labels is not None else tuple(map(str, range(m)))
        if len(self.input_labels) != k or len(self.output_labels) != m:
            raise ValueError(f"labels do not match the {k} x {m} channel")
        self._cdf: np.ndarray | None = None

    # ------------------------------------------------------------------ basics
    @property
    def matrix(self) -> np.ndarray:
        """The (read-only) float matrix ``Q``."""
        return self._matrix

    @property
    def exact_matrix(self) -> np.ndarray:
        """Entries as :class:`fractions.Fraction`: as given, or the floats' exact binary values."""
        if self._exact is None and self._lazy is not None:
            self._exact = self._lazy.matrix()
        if self._exact is not None:
            return self._exact
        return np.array([[Fraction(v) for v in row] for row in self._matrix.tolist()], dtype=object).reshape(
            self._matrix.shape
        )

    @property
    def is_exact(self) -> bool:
        """Whether the channel was given with exact (rational) entries."""
        return self._exact is not None or self._lazy is not None

    @property
    def lazy_exact(self) -> DecimalCells | None:
        """The exact entries not yet read (:class:`~designer.exact.DecimalCells`), or None."""
        return self._lazy if self._exact is None else None

    @property
    def k(self) -> int:
        """Number of inputs."""
        return self._matrix.shape[0]

    @property
    def n_outputs(self) -> int:
        """Number of outputs."""
        return self._matrix.shape[1]

    def __repr__(self) -> str:
        return f"Channel(k={self.k}, outputs={self.n_outputs})"

    # --------------------------------------------------------------- behaviour
    def sample(self, inputs, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """Draw one report ``Y ~ Q[x, :]`` for every input x.

        Parameters
        ----------
        inputs : array_like of int
            True values in ``0..k-1``.
        rng : numpy Generator or seed
            Source of randomness (seed it for reproducibility).

        Returns
        -------
        ndarray of int, same shape as ``inputs``
        """
        inputs = np.asarray(inputs)
        if inputs.size and (inputs.min() < 0 or inputs.max() >= self.k or not np.issubdtype(inputs.dtype, np.integer)):
            raise ValueError(f"inputs must be integers in 0..{self.k - 1}")
        rng = np.random.default_rng(rng)
        if self._cdf is None:
            cdf = np.cumsum(self._matrix, axis=1)
            cdf[:, -1] = np.inf  # absorb rounding: every uniform draw lands in some column
            self._cdf = cdf
        uniform = rng.random(inputs.shape)
        flat_inputs = inputs.ravel()
        flat_uniform = uniform.ravel()
        outputs = np.empty(flat_inputs.shape, dtype=np.int64)
        order = np.argsort(flat_inputs, kind="stable")
        bounds = np.searchsorted(flat_inputs[order], np.arange(self.k + 1))
        for x in range(self.k):
            members = order[bounds[x] : bounds[x + 1]]
            if members.size:
                outputs[members] = np.searchsorted(self._cdf[x], flat_uniform[members], side="right")
        return outputs.reshape(inputs.shape)

    def output_distribution(self, prior) -> np.ndarray:
        """Distribution of Y when X ~ prior: ``prior @ Q``."""
        prior = _check_prior(prior, self.k)
        return prior @ self._matrix

    def post_process(self, processing) -> "Channel":
        """Apply a post-processing channel ``K`` (m x m'): ``Q K`` (Proposition 1).

        The result is E-LDP whenever this channel is.
        """
        processing = processing.matrix if isinstance(processing, Channel) else Channel(processing).matrix
        if processing.shape[0] != self.n_outputs:
            raise ValueError(f"post-processing needs {self.n_outputs} rows, got {processing.shape[0]}")
        return Channel(self._matrix @ processing, self.input_labels)

    def tight_privacy(self) -> PrivacyMatrix:
        """The tightest E this channel satisfies: ``E_Q[x,x'] = max_y log(Q[x,y]/Q[x',y])``.

        ``inf`` where ``Q[x, y] > 0 = Q[x', y]`` for some y.
        """
        values, _ = max_log_ratio(self._matrix)
        np.fill_diagonal(values, 0.0)
        return PrivacyMatrix(np.maximum(values, 0.0), self.input_labels, "tight E of channel")


def sequential_composition(first: Channel, second: Channel | Sequence[Channel]) -> Channel:
    """Run two channels on the same input and release both reports (Proposition 2).

    ``second`` is either one channel (non-adaptive) or a list with one channel
    per output of ``first`` (adaptive: the second report may depend on the
    first). The joint report ``(y1, y2)`` is indexed ``y1 * m2 + y2``. If
    ``first`` is E1-LDP and every second channel is E2-LDP, the composition is
    (E1 + E2)-LDP.
    """
    seconds = [second] * first.n_outputs if isinstance(second, Channel) else list(second)
    if len(seconds) != first.n_outputs:
        raise ValueError(f"adaptive composition needs {first.n_outputs} second-stage channels, got {len(seconds)}")
    widths = {channel.n_outputs for channel in seconds}
    if len(widths) != 1 or any(channel.k != first.k for channel in seconds):
        raise ValueError("second-stage channels must share the input domain and the output count")
    stacked = np.stack([channel.matrix for channel in seconds], axis=1)  # k x m1 x m2
    joint = first.matrix[:, :, None] * stacked
    labels = [f"({a},{b})" for a in first.output_labels for b in seconds[0].output_labels]
    return Channel(joint.reshape(first.k, -1), first.input_labels, labels)


def parallel_composition(first: Channel, second: Channel) -> Channel:
    """Independent channels on the two parts of ``x = (x1, x2)``: ``Q1 (x) Q2`` (Kronecker).

    Its privacy is :meth:`PrivacyMatrix.product` of the two E matrices.
    Inputs and outputs are ordered with the first part major.
    """
    inputs = [f"({a},{b})" for a in first.input_labels for b in second.input_labels]
    outputs = [f"({a},{b})" for a in first.output_labels for b in second.output_labels]
    return Channel(np.kron(first.matrix, second.matrix), inputs, outputs)


def _exact_entries(raw: np.ndarray) -> np.ndarray:
    """The entries as Fractions; Fractions are kept as they are (no parsing)."""
    if all(type(entry) is Fraction for entry in raw.flat):
        return raw.copy()
    exact = np.empty(raw.shape, dtype=object)
    for (x, y), entry in np.ndenumerate(raw):
        try:
            exact[x, y] = parse_rational(entry)
        except ValueError as error:
            raise ValueError(f"channel row {x}, column {y}: {error}") from None
    return exact


def _has_exact_entries(matrix) -> bool:
    if isinstance(matrix, np.ndarray):
        return matrix.dtype == object or matrix.dtype.kind in "US"
    return any(isinstance(entry, (str, Fraction)) for row in matrix for entry in np.atleast_1d(row))


def _check_prior(prior, k: int) -> np.ndarray:
    prior = np.asarray(prior, dtype=float).ravel()
    if prior.shape != (k,):
        raise ValueError(f"prior must have {k} entries, got {prior.size}")
    if np.any(~np.isfinite(prior)) or np.any(prior < 0) or abs(prior.sum() - 1) > ROW_SUM_ATOL:
        raise ValueError("prior must be non-negative and sum to 1")
    return prior
