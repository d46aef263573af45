"""One audit of a source that draws its own reports: the state probe, then the main tests, one verdict.

:func:`audit_source` spends a budget (:class:`~designer.audit.collect.Budget`) on

1. the **state probe** (:mod:`designer.audit.probe`, unless ``probe=False``):
   :data:`~designer.audit.probe.PROBE_SHARE` of the reports, in pairs of calls on
   random inputs, tested at :data:`~designer.audit.probe.PROBE_ERROR_SHARE` of the error;
2. the **main tests** on the rest, at the rest of the error: adaptive
   (:func:`~designer.audit.adaptive.adaptive_audit`), at early-stopping looks
   (:func:`~designer.audit.sequential.sequential_audit`) or on a fixed split
   (:func:`~designer.audit.collect.collect_reports` then
   :func:`~designer.audit.verdict.audit_reports`).

The verdict is ``violated`` when either finds a violation; by Bonferroni across
the probe and the main tests it is wrong with probability at most
``1 - confidence``. A time budget (``--seconds``) covers the whole run,
drawing, fitting and testing (:mod:`designer.audit.timing`).

The source is only asked, never changed: a caller may ask the same source for
another audit (another round of a longitudinal audit) with a fresh budget.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from designer.audit.collect import Budget, ReportMemory, budget_memory, collect_reports
from designer.audit.probe import MIN_PROBE_PAIRS, PROBE_ERROR_SHARE, PROBE_SHARE, combine, draw_pairs
from designer.audit.sources import ReportSource
from designer.audit.verdict import AuditResult, audit_reports
from designer.defaults import AUDIT_CONFIDENCE, AUDIT_TRAIN_FRACTION
from designer.spec import PrivacyMatrix

def audit_source(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
                 adaptive: bool = False, looks: tuple[float, ...] | None = None, probe: bool = True,
                 train_fraction: float = AUDIT_TRAIN_FRACTION, confidence: float = AUDIT_CONFIDENCE,
                 progress: Callable[[float], None] | None = None,
                 **options) -> tuple[AuditResult, dict[int, np.ndarray]]:
    """Audit ``source`` against ``privacy`` within ``budget`` (see the module docstring).

    Parameters
    ----------
    source : ReportSource
    privacy : PrivacyMatrix
    budget : Budget
    rng : Generator
    adaptive : bool
        Spend the main budget adaptively (needs ``budget.reports_per_input``).
    looks : tuple of float, optional
        Early stopping at these shares of the main budget.
    probe : bool
        Run the state probe (skipped, with ``result.probe`` None, when the budget affords fewer than
        :data:`MIN_PROBE_PAIRS` pairs of calls).
    train_fraction, confidence : float
    progress : callable, optional
        Called with the fraction of the drawing done (0..1).
    **options
        Passed to :func:`~designer.audit.verdict.audit_reports` (correction, max_pairs, attacks, delta, ...).

    Returns
    -------
    (AuditResult, reports): the verdict (with ``probe`` set when the probe ran, and ``confidence`` the whole
    audit's), and the reports of a fixed-split audit (empty for an adaptive or early-stopping one).
    """
    if budget.seconds is not None:
        from designer.audit.timing import timed_audit

        return timed_audit(source, privacy, budget, rng, probe, train_fraction, confidence, progress, **options)
    k = privacy.k
    report = progress or (lambda fraction: None)
    per_input = budget.reports_per_input
    probe_per_input = round(PROBE_SHARE * per_input) if probe else 0
    pairs = probe_per_input * k // 2
    if pairs < MIN_PROBE_PAIRS or per_input - probe_per_input < 2:
        pairs = probe_per_input = 0
    main_confidence = 1 - (1 - confidence) * (1 - PROBE_ERROR_SHARE) if pairs else confidence
    share = probe_per_input / per_input
    main = Budget(per_input - probe_per_input, max_memory=budget.max_memory)
    # the main tests first: their draws check the memory of the whole budget before any bulk is drawn
    result, reports = main_audit(source, privacy, main, rng, adaptive, looks, train_fraction, main_confidence,
                                 lambda fraction: report((1 - share) * fraction), budget_memory(budget, k), **options)
    probed = draw_pairs(source, k, pairs, rng) if pairs else None
    report(1.0)
    return combine(result, probed, k, confidence, rng, **options), reports


def main_audit(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
               adaptive: bool, looks: tuple[float, ...] | None, train_fraction: float, confidence: float,
               progress: Callable[[float], None], memory: ReportMemory | None = None,
               **options) -> tuple[AuditResult, dict[int, np.ndarray]]:
    """The main tests: adaptive, at looks, or on a fixed split of reports drawn now (``memory``: of the whole
    budget, checked at the first batch; default ``budget``'s)."""
    if adaptive:
        from designer.audit.adaptive import adaptive_audit

        return adaptive_audit(source, privacy, budget, rng, train_fraction, progress, memory=memory,
                              confidence=confidence, **options), {}
    if looks is not None:
        from designer.audit.sequential import sequential_audit

        return sequential_audit(source, privacy, budget, rng, looks, confidence, progress, memory=memory,
                                train_fraction=train_fraction, **options), {}
    reports = collect_reports(source, privacy.k, budget, rng, progress, memory=memory)
    return audit_reports(reports, privacy, confidence, train_fraction=train_fraction, rng=rng, **options), reports
