"""Benchmark: drawing the audit's reports (``designer.audit.collect``, ``designer.audit.sources``).

1. The cost of running a Python sampler in its worker process (stopped at ``--timeout``):
   ``collect_reports`` of GRR (k = 16, 200,000 reports per input, chunks of 8,192) through
   :class:`~designer.audit.sources.PythonSampler` against the same sampler called in this
   process (baseline, same run); and the cost of one small call (64 reports).
2. The memory estimate when a later batch needs a wider integer type than the probe: a source
   whose first batches are 0/1 (one byte a report) and whose later ones exceed 32 bits
   (eight bytes). Estimate from the probe alone (the old rule) and from the widest batch
   (:class:`~designer.audit.collect.ReportMemory`), against the bytes the joined reports take.

Run: ``.venv/bin/python benchmarks/bench_audit_sources.py`` (under a minute).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from timing import timed

from designer.audit import Budget, PythonSampler, collect_reports
from designer.audit.collect import MEMORY_FACTOR, PROBE, ReportMemory, report_bytes
from designer.audit.reports import as_report_array
from designer.audit.usercode import call_user, load_callable

SAMPLER = f"{Path(__file__).resolve().parent.parent / 'tests' / 'fixtures' / 'audit' / 'samplers.py'}:grr"
K = 16
ARGUMENTS = {"eps": 1.0, "k": K}


class InProcess:
    """The sampler called in this process (the baseline: no time limit can be enforced)."""

    description = "in process"

    def __init__(self):
        self.function = load_callable(SAMPLER)

    def draw(self, x, n, rng, timeout=None):
        where = f"the sampler (input {x})"
        return as_report_array(call_user(self.function, where, x, n, rng, **ARGUMENTS), n, where)


class Widening:
    """0/1 reports for the first ``narrow`` calls, then values above 2^32."""

    description = "widening"

    def __init__(self, narrow: int):
        self.narrow, self.calls = narrow, 0

    def draw(self, x, n, rng, timeout=None):
        self.calls += 1
        values = rng.integers(0, 2, n) + (2**40 if self.calls > self.narrow else 0)
        return as_report_array(values, n, "widening")


def worker_cost() -> None:
    worker, local = PythonSampler(SAMPLER, ARGUMENTS), InProcess()
    budget = Budget(reports_per_input=200_000)
    here, _ = timed(lambda: collect_reports(local, K, budget, np.random.default_rng(0)), repeats=5)
    there, _ = timed(lambda: collect_reports(worker, K, budget, np.random.default_rng(0)), repeats=5)
    small_here, _ = timed(lambda: local.draw(0, 64, np.random.default_rng(0)), repeats=200)
    small_there, _ = timed(lambda: worker.draw(0, 64, np.random.default_rng(0)), repeats=200)
    print(f"collect {K} x 200,000 GRR reports: in process {here:.3f} s, worker {there:.3f} s "
          f"(ratio {there / here:.2f}); one call of 64 reports: {small_here * 1e3:.3f} ms vs "
          f"{small_there * 1e3:.3f} ms")
    worker.close()


def memory_estimate() -> None:
    per_input, k = 200_000, 3
    total = per_input * k
    source = Widening(narrow=2)
    memory = ReportMemory(2.0**40, total, "bench")
    reports = collect_reports(source, k, Budget(per_input, max_memory=2.0**40), np.random.default_rng(0),
                              memory=memory)
    probe = report_bytes(as_report_array(np.random.default_rng(0).integers(0, 2, PROBE), PROBE, "probe"))
    held = sum(values.nbytes for values in reports.values())
    print(f"{total:,} reports, probe one byte a report, later batches eight: estimate from the probe "
          f"{MEMORY_FACTOR * probe * total / 2**20:.2f} MiB, from the widest batch "
          f"{MEMORY_FACTOR * memory.per_report * total / 2**20:.2f} MiB; the joined reports take "
          f"{held / 2**20:.2f} MiB x {MEMORY_FACTOR} copies = {MEMORY_FACTOR * held / 2**20:.2f} MiB")


if __name__ == "__main__":
    worker_cost()
    memory_estimate()
