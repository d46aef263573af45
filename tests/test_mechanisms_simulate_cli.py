"""``ldp-designer simulate`` and the synthetic distributions of Section 7."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.mechanisms import BlockHadamardResponse
from designer.simulation import named_distribution, simulate

runner = CliRunner()


def _run(*arguments):
    return runner.invoke(app, ["simulate", *arguments])


def test_distributions_follow_section_7():
    zipf = named_distribution("zipf:1.1", 5)
    np.testing.assert_allclose(zipf, np.arange(1, 6) ** -1.1 / np.sum(np.arange(1, 6) ** -1.1))
    geometric = named_distribution("geometric:0.4", 4)  # p(i) ∝ (1 - lam)^i lam
    np.testing.assert_allclose(geometric, 0.6 ** np.arange(4) / np.sum(0.6 ** np.arange(4)))
    assert np.array_equal(named_distribution("uniform", 4), np.full(4, 0.25))


def test_json_run_reports_errors_bound_and_timings():
    result = _run("--mechanism", "block-hr", "--k", "1000", "--blocks", "20", "--eps", "1", "--n", "200000",
                  "--dist", "zipf:1.1", "--seed", "3", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("tv_error", "tv_error_raw", "l2_error", "tv_bound", "seconds", "data_seconds"):
        assert key in payload
    assert payload["blocks"] == 20 and payload["outputs"] == 20 * 64
    assert payload["tv_error"] <= payload["tv_error_raw"] <= payload["tv_bound"]
    again = json.loads(_run("--mechanism", "block-hr", "--k", "1000", "--blocks", "20", "--eps", "1", "--n",
                            "200000", "--dist", "zipf:1.1", "--seed", "3", "--json").stdout)
    assert again["tv_error"] == payload["tv_error"]  # the seed makes runs reproducible


def test_cli_result_equals_the_library_run():
    payload = json.loads(_run("--mechanism", "hr", "--k", "100", "--eps", "0.5", "--n", "5000", "--seed", "7",
                              "--json").stdout)
    from designer.mechanisms import HadamardResponse

    library = simulate(HadamardResponse(100, 0.5), named_distribution("uniform", 100), 5000, 7)
    assert payload["tv_error_raw"] == library.tv_error_raw


def test_human_output_high_low_and_grr():
    result = _run("--mechanism", "high-low-hr", "--k", "200", "--sensitive", "10", "--eps", "1", "--n", "10000",
                  "--dist", "geometric:0.95")
    assert result.exit_code == 0 and "TV error" in result.stdout and "bits per report" in result.stdout
    grr = json.loads(_run("--mechanism", "grr", "--k", "10", "--eps", "2", "--n", "1000", "--json").stdout)
    assert grr["tv_bound"] is None


def test_block_sizes_from_csv(tmp_path):
    sizes = tmp_path / "sizes.csv"
    sizes.write_text("10\n30\n60\n")
    payload = json.loads(_run("--mechanism", "block-hr", "--k", "100", "--blocks", str(sizes), "--eps", "1",
                              "--n", "1000", "--json").stdout)
    assert payload["blocks"] == 3 and payload["outputs"] == 16 + 32 + 64
    sizes.write_text("10\n30\n")
    bad = _run("--mechanism", "block-hr", "--k", "100", "--blocks", str(sizes), "--eps", "1", "--n", "1000")
    assert bad.exit_code == 2 and "sum to 40, not k = 100" in bad.output


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--mechanism", "block-hr", "--k", "10", "--eps", "1", "--n", "10"], "needs --blocks"),
        (["--mechanism", "high-low-hr", "--k", "10", "--eps", "1", "--n", "10"], "needs --sensitive"),
        (["--mechanism", "hr", "--k", "10", "--eps", "1", "--n", "10", "--sensitive", "2"], "high-low-hr only"),
        (["--mechanism", "hr", "--k", "10", "--eps", "-1", "--n", "10"], "epsilon"),
        (["--mechanism", "hr", "--k", "10", "--eps", "1", "--n", "0"], "--n must be >= 1"),
        (["--mechanism", "hr", "--k", "10", "--eps", "1", "--n", "10", "--dist", "poisson:3"], "unknown distribution"),
        (["--mechanism", "hr", "--k", "10", "--eps", "1", "--n", "10", "--dist", "zipf:x"], "not a number"),
        (["--mechanism", "block-hr", "--k", "10", "--blocks", "11", "--eps", "1", "--n", "10"], "1..10"),
    ],
)
def test_bad_input_is_one_line_exit_2(arguments, message):
    result = _run(*arguments)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_distribution_file_must_match_k(tmp_path):
    weights = tmp_path / "p.csv"
    weights.write_text("1,2,3\n")
    result = _run("--mechanism", "grr", "--k", "4", "--eps", "1", "--n", "10", "--dist", str(weights))
    assert result.exit_code == 2 and "3 weights for k = 4" in result.output


def test_simulation_streams_users_in_chunks():
    mechanism = BlockHadamardResponse([30, 70], 1.0)
    seen = []
    result = simulate(mechanism, named_distribution("uniform", 100), 10_001, rng=0, progress=seen.append, chunk=1000)
    assert seen == [1000 * i for i in range(1, 11)] + [10_001]
    assert result.tv_error <= result.tv_error_raw
    assert result.seconds == pytest.approx(result.sample_seconds + result.estimate_seconds)
