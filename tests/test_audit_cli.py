"""``ldp-designer audit``: sources, verdicts, exit codes, closing the loop, bad input."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.audit.usercode import load_callable
from designer.cli import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures" / "audit"
SAMPLERS = FIXTURES / "samplers.py"
COMMAND = f"{sys.executable} {FIXTURES / 'grr_command.py'}"


def write_E(path: Path, k: int, eps: str) -> Path:
    path.write_text("\n".join(",".join("0" if i == j else eps for j in range(k)) for i in range(k)) + "\n")
    return path


def audit(*arguments):
    return runner.invoke(app, ["audit", *map(str, arguments)])


@pytest.fixture
def files(tmp_path):
    return {"E1": write_E(tmp_path / "E1.csv", 4, "1"), "E08": write_E(tmp_path / "E08.csv", 4, "0.8"), "dir": tmp_path}


def test_python_sampler_verdicts_and_exit_codes(files):
    common = ["--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4", "--reports-per-input", 8000, "--seed", 1]
    honest = audit("--E", files["E1"], *common)
    assert honest.exit_code == 0, honest.output
    assert "NO VIOLATION FOUND" in honest.stdout and "not a certificate" in honest.stdout
    assert "largest lower bound" in honest.stdout and "power, per tested pair" in honest.stdout
    strict = audit("--E", files["E08"], *common)
    assert strict.exit_code == 1, strict.output
    assert "VIOLATED" in strict.stdout and "violated: x=" in strict.stdout


def test_json_report_is_reproducible_with_a_seed(files):
    arguments = ["--E", files["E08"], "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
                 "--reports-per-input", 6000, "--seed", 5, "--json", "--correction", "bonferroni", "--fixed-split"]
    first, second = audit(*arguments), audit(*arguments)
    assert first.exit_code == 1 and first.stdout == second.stdout
    payload = json.loads(first.stdout)
    assert payload["verdict"] == "violated" and payload["correction"] == "bonferroni"
    # 3,780 fresh reports per input cannot afford all 12 pairs (the all-pairs rule needs 18,200): the best 8
    assert payload["pairs_tested"] == 8 and payload["pairs_constrained"] == 12
    witness = payload["violations"][0]
    assert witness["event"] == f"report = {witness['x']}"
    # the main tests spend 0.8 of the error (the state probe 0.2) and 5,400 of the 6,000 reports per input
    assert witness["lower_bound"] > 0.8 and witness["p_value"] <= 0.8 * 0.05 / 8
    # the counts are the fresh split: 70% of 5,400
    assert witness["reports_x"] == 3780 and witness["reports_x_prime"] == 3780
    assert payload["probe"]["pairs_of_calls"] == 600 * 4 // 2 and payload["probe"]["violated"] is False
    # a 4 x 4 channel was estimated with simultaneous intervals around the truth
    truth = np.full((4, 4), 1 / (np.e + 3))
    np.fill_diagonal(truth, np.e / (np.e + 3))
    channel = payload["channel"]
    assert np.all(np.array(channel["lower"]) <= truth) and np.all(truth <= np.array(channel["upper"]))


def test_command_source_and_report_file(files):
    honest = audit("--E", files["E1"], "--command", f"{COMMAND} 1 4", "--reports-per-input", 5000, "--seed", 2)
    assert honest.exit_code == 0, honest.output
    strict = audit("--E", files["E08"], "--command", f"{COMMAND} 1 4", "--reports-per-input", 8000, "--seed", 2)
    assert strict.exit_code == 1, strict.output
    rng = np.random.default_rng(3)
    grr_labels = load_callable(f"{SAMPLERS}:grr_labels")
    lines = ["input,report"] + [f"{x},{label}" for x in range(4) for label in grr_labels(x, 8000, rng, 1.0, 4)]
    pairs = files["dir"] / "pairs.csv"
    pairs.write_text("\n".join(lines) + "\n")
    from_file = audit("--E", files["E08"], "--reports", pairs, "--json", "--seed", 3)
    assert from_file.exit_code == 1, from_file.output
    payload = json.loads(from_file.stdout)
    assert payload["reports_per_input"] == {"min": 8000, "max": 8000}
    # a witness may be a single report or a logistic-score threshold (about 1 split in 10 ranks one of those
    # first); every single-report witness names the string report that input x favours, quoted as bytes read
    reports = [violation for violation in payload["violations"] if violation["event"].startswith("report = ")]
    assert reports
    assert all(violation["event"] == "report = " + repr(chr(ord("a") + violation["x"])) for violation in reports)


def test_time_budget(files):
    result = audit("--E", files["E1"], "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
                   "--seconds", 0.5, "--json", "--seed", 1)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["reports_per_input"]["min"] >= 64


def test_declared_matrix_closes_the_loop(files):
    k = 4
    exact = write_E(files["dir"] / "Elog3.csv", k, "log(3)")
    declared = files["dir"] / "grr.csv"
    declared.write_text("\n".join(",".join("1/2" if i == j else "1/6" for j in range(k)) for i in range(k)) + "\n")
    common = ["--sampler", f"{SAMPLERS}:grr", "--arg", f"eps={float(np.log(3))!r}", "--arg", f"k={k}",
              "--reports-per-input", 6000, "--seed", 4]
    closed = audit("--E", exact, "--declared", declared, *common)
    assert closed.exit_code == 0, closed.output
    assert "loop closed" in closed.stdout and "is E-LDP (exact proof)" in closed.stdout
    # a declared matrix the code does not implement (also log(3)-LDP): the chi-square test rejects it
    other = files["dir"] / "other.csv"
    other.write_text("\n".join(",".join("2/5" if i == j else "1/5" for j in range(k)) for i in range(k)) + "\n")
    rejected = audit("--E", exact, "--declared", other, *common, "--json")
    assert rejected.exit_code == 3, rejected.output
    payload = json.loads(rejected.stdout)["declared"]
    assert payload["closed"] is False and payload["fit"]["consistent"] is False
    assert payload["certificate"]["verdict"] == "certified"
    # the estimate written to a file is near the truth
    out = files["dir"] / "estimate.csv"
    written = audit("--E", exact, *common, "--channel-out", out)
    assert written.exit_code == 0, written.output
    estimate = np.loadtxt(out, delimiter=",")
    assert estimate.shape == (4, 4) and np.allclose(np.diag(estimate), 0.5, atol=0.03)


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (["--sampler", "no_such_module_xyz:f", "--reports-per-input", "100"], "cannot import no_such_module_xyz"),
        (["--sampler", f"{SAMPLERS}:missing", "--reports-per-input", "100"], "has no function 'missing'"),
        (["--sampler", f"{SAMPLERS}:raises", "--reports-per-input", "100"], "raised RuntimeError: the device is not connected"),
        (["--sampler", f"{SAMPLERS}:one_short", "--reports-per-input", "100"], "returned 29 reports for n = 30"),  # the pilot
        (["--sampler", f"{SAMPLERS}:out_of_alphabet", "--reports-per-input", "100", "--alphabet", "4"], "outside the output alphabet"),
        (["--command", f"{COMMAND} 1 4 --fail", "--reports-per-input", "100"], "exited with status 3: cannot open the key store"),
        (["--command", "no-such-program-xyz", "--reports-per-input", "100"], "not found"),
        (["--reports-per-input", "100"], "exactly one source"),
        (["--sampler", f"{SAMPLERS}:grr", "--reports-per-input", "100", "--seconds", "1"], "exactly one of"),
        (["--sampler", f"{SAMPLERS}:grr", "--arg", "eps", "--reports-per-input", "100"], "key=value"),
        (["--sampler", f"{SAMPLERS}:grr", "--reports-per-input", "100", "--confidence", "1.5"], "confidence must be in (0, 1)"),
        (["--sampler", f"{SAMPLERS}:grr", "--reports-per-input", "1"], "must be >= 2"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(files, arguments, fragment):
    result = audit("--E", files["E1"], *arguments)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert fragment in lines[0]


def test_report_file_errors(files):
    bad = files["dir"] / "bad.csv"
    bad.write_text("0,1\n9,2\n")
    result = audit("--E", files["E1"], "--reports", bad)
    assert result.exit_code == 2 and "line 2: input 9 outside 0..3" in result.output
    bad.write_text("0,1\n1,2\n")
    result = audit("--E", files["E1"], "--reports", bad, "--reports-per-input", 10)
    assert result.exit_code == 2 and "not --reports" in result.output


def test_report_file_with_missing_inputs_tests_the_others(files):
    rng = np.random.default_rng(9)
    grr = load_callable(f"{SAMPLERS}:grr")
    lines = [f"{x},{value}" for x in (0, 1, 2) for value in grr(x, 6000, rng, 1.0, 4)]
    pairs = files["dir"] / "three.csv"
    pairs.write_text("\n".join(lines) + "\n")
    result = audit("--E", files["E08"], "--reports", pairs, "--seed", 1)
    assert result.exit_code == 1, result.output
    assert "no reports of inputs [3]" in result.stdout and "channel estimated" not in result.stdout
    payload = json.loads(audit("--E", files["E08"], "--reports", pairs, "--json", "--seed", 1).stdout)
    assert payload["inputs_without_reports"] == [3] and payload["pairs_constrained"] == 6


def test_command_defaults_are_the_library_defaults():
    import inspect

    from designer.audit import verdict
    from designer.commands.audit import audit_command

    defaults = {name: parameter.default.default for name, parameter in inspect.signature(audit_command).parameters.items()}
    library = inspect.signature(verdict.audit_reports).parameters
    assert defaults["max_pairs"] is library["max_pairs"].default is None
    assert defaults["train_fraction"] == verdict.DEFAULT_TRAIN_FRACTION
    assert defaults["correction"].value == verdict.CORRECTIONS[0]


def test_lower_bound_matrix_is_written_and_in_json(files):
    """GRR at eps = 1: every pair's loss is exactly 1; the simultaneous lower bounds lie in [0, 1] and come close."""
    out = files["dir"] / "L.csv"
    arguments = ["--E", files["E1"], "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
                 "--reports-per-input", 20000, "--seed", 6, "--attacks", "none"]
    figure = files["dir"] / "L.png"
    result = audit(*arguments, "--lower-bounds-out", out, "--json", "--plot", figure)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.exit_code == 0, result.output
    written = np.loadtxt(out, delimiter=",")
    carried = np.array(json.loads(result.stdout)["lower_bounds"], dtype=float)
    assert written.shape == (4, 4) and np.allclose(written, carried)
    off = written[~np.eye(4, dtype=bool)]
    assert np.all(np.diag(written) == 0) and np.all(off <= 1.0) and np.all(off > 0.8)
