"""Adaptive budgets: the pilot chooses the pairs, the rest of the budget goes to their inputs only."""

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from designer.audit import Budget, PythonSampler
from designer.audit.adaptive import adaptive_audit
from designer.cli import app
from designer.spec import PrivacyMatrix

SAMPLERS = Path(__file__).parent / "fixtures" / "audit" / "samplers.py"


def test_rare_text_report_gets_the_fresh_budget():
    """GRR (k = 6) whose input 5 also says "trace" 1% of the time: the two tested pairs are (5, x') with the
    event {report = 'trace'}, and their three inputs share the whole fresh budget (12,600 reports, 4,200 each,
    twice the fixed split's 2,100)."""
    k = 6
    source = PythonSampler(f"{SAMPLERS}:tagged", {"eps": 1.0, "k": k, "rate": 0.01})
    result = adaptive_audit(source, PrivacyMatrix.classic(k, 1.0), Budget(3000), np.random.default_rng(4),
                            max_pairs=2, attacks=())
    assert result.violated
    assert {pair.x for pair in result.pairs} == {5} and {pair.event for pair in result.pairs} == {"report = 'trace'"}
    assert all(pair.trials_x == 4200 and pair.trials_other == 4200 for pair in result.pairs)
    assert all(pair.count_other == 0 and pair.count_x > 25 for pair in result.pairs)
    tested = {x for pair in result.pairs for x in (pair.x, pair.x_prime)}
    assert {x: count for x, count in result.reports_per_input.items() if x in tested} == {x: 900 + 4200 for x in tested}
    assert all(result.reports_per_input[x] == 900 for x in range(k) if x not in tested)
    # the empirical E covers the pairs whose inputs both have fresh reports
    lower = result.lower_bounds
    assert all(lower[5, x] > 1.0 for x in tested - {5})
    untested = sorted(set(range(k)) - tested)
    assert np.all(lower[untested, :] == 0) and np.all(lower[:, untested] == 0)


def test_command_line_adaptive(tmp_path):
    E = tmp_path / "E.csv"
    E.write_text("\n".join(",".join("0" if i == j else "1" for j in range(4)) for i in range(4)) + "\n")
    runner = CliRunner()
    common = ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:tagged", "--arg", "eps=1", "--arg", "k=4",
              "--arg", "rate=0.01", "--reports-per-input", "3000", "--seed", "2", "--adaptive", "--max-pairs", "2"]
    result = runner.invoke(app, [*common, "--json"])
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["adaptive"] is True
    # four inputs: the fresh budget 4 x 2,100 shared by the three inputs of the two pairs
    assert payload["violations"][0]["event"] == "report = 'trace'" and payload["reports_per_input"]["max"] == 900 + 2800
    refused = runner.invoke(app, [*common, "--channel-out", str(tmp_path / "Q.csv")])
    assert refused.exit_code == 2 and "--adaptive draws more reports" in refused.output
    timed = runner.invoke(app, ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
                                "--seconds", "1", "--adaptive"])
    assert timed.exit_code == 2 and "--adaptive needs --reports-per-input" in timed.output
