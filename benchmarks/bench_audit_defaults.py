"""Benchmark: the audit at its default settings (adaptive budget, budget-derived all-pairs rule).

1. One leaking pair among 240 (GRR, k = 16, eps = 1, pair (3, 7) at loss 1.3 on output 3, every
   other pair at most 1) at 10,000 reports per input: share of seeds ``violated`` with the
   command line's defaults (the adaptive budget, default learned attacks) and with ``--fixed-split``.
2. The all-pairs rule against the old default (all pairs up to 20 constrained pairs, else 8) at
   k = 4, 8, 16, fixed split, fixed events, at budgets where the two rules differ: a GRR whose
   pair (0, 1) leaks on output 0 by the stated excess (0.25) and by the smaller excess the 8-pair
   test detects with power 0.9 (:func:`designer.audit.power.detectable_excess`).
3. False alarms of correct GRR, OUE, OLH (with its support), Hadamard response and Laplace
   histogram encoding clients (k = 4 at 1,000 and k = 8 at 2,000 reports per input, eps = 1) at confidence 0.95 with the
   default settings, SEEDS seeds per client: alarms / runs with a Clopper–Pearson upper bound.

Run: ``.venv/bin/python benchmarks/bench_audit_defaults.py [SEEDS] [PAIR_SEEDS]`` (defaults 200 and 40;
about 16 minutes on a shared 2-core machine).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from bench_audit_attacks import Source, correct_clients, from_channel, leaking_channel

from designer.audit import Budget, audit_reports
from designer.audit.adaptive import adaptive_audit
from designer.audit.power import POWER_EXCESS, detectable_excess
from designer.audit.statistics import clopper_pearson_upper
from designer.audit.verdict import DEFAULT_MAX_PAIRS, default_max_pairs
from designer.spec import PrivacyMatrix

EPS = 1.0


def single_pair(seeds: int) -> None:
    k, n = 16, 10_000
    sampler = from_channel(leaking_channel(k, 3, 7, 1.3))
    privacy = PrivacyMatrix.classic(k, EPS)
    print(f"1. one leaking pair (1.3 eps) among 240, k = {k}, {n:,} reports per input, {seeds} seeds", flush=True)
    found = {"default (adaptive)": 0, "--fixed-split": 0}
    seconds = {name: 0.0 for name in found}
    for seed in range(seeds):
        start = time.perf_counter()
        found["default (adaptive)"] += adaptive_audit(Source(sampler), privacy, Budget(n),
                                                      np.random.default_rng(seed)).violated
        middle = time.perf_counter()
        rng = np.random.default_rng(seed)
        found["--fixed-split"] += audit_reports({x: sampler(x, n, rng) for x in range(k)}, privacy, rng=rng).violated
        seconds["default (adaptive)"] += middle - start
        seconds["--fixed-split"] += time.perf_counter() - middle
    for name, hits in found.items():
        print(f"  {name}: violated {hits}/{seeds} ({hits / seeds:.1%}), {seconds[name] / seeds:.1f} s per audit",
              flush=True)


def old_default(candidates: int) -> int:
    return 0 if candidates <= 20 else DEFAULT_MAX_PAIRS


def all_pairs_rule(seeds: int) -> None:
    print(f"2. all-pairs rule against the old default (fixed split, fixed events), {seeds} seeds", flush=True)
    for k, n in ((4, 10_000), (8, 40_000), (16, 40_000)):
        candidates, fresh = k * (k - 1), n - int(0.3 * n)
        own = math.e / (math.e + k - 1)
        small = detectable_excess(own, fresh, fresh, EPS, 0.05 / DEFAULT_MAX_PAIRS)
        privacy = PrivacyMatrix.classic(k, EPS)
        rules = {"old": old_default(candidates), "new": default_max_pairs(candidates, fresh, EPS, 0.95)}
        shown = {name: "all" if pairs == 0 else str(pairs) for name, pairs in rules.items()}
        for label, excess in (("stated", POWER_EXCESS), ("8-pair detectable", small)):
            sampler = from_channel(leaking_channel(k, 0, 1, EPS + excess))
            hits = dict.fromkeys(rules, 0)
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                reports = {x: sampler(x, n, rng) for x in range(k)}
                for name, pairs in rules.items():
                    hits[name] += audit_reports(reports, privacy, rng=seed, attacks=(), max_pairs=pairs).violated
            print(f"  k = {k} ({candidates} pairs), {n:,} per input, {label} leak E + {excess:.3f}: old default "
                  f"({shown['old']} pairs) {hits['old']}/{seeds}, new rule ({shown['new']} pairs) "
                  f"{hits['new']}/{seeds}", flush=True)


def false_alarms(seeds: int, k: int = 4, n: int = 1_000) -> None:
    print(f"3. false alarms at the defaults (adaptive, default attacks), correct clients at eps = 1 against "
          f"E = 1, k = {k}, {n:,} reports per input, confidence 0.95, {seeds} seeds each", flush=True)
    privacy = PrivacyMatrix.classic(k, EPS)
    total = runs = 0
    for name, (sampler, options) in correct_clients(k).items():
        start = time.perf_counter()
        alarms = sum(adaptive_audit(Source(sampler), privacy, Budget(n), np.random.default_rng(20_000 + seed),
                                    **options).violated for seed in range(seeds))
        upper = float(clopper_pearson_upper(alarms, seeds, 0.05))
        total, runs = total + alarms, runs + seeds
        print(f"  {name}: {alarms}/{seeds} ({alarms / seeds:.1%}; upper 95% bound {upper:.1%}), "
              f"{(time.perf_counter() - start) / seeds:.2f} s per audit", flush=True)
    print(f"  all clients: {total}/{runs} ({total / runs:.1%}; upper 95% bound "
          f"{float(clopper_pearson_upper(total, runs, 0.05)):.1%})", flush=True)


if __name__ == "__main__":
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    pair_seeds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    false_alarms(seeds)
    false_alarms(seeds, 8, 2_000)
    single_pair(pair_seeds)
    all_pairs_rule(pair_seeds // 2)
