"""Closing the loop: from sampled reports back to an exact certificate.

When the output space is finite and small (at most
:data:`~designer.audit.events.MAX_OUTPUTS` outputs, or a declared alphabet):

* :func:`estimate_channel` — the whole channel ``Q[x, y]`` from the report
  counts, with simultaneous Clopper–Pearson intervals (two-sided, Bonferroni
  over the ``k m`` cells: all intervals hold together with probability at least
  ``confidence``).
* :func:`goodness_of_fit` — Pearson's chi-square test of every input's counts
  against a declared channel row (cells with expected count below
  :data:`MIN_EXPECTED` are pooled into one cell, the usual validity rule; a
  report the declared row gives probability 0 rejects outright), Holm-corrected
  across inputs.
* :func:`close_loop` — that test plus :func:`designer.certify.certify` of the
  declared matrix in exact mode: "the code is consistent with this matrix, and
  this matrix is E-LDP (proof)" is the strongest statement the audit makes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.audit.statistics import clopper_pearson_lower, clopper_pearson_upper, holm_rejections
from designer.certify import Certificate, certify
from designer.channel import Channel
from designer.spec import PrivacyMatrix

#: Cells whose expected count is below this are pooled before the chi-square test.
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class ChannelEstimate:
    """Estimated ``Q[x, y] = counts / reports`` with simultaneous intervals ``lower <= Q <= upper``."""

    counts: np.ndarray
    matrix: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    confidence: float

    @property
    def largest_half_width(self) -> float:
        return float(np.max(self.upper - self.lower) / 2)

    def to_dict(self) -> dict:
        return {
            "confidence": self.confidence,
            "estimate": self.matrix.tolist(),
            "lower": self.lower.tolist(),
            "upper": self.upper.tolist(),
        }


@dataclass(frozen=True)
class FitResult:
    """Chi-square goodness of fit of every input's reports to the declared row."""

    statistics: np.ndarray
    degrees_of_freedom: np.ndarray
    p_values: np.ndarray
    rejected: np.ndarray
    confidence: float

    @property
    def consistent(self) -> bool:
        return not bool(self.rejected.any())

    def to_dict(self) -> dict:
        return {
            "consistent": self.consistent,
            "confidence": self.confidence,
            "statistics": self.statistics.tolist(),
            "degrees_of_freedom": self.degrees_of_freedom.tolist(),
            "p_values": self.p_values.tolist(),
            "rejected_inputs": np.flatnonzero(self.rejected).tolist(),
        }


@dataclass(frozen=True)
class LoopResult:
    """:func:`close_loop`: the fit of the code to the declared matrix and the matrix's exact certificate."""

    fit: FitResult
    certificate: Certificate

    @property
    def closed(self) -> bool:
        """The code is consistent with the declared matrix, and that matrix is proved E-LDP."""
        return self.fit.consistent and self.certificate.certified

    def to_dict(self) -> dict:
        return {"closed": self.closed, "fit": self.fit.to_dict(), "certificate": self.certificate.to_dict()}


def output_counts(encoded: dict[int, np.ndarray], k: int, n_outputs: int) -> np.ndarray:
    """``counts[x, y]``: reports of input x equal to output y (inputs without reports: zero rows)."""
    counts = np.zeros((k, n_outputs), dtype=np.int64)
    for x, codes in encoded.items():
        counts[x] = np.bincount(codes, minlength=n_outputs)[:n_outputs]
    return counts


def estimate_channel(counts: np.ndarray, confidence: float = 0.95) -> ChannelEstimate:
    """The empirical channel with simultaneous Clopper–Pearson intervals (Bonferroni over all cells)."""
    counts = np.asarray(counts)
    trials = counts.sum(axis=1, keepdims=True)
    if np.any(trials == 0):
        raise ValueError("every input needs reports to estimate the channel")
    error = (1 - confidence) / (2 * counts.size)
    trials_full = np.broadcast_to(trials, counts.shape)
    return ChannelEstimate(
        counts=counts,
        matrix=counts / trials,
        lower=clopper_pearson_lower(counts, trials_full, error),
        upper=clopper_pearson_upper(counts, trials_full, error),
        confidence=confidence,
    )


def goodness_of_fit(counts: np.ndarray, declared: Channel, confidence: float = 0.95) -> FitResult:
    """Pearson chi-square test of each input's counts against the declared row, Holm across inputs."""
    from scipy.special import chdtrc

    counts = np.asarray(counts, float)
    if counts.shape != declared.matrix.shape:
        raise ValueError(f"counts have shape {counts.shape} but the declared channel is {declared.matrix.shape}")
    k = counts.shape[0]
    statistics, degrees, p_values = np.zeros(k), np.zeros(k, dtype=np.int64), np.ones(k)
    for x in range(k):
        n = counts[x].sum()
        expected = declared.matrix[x] * n
        impossible = (declared.matrix[x] == 0) & (counts[x] > 0)
        if impossible.any():
            statistics[x], p_values[x] = np.inf, 0.0
            continue
        small = expected < MIN_EXPECTED
        observed_cells = np.append(counts[x][~small], counts[x][small].sum())
        expected_cells = np.append(expected[~small], expected[small].sum())
        keep = expected_cells > 0
        observed_cells, expected_cells = observed_cells[keep], expected_cells[keep]
        degrees[x] = max(observed_cells.size - 1, 0)
        statistics[x] = float(np.sum((observed_cells - expected_cells) ** 2 / expected_cells))
        p_values[x] = float(chdtrc(degrees[x], statistics[x])) if degrees[x] else 1.0
    return FitResult(statistics, degrees, p_values, holm_rejections(p_values, 1 - confidence), confidence)


def close_loop(counts: np.ndarray, declared: Channel, privacy: PrivacyMatrix, confidence: float = 0.95) -> LoopResult:
    """Test the code against the declared matrix and certify that matrix exactly."""
    if declared.k != privacy.k:
        raise ValueError(f"the declared channel has {declared.k} rows but E is {privacy.k} x {privacy.k}")
    return LoopResult(goodness_of_fit(counts, declared, confidence), certify(declared, privacy, exact=True))
