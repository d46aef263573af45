"""Trusted keys and pinned hashes in the JavaScript client (Node and headless Chromium) and the stdlib client.

The same cases run in the three clients and must get the same verdicts: a signed package
with the author's key or its pinned hash loads; no key and no pin, a forged table with a
recomputed hash, the same re-signed with another key, a policy-weakened package (E = inf,
identity table) signed by another key, numbers written as floats, a lone-surrogate or a
100,000-character label are refused; counts over 2^31 outputs are refused (not a crash).
"""

import json

import numpy as np
import pytest
from deploy_fixtures import run_cases_in_chromium, run_cases_in_node

from designer.channel import Channel
from designer.deploy.package import build_package
from designer.deploy.sampler import PackageError, PackageUntrusted, load_sampler, package_digest, parse_package
from designer.deploy.signing import generate_key_files, read_private_key, sign_package
from designer.deploy.structured import build_high_low_package
from designer.deploy.table import deployable_table
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix
from designer.spec import PrivacyMatrix

#: Expected verdict per case: "ok" or the error class (the message fragment both languages must show).
EXPECTED = {
    "signed, trusted key": ("ok", "Ed25519 signature by"),
    "signed, pinned hash": ("ok", "pinned SHA-256"),
    "no key, no pin": ("PackageUntrusted", "no trusted public key or pinned SHA-256"),
    "explicit opt-out": ("ok", "unauthenticated (the caller opted out)"),
    "forged table, re-hashed": ("PackageUntrusted", "does not match the content"),
    "forged table, pinned": ("PackageUntrusted", "is not the pinned"),
    "forged table, re-signed by another key": ("PackageUntrusted", "not by the trusted key"),
    "policy weakened, signed by another key": ("PackageUntrusted", "not by the trusted key"),
    "policy weakened, pinned": ("PackageUntrusted", "is not the pinned"),
    "unsigned, trusted key": ("PackageUntrusted", "not signed"),
    "bits 32.0": ("PackageError", "without a fraction or an exponent"),
    "schema_version 1.0": ("PackageError", "without a fraction or an exponent"),
    "schema_version 1e0": ("PackageError", "without a fraction or an exponent"),
    "lone surrogate label": ("PackageError", "lone surrogate"),
    "100,000-character label": ("PackageError", "more than 1000"),
    "high-low, k = 2^31 - 1, counts": ("RangeError", "outputs would need about"),
    "high-low, signed": ("ok", "Ed25519 signature by"),
}


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("trust")
    author, other = (read_private_key(generate_key_files(folder / name)[0]) for name in ("author", "other"))
    author_public = (folder / "author.pub").read_text().strip()
    privacy = read_privacy_matrix(example_path("survey_E.csv"))
    document = build_package(deployable_table(read_channel(example_path("survey_mangat_Q.csv")), privacy))
    signed = sign_package(document, author)
    forged = json.loads(json.dumps(signed))
    forged["table"][0] = ["3435973837", "858993459"]  # breaks E = log(3): ratio 5 on output 1
    forged["sha256"] = package_digest(forged)
    identity = Channel(np.eye(2), document["inputs"], document["outputs"])
    weakened = build_package(deployable_table(identity, PrivacyMatrix([["0", "inf"], ["inf", "0"]])))
    text = json.dumps(signed)
    key, pin, opt_out = {"publicKey": author_public}, {"sha256": signed["sha256"]}, {"allowUnauthenticated": True}

    def relabelled(label: str) -> str:
        edited = dict(document, inputs=[label, document["inputs"][1]])
        edited["sha256"] = package_digest(edited)
        return json.dumps(edited)

    huge = build_high_low_package(2**31 - 1, [0], "1")
    made = {
        "signed, trusted key": (text, key),
        "signed, pinned hash": (text, pin),
        "no key, no pin": (text, {}),
        "explicit opt-out": (text, opt_out),
        "forged table, re-hashed": (json.dumps(forged), key),
        "forged table, pinned": (json.dumps(forged), pin),
        "forged table, re-signed by another key": (json.dumps(sign_package(forged, other)), key),
        "policy weakened, signed by another key": (json.dumps(sign_package(weakened, other)), key),
        "policy weakened, pinned": (json.dumps(weakened), pin),
        "unsigned, trusted key": (json.dumps(document), key),
        "bits 32.0": (text.replace('"bits": 32', '"bits": 32.0'), opt_out),
        "schema_version 1.0": (text.replace('"schema_version": 1', '"schema_version": 1.0'), opt_out),
        "schema_version 1e0": (text.replace('"schema_version": 1', '"schema_version": 1e0'), opt_out),
        "lone surrogate label": (relabelled("\ud800"), opt_out),
        "100,000-character label": (relabelled("x" * 100_000), opt_out),
        "high-low, k = 2^31 - 1, counts": (json.dumps(huge), opt_out),
        "high-low, signed": (json.dumps(sign_package(huge, author)), key),
    }
    assert set(made) == set(EXPECTED)
    return [{"name": name, "text": source, "options": options,
             **({"counts": [5, 10]} if name.endswith("counts") else {})} for name, (source, options) in made.items()]


def check(results: dict) -> None:
    for name, (verdict, fragment) in EXPECTED.items():
        assert results[name].startswith(verdict) and fragment in results[name], (name, results[name])


def test_python_stdlib_client_agrees(cases):
    results = {}
    names = {"publicKey": "public_key", "sha256": "sha256", "allowUnauthenticated": "allow_unauthenticated"}
    for case in cases:
        try:
            sampler = load_sampler(parse_package(case["text"]),
                                   **{names[key]: value for key, value in case["options"].items()})
            results[case["name"]] = f"ok: {sampler.trust}"
            if "counts" in case:
                sampler.counts(*case["counts"])
        except (PackageUntrusted, PackageError) as error:
            results[case["name"]] = f"{type(error).__name__}: {error}"
        except ValueError as error:  # counts refused with its memory estimate: RangeError in JS
            results[case["name"]] = f"RangeError: {error}"
    check(results)


def test_node_client(tmp_path, cases):
    check(run_cases_in_node(tmp_path, cases))


def test_headless_chromium_client(tmp_path, cases):
    check(run_cases_in_chromium(tmp_path, cases))
