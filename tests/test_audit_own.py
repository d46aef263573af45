"""Our own mechanisms audited as code: each passes its E, each is caught at 0.8 E; false alarms."""

import numpy as np
import pytest

from designer.audit import audit_reports
from designer.design.vertex import design_by_vertices
from designer.mechanisms import BlockHadamardResponse, GeneralizedRandomizedResponse, HighLowHadamardResponse
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import polyopt
from designer.spec import PrivacyMatrix


def line_metric(k: int, epsilon: float) -> PrivacyMatrix:
    return PrivacyMatrix.metric(np.abs(np.subtract.outer(np.arange(k), np.arange(k))), epsilon)


def draw(sample, k: int, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {x: sample(np.full(n, x), rng) for x in range(k)}


def mechanisms():
    grr = GeneralizedRandomizedResponse(4, 1.0)
    high_low = HighLowHadamardResponse(6, 2, 1.0)
    block = BlockHadamardResponse([3, 3], 1.0)
    metric = line_metric(4, 0.7)
    designed = design_by_vertices(metric).channel
    robust = polyopt(ConfidenceSet(np.array([[30, 10], [20, 40]]), 0.05), 1.0, method="enumeration").channel
    return {
        "GRR": (grr.sample, grr.privacy, 4),
        "high-low HR": (high_low.sample, high_low.privacy, 6),
        "block HR": (block.sample, block.privacy, 6),
        "designed channel": (designed.sample, metric, 4),
        # PolyOpt guarantees robust LDP; as an E-LDP mechanism its E is its own tight matrix
        "PolyOpt": (robust.sample, robust.tight_privacy(), robust.k),
    }


@pytest.mark.parametrize("name", list(mechanisms()))
def test_own_mechanism_passes_its_E_and_is_caught_at_four_fifths(name):
    sample, privacy, k = mechanisms()[name]
    reports = draw(sample, k, 20000, seed=1)
    honest = audit_reports(reports, privacy, rng=2)
    assert honest.verdict == "no violation found"
    assert honest.best.lower_bound <= honest.best.allowed
    assert honest.best.lower_bound > honest.best.allowed - 0.2  # the audit came close: the mechanism is tight
    strict = audit_reports(reports, PrivacyMatrix(0.8 * privacy.epsilon), rng=2)
    assert strict.verdict == "violated", strict.best
    witness = strict.violations[0]
    assert witness.lower_bound > witness.allowed or witness.p_value <= 0.05
    assert witness.log_ratio > witness.allowed


def test_grr_witness_is_its_own_output():
    """GRR's only ratio above 1 is Q(x|x)/Q(x|x') = e^eps: the event found is {report = x}."""
    grr = GeneralizedRandomizedResponse(4, 1.0)
    result = audit_reports(draw(grr.sample, 4, 20000, seed=3), PrivacyMatrix.classic(4, 0.8), rng=4)
    for pair in result.violations:
        assert pair.event == f"report = {pair.x}"
        assert pair.log_ratio == pytest.approx(1.0, abs=0.15)


def test_false_alarm_rate_over_200_audits_of_correct_mechanisms():
    """At confidence 0.95, at most 5% of audits of E-LDP mechanisms say 'violated' (fixed seeds; fixed events
    only — with the learned attacks, tests/test_audit_attacks.py)."""
    grr = GeneralizedRandomizedResponse(3, 1.0)
    high_low = HighLowHadamardResponse(4, 2, 1.0)
    block = BlockHadamardResponse([2, 2], 1.0)
    metric = line_metric(3, 0.8)
    designed = design_by_vertices(metric).channel
    cases = [(grr.sample, grr.privacy, 3), (high_low.sample, high_low.privacy, 4),
             (block.sample, block.privacy, 4), (designed.sample, metric, 3)]
    alarms = 0
    for seed in range(200):
        sample, privacy, k = cases[seed % len(cases)]
        alarms += audit_reports(draw(sample, k, 1500, seed), privacy, confidence=0.95, rng=seed, attacks=()).violated
    assert alarms <= 10
    # the same budget is not blind: GRR at eps = 1.6 audited against E = 1 is caught nearly always
    loose = GeneralizedRandomizedResponse(3, 1.6)
    caught = sum(audit_reports(draw(loose.sample, 3, 1500, seed), grr.privacy, rng=seed, attacks=()).violated
                 for seed in range(20))
    assert caught >= 16


def test_large_k_screens_pairs_on_training(monkeypatch):
    """Beyond MAX_SCREENED_PAIRS pairs, an output space keeps the pairs with the largest training ratio."""
    from designer.audit import verdict

    monkeypatch.setattr(verdict, "MAX_SCREENED_PAIRS", 6)
    # only pairs with input 0 violate: it is reported as itself with ratio e^2 (and the others' own
    # outputs are e * (e^2 + 5) / (e + 5) = 4.4 times likelier under them than under 0)
    channel = np.full((6, 6), 1 / (np.e + 5))
    np.fill_diagonal(channel, np.e / (np.e + 5))
    channel[0] = 1 / (np.exp(2) + 5)
    channel[0, 0] = np.exp(2) / (np.exp(2) + 5)
    rng = np.random.default_rng(6)
    reports = {x: rng.choice(6, 6000, p=channel[x]) for x in range(6)}
    result = audit_reports(reports, PrivacyMatrix.classic(6, 1.0), rng=7)
    assert result.violated and all(0 in (pair.x, pair.x_prime) for pair in result.violations)
    assert len(result.pairs) <= 6 and result.pairs_constrained == 30
