"""Benchmark: the sampling auditor (``designer.audit``).

1. Throughput: reports per second drawn and tested — GRR (k = 10, outputs),
   unary encoding (k = 16, bit vectors, the classifier) and local hashing
   (k = 16, ``(value, seed)`` pairs, the support function) with vectorised
   samplers, and pure-ldp's OUE client called one user at a time.
2. Detection of a planted 1.2 eps violation (a mechanism at eps = 1.2 audited
   against eps = 1, k = 10: GRR, whose witness is one output; Hadamard
   response, whose witness is a set of outputs; OUE, 1,024 bit-vector outputs):
   for each budget (reports per input) the share of 40 audits that say
   ``violated``; "reports needed" = the smallest budget detecting at least 90%
   of the time (budgets stop once every method reaches 90%). Baseline in the same run, written here: a plain
   per-output Clopper–Pearson audit (the ``ldp-audit`` approach of Arcolezi &
   Gambs, PETS 2024): every output y is its own event, bounds on all reports
   of the inputs, Bonferroni over every test — once for all 90 ordered pairs
   (a valid verdict on the whole E), once for the single pair (0, 1) that
   ldp-audit fixes in advance (all of its reports spent on two inputs).
3. False alarms: 200 audits of GRR at eps = 1 against eps = 1 (k = 10) at the
   budget of item 2, confidence 0.95; and the power statement against the
   empirical detection rate.

Run: ``.venv/bin/python benchmarks/bench_audit.py`` (a few minutes).
"""

from __future__ import annotations

import math
import time

import numpy as np

from timing import timed

from designer.audit import audit_reports
from designer.audit.libraries import local_hashing_support
from designer.audit.statistics import log_ratio_lower_bound
from designer.mechanisms import GeneralizedRandomizedResponse, HadamardResponse
from designer.spec import PrivacyMatrix

K = 10
BUDGETS = [1000, 2000, 3000, 4000, 5000, 6000, 8000, 12000, 16000, 24000, 32000, 48000]
REPEATS = 40
CONFIDENCE = 0.95


def draw(mechanism, k: int, n: int, rng) -> dict:
    return {x: mechanism.sample(np.full(n, x), rng) for x in range(k)}


def unary_encoding(x: int, n: int, rng, eps: float = 1.0, k: int = 16) -> np.ndarray:
    q = 1 / (math.exp(eps) + 1)
    bits = (rng.random((n, k)) < q).astype(np.int8)
    bits[:, x] = rng.random(n) < 0.5
    return bits


def local_hashing(x: int, n: int, rng, eps: float = 1.0, k: int = 16) -> np.ndarray:
    from xxhash import xxh32_intdigest

    g = int(round(math.exp(eps))) + 1
    seeds = rng.integers(0, 2**62, n)
    hashed = np.array([xxh32_intdigest(str(x), int(seed)) % g for seed in seeds])
    keep = rng.random(n) < math.exp(eps) / (math.exp(eps) + g - 1)
    other = rng.integers(0, g - 1, n)
    other += other >= hashed
    return np.stack([np.where(keep, hashed, other), seeds], axis=1)


def throughput() -> None:
    print("1. throughput (median of 3)")
    rng = np.random.default_rng(0)
    grr = GeneralizedRandomizedResponse(K, 1.0)
    n = 100_000
    draw_seconds, reports = timed(lambda: draw(grr, K, n, rng))
    audit_seconds, result = timed(lambda: audit_reports(reports, PrivacyMatrix.classic(K, 1.0), rng=1))
    total = n * K
    print(f"  GRR k={K}, {total:,} reports: draw {total / draw_seconds:,.0f}/s, audit {total / audit_seconds:,.0f}/s "
          f"({audit_seconds:.2f} s, events: {result.event_space})")
    n = 20_000
    reports = {x: unary_encoding(x, n, rng) for x in range(16)}
    audit_seconds, result = timed(lambda: audit_reports(reports, PrivacyMatrix.classic(16, 1.0), rng=1))
    print(f"  OUE k=16, {n * 16:,} bit vectors: audit {n * 16 / audit_seconds:,.0f}/s ({audit_seconds:.2f} s, "
          f"events: {result.event_space})")
    n = 5_000
    reports = {x: local_hashing(x, n, rng) for x in range(16)}
    arguments = {"protocol": "OLH", "eps": 1.0, "k": 16}
    audit_seconds, result = timed(lambda: audit_reports(reports, PrivacyMatrix.classic(16, 1.0), rng=1,
                                                        support=local_hashing_support, support_arguments=arguments))
    print(f"  OLH k=16, {n * 16:,} (value, seed) pairs: audit {n * 16 / audit_seconds:,.0f}/s "
          f"({audit_seconds:.2f} s, events: {result.event_space})")
    try:
        from designer.audit.libraries import pure_ldp
    except ImportError:
        return
    n = 2_000
    start = time.perf_counter()
    pure_ldp(0, n, rng, "OUE", 1.0, 16)
    print(f"  pure-ldp OUE client, one user per call: draw {n / (time.perf_counter() - start):,.0f}/s")


def baseline_violated(outputs: dict, privacy: PrivacyMatrix, pairs: list[tuple[int, int]], n_outputs: int) -> bool:
    """Per-output Clopper–Pearson on all reports, Bonferroni over every (pair, output) test."""
    counts = {x: np.bincount(outputs[x], minlength=n_outputs) for x in {x for pair in pairs for x in pair}}
    error = (1 - CONFIDENCE) / (len(pairs) * n_outputs)
    for x, x_prime in pairs:
        n_x, n_other = counts[x].sum(), counts[x_prime].sum()
        bounds = log_ratio_lower_bound(counts[x], n_x, counts[x_prime], n_other, error)
        if np.any(bounds > privacy.epsilon[x, x_prime]):
            return True
    return False


def planted_cases() -> dict:
    """Mechanisms at eps = 1.2 (k = 10): sampler ``(x, n, rng) -> reports`` and reports -> output indices."""
    grr = GeneralizedRandomizedResponse(K, 1.2)
    hadamard = HadamardResponse(K, 1.2)
    weights = 2 ** np.arange(K)
    return {
        "GRR": (lambda x, n, rng: grr.sample(np.full(n, x), rng), lambda reports: reports, K),
        "Hadamard response": (lambda x, n, rng: hadamard.sample(np.full(n, x), rng), lambda reports: reports,
                              hadamard.n_outputs),
        "OUE": (lambda x, n, rng: unary_encoding(x, n, rng, eps=1.2, k=K), lambda reports: reports @ weights, 2**K),
    }


def detection(name: str, sampler, as_outputs, n_outputs: int) -> int:
    print(f"2. planted violation: {name} at eps = 1.2 audited against eps = 1, k = {K}, {REPEATS} audits per budget")
    privacy = PrivacyMatrix.classic(K, 1.0)
    all_pairs = [(x, y) for x in range(K) for y in range(K) if x != y]
    rates = {"ours": {}, "per-output CP, all pairs": {}, "per-output CP, pair (0, 1)": {}}
    seconds = {name: 0.0 for name in rates}
    tried, settled, audits = [], False, 0
    for n in BUDGETS:
        hits = {method: 0 for method in rates}
        for repeat in range(REPEATS):
            rng = np.random.default_rng(1000 * n + repeat)
            reports = {x: sampler(x, n, rng) for x in range(K)}
            outputs = {x: as_outputs(values) for x, values in reports.items()}
            if settled:  # ours detected >= 90% at two budgets in a row: not rerun at larger ones
                hits["ours"] += 1
            else:
                start = time.perf_counter()
                hits["ours"] += audit_reports(reports, privacy, confidence=CONFIDENCE, rng=repeat).violated
                seconds["ours"] += time.perf_counter() - start
                audits += 1
            start = time.perf_counter()
            hits["per-output CP, all pairs"] += baseline_violated(outputs, privacy, all_pairs, n_outputs)
            seconds["per-output CP, all pairs"] += time.perf_counter() - start
            start = time.perf_counter()
            hits["per-output CP, pair (0, 1)"] += baseline_violated(outputs, privacy, [(0, 1)], n_outputs)
            seconds["per-output CP, pair (0, 1)"] += time.perf_counter() - start
        tried.append(n)
        for method in rates:
            rates[method][n] = hits[method] / REPEATS
        shown = ["ours (not rerun)" if settled else f"ours {rates['ours'][n]:.0%}"]
        shown += [f"{m} {rates[m][n]:.0%}" for m in rates if m != "ours"]
        print(f"  n = {n:>6,} per input: " + ", ".join(shown), flush=True)
        settled = settled or (len(tried) >= 2 and min(rates["ours"][m] for m in tried[-2:]) >= 0.9)
        if all(rates[m][n] >= 0.9 for m in rates):
            break
    needed = {}
    for method, by_budget in rates.items():
        enough = [n for n in tried if by_budget[n] >= 0.9]
        needed[method] = enough[0] if enough else None
    ours = needed["ours"]
    for method, n in needed.items():
        text = f"{n:,}" if n else f"> {tried[-1]:,}"
        ratio = ""
        if method != "ours" and ours:
            ratio = f" ({n / ours:.1f}x ours)" if n else f" (> {tried[-1] / ours:.1f}x ours)"
        runs = audits if method == "ours" else len(tried) * REPEATS
        print(f"  reports per input for >= 90% detection, {method}: {text}{ratio}; "
              f"testing time {seconds[method] / runs * 1e3:.1f} ms per audit")
    return ours or tried[-1]


def false_alarms(n: int) -> None:
    print(f"3. false alarms: 200 audits of GRR eps = 1 against eps = 1, k = {K}, n = {n:,} per input, confidence 0.95")
    honest = GeneralizedRandomizedResponse(K, 1.0)
    privacy = PrivacyMatrix.classic(K, 1.0)
    alarms, bounds = 0, []
    for seed in range(200):
        result = audit_reports(draw(honest, K, n, np.random.default_rng(seed)), privacy, rng=seed)
        alarms += result.violated
        bounds.append(result.best.lower_bound)
    print(f"  violated in {alarms} of 200 ({alarms / 2:.1f}%); median largest lower bound {np.median(bounds):.3f} (E = 1)")
    planted = GeneralizedRandomizedResponse(K, 1.0 + 0.2)
    stated, hits = [], 0
    for seed in range(100):
        result = audit_reports(draw(planted, K, n, np.random.default_rng(10_000 + seed)), privacy, rng=seed)
        hits += result.violated
        stated.append(result.detectable_excess)
    print(f"  power statement at this budget: median detectable excess {np.median(stated):.3f} (at probability 0.9); "
          f"an excess of 0.2 was detected in {hits} of 100 audits")


if __name__ == "__main__":
    throughput()
    needed = {name: detection(name, *case) for name, case in planted_cases().items()}
    false_alarms(needed["GRR"])
