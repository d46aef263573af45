"""Shuffling an orbit package at k = 43,750 against the block Hadamard package of the same E, in the same run.

Run: ``python benchmarks/bench_shuffle_orbit.py`` (about a minute). E: 35 blocks of 1,250,
eps = 1 within a block, inf across; and high-low with 3,125 sensitive symbols, eps = 1. The
orbit package is the optimal (mutual information) design's; the baseline is
``package-hadamard``'s block or high-low Hadamard response. Timed, median of 3,
each cold (the divergence cache cleared): the whole analysis, verification of the package
(hash and structural proof), pair classes and the central guarantee with its lower bound, at
delta = 1e-6 for n = 10^5 and 10^6, in the worst case and (block E) with ``--population n/35``
(the users of one block when the n users spread evenly).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import timed  # noqa: E402

from designer.deploy.orbit import build_orbit_package  # noqa: E402
from designer.deploy.structured import build_hadamard_package, build_high_low_package  # noqa: E402
from designer.shuffle import divergence  # noqa: E402
from designer.shuffle.analysis import shuffle_guarantee  # noqa: E402
from designer.shuffle.sources import package_pairs  # noqa: E402
from designer.design.symmetry import ClassStructure, design_symmetric  # noqa: E402

K, BLOCKS, SENSITIVE, DELTA = 43_750, 35, 3_125, 1e-6


def analysis(document: dict, n: int, population: int | None):
    """The whole ``shuffle --package`` analysis, cold."""
    divergence._bound.cache_clear()
    pairs, _ = package_pairs(document)
    return len(pairs), shuffle_guarantee(pairs, n, delta=DELTA, population=population)


def main() -> None:
    block = [K // BLOCKS] * BLOCKS
    cases = [
        ("block 35 x 1,250", build_orbit_package(design_symmetric(ClassStructure.block(block, 1.0), materialise=False)),
         build_hadamard_package(block, "1"), True),
        ("high-low, 3,125 sensitive",
         build_orbit_package(design_symmetric(ClassStructure.high_low(K, SENSITIVE, 1.0), materialise=False)),
         build_high_low_package(K, range(SENSITIVE), "1"), False),
    ]
    print("| E | n | population | orbit: classes, s, epsilon (lower) | Hadamard: classes, s, epsilon (lower) | "
          "time ratio | epsilon ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, orbit, hadamard, assumed in cases:
        for n in (10**5, 10**6):
            for population in (None, n // BLOCKS) if assumed else (None,):
                cells = []
                for document in (orbit, hadamard):
                    seconds, (classes, result) = timed(lambda: analysis(document, n, population))
                    cells.append((classes, seconds, result.epsilon, result.lower))
                (oc, os, oe, ol), (hc, hs, he, hl) = cells
                print(f"| {name} | {n:.0e} | {population or 'none'} | {oc}, {os:.2f}, {oe:.6g} ({ol:.6g}) | "
                      f"{hc}, {hs:.2f}, {he:.6g} ({hl:.6g}) | {os / hs:.2f} | {oe / he:.3f} |")


if __name__ == "__main__":
    main()
