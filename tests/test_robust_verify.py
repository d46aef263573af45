"""PolyOpt's optimality proof: ``verify_optimality`` and ``ldp-designer robust --verify``."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.io import read_channel
from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import outer_cone_bound, polyopt, verify_optimality
from designer.utility import mutual_information

runner = CliRunner()
COUNTS_23 = [[30, 10, 5], [20, 40, 15]]
COUNTS_33 = [[30, 10, 5], [20, 40, 15], [5, 5, 20]]


@pytest.fixture(scope="module")
def confidence() -> ConfidenceSet:
    return ConfidenceSet(COUNTS_23, 0.05)


@pytest.fixture(scope="module")
def optimum(confidence) -> float:
    """The PolyOpt optimum by exact enumeration of every vertex of Γ̂ (an independent route)."""
    return polyopt(confidence, 1.0, method="enumeration").utility


def test_column_generation_design_is_proved_optimal(confidence, optimum):
    design = polyopt(confidence, 1.0, method="column-generation")
    assert design.upper_bound is None and not design.optimal  # no proof without verification
    stages = []
    proof = verify_optimality(confidence, design, progress=lambda *report: stages.append(report))
    assert proof.status == "proved" and proof.cone == "outer"
    assert proof.upper_bound >= design.utility and proof.upper_bound >= optimum  # a valid bound on both
    assert proof.gap == pytest.approx(proof.upper_bound - design.utility, abs=0)
    assert 0 <= proof.gap <= 1e-9
    assert proof.vertices > 0 and proof.seconds >= 0
    # progress: the enumeration stage, then the dual check up to every vertex
    assert stages[0] == ("enumerate", 0, None) and stages[-1] == ("check", proof.vertices, proof.vertices)
    # the utility is that of the design's channel
    assert proof.utility == pytest.approx(mutual_information(confidence.prior, design.channel.matrix), rel=1e-12)


def test_enumeration_design_carries_its_proof(confidence):
    design = polyopt(confidence, 1.0, method="enumeration")
    proof = verify_optimality(confidence, design)
    assert proof.status == "proved" and proof.cone == "inner" and proof.seconds == 0.0
    assert proof.vertices == design.params["vertices"] and proof.upper_bound == design.upper_bound
    assert proof.upper_bound >= design.utility  # the rounding allowance keeps the bound above


def test_unfinished_proof_within_a_tiny_budget():
    """(3,3) takes seconds to enumerate; a 0.05 s budget cannot finish. Any feasible column set will do."""
    confidence = ConfidenceSet(COUNTS_33, 0.05)
    uniform = np.full((1, 9), 1 / 9)
    proof = outer_cone_bound(confidence, 1.0, uniform, max_seconds=0.05)
    assert proof.status == "unfinished" and proof.max_seconds == 0.05
    assert proof.upper_bound is None and proof.gap is None and proof.vertices is None
    assert json.loads(json.dumps(proof.to_dict(), allow_nan=False))["status"] == "unfinished"


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("verify") / "records.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["s", "u"])
        for s, row in zip("ab", COUNTS_23):
            for u, count in zip("xyz", row):
                writer.writerows([[s, u]] * count)
    return path


def command(records: Path, out: Path, *extra: str) -> list[str]:
    return ["robust", "--data", str(records), "--secret", "s", "--public", "u", "--eps", "1",
            "--protocol", "polyopt", "--out", str(out), *extra]


def test_cli_verify_json_reports_the_bound(records, tmp_path, optimum):
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, command(records, out, "--method", "column-generation", "--verify", "--json"))
    assert result.exit_code == 0, result.output
    assert "Infinity" not in result.stdout and "NaN" not in result.stdout  # strict JSON (json.dumps allows them)
    payload = json.loads(result.stdout)  # one JSON object on stdout
    proof = payload["verification"]
    assert set(proof) == {"status", "upper_bound", "utility", "gap", "vertices", "cone", "seconds", "max_seconds"}
    assert proof["status"] == "proved" and proof["cone"] == "outer" and proof["max_seconds"] is None
    assert proof["upper_bound"] >= payload["mutual_information"] and proof["upper_bound"] >= optimum
    assert proof["gap"] == pytest.approx(proof["upper_bound"] - payload["mutual_information"], abs=1e-15)
    assert 0 <= proof["gap"] <= 1e-9 and proof["vertices"] > 0 and proof["seconds"] >= 0
    assert payload["verdict"] == "certified" and payload["params"]["method"] == "column-generation"
    # the written channel is the design whose utility was bounded
    confidence = ConfidenceSet.from_csv(records, "s", "u", 0.05)
    assert mutual_information(confidence.prior, read_channel(out).matrix) == pytest.approx(
        payload["mutual_information"], rel=1e-9)


def test_cli_verify_text_and_budget(records, tmp_path):
    out = tmp_path / "Q.csv"
    text = runner.invoke(app, command(records, out, "--verify"))
    assert text.exit_code == 0 and "optimality: proved optimal" in text.stdout
    # a budget too small to enumerate anything: the channel is still designed, certified and written
    out.unlink()
    result = runner.invoke(app, command(records, out, "--method", "column-generation", "--verify",
                                        "--max-seconds", "1e-6", "--json"))
    assert result.exit_code == 0, result.output
    proof = json.loads(result.stdout)["verification"]
    assert proof["status"] == "unfinished" and proof["upper_bound"] is None and proof["max_seconds"] == 1e-6
    assert out.exists()


def test_cli_without_verify_reports_no_proof(records, tmp_path):
    result = runner.invoke(app, command(records, tmp_path / "Q.csv", "--json"))
    assert result.exit_code == 0 and json.loads(result.stdout)["verification"] is None


@pytest.mark.parametrize("extra, message", [
    (["--protocol", "grr", "--verify"], "--verify applies to --protocol polyopt only"),
    (["--protocol", "ir", "--method", "enumeration"], "--method applies to --protocol polyopt only"),
    (["--max-seconds", "5"], "--max-seconds is the budget of --verify"),
    (["--verify", "--max-seconds", "0"], "--max-seconds must be a positive number"),
    (["--verify", "--max-seconds", "inf"], "--max-seconds must be a positive number"),
])
def test_cli_verify_option_errors(records, tmp_path, extra, message):
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, command(records, out, *extra))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert not out.exists()


def test_cli_progress_display_keeps_stdout_json(records, tmp_path, monkeypatch):
    """With stderr taken for a terminal the progress display runs (worker thread, budget bar) on stderr only."""
    import designer.commands.progress as progress

    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, command(records, out, "--method", "column-generation", "--verify",
                                        "--max-seconds", "60", "--json"))
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["verification"]["status"] == "proved" and payload["verification"]["max_seconds"] == 60
    # the display is transient (rich draws nothing live when the stream is not a real terminal): no error text
    assert "error" not in result.stderr and "Traceback" not in result.stderr
