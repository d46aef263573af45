"""Benchmark: packaging with an exact certificate, exact secure sampling, and the utility lost to 32-bit rounding.

1. Packaging: :func:`designer.deploy.table.deployable_table` (integer rounding, float
   screen, one exact certification) at k = 100, 300, 1,000 on two channels: k-ary
   randomised response with e^eps = 3 against E = log(3) exactly (every constraint
   tight: directed rounding), and a random dense channel with slack (E = its tight E
   + 0.1, 10% of pairs inf: nearest rounding). Baseline in the same run: the float
   certifier (:func:`designer.certify.certify`) on the same channel and E. Medians of 3.
2. Throughput (reports per second), inputs uniform, n = 10^7. Table: the k = 1,000
   randomised-response package of step 1 (with its exact certificate), against
   ``Channel.sample`` (numpy PCG64, float CDF); the vectorised client (ChaCha20 keyed
   from ``secrets``, and PCG64 with ``--seed``), the standard-library client (one
   ``secrets`` call per report, 2 x 10^5 reports) and the JavaScript client in Node
   (2 x 10^6 reports). Structured packages through the vectorised client against the
   mechanism's own float sampler (``Mechanism.sample``, numpy PCG64): block Hadamard
   response with 25 blocks of 1,750 (k = 43,750) and high-low Hadamard response with
   k = 100,000 and 1,000 sensitive symbols, e^eps = 3. Medians of 3.
3. Utility lost to 32-bit rounding on the shipped examples (designer/examples): the
   certified channels and the optimal designs of the demo, each packaged with its exact
   certificate: relative loss of mutual information (uniform prior, or the shipped prior)
   and the largest total variation of a row.

Run: ``.venv/bin/python benchmarks/bench_deploy.py`` (a few minutes).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from timing import timed

from designer.certify import certify
from designer.channel import Channel
from designer.deploy.package import build_package
from designer.deploy.sampler import TableSampler
from designer.deploy.structured import build_hadamard_package, build_high_low_package
from designer.deploy.table import deployable_table
from designer.deploy.vectorised import VectorisedSampler
from designer.design.vertex import design_by_vertices
from designer.examples import example_path
from designer.io import read_channel, read_privacy_matrix, read_vector
from designer.mechanisms import BlockHadamardResponse, HighLowHadamardResponse
from designer.spec import PrivacyMatrix

PACKAGING_SIZES = (100, 300, 1_000)
K = 1_000
N = 10_000_000
N_STDLIB = 200_000
N_NODE = 2_000_000
BLOCKS = [1_750] * 25
HIGH_LOW_K, HIGH_LOW_SENSITIVE = 100_000, 1_000
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [client, path, n] = process.argv.slice(1);
const { loadPackage } = await import(pathToFileURL(client).href);
const mechanism = await loadPackage(readFileSync(path, "utf8"), { allowUnauthenticated: true });
const k = mechanism.inputs.length;
const start = performance.now();
let checksum = 0;
for (let i = 0; i < Number(n); i++) checksum += mechanism.sample(i % k);
console.log(JSON.stringify({ seconds: (performance.now() - start) / 1000, checksum }));
"""


def randomised_response(k: int) -> tuple[Channel, PrivacyMatrix]:
    """k-ary randomised response with e^eps = 3 (float entries) and E = log(3) as exact text: every pair tight."""
    matrix = np.full((k, k), 1 / (k + 2))
    np.fill_diagonal(matrix, 3 / (k + 2))
    levels = np.full((k, k), "log(3)", dtype=object)
    np.fill_diagonal(levels, "0")
    return Channel(matrix), PrivacyMatrix(levels)


def slack_channel(k: int, seed: int = 5) -> tuple[Channel, PrivacyMatrix]:
    """A random dense channel and E = its tight E + 0.1, with 10% of the pairs inf."""
    rng = np.random.default_rng(seed)
    weights = rng.random((k, k)) + 0.05
    channel = Channel(weights / weights.sum(axis=1, keepdims=True))
    levels = channel.tight_privacy().epsilon + 0.1
    levels[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(levels, 0.0)
    return channel, PrivacyMatrix(levels)


def packaging() -> dict:
    """Time deployable_table against the float certifier; return the k = K randomised-response package."""
    print("| k | channel | rounding | float certify s (baseline) | deployable_table s (exact certificate) | ratio |")
    print("|---|---|---|---|---|---|")
    document = None
    for k in PACKAGING_SIZES:
        for name, (channel, privacy) in [("randomised response e^eps=3, tight", randomised_response(k)),
                                         ("random dense, slack 0.1", slack_channel(k))]:
            base, _ = timed(lambda: certify(channel, privacy))
            seconds, deployable = timed(lambda: deployable_table(channel, privacy))
            assert deployable.certificate.certified and deployable.certificate.mode == "exact"
            print(f"| {k:,} | {name} | {deployable.loss.method} | {base:.3f} | {seconds:.2f} | {seconds / base:.1f} |",
                  flush=True)
            if k == K and name.startswith("randomised"):
                document = build_package(deployable)
    return document


def table_throughput(document: dict) -> None:
    assert document["certificate"]["mode"] == "exact" and document["certificate"]["verdict"] == "certified"
    channel = Channel(np.array([[int(v) for v in row] for row in document["table"]], dtype=float) / 2**32)
    inputs = np.random.default_rng(1).integers(0, K, size=N)
    base, _ = timed(lambda: channel.sample(inputs, np.random.default_rng(2)))
    secure = VectorisedSampler(document, sha256=document["sha256"])
    fast, reports = timed(lambda: secure.sample(inputs))
    seeded = VectorisedSampler(document, seed=3, allow_unauthenticated=True)
    pcg, _ = timed(lambda: seeded.sample(inputs))
    stdlib = TableSampler(document, sha256=document["sha256"])
    small = inputs[:N_STDLIB].tolist()
    python, _ = timed(lambda: [stdlib.sample(x) for x in small])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "grr.json"
        path.write_text(json.dumps(document))
        node_times = []
        for _ in range(3):
            command = ["node", "--input-type=module", "-e", NODE_SCRIPT, str(CLIENT), str(path), str(N_NODE)]
            result = subprocess.run(command, capture_output=True, text=True, check=True)
            node_times.append(json.loads(result.stdout)["seconds"])
    node = float(np.median(node_times))
    hits = float(np.mean(reports == inputs))
    print(f"k = {K}, n = {N:,}: P(Y = X) = {hits:.5f} (table {int(document['table'][0][0]) / 2**32:.5f}); "
          f"package certified exactly, margin {document['certificate']['margin']}")
    print_rates(N, base, [
        ("Channel.sample (numpy PCG64, float CDF) - baseline", base, N),
        ("vectorised exact, ChaCha20 (secrets key)", fast, N),
        ("vectorised exact, PCG64 --seed (not cryptographic)", pcg, N),
        ("stdlib exact, secrets.randbits (one call per report)", python, N_STDLIB),
        ("JavaScript exact, Node crypto.getRandomValues", node, N_NODE),
    ])


def structured_throughput() -> None:
    cases = [
        ("block HR, 25 blocks of 1,750 (k = 43,750)", BlockHadamardResponse(BLOCKS, "log(3)"),
         build_hadamard_package(BLOCKS, "log(3)")),
        (f"high-low HR, k = {HIGH_LOW_K:,}, s = {HIGH_LOW_SENSITIVE:,}",
         HighLowHadamardResponse(HIGH_LOW_K, HIGH_LOW_SENSITIVE, "log(3)"),
         build_high_low_package(HIGH_LOW_K, range(HIGH_LOW_SENSITIVE), "log(3)")),
    ]
    for name, mechanism, document in cases:
        inputs = np.random.default_rng(4).integers(0, mechanism.k, size=N)
        base, expected = timed(lambda: mechanism.sample(inputs, np.random.default_rng(5)))
        secure = VectorisedSampler(document, sha256=document["sha256"])
        fast, reports = timed(lambda: secure.sample(inputs))
        seeded = VectorisedSampler(document, seed=6, allow_unauthenticated=True)
        pcg, _ = timed(lambda: seeded.sample(inputs))
        # same law: the two samplers' report histograms differ by no more than two float runs' do
        noise = histogram_distance(expected, mechanism.sample(inputs, np.random.default_rng(7)), mechanism.n_outputs)
        gap = histogram_distance(reports, expected, mechanism.n_outputs)
        print(f"{name}: {mechanism.n_outputs:,} outputs, n = {N:,}; total variation between the report histograms: "
              f"exact vs float sampler {gap:.4f}, float vs float (another seed) {noise:.4f}")
        print_rates(N, base, [
            (f"{type(mechanism).__name__}.sample (numpy PCG64, float coin) - baseline", base, N),
            ("vectorised exact, ChaCha20 (secrets key)", fast, N),
            ("vectorised exact, PCG64 --seed (not cryptographic)", pcg, N),
        ])


def histogram_distance(first: np.ndarray, second: np.ndarray, n_outputs: int) -> float:
    """Total variation distance between the empirical distributions of two equally long report arrays."""
    counts = np.bincount(first, minlength=n_outputs) - np.bincount(second, minlength=n_outputs)
    return 0.5 * float(np.abs(counts).sum()) / first.size


def print_rates(n: int, base: float, rows: list[tuple[str, float, int]]) -> None:
    baseline = n / base
    print("| sampler | n | median s | reports/s | time per report / baseline's |")
    print("|---|---|---|---|---|")
    for name, seconds, count in rows:
        rate = count / seconds
        print(f"| {name} | {count:,} | {seconds:.3f} | {rate:.3g} | {baseline / rate:.2f} |", flush=True)


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
        cases.append((name, e_name, design_by_vertices(privacy, prior=prior).channel, prior))
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
    table_throughput(packaging())
    structured_throughput()
    rounding_loss()
