"""Drawing the audit's reports within a budget: a number of reports per input, or seconds."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from designer.audit.sources import ReportSource, concatenate_reports

#: Reports drawn per call of the source when the budget is a count.
CHUNK = 8192
#: First batch per input of a time budget (doubled while a round takes < 1/50 of the budget).
FIRST_BATCH = 64


@dataclass(frozen=True)
class Budget:
    """Exactly one of ``reports_per_input`` (N reports of every input) or ``seconds`` (draw until S s)."""

    reports_per_input: int | None = None
    seconds: float | None = None

    def __post_init__(self):
        if (self.reports_per_input is None) == (self.seconds is None):
            raise ValueError("give exactly one of --reports-per-input and --seconds")
        if self.reports_per_input is not None and self.reports_per_input < 2:
            raise ValueError(f"--reports-per-input must be >= 2 (a training and a fresh split), got {self.reports_per_input}")
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"--seconds must be > 0, got {self.seconds}")


def collect_reports(source: ReportSource, k: int, budget: Budget, rng: np.random.Generator,
                    progress: Callable[[float], None] | None = None) -> dict[int, np.ndarray]:
    """Draw reports of every input ``0..k-1`` (the same number for each).

    ``progress`` is called with the fraction of the budget spent (0..1).
    """
    parts: dict[int, list[np.ndarray]] = {x: [] for x in range(k)}
    report = progress or (lambda fraction: None)
    if budget.reports_per_input is not None:
        total = budget.reports_per_input * k
        done = 0
        for x in range(k):
            remaining = budget.reports_per_input
            while remaining:
                n = min(CHUNK, remaining)
                parts[x].append(source.draw(x, n, rng))
                remaining -= n
                done += n
                report(done / total)
    else:
        start = time.perf_counter()
        batch = FIRST_BATCH
        while True:
            round_start = time.perf_counter()
            for x in range(k):
                parts[x].append(source.draw(x, batch, rng))
            now = time.perf_counter()
            last_round = now - round_start
            elapsed = now - start
            report(min(elapsed / budget.seconds, 1.0))
            if elapsed + last_round * 2 > budget.seconds:
                break
            if last_round < budget.seconds / 50:
                batch *= 2
    return {x: concatenate_reports(chunks, f"source {source.description}") for x, chunks in parts.items()}
