"""Audits of real LDP library clients (pure-ldp, multi-freq-ldpy) at eps = 1, k = 16, and of the
pre-1.2.0 pure-ldp OUE bug rebuilt as a fixture."""

from pathlib import Path

import numpy as np
import pytest

from designer.audit import Budget, PythonSampler, audit_reports, collect_reports
from designer.audit.libraries import local_hashing_support
from designer.spec import PrivacyMatrix

K = 16
FIXTURE = Path(__file__).parent / "fixtures" / "audit" / "pre_fix_oue.py"
#: Reports per input: enough for the power statement of the best-powered pair to be below 0.3.
BUDGETS = {"DE": 25000, "GRR": 25000, "HE": 20000, "HR": 20000, "OUE": 12000, "SUE": 10000, "OLH": 10000}


def audit_both(library: str, protocol: str, seed: int = 0):
    """Draw once, audit against eps = 1 (honest) and eps = 0.8 (too strict)."""
    arguments = {"protocol": protocol, "eps": 1, "k": K}
    source = PythonSampler(f"designer.audit.libraries:{library}", arguments)
    reports = collect_reports(source, K, Budget(BUDGETS[protocol]), np.random.default_rng(seed))
    support = local_hashing_support if protocol == "OLH" else None
    results = [
        audit_reports(reports, PrivacyMatrix.classic(K, eps), max_pairs=2, rng=seed + 1, support=support,
                      support_arguments=arguments)
        for eps in (1.0, 0.8)
    ]
    return results


def check(honest, strict, space: str):
    assert honest.verdict == "no violation found"
    assert 0.75 < honest.best.lower_bound <= 1.0  # tight at eps: the witness gets close to E
    assert strict.verdict == "violated"
    # the power statement, per pair: the best-powered tested pair detects 0.3 over E at this budget
    assert min(pair.detectable_excess for pair in honest.pairs) < 0.3
    assert honest.event_space == strict.event_space == space + "+learned"
    witness = strict.violations[0]
    assert witness.log_ratio == pytest.approx(1.0, abs=0.12)  # every one of these protocols is exactly 1-LDP


PURE_LDP = [("DE", "outputs"), ("OUE", "coordinates"), ("SUE", "coordinates"), ("HE", "coordinates"),
            ("HR", "outputs"), ("OLH", "support")]
MULTI_FREQ_LDPY = [("GRR", "outputs"), ("OUE", "coordinates"), ("SUE", "coordinates"), ("HE", "coordinates"),
                   ("OLH", "support")]


@pytest.mark.slow
@pytest.mark.parametrize("protocol,space", PURE_LDP)
def test_pure_ldp_clients(protocol, space):
    check(*audit_both("pure_ldp", protocol), space)


@pytest.mark.slow
@pytest.mark.parametrize("protocol,space", MULTI_FREQ_LDPY)
def test_multi_freq_ldpy_clients(protocol, space):
    check(*audit_both("multi_freq_ldpy", protocol), space)


def test_unary_encoding_witness_is_the_two_bits():
    """OUE's witness among the fixed events: bit x set and bit x' clear, ratio (1 - q) / q = e^eps exactly."""
    source = PythonSampler("designer.audit.libraries:multi_freq_ldpy", {"protocol": "OUE", "eps": 1, "k": 6})
    reports = collect_reports(source, 6, Budget(6000), np.random.default_rng(1))
    result = audit_reports(reports, PrivacyMatrix.classic(6, 0.7), rng=2, attacks=())
    assert result.violated
    pair = result.violations[0]
    assert pair.event == f"(report[{min(pair.x, pair.x_prime)}] = {int(pair.x < pair.x_prime)} and " \
        f"report[{max(pair.x, pair.x_prime)}] = {int(pair.x > pair.x_prime)})"


def test_pre_fix_pure_ldp_oue_is_caught_and_the_fix_passes():
    """pure-ldp issue #11: before 1.2.0 OUE kept bit x at 1 with probability p + (1 - p) q; log-ratio 1.55 > 1."""
    q = 1 / (np.e + 1)
    high = 0.5 + 0.5 * q
    expected = np.log(high * (1 - q) / (q * (1 - high) * (1 - q)) * (1 - q))
    assert expected == pytest.approx(1.552, abs=1e-3)
    privacy = PrivacyMatrix.classic(K, 1.0)
    for name, verdict in (("sampler", "violated"), ("fixed_sampler", "no violation found")):
        source = PythonSampler(f"{FIXTURE}:{name}", {"eps": 1.0, "k": K})
        reports = collect_reports(source, K, Budget(4000), np.random.default_rng(7))
        result = audit_reports(reports, privacy, rng=8, attacks=("logistic",))
        assert result.verdict == verdict
    assert result.best.log_ratio < 1.15
    buggy = audit_reports(collect_reports(PythonSampler(f"{FIXTURE}:sampler", {"eps": 1.0, "k": K}), K, Budget(4000),
                                          np.random.default_rng(7)), privacy, rng=8, attacks=("logistic",))
    assert buggy.violations[0].log_ratio == pytest.approx(expected, abs=0.15)
    assert buggy.violations[0].lower_bound > 1.0


@pytest.mark.slow
def test_multi_freq_ldpy_subset_selection_leaks_through_the_order():
    """A finding: multi-freq-ldpy's SS client puts the true value first when it keeps it, so the
    report's first entry is x with probability p_v against (1 - p_v)/(k - 1) under x' (log 2.6 at eps = 1, k = 16)."""
    source = PythonSampler("designer.audit.libraries:multi_freq_ldpy", {"protocol": "SS", "eps": 1, "k": K})
    reports = collect_reports(source, K, Budget(3000), np.random.default_rng(3))
    result = audit_reports(reports, PrivacyMatrix.classic(K, 1.0), rng=4)
    sub_k = int(max(1, np.rint(K / (np.e + 1))))
    keep = sub_k * np.e / (sub_k * np.e + K - sub_k)
    assert np.log(keep * (K - 1) / (1 - keep)) == pytest.approx(2.61, abs=0.01)
    assert result.violated and result.best.lower_bound > 1.5  # far above E = 1
