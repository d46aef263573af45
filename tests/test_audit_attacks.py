"""Learned attacks: each class catches a leak planted for it that the fixed event spaces miss."""

import math
from pathlib import Path

import numpy as np

from designer.audit import audit_reports
from designer.audit.features import FeatureMap
from designer.audit.usercode import load_callable
from designer.spec import PrivacyMatrix

PLANTED = Path(__file__).parent / "fixtures" / "audit" / "planted.py"


def planted(name: str):
    return load_callable(f"{PLANTED}:{name}")


def draw(sampler, k: int, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {x: sampler(x, n, rng) for x in range(k)}


def test_features_of_every_report_shape():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, (50, 3))
    features = FeatureMap([bits]).transform(bits)
    # 3 bits, the Hamming weight, 3 pairwise products
    assert features.shape == (50, 7)
    assert np.array_equal(features[:, 3], bits.sum(axis=1))
    assert np.array_equal(features[:, 4], bits[:, 0] * bits[:, 1])
    seeds = np.stack([rng.integers(0, 3, 200), rng.integers(0, 2**40, 200)], axis=1)
    mapped = FeatureMap([seeds]).transform(seeds)
    # value one-hot (3), the seed standardised (1) and its 40 varying binary digits
    assert mapped.shape == (200, 3 + 1 + 40)
    assert np.array_equal(mapped[:, 4 + 5], (seeds[:, 1] >> 5) & 1)
    text = np.array(["a", "b", "a", "debug"], dtype=object)
    one_hot = FeatureMap([text]).transform(np.array(["a", "zzz"], dtype=object))
    assert one_hot.tolist() == [[1, 0, 0, 0], [0, 0, 0, 1]]  # "a" first (most frequent), "zzz" unseen


def test_logistic_attack_reads_an_input_hidden_in_seed_bits():
    k = 4
    reports = draw(planted("seed_parity_hashing"), k, 3000, seed=1)
    result = audit_reports(reports, PrivacyMatrix.classic(k, 1.0), rng=2, attacks=("logistic",))
    assert result.violated
    witness = result.violations[0]
    assert witness.attack == "logistic" and witness.count_other == 0 and witness.lower_bound > 3
    # the fixed event spaces see only (value, seed) pairs that never repeat: nothing
    assert not audit_reports(reports, PrivacyMatrix.classic(k, 1.0), rng=2, attacks=()).violated


def test_interactions_catch_a_leak_without_marginal_change():
    reports = draw(planted("xor_bits"), 3, 4000, seed=3)
    privacy = PrivacyMatrix.classic(3, 0.3)  # the true loss of {bits 0, 1 differ} is log(0.8 / 0.5) = 0.47
    result = audit_reports(reports, privacy, rng=4, attacks=("logistic",))
    assert result.violated and {pair.attack for pair in result.violations} == {"logistic"}
    assert all(1 in (pair.x, pair.x_prime) for pair in result.violations)
    assert not audit_reports(reports, privacy, rng=4, attacks=()).violated


def test_boosted_trees_find_a_narrow_interval():
    """Only a threshold pair (0.4 <= report < 0.5) shows the leak; true loss there is log(0.135 / 0.0387) = 1.25."""
    reports = draw(planted("narrow_bump"), 3, 6000, seed=5)
    privacy = PrivacyMatrix.classic(3, 0.7)
    result = audit_reports(reports, privacy, rng=6, attacks=("boosted",))
    assert result.violated
    witness = result.violations[0]
    assert witness.attack == "boosted" and witness.x == 1
    assert 0.7 < witness.log_ratio < 1.6
    assert not audit_reports(reports, privacy, rng=6, attacks=("logistic",)).violated


def test_user_features_expose_a_domain_leak():
    reports = draw(planted("hex_tokens"), 3, 3000, seed=7)
    privacy = PrivacyMatrix.classic(3, 0.2)  # bit 7 set: 0.8 vs 0.5, loss log(1.6) = 0.47
    token_bits = planted("token_bits")
    result = audit_reports(reports, privacy, rng=8, attacks=("logistic",), features=token_bits)
    assert result.violated and result.violations[0].attack == "logistic"
    assert all(0 in (pair.x, pair.x_prime) for pair in result.violations)  # bit 7 clear: 0.2 vs 0.5, loss 0.92
    assert not audit_reports(reports, privacy, rng=8, attacks=("logistic",)).violated


def test_command_line_attacks_and_features(tmp_path):
    import json

    from typer.testing import CliRunner

    from designer.cli import app

    E = tmp_path / "E.csv"
    E.write_text("0,0.2,0.2\n0.2,0,0.2\n0.2,0.2,0\n")
    common = ["audit", "--E", str(E), "--sampler", f"{PLANTED}:hex_tokens", "--reports-per-input", "3000",
              "--seed", "3", "--json"]
    runner = CliRunner()
    found = runner.invoke(app, [*common, "--attacks", "logistic", "--features", f"{PLANTED}:token_bits"])
    assert found.exit_code == 1, found.output
    payload = json.loads(found.stdout)
    assert payload["violations"][0]["attack"] == "logistic" and "learned" in payload["event_space"]
    blind = runner.invoke(app, [*common, "--attacks", "none"])
    assert blind.exit_code == 0 and json.loads(blind.stdout)["event_space"] == "outputs"
    wrong = runner.invoke(app, [*common, "--attacks", "forest"])
    assert wrong.exit_code == 2 and "--attacks 'forest'" in wrong.output


def test_false_alarms_of_correct_clients_with_every_attack():
    """40 audits of correct GRR, unary-encoding, local-hashing and Laplace-histogram clients (k = 4, 600 reports
    per input, both learned attacks on): at confidence 0.95 at most 5% false alarms are allowed, so more than 4
    of 40 fails (the long version, 200 seeds per client, is in benchmarks/bench_audit.py)."""
    k, eps = 4, 1.0
    q = 1 / (math.e + 1)

    def grr(x, n, rng):
        keep = rng.random(n) < math.e / (math.e + k - 1)
        other = rng.integers(0, k - 1, n)
        return np.where(keep, x, other + (other >= x))

    def unary(x, n, rng):
        bits = (rng.random((n, k)) < q).astype(np.int8)
        bits[:, x] = rng.random(n) < 0.5
        return bits

    def hashing(x, n, rng):
        seeds = rng.integers(0, 2**40, n)
        hashed = (seeds * 2654435761 + x * 40503) % 4 % 3
        keep = rng.random(n) < math.e / (math.e + 2)
        other = rng.integers(0, 2, n)
        return np.stack([np.where(keep, hashed, other + (other >= hashed)), seeds], axis=1)

    def histogram(x, n, rng):
        values = rng.laplace(scale=2 / eps, size=(n, k))
        values[:, x] += 1
        return values

    alarms = 0
    for seed in range(40):
        sampler = (grr, unary, hashing, histogram)[seed % 4]
        result = audit_reports(draw(sampler, k, 600, seed), PrivacyMatrix.classic(k, eps), rng=seed,
                               attacks=("logistic", "boosted"))
        alarms += result.violated
        assert np.all(result.lower_bounds <= eps + 0.5)
    assert alarms <= 4
