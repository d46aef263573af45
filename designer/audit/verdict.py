"""The audit's verdict against a declared E (Definition 2 of context-aware-ldp.md, eq. 4).

E-LDP requires ``P(S | x) <= exp(E[x, x']) P(S | x')`` for every event S. For
each ordered pair the audit

1. splits every input's reports into a *training* and a *fresh* split;
2. on the training split, chooses the event S (:mod:`designer.audit.events`)
   and predicts its lower bound (beyond :data:`MAX_SCREENED_PAIRS` pairs, an
   output space first screens the pairs on training); the pairs are ranked by predicted excess
   ``bound - E[x, x']`` and the top ``max_pairs`` are tested (all of them when
   there are fewer) — the training split is the pilot sample, so choosing
   pairs and events there leaves the fresh split's tests valid;
3. on the fresh split, counts S under x and x', forms the Clopper–Pearson
   lower bound of ``log P(S|x)/P(S|x')`` and its p-value
   (:mod:`designer.audit.statistics`), and corrects for the number of pairs
   tested (Holm or Bonferroni; family-wise error at most ``1 - confidence``).

``violated`` means at least one pair is rejected: with probability at least
``confidence``, the mechanism is not E-LDP. Otherwise the verdict is
``no violation found`` — never "certified": sampling cannot prove privacy.
The reported lower bounds are simultaneous (Bonferroni, error
``(1 - confidence) / pairs tested``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from designer.audit.attacks import default_attacks, learned_space
from designer.audit.events import EitherSpace, EventSpace, OutputSpace, choose_space
from designer.audit.lines import canonical_number
from designer.audit.power import POWER, POWER_EXCESS, class_power, detectable_excess, detectable_leak
from designer.audit.reports import as_text, is_text, unify_reports
from designer.audit.statistics import (
    bonferroni_rejections,
    excess_p_value,
    hockey_stick_lower_bound,
    holm_rejections,
    log_ratio_lower_bound,
)
from designer.defaults import AUDIT_CONFIDENCE, AUDIT_MAX_PAIRS, AUDIT_TRAIN_FRACTION
from designer.spec import PrivacyMatrix

#: Pairs tested when ``max_pairs`` is not given and testing all of them costs too much power
#: (:func:`default_max_pairs`; the most promising on the training split).
DEFAULT_MAX_PAIRS = AUDIT_MAX_PAIRS
#: The stated violation of the all-pairs rule (:func:`default_max_pairs`): an event of this
#: probability under x (whose log-ratio exceeds E by :data:`~designer.audit.power.POWER_EXCESS`).
REFERENCE_PROBABILITY = 0.1
#: Beyond this many constrained pairs, an output space screens them first (largest smoothed
#: training log-ratio over single outputs minus E; a max-plus product, :mod:`solvers.maxplus`).
MAX_SCREENED_PAIRS = 4096
#: Share of every input's reports used to choose pairs and events.
DEFAULT_TRAIN_FRACTION = AUDIT_TRAIN_FRACTION
CORRECTIONS = ("holm", "bonferroni")


@dataclass(frozen=True)
class PairResult:
    """The test of one ordered pair ``(x, x')`` on the fresh split."""

    x: int
    x_prime: int
    allowed: float
    event: str
    count_x: int
    trials_x: int
    count_other: int
    trials_other: int
    lower_bound: float
    p_value: float
    violated: bool
    predicted_lower_bound: float
    detectable_excess: float = math.inf
    attack: str = ""
    hockey_stick_lower_bound: float = -math.inf
    #: Per attack class, the exact probability of detecting a violation of a stated kind and size if
    #: chosen as the event (:func:`~designer.audit.power.class_power`); empty for an (E, delta) audit.
    power: tuple = ()

    @property
    def log_ratio(self) -> float:
        """The point estimate ``log (count_x / trials_x) / (count_other / trials_other)``."""
        if self.count_x == 0:
            return -math.inf
        if self.count_other == 0:
            return math.inf
        return math.log(self.count_x / self.trials_x) - math.log(self.count_other / self.trials_other)

    def to_dict(self) -> dict:
        return {
            "x": self.x,
            "x_prime": self.x_prime,
            "E": _number(self.allowed),
            "attack": self.attack,
            "event": self.event,
            "count_x": self.count_x,
            "reports_x": self.trials_x,
            "count_x_prime": self.count_other,
            "reports_x_prime": self.trials_other,
            "log_ratio_estimate": _number(self.log_ratio),
            "lower_bound": _number(self.lower_bound),
            "p_value": self.p_value,
            "violated": self.violated,
            "detectable_excess": _number(self.detectable_excess),
            "hockey_stick_lower_bound": _number(self.hockey_stick_lower_bound),
            "power": [{key: _number(value) if isinstance(value, float) else value for key, value in entry.items()}
                      for entry in self.power],
        }


@dataclass
class AuditResult:
    """Outcome of :func:`audit_reports`.

    Attributes
    ----------
    verdict : "violated" or "no violation found"
    confidence : float
    correction : "holm" or "bonferroni"
    pairs : list of PairResult
        The pairs tested, by decreasing ``lower_bound - E``.
    pairs_constrained : int
        Ordered pairs with finite E (the candidates).
    event_space : str
        ``outputs``, ``classifier`` or ``support``.
    reports_per_input : dict[int, int]
    train_fraction : float
    detectable_excess : float
        The best pair's :attr:`PairResult.detectable_excess`: the smallest
        ``delta`` such that a log-ratio ``E + delta`` on an event of the kind and
        probability under x of that pair's witness, if chosen as the event, would
        have been detected with probability :data:`~designer.audit.power.POWER`
        (normal approximation); in an (E, delta) audit, the smallest ``h`` such that
        an event x' never produces, of probability ``delta + h`` under x, would have been
        (exact, :func:`~designer.audit.power.detectable_leak`).
        It says nothing of events the attacks cannot express.
    lower_bounds : ndarray (k, k)
        The empirical E matrix (:func:`lower_bound_matrix`): simultaneous lower
        confidence bounds on every pair's privacy loss.
    space : EventSpace
    outputs : OutputSpace or None
        The finite output space when the reports have one (for :mod:`designer.audit.loop`).
    encoded : dict input -> output indices of all its reports (when ``outputs`` is set)
    looks : list of dict, optional
        Early stopping (:func:`designer.audit.sequential.sequential_audit`): the looks made.
    probe : ProbeResult, optional
        The state probe (:mod:`designer.audit.probe`); its violation makes the verdict ``violated`` too.
    timing : TimePlan, optional
        How a time budget was spent (:mod:`designer.audit.timing`).
    """

    verdict: str
    confidence: float
    correction: str
    pairs: list[PairResult]
    pairs_constrained: int
    event_space: str
    reports_per_input: dict[int, int]
    train_fraction: float
    detectable_excess: float
    lower_bounds: np.ndarray = field(repr=False)
    space: EventSpace = field(repr=False)
    delta: float = 0.0
    outputs: OutputSpace | None = field(repr=False, default=None)
    looks: list[dict] | None = None
    encoded: dict[int, np.ndarray] = field(repr=False, default_factory=dict)
    probe: object | None = None
    timing: object | None = None

    @property
    def violated(self) -> bool:
        return self.verdict == "violated"

    @property
    def violations(self) -> list[PairResult]:
        return [pair for pair in self.pairs if pair.violated]

    @property
    def best(self) -> PairResult:
        """The tested pair with the largest ``lower_bound - E``."""
        return self.pairs[0]

    def power_by_class(self) -> dict[str, dict]:
        """Per attack class, the tested pair with the smallest and the one with the largest detection probability."""
        summary: dict[str, dict] = {}
        for pair in self.pairs:
            for entry in pair.power:
                row = summary.setdefault(entry["class"], {"excess": entry["excess"], "smallest": None, "largest": None})
                item = {"probability": entry["probability"], "pair": [pair.x, pair.x_prime],
                        "event_probability": entry["event_probability"]}
                if row["smallest"] is None or item["probability"] < row["smallest"]["probability"]:
                    row["smallest"] = item
                if row["largest"] is None or item["probability"] > row["largest"]["probability"]:
                    row["largest"] = item
        return summary

    def to_dict(self) -> dict:
        counts = list(self.reports_per_input.values())
        pairs = [pair.to_dict() for pair in self.pairs]
        if self.violated:  # a power statement is reassurance: none next to a violation
            for pair in pairs:
                pair.pop("power")
                pair.pop("detectable_excess")
        power = None if self.violated else {
            kind: {**row, "excess": _number(row["excess"])} for kind, row in self.power_by_class().items()}
        return {
            "verdict": self.verdict,
            "confidence": self.confidence,
            "correction": self.correction,
            "event_space": self.event_space,
            "pairs_constrained": self.pairs_constrained,
            "pairs_tested": len(self.pairs),
            "reports_per_input": {"min": min(counts), "max": max(counts)},
            "train_fraction": self.train_fraction,
            "delta": self.delta,
            "largest_lower_bound": _number(self.best.lower_bound),
            "largest_lower_bound_pair": [self.best.x, self.best.x_prime],
            # a power statement is reassurance: none next to a violation
            "detectable_excess": None if self.violated else _number(self.detectable_excess),
            "detection_probability": None if self.violated else POWER,
            "lower_bounds": [[_number(value) for value in row] for row in self.lower_bounds.tolist()],
            "power": power,
            "violations": [pair for pair in pairs if pair["violated"]],
            "pairs": pairs,
            **({} if self.looks is None else {"looks": self.looks}),
            "probe": None if self.probe is None else self.probe.to_dict(),
            **({} if self.timing is None else {"time_budget": self.timing.to_dict()}),
        }


def check_settings(confidence: float, correction: str, max_pairs: int | None, train_fraction: float,
                   delta: float = 0.0) -> None:
    """Refuse settings outside their ranges (before any report is drawn)."""
    if not 0 <= delta < 1:
        raise ValueError(f"--delta must be in [0, 1), got {delta}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {correction!r}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max pairs must be >= 0 (0: all), got {max_pairs}")
    if not 0 < train_fraction < 1:
        raise ValueError(f"train fraction must be in (0, 1), got {train_fraction}")


def audit_reports(
    reports: dict[int, np.ndarray],
    privacy: PrivacyMatrix,
    confidence: float = AUDIT_CONFIDENCE,
    correction: str = "holm",
    max_pairs: int | None = None,
    train_fraction: float = DEFAULT_TRAIN_FRACTION,
    rng: np.random.Generator | int | None = None,
    support: Callable | None = None,
    support_arguments: dict | None = None,
    alphabet: int | None = None,
    attacks: tuple[str, ...] | None = None,
    features: Callable | None = None,
    features_arguments: dict | None = None,
    second_stage: Callable[[list[int]], dict[int, np.ndarray]] | None = None,
    planned_fresh: int | None = None,
    delta: float = 0.0,
    pairs: list[tuple[int, int]] | None = None,
) -> AuditResult:
    """Test E-LDP on reports of every input (see the module docstring).

    Parameters
    ----------
    reports : dict input -> report array (:func:`designer.audit.sources.as_report_array`)
    privacy : PrivacyMatrix
        The declared E.
    confidence : float in (0, 1)
        ``violated`` is wrong with probability at most ``1 - confidence``.
    correction : "holm" or "bonferroni"
    max_pairs : int or None
        Pairs tested (the most promising on the training split); 0: all; None:
        :func:`default_max_pairs` of the number of candidate pairs.
    train_fraction : float in (0, 1)
    rng : Generator or seed
        Shuffles the reports before splitting.
    support : callable ``support(reports, z, **support_arguments) -> bool array``, optional
        Events from the support of hashed reports (:class:`~designer.audit.events.SupportSpace`).
    alphabet : int, optional
        Declared output alphabet ``0..alphabet-1``: a report outside it is an error.
    attacks : tuple of "logistic", "boosted", optional
        Learned attacks (:mod:`designer.audit.attacks`) added to the event space; ``()``: none;
        default :func:`~designer.audit.attacks.default_attacks` of the number of reports.
    features : callable ``features(reports, **features_arguments) -> (n, f) numbers``, optional
        Domain features appended to the learned attacks' features.
    second_stage : callable ``inputs -> {input: fresh reports}``, optional
        Adaptive budget (:func:`designer.audit.adaptive.adaptive_audit`): ``reports``
        are all training (the pilot); once the pairs to test are chosen, the fresh
        reports are drawn by this callable for the inputs of those pairs only.
    planned_fresh : int, optional
        With ``second_stage``: the fresh reports per input the events are chosen for.
    delta : float in [0, 1)
        Audit (E, delta)-LDP: a pair violates when ``P(S|x) > exp(E) P(S|x') + delta``
        (the hockey-stick divergence of the event exceeds delta); 0: pure E-LDP.
    pairs : list of (x, x'), optional
        The candidate pairs (chosen beforehand, independently of these reports' fresh split);
        default: every pair with reports and a finite E entry.

    Returns
    -------
    AuditResult
    """
    check_settings(confidence, correction, max_pairs, train_fraction, delta)
    k = privacy.k
    rng = np.random.default_rng(rng)
    reports = unify_reports(reports)
    train, test, planned = {}, {}, {}
    for x, values in sorted(reports.items()):
        if not 0 <= x < k:
            raise ValueError(f"reports of input {x}, outside 0..{k - 1} (E is {k} x {k})")
        if len(values) < 2:
            raise ValueError(f"input {x} has {len(values)} report(s); at least 2 are needed (training and fresh split)")
        shuffled = values[rng.permutation(len(values))]
        if second_stage is not None:  # the pilot trains; the fresh reports come later
            train[x], planned[x] = shuffled, planned_fresh
            continue
        cut = min(max(1, int(train_fraction * len(values))), len(values) - 1)
        train[x], test[x] = shuffled[:cut], shuffled[cut:]
        planned[x] = len(test[x])
    space = event_space(train, reports, k, support, support_arguments, alphabet, attacks, features,
                        features_arguments, rng)
    encoded_train = {x: space.encode(values) for x, values in train.items()}

    allowed = privacy.epsilon
    constrained = constrained_pairs(train, privacy)
    candidates = constrained if pairs is None else list(pairs)
    if max_pairs is None:
        max_pairs = default_max_pairs(len(candidates), min(planned.values()), typical_allowed(allowed, candidates),
                                      confidence)
    tested = len(candidates) if not max_pairs else min(max_pairs, len(candidates))
    error = (1 - confidence) / tested
    screened = _screen(candidates, space, encoded_train, allowed)
    order, events = rank_pairs(screened, space, encoded_train, allowed, error, planned)
    order = order[:tested]
    if second_stage is not None:
        test = _second_stage(second_stage, order, train, space)
    encoded_test = {x: space.encode(values) for x, values in test.items()}

    counts_x = np.array([events[pair].count(encoded_test[pair[0]]) for pair in order])
    counts_other = np.array([events[pair].count(encoded_test[pair[1]]) for pair in order])
    trials_x = np.array([len(test[x]) for x, _ in order])
    trials_other = np.array([len(test[x_prime]) for _, x_prime in order])
    limits = np.array([allowed[pair] for pair in order])
    bounds = log_ratio_lower_bound(counts_x, trials_x, counts_other, trials_other, error)
    p_values = excess_p_value(counts_x, trials_x, counts_other, trials_other, limits, delta)
    hockey = hockey_stick_lower_bound(counts_x, trials_x, counts_other, trials_other, limits, error)
    reject = holm_rejections if correction == "holm" else bonferroni_rejections
    rejected = reject(p_values, 1 - confidence)

    excesses = [
        detectable_leak(int(trials_x[i]), int(trials_other[i]), float(limits[i]), delta, error) if delta else
        detectable_excess(counts_x[i] / trials_x[i], int(trials_x[i]), int(trials_other[i]), float(limits[i]), error)
        for i in range(len(order))
    ]
    rare = output_component(space) is not None
    # power is never shown next to a violation, so it is not computed then
    powers = [() if rejected.any() else class_powers(
        events[pair], encoded_test[pair[0]], int(trials_x[i]), int(trials_other[i]), float(limits[i]), error,
        len(train[pair[0]]), rare, delta) for i, pair in enumerate(order)]
    pairs = [
        PairResult(
            x=int(x), x_prime=int(x_prime), allowed=float(limits[i]), event=events[x, x_prime].description,
            count_x=int(counts_x[i]), trials_x=int(trials_x[i]), count_other=int(counts_other[i]),
            trials_other=int(trials_other[i]), lower_bound=float(bounds[i]), p_value=float(p_values[i]),
            violated=bool(rejected[i]), predicted_lower_bound=events[x, x_prime].predicted_lower_bound,
            detectable_excess=excesses[i], attack=events[x, x_prime].attack,
            hockey_stick_lower_bound=float(hockey[i]), power=powers[i],
        )
        for i, (x, x_prime) in enumerate(order)
    ]
    pairs.sort(key=lambda pair: -(pair.lower_bound - pair.allowed))
    audited = [pair for pair in screened if pair[0] in test and pair[1] in test]
    lower_bounds = lower_bound_matrix(k, audited, events, encoded_test, {x: len(test[x]) for x in test}, confidence)
    outputs = output_component(space)
    everything = {}
    if outputs is not None and second_stage is None:
        position, output_space = outputs
        everything = {x: np.concatenate([component_part(encoded_train[x], position),
                                         component_part(encoded_test[x], position)]) for x in train}
    return AuditResult(
        verdict="violated" if any(pair.violated for pair in pairs) else "no violation found",
        confidence=confidence,
        correction=correction,
        pairs=pairs,
        pairs_constrained=len(constrained),
        event_space=space.kind,
        reports_per_input={x: len(train[x]) + len(test.get(x, ())) for x in train},
        train_fraction=train_fraction,
        detectable_excess=pairs[0].detectable_excess,
        lower_bounds=lower_bounds,
        space=space,
        delta=delta,
        outputs=None if outputs is None else outputs[1],
        encoded=everything,
    )


def default_max_pairs(candidates: int, fresh: int, allowed: float, confidence: float) -> int:
    """All pairs (0) when the budget affords them, else :data:`DEFAULT_MAX_PAIRS` (the most promising).

    Testing all ``P`` candidate pairs needs no ranking (a leaking pair cannot be
    ranked out) but tests each at error ``(1 - confidence) / P``. The budget
    affords it when, at that level, ``fresh`` reports per input still detect a
    violation of the stated size on every pair with probability
    :data:`~designer.audit.power.POWER` (0.9): an event of probability
    :data:`REFERENCE_PROBABILITY` under x whose log-ratio exceeds ``allowed`` by
    :data:`~designer.audit.power.POWER_EXCESS` (the size the per-class power
    statement uses; :func:`~designer.audit.power.detectable_excess`). Otherwise
    the pilot ranks the pairs and the best 8 are tested at ``(1 - confidence) / 8``.

    Parameters
    ----------
    candidates : int
        Constrained pairs.
    fresh : int
        Fresh reports per input when all pairs are tested.
    allowed : float
        A typical finite E entry (:func:`typical_allowed`).
    confidence : float

    Returns
    -------
    int: 0 (all) or :data:`DEFAULT_MAX_PAIRS`.
    """
    if candidates <= DEFAULT_MAX_PAIRS:
        return 0
    excess = detectable_excess(REFERENCE_PROBABILITY, fresh, fresh, allowed, (1 - confidence) / candidates)
    return 0 if excess <= POWER_EXCESS else DEFAULT_MAX_PAIRS


def typical_allowed(allowed: np.ndarray, pairs: list) -> float:
    """The median E entry of ``pairs`` (the all-pairs rule's reference)."""
    return float(np.median([allowed[pair] for pair in pairs]))


def class_powers(event, encoded_x, trials_x: int, trials_other: int, allowed: float, error: float, training: int,
                 rare: bool, delta: float = 0.0) -> tuple[dict, ...]:
    """Per attack class, :func:`~designer.audit.power.class_power` on one tested pair.

    Each class's own witness (``event.alternatives``: the fixed event families,
    the learned classifiers) gives the event probability under x (its fresh
    frequency; a class whose witness was never or always seen has no figure).
    ``rare`` adds the rare-output class (a finite output space; not in an (E, delta) audit, which allows
    outputs rarer than delta). ``delta``: the statements of an (E, delta) audit (a hockey-stick difference).
    """
    best: dict[str, dict] = {}
    for kind, alternative in event.alternatives or ((event.attack, event),):
        label = "learned classifiers" if kind == "learned" else "event families"
        count = alternative.count(encoded_x)
        if not 0 < count < trials_x:
            continue
        power = class_power(label, count / trials_x, trials_x, trials_other, allowed, error, delta=delta)
        if label not in best or power["probability"] > best[label]["probability"]:
            best[label] = power
    if rare and not delta:  # an (E, delta) audit allows outputs rarer than delta
        best["rare outputs"] = class_power("rare outputs", 0.0, trials_x, trials_other, allowed, error, training,
                                           delta)
    return tuple(best.values())


def event_space(train: dict, reports: dict, k: int, support=None, support_arguments=None, alphabet=None,
                attacks=None, features=None, features_arguments=None, rng=None) -> EventSpace:
    """The fixed event space of these reports plus the learned attacks fitted on ``train``."""
    rng = np.random.default_rng(rng)
    space = choose_space(list(train.values()), [reports[x] for x in train], support, support_arguments, k, alphabet)
    if attacks is None:
        attacks = default_attacks(sum(len(values) for values in reports.values()))
    learned = learned_space(train, tuple(attacks), features, features_arguments, int(rng.integers(2**31)))
    if learned is not None:
        space = EitherSpace((space.spaces if isinstance(space, EitherSpace) else [space]) + [learned])
    return space


def constrained_pairs(train: dict, privacy: PrivacyMatrix) -> list[tuple[int, int]]:
    """Ordered pairs of inputs with reports whose E entry is finite (the candidates)."""
    allowed = privacy.epsilon
    candidates = [(x, x_prime) for x in train for x_prime in train
                  if x != x_prime and math.isfinite(allowed[x, x_prime])]
    if not candidates:
        raise ValueError("E constrains no pair of inputs that has reports (every off-diagonal entry is inf)")
    return candidates


def rank_pairs(pairs: list, space: EventSpace, encoded_train: dict, allowed: np.ndarray, error: float,
               planned: dict) -> tuple[list, dict]:
    """Each pair's event chosen on training, and the pairs by decreasing predicted excess ``bound - E``."""
    events = {}
    for x, x_prime in pairs:
        events[x, x_prime] = space.select(
            x, x_prime, encoded_train[x], encoded_train[x_prime], error, planned[x], planned[x_prime]
        )
    order = sorted(pairs, key=lambda pair: -(events[pair].predicted_lower_bound - allowed[pair]))
    return order, events


def _second_stage(draw: Callable, order: list, train: dict, space: EventSpace) -> dict[int, np.ndarray]:
    """Fresh reports of the inputs of the tested pairs, in the representation of the pilot."""
    involved = sorted({x for pair in order for x in pair})
    fresh = draw(involved)
    text = any(is_text(values) for values in train.values())
    outputs = output_component(space)
    if outputs is not None:  # a value the pilot never showed is in no chosen event
        outputs[1].unseen_cell = -1
    drawn = {}
    for x in involved:
        values = fresh[x]
        if text and not is_text(values):
            values = as_text(values)
        elif not text and is_text(values):
            example = next((value for value in values if canonical_number(value) is None), values[0])
            raise ValueError(f"input {x}: text reports (such as {example!r}) appeared after a pilot of numbers "
                             "only; audit with --fixed-split or a larger pilot (--train-fraction)")
        drawn[x] = values
    return drawn


def lower_bound_matrix(k: int, pairs: list, events: dict, encoded_test: dict, sizes: dict, confidence: float) -> np.ndarray:
    """``L[x, x']``: lower confidence bounds on the privacy loss ``sup_S log P(S|x)/P(S|x')``, all pairs at once.

    Each pair's event (chosen on training) is counted on the fresh split; the
    Clopper–Pearson bound of its log-ratio at error ``(1 - confidence) / len(pairs)``
    (Bonferroni) holds for all pairs together with probability at least
    ``confidence`` — LDP-Auditor's empirical epsilon for every pair. The loss is
    at least 0 (the whole output space has ratio 1), so ``L >= 0``; pairs not
    audited (E infinite, no reports, not screened) stay at 0.
    """
    lower = np.zeros((k, k))
    if not pairs:
        return lower
    error = (1 - confidence) / len(pairs)
    counts_x = np.array([events[pair].count(encoded_test[pair[0]]) for pair in pairs])
    counts_other = np.array([events[pair].count(encoded_test[pair[1]]) for pair in pairs])
    trials_x = np.array([sizes[x] for x, _ in pairs])
    trials_other = np.array([sizes[x_prime] for _, x_prime in pairs])
    bounds = log_ratio_lower_bound(counts_x, trials_x, counts_other, trials_other, error)
    rows, columns = np.array(pairs).T
    lower[rows, columns] = np.maximum(bounds, 0.0)
    return lower


def _screen(candidates: list, space: EventSpace, encoded_train: dict, allowed: np.ndarray) -> list:
    """All candidate pairs, or for a large k and an output space the most promising on training."""
    outputs = output_component(space)
    if len(candidates) <= MAX_SCREENED_PAIRS or outputs is None:
        return candidates
    from solvers.maxplus import max_log_ratio

    position, space = outputs
    inputs = sorted(encoded_train)
    histograms = np.array([np.bincount(component_part(encoded_train[x], position), minlength=space.n_outputs) + 0.5
                           for x in inputs])
    ratios, _ = max_log_ratio(histograms / histograms.sum(axis=1, keepdims=True))
    position = {x: i for i, x in enumerate(inputs)}
    score = {pair: ratios[position[pair[0]], position[pair[1]]] - allowed[pair] for pair in candidates}
    return sorted(candidates, key=lambda pair: -score[pair])[:MAX_SCREENED_PAIRS]


def output_component(space: EventSpace) -> tuple[int | None, OutputSpace] | None:
    """The output space inside ``space`` (and its position in an :class:`EitherSpace` encoding)."""
    if isinstance(space, OutputSpace):
        return None, space
    if isinstance(space, EitherSpace):
        return space.component(OutputSpace)
    return None


def component_part(encoded, position: int | None):
    """The part of an encoding that :func:`output_component` found at ``position`` (None: the whole)."""
    return encoded if position is None else encoded[position]


def _number(value: float):
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
