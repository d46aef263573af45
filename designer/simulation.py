"""Synthetic end-to-end runs: draw data, privatise it, estimate, measure the error.

Distributions of the paper's experiments (context-aware-ldp.md, Section 7), on
symbols ``i = 0..k-1``:

* ``uniform``;
* ``geometric:lam`` — ``p(i) ∝ (1 - lam)^i lam`` (the paper's ``Geo(lam)``, as printed);
* ``zipf:lam`` — ``p(i) ∝ (i + 1)^(-lam)``;
* a CSV file with k non-negative weights (normalised).

:func:`simulate` streams the users in chunks (data drawn, privatised and
histogrammed chunk by chunk), so memory stays flat in ``n``; only the output
histogram reaches the server-side estimator.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from designer.estimation import l2_error, tv_distance
from designer.io import read_vector
from designer.mechanisms.base import Mechanism
from solvers.hadamard import project_onto_simplex

#: Users per streamed chunk.
SIMULATION_CHUNK = 1 << 21


def named_distribution(spec: str, k: int) -> np.ndarray:
    """The distribution named by ``spec`` (see module docstring) on ``k`` symbols."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    name, _, parameter = spec.partition(":")
    name = name.strip().lower()
    index = np.arange(k, dtype=float)
    if name == "uniform" and not parameter:
        weights = np.ones(k)
    elif name in ("zipf", "geometric") and parameter:
        try:
            lam = float(parameter)
        except ValueError:
            raise ValueError(f"--dist {spec}: {parameter!r} is not a number") from None
        if name == "zipf":
            if not lam >= 0:
                raise ValueError(f"--dist {spec}: the Zipf exponent must be >= 0")
            weights = (index + 1.0) ** (-lam)
        else:
            if not 0 < lam <= 1:
                raise ValueError(f"--dist {spec}: the geometric parameter must be in (0, 1]")
            weights = np.exp(index * np.log1p(-lam)) * lam if lam < 1 else (index == 0).astype(float)
    elif Path(spec).suffix.lower() == ".csv" or Path(spec).exists():
        weights = read_vector(spec, "distribution")
        if weights.size != k:
            raise ValueError(f"{spec}: {weights.size} weights for k = {k} symbols")
        if np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(f"{spec}: weights must be non-negative with a positive sum")
    else:
        raise ValueError(f"unknown distribution {spec!r}: use uniform, zipf:LAM, geometric:LAM or a CSV file")
    return weights / weights.sum()


@dataclass(frozen=True)
class SimulationResult:
    """Errors and timings of one run (see :func:`simulate`)."""

    estimate_raw: np.ndarray
    estimate: np.ndarray
    tv_error: float
    tv_error_raw: float
    l2_error: float
    l2_error_raw: float
    tv_bound: float | None
    seconds: float
    sample_seconds: float
    estimate_seconds: float
    data_seconds: float

    def to_dict(self) -> dict:
        return {
            "tv_error": self.tv_error,
            "tv_error_raw": self.tv_error_raw,
            "l2_error": self.l2_error,
            "l2_error_raw": self.l2_error_raw,
            "tv_bound": self.tv_bound,
            "seconds": self.seconds,
            "sample_seconds": self.sample_seconds,
            "estimate_seconds": self.estimate_seconds,
            "data_seconds": self.data_seconds,
        }


def simulate(
    mechanism: Mechanism,
    prior,
    n: int,
    rng: np.random.Generator | int | None = None,
    progress: Callable[[int], None] | None = None,
    chunk: int = SIMULATION_CHUNK,
) -> SimulationResult:
    """Draw ``n`` users from ``prior``, privatise, estimate; errors of the raw and projected estimates.

    ``seconds`` = privatisation + estimation; ``data_seconds`` = drawing the data.
    ``tv_error`` is for the estimate projected onto the simplex, ``tv_error_raw``
    for the unbiased estimate; ``tv_bound`` is the paper's bound, where it has one.
    ``progress(users_done)`` is called after every chunk.
    """
    prior = np.asarray(prior, dtype=float)
    if prior.shape != (mechanism.k,):
        raise ValueError(f"the distribution has {prior.size} entries, the mechanism {mechanism.k} inputs")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(rng)
    cdf = np.cumsum(prior)
    cdf /= cdf[-1]
    counts = np.zeros(mechanism.n_outputs, dtype=np.int64)
    data_seconds = sample_seconds = 0.0
    done = 0
    while done < n:
        size = min(chunk, n - done)
        start = time.perf_counter()
        inputs = np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), mechanism.k - 1)
        middle = time.perf_counter()
        counts += np.bincount(mechanism.sample(inputs, rng), minlength=mechanism.n_outputs)
        data_seconds += middle - start
        sample_seconds += time.perf_counter() - middle
        done += size
        if progress is not None:
            progress(done)
    start = time.perf_counter()
    raw = mechanism.estimate_counts(counts)
    projected = project_onto_simplex(raw)
    estimate_seconds = time.perf_counter() - start
    return SimulationResult(
        estimate_raw=raw,
        estimate=projected,
        tv_error=tv_distance(projected, prior),
        tv_error_raw=tv_distance(raw, prior),
        l2_error=l2_error(projected, prior),
        l2_error_raw=l2_error(raw, prior),
        tv_bound=mechanism.tv_bound(n),
        seconds=sample_seconds + estimate_seconds,
        sample_seconds=sample_seconds,
        estimate_seconds=estimate_seconds,
        data_seconds=data_seconds,
    )
