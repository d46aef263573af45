"""The χ² confidence set F of robust LDP (robust-ldp-chi-square.md, Sections II and IV).

Data model
----------
The data space is ``X = S x U``: a secret attribute ``S`` and a public attribute
``U``, both finite sets of **string labels sorted as strings**. A joint
distribution ``P`` is an array of shape ``(|S|, |U|)`` (``P[s, u]``); flattened,
its index is ``x = s * |U| + u``, i.e. X is ordered by ``(s, u)`` with ``s`` and
``u`` sorted as strings. This is the order of the rows of every channel
designed for F (the CLI contract for channel CSV files).

The set
-------
From ``n`` records with empirical distribution ``P̂`` and a significance level
``alpha``, eq. (3):

    F = { P : sum_x (P̂_x - P_x)^2 / P_x <= B },   B = F^{-1}_{chi2(|X| - 1)}(1 - alpha) / n,

equivalently (eq. 4) ``sum_x P̂_x^2 / P_x <= B + 1`` (terms with ``P̂_x = 0``
vanish; ``P_x = 0 < P̂_x`` is outside F).

What this module computes (all in closed form, float64):

* ``B`` (eq. 3) — :attr:`ConfidenceSet.radius`;
* ``B_s`` (Lemma 8): the projection of F on the conditional ``P_{U|s}`` is
  the χ² ball of radius ``B_s`` around ``P̂_{U|s}`` — :attr:`ConfidenceSet.conditional_radius`;
* tight bounds on ``P_x`` (Lemma 9) and on ``P_{u|s}`` (Lemma 9 applied to the
  Lemma 8 ball) — :meth:`ConfidenceSet.probability_bounds`,
  :meth:`ConfidenceSet.conditional_bounds`, with the distributions of F that
  attain them (:meth:`ConfidenceSet.extreme_distribution`);
* the L1 radius ``max_{P in F} ||P - P̂||_1`` (Proposition 10) and the
  conditional radii ``d_s`` of eq. (65);
* the exact joint projection on all conditionals at once (Lemma 8, generalised
  by the same Cauchy–Schwarz step): conditionals ``R = (R_s)_s`` are those of
  some ``P in F`` iff ``sum_s P̂_s sqrt(g_s(R_s)) <= sqrt(B + 1)`` with
  ``g_s(r) = sum_u P̂_{u|s}^2 / r_u`` — :meth:`ConfidenceSet.conditional_statistic`,
  :meth:`ConfidenceSet.lift_conditionals` (which returns such a ``P``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from designer.io import InputError, read_table

#: Bound on the total count: from 2^53 on, counts (and n) are not exact in double precision.
MAX_RECORDS = 2**53


class ConfidenceSet:
    """The χ² confidence set F around the empirical distribution of (S, U) records.

    Parameters
    ----------
    counts : array_like of int, shape (|S|, |U|)
        ``counts[s, u]`` = number of records with secret value s and public value u.
    alpha : float
        Significance level, ``0 < alpha < 1`` (F is a ``1 - alpha`` confidence set).
    secret_labels, public_labels : sequence of str, optional
        Labels of the rows and columns of ``counts``. They are sorted as strings
        and ``counts`` is permuted accordingly, so the object always follows the
        ``(s, u)``-sorted order. Defaults: zero-padded row/column numbers
        (``"0", "1", ...``, padded so that string order is numeric order).

    Raises
    ------
    ValueError
        Negative or non-integer counts, a secret value with no record
        (Lemma 8 needs ``P̂_s > 0``), fewer than two cells, duplicate labels,
        ``alpha`` outside (0, 1).

    Examples
    --------
    >>> F = ConfidenceSet([[30, 10], [20, 40]], alpha=0.05, secret_labels=["no", "yes"],
    ...                   public_labels=["a", "b"])
    >>> F.n, F.secret_labels, F.input_labels
    (100, ('no', 'yes'), ('no|a', 'no|b', 'yes|a', 'yes|b'))
    >>> round(F.radius, 6)  # chi2(3) 95% quantile / 100
    0.078147
    """

    def __init__(
        self,
        counts,
        alpha: float,
        secret_labels: Sequence[str] | None = None,
        public_labels: Sequence[str] | None = None,
    ):
        raw = np.asarray(counts)
        if raw.ndim != 2 or raw.shape[0] == 0 or raw.shape[1] == 0:
            raise ValueError(f"counts must be a non-empty |S| x |U| table, got shape {raw.shape}")
        values = np.asarray(raw, dtype=float)
        if np.any(~np.isfinite(values)) or np.any(values < 0) or np.any(values != np.round(values)):
            raise ValueError("counts must be non-negative integers")
        if values.size < 2:
            raise ValueError("the data space S x U needs at least two cells (the chi-square test has |X| - 1 >= 1 degrees of freedom)")
        if math.fsum(values.ravel()) >= MAX_RECORDS:  # fsum is exact here: no float sum hides the excess
            raise ValueError(
                f"too many records ({math.fsum(values.ravel()):.6g}): the counts must sum to less than "
                f"2^53 = {MAX_RECORDS} so that they and n are exact in double precision"
            )
        alpha = float(alpha)
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        secret = _labels(secret_labels, values.shape[0], "secret")
        public = _labels(public_labels, values.shape[1], "public")
        row_order = sorted(range(len(secret)), key=lambda i: secret[i])
        column_order = sorted(range(len(public)), key=lambda j: public[j])
        values = values[np.ix_(row_order, column_order)]
        self._secret = tuple(secret[i] for i in row_order)
        self._public = tuple(public[j] for j in column_order)
        empty = np.flatnonzero(values.sum(axis=1) == 0)
        if empty.size:
            raise ValueError(
                f"secret value {self._secret[empty[0]]!r} has no record: every secret value needs "
                "at least one (Lemma 8 needs P̂_s > 0)"
            )
        counts_int = values.astype(np.int64)
        counts_int.setflags(write=False)
        self._counts = counts_int
        self._n = int(counts_int.sum())
        self._alpha = alpha
        estimate = counts_int / self._n
        estimate.setflags(write=False)
        self._estimate = estimate
        # eq. (3); chdtri(df, alpha) is scipy.stats.chi2.isf(alpha, df) (the same routine, without
        # loading scipy.stats): ppf(1 - alpha) without the cancellation for tiny alpha
        from scipy.special import chdtri

        self._radius = float(chdtri(values.size - 1, alpha)) / self._n

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_records(cls, records, secret: str, public: str, alpha: float) -> ConfidenceSet:
        """Build F from a table of records (one row per individual).

        Parameters
        ----------
        records : pandas.DataFrame or mapping of column name -> sequence
            Must have the columns ``secret`` and ``public``. Values are compared
            as strings (``str(value)``); a missing value (None/NaN) is an error.
        secret, public : str
            Column names of S and U (must differ).
        alpha : float

        Raises
        ------
        ValueError
            Missing column (the message lists the available ones), missing value
            (the message names the row), no records.
        """
        import pandas as pd

        frame = records if isinstance(records, pd.DataFrame) else pd.DataFrame(records)
        if secret == public:
            raise ValueError(f"the secret and public columns must differ, both are {secret!r}")
        for role, column in (("secret", secret), ("public", public)):
            if column not in frame.columns:
                raise ValueError(
                    f"{role} column {column!r} not found; columns are {', '.join(map(str, frame.columns))}"
                )
        if len(frame) == 0:
            raise ValueError("no records")
        columns = []
        for column in (secret, public):
            series = frame[column]
            missing = np.flatnonzero(series.isna().to_numpy())
            if missing.size:
                raise ValueError(f"column {column!r}: missing value in row {frame.index[missing[0]]!r}")
            columns.append(series.map(str).to_numpy())
        return cls._from_label_columns(columns[0], columns[1], alpha)

    @classmethod
    def from_csv(cls, path: str | Path, secret: str, public: str, alpha: float) -> ConfidenceSet:
        """Build F from a CSV file of records with a header row naming the columns.

        Cells are stripped strings (read by :func:`designer.io.read_table`: blank
        lines and ``#`` comment lines are skipped).

        Raises
        ------
        designer.io.InputError
            Unreadable/empty/ragged file, missing column, an empty cell, no data
            rows; the message names the file, and the data row and column where
            relevant.
        """
        path = Path(path)
        rows = read_table(path, "records")
        header, data = rows[0], rows[1:]
        if secret == public:
            raise InputError(f"{path}: the secret and public columns must differ, both are {secret!r}")
        indices = []
        for role, column in (("secret", secret), ("public", public)):
            if column not in header:
                raise InputError(f"{path}: {role} column {column!r} not in the header ({', '.join(header)})")
            indices.append(header.index(column))
        if not data:
            raise InputError(f"{path}: no data rows after the header")
        columns = []
        for column, index in zip((secret, public), indices):
            values = [row[index] for row in data]
            for number, value in enumerate(values, start=1):
                if value == "":
                    raise InputError(f"{path}: data row {number} (after the header), column {column!r}: empty value")
            columns.append(np.array(values, dtype=object))
        return cls._from_label_columns(columns[0], columns[1], alpha)

    @classmethod
    def _from_label_columns(cls, secret_values, public_values, alpha: float) -> ConfidenceSet:
        secret_labels, secret_index = np.unique(np.asarray(secret_values, dtype=str), return_inverse=True)
        public_labels, public_index = np.unique(np.asarray(public_values, dtype=str), return_inverse=True)
        counts = np.zeros((secret_labels.size, public_labels.size), dtype=np.int64)
        np.add.at(counts, (secret_index, public_index), 1)
        return cls(counts, alpha, list(secret_labels), list(public_labels))

    # ------------------------------------------------------------------ the data
    @property
    def secret_labels(self) -> tuple[str, ...]:
        """Secret values S, sorted as strings."""
        return self._secret

    @property
    def public_labels(self) -> tuple[str, ...]:
        """Public values U, sorted as strings."""
        return self._public

    @property
    def inputs(self) -> tuple[tuple[str, str], ...]:
        """The data space X as ``(s, u)`` pairs in channel-row order (s, then u)."""
        return tuple((s, u) for s in self._secret for u in self._public)

    @property
    def input_labels(self) -> tuple[str, ...]:
        """Display labels ``"s|u"`` of X in channel-row order."""
        return tuple(f"{s}|{u}" for s, u in self.inputs)

    @property
    def shape(self) -> tuple[int, int]:
        """``(|S|, |U|) = (a1, a2)``."""
        return self._counts.shape

    @property
    def counts(self) -> np.ndarray:
        """Record counts, shape (|S|, |U|), read-only."""
        return self._counts

    @property
    def n(self) -> int:
        """Number of records."""
        return self._n

    @property
    def alpha(self) -> float:
        """Significance level."""
        return self._alpha

    @property
    def estimate(self) -> np.ndarray:
        """``P̂[s, u]``, the empirical joint distribution, shape (|S|, |U|), read-only."""
        return self._estimate

    @property
    def prior(self) -> np.ndarray:
        """``P̂`` flattened in channel-row order, shape (|S| |U|,)."""
        return self._estimate.ravel()

    @property
    def secret_marginal(self) -> np.ndarray:
        """``P̂_s`` (eq. 20), shape (|S|,)."""
        return self._estimate.sum(axis=1)

    @property
    def conditional_estimate(self) -> np.ndarray:
        """``P̂_{u|s}`` (eq. 21), shape (|S|, |U|); each row sums to 1."""
        return self._estimate / self.secret_marginal[:, None]

    # ------------------------------------------------------------------ radii
    @property
    def radius(self) -> float:
        """``B = F^{-1}_{chi2(|X|-1)}(1 - alpha) / n`` (eq. 3)."""
        return self._radius

    @property
    def conditional_radius(self) -> np.ndarray:
        """``B_s = (sqrt(B+1) + P̂_s - 1)^2 / P̂_s^2 - 1`` (Lemma 8), shape (|S|,).

        The projection ``{P_{U|s} : P in F}`` is exactly the χ² ball
        ``{R : sum_u (P̂_{u|s} - R_u)^2 / R_u <= B_s}`` (eq. 23).
        """
        p = self.secret_marginal
        # (sqrt(B+1) - 1 + p)^2 / p^2 - 1 = d (2 + d) with d = (sqrt(B+1) - 1) / p: no cancellation for tiny B
        d = self.root_excess / p
        return d * (2.0 + d)

    @property
    def root_excess(self) -> float:
        """``sqrt(B + 1) - 1`` (the slack of Lemma 8's constraint), computed without cancellation.

        ``expm1(log1p(B) / 2)``: accurate to a few ulps even when ``B`` is below the
        spacing of doubles near 1 (huge ``n`` or ``alpha`` close to 1), where
        ``sqrt(B + 1) - 1`` would round to 0 and shrink F to the single point P̂.
        """
        return float(np.expm1(0.5 * np.log1p(self._radius)))

    @property
    def l1_radius(self) -> float:
        """``max_{P in F} ||P - P̂||_1`` (Proposition 10), or an upper bound on it.

        For ``B >= 1`` this is eq. (43), tight (attained by the Lemma 9 maximiser
        of ``P_x`` at ``x = argmin P̂_x``); for ``B < 1`` it is the bound
        ``sqrt(B)`` (Proposition 10, part 2). See :attr:`l1_radius_is_tight`.
        """
        return float(_l1_radius(self._radius, self.prior.min()))

    @property
    def l1_radius_is_tight(self) -> bool:
        """True when :attr:`l1_radius` is the maximum (``B >= 1``), False when only a bound."""
        return self._radius >= 1.0

    @property
    def conditional_l1_radius(self) -> np.ndarray:
        """``d_s`` of eq. (65): a bound on ``||P_{U|s} - P̂_{U|s}||_1`` over F, shape (|S|,).

        Proposition 10 applied to the Lemma 8 ball (radius ``B_s``, centre
        ``P̂_{U|s}``, minimum entry ``P̂_{u_s|s}``): tight when ``B_s >= 1``,
        ``sqrt(B_s)`` otherwise.
        """
        radii = self.conditional_radius
        smallest = self.conditional_estimate.min(axis=1)
        return np.array([_l1_radius(b, p) for b, p in zip(radii, smallest)])

    # ------------------------------------------------------------------ bounds
    def probability_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Tight ``(min_{P in F} P_x, max_{P in F} P_x)`` (Lemma 9, eqs. 36–37), each (|S|, |U|)."""
        return _lemma9(self._estimate, self._radius)

    def conditional_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Tight ``(min_{P in F} P_{u|s}, max_{P in F} P_{u|s})``, each (|S|, |U|).

        Lemma 9 applied to the projection of Lemma 8 (radius ``B_s`` around
        ``P̂_{U|s}``). The lower bounds are the ``P^min_{u|s}`` of the cone (44).
        """
        return _lemma9(self.conditional_estimate, self.conditional_radius[:, None])

    def extreme_distribution(self, s: int, u: int, upper: bool = True, conditional: bool = False) -> np.ndarray:
        """A distribution of F attaining a bound of :meth:`probability_bounds` or :meth:`conditional_bounds`.

        Joint (``conditional=False``): ``P_{(s,u)}`` at its Lemma 9 bound and every
        other cell scaled, ``P_{x'} = c P̂_{x'}`` (the stationary point in the proof
        of Lemma 9). Conditional: the same construction inside the Lemma 8 ball
        of ``s``, lifted to F by eq. (31) (other conditionals equal to ``P̂``).

        Returns
        -------
        ndarray, shape (|S|, |U|)
        """
        if conditional:
            lower, upper_bound = self.conditional_bounds()
            row = _scaled_around(self.conditional_estimate[s], u, (upper_bound if upper else lower)[s, u])
            conditionals = np.array(self.conditional_estimate)
            conditionals[s] = row
            return self.lift_conditionals(conditionals, slack=1e-12)
        lower, upper_bound = self.probability_bounds()
        flat = _scaled_around(self.prior, s * self.shape[1] + u, (upper_bound if upper else lower)[s, u])
        return flat.reshape(self.shape)

    # ------------------------------------------------------------------ membership
    def chi_square(self, distribution) -> float:
        """``sum_x (P̂_x - P_x)^2 / P_x`` (the statistic of eq. 3; ``+inf`` if ``P_x = 0 < P̂_x``)."""
        p = self._as_joint(distribution).ravel()
        q = self.prior
        support = q > 0
        if np.any(p[support] <= 0):
            return float("inf")
        return float(np.sum((q[support] - p[support]) ** 2 / p[support]) + p[~support].sum())

    def contains(self, distribution, tolerance: float = 0.0) -> bool:
        """Is ``P`` a probability distribution in F (``chi_square(P) <= B + tolerance``)?

        ``distribution`` is (|S|, |U|) or flat (|S| |U|,); it must be non-negative
        and sum to 1 within 1e-9 (otherwise the answer is False).
        """
        p = np.asarray(distribution, dtype=float)
        if p.size != self._counts.size or np.any(~np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1) > 1e-9:
            return False
        return self.chi_square(p) <= self._radius + tolerance

    def conditional_statistic(self, conditionals) -> float:
        """``sum_s P̂_s sqrt(g_s(R_s))`` with ``g_s(r) = sum_u P̂_{u|s}^2 / r_u``.

        Conditionals ``R`` (shape (|S|, |U|), rows probability vectors) are those
        of some ``P in F`` iff this is ``<= sqrt(B + 1)``. Proof: a ``P`` with
        conditionals ``R`` and marginal ``pi`` has ``sum_x P̂_x^2 / P_x =
        sum_s P̂_s^2 g_s / pi_s`` (eq. 24), whose minimum over ``pi`` is
        ``(sum_s P̂_s sqrt(g_s))^2`` by Cauchy–Schwarz, at ``pi_s ∝ P̂_s sqrt(g_s)``.
        With all other rows at ``P̂`` (``g = 1``) this is Lemma 8.
        """
        r = np.asarray(conditionals, dtype=float)
        if r.shape != self.shape:
            raise ValueError(f"conditionals must have shape {self.shape}, got {r.shape}")
        w = self.conditional_estimate
        support = w > 0
        if np.any(r[support] <= 0):
            return float("inf")
        g = np.where(support, w**2 / np.where(support, r, 1.0), 0.0).sum(axis=1)
        return float(self.secret_marginal @ np.sqrt(g))

    def lift_conditionals(self, conditionals, slack: float = 0.0) -> np.ndarray:
        """A distribution ``P in F`` whose conditionals ``P_{U|s}`` are the given rows.

        Uses the optimal marginal ``pi_s ∝ P̂_s sqrt(g_s(R_s))`` of
        :meth:`conditional_statistic` (for one row this is eq. 31 of Lemma 8).

        Parameters
        ----------
        conditionals : array_like, shape (|S|, |U|)
            Rows are probability vectors.
        slack : float
            Relative tolerance on ``conditional_statistic <= sqrt(B+1)`` (for
            points on the boundary computed in floating point).

        Raises
        ------
        ValueError
            If no distribution of F has these conditionals.
        """
        r = np.asarray(conditionals, dtype=float)
        statistic = self.conditional_statistic(r)
        if not statistic <= np.sqrt(self._radius + 1.0) * (1.0 + slack):
            raise ValueError(
                f"no distribution of F has these conditionals (statistic {float(statistic)!r} > sqrt(B+1) = "
                f"{float(np.sqrt(self._radius + 1.0))!r})"
            )
        w = self.conditional_estimate
        support = w > 0
        g = np.where(support, w**2 / np.where(support, r, 1.0), 0.0).sum(axis=1)
        weights = self.secret_marginal * np.sqrt(g)
        return (weights / weights.sum())[:, None] * r

    def _as_joint(self, distribution) -> np.ndarray:
        p = np.asarray(distribution, dtype=float)
        if p.size != self._counts.size:
            raise ValueError(f"a distribution on X has {self._counts.size} entries, got {p.size}")
        return p.reshape(self.shape)

    def __repr__(self) -> str:
        return (
            f"ConfidenceSet(|S|={self.shape[0]}, |U|={self.shape[1]}, n={self._n}, "
            f"alpha={self._alpha:g}, B={self._radius:.6g})"
        )


def _labels(labels, count: int, role: str) -> list[str]:
    if labels is None:
        width = len(str(count - 1))
        return [str(i).zfill(width) for i in range(count)]
    labels = [str(label) for label in labels]
    if len(labels) != count:
        raise ValueError(f"{len(labels)} {role} labels for {count} {role} values")
    if len(set(labels)) != count:
        raise ValueError(f"duplicate {role} labels")
    return labels


def _lemma9(estimate: np.ndarray, radius) -> tuple[np.ndarray, np.ndarray]:
    """Roots of ``(B+1) P^2 - (B + 2p) P + p^2 = 0`` (eq. 41–42), stably.

    The larger root is eq. (37); the smaller is computed as ``p^2 / ((B+1) upper)``
    (product of the roots) instead of eq. (36), which cancels for small ``p``.
    """
    p = np.asarray(estimate, dtype=float)
    b = np.broadcast_to(np.asarray(radius, dtype=float), p.shape)
    discriminant = np.sqrt(b * b + 4.0 * b * p * (1.0 - p))
    upper = (b + 2.0 * p + discriminant) / (2.0 * b + 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(p > 0, p * p / ((b + 1.0) * upper), 0.0)
    return lower, np.minimum(upper, 1.0)


def _l1_radius(radius: float, smallest: float) -> float:
    """Proposition 10: eq. (43) when ``B >= 1``, else ``sqrt(B)``."""
    if radius >= 1.0:
        value = (radius * (1.0 - 2.0 * smallest) + np.sqrt(radius * radius + 4.0 * radius * smallest * (1.0 - smallest))) / (radius + 1.0)
        return float(min(value, 2.0))
    return float(np.sqrt(radius))


def _scaled_around(centre: np.ndarray, index: int, value: float) -> np.ndarray:
    """``P_index = value``, ``P_x' = (1 - value) / (1 - centre_index) centre_x'`` (proof of Lemma 9)."""
    centre = np.asarray(centre, dtype=float)
    point = np.empty_like(centre)
    rest = 1.0 - centre[index]
    if rest > 0:
        point[:] = centre * ((1.0 - value) / rest)
    else:  # all mass on one cell: the remainder goes uniformly to the cells of zero estimate
        point[:] = (1.0 - value) / (centre.size - 1)
    point[index] = value
    return point
