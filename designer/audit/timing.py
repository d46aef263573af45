"""A time budget (``--seconds S``) for the whole audit: drawing, fitting and testing.

:func:`timed_audit` measures the analysis instead of assuming its speed (:class:`AnalysisCost`):

1. **calibration** (about :data:`CALIBRATION_SHARE` of S) — rounds of reports of every input for half
   of it; the event families' analysis timed on them with every constrained pair tested (the most
   costly setting), the reports doubled until the cost per report shows (:func:`_calibrate`): the
   line ``a + b n`` through the last two timings (:func:`line_through`); the learned attacks' fit and
   scoring timed apart (:func:`_learned_cost`) — and left out when they would take half of what is
   left (unless ``--attacks`` names them), or timed again without the boosted trees when the budget
   will draw more than :data:`~designer.audit.attacks.BOOSTED_LIMIT` reports (the audit then leaves
   them out); the state probe's first pairs of calls at two sizes (its fixed and per-call costs) and
   its tests on them;
2. **drawing** — rounds of every input while the end of the next round plus the predicted analysis of
   everything drawn (the main tests, the probe's tests and the probe's remaining calls) stays before
   :data:`TARGET` of S (:func:`~designer.audit.collect.collect_reports`), the last rounds shrinking;
3. **analysis** of all the reports, the calibration's included (they were drawn before any analysis,
   like the rest).

The line through two timed points overestimates every cost that grows more slowly than the reports
(fixed, capped) and is exact for those that grow with them, so an audit ends early rather than late.
The sample size depends on timings, never on what the reports say; scipy is imported before the
first timing, scikit-learn before the learned attacks are timed. What the calibration cannot shorten
— the command's start-up, the first import of a client library in the sampler's process, scikit-learn's
import — counts against the budget.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from designer.audit.attacks import BOOSTED_LIMIT, MIN_TRAINING
from designer.audit.collect import Budget, budget_memory, collect_reports
from designer.audit.probe import (
    MIN_GROUP,
    MIN_PROBE_PAIRS,
    PROBE_ERROR_SHARE,
    PROBE_SHARE,
    combine,
    draw_pairs,
    probe_state,
)
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
#: Reports per input scored to time the learned attacks' scoring.
SCORED = 4096
#: Reports per input of the first timed analysis (at most; then doubled).
FIRST_TRIAL = 256
#: The sample doubles until an analysis takes this many times the one before (the per-report cost shows).
GROWTH = 1.6
#: Pairs of calls of the probe's two timed sequences (the second at least three times the smallest group
#: tested per input, so that the timed tests are those the audit will make).
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


@dataclass
class AnalysisCost:
    """Seconds the analysis of ``n`` reports per input (``k`` inputs) is predicted to take (:meth:`seconds`).

    * the learned attacks' fit: ``fit`` seconds measured at ``fit_at`` reports per input, scaled by the
      sample the classifiers fit on (``min(n, saturation)``: half of the training split, capped);
    * their scoring: ``score`` seconds per report (every report is scored, training halves twice);
    * the event families (events, counts, power sums): the line ``fixed + per_report n k`` through two
      timings, counted twice with the learned attacks (their events are chosen per pair alike);
    * the state probe's tests: ``probe`` seconds per pair of calls (the permutation test, the costlier one).
    """

    fixed: float
    per_report: float
    fit: float = 0.0
    fit_at: int = 1
    saturation: int = 0
    score: float = 0.0
    probe: float = 0.0

    def seconds(self, n: int, k: int, pairs: int = 0) -> float:
        if not self.fit:
            return self.fixed + self.per_report * n * k + self.probe * pairs
        fitted = self.fit * min(n, self.saturation) / max(min(self.fit_at, self.saturation), 1)
        # the learned events are chosen per pair as the event families' are: the rest counted twice
        return 2 * self.fixed + (2 * self.per_report + self.score) * n * k + fitted + self.probe * pairs

    def to_dict(self) -> dict:
        return {"fixed": self.fixed, "per_report": self.per_report, "fit": self.fit, "fit_at": self.fit_at,
                "saturation": self.saturation, "score_per_report": self.score, "probe_per_pair": self.probe}


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
    _import_analysis(())
    memory = budget_memory(budget, k)
    main_confidence = 1 - (1 - confidence) * (1 - PROBE_ERROR_SHARE) if probe else confidence
    calibration, cost = _calibrate(source, privacy, budget, rng, memory, hard, main_confidence, train_fraction,
                                   options)
    held = len(calibration[0])
    learned_off = options.get("attacks") is None and (cost.fit == 0 or time.perf_counter() + cost.seconds(
        2 * held, k) > soft - (soft - time.perf_counter()) / 2)
    if learned_off:  # fitting the classifiers would take half of what is left: the event families alone
        options = {**options, "attacks": ()}
        cost.fit = cost.score = 0.0
    elif options.get("attacks") is None and _affordable(cost, soft, k) * k > BOOSTED_LIMIT:
        # the boosted trees are left out beyond BOOSTED_LIMIT reports: time the analysis the audit will run
        options = {**options, "attacks": ("logistic",)}
        cost = _cost(calibration, privacy, main_confidence, train_fraction, rng, options)
    probed, points = [], []
    for pairs in (PROBE_CALIBRATION[0], max(PROBE_CALIBRATION[1], 3 * MIN_GROUP * k)) if probe else ():
        began = time.perf_counter()  # the second sequence only as long as the first's pace fits in the plan
        per_call = points[0][1] / max(points[0][0], 1) if points else 0.0
        probed.append(draw_pairs(source, k, pairs, rng, soft - (soft - began) / 2, hard, 1.5 * per_call))
        points.append((len(probed[-1][0]), time.perf_counter() - began))
    probe_draw = line_through(*points) if len(points) == 2 and min(n for n, _ in points) else (0.0, 0.0)
    if points and not probe_draw[1]:  # one sequence drawn: its pace through the origin
        probe_draw = (0.0, points[0][1] / max(points[0][0], 1))
    probe_calls = sum(len(inputs) for inputs, _ in probed)
    if probe_calls:
        began = time.perf_counter()
        probe_state(np.concatenate([inputs for inputs, _ in probed]),
                    concatenate_reports([values for _, values in probed], "the state probe", source.separator), k,
                    confidence, np.random.default_rng(0))
        cost.probe = (time.perf_counter() - began) / (probe_calls // 2)

    def predicted(n: int) -> float:
        """Seconds of everything after drawing up to ``n`` reports per input: the probe's remaining calls and the
        analysis of the main and the probe's reports."""
        n = max(n, held)
        pairs = round(PROBE_SHARE * n * k / 2) if probe else 0
        calls = max(2 * pairs - probe_calls, 0)
        return cost.seconds(n, k, pairs) + (probe_draw[0] + probe_draw[1] * calls if calls else 0.0)

    plan = TimePlan(budget.seconds, TARGET, time.perf_counter() - start, cost, probe_draw, learned_off)
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
    pairs = round(PROBE_SHARE * total * k / 2) if probe else 0
    if pairs > probe_calls // 2:
        probed.append(draw_pairs(source, k, pairs - probe_calls // 2, rng, soft - cost.seconds(total, k, pairs),
                                 hard, 1.5 * probe_draw[1]))
    report(1.0)
    plan.drawn_seconds = time.perf_counter() - start
    plan.predicted_seconds = plan.drawn_seconds + cost.seconds(total, k, pairs)
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
    """How a time budget was spent: the analysis cost measured, the prediction at the end of drawing, the run.

    ``predicted_seconds`` is the time the run was predicted to take when drawing stopped (drawing so far plus
    the analysis cost at the reports drawn): at most about ``target * budget`` by construction; ``seconds``
    what it took. ``learned_off``: the learned attacks were left out, their fit alone predicted to take half
    of the time left after the calibration (``--attacks`` naming them keeps them).
    """

    budget: float
    target: float
    calibration_seconds: float
    analysis: AnalysisCost
    probe_draw: tuple[float, float]
    learned_off: bool = False
    drawn_seconds: float = 0.0
    predicted_seconds: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"budget": self.budget, "target": self.target, "calibration_seconds": self.calibration_seconds,
                "analysis": self.analysis.to_dict(), "probe_draw_seconds": list(self.probe_draw),
                "learned_attacks_off": self.learned_off,
                "drawn_seconds": self.drawn_seconds, "predicted_seconds": self.predicted_seconds,
                "seconds": self.seconds}


def _calibrate(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator, memory,
               hard: float, confidence: float, train_fraction: float,
               options: dict) -> tuple[dict[int, np.ndarray], AnalysisCost]:
    """The calibration reports and the :class:`AnalysisCost` measured on them (every call of the source
    answering before ``hard``).

    The event families' analysis (every constrained pair tested, the most costly setting) is timed, after an
    untimed warm-up, on ``n`` reports per input, ``n`` doubled (and drawn) until an analysis takes
    :data:`GROWTH` times the one before, or :data:`TRIAL_SHARE` of the budget, or the calibration would pass
    its :data:`CALIBRATION_SHARE`: the line through the last two points (:func:`line_through`) when the last
    grew by :data:`GROWTH`, else all of the last timing charged per report (a slope from noise would let the
    audit draw without end). The learned attacks are timed apart (:func:`_learned_cost`).
    """
    k = privacy.k
    until = time.perf_counter() + CALIBRATION_SHARE * budget.seconds
    learned = options.get("attacks") != ()  # and a calibration sample the classifiers can fit on
    timed = _timer(privacy, confidence, train_fraction, rng, {**options, "attacks": ()})

    def draw(n: int) -> dict[int, np.ndarray]:
        return collect_reports(source, k, Budget(n, max_memory=budget.max_memory), rng, memory=memory,
                               deadline=hard)

    began = time.perf_counter()  # rounds for half the calibration's share, and at most a first timing's reports
    reports = collect_reports(source, k, Budget(seconds=max(hard - began, 0.001), max_memory=budget.max_memory),
                              rng, memory=memory, until=began + CALIBRATION_SHARE * budget.seconds / 2, deadline=hard,
                              analysis=lambda n: 0.0 if n <= FIRST_TRIAL else math.inf)
    held = len(reports[0])
    per_draw = (time.perf_counter() - began) / held  # drawing seconds per report of every input
    learned = learned and held >= math.ceil(2 * MIN_TRAINING / train_fraction)
    timed(reports, 8)
    n = min(held, FIRST_TRIAL)  # a fast source may have drawn far more than a first timing needs
    points = [timed(reports, n // 2), timed(reports, n)]
    while points[-1][1] < TRIAL_SHARE * budget.seconds and points[-1][1] < GROWTH * points[-2][1]:
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
    if points[-1][1] >= GROWTH * points[-2][1]:  # the cost per report shows: the line through the two
        fixed, per_report = line_through(*points[-2:])
    else:  # it does not (fixed costs and noise): all of the last timing is charged per report
        fixed, per_report = 0.0, points[-1][1] / points[-1][0]
    cost = AnalysisCost(fixed, per_report, saturation=_fit_saturation(options.get("attacks"), train_fraction))
    if learned:
        _import_analysis(options.get("attacks"))  # scikit-learn, once the calibration shows it may be used
        cost.fit, cost.fit_at, cost.score = _learned_cost(reports, train_fraction, rng, options)
    return reports, cost


def _learned_cost(reports: dict[int, np.ndarray], train_fraction: float, rng: np.random.Generator,
                  options: dict) -> tuple[float, int, float]:
    """``(fit seconds, at reports per input, scoring seconds per report)`` of the learned attacks, timed on
    ``reports`` split as the audit splits them (their events are chosen as the event families' are, a cost
    the audit's line already counts once: it is counted twice)."""
    from designer.audit.attacks import default_attacks, learned_space

    attacks = options.get("attacks") or default_attacks(len(reports[0]) * len(reports))
    held = min(len(reports[0]), _fit_saturation(attacks, train_fraction))  # beyond, the fit costs no more
    train = {x: values[:max(int(train_fraction * held), 1)] for x, values in reports.items()}
    space = learned_space(train, tuple(attacks), options.get("features"), options.get("features_arguments"),
                          int(rng.integers(2**31)))
    if space is None:
        return 0.0, held, 0.0
    joined = np.concatenate([values[:SCORED] for values in reports.values()])
    began = time.perf_counter()
    space.class_scores(joined)
    return space.fit_seconds, held, 2 * (time.perf_counter() - began) / len(joined)


def _cost(reports: dict[int, np.ndarray], privacy: PrivacyMatrix, confidence: float, train_fraction: float,
          rng: np.random.Generator, options: dict) -> AnalysisCost:
    """The :class:`AnalysisCost` of the learned attacks ``options`` names, on ``reports`` (the event
    families' line measured on half and all of them)."""
    timed = _timer(privacy, confidence, train_fraction, rng, {**options, "attacks": ()})
    held = len(reports[0])
    fixed, per_report = line_through(timed(reports, held // 2), timed(reports, held))
    cost = AnalysisCost(fixed, per_report, saturation=_fit_saturation(options.get("attacks"), train_fraction))
    cost.fit, cost.fit_at, cost.score = _learned_cost(reports, train_fraction, rng, options)
    return cost


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


def _affordable(cost: AnalysisCost, soft: float, k: int) -> float:
    """Reports per input whose analysis alone would end at ``soft`` (an upper bound on what is drawn)."""
    slope = (cost.seconds(cost.saturation + 1, k) - cost.seconds(cost.saturation, k)) / 1
    return max(soft - time.perf_counter() - cost.seconds(cost.saturation, k) + slope * cost.saturation, 0.0) / \
        max(slope, 1e-12)


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
