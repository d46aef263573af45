"""Orbit packages at k = 43,750: build, verify and sample, against block Hadamard packages in the same run.

Run: ``python benchmarks/bench_orbit_package.py`` (about 20 s). Medians of 3; ratios are the
orbit package's time over ``package-hadamard``'s (block HR, 35 blocks of 1,250, eps = 1),
whose build, verification and sampling run in the same process. The design (orbit LP) is
timed separately: the package starts from a certified design.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import timed  # noqa: E402

from designer.deploy.orbit import build_orbit_package, verify_orbit_package  # noqa: E402
from designer.deploy.structured import build_hadamard_package, verify_structured_package  # noqa: E402
from designer.deploy.vectorised import VectorisedSampler  # noqa: E402
from designer.symmetry import ClassStructure, design_symmetric  # noqa: E402

K, BLOCKS, N = 43_750, 35, 1_000_000


def main() -> None:
    hadamard_build, hadamard = timed(lambda: build_hadamard_package([K // BLOCKS] * BLOCKS, "1"))
    hadamard_verify, _ = timed(lambda: verify_structured_package(hadamard))
    inputs = np.random.default_rng(0).integers(0, K, N)
    hadamard_sampler = VectorisedSampler(hadamard, seed=1, allow_unauthenticated=True)
    hadamard_sample, _ = timed(lambda: hadamard_sampler.sample(inputs))
    print(f"block HR package (baseline): build {hadamard_build:.4f} s, verify {hadamard_verify:.4f} s, "
          f"{N:,} reports {hadamard_sample:.3f} s")
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
        print(f"| {name} | {design_seconds:.2f} | {build:.4f} ({build / hadamard_build:.2f}) | "
              f"{verify:.4f} ({verify / hadamard_verify:.2f}) | {sample:.3f} ({sample / hadamard_sample:.2f}) | "
              f"{sampler.n_outputs:,} | {loss:.2g} |")


if __name__ == "__main__":
    main()
