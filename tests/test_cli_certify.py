import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.examples import example_path

runner = CliRunner()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_certify_exit_codes_and_json():
    ok = runner.invoke(app, ["certify", "--E", str(example_path("ldp4_E.csv")), "--channel", str(example_path("grr4_Q.csv")), "--exact", "--json"])
    assert ok.exit_code == 0, ok.output
    payload = json.loads(ok.stdout)
    assert payload["verdict"] == "certified" and payload["mode"] == "exact"
    assert payload["margin"] == pytest.approx(0.0, abs=1e-15)
    assert payload["tight_E"][0][1] == pytest.approx(np.log(3))
    bad = runner.invoke(app, ["certify", "--E", str(example_path("ldp4_E.csv")), "--channel", str(example_path("grr4_too_loose_Q.csv")), "--json"])
    assert bad.exit_code == 1
    violations = json.loads(bad.stdout)["violations"]
    assert len(violations) == 12
    assert set(violations[0]) >= {"x", "x_prime", "y", "log_ratio", "allowed"}
    assert violations[0]["log_ratio"] == pytest.approx(np.log(4))


def test_certify_readable_report():
    result = runner.invoke(app, ["certify", "--E", str(example_path("survey_E.csv")), "--channel", str(example_path("survey_mangat_Q.csv"))])
    assert result.exit_code == 0
    assert "CERTIFIED" in result.stdout


@pytest.mark.parametrize(
    "e_text, q_text, fragments",
    [
        ("0,1\n1,0\n", "0.5,0.5\n0.5\n", ["Q.csv", "row 2", "ragged"]),
        ("0,1\n1,0\n", "1.5,-0.5\n0.5,0.5\n", ["Q.csv", "row 1", "-0.5"]),
        ("0,nan\n1,0\n", "0.5,0.5\n0.5,0.5\n", ["E.csv", "row 1", "nan"]),
        ("0,-1\n1,0\n", "0.5,0.5\n0.5,0.5\n", ["E.csv", "row 1", "-1"]),
        ("0,1\n1,0\n", "0.5,0.6\n0.5,0.5\n", ["Q.csv", "row 1", "sums to"]),
        ("0,1,1\n1,0,1\n1,1,0\n", "0.5,0.5\n0.5,0.5\n", ["2 rows", "3 x 3"]),
        ("0.5,1\n1,0\n", "0.5,0.5\n0.5,0.5\n", ["E.csv", "row 1", "diagonal"]),
        ("", "0.5,0.5\n0.5,0.5\n", ["E.csv", "no rows"]),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path, e_text, q_text, fragments):
    e_file = write(tmp_path / "E.csv", e_text)
    q_file = write(tmp_path / "Q.csv", q_text)
    result = runner.invoke(app, ["certify", "--E", str(e_file), "--channel", str(q_file)])
    assert result.exit_code == 2
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in message


def test_missing_file_is_exit_2(tmp_path):
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "nope.csv"), "--channel", str(tmp_path / "q.csv")])
    assert result.exit_code == 2 and "nope.csv" in result.stderr


def test_spec_writes_each_family(tmp_path):
    cases = {
        "ldp": (["--k", "3", "--eps", "1"], lambda e: e[0, 1] == 1 and e.shape == (3, 3)),
        "high-low": (["--k", "4", "--sensitive", "2", "--eps", "0.5"], lambda e: e[1, 3] == 0.5 and np.isinf(e[2, 0])),
        "block": (["--k", "6", "--blocks", "3", "--eps", "2"], lambda e: e[0, 1] == 2 and np.isinf(e[1, 2])),
        "metric": (["--grid", "2x3", "--eps", "0.5"], lambda e: e.shape == (6, 6) and e[0, 5] == 1.5),
    }
    for family, (options, check) in cases.items():
        out = tmp_path / f"{family}.csv"
        result = runner.invoke(app, ["spec", family, "--out", str(out), *options])
        assert result.exit_code == 0, result.output
        matrix = np.genfromtxt(out, delimiter=",")
        assert check(matrix), family


def test_spec_graph_and_bad_input_leave_no_file(tmp_path):
    edges = write(tmp_path / "edges.csv", "a,b,1\nb,c,2\n")
    out = tmp_path / "E.csv"
    assert runner.invoke(app, ["spec", "metric", "--graph", str(edges), "--out", str(out)]).exit_code == 0
    assert np.genfromtxt(out, delimiter=",")[0, 2] == 3.0
    bad_edges = write(tmp_path / "bad.csv", "a,b,1\nb,c,-2\n")
    missing = tmp_path / "never.csv"
    result = runner.invoke(app, ["spec", "metric", "--graph", str(bad_edges), "--out", str(missing)])
    assert result.exit_code == 2 and "row 2" in result.stderr
    assert not missing.exists()
    result = runner.invoke(app, ["spec", "block", "--blocks", "4", "--out", str(missing)])
    assert result.exit_code == 2 and "--k" in result.stderr and not missing.exists()
    assert list(tmp_path.glob(".*.tmp")) == []


def test_console_script_runs_demo():
    result = subprocess.run([sys.executable, "-m", "designer.cli", "demo"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "certified" in result.stdout and "violated" in result.stdout
    output = " ".join(result.stdout.split())  # rich wraps long lines
    assert "clients given the author's public key accept it (Ed25519 signature by" in output
    assert "re-signed by another key: refused: signed by the key" in output
