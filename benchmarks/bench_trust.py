"""Benchmark: what signing, authenticating and checking a policy cost next to re-verifying a package.

One k = 1,000 table package (k-ary randomised response, e^eps = 3, against E = log(3)
exactly: every constraint tight; built once with its exact certificate). Baseline in the
same run: :func:`designer.deploy.package.verify_package` (structure, hash, exact
re-certification, stored numbers), what ``verify-package`` did before. Timed against it,
medians of 3:

* Ed25519 signing (:func:`designer.deploy.signing.sign_package`: canonical form + signature);
* authentication by the trusted key (:func:`designer.deploy.sampler.authenticate` with
  ``public_key``: canonical form + Ed25519 verification) and by a pinned SHA-256;
* the policy check (:func:`designer.deploy.policy.check_policy`: exact comparison of the
  package's E with the policy, here equal to it, and the table certified against the policy);
* the JavaScript client's ``loadPackage`` in Node with ``{ publicKey }`` and with
  ``{ allowUnauthenticated: true }`` (structure + SHA-256 only): the signature's share.

Run: ``.venv/bin/python benchmarks/bench_trust.py`` (about a minute).
"""

from __future__ import annotations

import base64
import json
import subprocess
import tempfile
from pathlib import Path

from timing import timed

from bench_deploy import randomised_response
from designer.deploy.package import build_package, verify_package
from designer.deploy.policy import check_policy
from designer.deploy.sampler import authenticate
from designer.deploy.signing import sign_package
from designer.deploy.table import deployable_table

K = 1_000
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [client, path, options] = process.argv.slice(2);
const { loadPackage } = await import(pathToFileURL(client).href);
const text = readFileSync(path, "utf8");
const times = [];
for (let i = 0; i < 3; i++) {
  const start = performance.now();
  await loadPackage(text, JSON.parse(options));
  times.push((performance.now() - start) / 1000);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ seconds: times[1] }));
"""


def node_seconds(path: Path, options: dict) -> float:
    script = path.with_name("load.mjs")
    script.write_text(NODE_SCRIPT)
    result = subprocess.run(["node", str(script), str(CLIENT), str(path), json.dumps(options)], capture_output=True,
                            text=True, check=True, timeout=600)
    return json.loads(result.stdout)["seconds"]


def main() -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    channel, privacy = randomised_response(K)
    document = build_package(deployable_table(channel, privacy))
    key = Ed25519PrivateKey.generate()
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    baseline, _ = timed(lambda: verify_package(document))
    signing, signed = timed(lambda: sign_package(document, key))
    by_key, how = timed(lambda: authenticate(signed, public))
    assert how.startswith("Ed25519")
    pinned, _ = timed(lambda: authenticate(signed, sha256=document["sha256"]))
    policy, check = timed(lambda: check_policy(signed, privacy))
    assert check.met
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mech.json"
        path.write_text(json.dumps(signed))
        size = path.stat().st_size
        node_key = node_seconds(path, {"publicKey": base64.b64encode(public).decode()})
        node_plain = node_seconds(path, {"allowUnauthenticated": True})
    print(f"k = {K} randomised-response package, {size / 2**20:.1f} MiB of JSON")
    print("| step | seconds | ratio to verify_package |")
    print("|---|---|---|")
    for name, seconds in [("verify_package (baseline: exact re-certification)", baseline),
                          ("sign_package (Ed25519)", signing), ("authenticate, trusted public key", by_key),
                          ("authenticate, pinned SHA-256", pinned), ("check_policy (policy = package E)", policy),
                          ("JS loadPackage, { publicKey } (Node)", node_key),
                          ("JS loadPackage, { allowUnauthenticated } (Node)", node_plain)]:
        print(f"| {name} | {seconds:.3f} | {seconds / baseline:.3f} |")


if __name__ == "__main__":
    main()
