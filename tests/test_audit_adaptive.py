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
    """GRR (k = 4: 12 pairs, no narrowing round) whose input 3 also says "trace" 1% of the time: the two
    tested pairs are (3, x') with the event {report = 'trace'}, and their three inputs share the whole fresh
    budget (8,400 reports, 2,800 each, 1.33 times the fixed split's 2,100)."""
    k = 4
    with PythonSampler(f"{SAMPLERS}:tagged", {"eps": 1.0, "k": k, "rate": 0.01}) as source:
        result = adaptive_audit(source, PrivacyMatrix.classic(k, 1.0), Budget(3000), np.random.default_rng(4),
                                max_pairs=2, attacks=())
    assert result.violated
    assert {pair.x for pair in result.pairs} == {3} and {pair.event for pair in result.pairs} == {"report = 'trace'"}
    assert all(pair.trials_x == 2800 and pair.trials_other == 2800 for pair in result.pairs)
    assert all(pair.count_other == 0 and pair.count_x > 15 for pair in result.pairs)
    tested = {x for pair in result.pairs for x in (pair.x, pair.x_prime)}
    assert {x: count for x, count in result.reports_per_input.items() if x in tested} == {x: 900 + 2800 for x in tested}
    assert all(result.reports_per_input[x] == 900 for x in range(k) if x not in tested)
    # the empirical E covers the pairs whose inputs both have fresh reports
    lower = result.lower_bounds
    assert all(lower[3, x] > 1.0 for x in tested - {3})
    untested = sorted(set(range(k)) - tested)
    assert np.all(lower[untested, :] == 0) and np.all(lower[:, untested] == 0)


def leaky_pair_sampler(k: int, x: int, x_prime: int, loss: float):
    """GRR at eps = 1 whose pair (x, x') has privacy loss ``loss`` on output x (Q[x', x] lowered, the deficit
    spread over the outputs other than x and x'); every other pair has loss at most 1."""
    channel = np.full((k, k), 1 / (np.e + k - 1))
    np.fill_diagonal(channel, np.e / (np.e + k - 1))
    deficit = channel[x_prime, x] - channel[x, x] * np.exp(-loss)
    channel[x_prime, x] -= deficit
    others = [y for y in range(k) if y not in (x, x_prime)]
    channel[x_prime, others] += deficit / len(others)

    class Source:
        description, separator = "leaky pair", None

        def draw(self, z, n, rng, timeout=None):
            return rng.choice(k, n, p=channel[z])

    return Source()


def test_narrowing_round_finds_one_leaking_pair():
    """k = 10 (90 pairs >= 64): the pilot's 16 best pairs get a second look, then 2 pairs get the fresh reports.
    The pair (2, 5) at loss 1.5 is tested and violated in 9 of 10 seeds or more (fixed events), and the budget
    adds up: pilot 600 each, narrowing 0.5 x 1,400 x 10 = 7,000 over the 16 pairs' inputs, the rest (7,000) to
    the tested pairs' inputs, which end with the most reports."""
    k, n = 10, 2000
    privacy = PrivacyMatrix.classic(k, 1.0)
    found = 0
    for seed in range(10):
        result = adaptive_audit(leaky_pair_sampler(k, 2, 5, 1.5), privacy, Budget(n), np.random.default_rng(seed),
                                attacks=())
        assert len(result.pairs) == 2 and result.pairs_constrained == 90
        found += result.violated and any((p.x, p.x_prime) == (2, 5) and p.violated for p in result.pairs)
        assert sum(result.reports_per_input.values()) <= n * k
        assert sum(result.reports_per_input.values()) >= n * k - 2 * k
        counts = result.reports_per_input
        tested = {x for pair in result.pairs for x in (pair.x, pair.x_prime)}
        assert min(counts.values()) >= 600 and {counts[x] for x in tested} == {max(counts.values())}
        assert all(counts[x] < max(counts.values()) for x in set(range(k)) - tested)
    assert found >= 9


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
    # 300 of the 3,000 reports per input go to the state probe; of the 2,700: a pilot of 810, then the fresh
    # budget 4 x 1,890 shared by the three inputs of the two pairs
    assert payload["violations"][0]["event"] == "report = 'trace'" and payload["reports_per_input"]["max"] == 810 + 2520
    refused = runner.invoke(app, [*common, "--channel-out", str(tmp_path / "Q.csv")])
    assert refused.exit_code == 2 and "--adaptive draws more reports" in refused.output
    timed = runner.invoke(app, ["audit", "--E", str(E), "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
                                "--seconds", "1", "--adaptive"])
    assert timed.exit_code == 2 and "--adaptive needs --reports-per-input" in timed.output


def test_inputs_that_alone_showed_an_output_lead_the_narrowing():
    """Outputs 2 (twice, input 0) and 3, 4 (three times, input 2) were seen under one input only: inputs 2
    then 0, by count; input 1 showed none of its own."""
    from designer.audit.adaptive import _exclusive_inputs
    from designer.audit.events import OutputSpace

    reports = {0: np.array([0, 1, 2, 2]), 1: np.array([0, 1, 1]), 2: np.array([0, 3, 3, 4])}
    space = OutputSpace(list(reports.values()))
    assert _exclusive_inputs(space, {x: space.encode(values) for x, values in reports.items()}) == [2, 0]
