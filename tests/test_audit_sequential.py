"""Early stopping: pre-registered looks with the error split among them."""

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.audit import Budget, PythonSampler
from designer.audit.sequential import sequential_audit
from designer.cli import app
from designer.spec import PrivacyMatrix

SAMPLERS = Path(__file__).parent / "fixtures" / "audit" / "samplers.py"


def test_error_rate_is_kept_over_the_looks():
    """A correct GRR (k = 3, eps = 1) against E = its own eps, boundary-tight on every pair, audited at
    looks 1/3, 2/3, 1 of 240 reports per input over 100 seeds: every look is made at error 0.05 / 3 (the
    errors of a full schedule add up to 0.05), every audit without a violation makes all three looks at 80,
    160 and 240 reports per input, and the false alarms stay within the binomial range of a 5% level (at
    most 11 of 100: P(X > 11) < 0.01 for X ~ Bin(100, 0.05); the Clopper-Pearson tests are conservative,
    0 of 150 were seen at confidence 0.95 and 0.85 alike)."""
    privacy = PrivacyMatrix.classic(3, 1.0)
    alarms = 0
    with PythonSampler(f"{SAMPLERS}:grr", {"eps": 1.0, "k": 3}) as source:
        for seed in range(100):
            result = sequential_audit(source, privacy, Budget(240), np.random.default_rng(seed), (1 / 3, 2 / 3, 1.0),
                                      attacks=())
            alarms += result.violated
            if not result.violated:
                assert [look["reports_per_input"] for look in result.looks] == [80, 160, 240]
                assert all(look["error"] == pytest.approx(0.05 / 3) for look in result.looks)
                assert sum(look["error"] for look in result.looks) == pytest.approx(0.05)
            assert result.confidence == 0.95
    assert alarms <= 11


def test_blatant_leak_stops_at_the_first_look():
    """GRR at eps = 2 against E = 0.5: the first look (a quarter of 4,000 reports per input) already finds it."""
    with PythonSampler(f"{SAMPLERS}:grr", {"eps": 2.0, "k": 4}) as source:
        result = sequential_audit(source, PrivacyMatrix.classic(4, 0.5), Budget(4000), np.random.default_rng(1),
                                  attacks=())
    assert result.violated and len(result.looks) == 1
    assert result.looks[0] == {"share": 0.25, "reports_per_input": 1000, "error": pytest.approx(0.05 / 3),
                               "verdict": "violated"}
    assert set(result.reports_per_input.values()) == {1000}
    assert all(pair.log_ratio > 1.5 for pair in result.violations)


def test_command_line_looks(tmp_path):
    E = tmp_path / "E.csv"
    E.write_text("\n".join(",".join("0" if i == j else "0.5" for j in range(4)) for i in range(4)) + "\n")
    runner = CliRunner()
    common = ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=2", "--arg", "k=4",
              "--reports-per-input", "4000", "--seed", "3", "--looks", "0.25,0.5,1", "--attacks", "none"]
    result = runner.invoke(app, [*common, "--json"])
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    # 400 of the 4,000 reports per input go to the state probe: the looks are shares of 3,600
    assert [look["reports_per_input"] for look in payload["looks"]] == [900]
    text = runner.invoke(app, common)
    assert text.exit_code == 1 and "early stopping: look 1 of the schedule at 0.25 of the budget" in text.output
    for bad in ("0.5,0.25,1", "0.5,0.9", "a,b"):
        refused = runner.invoke(app, ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=2",
                                      "--arg", "k=4", "--reports-per-input", "400", "--looks", bad])
        assert refused.exit_code == 2 and "--looks" in refused.output and "Traceback" not in refused.output
    mixed = runner.invoke(app, [*common, "--adaptive"])
    assert mixed.exit_code == 2 and "--looks audits the whole sample at each look" in mixed.output
