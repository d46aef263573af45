"""CLI: ldp-designer robust / certify-robust (exit codes, JSON, bad input, channel files)."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.io import read_channel, write_matrix_csv
from designer.robust.certify import certify_robust
from designer.robust.confidence import ConfidenceSet
from designer.robust.protocols import grr_cr
from designer.utility import entropy, mutual_information

runner = CliRunner()


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    cells = rng.choice(9, size=800, p=rng.dirichlet(np.full(9, 0.5)))
    path = tmp_path_factory.mktemp("robust") / "records.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "smoker", "region"])
        for i, x in enumerate(cells):  # labels deliberately not in sorted order of appearance
            writer.writerow([i, ["yes", "no", "sometimes"][x // 3], ["west", "north", "south"][x % 3]])
    return path


def base(records: Path, eps: str = "1") -> list[str]:
    return ["--data", str(records), "--secret", "smoker", "--public", "region", "--eps", eps, "--alpha", "0.05"]


@pytest.mark.parametrize("protocol", ["polyopt", "ir", "grr-cr", "ue-cr", "srr", "grr"])
def test_robust_designs_certifies_and_writes(records, tmp_path, protocol):
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, ["robust", *base(records), "--protocol", protocol, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "certified" and payload["protocol"] == protocol
    assert set(payload) >= {"utility", "params", "verdict", "seconds"}
    assert payload["secret"] == ["no", "sometimes", "yes"] and payload["public"] == ["north", "south", "west"]
    channel = read_channel(out)
    confidence = ConfidenceSet.from_csv(records, "smoker", "region", 0.05)
    # utility = I_P̂(X;Y)/H(X) of the written channel, rows in (s, u) order
    expected = mutual_information(confidence.prior, channel.matrix) / entropy(confidence.prior)
    assert payload["utility"] == pytest.approx(expected, rel=1e-9)
    assert 0 < payload["utility"] < 1
    # and the written file certifies on its own
    again = runner.invoke(app, ["certify-robust", *base(records), "--channel", str(out)])
    assert again.exit_code == 0 and "CERTIFIED" in again.stdout


def test_robust_channel_matches_python_api(records, tmp_path):
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, ["robust", *base(records, "2"), "--protocol", "grr-cr", "--out", str(out), "--json"])
    assert result.exit_code == 0
    confidence = ConfidenceSet.from_csv(records, "smoker", "region", 0.05)
    assert np.allclose(read_channel(out).matrix, grr_cr(confidence, 2.0).channel.matrix, atol=0, rtol=1e-15)
    assert json.loads(result.stdout)["params"]["epsilon1"] + json.loads(result.stdout)["params"]["epsilon2"] == pytest.approx(2.0)


def test_certify_robust_violation_with_witness(records, tmp_path):
    out = tmp_path / "grr3.csv"
    assert runner.invoke(app, ["robust", *base(records, "3"), "--protocol", "grr", "--out", str(out)]).exit_code == 0
    result = runner.invoke(app, ["certify-robust", *base(records, "1"), "--channel", str(out), "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "violated"
    witness = payload["witness"]
    p = np.array([entry["probability"] for entry in witness["P"]])
    assert [(e["secret"], e["public"]) for e in witness["P"]][:2] == [("no", "north"), ("no", "south")]
    confidence = ConfidenceSet.from_csv(records, "smoker", "region", 0.05)
    assert confidence.contains(p)
    # recompute the ratio of (2) from the file and the witness
    matrix = read_channel(out).matrix
    s, s_prime = (confidence.secret_labels.index(witness[key]) for key in ("s", "s_prime"))
    joint = p.reshape(3, 3)
    column = matrix[:, witness["y"]].reshape(3, 3)
    ratio = (column[s] @ joint[s] / joint[s].sum()) / (column[s_prime] @ joint[s_prime] / joint[s_prime].sum())
    assert ratio == pytest.approx(witness["ratio"]) and np.log(ratio) > 1
    readable = runner.invoke(app, ["certify-robust", *base(records, "1"), "--channel", str(out)])
    assert readable.exit_code == 1 and "VIOLATED" in readable.stdout and "witness" in readable.stdout


def test_certify_robust_inconclusive_exit_3(tmp_path):
    # the near-critical case of tests/test_robust_certify.py: the decoupled bound is > 0, the
    # maximum over F is < 0, and without a branch-and-bound budget neither can be shown
    rng = np.random.default_rng(3)
    counts = rng.multinomial(200, rng.dirichlet(np.ones(6))).reshape(2, 3)
    matrix = rng.dirichlet(np.ones(3) * 2, size=6)
    records = tmp_path / "r.csv"
    rows = [f"{s},{u}" for s in range(2) for u in range(3) for _ in range(counts[s, u])]
    records.write_text("s,u\n" + "\n".join(rows) + "\n")
    channel = tmp_path / "Q.csv"
    write_matrix_csv(channel, matrix)
    confidence = ConfidenceSet.from_csv(records, "s", "u", 0.05)
    lo, hi = 0.0, 4.0
    for _ in range(16):
        middle = (lo + hi) / 2
        lo, hi = (lo, middle) if certify_robust(matrix, confidence, middle).certified else (middle, hi)
    argv = ["certify-robust", "--data", str(records), "--secret", "s", "--public", "u",
            "--eps", repr(hi + 0.01), "--channel", str(channel), "--json"]
    assert runner.invoke(app, argv).exit_code == 0  # branch and bound proves it
    result = runner.invoke(app, [*argv, "--max-intervals", "1"])
    assert result.exit_code == 3
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "inconclusive" and payload["inconclusive"] >= 1 and "witness" not in payload


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--public", "nope"], "public column 'nope'"),
        (["--eps", "-1"], "--eps"),
        (["--alpha", "1.5"], "alpha"),
    ],
)
def test_bad_input_exit_2_without_output(records, tmp_path, arguments, message):
    out = tmp_path / "Q.csv"
    argv = ["robust", *base(records), "--protocol", "ir", "--out", str(out)]
    for flag, value in zip(arguments[::2], arguments[1::2]):
        argv[argv.index(flag) + 1] = value
    result = runner.invoke(app, argv)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_certify_robust_wrong_rows_and_missing_file(records, tmp_path):
    channel = tmp_path / "Q.csv"
    channel.write_text("0.5,0.5\n0.5,0.5\n")
    result = runner.invoke(app, ["certify-robust", *base(records), "--channel", str(channel)])
    assert result.exit_code == 2 and "2 rows" in result.output and "9" in result.output
    result = runner.invoke(app, ["certify-robust", *base(records), "--channel", str(tmp_path / "none.csv")])
    assert result.exit_code == 2 and "none.csv" in result.output
    bad = tmp_path / "bad.csv"
    bad.write_text("id,smoker,region\n1,yes,\n")
    result = runner.invoke(app, ["certify-robust", "--data", str(bad), "--secret", "smoker", "--public", "region",
                                 "--eps", "1", "--channel", str(channel)])
    assert result.exit_code == 2 and "empty value" in result.output


def test_robust_output_folder_missing(records, tmp_path):
    result = runner.invoke(app, ["robust", *base(records), "--protocol", "srr", "--out", str(tmp_path / "no" / "Q.csv")])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_ue_cr_too_large_to_write(tmp_path):
    records = tmp_path / "wide.csv"
    rows = [f"s{i % 6},u{(7 * i) % 12}" for i in range(600)]
    records.write_text("s,u\n" + "\n".join(rows) + "\n")
    out = tmp_path / "Q.csv"
    result = runner.invoke(app, ["robust", "--data", str(records), "--secret", "s", "--public", "u", "--eps", "1",
                                 "--protocol", "ue-cr", "--out", str(out)])
    assert result.exit_code == 2 and "(|U|+1)^|S| = 4826809 outputs" in result.output
    assert not out.exists()


def test_robust_refuses_bad_destinations_before_designing(records, tmp_path, monkeypatch):
    """A folder or a path given twice is refused before the design runs (the designer is never called)."""
    import designer.commands.robust as robust_module

    monkeypatch.setattr(robust_module, "designers", lambda: pytest.fail("the design ran before the paths were checked"))
    folder = runner.invoke(app, ["robust", *base(records), "--protocol", "grr", "--out", str(tmp_path)])
    assert folder.exit_code == 2 and "is a folder" in folder.output
    twice = tmp_path / "Q.csv"
    result = runner.invoke(app, ["robust", *base(records), "--protocol", "grr", "--out", str(twice), "--package", str(twice)])
    assert result.exit_code == 2 and "each output needs its own file" in result.output and not twice.exists()
