"""High-low Hadamard response packages (Section 5.1, channel (13)-(14)): exact proof, exact samplers.

The proof's verdict and margin are checked against an independent computation: the
deployed channel materialised in Fractions from the package's integer thresholds (with
Sylvester signs from ``solvers.hadamard``, not the samplers' parity trick) and certified
exactly against the high-low E of Definition 3. The stdlib, vectorised and Node samplers
pass a chi-square test against that channel; a channel with 3% of a row moved fails it.
"""

import json
import math
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.certify import certify
from designer.channel import Channel
from designer.cli import app
from designer.deploy.package import SCHEMA_PATH
from designer.deploy.sampler import HighLowHadamardSampler, PackageTampered, package_digest
from designer.deploy.structured import build_high_low_package, parse_symbols, verify_structured_package
from designer.deploy.vectorised import VectorisedSampler
from designer.mechanisms import HighLowHadamardResponse
from designer.spec import PrivacyMatrix
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, run_page_in_chromium, run_stdlib_client_alone, wrong_row
from solvers.hadamard import hadamard_sign

runner = CliRunner()
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
DRIVER = Path(__file__).resolve().parent / "js" / "sample_counts.mjs"
K, SENSITIVE = 12, [1, 4, 5, 9, 10]  # s = 5, S = 8, t = 7: 15 outputs


def deployed_rows(document: dict) -> list[list[int]]:
    """The deployed channel times ``S 2^b`` (integers), computed from the thresholds alone."""
    k, bits = int(document["k"]), document["bits"]
    sensitive = [int(x) for x in document["sensitive"]]
    coin, keep, total = int(document["coin"]), int(document["keep"]), 1 << bits
    size = 1 << len(sensitive).bit_length()
    others = [x for x in range(k) if x not in sensitive]
    rows = []
    for x in range(k):
        row = [0] * (size + len(others))
        if x in sensitive:
            signs = hadamard_sign(sensitive.index(x) + 1, np.arange(size))
            row[:size] = [2 * coin if sign > 0 else 2 * (total - coin) for sign in signs]  # eq. (13)
        else:
            row[:size] = [total - keep] * size  # eq. (14)
            row[size + others.index(x)] = size * keep
        rows.append(row)
    return rows


def high_low_privacy(k: int, sensitive: list[int], epsilon: str) -> PrivacyMatrix:
    """PrivacyMatrix.high_low's pattern (Definition 3) with the exact level written as text."""
    pattern = PrivacyMatrix.high_low(k, sensitive, 1.0).epsilon
    levels = np.where(pattern == 1.0, epsilon, np.where(pattern == 0, "0", "inf"))
    return PrivacyMatrix(levels.tolist())


def exact_certificate(document: dict):
    rows = deployed_rows(document)
    scale = sum(rows[0])
    channel = Channel([[Fraction(value, scale) for value in row] for row in rows])
    sensitive = [int(x) for x in document["sensitive"]]
    return certify(channel, high_low_privacy(int(document["k"]), sensitive, document["epsilon"]), exact=True)


def forged(document: dict, **changes) -> dict:
    """Changed thresholds with a consistent proof text, utility and hash, as a forger would write them."""
    from designer.deploy.structured import _prove_high_low, high_low_utility
    from designer.exact import ExactEpsilon

    edited = dict(document, **{key: str(value) for key, value in changes.items()})
    sensitive = [int(x) for x in edited["sensitive"]]
    level, coin, keep = ExactEpsilon.parse(edited["epsilon"]), int(edited["coin"]), int(edited["keep"])
    proof = _prove_high_low(int(edited["k"]), sensitive, level, coin, keep, edited["bits"]).proof
    edited["certificate"] = dict(edited["certificate"], proof=list(proof))
    edited["utility"] = high_low_utility(level, coin, keep, edited["bits"], len(sensitive) < int(edited["k"]))
    edited["sha256"] = package_digest(edited)
    return edited


def cases():
    """Built packages and forged (re-hashed) thresholds, s = 1, s = k and in between, b = 8 and 32."""
    for k, sensitive, epsilon, bits in [(K, SENSITIVE, "log(3)", 32), (6, [2], "1", 8), (5, range(5), "1/2", 16),
                                        (9, [0, 8], "log(5/2)", 8)]:
        document = build_high_low_package(k, sensitive, epsilon, bits)
        total, coin, keep = 1 << bits, int(document["coin"]), int(document["keep"])
        yield document
        yield forged(document, coin=coin + 1)
        yield forged(document, keep=keep + 1)
        yield forged(document, keep=max(keep - 3, 0))
        yield forged(document, coin=1)  # S_x the unlikely half: the ratio is (2^b - T) / T
        yield forged(document, coin=total // 2, keep=0)
        yield forged(document, keep=total - 1)


@pytest.mark.parametrize("document", list(cases()), ids=lambda d: f"k{d['k']}-T{d['coin']}-K{d['keep']}")
def test_proof_verdict_and_margin_match_the_exact_certificate(document):
    proof = verify_structured_package(document)
    certificate = exact_certificate(document)
    assert proof.certified == certificate.certified
    if math.isfinite(certificate.margin):
        assert proof.margin == pytest.approx(certificate.margin, rel=1e-9, abs=1e-15)
    else:
        assert proof.margin == certificate.margin  # no constrained pair with a finite ratio


def test_built_package_is_channel_13_14_at_its_rational_level():
    document = build_high_low_package(K, SENSITIVE, "1")
    coin, total = int(document["coin"]), 2**32
    assert int(document["keep"]) == 2 * coin - total
    paper = HighLowHadamardResponse(K, SENSITIVE, f"log({coin}/{total - coin})").channel().matrix
    rows = deployed_rows(document)
    scale = sum(rows[0])
    assert [[Fraction(value, scale) for value in row] for row in rows] == [[Fraction(v) for v in row] for row in paper]
    assert Fraction(coin, total - coin) < Fraction(math.e) < Fraction(coin + 1, total - coin - 1)


def check_fit(counts, row, draws: int):
    scale = sum(row)
    assert sum(counts) == draws
    assert chi_square_p_value(counts, row, scale) > P_VALUE_FLOOR
    assert chi_square_p_value(counts, wrong_row(row, scale, 0.03), scale) < 1e-9


@pytest.fixture(scope="module")
def package() -> dict:
    return build_high_low_package(K, SENSITIVE, "1")


def test_stdlib_sampler_realises_the_deployed_channel(package):
    sampler = HighLowHadamardSampler(package, sha256=package["sha256"])
    rows = deployed_rows(package)
    for x in (4, 0, 11):  # sensitive, non-sensitive first and last
        check_fit(sampler.counts(x, 60_000), rows[x], 60_000)


def test_stdlib_client_file_samples_high_low_alone(tmp_path, package):
    (sampled,), modules = run_stdlib_client_alone(
        tmp_path, package, "hl.json",
        "from sampler import load_sampler, parse_package\nm = load_sampler(parse_package(open('hl.json').read()), allow_unauthenticated=True)\n"
        "print(type(m).__name__, sorted({m.sample(0) for _ in range(2000)}))",
    )
    assert sampled == "HighLowHadamardSampler [0, 1, 2, 3, 4, 5, 6, 7, 8]" and modules == "[]"  # [S] and own output 8


@pytest.mark.parametrize("seed", [None, 5])
def test_vectorised_sampler_realises_the_deployed_channel(package, seed):
    sampler = VectorisedSampler(package, seed=seed, sha256=package["sha256"])
    inputs = np.repeat(np.arange(K), 200_000)
    reports = sampler.sample(inputs)
    rows = deployed_rows(package)
    for x in (1, 10, 0, 6):
        check_fit(np.bincount(reports[inputs == x], minlength=sampler.n_outputs), rows[x], 200_000)
        assert set(np.flatnonzero(np.array(rows[x]))) == set(sampler.support(x).tolist())
    assert sampler.inputs is None and sampler.kind == "high-low-hadamard"


@pytest.mark.parametrize("kind", ["high-low-hadamard", "block-hadamard"])
def test_vectorised_look_up_tables_and_binary_search_agree(package, monkeypatch, kind):
    """Above LOOKUP_SYMBOLS symbols the laws search per report: same seed, same reports."""
    from designer.deploy import vectorised
    from designer.deploy.structured import build_hadamard_package

    document = package if kind == "high-low-hadamard" else build_hadamard_package([3, 5, 1, 7], "1")
    tabled = VectorisedSampler(document, seed=8, allow_unauthenticated=True)
    inputs = np.random.default_rng(2).integers(0, tabled.k, size=50_000)
    expected = tabled.sample(inputs)
    monkeypatch.setattr(vectorised, "LOOKUP_SYMBOLS", 0)
    searched = VectorisedSampler(document, seed=8, allow_unauthenticated=True)
    assert tabled._law._positions.table is not None and searched._law._positions.table is None
    assert np.array_equal(searched.sample(inputs), expected)


def test_node_sampler_realises_the_deployed_channel(tmp_path, package):
    path = tmp_path / "high-low.json"
    path.write_text(json.dumps(package))
    rows = deployed_rows(package)
    for x in (5, 3):
        result = subprocess.run(["node", str(DRIVER), str(CLIENT), str(path), str(x), "400000"],
                                capture_output=True, text=True, timeout=120, check=True)
        answer = json.loads(result.stdout)
        assert answer["digest"] == package["sha256"]
        check_fit(answer["counts"], rows[x], 400_000)


def test_node_client_rejects_tampered_and_malformed(tmp_path, package):
    path = tmp_path / "bad.json"
    for document, error in [(dict(package, keep="0"), "PackageTampered"),
                            (dict(package, sensitive=["4", "1"]), "PackageError"),
                            (dict(package, keep=str(2**32)), "PackageError")]:
        path.write_text(json.dumps(document))
        result = subprocess.run(["node", str(DRIVER), str(CLIENT), str(path), "0", "0"],
                                capture_output=True, text=True, timeout=60, check=True)
        assert json.loads(result.stdout)["error"] == error


def test_cli_writes_verifies_and_samples(tmp_path):
    from jsonschema import Draft202012Validator

    out = tmp_path / "hl.json"
    written = runner.invoke(app, ["package-high-low", "--k", "100000", "--sensitive", "0-99,500", "--eps", "log(3)",
                                  "--out", str(out)])
    assert written.exit_code == 0, written.output
    document = json.loads(out.read_text())
    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    assert document["coin"] == str(3 * 2**30) and document["keep"] == str(2**31)  # (e-1)/(e+1) = 1/2 at e = 3
    verified = runner.invoke(app, ["verify-package", str(out), "--json"])
    assert verified.exit_code == 0 and json.loads(verified.stdout)["verdict"] == "certified"
    sampled = runner.invoke(app, ["sample-package", str(out), "--input", "700", "--n", "4000", "--seed", "1", "--json"])
    counts = json.loads(sampled.stdout)["counts"]
    assert list(counts)[:128] == [str(y) for y in range(128)] and list(counts)[-1] == str(128 + 700 - 101)
    assert sum(counts.values()) == 4000


def test_cli_rejects_tampered_forged_and_malformed(tmp_path, package):
    path = tmp_path / "hl.json"
    path.write_text(json.dumps(dict(package, keep=str(int(package["keep"]) + 1))))
    tampered = runner.invoke(app, ["verify-package", str(path)])
    assert tampered.exit_code == 1 and tampered.stderr.startswith("rejected: ") and "SHA-256" in tampered.stderr
    assert runner.invoke(app, ["sample-package", str(path), "--input", "0"]).exit_code == 1
    with pytest.raises(PackageTampered):
        HighLowHadamardSampler(json.loads(path.read_text()), allow_unauthenticated=True)
    total = 2**32
    path.write_text(json.dumps(forged(package, keep=int(package["keep"]) + total // 16)))
    violated = runner.invoke(app, ["verify-package", str(path)])
    assert violated.exit_code == 1 and "x in A, x' not in A" in violated.stderr and "> exp(1)" in violated.stderr
    assert len(violated.stderr.strip().splitlines()) == 1
    for document in (dict(package, keep="1.5"), dict(package, sensitive=[]), dict(package, k="12", sensitive=["12"]),
                     {key: value for key, value in package.items() if key != "keep"}):
        path.write_text(json.dumps(document))
        bad = runner.invoke(app, ["verify-package", str(path)])
        assert bad.exit_code == 2 and bad.stderr.startswith("error: ") and len(bad.stderr.strip().splitlines()) == 1
    for arguments in (["--k", "10", "--sensitive", "3-x"], ["--k", "10", "--sensitive", "10"],
                      ["--k", "10", "--sensitive", "1", "--eps", "0"]):
        arguments = arguments + ([] if "--eps" in arguments else ["--eps", "1"])
        result = runner.invoke(app, ["package-high-low", *arguments, "--out", str(tmp_path / "x.json")])
        assert result.exit_code == 2 and result.stderr.startswith("error: "), result.output
        assert not (tmp_path / "x.json").exists()


def test_parse_symbols():
    assert parse_symbols("0-3, 7,9-9,2") == [0, 1, 2, 3, 7, 9]
    for text in ("5-3", "-1", "a", "0-" + str(2**31)):
        with pytest.raises(ValueError):
            parse_symbols(text)


BROWSER_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>ldp-client high-low test</title></head>
<body><pre id="result">pending</pre>
<script type="module">
import { loadPackage } from "./ldp-client.mjs";
const out = {};
try {
  const mechanism = await loadPackage(await (await fetch("hl.json")).text(), { allowUnauthenticated: true });
  out.kind = mechanism.kind;
  out.counts = {};
  for (const x of [4, 3]) out.counts[x] = mechanism.counts(x, %(draws)d);
} catch (error) { out.error = error.constructor.name + ": " + error.message; }
try { await loadPackage(await (await fetch("tampered.json")).text(), { allowUnauthenticated: true }); out.tampered = "accepted"; }
catch (error) { out.tampered = error.constructor.name; }
document.getElementById("result").textContent = JSON.stringify(out);
</script></body></html>
"""


def test_headless_chromium_loads_and_samples_high_low(tmp_path, package):
    import shutil

    shutil.copy(CLIENT, tmp_path / "ldp-client.mjs")
    (tmp_path / "hl.json").write_text(json.dumps(package))
    (tmp_path / "tampered.json").write_text(json.dumps(dict(package, keep="0")))
    (tmp_path / "index.html").write_text(BROWSER_PAGE % {"draws": 300_000})
    out = run_page_in_chromium(tmp_path)
    assert out.get("error") is None and out["kind"] == "high-low-hadamard" and out["tampered"] == "PackageTampered"
    rows = deployed_rows(package)
    for x in ("4", "3"):
        check_fit(out["counts"][x], rows[int(x)], 300_000)
