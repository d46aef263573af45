"""Benchmark: exact secure sampling from mechanism packages, and the utility lost to 32-bit rounding.

1. Throughput (reports per second), k = 1,000 inputs and outputs (randomised response,
   e^eps = 3), inputs uniform. Baseline in the same run: ``Channel.sample`` (numpy PCG64,
   float CDF), n = 10^7. Ours: the vectorised client (ChaCha20 keyed from ``secrets``;
   and PCG64 with ``--seed``) on the same n; the standard-library client (``secrets``,
   one call per report) on 2 x 10^5 reports; the JavaScript client in Node
   (``crypto.getRandomValues``) on 2 x 10^6 reports. Medians of 3 runs.
   The k = 1,000 table is rounded with :func:`designer.deploy.table.round_row`
   (diagonal down, off-diagonal up) and packaged without its exact certificate: exact
   certification of 10^6 pairs is not what is timed here (the samplers read only the table).
2. Utility lost to 32-bit rounding on the shipped examples (designer/examples): the
   certified channels and the optimal designs of the demo, each packaged with its exact
   certificate: relative loss of mutual information (uniform prior, or the shipped prior)
   and the largest total variation of a row.

Run: ``.venv/bin/python benchmarks/bench_deploy.py`` (about a minute).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from timing import timed

from designer.channel import Channel
from designer.deploy.sampler import FORMAT, SCHEMA_VERSION, TableSampler, package_digest
from designer.deploy.table import deployable_table, round_row
from designer.deploy.vectorised import VectorisedSampler
from designer.design import design_channel
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix, read_vector

K = 1_000
N = 10_000_000
N_STDLIB = 200_000
N_NODE = 2_000_000
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [client, path, n] = process.argv.slice(1);
const { loadPackage } = await import(pathToFileURL(client).href);
const mechanism = await loadPackage(readFileSync(path, "utf8"));
const k = mechanism.inputs.length;
const start = performance.now();
let checksum = 0;
for (let i = 0; i < Number(n); i++) checksum += mechanism.sample(i % k);
console.log(JSON.stringify({ seconds: (performance.now() - start) / 1000, checksum }));
"""


def grr_package(k: int, bits: int = 32) -> tuple[dict, Channel]:
    """A k-ary randomised-response package (e^eps = 3) rounded by round_row; certificate fields are placeholders."""
    total = 1 << bits
    diagonal, other = Fraction(3, k + 2), Fraction(1, k + 2)
    preferences = [-1] + [1] * (k - 1)
    first = round_row([diagonal * total] + [other * total] * (k - 1), total, preferences)
    rows = [[str(first[(y - x) % k]) for y in range(k)] for x in range(k)]
    labels = [str(x) for x in range(k)]
    document = {
        "format": FORMAT, "schema_version": SCHEMA_VERSION, "kind": "table", "bits": bits,
        "inputs": labels, "outputs": labels, "E": [["0"]], "table": rows,
        "certificate": {"verdict": "certified", "mode": "exact", "margin": "0", "tight_E": []},
        "utility": {}, "sha256": "",
    }
    document["sha256"] = package_digest(document)
    floats = np.full((k, k), 1 / (k + 2))
    np.fill_diagonal(floats, 3 / (k + 2))
    return document, Channel(floats)


def throughput() -> None:
    document, channel = grr_package(K)
    inputs = np.random.default_rng(1).integers(0, K, size=N)
    base, _ = timed(lambda: channel.sample(inputs, np.random.default_rng(2)))
    secure = VectorisedSampler(document)
    fast, reports = timed(lambda: secure.sample(inputs))
    seeded = VectorisedSampler(document, seed=3)
    pcg, _ = timed(lambda: seeded.sample(inputs))
    stdlib = TableSampler(document)
    small = inputs[:N_STDLIB].tolist()
    python, _ = timed(lambda: [stdlib.sample(x) for x in small])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "grr.json"
        path.write_text(json.dumps(document))
        node_times = []
        for _ in range(3):
            result = subprocess.run(["node", "--input-type=module", "-e", NODE_SCRIPT, str(CLIENT), str(path), str(N_NODE)],
                                    capture_output=True, text=True, check=True)
            node_times.append(json.loads(result.stdout)["seconds"])
    node = float(np.median(node_times))
    hits = float(np.mean(reports == inputs))
    print(f"k = {K}, n = {N:,}: P(Y = X) = {hits:.5f} (table {int(document['table'][0][0]) / 2**32:.5f})")
    rate = lambda seconds, n: n / seconds  # noqa: E731
    baseline = rate(base, N)
    rows = [
        ("Channel.sample (numpy PCG64, float CDF) - baseline", base, N),
        ("vectorised exact, ChaCha20 (secrets key)", fast, N),
        ("vectorised exact, PCG64 --seed (not cryptographic)", pcg, N),
        ("stdlib exact, secrets.randbits (one call per report)", python, N_STDLIB),
        ("JavaScript exact, Node crypto.getRandomValues", node, N_NODE),
    ]
    print("| sampler | n | median s | reports/s | time per report / baseline's |")
    print("|---|---|---|---|---|")
    for name, seconds, n in rows:
        print(f"| {name} | {n:,} | {seconds:.3f} | {rate(seconds, n):.3g} | {baseline / rate(seconds, n):.2f} |")


def rounding_loss() -> None:
    cases = [
        ("4-ary RR e^eps=3 (grr4_Q)", "ldp4_E.csv", read_channel(example_path("grr4_Q.csv")), None),
        ("Mangat survey (survey_mangat_Q)", "survey_E.csv", read_channel(example_path("survey_mangat_Q.csv")), None),
        ("Warner in blocks (blocks4_Q)", "blocks4_E.csv", read_channel(example_path("blocks4_Q.csv")), None),
    ]
    for name, e_name, prior_name in [("optimal design, geo blocks", "geo_blocks_E.csv", None),
                                     ("optimal design, URLs high-low", "urls_high_low_E.csv", "urls_prior.csv"),
                                     ("optimal design, line of 8", "line8_E.csv", None)]:
        privacy = read_privacy_matrix(example_path(e_name))
        prior = read_vector(example_path(prior_name), "prior") if prior_name else None
        cases.append((name, e_name, design_channel(privacy, prior=prior).channel, prior))
    print("| example | k x m | rounding | relative MI loss | max row TV | seconds |")
    print("|---|---|---|---|---|---|")
    for name, e_name, channel, prior in cases:
        start = time.perf_counter()
        deployable = deployable_table(channel, read_privacy_matrix(example_path(e_name)), 32, prior)
        seconds = time.perf_counter() - start
        assert deployable.certificate.certified and deployable.certificate.mode == "exact"
        loss = deployable.loss
        method = loss.method + (f" (lambda = {float(loss.mixing_weight):.2g})" if loss.method == "mixed" else "")
        print(f"| {name} | {channel.k} x {channel.n_outputs} | {method} | {loss.relative_utility_loss:.2e} | "
              f"{loss.max_total_variation:.2e} | {seconds:.2f} |")


if __name__ == "__main__":
    throughput()
    rounding_loss()
