"""Benchmark: the audit's learned attacks and empirical E matrix on leaks the fixed events miss.

1. Planted leaks (k = 16, eps = 1 clients with one defect), share of audits over seeds saying
   ``violated`` at confidence 0.95, with the learned attacks and without them (the fixed
   events alone: ``attacks=()``), same reports; and the adaptive audit (``--adaptive``, learned
   attacks on) at the same budget:
   * wrong-flip unary encoding: input 0's zero bits are 1 with probability 0.35 instead of
     q = 1/(e+1) = 0.269, audited against E = 1.6 (true loss about 2.3 on the event "bit 0 set,
     bit x' clear, at least 8 other ones", probability about 2% under input 0);
   * seed-bits leak: local hashing whose seed's low 4 bits are the input (infinite loss), with
     the protocol's support function;
   * a rare text report "debug" (probability 1e-3) from input 5 of a GRR client (infinite loss);
   * a single leaking pair: GRR whose pair (3, 7) has loss 1.3 on output 3, every other pair at
     most 1, among 240 constrained pairs.
2. False alarms of correct clients (GRR, OUE, local hashing with its support, Hadamard
   response, Laplace histogram encoding; k = 8, eps = 1, 2,000 reports per input), both learned
   attacks on, and whether the empirical E stays below the true E.
3. Audit time per 10^6 reports with and without the learned attacks (same reports, same run).
4. Early stopping (``--looks 0.25,0.5,1``, fixed events): share of the budget a blatant leak
   (GRR at eps = 2 against E = 1, k = 16, 4,000 reports per input) uses, and false alarms of a
   correct GRR (k = 8, 2,000 reports per input) over the looks.

Run: ``.venv/bin/python benchmarks/bench_audit_attacks.py [SEEDS]`` (default 5 seeds: about 15 minutes
on a shared 2-core machine; false alarms use 4 x SEEDS seeds per client).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from designer.audit import Budget, audit_reports
from designer.audit.adaptive import adaptive_audit
from designer.audit.libraries import local_hashing_support
from designer.mechanisms import GeneralizedRandomizedResponse, HadamardResponse
from designer.spec import PrivacyMatrix

K, EPS = 16, 1.0
Q = 1 / (math.e + 1)


def unary(x, n, rng, k=K, wrong=None):
    bits = (rng.random((n, k)) < (wrong if wrong is not None and x == 0 else Q)).astype(np.int8)
    bits[:, x] = rng.random(n) < 0.5
    return bits


def hashed(x, n, rng, k=K, leak=False):
    from xxhash import xxh32_intdigest

    g = int(round(math.exp(EPS))) + 1
    seeds = rng.integers(0, 2**40, n)
    if leak:
        seeds = (seeds >> 4 << 4) | x
    values = np.array([xxh32_intdigest(str(x), int(seed)) % g for seed in seeds])
    keep = rng.random(n) < math.exp(EPS) / (math.exp(EPS) + g - 1)
    other = rng.integers(0, g - 1, n)
    other += other >= values
    return np.stack([np.where(keep, values, other), seeds], axis=1)


def grr_channel(k=K):
    channel = np.full((k, k), 1 / (math.e + k - 1))
    np.fill_diagonal(channel, math.e / (math.e + k - 1))
    return channel


def leaking_channel(k, x, x_prime, loss):
    """GRR with ``Q[x', x]`` lowered to ``Q[x, x] e^-loss`` (the deficit spread over the outputs other than x, x')."""
    channel = grr_channel(k)
    deficit = channel[x_prime, x] - channel[x, x] * math.exp(-loss)
    channel[x_prime, x] -= deficit
    others = [y for y in range(k) if y not in (x, x_prime)]
    channel[x_prime, others] += deficit / len(others)
    return channel


def leaking_pair_channel():
    """GRR whose pair (3, 7) has loss 1.3 on output 3."""
    return leaking_channel(K, 3, 7, 1.3)


def from_channel(channel):
    def sample(x, n, rng):
        return rng.choice(channel.shape[1], n, p=channel[x])
    return sample


def debug_grr(x, n, rng):
    reports = from_channel(grr_channel())(x, n, rng).astype(object)
    if x == 5:
        reports[rng.random(n) < 1e-3] = "debug"
    return np.array([str(value) for value in reports], dtype=object)


class Source:
    """A sampler as a report source (for the adaptive audit)."""

    description = "benchmark sampler"

    def __init__(self, sampler):
        self.sampler = sampler

    def draw(self, x, n, rng, timeout=None):
        return self.sampler(x, n, rng)


def rate(sampler, k, n, privacy, seeds, **options):
    hits = {"learned": 0, "fixed": 0, "adaptive": 0}
    seconds = 0.0
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        reports = {x: sampler(x, n, rng) for x in range(k)}
        start = time.perf_counter()
        hits["learned"] += audit_reports(reports, privacy, rng=seed, **options).violated
        seconds += time.perf_counter() - start
        hits["fixed"] += audit_reports(reports, privacy, rng=seed, attacks=(), **options).violated
        hits["adaptive"] += adaptive_audit(Source(sampler), privacy, Budget(n), np.random.default_rng(seed + 1000),
                                           **options).violated
    return hits, seconds / seeds


def planted(seeds: int) -> None:
    print(f"1. planted leaks, k = {K}, {seeds} seeds each, confidence 0.95")
    cases = [
        ("wrong-flip unary encoding vs E = 1.6", lambda x, n, rng: unary(x, n, rng, wrong=0.35),
         PrivacyMatrix.classic(K, 1.6), [10_000, 20_000], {}),
        ("seed-bits leak (local hashing, --support)", lambda x, n, rng: hashed(x, n, rng, leak=True),
         PrivacyMatrix.classic(K, EPS), [2_000, 10_000],
         {"support": local_hashing_support, "support_arguments": {"protocol": "OLH", "eps": EPS, "k": K}}),
        ("rare debug report (1e-3) from one input", debug_grr, PrivacyMatrix.classic(K, EPS), [10_000, 30_000], {}),
        ("single leaking pair (1.3 eps) among 240", from_channel(leaking_pair_channel()),
         PrivacyMatrix.classic(K, EPS), [10_000], {}),
    ]
    for name, sampler, privacy, budgets, options in cases:
        for n in budgets:
            hits, seconds = rate(sampler, K, n, privacy, seeds, **options)
            print(f"  {name}, n = {n:,} per input: learned attacks {hits['learned']}/{seeds}, "
                  f"fixed events only {hits['fixed']}/{seeds}, adaptive (learned) {hits['adaptive']}/{seeds} "
                  f"({seconds:.1f} s per audit)", flush=True)


def correct_clients(k: int) -> dict:
    """Correct eps = 1 clients of every report shape: name -> (sampler, audit options)."""
    hadamard = HadamardResponse(k, EPS)
    grr = GeneralizedRandomizedResponse(k, EPS)

    def histogram(x, m, rng):
        values = rng.laplace(scale=2 / EPS, size=(m, k))
        values[:, x] += 1
        return values

    return {
        "GRR": (lambda x, m, rng: grr.sample(np.full(m, x), rng), {}),
        "OUE": (lambda x, m, rng: unary(x, m, rng, k=k), {}),
        "OLH": (lambda x, m, rng: hashed(x, m, rng, k=k),
                {"support": local_hashing_support, "support_arguments": {"protocol": "OLH", "eps": EPS, "k": k}}),
        "Hadamard response": (lambda x, m, rng: hadamard.sample(np.full(m, x), rng), {}),
        "histogram encoding": (histogram, {}),
    }


def false_alarms(seeds: int) -> None:
    k, n = 8, 2000
    clients = correct_clients(k)
    print(f"2. false alarms: correct clients at eps = 1 against E = 1, k = {k}, n = {n:,}, {seeds} seeds each")
    privacy = PrivacyMatrix.classic(k, EPS)
    for name, (sampler, options) in clients.items():
        alarms, above, largest = 0, 0, []
        for seed in range(seeds):
            rng = np.random.default_rng(10_000 + seed)
            result = audit_reports({x: sampler(x, n, rng) for x in range(k)}, privacy, rng=seed,
                                   attacks=("logistic", "boosted"), **options)
            alarms += result.violated
            above += bool(np.any(result.lower_bounds > EPS))
            largest.append(result.lower_bounds.max())
        print(f"  {name}: violated {alarms}/{seeds}; empirical E above the true E in {above}/{seeds}; "
              f"median largest lower bound {np.median(largest):.3f}", flush=True)


def throughput() -> None:
    print("3. audit time per 10^6 reports (one run each; machine shared)")
    rng = np.random.default_rng(0)
    cases = {
        "GRR k = 10": ({x: rng.choice(10, 100_000, p=grr_channel(10)[x]) for x in range(10)}, 10),
        "OUE k = 16": ({x: unary(x, 20_000, rng) for x in range(16)}, 16),
    }
    for name, (reports, k) in cases.items():
        total = sum(len(values) for values in reports.values())
        times = {}
        for label, attacks in (("fixed events", ()), ("+ logistic", ("logistic",)), ("default attacks (boosted up to 400,000 reports)", None)):
            start = time.perf_counter()
            audit_reports(reports, PrivacyMatrix.classic(k, EPS), rng=1, attacks=attacks)
            times[label] = (time.perf_counter() - start) / total * 1e6
        base = times["fixed events"]
        print(f"  {name} ({total:,} reports): " + ", ".join(
            f"{label} {value:.1f} s ({value / base:.1f}x)" for label, value in times.items()), flush=True)


def early_stopping(seeds: int) -> None:
    from designer.audit.sequential import sequential_audit

    print(f"4. early stopping, looks 0.25, 0.5, 1 (error 0.05/3 each), fixed events, {seeds} seeds")
    blatant = GeneralizedRandomizedResponse(K, 2.0)
    used, found = [], 0
    for seed in range(seeds):
        result = sequential_audit(Source(lambda x, m, rng: blatant.sample(np.full(m, x), rng)),
                                  PrivacyMatrix.classic(K, EPS), Budget(4000), np.random.default_rng(seed), attacks=())
        found += result.violated
        used.append(result.looks[-1]["share"])
    print(f"  GRR eps = 2 against E = 1: violated {found}/{seeds}, share of the budget used: median "
          f"{np.median(used):g}, largest {max(used):g}", flush=True)
    k = 8
    correct = GeneralizedRandomizedResponse(k, EPS)
    alarms = sum(sequential_audit(Source(lambda x, m, rng: correct.sample(np.full(m, x), rng)),
                                  PrivacyMatrix.classic(k, EPS), Budget(2000), np.random.default_rng(50_000 + seed),
                                  attacks=()).violated for seed in range(4 * seeds))
    print(f"  correct GRR k = {k}: violated {alarms}/{4 * seeds}", flush=True)


if __name__ == "__main__":
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    throughput()
    planted(seeds)
    false_alarms(4 * seeds)
    early_stopping(seeds)
