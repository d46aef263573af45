"""Adaptive budgets: a pilot on every input, the rest of the budget on the pairs it finds suspicious.

A fixed split spends most reports on inputs that leak nothing. Here the
budget of ``N`` reports per input is spent in two stages:

1. **pilot** — ``train_fraction * N`` reports of *every* input (every pair and
   every output gets a look; a rare output seen under one input only is
   already a candidate event). All of them train: attacks, events and the
   ``max_pairs`` pairs to test are chosen on the pilot alone
   (:func:`designer.audit.verdict.audit_reports` with ``second_stage``), for
   the fresh size a pair would get if it were tested alone;
2. **fresh** — the rest of the budget, ``(1 - train_fraction) N k`` reports,
   split equally among the inputs of the chosen pairs only; the chosen events
   are tested on them.

The fresh reports are drawn after, and independently of, every choice, so the
tests keep their error rate (the argument of the fixed split). A leak
confined to few inputs — a rare debug report of one input — gets up to
``k / 2`` times more fresh reports than with the fixed split.
"""

from __future__ import annotations

import numpy as np

from designer.audit.collect import Budget, collect_reports
from designer.audit.sources import ReportSource
from designer.audit.verdict import DEFAULT_TRAIN_FRACTION, AuditResult, audit_reports
from designer.spec import PrivacyMatrix


def adaptive_audit(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
                   train_fraction: float = DEFAULT_TRAIN_FRACTION, progress=None, **options) -> AuditResult:
    """Audit ``source`` with a pilot on every input and the rest of ``budget`` on the chosen pairs' inputs.

    Parameters
    ----------
    source : ReportSource
    privacy : PrivacyMatrix
    budget : Budget
        ``reports_per_input`` only (a time budget has no total to reallocate).
    rng : Generator
    train_fraction : float
        The pilot's share of the budget.
    progress : callable, optional
        Called with the fraction of the drawing done (0..1).
    **options
        Passed to :func:`~designer.audit.verdict.audit_reports` (confidence, max_pairs, attacks, ...).
    """
    if budget.reports_per_input is None:
        raise ValueError("--adaptive needs --reports-per-input (a budget to reallocate)")
    k = privacy.k
    report = progress or (lambda fraction: None)
    pilot = max(2, round(train_fraction * budget.reports_per_input))
    rest = (budget.reports_per_input - pilot) * k
    if rest < 4:
        raise ValueError(f"--reports-per-input {budget.reports_per_input} leaves no fresh reports after the pilot")
    reports = collect_reports(source, k, Budget(pilot, max_memory=budget.max_memory), rng,
                              lambda fraction: report(fraction * train_fraction))

    def second_stage(inputs: list[int]) -> dict[int, np.ndarray]:
        return collect_reports(source, k, Budget(max(2, rest // len(inputs)), max_memory=budget.max_memory), rng,
                               lambda fraction: report(train_fraction + fraction * (1 - train_fraction)),
                               inputs=inputs)

    return audit_reports(reports, privacy, rng=rng, train_fraction=train_fraction, second_stage=second_stage,
                         planned_fresh=rest // 2, **options)
