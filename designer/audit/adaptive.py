"""Adaptive budgets: a pilot on every input, a narrowing round on the suspicious pairs, the rest tested.

A fixed split spends most reports on inputs that leak nothing. Here the
budget of ``N`` reports per input is spent in up to three stages (the command
line's default whenever the audit draws its own reports, :func:`choose_adaptive`):

1. **pilot** — ``train_fraction * N`` reports of *every* input (every pair and
   every output gets a look; a rare output seen under one input only is
   already a candidate event). Attacks and events are chosen on it and the
   pairs ranked by predicted excess (:func:`designer.audit.verdict.rank_pairs`);
2. **narrowing** (when at least :data:`NARROW_MIN_PAIRS` pairs are constrained) —
   :data:`NARROW_SHARE` of the rest of the budget, split equally among the
   inputs of the top :data:`NARROW_PAIRS` pairs; pilot and narrowing reports
   together choose the events again and rank those pairs only (a pair whose
   pilot evidence was noisy gets a second, larger look);
3. **fresh** — the remaining reports, split equally among the inputs of the
   ``max_pairs`` pairs finally chosen (default: all pairs when
   :func:`~designer.audit.verdict.default_max_pairs` says the budget affords them,
   else :data:`NARROWED_MAX_PAIRS` after a narrowing round, else 8); the chosen
   events are tested on them
   (:func:`designer.audit.verdict.audit_reports` with ``second_stage``).

Every stage's reports are drawn after, and independently of, the choices made
on the earlier ones, and only the fresh stage is tested, so the tests keep
their error rate (the argument of the fixed split). A leak confined to few
inputs — a rare debug report of one input, one leaking pair among hundreds —
gets up to ``k / 2`` times more fresh reports than with the fixed split.
"""

from __future__ import annotations

import numpy as np

from designer.audit.collect import Budget, ReportMemory, budget_memory, collect_reports
from designer.audit.reports import concatenate_reports, is_text, unify_reports
from designer.audit.sources import ReportSource
from designer.audit.verdict import (
    DEFAULT_MAX_PAIRS,
    DEFAULT_TRAIN_FRACTION,
    AuditResult,
    audit_reports,
    component_part,
    constrained_pairs,
    default_max_pairs,
    event_space,
    output_component,
    rank_pairs,
    typical_allowed,
)
from designer.defaults import AUDIT_CONFIDENCE, AUDIT_NARROWED_MAX_PAIRS
from designer.spec import PrivacyMatrix

#: Pairs given a second look.
NARROW_PAIRS = 16
#: The narrowing round is made when at least this many pairs are constrained (k >= 9 for a full E:
#: with fewer, the 16 pairs cover nearly every input and the round only thins the fresh budget).
NARROW_MIN_PAIRS = 64
#: Of the narrowing round's pairs, at most this many are kept for inputs that alone showed an output
#: in the pilot (a rare output seen under one input only is the cheapest infinite leak).
EXCLUSIVE_PAIRS = 4
#: Share of the budget after the pilot spent on the narrowing round.
NARROW_SHARE = 0.5
#: Pairs tested after a narrowing round when ``max_pairs`` is not given (the fresh reports go to
#: their inputs only: with one leaking pair among 240, 2 pairs detect it in 19 of 20 seeds, 8 pairs
#: in 14 of 20, benchmarks/RESULTS.md).
NARROWED_MAX_PAIRS = AUDIT_NARROWED_MAX_PAIRS


def choose_adaptive(requested: bool | None, draws: bool, per_input: bool, looks: bool, whole_channel: bool,
                    every_pair: bool = False) -> bool:
    """Whether an audit spends its budget adaptively (the default whenever it can).

    Parameters
    ----------
    requested : bool or None
        ``--adaptive`` (True), ``--fixed-split`` (False), neither (None).
    draws : bool
        The audit draws its own reports (``--sampler``, ``--command``; not a ``--reports`` file).
    per_input : bool
        The budget is a number of reports per input (``--reports-per-input``; a ``--seconds``
        budget has no total to reallocate).
    looks : bool
        Early stopping (``--looks``), which audits the whole sample at every look (a fixed split).
    whole_channel : bool
        The channel is estimated (``--declared``, ``--channel-out``): every input needs the same
        reports.
    every_pair : bool
        The empirical E matrix is asked for (``--lower-bounds-out``, ``--plot``): every pair's bound
        needs its inputs' reports, so the fixed split is the default (an explicit ``--adaptive`` is
        kept, and its matrix bounds mainly the pairs it focused on).

    Returns
    -------
    bool: adaptive when requested or by default when nothing above rules it out; an explicit
    ``--adaptive`` that something rules out is refused with the reason.
    """
    if requested is False:
        return False
    if requested:
        if not draws or whole_channel:
            raise ValueError("--adaptive draws more reports of some inputs than of others: it needs --sampler or "
                             "--command, and estimates no channel (--declared, --channel-out)")
        if not per_input:
            raise ValueError("--adaptive needs --reports-per-input (a budget to reallocate)")
        if looks:
            raise ValueError("--looks audits the whole sample at each look (a fixed split): drop --adaptive "
                             "or --looks")
        return True
    return draws and per_input and not looks and not whole_channel and not every_pair


def adaptive_audit(source: ReportSource, privacy: PrivacyMatrix, budget: Budget, rng: np.random.Generator,
                   train_fraction: float = DEFAULT_TRAIN_FRACTION, progress=None, memory: ReportMemory | None = None,
                   **options) -> AuditResult:
    """Audit ``source`` with a pilot on every input and the rest of ``budget`` on the chosen pairs' inputs.

    The whole budget's memory is checked at the pilot's first batch (a probe of at most
    :data:`~designer.audit.collect.PROBE` reports of input 0), and again at every batch of
    every stage that needs a wider type (:class:`~designer.audit.collect.ReportMemory`).

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
    memory : ReportMemory, optional
        The memory of a larger budget this audit is part of (default: ``budget``'s).
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
    total = budget.reports_per_input * k
    # the whole budget is held at the end: every stage's batches are checked against it, from the
    # pilot's first (its probe) on
    memory = memory or budget_memory(budget, k)
    drawn = {"count": pilot * k}

    def draw(inputs: list[int], per_input: int) -> dict[int, np.ndarray]:
        start = drawn["count"]
        drawn["count"] += per_input * len(inputs)
        return collect_reports(source, k, Budget(per_input, max_memory=budget.max_memory), rng,
                               lambda fraction: report((start + fraction * per_input * len(inputs)) / total),
                               inputs=inputs, memory=memory)

    reports = collect_reports(source, k, Budget(pilot, max_memory=budget.max_memory), rng,
                              lambda fraction: report(fraction * pilot * k / total), memory=memory)
    pairs = None
    max_pairs = options.pop("max_pairs", None)
    candidates = constrained_pairs(reports, privacy)
    if max_pairs is None:  # all pairs when affordable (each input then gets its own rest)
        affordable = default_max_pairs(len(candidates), rest // k, typical_allowed(privacy.epsilon, candidates),
                                       options.get("confidence", AUDIT_CONFIDENCE)) == 0
        max_pairs = 0 if affordable else None
    narrow = max_pairs is None or 0 < max_pairs < NARROW_PAIRS
    if narrow and len(candidates) >= NARROW_MIN_PAIRS:
        max_pairs = max_pairs or NARROWED_MAX_PAIRS
        pairs = _narrowing_candidates(reports, privacy, rng, rest, options)
        inputs = sorted({x for pair in pairs for x in pair})
        second = max(2, round(NARROW_SHARE * rest / len(inputs)))
        extra = draw(inputs, second)
        reports = _joined(reports, extra, source.separator)
        rest -= second * len(inputs)

    if max_pairs is None:
        max_pairs = DEFAULT_MAX_PAIRS

    # fresh reports per input: all pairs share the rest among the k inputs; otherwise the events are
    # chosen for the best pair's two inputs (the chosen pairs often share inputs)
    def second_stage(inputs: list[int]) -> dict[int, np.ndarray]:
        fresh = draw(inputs, max(2, rest // len(inputs)))
        if is_text(next(iter(reports.values()))):  # in the pilot's representation
            fresh = {x: values if is_text(values) else source.as_text(values) for x, values in fresh.items()}
        return fresh

    return audit_reports(reports, privacy, rng=rng, train_fraction=train_fraction, second_stage=second_stage,
                         planned_fresh=rest // (k if max_pairs == 0 else 2), pairs=pairs, max_pairs=max_pairs, **options)


def _narrowing_candidates(reports: dict, privacy: PrivacyMatrix, rng: np.random.Generator, rest: int,
                          options: dict) -> list[tuple[int, int]]:
    """The :data:`NARROW_PAIRS` pairs with the largest predicted excess on the pilot, led by the best pair of
    each of the (at most :data:`EXCLUSIVE_PAIRS`) inputs that alone showed some output."""
    space = event_space(reports, reports, privacy.k, options.get("support"), options.get("support_arguments"),
                        options.get("alphabet"), options.get("attacks"), options.get("features"),
                        options.get("features_arguments"), rng)
    encoded = {x: space.encode(values) for x, values in reports.items()}
    candidates = constrained_pairs(reports, privacy)
    error = (1 - options.get("confidence", AUDIT_CONFIDENCE)) / NARROW_PAIRS
    planned = {x: int((1 - NARROW_SHARE) * rest) // 2 for x in reports}
    order, _ = rank_pairs(candidates, space, encoded, privacy.epsilon, error, planned)
    kept = [next(pair for pair in order if pair[0] == x) for x in _exclusive_inputs(space, encoded)
            if any(pair[0] == x for pair in order)][:EXCLUSIVE_PAIRS]
    return kept + [pair for pair in order if pair not in kept][:NARROW_PAIRS - len(kept)]


def _exclusive_inputs(space, encoded: dict) -> list[int]:
    """Inputs that alone showed some output in the pilot, by decreasing count of such reports."""
    outputs = output_component(space)
    if outputs is None:
        return []
    position, output_space = outputs
    inputs = sorted(encoded)
    counts = np.array([np.bincount(component_part(encoded[x], position), minlength=output_space.n_outputs)
                       for x in inputs])
    exclusive = (counts > 0).sum(axis=0) == 1
    alone = counts[:, exclusive].sum(axis=1)
    return [inputs[i] for i in np.argsort(-alone, kind="stable") if alone[i] > 0]


def _joined(reports: dict, extra: dict, separator: str | None) -> dict[int, np.ndarray]:
    """Each input's pilot reports followed by its narrowing reports, in one representation."""
    joined = {x: concatenate_reports([values, extra[x]], f"input {x}", separator) if x in extra else values
              for x, values in reports.items()}
    return unify_reports(joined, separator=separator)
