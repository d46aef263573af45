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

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from designer.estimation import l2_error, tv_distance
from designer.io import read_vector
from solvers.hadamard import project_onto_simplex

if TYPE_CHECKING:
    from designer.mechanisms.base import Mechanism

#: Users per streamed chunk.
SIMULATION_CHUNK = 1 << 21
#: Memory model of :func:`simulate`, an upper bound measured with ``tracemalloc`` for every
#: mechanism (peak 36-76 bytes per symbol plus output, at most 100 MiB for the chunk
#: temporaries, about 400 bytes per Hadamard block including its symbols).
BYTES_PER_SYMBOL_OR_OUTPUT = 80
BYTES_PER_BLOCK = 512
CHUNK_BYTES = 128 << 20


class SimulationTooLong(ValueError):
    """The projected running time of :func:`simulate` exceeds its ``max_seconds``."""


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable`` on Linux), or None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def format_bytes(size: float) -> str:
    """``1.5 GB``-style size (powers of 1024, as ``free -h`` prints)."""
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if size < 1024 or unit == "PB":
            return f"{size:.3g} {unit}" if unit != "bytes" else f"{int(size)} bytes"
        size /= 1024
    raise AssertionError("unreachable")


def format_duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.2 h`` or ``4.1 days``."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 172800:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def check_memory(needed: int, what: str, available: int | None = None) -> None:
    """Refuse (``ValueError``, one line) a run whose estimated peak memory exceeds what is available.

    Parameters
    ----------
    needed
        Estimated peak bytes.
    what
        What needs them, for the message (e.g. ``"--k 1000000000 (1,073,741,824 outputs)"``).
    available
        Bytes available; default :func:`available_memory` (no check if unknown).
    """
    available = available_memory() if available is None else available
    if available is not None and needed > available:
        raise ValueError(
            f"{what} needs about {format_bytes(needed)} of memory, more than the "
            f"{format_bytes(available)} available; use a smaller size"
        )


def simulation_memory(k: int, n_outputs: int, blocks: int = 1) -> int:
    """Estimated peak bytes of :func:`simulate` for ``k`` symbols, ``n_outputs`` outputs and ``blocks`` blocks.

    Independent of the number of users (they are streamed in chunks of
    :data:`SIMULATION_CHUNK`); see :data:`BYTES_PER_SYMBOL_OR_OUTPUT`.
    """
    return CHUNK_BYTES + BYTES_PER_SYMBOL_OR_OUTPUT * (k + n_outputs) + BYTES_PER_BLOCK * blocks


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
    max_seconds: float | None = None,
) -> SimulationResult:
    """Draw ``n`` users from ``prior``, privatise, estimate; errors of the raw and projected estimates.

    ``seconds`` = privatisation + estimation; ``data_seconds`` = drawing the data.
    ``tv_error`` is for the estimate projected onto the simplex, ``tv_error_raw``
    for the unbiased estimate; ``tv_bound`` is the paper's bound, where it has one.
    ``progress(users_done)`` is called after every chunk. With ``max_seconds``,
    the running time is projected after the first chunk (elapsed time times
    ``n / chunk``) and :class:`SimulationTooLong` is raised at once if it exceeds
    ``max_seconds``.
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
    began = time.perf_counter()
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
        if max_seconds is not None and done == size < n:
            _check_projected_time(time.perf_counter() - began, done, n, max_seconds)
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


def _check_projected_time(elapsed: float, done: int, n: int, max_seconds: float) -> None:
    projected = elapsed * n / done
    if projected > max_seconds:
        raise SimulationTooLong(
            f"{n:,} users would take about {format_duration(projected)} "
            f"({done / elapsed:,.0f} users/s on the first {done:,}), more than the {max_seconds:g} s allowed"
        )
