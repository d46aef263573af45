"""A time budget (``--seconds S``) for the whole audit: drawing, fitting and testing.

The analysis of ``n`` reports per input takes about ``a + b n`` seconds (fixed
costs: fitting the classifiers on capped samples, the power sums; per report:
encoding, scoring, counting every pair's event). :func:`timed_audit` measures
instead of assuming:

1. **calibration** (about :data:`CALIBRATION_SHARE` of S) — reports of every
   input, and the analysis timed on them with every constrained pair tested
   (the most costly setting), the reports doubled until the cost per report
   shows (:func:`_calibrate`): the last two points give the line ``a + b n``
   (:func:`line_through`), timed again without the boosted trees when the
   budget will draw more than :data:`~designer.audit.attacks.BOOSTED_LIMIT`
   reports (the audit then leaves them out); then the state probe's first pairs
   of calls at two sizes (its fixed and per-call costs);
2. **drawing** — rounds of every input while the end of the next round plus the
   predicted analysis of everything drawn (the main tests, the probe's tests
   and the probe's remaining calls) stays before :data:`TARGET` of S
   (:func:`~designer.audit.collect.collect_reports`);
3. **analysis** of all the reports, the calibration's included (they were drawn
   before any analysis, like the rest).

The line through two timed points overestimates every cost that grows more
slowly than the reports (fixed, capped) and is exact for those that grow with
them; learned attacks dropped at larger budgets (the boosted trees beyond
:data:`~designer.audit.attacks.BOOSTED_LIMIT` reports) only make the analysis
faster than predicted. The sample size depends on timings, never on what the
reports say; the imports the analysis needs are made before the first timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from designer.audit.attacks import BOOSTED_LIMIT
from designer.audit.collect import FIRST_BATCH, Budget, budget_memory, collect_reports
from designer.audit.probe import MIN_PROBE_PAIRS, PROBE_ERROR_SHARE, PROBE_SHARE, combine, draw_pairs
from designer.audit.reports import concatenate_reports, unify_reports
from designer.audit.sources import ReportSource
from designer.audit.verdict import AuditResult, audit_reports
from designer.spec import PrivacyMatrix

#: The run aims to end at this share of the budget (the rest absorbs the noise of the predictions).
TARGET = 0.93
#: Share of the budget the calibration may take (its reports are kept: they are part of the audit).
CALIBRATION_SHARE = 0.2
#: Share of the budget one timed analysis of the calibration reports may take (the sample doubles until then).
TRIAL_SHARE = 0.05
#: The sample doubles until an analysis takes this many times the one before (the per-report cost shows).
GROWTH = 1.6
#: Pairs of calls of the probe's two timed sequences.
PROBE_CALIBRATION = (32, 256)


def line_through(first: tuple[float, float], second: tuple[float, float]) -> tuple[float, float]:
    """``(a, b)`` with ``a + b n`` through two points ``(n, seconds)``, both >= 0 (a negative intercept, from
    noise, is moved to the slope: the line then passes through the origin and the larger point)."""
    (n1, t1), (n2, t2) = sorted([first, second])
    slope = (t2 - t1) / (n2 - n1) if n2 > n1 else t2 / max(n2, 1)
    intercept = t1 - slope * n1
    if intercept < 0 or slope < 0:
        return 0.0, t2 / max(n2, 1)
    return intercept, slope


def timed_audit(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
                probe: bool, train_fraction: float, confidence: float,
                progress: Callable[[float], None] | None = None,
                **options) -> tuple[AuditResult, dict[int, np.ndarray]]:
    """Audit ``source`` on a fixed split within ``budget.seconds`` (see the module docstring).

    Every call of the source must answer before the budget's end (else bad input, as for any draw); the
    plan aims at :data:`TARGET` of it. Returns the :func:`~designer.audit.run.audit_source` pair
    ``(result, reports)``; ``result.timing`` holds the plan (:class:`TimePlan`).
    """
    start = time.perf_counter()
    hard, soft = start + budget.seconds, start + TARGET * budget.seconds
    k = privacy.k
    report = progress or (lambda fraction: None)
    _import_analysis(options.get("attacks"))
    memory = budget_memory(budget, k)
    main_confidence = 1 - (1 - confidence) * (1 - PROBE_ERROR_SHARE) if probe else confidence
    calibration, (fixed, per_report) = _calibrate(source, privacy, budget, rng, memory, hard, main_confidence,
                                                  train_fraction, options)
    probed, points = [], []
    for pairs in PROBE_CALIBRATION if probe else ():
        began = time.perf_counter()
        probed.append(draw_pairs(source, k, pairs, rng, soft, hard))
        points.append((len(probed[-1][0]), time.perf_counter() - began))
    probe_cost = line_through(*points) if len(points) == 2 and min(n for n, _ in points) else (0.0, 0.0)
    held = len(calibration[0])
    if options.get("attacks") is None and _affordable(fixed, per_report, soft, k) * k > BOOSTED_LIMIT:
        # the boosted trees are left out beyond BOOSTED_LIMIT reports: time the analysis the audit will run
        options = {**options, "attacks": ("logistic",)}
        fixed, per_report = _line(calibration, privacy, main_confidence, train_fraction, rng, options)
    probe_calls = sum(len(inputs) for inputs, _ in probed)

    def predicted(n: int) -> float:
        """Seconds of everything after drawing up to ``n`` reports per input: the probe's remaining calls and the
        analysis of the main and the probe's reports."""
        calls = max(2 * round(PROBE_SHARE * max(n, held) * k / 2) - probe_calls, 0) if probe else 0
        return (fixed + per_report * max(n, held) * k * (1 + PROBE_SHARE * probe)
                + (probe_cost[0] + probe_cost[1] * calls if calls else 0.0))

    plan = TimePlan(budget.seconds, TARGET, time.perf_counter() - start, fixed, per_report, probe_cost)
    reports = calibration
    if time.perf_counter() + predicted(2 * held) < soft:
        report(0.1)
        more = collect_reports(source, k, Budget(seconds=max(hard - time.perf_counter(), 0.001),
                                                 max_memory=budget.max_memory), rng,
                               lambda fraction: report(0.1 + 0.8 * fraction), memory=memory,
                               analysis=lambda n: predicted(held + n), until=soft)
        reports = unify_reports({x: concatenate_reports([calibration[x], more[x]], f"input {x}", source.separator)
                                 for x in range(k)}, separator=source.separator)
    total = len(reports[0])
    pairs = round(PROBE_SHARE * total * k / 2) - probe_calls // 2
    if probe and pairs > 0:
        analysis_left = fixed + per_report * total * k * (1 + PROBE_SHARE)
        probed.append(draw_pairs(source, k, pairs, rng, soft - analysis_left, hard))
    report(1.0)
    plan.drawn_seconds = time.perf_counter() - start
    plan.predicted_seconds = plan.drawn_seconds + fixed + per_report * total * k * (1 + PROBE_SHARE * probe)
    result = audit_reports(reports, privacy, main_confidence, train_fraction=train_fraction, rng=rng, **options)
    calls = None  # too few pairs of calls (a very short budget): no probe, the main tests at a stricter level
    if sum(len(inputs) for inputs, _ in probed) >= 2 * MIN_PROBE_PAIRS:
        calls = (np.concatenate([inputs for inputs, _ in probed]),
                 concatenate_reports([values for _, values in probed], "the state probe", source.separator))
    result = combine(result, calls, k, confidence, rng, **options)
    plan.seconds = time.perf_counter() - start
    return replace(result, timing=plan), reports


@dataclass
class TimePlan:
    """How a time budget was spent: the analysis line measured, the prediction at the end of drawing, the run.

    ``predicted_seconds`` is the time the run was predicted to take when drawing stopped (drawing so far plus
    the analysis line at the reports drawn): at most about ``target * budget`` by construction; ``seconds``
    what it took.
    """

    budget: float
    target: float
    calibration_seconds: float
    analysis_fixed: float
    analysis_per_report: float
    probe_cost: tuple[float, float]
    drawn_seconds: float = 0.0
    predicted_seconds: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"budget": self.budget, "target": self.target, "calibration_seconds": self.calibration_seconds,
                "analysis_seconds": [self.analysis_fixed, self.analysis_per_report],
                "probe_seconds": list(self.probe_cost), "drawn_seconds": self.drawn_seconds,
                "predicted_seconds": self.predicted_seconds, "seconds": self.seconds}


def _calibrate(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator, memory,
               hard: float, confidence: float, train_fraction: float,
               options: dict) -> tuple[dict[int, np.ndarray], tuple[float, float]]:
    """The calibration reports and ``(a, b)``: the analysis of ``n`` reports per input takes about ``a + b n k``
    seconds (every call of the source answering before ``hard``).

    After an untimed warm-up, the analysis (every constrained pair tested, the most costly setting) is timed
    on ``n`` reports per input, ``n`` doubled (and drawn) until one analysis takes :data:`GROWTH` times the
    one before (the cost per report shows above the fixed costs and the noise) and the learned attacks fit on
    their largest sample (:func:`_fit_saturation`), or one analysis takes :data:`TRIAL_SHARE` of the budget,
    or the calibration would pass its :data:`CALIBRATION_SHARE`; the line passes through the last two points
    (:func:`line_through`).
    """
    k = privacy.k
    until = time.perf_counter() + CALIBRATION_SHARE * budget.seconds
    timed = _timer(privacy, confidence, train_fraction, rng, options)

    def draw(n: int) -> dict[int, np.ndarray]:
        return collect_reports(source, k, Budget(n, max_memory=budget.max_memory), rng, memory=memory,
                               deadline=hard)

    began = time.perf_counter()
    reports = draw(FIRST_BATCH)
    per_draw = (time.perf_counter() - began) / FIRST_BATCH  # drawing seconds per report of every input
    timed(reports, 8)
    n, points = FIRST_BATCH, [timed(reports, FIRST_BATCH // 2), timed(reports, FIRST_BATCH)]
    saturated = _fit_saturation(options.get("attacks"), train_fraction)
    while points[-1][1] < TRIAL_SHARE * budget.seconds and (points[-1][1] < GROWTH * points[-2][1] or n < saturated):
        held = len(reports[0])
        if 2 * n > held:
            if time.perf_counter() + (2 * n - held) * per_draw + 2 * points[-1][1] > until:
                break
            began = time.perf_counter()
            more = draw(2 * n - held)
            per_draw = (time.perf_counter() - began) / (2 * n - held)
            reports = unify_reports({x: concatenate_reports([reports[x], more[x]], f"input {x}", source.separator)
                                     for x in range(k)}, separator=source.separator)
        n *= 2
        points.append(timed(reports, n))
    return reports, line_through(*points[-2:])


def _line(reports: dict[int, np.ndarray], privacy: PrivacyMatrix, confidence: float, train_fraction: float,
          rng: np.random.Generator, options: dict) -> tuple[float, float]:
    """``(a, b)`` from analyses of half and all of ``reports`` (after a warm-up) with these ``options``."""
    timed = _timer(privacy, confidence, train_fraction, rng, options)
    held = len(reports[0])
    timed(reports, min(held, 8))
    return line_through(timed(reports, held // 2), timed(reports, held))


def _timer(privacy: PrivacyMatrix, confidence: float, train_fraction: float, rng: np.random.Generator,
           options: dict) -> Callable[[dict, int], tuple[float, float]]:
    """``timed(reports, n) -> (n k, seconds)``: the analysis of the first ``n`` reports of every input, timed,
    every constrained pair tested."""
    trial = {**options, "max_pairs": options.get("max_pairs") or 0}
    trial_rng = np.random.default_rng(rng.integers(2**63))

    def timed(reports: dict, n: int) -> tuple[float, float]:
        began = time.perf_counter()
        audit_reports({x: values[:n] for x, values in reports.items()}, privacy, confidence,
                      train_fraction=train_fraction, rng=trial_rng, **trial)
        return n * privacy.k, time.perf_counter() - began

    return timed


def _affordable(fixed: float, per_report: float, soft: float, k: int) -> float:
    """Reports per input whose analysis alone would end at ``soft`` (an upper bound on what is drawn)."""
    return max(soft - time.perf_counter() - fixed, 0.0) / max(per_report * k, 1e-12)


def _fit_saturation(attacks, train_fraction: float) -> int:
    """Reports per input from which the learned attacks fit on their largest sample (half of the training
    split, capped at :data:`~designer.audit.attacks.FIT_PER_INPUT`): below, their cost still grows."""
    from designer.audit.attacks import FIT_PER_INPUT, MODELS

    models = MODELS if attacks is None else attacks
    return max((int(2 * FIT_PER_INPUT[name] / train_fraction) for name in models), default=0)


def _import_analysis(attacks) -> None:
    """Import what the analysis uses (scipy's special functions, scikit-learn's models) before timing it."""
    import importlib  # the analysis imports them too: here they are loaded before the calibration is timed

    importlib.import_module("scipy.special")

    if attacks != ():
        from designer.audit.attacks import MODELS, make_model

        for name in attacks or MODELS:
            make_model(name, 0)
