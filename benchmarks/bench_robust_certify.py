"""Robust certifier: closed-form chi-square-ball duals vs one CVXPY program per ball.

For each case, a protocol designed for a Jeffreys-prior confidence set (n = 1000,
alpha = 0.05) is certified with :func:`designer.robust.certify.certify_robust`
(median of 5 runs). The baseline, measured in the same run, is the "sound mode" of
the sound mode written as convex programs: for every (y, s1, s2) triple not settled by
Proposition 4, maximise ``Q_{y,s1} . R1`` over the Lemma 8 ball of s1 and minimise
``Q_{y,s2} . R2`` over the ball of s2 with CVXPY (Clarabel, second-order cones).
The table also reports the largest difference between the two decoupled bounds.

Run: ``.venv/bin/python benchmarks/bench_robust_certify.py``
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import cvxpy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from robust_samples import sample_confidence  # noqa: E402

from designer.robust.certify import certify_robust  # noqa: E402
from designer.robust.polyopt import polyopt  # noqa: E402
from designer.robust.protocols import PROTOCOLS  # noqa: E402
from solvers.chi2ball import maximise_over_ball  # noqa: E402


DESIGNERS = {"polyopt": polyopt, **PROTOCOLS}


def cvxpy_ball(c, w, beta):
    r = cp.Variable(len(c), nonneg=True)
    terms = [cp.quad_over_lin(w[u], r[u]) for u in np.flatnonzero(w > 0)]
    problem = cp.Problem(cp.Maximize(c @ r), [cp.sum(r) == 1, cp.sum(cp.hstack(terms)) <= beta])
    problem.solve(solver="CLARABEL")
    return problem.value


def open_triples(matrix, confidence, eps):
    a1, a2 = confidence.shape
    scaled = (matrix / matrix.max(axis=0)).reshape(a1, a2, -1)
    for s1 in range(a1):
        for s2 in range(a1):
            if s1 != s2:
                for y in np.flatnonzero(scaled[s1].max(axis=0) > np.exp(eps) * scaled[s2].min(axis=0)):
                    yield y, s1, s2, scaled


def decoupled(method, matrix, confidence, eps):
    w, radius = confidence.conditional_estimate, confidence.conditional_radius + 1
    values = []
    for y, s1, s2, scaled in open_triples(matrix, confidence, eps):
        c1, c2 = scaled[s1, :, y], -np.exp(eps) * scaled[s2, :, y]
        if method == "cvxpy":
            values.append(cvxpy_ball(c1, w[s1], radius[s1]) + cvxpy_ball(c2, w[s2], radius[s2]))
        else:
            values.append(maximise_over_ball(c1, w[s1], radius[s1]).upper_bound
                          + maximise_over_ball(c2, w[s2], radius[s2]).upper_bound)
    return np.array(values)


def main() -> None:
    cases = [("ue-cr", (3, 3), 1.0), ("polyopt", (3, 3), 1.0), ("grr-cr", (4, 4), 1.0), ("ue-cr", (4, 4), 0.5)]
    print("| protocol, (|S|,|U|), eps | outputs | open triples | certify_robust median | decoupled bounds: ours | CVXPY | ratio | max bound difference |")
    print("|---|---|---|---|---|---|---|---|")
    for name, shape, eps in cases:
        confidence = sample_confidence(7, shape)
        matrix = DESIGNERS[name](confidence, eps).channel.matrix
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            certificate = certify_robust(matrix, confidence, eps)
            runs.append(time.perf_counter() - start)
        assert certificate.verdict == "certified"
        start = time.perf_counter()
        ours = decoupled("closed-form", matrix, confidence, eps)
        ours_seconds = time.perf_counter() - start
        start = time.perf_counter()
        reference = decoupled("cvxpy", matrix, confidence, eps)
        cvxpy_seconds = time.perf_counter() - start
        print(f"| {name}, {shape}, {eps:g} | {matrix.shape[1]} | {ours.size} | {statistics.median(runs) * 1e3:.1f} ms "
              f"| {ours_seconds * 1e3:.1f} ms | {cvxpy_seconds:.2f} s | {cvxpy_seconds / ours_seconds:.0f}x "
              f"| {np.max(np.abs(ours - reference)):.1e} |")


if __name__ == "__main__":
    main()
