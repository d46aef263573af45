"""Packages bound to an author and a policy: Ed25519 signatures, pinned hashes, policy E (Python clients and CLI).

Attacks tested: a forged table with a recomputed hash, the same re-signed with another key,
a package whose E was weakened to inf with a matching (non-private) table, and stored
numbers (tight E, utility) edited to claim no loss. Node and Chromium: tests/test_deploy_trust_js.py.
"""

import base64
import json
import math
import os
import stat
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.channel import Channel
from designer.cli import app
from designer.deploy.package import build_package, verify_package
from designer.deploy.policy import check_policy, level_exceeds
from designer.deploy.sampler import (
    PackageError,
    PackageTampered,
    PackageUntrusted,
    TableSampler,
    authenticate,
    load_sampler,
    package_digest,
    parse_package,
)
from designer.deploy.signing import generate_key_files, read_private_key, sign_package
from designer.deploy.structured import build_hadamard_package
from designer.deploy.table import deployable_table
from designer.deploy.vectorised import VectorisedSampler
from designer.exact import ExactEpsilon
from designer.examples import example_path
from designer.spec import PrivacyMatrix
from deploy_fixtures import run_stdlib_client_alone

runner = CliRunner()
POLICY = example_path("survey_E.csv")  # E = [[0, inf], [log(3), 0]]


def invoke(*arguments):
    return runner.invoke(app, [str(argument) for argument in arguments])


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("keys")
    made = {}
    for name in ("author", "other"):
        private, public, raw = generate_key_files(folder / name)
        made[name] = {"private": private, "public": public, "raw": raw, "b64": public.read_text().strip()}
    return made


@pytest.fixture(scope="module")
def signed(tmp_path_factory, keys) -> Path:
    out = tmp_path_factory.mktemp("signed") / "mech.json"
    result = invoke("package", "--E", POLICY, "--channel", example_path("survey_mangat_Q.csv"), "--out", out,
                    "--sign", keys["author"]["private"])
    assert result.exit_code == 0, result.output
    assert "signed (Ed25519) by key" in result.output
    return out


def forged_table(document: dict) -> dict:
    """Row "no" moved to (0.8, 0.2): the ratio 1 / 0.2 = 5 on output "yes" breaks E = log(3); hash recomputed."""
    forged = json.loads(json.dumps(document))
    forged["table"][0] = ["3435973837", "858993459"]
    forged["sha256"] = package_digest(forged)
    return forged


def weakened(document: dict) -> dict:
    """E weakened to inf everywhere with a matching table (the identity: reports the input), re-certified and re-hashed."""
    k = len(document["inputs"])
    channel = Channel(np.eye(k), document["inputs"], document["outputs"])
    privacy = PrivacyMatrix([["0" if x == y else "inf" for y in range(k)] for x in range(k)], document["inputs"])
    return build_package(deployable_table(channel, privacy))


def test_keygen_writes_a_private_key_0600_and_never_overwrites(tmp_path):
    result = invoke("keygen", "--out", tmp_path / "k", "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    private, public = tmp_path / "k", tmp_path / "k.pub"
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert base64.b64decode(public.read_text()) == base64.b64decode(answer["public_key_base64"])
    seed_and_public = base64.b64decode(private.read_text())  # libsodium's layout: seed, then public key
    assert len(seed_and_public) == 64 and seed_and_public[32:] == base64.b64decode(public.read_text())
    before = private.read_bytes()
    again = invoke("keygen", "--out", private)
    assert again.exit_code == 2 and "never overwrites" in again.output and private.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["k", "k.pub"]  # no temporary file left


def test_signature_covers_the_canonical_form_and_leaves_the_hash_alone(signed, keys):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    document = json.loads(signed.read_text())
    unsigned = {key: value for key, value in document.items() if key != "signature"}
    assert package_digest(unsigned) == document["sha256"] == package_digest(document)
    body = {key: value for key, value in document.items() if key not in ("sha256", "signature")}
    message = json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")
    Ed25519PublicKey.from_public_bytes(keys["author"]["raw"]).verify(
        base64.b64decode(document["signature"]["value"]), message)  # independent verification: raises if wrong
    assert document["signature"]["public_key"] == keys["author"]["b64"]


def test_verify_package_trust_options(signed, keys, tmp_path):
    document = json.loads(signed.read_text())
    ok = invoke("verify-package", signed, "--public-key", keys["author"]["public"], "--E", POLICY, "--json")
    assert ok.exit_code == 0, ok.output
    answer = json.loads(ok.stdout)
    assert answer["trust"].startswith("Ed25519 signature by") and answer["policy"]["met"] is True
    assert answer["policy"]["policy_margin"] is None  # implied by the package's own certificate: E is no weaker
    assert invoke("verify-package", signed, "--sha256", document["sha256"]).exit_code == 0
    other = invoke("verify-package", signed, "--public-key", keys["other"]["public"])
    assert other.exit_code == 1 and "not by the trusted key" in other.output
    pinned = invoke("verify-package", signed, "--sha256", "0" * 64)
    assert pinned.exit_code == 1 and "is not the pinned" in pinned.output
    unsigned = tmp_path / "unsigned.json"
    unsigned.write_text(json.dumps({key: value for key, value in document.items() if key != "signature"}))
    refused = invoke("verify-package", unsigned, "--public-key", keys["author"]["public"])
    assert refused.exit_code == 1 and "not signed" in refused.output
    bad = invoke("verify-package", signed, "--sha256", "xyz")
    assert bad.exit_code == 2 and "64 hex digits" in bad.output


def test_forged_rehashed_and_resigned_packages_are_refused(signed, keys, tmp_path):
    document = json.loads(signed.read_text())
    forged = forged_table(document)  # keeps the author's signature, which no longer matches
    resigned = sign_package(forged, read_private_key(keys["other"]["private"]))
    for name, candidate, message in (("forged", forged, "does not match the content"),
                                     ("resigned", resigned, "not by the trusted key")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(candidate))
        result = invoke("verify-package", path, "--public-key", keys["author"]["public"])
        assert result.exit_code == 1, result.output
        for client in (lambda: TableSampler(candidate, public_key=keys["author"]["b64"]),
                       lambda: VectorisedSampler(candidate, public_key=keys["author"]["raw"])):
            with pytest.raises(PackageUntrusted, match=message):
                client()
        sampled = invoke("sample-package", path, "--input", "no", "--n", "10")
        assert sampled.exit_code == 1 and "not E-LDP" in sampled.output  # re-verified before any draw
    with pytest.raises(PackageUntrusted, match="is not the pinned"):
        load_sampler(forged, sha256=document["sha256"])


def test_clients_refuse_a_package_with_neither_key_nor_pin(signed, keys):
    document = json.loads(signed.read_text())
    for client in (TableSampler, load_sampler, VectorisedSampler):
        with pytest.raises(PackageUntrusted, match="no trusted public key or pinned SHA-256"):
            client(document)
    assert TableSampler(document, allow_unauthenticated=True).trust == "unauthenticated (the caller opted out)"
    both = authenticate(document, keys["author"]["b64"], document["sha256"])
    assert both.startswith("pinned SHA-256 and Ed25519 signature")
    counts = VectorisedSampler(document, seed=1, public_key=keys["author"]["b64"]).counts(0, 20_000)
    assert counts.sum() == 20_000 and abs(counts[0] / 20_000 - 2 / 3) < 0.02


def test_stdlib_client_pinned_use_loads_only_the_standard_library(tmp_path, signed):
    document = json.loads(signed.read_text())
    code = ("from sampler import TableSampler, PackageUntrusted\n"
            f"m = TableSampler.from_file('mech.json', sha256='{document['sha256']}')\nprint(m.trust)\n"
            "try:\n    TableSampler.from_file('mech.json')\nexcept PackageUntrusted as error:\n    print('refused')\n"
            "import sys\nprint('cryptography' in sys.modules)")
    printed, modules = run_stdlib_client_alone(tmp_path, document, "mech.json", code)
    assert printed == ["pinned SHA-256", "refused", "False"] and modules == "[]"


def test_policy_weakened_package_passes_its_own_e_but_not_the_policy(tmp_path, signed):
    bad = weakened(json.loads(signed.read_text()))
    path = tmp_path / "weak.json"
    path.write_text(json.dumps(bad))
    assert verify_package(bad).certified  # the attack: certified against its own (weakened) E
    assert invoke("verify-package", path).exit_code == 0
    result = invoke("verify-package", path, "--E", POLICY)
    assert result.exit_code == 1
    assert "E[1, 0] = inf > policy log(3)" in result.output and "the table breaks the policy" in result.output
    sampled = invoke("sample-package", path, "--input", "no", "--n", "10", "--E", POLICY)
    assert sampled.exit_code == 1 and "weaker than the policy" in sampled.output
    check = check_policy(bad, PrivacyMatrix([["0", "inf"], ["log(3)", "0"]]))
    assert check.n_weaker == 1 and not check.certificate.certified and check.certificate.violations[0].x == 1


def test_structured_packages_against_a_policy(tmp_path):
    document = build_hadamard_package([2, 3], "log(3)", 16)
    path = tmp_path / "hr.json"
    path.write_text(json.dumps(document))
    same_block = np.repeat([0, 1], [2, 3])
    for level, expected in (("log(3)", 0), ("log(4)", 0), ("1.0986", 1), ("log(3)", 1)):
        levels = [["0" if x == y else (level if same_block[x] == same_block[y] else "inf") for y in range(5)]
                  for x in range(5)]
        if expected and level == "log(3)":
            levels[0][3] = "5"  # the package's E is inf across blocks: weaker than any finite policy level
        policy = tmp_path / "policy.csv"
        policy.write_text("\n".join(",".join(row) for row in levels) + "\n")
        result = invoke("verify-package", path, "--E", policy)
        assert result.exit_code == expected, result.output
        sampled = invoke("sample-package", path, "--input", "1", "--n", "100", "--E", policy)
        assert sampled.exit_code == expected, sampled.output
    wrong_size = tmp_path / "small.csv"
    wrong_size.write_text("0,1\n1,0\n")
    result = invoke("verify-package", path, "--E", wrong_size)
    assert result.exit_code == 2 and "2 x 2 but the package has 5 inputs" in result.output


@pytest.mark.parametrize(
    "level, bound, exceeds",
    [("log(3)", "1.0986122886681098", False),  # the float is 1.098612288668109782... > log 3 = 1.0986122886681096...
     ("log(3)", "1.0986122886681096", True),   # 1.09861228866810960 < log 3 = 1.09861228866810969...
     ("1.0986122886681098", "log(3)", True), ("log(3)", "log(3)", False), ("log(9/3)", "log(3)", False),
     ("inf", "inf", False), ("inf", "1e308", True), ("1e308", "inf", False), ("0", "0", False), ("1/3", "1/4", True),
     ("log(1)", "0", False)],
)
def test_level_exceeds_is_exact(level, bound, exceeds):
    from decimal import Decimal, localcontext

    assert level_exceeds(ExactEpsilon.parse(level), ExactEpsilon.parse(bound)) is exceeds

    def value(text):  # independent: 50 significant digits with the standard library's decimal
        if text == "inf":
            return Decimal("Infinity")
        inner = Fraction(text[4:-1] if text.startswith("log(") else text)
        number = Decimal(inner.numerator) / Decimal(inner.denominator)
        return number.ln() if text.startswith("log(") else number

    with localcontext() as context:
        context.prec = 50
        assert (value(level) > value(bound)) is exceeds


def test_stored_numbers_are_recomputed(tmp_path, signed):
    document = json.loads(signed.read_text())
    document.pop("signature")
    for member, edit in (("tight_E", lambda d: d["certificate"]["tight_E"][1].__setitem__(0, "0.5")),
                         ("relative_utility_loss", lambda d: d["utility"].__setitem__("relative_utility_loss", "0")),
                         ("mutual_information_table", lambda d: d["utility"].update(
                             mutual_information_table=d["utility"]["mutual_information_channel"],
                             relative_utility_loss="0.0")),
                         ("mixing_weight", lambda d: d["utility"].__setitem__("mixing_weight", "1/4"))):
        edited = json.loads(json.dumps(document))
        edit(edited)
        edited["sha256"] = package_digest(edited)
        with pytest.raises(PackageTampered, match=member):
            verify_package(edited)
    hadamard = build_hadamard_package([3], "1")
    hadamard["utility"]["max_total_variation"] = "0.0"
    hadamard["sha256"] = package_digest(hadamard)
    path = tmp_path / "hr.json"
    path.write_text(json.dumps(hadamard))
    result = invoke("verify-package", path)
    assert result.exit_code == 1 and "utility.max_total_variation" in result.output


@pytest.mark.parametrize("text, member", [('"bits": 32', '"bits": 32.0'), ('"schema_version": 1', '"schema_version": 1.0'),
                                          ('"bits": 32', '"bits": 3.2e1')])
def test_numbers_written_as_floats_are_refused(tmp_path, signed, text, member):
    source = signed.read_text()
    assert text in source
    path = tmp_path / "float.json"
    path.write_text(source.replace(text, member))
    result = invoke("verify-package", path)
    assert result.exit_code == 2 and "without a fraction or an exponent" in result.output
    assert len(result.output.strip().splitlines()) == 1
    with pytest.raises(PackageError, match="without a fraction or an exponent"):
        parse_package(path.read_text())


@pytest.mark.parametrize("label, message", [("x" * 100_000, "more than 1000"), ("\ud800", "lone surrogate")])
def test_long_and_invalid_labels_are_refused_up_front(tmp_path, signed, label, message):
    document = json.loads(signed.read_text())
    document.pop("signature")
    document["inputs"][0] = label
    document["sha256"] = package_digest(document)
    path = tmp_path / "label.json"
    path.write_text(json.dumps(document))  # ensure_ascii: the lone surrogate is written as \ud800
    for command in (["verify-package", path], ["sample-package", path, "--input", "yes", "--n", "5"]):
        result = invoke(*command)
        assert result.exit_code == 2 and message in result.output and result.stdout == ""
        assert len(result.output.strip().splitlines()) == 1


def test_sign_works_for_structured_packages(tmp_path, keys):
    out = tmp_path / "hl.json"
    result = invoke("package-high-low", "--k", 50, "--sensitive", "0-9", "--eps", "1", "--out", out,
                    "--sign", keys["author"]["private"])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert load_sampler(document, public_key=keys["author"]["b64"]).trust.startswith("Ed25519")
    with pytest.raises(PackageUntrusted):
        load_sampler(document, public_key=keys["other"]["b64"])
    ok = invoke("sample-package", out, "--input", 20, "--n", 1000, "--public-key", keys["author"]["public"], "--json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["trust"].startswith("Ed25519")
    missing = invoke("package-hadamard", "--block-sizes", "3", "--eps", "1", "--out", tmp_path / "x.json",
                     "--sign", tmp_path / "nokey")
    assert missing.exit_code == 2 and "cannot read the key" in missing.output and not (tmp_path / "x.json").exists()
    assert math.isfinite(float(document["certificate"]["margin"]))


def test_design_package_is_signed_with_sign(tmp_path, keys):
    package = tmp_path / "design.json"
    result = invoke("design", "--E", POLICY, "--out", tmp_path / "Q.csv", "--package", package,
                    "--sign", keys["author"]["private"])
    assert result.exit_code == 0, result.output
    ok = invoke("verify-package", package, "--public-key", keys["author"]["public"], "--E", POLICY)
    assert ok.exit_code == 0 and "Ed25519 signature by" in ok.output
    assert invoke("verify-package", package, "--public-key", keys["other"]["public"]).exit_code == 1


def test_sample_package_reverifies_a_structured_package_before_drawing(tmp_path):
    from designer.deploy.structured import _prove_block, hadamard_utility

    document = build_hadamard_package([3, 5], "1")
    forged = dict(document, coin="1")  # S_x the unlikely half: ratio 2^32 - 1 > e
    level = ExactEpsilon.parse("1")
    forged["certificate"] = dict(forged["certificate"], proof=list(_prove_block([3, 5], level, 1, 32).proof))
    forged["utility"] = hadamard_utility(level, 1, 32)
    forged["sha256"] = package_digest(forged)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(forged))
    assert load_sampler(forged, allow_unauthenticated=True).coin == 1  # the client alone cannot tell
    result = invoke("sample-package", path, "--input", "4", "--n", "10")
    assert result.exit_code == 1 and "not sampled" in result.output and "same block" in result.output
    assert result.stdout == ""


def test_signed_packages_match_the_schema(signed, keys):
    from jsonschema import Draft202012Validator

    from designer.deploy.package import SCHEMA_PATH

    validator = Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    validator.validate(json.loads(signed.read_text()))
    validator.validate(sign_package(build_hadamard_package([3, 5], "1"), read_private_key(keys["author"]["private"])))
    bad = json.loads(signed.read_text())
    bad["inputs"][0] = "x" * 1001
    assert not validator.is_valid(bad)


def test_policy_message_prints_a_level_beyond_double_exactly(signed):
    """The identity table breaks a policy level of 1e400 (beyond the double range, held exactly)."""
    check = check_policy(weakened(json.loads(signed.read_text())), PrivacyMatrix([["0", "inf"], ["1e400", "0"]]))
    message = check.failure()
    assert "E[1, 0] = inf > policy ~1.0000000000000000e+400" in message, message
    assert "x=1, x'=0, witness y=1: log-ratio inf > policy = ~1.0000000000000000e+400" in message, message
    assert "1.79769e+308" not in message and len(message) < 300
