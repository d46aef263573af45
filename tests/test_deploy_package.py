"""Mechanism packages: schema, canonical hash, CLI exit codes (package, verify-package, export-js, --package)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app
from designer.deploy.package import SCHEMA_PATH, build_package, verify_package
from designer.deploy.sampler import package_digest
from designer.deploy.table import deployable_table
from designer.examples import example_path
from deploy_fixtures import random_tight_channel

runner = CliRunner()


def package_file(tmp_path: Path, e_name="survey_E.csv", q_name="survey_mangat_Q.csv", bits=32) -> Path:
    out = tmp_path / "mech.json"
    result = runner.invoke(app, ["package", "--E", str(example_path(e_name)), "--channel", str(example_path(q_name)),
                                 "--bits", str(bits), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def verify(path: Path):
    return runner.invoke(app, ["verify-package", str(path)])


def rewrite(path: Path, change, rehash: bool = False) -> Path:
    document = json.loads(path.read_text())
    change(document)
    if rehash:
        document["sha256"] = package_digest(document)
    target = path.with_name("edited.json")
    target.write_text(json.dumps(document))
    return target


def test_package_matches_schema_and_canonical_hash(tmp_path):
    from jsonschema import Draft202012Validator

    document = json.loads(package_file(tmp_path).read_text())
    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    body = {key: value for key, value in document.items() if key != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    assert document["sha256"] == hashlib.sha256(canonical).hexdigest()
    assert document["table"] == [["2863311530", "1431655766"], ["0", "4294967296"]]  # 1/3 rounded up: ratio <= 3
    assert document["E"] == [["0", "inf"], ["log(3)", "0"]]
    assert document["certificate"]["verdict"] == "certified" and document["certificate"]["mode"] == "exact"
    ok = verify(tmp_path / "mech.json")
    assert ok.exit_code == 0 and "CERTIFIED" in ok.stdout


@pytest.mark.parametrize("seed", range(3))
def test_random_channels_package_and_reverify_from_scratch(seed):
    from jsonschema import Draft202012Validator

    rng = np.random.default_rng(100 + seed)
    channel, privacy = random_tight_channel(rng, int(rng.integers(2, 51)), int(rng.integers(2, 30)), seed == 1, seed != 2)
    document = build_package(deployable_table(channel, privacy))
    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    verification = verify_package(json.loads(json.dumps(document)))
    assert verification.certified and verification.certificate.mode == "exact"


def test_tampered_packages_exit_1(tmp_path):
    path = package_file(tmp_path)

    def move_unit(document):  # row sums still 2^32, hash no longer matches
        document["table"][0] = ["2863311531", "1431655765"]

    tampered = verify(rewrite(path, move_unit))
    assert tampered.exit_code == 1 and "SHA-256 mismatch" in tampered.stderr
    relabelled = verify(rewrite(path, lambda d: d["inputs"].__setitem__(0, "never")))
    assert relabelled.exit_code == 1
    # a forged package with a valid hash: the table breaks E, found by the exact re-certification
    forged = verify(rewrite(path, move_unit, rehash=True))
    assert forged.exit_code == 1 and "not E-LDP" in forged.stderr
    loosened = verify(rewrite(path, lambda d: d["certificate"].__setitem__("margin", "0.5"), rehash=True))
    assert loosened.exit_code == 1 and "margin" in loosened.stderr


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (lambda text: "", "not valid JSON"),
        (lambda text: "[1, 2]", "not an object"),
        (lambda text: text.replace('"schema_version": 1', '"schema_version": 2'), "unsupported schema_version 2"),
        (lambda text: text.replace('"2863311530"', '"2863311531"'), "sums to 4294967297, not 2^32"),
        (lambda text: text.replace('"2863311530"', "2863311530"), "not a decimal integer string"),
        (lambda text: text.replace('"2863311530"', '"-2863311530"'), "not a decimal integer string"),
        (lambda text: text.replace('"bits": 32', '"bits": 31'), "sums to"),
        (lambda text: text.replace('"log(3)"', '"log(-3)"'), "bad E"),
        (lambda text: text.replace('"kind": "table"', '"kind": "hadamard"'), "unknown package kind"),
        (lambda text: text.replace('"margin"', '"margin": "1", "extra"'), "certificate must have exactly"),
        (lambda text: text.replace('"format": "ldp-designer-mechanism"', '"format": "other"'), "not an ldp-designer"),
        (lambda text: text.replace('"prior": "uniform"', '"prior": NaN'), "not JSON"),
    ],
)
def test_bad_packages_exit_2_with_one_line(tmp_path, edit, message):
    path = package_file(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(edit(path.read_text()))
    result = verify(bad)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_refused_package_writes_nothing(tmp_path):
    out = tmp_path / "mech.json"
    result = runner.invoke(app, ["package", "--E", str(example_path("ldp4_E.csv")), "--channel",
                                 str(example_path("grr4_too_loose_Q.csv")), "--out", str(out)])
    assert result.exit_code == 1 and result.stderr.startswith("rejected: ") and "not E-LDP" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []
    bad_bits = runner.invoke(app, ["package", "--E", str(example_path("ldp4_E.csv")), "--channel",
                                   str(example_path("grr4_Q.csv")), "--bits", "100", "--out", str(out)])
    assert bad_bits.exit_code == 2 and "bits must be an integer from 8 to 64" in bad_bits.stderr


def test_64_bit_package_and_export_js(tmp_path):
    document = json.loads(package_file(tmp_path, "ldp4_E.csv", "grr4_Q.csv", bits=64).read_text())
    assert all(sum(int(v) for v in row) == 2**64 for row in document["table"])
    assert verify(tmp_path / "mech.json").exit_code == 0
    exported = runner.invoke(app, ["export-js", "--out", str(tmp_path)])
    assert exported.exit_code == 0
    assert (tmp_path / "ldp-client.mjs").read_text().startswith("// ldp-client.mjs")
    memo = (tmp_path / "ldp-memo.mjs").read_text()  # the memoizing client, beside the module it imports
    shipped = Path(__file__).parents[1] / "designer" / "deploy" / "js" / "ldp-memo.mjs"
    assert 'from "./ldp-client.mjs"' in memo and memo == shipped.read_text()
    assert runner.invoke(app, ["export-js", "--out", str(tmp_path / "missing")]).exit_code == 2


def test_sample_package_says_which_generator(tmp_path):
    path = package_file(tmp_path)
    secure = runner.invoke(app, ["sample-package", str(path), "--input", "0", "--n", "1000", "--json"])
    assert secure.exit_code == 0 and "ChaCha20" in json.loads(secure.stdout)["generator"]
    seeded = [runner.invoke(app, ["sample-package", str(path), "--input", "0", "--n", "1000", "--seed", "5", "--json"])
              for _ in range(2)]
    payloads = [json.loads(result.stdout) for result in seeded]
    assert "NOT cryptographic" in payloads[0]["generator"] and payloads[0]["counts"] == payloads[1]["counts"]
    assert sum(payloads[0]["counts"].values()) == 1000


def test_design_and_robust_write_packages(tmp_path):
    channel, package = tmp_path / "q.csv", tmp_path / "design.json"
    designed = runner.invoke(app, ["design", "--E", str(example_path("survey_E.csv")), "--out", str(channel),
                                   "--package", str(package)])
    assert designed.exit_code == 0, designed.output
    assert verify(package).exit_code == 0
    robust = tmp_path / "robust.json"
    result = runner.invoke(app, ["robust", "--data", str(example_path("robust_survey_records.csv")), "--secret", "smoker",
                                 "--public", "region", "--eps", "1", "--protocol", "grr", "--out",
                                 str(tmp_path / "r.csv"), "--package", str(robust)])
    assert result.exit_code == 0, result.output
    assert verify(robust).exit_code == 0
    assert len(json.loads(robust.read_text())["inputs"]) == 9
