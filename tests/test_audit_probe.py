"""The state probe: a client whose report depends on the call before it is reported, with the witness."""

import json

import numpy as np
import pytest
from audit_fixtures import SAMPLERS, SPELLING, audit, classic_E

from designer.audit import probe
from designer.audit.probe import PROBE_ERROR_SHARE, probe_state, report_groups


@pytest.fixture
def E4(tmp_path):
    return classic_E(tmp_path / "E4.csv", 4)


def grr_rows(inputs, rng, eps=1.0, k=4):
    keep = rng.random(len(inputs)) < np.exp(eps) / (np.exp(eps) + k - 1)
    other = rng.integers(0, k - 1, len(inputs))
    return np.where(keep, inputs, other + (other >= inputs))


@pytest.mark.parametrize("limit", [probe.PERMUTATION_LIMIT, 0])
def test_the_independence_test_keeps_its_level(monkeypatch, limit):
    """200 tests of iid GRR pairs (independent by construction): about 10% of p-values <= 0.1, by permutation
    (99 permutations here) and by the chi-square distribution (every test asymptotic when the limit is 0)."""
    monkeypatch.setattr(probe, "PERMUTATIONS", 99)
    monkeypatch.setattr(probe, "PERMUTATION_LIMIT", limit)
    rng = np.random.default_rng(0)
    small = 0
    for _ in range(200):
        inputs = rng.integers(0, 4, 800)
        features = probe.report_features(grr_rows(inputs[1::2], rng))
        test = probe.independence_test("previous input", inputs[0::2], [f"input {a}" for a in range(4)], features,
                                       rng)
        small += test.p_value <= 0.1
    assert 8 <= small <= 34  # Bin(200, 0.1): mean 20, 3 standard deviations 12.7


def test_a_stateless_client_passes_the_probe():
    rng = np.random.default_rng(1)
    inputs = rng.integers(0, 4, 1200)
    result = probe_state(inputs, grr_rows(inputs, rng), 4, 0.95, rng)
    assert result.error == pytest.approx(0.05 * PROBE_ERROR_SHARE) and not result.violated
    assert set(result.tests) == {"previous input", "previous report"}


def test_the_probe_finds_a_report_that_tells_the_previous_input():
    rng = np.random.default_rng(1)
    inputs = rng.integers(0, 4, 2000)
    sources = inputs.copy()
    leak = rng.random(len(inputs)) < 0.5
    sources[1:][leak[1:]] = inputs[:-1][leak[1:]]  # half the reports are GRR of the previous call's input
    result = probe_state(inputs, grr_rows(sources, rng), 4, 0.95, rng)
    assert result.violated and result.tests["previous input"].violated
    witness = result.tests["previous input"].witness  # 'report = a' after input a: 0.36 against 0.21
    assert witness["cell"] == f"report = {witness['group'].split()[-1]}"
    assert witness["count"] / witness["calls"] > witness["count_others"] / witness["calls_others"] + 0.1


def test_the_probe_finds_reused_randomness():
    """Each second call reuses the first call's coin: its report equals the first whenever both keep."""
    rng = np.random.default_rng(2)
    inputs = rng.integers(0, 4, 3000)
    reports = grr_rows(inputs, rng).copy()
    reports[1::2] = np.where(rng.random(1500) < 0.5, reports[0::2], reports[1::2])
    result = probe_state(inputs, reports, 4, 0.95, rng)
    assert result.tests["previous report"].violated


def test_report_groups_are_values_octiles_or_the_most_frequent():
    codes, names = report_groups(np.array([3, 1, 3, 2]))
    assert names == ["report = 1", "report = 2", "report = 3"] and codes.tolist() == [2, 0, 2, 1]
    codes, names = report_groups(np.linspace(0, 1, 800))
    assert len(names) == 8 and np.bincount(codes).tolist() == [100] * 8
    text = np.array([f"v{i % 20}" for i in range(100)] + ["v0"] * 50, dtype=object)
    codes, names = report_groups(text)
    assert names[0] == "report = 'v0'" and names[-1] == "another report" and len(names) == 8


def test_a_stateful_sampler_is_violated_with_the_witness(E4):
    """GRR that keeps the previous call's input passes every same-input test; the probe catches it."""
    common = ["--E", E4, "--sampler", f"{SAMPLERS}:stateful_grr", "--arg", "eps=1", "--arg", "k=4",
              "--reports-per-input", 4000, "--seed", 3, "--attacks", "none"]
    blind = audit(*common, "--no-probe")
    assert blind.exit_code == 0, blind.output
    caught = audit(*common)
    assert caught.exit_code == 1, caught.output
    assert "violated (state): the client keeps state across calls (previous input): after a call with input" \
        in caught.stdout
    payload = json.loads(audit(*common, "--json").stdout)
    assert payload["violations"] == [] and payload["probe"]["tests"]["previous input"]["violated"]


def test_a_stateful_program_is_violated(E4):
    result = audit("--E", E4, "--command", f"{SPELLING} 1 4 stateful", "--reports-per-input", 4000, "--seed", 4,
                   "--attacks", "none", "--json")
    assert result.exit_code == 1, result.output
    probe = json.loads(result.stdout)["probe"]
    assert probe["violated"] and probe["pairs_of_calls"] == 400 * 4 // 2
