"""Benchmark: PolyOpt (robust-ldp-chi-square.md, Section V) by enumeration and by column generation.

For (|S|, |U|) = (2,2), (3,3), (3,4), (4,4), (4,5): one distribution drawn from the
Jeffreys prior (Dirichlet(1/2), seeded), n = 1000 records, alpha = 0.05, eps = 1.

* enumeration: every vertex of the cone (44) by pycddlib + the vertex LP (47) with
  HiGHS; optimality proved by the LP dual over every vertex. Run where it
  finishes within the budget ((3,4) takes about a minute; (4,4) does not finish).
* column generation: restricted LP + linearisation pricing heuristic (a lower
  bound on the optimum; compared with the proved optimum where both run).

The paper's figures (MATLAB/MPT3, i7-7700HQ): 72 s on average for (3,4); (4,4)
stopped after 12 hours.

Run: ``.venv/bin/python benchmarks/bench_robust_polyopt.py`` (about 3 minutes).
"""

from __future__ import annotations

import platform
import statistics
import time

import numpy as np

from designer.robust import ConfidenceSet
from designer.robust.polyopt import cone_inequalities, polyopt

SIZES = [(2, 2), (3, 3), (3, 4), (4, 4), (4, 5)]
ENUMERATE_UP_TO = 12  # |X|; (4,4) is out of reach of enumeration
REPEATS = {4: 5, 9: 5, 12: 1, 16: 1, 20: 1}


def jeffreys_confidence_set(a1: int, a2: int, seed: int = 2024, n: int = 1000, alpha: float = 0.05) -> ConfidenceSet:
    rng = np.random.default_rng(seed)
    while True:
        counts = rng.multinomial(n, rng.dirichlet(np.full(a1 * a2, 0.5))).reshape(a1, a2)
        if np.all(counts.sum(axis=1) > 0):
            return ConfidenceSet(counts, alpha)


def timed(function, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def main() -> None:
    print(f"machine: {platform.machine()}, numpy {np.__version__}; eps = 1, n = 1000, alpha = 0.05")
    header = ("(|S|,|U|)", "rows (44)", "vertices", "enum s", "enum I/H", "columns", "CG s", "CG I/H",
              "CG gap (nats)", "CG/enum time")
    print(" | ".join(header))
    for a1, a2 in SIZES:
        F = jeffreys_confidence_set(a1, a2)
        rows = cone_inequalities(F, 1.0).shape[0]
        repeats = REPEATS[a1 * a2]
        enumerated, enum_seconds = (None, None)
        if a1 * a2 <= ENUMERATE_UP_TO:
            enumerated, enum_seconds = timed(lambda: polyopt(F, 1.0, method="enumeration"), repeats)
        generated, cg_seconds = timed(lambda: polyopt(F, 1.0, method="column-generation"), repeats)
        cells = [
            f"({a1},{a2})", str(rows),
            str(enumerated.params["vertices"]) if enumerated else "—",
            f"{enum_seconds:.3f}" if enumerated else "—",
            f"{enumerated.normalised_utility:.6f}" if enumerated else "—",
            str(generated.params["columns"]), f"{cg_seconds:.3f}", f"{generated.normalised_utility:.6f}",
            f"{enumerated.utility - generated.utility:.1e}" if enumerated else "not proved",
            f"{cg_seconds / enum_seconds:.2f}" if enumerated else "—",
        ]
        print(" | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
