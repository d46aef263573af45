"""Orbit packages at k = 43,750: build, verify and sample, against block Hadamard packages in the same run.

Run: ``python benchmarks/bench_orbit_package.py`` (about 4 minutes). Medians of 3; ratios are
the orbit package's time over ``package-hadamard``'s (block HR, 35 blocks of 1,250, eps = 1),
whose build, verification, sampling and estimation run in the same process. The design (orbit
LP) is timed separately: the package starts from a certified design. Then the JavaScript client
in Node (:data:`N_NODE` reports, inputs cycling through the symbols, after a warm-up) on the same
packages, against the block HR package in the same run.

Estimation (block E only): 10^6 reports of a permuted Zipf(1.1) input, drawn by each package's
vectorised sampler; the seconds are from the output counts to the estimate (EM: through the
channel operators, certified gap 1e-6 nats per report; unbiased: the orbit package's Fourier
blocks, built in the timed call, with its exact standard errors, against the paper's estimator
(19) with its exact standard errors); TV to the true input distribution, raw and projected
onto the simplex.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import timed  # noqa: E402

from designer.aggregate.orbit_unbiased import OrbitSpectrum  # noqa: E402
from designer.aggregate.structured import deployed_mechanism, structured_unbiased_interval  # noqa: E402
from designer.deploy.orbit import build_orbit_package, verify_orbit_package  # noqa: E402
from designer.deploy.orbit_operator import OrbitOperator  # noqa: E402
from designer.deploy.sampler import check_orbit_structure  # noqa: E402
from designer.deploy.structured import build_hadamard_package, verify_structured_package  # noqa: E402
from designer.deploy.vectorised import VectorisedSampler  # noqa: E402
from designer.estimation import maximum_likelihood, project_onto_simplex, tv_distance  # noqa: E402
from designer.design.symmetry import ClassStructure, design_symmetric  # noqa: E402

K, BLOCKS, N = 43_750, 35, 1_000_000
N_NODE = 2_000_000
CLIENT = Path(__file__).resolve().parent.parent / "designer" / "deploy" / "js" / "ldp-client.mjs"
NODE_SCRIPT = """
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [client, path, n] = process.argv.slice(1);
const { loadPackage } = await import(pathToFileURL(client).href);
const mechanism = await loadPackage(readFileSync(path, "utf8"), { allowUnauthenticated: true });
let checksum = 0;
for (let i = 0; i < 200000; i++) checksum += mechanism.sample(i % mechanism.k);
const start = performance.now();
for (let i = 0; i < Number(n); i++) checksum += mechanism.sample((i * 7919) % mechanism.k);
console.log(JSON.stringify({ seconds: (performance.now() - start) / 1000, checksum }));
"""


def node_seconds(document: dict) -> float:
    """Median seconds of 3 Node runs drawing :data:`N_NODE` reports from ``document`` with the JS client."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "package.json"
        path.write_text(json.dumps(document))
        command = ["node", "--input-type=module", "-e", NODE_SCRIPT, str(CLIENT), str(path), str(N_NODE)]
        times = [json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)["seconds"]
                 for _ in range(3)]
    return sorted(times)[1]


def main() -> None:
    hadamard_build, hadamard = timed(lambda: build_hadamard_package([K // BLOCKS] * BLOCKS, "1"))
    hadamard_verify, _ = timed(lambda: verify_structured_package(hadamard))
    inputs = np.random.default_rng(0).integers(0, K, N)
    hadamard_sampler = VectorisedSampler(hadamard, seed=1, allow_unauthenticated=True)
    hadamard_sample, _ = timed(lambda: hadamard_sampler.sample(inputs))
    print(f"block HR package (baseline): build {hadamard_build:.4f} s, verify {hadamard_verify:.4f} s, "
          f"{N:,} reports {hadamard_sample:.3f} s")
    packages = {}
    print("| E (k = 43,750) | design s | build s (x HR) | verify s (x HR) | 10^6 reports s (x HR) | outputs | "
          "relative MI loss |")
    print("|---|---|---|---|---|---|---|")
    for name, structure in (("block, 35 x 1,250", ClassStructure.block([K // BLOCKS] * BLOCKS, 1.0)),
                            ("high-low, 3,125 sensitive", ClassStructure.high_low(K, 3125, 1.0))):
        design_seconds, design = timed(lambda: design_symmetric(structure, materialise=False), repeats=1)
        build, document = timed(lambda: build_orbit_package(design))
        verify, verification = timed(lambda: verify_orbit_package(document))
        assert verification.certified
        sampler = VectorisedSampler(document, seed=1, allow_unauthenticated=True)
        sample, _ = timed(lambda: sampler.sample(inputs))
        loss = float(document["utility"]["relative_utility_loss"])
        packages[name] = document
        print(f"| {name} | {design_seconds:.2f} | {build:.4f} ({build / hadamard_build:.2f}) | "
              f"{verify:.4f} ({verify / hadamard_verify:.2f}) | {sample:.3f} ({sample / hadamard_sample:.2f}) | "
              f"{sampler.n_outputs:,} | {loss:.2g} |")
    baseline = node_seconds(hadamard)
    print(f"JavaScript client in Node, {N_NODE:,} reports: block HR package (baseline) {baseline:.3f} s")
    for name, document in packages.items():
        seconds = node_seconds(document)
        print(f"  orbit package, {name}: {seconds:.3f} s ({seconds / baseline:.2f} x HR, "
              f"{N_NODE / seconds / 1e6:.2f} million reports per second)")
    estimation(hadamard)


def estimation(hadamard: dict) -> None:
    """EM and the unbiased estimate from 10^6 reports: orbit package (block E) against block HR, same data."""
    rng = np.random.default_rng(2)
    ranks = np.arange(1, K + 1, dtype=float) ** -1.1
    truth = rng.permutation(ranks / ranks.sum())
    inputs = rng.choice(K, N, p=truth)
    design = design_symmetric(ClassStructure.block([K // BLOCKS] * BLOCKS, 1.0), materialise=False)
    document = build_orbit_package(design)
    operator = OrbitOperator(check_orbit_structure(document))
    mechanism = deployed_mechanism(hadamard)
    orbit_counts = np.bincount(VectorisedSampler(document, seed=3, allow_unauthenticated=True).sample(inputs),
                               minlength=operator.n_outputs)
    hadamard_counts = np.bincount(VectorisedSampler(hadamard, seed=3, allow_unauthenticated=True).sample(inputs),
                                  minlength=mechanism.n_outputs)
    rows = {
        "orbit EM": timed(lambda: maximum_likelihood(orbit_counts, operator).estimate),
        "block HR EM": timed(lambda: maximum_likelihood(hadamard_counts, mechanism).estimate),
        "orbit unbiased": timed(lambda: OrbitSpectrum(operator).interval(orbit_counts)[0]),
        "block HR unbiased (19)": timed(lambda: structured_unbiased_interval(hadamard_counts, mechanism)[0]),
    }
    print(f"\nestimation, block E 35 x 1,250, eps = 1, {N:,} reports, permuted Zipf(1.1); TV of the empirical "
          f"histogram (no privacy): {tv_distance(np.bincount(inputs, minlength=K) / N, truth):.4f}")
    print("| estimator | seconds (x block HR) | TV raw | TV projected |")
    print("|---|---|---|---|")
    for name, (seconds, estimate) in rows.items():
        baseline = rows["block HR EM" if "EM" in name else "block HR unbiased (19)"][0]
        print(f"| {name} | {seconds:.3f} ({seconds / baseline:.2f}) | {tv_distance(estimate, truth):.4g} | "
              f"{tv_distance(project_onto_simplex(estimate), truth):.4g} |")


if __name__ == "__main__":
    main()
