"""Benchmark: privacy over time, every goal's figure with its baseline in the same run.

1. Accounting: GRR k = 10, eps = 1, T = 365, delta = 1e-6: the exact loss distribution
   (enumerated atoms) against dp_accounting's pessimistic PLD (baseline), times and levels.
2. RAPPOR (h = 2, f = 1/2, p = 1/2, q = 3/4) as a package: account's eps_inf and eps_1 against
   the paper's closed forms.
3. L-GRR and L-OSUE: parameters and variance against multi_freq_ldpy (its numba clients sampled:
   chi-square of 10^5 reports against our report channel), and our designed instantaneous stage
   for the same permanent one at k in {10, 100}: variance and mutual-information ratios.
4. ``audit --rounds 20``: a client re-drawing GRR(1) every round against users per input; a
   memoizing L-GRR client, ``--audit-runs`` runs at 10^4 users per input, alarms counted.

Run: ``nice -n 5 .venv/bin/python benchmarks/bench_longitudinal.py [--audit-runs 50]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from designer.channel import Channel
from designer.longitudinal.accounting import account_rounds
from designer.longitudinal.design import channel_variance, symmetric_grr_design
from designer.longitudinal.families import l_grr, l_grr_parameters, l_osue_parameters, rappor, rappor_levels
from designer.utility import mutual_information
from solvers.composition import smallest_level

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "tests" / "fixtures" / "audit" / "longitudinal_clients.py"
CLI = [sys.executable, "-m", "designer.cli"]


def grr(k: int, epsilon: float) -> np.ndarray:
    matrix = np.full((k, k), 1 / (math.exp(epsilon) + k - 1))
    np.fill_diagonal(matrix, math.exp(epsilon) / (math.exp(epsilon) + k - 1))
    return matrix


def accounting() -> None:
    print("## 1. GRR k = 10, eps = 1, daily for T = 365 rounds, delta = 1e-6")
    matrix = grr(10, 1.0)
    account_rounds(Channel(grr(3, 1.0)), 2, 1e-6)  # imports
    start = time.perf_counter()
    account = account_rounds(Channel(matrix), 365, 1e-6)
    exact_seconds = time.perf_counter() - start
    start = time.perf_counter()
    baseline = smallest_level(matrix[0], matrix[1], 365, 1e-6, max_atoms=0)
    baseline_seconds = time.perf_counter() - start
    print(f"basic composition {account.basic_epsilon:.12g}; exact loss distribution: epsilon "
          f"{account.largest_epsilon:.10f} ({account.method}, all 90 pairs) in {exact_seconds:.3f} s; "
          f"dp_accounting pessimistic PLD (grid 1e-4, one pair): {baseline.level:.10f} in {baseline_seconds:.3f} s "
          f"({baseline_seconds / exact_seconds:.1f}x the exact time); memoized: "
          f"{account_rounds(Channel(matrix), 365, 1e-6, memoized=True).largest_epsilon:.6f}")


def rappor_figures() -> None:
    print("\n## 2. RAPPOR h = 2, f = 1/2, p = 1/2, q = 3/4 (6 values, 4 Bloom bits), package and account")
    sys.path.insert(0, str(ROOT / "tests"))
    from test_longitudinal_clients import rappor_package

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rappor.json"
        path.write_text(json.dumps(rappor_package()))
        output = subprocess.run([*CLI, "account", "--package", str(path), "--rounds", "365", "--delta", "1e-6",
                                 "--memoized", "--json"], capture_output=True, text=True, check=True).stdout
    payload = json.loads(output)
    eps_inf, eps_1 = rappor_levels(2, 0.5, 0.5, 0.75)
    print(f"account: eps_inf {payload['long_term_epsilon']!r} (4 ln 3 = {4 * math.log(3)!r}, difference "
          f"{abs(payload['long_term_epsilon'] - eps_inf):.1e}); eps_1 {payload['report_epsilon']!r} (paper "
          f"{eps_1!r}, difference {abs(payload['report_epsilon'] - eps_1):.1e}); memoized over 365 rounds: "
          f"{payload['epsilon']:.6f} at delta 1e-6")
    stages = rappor([[0, 1], [2, 3], [0, 2], [1, 3], [0, 3], [1, 2]], "1/2", "1/2", "3/4")
    without = account_rounds(stages.report(), 365, 1e-6)
    print(f"without memoization (both stages every round): basic {without.basic_epsilon:.2f}, epsilon "
          f"{without.largest_epsilon:.2f} ({without.method})")


def library_clients(k: int, eps_inf: float, eps_1: float, draws: int) -> None:
    from multi_freq_ldpy.long_freq_est.L_GRR import L_GRR_Client
    from scipy.stats import chisquare

    np.random.seed(1)
    start = time.perf_counter()
    L_GRR_Client(0, k, eps_inf, eps_1)
    compile_seconds = time.perf_counter() - start
    counts = Counter(L_GRR_Client(0, k, eps_inf, eps_1) for _ in range(draws))
    expected = l_grr(k, eps_inf, eps_1).report().matrix[0] * draws
    p_value = chisquare([counts[y] for y in range(k)], expected).pvalue
    print(f"multi_freq_ldpy L_GRR_Client, k = {k}, ({eps_inf}, {eps_1}): {draws} reports against our report "
          f"channel: chi-square p = {p_value:.3f} (numba compile {compile_seconds:.1f} s)")


def designs() -> None:
    from multi_freq_ldpy.long_freq_est.Variance_LONG_PURE import VAR_Long_Pure

    print("\n## 3. L-GRR, L-OSUE and the designed instantaneous stage (uniform prior, one report)")
    library_clients(10, 2.0, 1.0, 100_000)
    print("| k | eps_inf | eps_1 | library L-GRR true eps_1 | var L-GRR (library) | var L-GRR (exact eps_1) | "
          "var ours | ratio exact / ours | ratio library / ours | MI ours / MI L-GRR exact | our type |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in (10, 100):
        for eps_inf, eps_1 in ((2.0, 1.0), (4.0, 1.0), (1.0, 0.5)):
            library = l_grr(k, eps_inf, eps_1).report().matrix
            exact = l_grr(k, eps_inf, eps_1, exact_report=True).report().matrix
            parameters = l_grr_parameters(k, eps_inf, eps_1)
            assert math.isclose(parameters.variance(), VAR_Long_Pure(parameters.p1, parameters.q1, parameters.p2,
                                                                      parameters.q2, 1, 0), rel_tol=1e-12)
            ours = symmetric_grr_design(k, eps_inf, eps_1, "variance")
            informative = symmetric_grr_design(k, eps_inf, eps_1)
            uniform = np.full(k, 1 / k)
            print(f"| {k} | {eps_inf:g} | {eps_1:g} | {math.log(parameters.p_report / parameters.q_report):.4f} | "
                  f"{channel_variance(library):.4f} | {channel_variance(exact):.4f} | {ours.variance:.4f} | "
                  f"{channel_variance(exact) / ours.variance:.3f} | {channel_variance(library) / ours.variance:.3f} | "
                  f"{informative.mutual_information / mutual_information(uniform, exact):.3f} | {ours.describe()} |")
    print("\nL-OSUE (per bit, any k): parameters and variance at frequency 0 against multi_freq_ldpy; the best bit "
          "channel after the same permanent bit (grid of 2001^2) against OSUE's")
    for eps_inf, eps_1 in ((2.0, 1.0), (4.0, 1.0), (1.0, 0.5)):
        ours = l_osue_parameters(eps_inf, eps_1)
        library = VAR_Long_Pure(ours.p1, ours.q1, ours.p2, ours.q2, 1, 0)
        grid = np.linspace(0, 1, 2001)
        a, b = grid[:, None], grid[None, :]
        p, q = ours.p1 * a + (1 - ours.p1) * b, ours.q1 * a + (1 - ours.q1) * b
        with np.errstate(all="ignore"):
            allowed = (p > q) & (np.log(p * (1 - q) / (q * (1 - p))) <= eps_1 + 1e-12)
            best = np.where(allowed, q * (1 - q) / (p - q) ** 2, np.inf).min()
        print(f"({eps_inf:g}, {eps_1:g}): p2 = {ours.p2:.10f}, variance {ours.variance():.10f} (multi_freq_ldpy "
              f"{library:.10f}); best bit channel {best:.10f}: ratio OSUE / best {ours.variance() / best:.6f}")


def audit_run(client: str, users: int, seed: int, extra: list[str], E: Path) -> int:
    arguments = [*CLI, "audit", "--E", str(E), "--sampler", f"{CLIENTS}:{client}", "--arg", "k=4", "--arg",
                 "eps_inf=1.0", *extra, "--rounds", "20", "--reports-per-input", str(users), "--attacks", "none",
                 "--seed", str(seed), "--json"]
    return subprocess.run(arguments, capture_output=True, text=True).returncode


def audits(runs: int) -> None:
    print("\n## 4. audit --rounds 20, k = 4, claimed long-term E = 1 (--attacks none)")
    with tempfile.TemporaryDirectory() as folder:
        E = Path(folder) / "E.csv"
        E.write_text("\n".join(",".join("0" if i == j else "1" for j in range(4)) for i in range(4)) + "\n")
        for users in (250, 500, 1000, 2000, 10_000):
            codes = [audit_run("forgetful", users, seed, [], E) for seed in range(3)]
            print(f"client re-drawing GRR(1) every round, {users} users per input: exit codes {codes} (1 = violated)")
        start = time.perf_counter()
        codes = [audit_run("memoizing", 10_000, seed, ["--arg", "eps_1=0.5"], E) for seed in range(runs)]
        print(f"memoizing L-GRR client (eps_inf = 1, eps_1 = 0.5), 10^4 users per input, {runs} runs (seeds 0..{runs - 1}): "
              f"{codes.count(1)} alarm(s), exit codes {dict(Counter(codes))}, {time.perf_counter() - start:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audit-runs", type=int, default=50)
    parser.add_argument("--parts", default="1234")
    options = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f}")
    if "1" in options.parts:
        accounting()
    if "2" in options.parts:
        rappor_figures()
    if "3" in options.parts:
        designs()
    if "4" in options.parts:
        audits(options.audit_runs)
    print(f"load: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
