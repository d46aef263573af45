"""The audit's defaults and power: adaptive budget by default, the all-pairs rule, exact power per attack class."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

from designer.audit import Budget, PythonSampler
from designer.audit.adaptive import adaptive_audit, choose_adaptive
from designer.audit.power import (
    RARE_PROBABILITY,
    class_power,
    detectable_excess,
    detection_probability,
)
from designer.audit.probe import PROBE_ERROR_SHARE
from designer.audit.statistics import log_ratio_lower_bound
from designer.audit.verdict import default_max_pairs
from designer.cli import app
from designer.spec import PrivacyMatrix

SAMPLERS = Path(__file__).parent / "fixtures" / "audit" / "samplers.py"


def test_power_of_a_single_output_violation_is_the_exact_binomial_tail():
    """GRR-type violation: output 0 has probability 0.4 under x and 0.4 e^-(1 + d) under x' (3,000 reports each,
    error 0.05/8). The exact power matches 20,000 simulated tests of the Clopper-Pearson bound within 4 standard
    errors, grows with d, and is about 0.9 at the normal approximation's detectable excess."""
    n, p, allowed, error = 3000, 0.4, 1.0, 0.05 / 8
    rng = np.random.default_rng(7)
    exact = []
    for excess in (0.1, 0.2, 0.3):
        other = p * math.exp(-(allowed + excess))
        power = detection_probability(p, n, other, n, allowed, error)
        simulated = np.mean(log_ratio_lower_bound(rng.binomial(n, p, 20_000), n, rng.binomial(n, other, 20_000), n,
                                                  error) > allowed)
        assert abs(power - simulated) < 4 * math.sqrt(power * (1 - power) / 20_000) + 1e-3
        exact.append(power)
    assert exact[0] < 0.2 < exact[1] < exact[2] and exact[2] > 0.9
    excess = detectable_excess(p, n, n, allowed, error)
    assert detection_probability(p, n, p * math.exp(-(allowed + excess)), n, allowed, error) == pytest.approx(0.9, abs=0.03)
    # no excess: the test rejects with probability at most its error
    assert detection_probability(p, n, p * math.exp(-allowed), n, allowed, error) <= error


def test_power_of_an_infinite_leak_is_a_binomial_tail_with_a_closed_form_threshold():
    """An output x' never produces: with 0 counts under x', the Clopper-Pearson upper bound is 1 - (a/2)^(1/n'), so the
    test rejects from the smallest count c with L(c) > e^E (1 - (a/2)^(1/n')), and the power is P(Bin(n, rho) >= c)."""
    n, rho, allowed, error = 30_000, 1e-3, 1.0, 0.05 / 2
    from scipy.stats import beta

    upper = 1 - (error / 2) ** (1 / n)
    counts = np.arange(1, 200)
    lower = beta.ppf(error / 2, counts, n - counts + 1)  # Clopper-Pearson lower bound of c successes
    threshold = int(counts[np.argmax(lower > math.exp(allowed) * upper)])
    expected = binom.sf(threshold - 1, n, rho)
    assert detection_probability(rho, n, 0.0, n, allowed, error) == pytest.approx(expected, rel=1e-6)
    assert 15 < threshold < 30 and 0.9 < expected < 0.99  # 30 expected reports
    # the rare-output class also needs the output to show in x's training reports
    stated = class_power("rare outputs", 0.0, n, n, allowed, error, training=500)
    seen = 1 - (1 - RARE_PROBABILITY) ** 500
    assert stated["probability"] == pytest.approx(seen * expected, rel=1e-9) and stated["excess"] == math.inf


def test_all_pairs_rule_detects_the_stated_violation_on_every_pair():
    """All pairs are tested once, at error 0.05 / P, the fresh reports detect an event of probability 0.1 whose
    log-ratio is E + 0.25 with probability 0.9: 12 pairs (k = 4) from 18,200 fresh reports per input (26,000 per
    input with the 30% pilot), 240 pairs (k = 16) from 27,090; the exact power there is 0.915 and 0.918, and
    just below the thresholds under 0.9."""
    assert default_max_pairs(12, 18_200, 1.0, 0.95) == 0 and default_max_pairs(12, 17_500, 1.0, 0.95) == 8
    assert default_max_pairs(240, 27_090, 1.0, 0.95) == 0 and default_max_pairs(240, 26_000, 1.0, 0.95) == 8
    other = 0.1 * math.exp(-1.25)
    assert detection_probability(0.1, 18_200, other, 18_200, 1.0, 0.05 / 12) == pytest.approx(0.915, abs=0.002)
    assert detection_probability(0.1, 27_090, other, 27_090, 1.0, 0.05 / 240) == pytest.approx(0.918, abs=0.002)
    assert detection_probability(0.1, 17_500, other, 17_500, 1.0, 0.05 / 12) < 0.9
    assert default_max_pairs(6, 10, 1.0, 0.95) == 0  # at most 8 pairs: all
    assert default_max_pairs(12, 18_200, 2.0, 0.95) == 8  # a larger E needs more reports (p' = p e^-(E + 0.25))


def test_the_adaptive_budget_is_the_default_when_the_audit_draws_its_reports():
    assert choose_adaptive(None, draws=True, per_input=True, looks=False, whole_channel=False)
    for ruled_out in ({"draws": False}, {"per_input": False}, {"looks": True}, {"whole_channel": True}):
        settings = {"draws": True, "per_input": True, "looks": False, "whole_channel": False, **ruled_out}
        assert not choose_adaptive(None, **settings) and not choose_adaptive(False, **settings)
    with pytest.raises(ValueError, match="--looks audits the whole sample at each look"):
        choose_adaptive(True, draws=True, per_input=True, looks=True, whole_channel=False)
    with pytest.raises(ValueError, match="needs --reports-per-input"):
        choose_adaptive(True, draws=True, per_input=False, looks=False, whole_channel=False)
    # the empirical E matrix: fixed split by default, an explicit --adaptive kept
    matrix = {"draws": True, "per_input": True, "looks": False, "whole_channel": False, "every_pair": True}
    assert not choose_adaptive(None, **matrix) and choose_adaptive(True, **matrix)


def test_command_line_defaults_and_power_per_class(tmp_path):
    """Default: adaptive, per-class power in the text and --json; --fixed-split: equal reports; none next to VIOLATED."""
    runner = CliRunner()
    E = tmp_path / "E.csv"
    E.write_text("\n".join(",".join("0" if i == j else "1" for j in range(4)) for i in range(4)))
    common = ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:grr", "--arg", "k=4", "--reports-per-input", "3000",
              "--seed", "3"]
    fine = runner.invoke(app, [*common, "--arg", "eps=1", "--json"])
    assert fine.exit_code == 0, fine.output
    payload = json.loads(fine.stdout)
    assert payload["adaptive"] is True and set(payload["power"]) == {"event families", "learned classifiers",
                                                                    "rare outputs"}
    pair = payload["pairs"][0]
    families = next(entry for entry in pair["power"] if entry["class"] == "event families")
    fresh = pair["reports_x"]
    error = 0.05 * (1 - PROBE_ERROR_SHARE) / payload["pairs_tested"]  # the state probe spends the rest
    p = families["event_probability"]
    assert families["probability"] == pytest.approx(
        detection_probability(p, fresh, p * math.exp(-1.25), pair["reports_x_prime"], 1.0, error))
    assert 0.5 < families["probability"] < 1
    text = runner.invoke(app, [*common, "--arg", "eps=1"])
    assert "power, event families: an event as likely under x" in text.output and "adaptive: a pilot" in text.output
    # the statement is conditional on the stated event being the one chosen for the pair, and says so on every line
    lines = [line for line in text.output.splitlines() if line.strip().startswith("power")]
    assert len(lines) == 4 and all("if chosen as the event" in line for line in lines)
    row = payload["power"]["event families"]
    assert (f"if chosen as the event, would have been detected with probability {row['smallest']['probability']:.3g}"
            in lines[0])
    fixed = json.loads(runner.invoke(app, [*common, "--arg", "eps=1", "--json", "--fixed-split"]).stdout)
    assert fixed["adaptive"] is False and fixed["reports_per_input"] == {"min": 2700, "max": 2700}  # 300 to the state probe
    leaking = runner.invoke(app, [*common, "--arg", "eps=2"])
    assert leaking.exit_code == 1 and "power" not in leaking.output
    violated = json.loads(runner.invoke(app, [*common, "--arg", "eps=2", "--json"]).stdout)
    assert violated["power"] is None and all("power" not in pair for pair in violated["pairs"])


def test_false_alarms_at_the_defaults():
    """The default (adaptive) audit of correct GRR, unary-encoding and Laplace-histogram clients (k = 4, 600 reports
    per input, default attacks), 10 seeds each: at most 2 alarms of 30 (the level is 5%; the 200-seed version
    of every client is benchmarks/bench_audit_defaults.py)."""
    alarms = 0
    for name in ("grr", "unary", "histogram"):
        with PythonSampler(f"{SAMPLERS}:{name}", {"eps": 1.0, "k": 4}) as source:
            alarms += sum(adaptive_audit(source, PrivacyMatrix.classic(4, 1.0), Budget(600),
                                         np.random.default_rng(seed)).violated for seed in range(10))
    assert alarms <= 2


def test_power_beyond_the_grid_is_a_close_lower_bound(monkeypatch):
    """10^6 reports per input (about 4,000 counts per range): the grid of 512 counts gives a lower bound within
    0.005 of the sum over every count."""
    import designer.audit.power as power

    arguments = (0.1, 1_000_000, 0.1 * math.exp(-1.04), 1_000_000, 1.0, 0.05 / 240)
    coarse = power.detection_probability(*arguments)
    monkeypatch.setattr(power, "GRID", 10**6)
    power.detection_probability.cache_clear()
    exact = power.detection_probability(*arguments)
    power.detection_probability.cache_clear()
    assert 0.9 < exact and exact - 0.005 < coarse <= exact
