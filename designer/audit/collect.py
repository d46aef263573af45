"""Drawing the audit's reports within a budget: a number of reports per input, or seconds.

Both budgets are checked before the bulk is drawn: a probe of
:data:`PROBE` reports measures the bytes a report takes, and a budget whose
reports would not fit in ``max_memory`` (:data:`MEMORY_FACTOR` copies of
them: the reports, their shuffled splits and encodings) is refused with the
estimate. Every later batch is measured too (:class:`ReportMemory`): a batch
needing a wider type than the probe re-checks a count budget before more is
drawn, and lowers a time budget's cap at once (no input is drawn past it, and
every input is cut to it at the end). A time budget draws in rounds of all
inputs until its deadline, less the time the analysis of what is drawn is
predicted to take (a model of the analysis time, :mod:`designer.audit.timing`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from designer.audit.reports import concatenate_reports, unify_reports
from designer.audit.sources import ReportSource
from designer.defaults import AUDIT_MAX_MEMORY_GIB

#: Reports drawn per call of the source when the budget is a count.
CHUNK = 8192
#: First batch per input of a time budget (doubled while a round takes < 1/50 of the budget).
FIRST_BATCH = 64
#: Reports of input 0 drawn first to measure the size of a report.
PROBE = 256
#: Copies of the reports an audit holds at once (reports, shuffled splits, encodings).
MEMORY_FACTOR = 4
#: Default memory allowed for the reports (bytes).
DEFAULT_MAX_MEMORY = AUDIT_MAX_MEMORY_GIB * 2**30
#: Largest ``--seconds`` accepted (a day).
MAX_SECONDS = 86_400.0


@dataclass(frozen=True)
class Budget:
    """Exactly one of ``reports_per_input`` (N reports of every input) or ``seconds`` (the whole run, S s)."""

    reports_per_input: int | None = None
    seconds: float | None = None
    max_memory: float = DEFAULT_MAX_MEMORY

    def __post_init__(self):
        if (self.reports_per_input is None) == (self.seconds is None):
            raise ValueError("give exactly one of --reports-per-input and --seconds")
        if self.reports_per_input is not None and self.reports_per_input < 2:
            raise ValueError(f"--reports-per-input must be >= 2 (a training and a fresh split), got {self.reports_per_input}")
        if self.seconds is not None and not 0 < self.seconds <= MAX_SECONDS:
            raise ValueError(f"--seconds must be > 0 and at most {MAX_SECONDS:g} (a day), got {self.seconds}")
        if not (math.isfinite(self.max_memory) and self.max_memory > 0):
            raise ValueError(f"--max-memory must be a positive number of GiB, got {self.max_memory / 2**30}")


def report_bytes(sample: np.ndarray) -> float:
    """Bytes one report of ``sample`` takes (object reports: the array slot and the object)."""
    if len(sample) == 0:
        return 8.0
    size = sample.nbytes / len(sample)
    if sample.dtype == object:
        size += float(np.mean([sys.getsizeof(value) for value in sample[:64]]))
    return size


def check_memory(per_report: float, reports: float, max_memory: float, what: str) -> None:
    """Refuse a budget whose reports would take more than ``max_memory`` bytes, with the estimate."""
    needed = MEMORY_FACTOR * per_report * reports
    if needed > max_memory:
        raise ValueError(
            f"{what} needs about {_gigabytes(needed)} of memory ({reports:,.0f} reports of about {per_report:,.0f} "
            f"bytes, {MEMORY_FACTOR} copies), more than --max-memory {_gigabytes(max_memory)}; lower the budget "
            "or raise --max-memory"
        )


class ReportMemory:
    """The memory a whole budget's reports will take, estimated from the widest batch drawn so far.

    Integer reports are held in the smallest type that holds each batch
    (:func:`~designer.audit.sources.compact_integers`), and batches joined take the
    widest type of any of them: a probe of small values can underestimate a later
    batch of large ones. Every batch is therefore measured (:meth:`see`); a wider
    one re-checks the budget at once, before more is drawn, so a budget whose
    reports would not fit is refused however late its first wide report comes.

    Parameters
    ----------
    max_memory : float
        Bytes allowed (``--max-memory``).
    reports : float or None
        Reports the whole budget holds (all inputs, all stages); None for a time
        budget, whose draws are capped at :meth:`cap` instead (recomputed after
        every batch, the reports held cut to it).
    what : str
        The budget as the refusal names it.
    """

    def __init__(self, max_memory: float, reports: float | None, what: str):
        self.max_memory, self.reports, self.what = max_memory, reports, what
        self.per_report = 0.0

    def see(self, batch: np.ndarray) -> np.ndarray:
        """Measure ``batch`` (returned as it is); refuse the budget if its reports now would not fit."""
        size = report_bytes(batch)
        if size > self.per_report:
            self.per_report = size
            if self.reports is not None:
                check_memory(size, self.reports, self.max_memory, self.what)
        return batch

    def cap(self, k: int) -> int:
        """Reports per input (``k`` inputs) that fit in ``max_memory`` at the widest size seen."""
        return math.floor(self.max_memory / (MEMORY_FACTOR * self.per_report) / k)


def budget_memory(budget: Budget, k: int) -> ReportMemory:
    """The :class:`ReportMemory` of ``budget`` over ``k`` inputs (the whole of it: every stage drawn)."""
    if budget.reports_per_input is None:
        return ReportMemory(budget.max_memory, None, f"--seconds {budget.seconds:g}")
    return ReportMemory(budget.max_memory, budget.reports_per_input * k,
                        f"--reports-per-input {budget.reports_per_input:,} for {k} inputs")


def collect_reports(source: ReportSource, k: int, budget: Budget, rng: np.random.Generator,
                    progress: Callable[[float], None] | None = None,
                    inputs: list[int] | None = None, memory: ReportMemory | None = None,
                    analysis: Callable[[int], float] | None = None, until: float | None = None,
                    deadline: float | None = None) -> dict[int, np.ndarray]:
    """Draw reports of every input ``0..k-1`` (or of ``inputs``), the same number for each.

    ``progress`` is called with the fraction of the budget spent (0..1). ``memory``
    (default: this budget's) measures every batch: an audit drawing in stages passes
    one for its whole budget, so that every stage's batches are checked against it.
    A time budget draws rounds until ``until`` (a ``time.perf_counter()`` instant;
    default ``budget.seconds`` from now) less ``analysis(n)``, the seconds predicted
    for analysing ``n`` reports per input (default: none). Every call must answer
    by ``deadline`` (a ``time.perf_counter()`` instant; default: ``budget.seconds``
    from now for a time budget, the source's own time limit for a count).
    """
    inputs = list(range(k)) if inputs is None else list(inputs)
    k = len(inputs)
    report = progress or (lambda fraction: None)
    if memory is None:
        memory = budget_memory(budget, k)
    start = time.perf_counter()
    if deadline is None and budget.seconds is not None:
        deadline = start + budget.seconds
    first = budget.reports_per_input if budget.seconds is None else FIRST_BATCH
    probe = memory.see(source.draw(inputs[0], min(PROBE, first), rng, _remaining(deadline)))
    parts: dict[int, list[np.ndarray]] = {x: [] for x in inputs}
    parts[inputs[0]].append(probe)
    if budget.reports_per_input is not None:
        total = budget.reports_per_input * k
        done = len(probe)
        for x in inputs:
            remaining = budget.reports_per_input - (len(probe) if x == inputs[0] else 0)
            while remaining:
                n = min(CHUNK, remaining)
                parts[x].append(memory.see(source.draw(x, n, rng, _remaining(deadline))))
                remaining -= n
                done += n
                report(done / total)
    else:
        _draw_for_seconds(source, inputs, rng, memory, parts, start, deadline, report,
                          analysis or (lambda n: 0.0), deadline if until is None else min(until, deadline))
    # each input's batches are freed once joined: the reports are held about once, not twice
    joined = {x: concatenate_reports(parts.pop(x), f"source {source.description} (input {x})", source.separator)
              for x in inputs}
    return unify_reports(joined, separator=source.separator)


def _draw_for_seconds(source: ReportSource, inputs: list[int], rng: np.random.Generator, memory: ReportMemory,
                      parts: dict[int, list[np.ndarray]], start: float, deadline: float,
                      report: Callable[[float], None], analysis: Callable[[int], float], until: float) -> None:
    """Draw rounds of every input into ``parts`` until the next round would end past ``until`` less the
    predicted ``analysis`` time of what it brings (every call answering before ``deadline``).

    A round raises every input to the same count, its batch doubled while a round
    takes < 1/50 of the time left, and halved while the round and the predicted
    analysis would not fit (below :data:`FIRST_BATCH`, drawing stops). The memory cap is recomputed after every batch (a
    wider batch lowers it at once, inside the round) and no input is drawn past it;
    at the end every input is trimmed to the cap at the widest size seen, so the
    reports held never take more than ``max_memory`` with :data:`MEMORY_FACTOR` copies.
    """
    k = len(inputs)
    held = {x: sum(len(part) for part in parts[x]) for x in inputs}
    batch, drawn = FIRST_BATCH, 0
    while True:
        round_start, before = time.perf_counter(), drawn
        for x in inputs:
            n = min(drawn + batch, memory.cap(k)) - held[x]
            if n > 0:
                parts[x].append(memory.see(source.draw(x, n, rng, _remaining(deadline))))
                held[x] += len(parts[x][-1])
        drawn = min(held.values())
        now = time.perf_counter()
        per_report = (now - round_start) / max(drawn - before, 1)  # seconds per report of every input
        report(min((now - start) / max(until - start, 1e-9), 1.0))
        cap = memory.cap(k)
        if drawn >= cap:
            break
        if per_report * batch < (until - now) / 50:
            batch *= 2
        batch = max(int(min(batch, cap - drawn)), 1)
        while batch >= FIRST_BATCH and now + 1.2 * per_report * batch + analysis(drawn + batch) > until:
            batch //= 2  # the last rounds shrink to what fits before the analysis
        if batch < FIRST_BATCH:
            break
    keep = min(drawn, memory.cap(k))
    if keep < 2:  # not even a training and a fresh report of every input fit: refused with the estimate
        check_memory(memory.per_report, 2 * k, memory.max_memory, memory.what)
    for x in inputs:
        parts[x] = _first(parts[x], keep)


def _first(batches: list[np.ndarray], count: int) -> list[np.ndarray]:
    """The first ``count`` reports of ``batches`` (later batches dropped, the last kept one cut)."""
    kept = []
    for batch in batches:
        if count <= 0:
            break
        kept.append(batch[:count])
        count -= len(batch)
    return kept


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(deadline - time.perf_counter(), 0.001)


def _gigabytes(size: float) -> str:
    return f"{size / 2**30:,.3g} GB"
