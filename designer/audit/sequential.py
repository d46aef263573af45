"""Early stopping: audits at a few pre-registered looks, with the error split among them (alpha spending).

The budget of ``N`` reports per input is drawn in increments; at look ``j``
(``looks[j] * N`` reports per input drawn so far) the whole sample is audited
(:func:`designer.audit.verdict.audit_reports`) at error ``alpha_j``, and the
audit stops at the first look that finds a violation. The schedule is fixed
before any report is drawn — the looks and the Bonferroni split
``alpha_j = (1 - confidence) / len(looks)`` — so, for a mechanism that *is*
E-LDP, the probability that some look says ``violated`` is at most
``sum_j alpha_j = 1 - confidence`` (a union bound over the looks: each look is
a fixed-size test at its own level, whatever the looks before it said). This
is the simplest alpha-spending function; it stops early on a blatant leak at
the cost of a stricter level at the last look.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from designer.audit.collect import Budget, ReportMemory, budget_memory, collect_reports
from designer.audit.reports import concatenate_reports, unify_reports
from designer.audit.sources import ReportSource
from designer.audit.verdict import AuditResult, audit_reports
from designer.spec import PrivacyMatrix

#: Default looks, as shares of the budget.
DEFAULT_LOOKS = (0.25, 0.5, 1.0)


def check_looks(looks: tuple[float, ...]) -> None:
    """Looks must increase strictly within (0, 1] and end at 1 (the whole budget)."""
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] <= 0 or looks[-1] != 1:
        raise ValueError(f"--looks must increase strictly within (0, 1] and end at 1, got {','.join(map(str, looks))}")


def sequential_audit(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
                     looks: tuple[float, ...] = DEFAULT_LOOKS, confidence: float = 0.95, progress=None,
                     memory: ReportMemory | None = None, **options) -> AuditResult:
    """Audit ``source`` at each look of ``looks`` with error ``(1 - confidence) / len(looks)``; stop at a violation.

    Parameters
    ----------
    source : ReportSource
    privacy : PrivacyMatrix
    budget : Budget
        ``reports_per_input`` only (the looks are shares of it).
    rng : Generator
    looks : tuple of float
        Increasing shares of the budget, the last 1.
    confidence : float
        Of the whole procedure: all looks together say ``violated`` wrongly with probability
        at most ``1 - confidence``.
    progress : callable, optional
        Called with the fraction of the budget drawn (0..1).
    memory : ReportMemory, optional
        The memory of a larger budget this audit is part of (default: ``budget``'s).
    **options
        Passed to :func:`~designer.audit.verdict.audit_reports`.

    Returns
    -------
    AuditResult of the last look made, with ``confidence`` the procedure's and ``looks`` the record
    ``[{"share", "reports_per_input", "error", "verdict"}, ...]`` of the looks made.
    """
    if budget.reports_per_input is None:
        raise ValueError("--looks needs --reports-per-input (the looks are shares of it)")
    check_looks(tuple(looks))
    k, total = privacy.k, budget.reports_per_input
    report = progress or (lambda fraction: None)
    error = (1 - confidence) / len(looks)
    reports: dict[int, np.ndarray] = {}
    record, drawn = [], 0
    memory = memory or budget_memory(budget, k)  # every look's batches are checked against the whole budget
    for share in looks:
        target = max(2, round(share * total))
        if target > drawn:
            start = drawn
            more = collect_reports(source, k, Budget(target - drawn, max_memory=budget.max_memory), rng,
                                   lambda fraction: report((start + fraction * (target - start)) / total),
                                   memory=memory)
            reports = unify_reports({x: concatenate_reports([reports[x], more[x]], f"input {x}", source.separator)
                                     if x in reports else more[x] for x in more}, separator=source.separator)
            drawn = target
        result = audit_reports(reports, privacy, confidence=1 - error, rng=rng, **options)
        record.append({"share": share, "reports_per_input": drawn, "error": error, "verdict": result.verdict})
        if result.violated:
            break
    return replace(result, confidence=confidence, looks=record)
