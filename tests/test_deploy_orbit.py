"""Orbit packages (symmetric designs at class level): exact structural proof, samplers, CLI.

The proof's verdict and margin are compared with the exact certifier on the materialised
channel (:func:`designer.deploy.orbit.orbit_channel`) for built and forged packages; the
samplers are tested by chi-square against the channel rows; k = 43,750 packages are built,
verified and sampled without a k x m table.
"""

from __future__ import annotations

import copy
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
from designer.deploy.orbit import build_orbit_package, orbit_channel, orbit_information, orbit_utility, prove_orbit
from designer.deploy.package import SCHEMA_PATH, text_number
from designer.deploy.sampler import OrbitSampler, PackageError, PackageTampered, check_orbit_structure, package_digest
from designer.deploy.structured import verify_structured_package
from designer.deploy.vectorised import VectorisedSampler
from designer.design.symmetry import ClassStructure, design_symmetric
from deploy_fixtures import P_VALUE_FLOOR, chi_square_p_value, run_page_in_chromium
from orbit_structures import BASIC_STRUCTURES
from test_deploy_high_low import BROWSER_PAGE

CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
DRIVER = Path(__file__).resolve().parent / "js" / "sample_counts.mjs"

runner = CliRunner()

STRUCTURES = {**BASIC_STRUCTURES, "ldp5-small-eps": ClassStructure.classic(5, 0.3)}


def built(name: str, bits: int = 32) -> dict:
    return build_orbit_package(design_symmetric(STRUCTURES[name]), bits)


def forged(document: dict, changes: list, class_e=None) -> dict:
    """Changed cells ``(orbit, member, values)`` (or levels) with a consistent proof, utility and hash."""
    edited = copy.deepcopy(document)
    for orbit, member, values in changes:
        edited["orbits"][orbit][member] = [str(value) for value in values]
    if class_e is not None:
        edited["class_E"] = class_e
    structure = check_orbit_structure(edited)
    edited["certificate"] = dict(edited["certificate"], proof=list(prove_orbit(structure).proof))
    high, low = np.array(structure.high), np.array(structure.low)
    masses = [[[Fraction(int(c), 1 << edited["bits"]) for c in o[m]] for o in edited["orbits"]]
              for m in ("cells_high", "cells_low")]
    information = orbit_information(structure.sizes, structure.columns, high, low, *masses)
    edited["utility"] = orbit_utility(text_number(edited["utility"]["mutual_information_design"]), information)
    edited["sha256"] = package_digest(edited)
    return edited


def moved(document: dict, share: float) -> dict:
    """A forgery moving ``share`` of class 0's mass from its largest positive cell to the other part of that orbit."""
    orbits = document["orbits"]
    o = max(range(len(orbits)), key=lambda i: int(orbits[i]["cells_high"][0]))
    high, low = int(orbits[o]["cells_high"][0]), int(orbits[o]["cells_low"][0])
    step = int(share * high)
    if low == 0 or step == 0:
        return None
    cells_high = [int(c) for c in orbits[o]["cells_high"]]
    cells_high[0] = high - step
    cells_low = [int(c) for c in orbits[o]["cells_low"]]
    cells_low[0] = low + step
    return forged(document, [(o, "cells_high", cells_high), (o, "cells_low", cells_low)])


def raised(document: dict, share: float) -> dict:
    """The reverse forgery: high cell up, low cell down (the ratio grows past e^eps)."""
    orbits = document["orbits"]
    o = max(range(len(orbits)), key=lambda i: int(orbits[i]["cells_low"][0]) * int(orbits[i]["cells_high"][0]))
    high, low = int(orbits[o]["cells_high"][0]), int(orbits[o]["cells_low"][0])
    step = int(share * low)
    if high == 0 or step == 0:
        return None
    cells_high = [int(c) for c in orbits[o]["cells_high"]]
    cells_high[0] = high + step
    cells_low = [int(c) for c in orbits[o]["cells_low"]]
    cells_low[0] = low - step
    return forged(document, [(o, "cells_high", cells_high), (o, "cells_low", cells_low)])


def cases():
    for name in STRUCTURES:
        document = built(name, 16 if name == "uldp7" else 32)
        yield name, document
        for label, forgery in (("lowered", moved(document, 0.01)), ("raised", raised(document, 0.01)),
                               ("raised-1", raised(document, 2.0 ** -20))):
            if forgery is not None:
                yield f"{name}-{label}", forgery
        r = len(document["classes"])
        yield f"{name}-tighter-E", forged(document, [], class_e=[["1/2"] * r for _ in range(r)])


def materialised_certificate(document: dict):
    structure = check_orbit_structure(document)
    group = np.empty(structure.k, dtype=np.int64)
    for first, last, a, _ in structure.ranges:
        group[first : last + 1] = a
    levels = [[structure.levels[group[x]][group[y]] if x != y else "0" for y in range(structure.k)]
              for x in range(structure.k)]
    from designer.spec import PrivacyMatrix

    return certify(Channel(orbit_channel(document)), PrivacyMatrix(levels), exact=True)


@pytest.mark.parametrize("case", list(cases()), ids=lambda case: case[0])
def test_proof_verdict_and_margin_match_the_exact_certificate(case):
    name, document = case
    proof = verify_structured_package(document)
    certificate = materialised_certificate(document)
    assert proof.certified == certificate.certified, name
    assert proof.margin == pytest.approx(certificate.margin, rel=1e-9, abs=1e-15)


def test_forgeries_include_violations():
    verdicts = [verify_structured_package(document).certified for _, document in cases()]
    assert any(verdicts) and not all(verdicts)


def test_built_channel_is_the_design_channel_up_to_the_slack():
    """Each built row is the design's materialised row within the rounding slack ``2^-(b/2)`` (relative)."""
    design = design_symmetric(STRUCTURES["classic6"])
    package = np.array(orbit_channel(built("classic6")), dtype=float)
    assert package.shape == design.channel.matrix.shape
    np.testing.assert_allclose(package, design.channel.matrix, rtol=4 * 2.0**-16)
    np.testing.assert_array_equal(np.array(orbit_channel(built("classic6"))).sum(axis=1), [Fraction(1)] * 6)


def test_package_information_is_the_channel_information():
    from designer.utility import mutual_information

    for name in STRUCTURES:
        document = built(name)
        channel = np.array(orbit_channel(document), dtype=float)
        k = channel.shape[0]
        expected = mutual_information(np.full(k, 1.0 / k), channel)
        assert text_number(document["utility"]["mutual_information_package"]) == pytest.approx(expected, rel=1e-12)


def integer_row(row) -> tuple[list[int], int]:
    denominator = math.lcm(*(value.denominator for value in row))
    return [int(value * denominator) for value in row], denominator


@pytest.mark.parametrize("name", ["classic6", "block3-4", "high-low9"])
def test_samplers_realise_the_channel(name):
    document = built(name)
    channel = orbit_channel(document)
    stdlib = OrbitSampler(document, allow_unauthenticated=True)
    vectorised = VectorisedSampler(document, seed=7, allow_unauthenticated=True)
    for x in range(channel.shape[0]):
        row, total = integer_row(channel[x])
        assert chi_square_p_value(stdlib.counts(x, 3000), row, total) > P_VALUE_FLOOR
        assert chi_square_p_value(vectorised.counts(x, 100_000), row, total) > P_VALUE_FLOOR
        assert vectorised.support(x).tolist() == [y for y in range(len(row)) if row[y]]
        assert vectorised.support_size(x) == sum(1 for value in row if value)


def mixed_package() -> dict:
    """Orbits mixing classes of sizes 3 and 4 (T = lcm = 12), and a unit orbit of class 1 (zero members).

    Not E-LDP (class 1's own outputs are zero for class 0): a sampling fixture only.
    """
    edited = copy.deepcopy(built("classic6"))
    edited["classes"] = [[["0", "2"]], [["3", "6"]]]
    edited["class_E"] = [["1", "1"], ["1", "1"]]
    edited["orbits"] = [{"columns": "12", "high": ["1", "2"], "low": ["2", "2"],
                         "cells_high": [str(1 << 30), str(1 << 31)], "cells_low": [str(3 << 30), str(1 << 30)]},
                        {"columns": "4", "high": ["0", "0"], "low": ["0", "1"],
                         "cells_high": ["0", "0"], "cells_low": ["0", str(1 << 30)]}]
    edited["certificate"] = dict(edited["certificate"], proof=list(prove_orbit(check_orbit_structure(edited)).proof))
    edited["sha256"] = package_digest(edited)
    return edited


def test_orbits_with_mixed_classes_sample_their_cyclic_columns():
    edited = mixed_package()
    channel = orbit_channel(edited)
    assert channel.shape == (7, 16)
    vectorised = VectorisedSampler(edited, seed=3, allow_unauthenticated=True)
    stdlib = OrbitSampler(edited, allow_unauthenticated=True)
    for x in range(7):
        row, total = integer_row(channel[x])
        assert chi_square_p_value(vectorised.counts(x, 60_000), row, total) > P_VALUE_FLOOR
        assert chi_square_p_value(stdlib.counts(x, 2000), row, total) > P_VALUE_FLOOR


def test_structure_check_names_the_problem():
    document = built("block3-4")
    bad = copy.deepcopy(document)
    bad["orbits"][0]["cells_high"][0] = str(int(bad["orbits"][0]["cells_high"][0]) + 1)
    with pytest.raises(PackageError, match="cells of class 0 sum to"):
        check_orbit_structure(bad)
    bad = copy.deepcopy(document)
    bad["classes"][1] = [["4", "6"]]
    with pytest.raises(PackageError, match="symbol 3 is in no class"):
        check_orbit_structure(bad)
    bad = copy.deepcopy(document)
    bad["orbits"][0]["high"][0] = "3"
    with pytest.raises(PackageError, match="exceed the class size"):
        check_orbit_structure(bad)
    tampered = copy.deepcopy(document)
    tampered["utility"]["mutual_information_package"] = "0.5"
    with pytest.raises(PackageTampered):
        verify_structured_package(tampered)


def test_proof_work_is_bounded_up_front(monkeypatch):
    """The proof compares every class pair in every orbit: more than MAX_ORBIT_CHECKS comparisons are refused."""
    import designer.deploy.sampler as sampler

    document = built("block3-4")
    r, orbits = len(document["classes"]), len(document["orbits"])
    monkeypatch.setattr(sampler, "MAX_ORBIT_CHECKS", orbits * r * r)
    check_orbit_structure(document)  # exactly at the limit
    monkeypatch.setattr(sampler, "MAX_ORBIT_CHECKS", orbits * r * r - 1)
    with pytest.raises(PackageError, match=f"at most {orbits - 1} orbits with {r} classes"):
        check_orbit_structure(document)


@pytest.mark.parametrize("family", [["block", "--blocks", "35"], ["high-low", "--sensitive", "3125"]])
def test_cli_packages_verifies_and_samples_at_k_43750(tmp_path, family):
    package = tmp_path / "p.json"
    args = ["design", "--family", family[0], "--k", "43750", family[1], family[2], "--eps", "1",
            "--out", str(tmp_path / "d.json"), "--package", str(package), "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    document = json.loads(package.read_text())
    assert summary["package"]["sha256"] == document["sha256"] and document["kind"] == "orbit"
    from jsonschema import Draft202012Validator

    Draft202012Validator(json.loads(SCHEMA_PATH.read_text())).validate(document)
    loss = text_number(document["utility"]["relative_utility_loss"])
    assert 0 <= loss < 1e-4
    design_information = text_number(document["utility"]["mutual_information_design"])
    assert design_information == pytest.approx(summary["objective"], rel=1e-9)
    verified = runner.invoke(app, ["verify-package", str(package), "--json"])
    assert verified.exit_code == 0 and json.loads(verified.stdout)["verdict"] == "certified"
    sampled = runner.invoke(app, ["sample-package", str(package), "--input", "43749", "--n", "2000", "--seed", "1",
                                  "--json"])
    assert sampled.exit_code == 0, sampled.output
    counts = json.loads(sampled.stdout)["counts"]
    assert sum(counts.values()) == 2000
    stdlib = OrbitSampler(document, allow_unauthenticated=True)
    reports = {stdlib.sample(43749) for _ in range(200)}
    support = set(VectorisedSampler(document, seed=1, allow_unauthenticated=True).support(43749).tolist())
    assert reports <= support


def test_estimate_needs_mle_for_rank_deficient_orbit_packages(tmp_path):
    """estimate takes orbit packages through EM; the linear inverse is refused when the rank is below k (k = 6: rank 5)."""
    package = tmp_path / "p.json"
    assert runner.invoke(app, ["design", "--family", "ldp", "--k", "6", "--eps", "1", "--out", str(tmp_path / "d.csv"),
                               "--package", str(package)]).exit_code == 0
    reports = tmp_path / "r.csv"
    reports.write_text("y\n0\n1\n")
    estimated = runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports)])
    assert estimated.exit_code == 2 and "use --estimator mle" in estimated.output
    estimated = runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports),
                                    "--estimator", "mle", "--json"])
    assert estimated.exit_code == 0, estimated.output
    assert json.loads(estimated.stdout)["in_alphabet"] == 2


def test_policy_binding_and_signature(tmp_path):
    key = tmp_path / "key"
    assert runner.invoke(app, ["keygen", "--out", str(key)]).exit_code == 0
    package = tmp_path / "p.json"
    result = runner.invoke(app, ["design", "--family", "ldp", "--k", "5", "--eps", "1", "--out",
                                 str(tmp_path / "d.csv"), "--package", str(package), "--sign", str(key)])
    assert result.exit_code == 0, result.output
    policy = tmp_path / "policy.csv"
    policy.write_text("\n".join(",".join("0" if i == j else "1" for j in range(5)) for i in range(5)) + "\n")
    stricter = tmp_path / "stricter.csv"
    stricter.write_text("\n".join(",".join("0" if i == j else "0.5" for j in range(5)) for i in range(5)) + "\n")
    ok = runner.invoke(app, ["verify-package", str(package), "--E", str(policy), "--public-key", f"{key}.pub"])
    assert ok.exit_code == 0, ok.output
    weaker = runner.invoke(app, ["verify-package", str(package), "--E", str(stricter)])
    assert weaker.exit_code == 1 and "does not meet the policy" in weaker.output


def node_counts(path: Path, x: int, n: int) -> dict:
    result = subprocess.run(["node", str(DRIVER), str(CLIENT), str(path), str(x), str(n)],
                            capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


def interleaved_package() -> dict:
    """``block3-4`` with its classes in interleaved ranges (class 0 = {0, 4, 5}, class 1 = {1, 2, 3, 6})."""
    document = copy.deepcopy(built("block3-4"))
    document["classes"] = [[["0", "0"], ["4", "5"]], [["1", "3"], ["6", "6"]]]
    document["sha256"] = package_digest(document)
    return document


@pytest.mark.parametrize("document", [mixed_package(), built("block3-4"), interleaved_package()],
                         ids=["mixed", "block", "interleaved"])
def test_node_client_realises_the_channel(tmp_path, document):
    path = tmp_path / "orbit.json"
    path.write_text(json.dumps(document))
    channel = orbit_channel(document)
    for x in (0, 4):
        answer = node_counts(path, x, 200_000)
        assert answer.get("error") is None, answer
        assert answer["digest"] == document["sha256"]
        row, total = integer_row(channel[x])
        assert chi_square_p_value(answer["counts"], row, total) > P_VALUE_FLOOR


def test_node_client_rejects_tampered_and_malformed(tmp_path):
    document = mixed_package()
    tampered = copy.deepcopy(document)
    tampered["orbits"][0]["cells_high"][0], tampered["orbits"][0]["cells_low"][0] = str(2 << 30), str(2 << 30)
    malformed = copy.deepcopy(document)
    malformed["orbits"][0]["cells_high"][0] = "1"
    malformed["sha256"] = package_digest(malformed)
    uncovered = copy.deepcopy(document)
    uncovered["classes"][1] = [["4", "6"]]
    uncovered["sha256"] = package_digest(uncovered)
    path = tmp_path / "bad.json"
    for bad, error, words in [(tampered, "PackageTampered", "SHA-256"), (malformed, "PackageError", "sum to"),
                              (uncovered, "PackageError", "symbol 3 is in no class")]:
        path.write_text(json.dumps(bad))
        answer = node_counts(path, 0, 0)
        assert answer["error"] == error and words in answer["message"], answer




def test_headless_chromium_loads_and_samples_orbit(tmp_path):
    import shutil

    document = mixed_package()
    shutil.copy(CLIENT, tmp_path / "ldp-client.mjs")
    (tmp_path / "hl.json").write_text(json.dumps(document))  # the high-low test's page reads hl.json
    (tmp_path / "tampered.json").write_text(json.dumps(dict(document, class_E=[["inf", "inf"], ["inf", "inf"]])))
    (tmp_path / "index.html").write_text(BROWSER_PAGE % {"draws": 200_000})
    out = run_page_in_chromium(tmp_path)
    assert out.get("error") is None and out["kind"] == "orbit" and out["tampered"] == "PackageTampered"
    channel = orbit_channel(document)
    for x in ("4", "3"):
        row, total = integer_row(channel[int(x)])
        assert chi_square_p_value(out["counts"][x], row, total) > P_VALUE_FLOOR


def test_one_map_from_symbols_to_class_and_rank():
    """Classes split into interleaved ranges: the structure's map, the exact channel and the vectorised law
    agree with the contiguous package (a symbol's row is that of its class and rank there)."""
    plain, document = built("block3-4"), interleaved_package()  # plain: class 0 = symbols 0..2, class 1 = 3..6
    structure = check_orbit_structure(document)
    expected = [(0, 0), (1, 0), (1, 1), (1, 2), (0, 1), (0, 2), (1, 3)]
    assert [structure.locate(x) for x in range(7)] == expected
    index = tuple(np.array(column) for column in structure.range_index)
    classes, ranks = structure.locate(np.arange(7), lambda x: np.searchsorted(index[0], x, side="right"), index)
    assert list(zip(classes.tolist(), ranks.tolist())) == expected
    same = [0, 3, 4, 5, 1, 2, 6]  # the contiguous package's symbol of the same class and rank
    channel = orbit_channel(document)
    assert (channel == orbit_channel(plain)[same]).all()
    vectorised = VectorisedSampler(document, seed=2, allow_unauthenticated=True)
    for x in range(7):
        assert vectorised.support(x).tolist() == np.flatnonzero(channel[x] != 0).tolist()


def test_the_policy_check_reuses_the_verified_structure(monkeypatch):
    import designer.deploy.sampler as sampler_module
    from designer.deploy.policy import check_policy
    from designer.spec import PrivacyMatrix

    document = built("block3-4")
    verification = verify_structured_package(document)
    assert verification.structure == check_orbit_structure(document)
    block = np.repeat([0, 1], [3, 4])
    inside = block[:, None] == block[None, :]

    def policy(level: float) -> PrivacyMatrix:
        return PrivacyMatrix(np.where(np.eye(7, dtype=bool), 0.0, np.where(inside, level, np.inf)))

    parsed = check_policy(document, policy(1.5))
    assert parsed.n_weaker == 3 * 2 + 4 * 3 and not parsed.met  # the pairs inside the blocks: 2 > 1.5
    assert check_policy(document, policy(2.0)).met

    def parse_again(_document):
        raise AssertionError("the policy check parsed the package again")

    monkeypatch.setattr(sampler_module, "check_orbit_structure", parse_again)
    assert check_policy(document, policy(1.5), verification) == parsed


def test_the_policy_check_refuses_a_verification_of_another_package():
    """A verification is reused only for the package it proved: another package's would check the wrong E."""
    from designer.deploy.policy import check_policy
    from designer.spec import PrivacyMatrix

    document, other = built("block3-4"), built("classic6")
    block = np.repeat([0, 1], [3, 4])
    policy = PrivacyMatrix(np.where(np.eye(7, dtype=bool), 0.0, np.where(block[:, None] == block[None, :], 2.0, np.inf)))
    assert check_policy(document, policy, verify_structured_package(document)).met
    with pytest.raises(PackageError, match="another package"):
        check_policy(document, policy, verify_structured_package(other))


def test_design_package_refuses_a_design_with_too_many_orbits(tmp_path):
    """Block 300 x 2: 300 support orbits over 300 classes, above most_orbits(300) = 2^21 // 300^2 = 23.

    build_orbit_package says so before rounding; design --package exits 2 with that one line and writes no file.
    """
    from designer.deploy.sampler import most_orbits

    assert most_orbits(300) == 23
    design = design_symmetric(ClassStructure.block([2] * 300, 1.0), materialise=False)
    assert len(design.support) == 300
    with pytest.raises(ValueError, match="300 support orbits over 300 classes; an orbit package holds at most 23"):
        build_orbit_package(design)
    result = runner.invoke(app, ["design", "--family", "block", "--k", "600", "--blocks", "300", "--eps", "1",
                                 "--out", str(tmp_path / "d.json"), "--package", str(tmp_path / "p.json")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "holds at most 23" in lines[0]
    assert "Traceback" not in result.output and list(tmp_path.iterdir()) == []
