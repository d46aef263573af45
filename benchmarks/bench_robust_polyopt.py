"""Benchmark: PolyOpt (robust-ldp-chi-square.md, Section V) by enumeration and by column generation.

For (|S|, |U|) = (2,2), (3,3), (3,4), (4,4), (4,5): one distribution drawn from the
Jeffreys prior (Dirichlet(1/2), seeded), n = 1000 records, alpha = 0.05, eps = 1.

* exact enumeration: every vertex of the cone (44) by pycddlib in GMP rational
  arithmetic + the vertex LP (47) with HiGHS; optimality proved by the LP dual
  over every vertex. Run for |X| <= 9 (and (3,4) with ``--exact-34``: slow).
* float enumeration: the same with floating-point cdd, for |X| <= 12: faster,
  but it can lose vertices, so its optimum is not a proof (vertex counts shown).
* column generation: restricted LP + linearisation pricing heuristic (a lower
  bound on the optimum; compared with the proved optimum where both run).
* with ``--verify-34``: the (3,4) column-generation design with ``verify=True`` (exact
  enumeration of an outer rational cone; proves an upper bound; a few minutes).
* how often the heuristic reaches the proved (exact-enumeration) optimum:
  6 Jeffreys draws (``DRAWS``) for each of (2,2), (3,3) and eps in {0.5, 1, 2}.

The paper's figures (MATLAB/MPT3, i7-7700HQ): 72 s on average for (3,4); (4,4)
stopped after 12 hours.

Run: ``.venv/bin/python benchmarks/bench_robust_polyopt.py [--exact-34] [--verify-34]`` (about 5 minutes
without the flags).
"""

from __future__ import annotations

import platform
import statistics
import sys
import time

import numpy as np

from designer.robust import ConfidenceSet
from designer.robust.polyopt import cone_inequalities, polyopt
from timing import timed

SIZES = [(2, 2), (3, 3), (3, 4), (4, 4), (4, 5)]
EXACT_UP_TO = 9  # |X| enumerated in exact arithmetic by default
FLOAT_UP_TO = 12  # |X| enumerated in floating point; (4,4) is out of reach of enumeration
REPEATS = {4: 5, 9: 3, 12: 1, 16: 1, 20: 1}
DRAWS = 6


def jeffreys_confidence_set(a1: int, a2: int, seed: int = 2024, n: int = 1000, alpha: float = 0.05) -> ConfidenceSet:
    rng = np.random.default_rng(seed)
    while True:
        counts = rng.multinomial(n, rng.dirichlet(np.full(a1 * a2, 0.5))).reshape(a1, a2)
        if np.all(counts.sum(axis=1) > 0):
            return ConfidenceSet(counts, alpha)


def main() -> None:
    exact_up_to = FLOAT_UP_TO if "--exact-34" in sys.argv else EXACT_UP_TO
    print(f"machine: {platform.machine()}, numpy {np.__version__}; eps = 1, n = 1000, alpha = 0.05")
    header = ("(|S|,|U|)", "rows (44)", "exact vertices", "exact s", "I/H (proved)", "float vertices", "float s",
              "float I/H", "CG columns", "CG s", "CG I/H", "CG - proved (nats)")
    print(" | ".join(header))
    for a1, a2 in SIZES:
        F = jeffreys_confidence_set(a1, a2)
        a = a1 * a2
        rows = cone_inequalities(F, 1.0).shape[0]
        repeats = REPEATS[a]
        exact, exact_seconds = (None, None)
        if a <= exact_up_to:
            exact_seconds, exact = timed(lambda F=F: polyopt(F, 1.0, method="enumeration"), 1 if a > 9 else repeats)
        floating, float_seconds = (None, None)
        if a <= FLOAT_UP_TO:
            float_seconds, floating = timed(lambda F=F: polyopt(F, 1.0, method="enumeration", exact=False), repeats)
        cg_seconds, generated = timed(lambda F=F: polyopt(F, 1.0, method="column-generation"), repeats)
        cells = [
            f"({a1},{a2})", str(rows),
            str(exact.params["vertices"]) if exact else "not run",
            f"{exact_seconds:.3f}" if exact else "—",
            f"{exact.normalised_utility:.6f}" if exact else "—",
            str(floating.params["vertices"]) if floating else "not run",
            f"{float_seconds:.3f}" if floating else "—",
            f"{floating.normalised_utility:.6f}" if floating else "—",
            str(generated.params["columns"]), f"{cg_seconds:.3f}", f"{generated.normalised_utility:.6f}",
            f"{generated.utility - exact.utility:.1e}" if exact else "not proved",
        ]
        print(" | ".join(cells), flush=True)
    if "--verify-34" in sys.argv:
        F = jeffreys_confidence_set(3, 4)
        start = time.perf_counter()
        verified = polyopt(F, 1.0, method="column-generation", verify=True)
        print(f"(3,4) CG + verify: utility {verified.utility:.12f} nats (I/H {verified.normalised_utility:.6f}), "
              f"upper bound {verified.upper_bound:.12f}, gap {verified.upper_bound - verified.utility:.1e}, "
              f"optimal {verified.optimal}, outer vertices {verified.params['vertices']}, "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    print()
    print(f"column generation against the proved optimum ({DRAWS} Jeffreys draws each)")
    print("(|S|,|U|) | eps | reached (gap <= 1e-9) | largest gap (nats) | largest relative gap | median CG s")
    for a1, a2 in [(2, 2), (3, 3)]:
        for epsilon in (0.5, 1.0, 2.0):
            gaps, relative, seconds = [], [], []
            for seed in range(DRAWS):
                F = jeffreys_confidence_set(a1, a2, seed=seed)
                exact = polyopt(F, epsilon, method="enumeration")
                generated = polyopt(F, epsilon, method="column-generation")
                gaps.append(exact.utility - generated.utility)
                relative.append(gaps[-1] / exact.utility)
                seconds.append(generated.seconds)
            reached = sum(gap <= 1e-9 for gap in gaps)
            print(f"({a1},{a2}) | {epsilon} | {reached}/{DRAWS} | {max(gaps):.1e} | {max(relative):.1e} | "
                  f"{statistics.median(seconds):.3f}", flush=True)


if __name__ == "__main__":
    main()
