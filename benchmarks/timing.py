"""Timing and memory helpers shared by the benchmark scripts (imported as ``timing``)."""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable


def run_times(function: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Wall-clock seconds of ``repeats`` calls, and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return times, result


def timed(function: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    """Median wall-clock seconds over ``repeats`` calls, and the last call's result."""
    times, result = run_times(function, repeats)
    return statistics.median(times), result


def peak_megabytes(function: Callable[[], object]) -> float:
    """Peak memory traced during one call, in MiB (tracemalloc sees NumPy's buffers)."""
    tracemalloc.start()
    try:
        function()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def measure(function: Callable[[], object]) -> tuple[float, float, object]:
    """Seconds, peak traced MiB and result of one call (timed with tracemalloc on)."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = function()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return seconds, peak, result
