"""Benchmark: the audit's former blind spots (bytes, state, time budget, (E, delta) power), before and after.

Every section runs the command line (``python -m designer.cli audit``) of this checkout and, as the baseline in
the same run, of another checkout (``--before PATH``, e.g. /work/main before the change):

1. ``spelling`` — GRR programs (``--command``, k = 3, eps = 1) writing the reports of input 2 as ``07``, ``+7``,
   ``7 `` or ``7.0``: exit codes at 2,000 and 50,000 reports per input, seed 1;
2. ``state`` — a sampler keeping the previous call's input (``stateful_grr``: half its reports are GRR of the
   previous call's input; in same-input batches exactly GRR), k = 4, eps = 1: share of SEEDS seeds violated at
   5,000, 20,000 and 50,000 reports per input (the baseline at 20,000 and 50,000);
3. ``seconds`` — wall time of ``--seconds S`` for a fast source (the GRR sampler, k = 16) and a slow one
   (pure-ldp's OUE client, k = 16), S = 30 (and 120 with ``--long``);
4. ``delta`` — binary randomised response exactly (1, 0.05)-LDP (``P(y = x) = (e + 0.05) / (e + 1)``: the event
   ``{y = x}`` has hockey-stick difference 0.05 at E = 1) audited at ``--delta 0.02`` over SEEDS seeds at 20,000
   and 50,000 reports per input: share violated against the power statement of the same audits;
5. ``alarms`` — false alarms of correct library clients at the defaults (adaptive budget, learned attacks, the
   state probe): pure-ldp DE, OUE, HR, OLH and multi-freq-ldpy GRR, OUE, SUE, HE, OLH, k = 4, eps = 1, 4,000
   reports per input, ALARM_SEEDS seeds each, with a Clopper–Pearson upper bound.

Run: ``nice -n 5 .venv/bin/python benchmarks/bench_audit_bytes.py SECTION [SEEDS] [--before PATH] [--long]``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "audit"
PYTHON = sys.executable


def rr_hockey(x, n, rng, delta=0.05):
    """Binary randomised response whose event {y = x} has P(y=x|x) - e P(y=x|x') = delta exactly (E = 1)."""
    keep = (math.e + delta) / (math.e + 1)
    return np.where(rng.random(n) < keep, x, 1 - x)


def write_E(directory: Path, k: int, eps: float) -> Path:
    path = directory / f"E{k}_{eps:g}.csv"
    path.write_text("\n".join(",".join("0" if i == j else f"{eps!r}" for j in range(k)) for i in range(k)) + "\n")
    return path


def audit(checkout: Path, *arguments) -> tuple[int, dict | None, float]:
    """Exit code, JSON payload (None on bad input) and seconds of one audit run by ``checkout``'s code."""
    environment = dict(os.environ, PYTHONPATH=str(checkout))
    start = time.perf_counter()
    finished = subprocess.run([PYTHON, "-m", "designer.cli", "audit", *map(str, arguments), "--json"],
                              capture_output=True, text=True, env=environment, cwd=checkout)
    seconds = time.perf_counter() - start
    payload = json.loads(finished.stdout) if finished.returncode in (0, 1, 3) and finished.stdout else None
    return finished.returncode, payload, seconds


def spelling(directory: Path, before: Path | None) -> None:
    E = write_E(directory, 3, 1.0)
    print("1. respelled reports of input 2 (GRR program, k = 3, eps = 1); exit code (1 = violated), seed 1")
    for style in ("07", "+7", "7 ", "7.0"):
        row = []
        for checkout in [ROOT] + ([before] if before else []):
            for n in (2000, 50000):
                code, payload, seconds = audit(checkout, "--E", E, "--command",
                                               f"{PYTHON} {FIXTURES / 'spelling_command.py'} 1 3 '{style}'",
                                               "--reports-per-input", n, "--seed", 1)
                row.append(f"{'now' if checkout == ROOT else 'before'} {n:,}: exit {code} ({seconds:.1f} s)")
        print(f"  {style!r}: " + "; ".join(row), flush=True)


def state(directory: Path, before: Path | None, seeds: int) -> None:
    E = write_E(directory, 4, 1.0)
    print(f"2. stateful GRR sampler (k = 4, eps = 1), violated / {seeds} seeds")
    for checkout, budgets in [(ROOT, (5000, 20000, 50000))] + ([(before, (20000, 50000))] if before else []):
        for n in budgets:
            hits, seconds = 0, 0.0
            for seed in range(seeds):
                code, payload, elapsed = audit(checkout, "--E", E, "--sampler", f"{FIXTURES / 'samplers.py'}:stateful_grr",
                                               "--arg", "eps=1", "--arg", "k=4", "--reports-per-input", n,
                                               "--seed", seed)
                hits += code == 1
                seconds += elapsed
            print(f"  {'now' if checkout == ROOT else 'before'}, {n:,} per input: {hits}/{seeds} "
                  f"({seconds / seeds:.1f} s per audit)", flush=True)


def seconds_budget(directory: Path, before: Path | None, long: bool) -> None:
    E = write_E(directory, 16, 1.0)
    clients = {"GRR sampler": ["--sampler", f"{FIXTURES / 'samplers.py'}:grr", "--arg", "eps=1", "--arg", "k=16"],
               "pure-ldp OUE": ["--sampler", "designer.audit.libraries:pure_ldp", "--arg", "protocol=OUE",
                                "--arg", "eps=1", "--arg", "k=16"]}
    print("3. --seconds S: wall time of the whole command (start-up included) / S")
    for budget in (30, 120) if long else (30,):
        for name, source in clients.items():
            for checkout in [ROOT] + ([before] if before else []):
                code, payload, elapsed = audit(checkout, "--E", E, *source, "--seconds", budget, "--seed", 1)
                plan = (payload or {}).get("time_budget") or {}
                inside = f", inside the audit {plan['seconds']:.1f} s" if plan else ""
                per_input = payload["reports_per_input"]["max"] if payload else "-"
                print(f"  S = {budget}, {name}, {'now' if checkout == ROOT else 'before'}: {elapsed:.1f} s "
                      f"({elapsed / budget:.2f} S{inside}), {per_input:,} reports per input, exit {code}, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)


def delta(directory: Path, seeds: int) -> None:
    E = write_E(directory, 2, 1.0)
    print(f"4. binary RR exactly (1, 0.05)-LDP at --delta 0.02, {seeds} seeds")
    for n in (20000, 50000):
        hits, predicted = 0, []
        for seed in range(seeds):
            code, payload, _ = audit(ROOT, "--E", E, "--sampler", f"{Path(__file__).resolve()}:rr_hockey",
                                     "--reports-per-input", n, "--seed", seed, "--delta", 0.02)
            hits += code == 1
            if payload and payload["power"]:
                predicted.append(payload["power"]["event families"]["largest"]["probability"])
        stated = f"{np.mean(predicted):.2f} (range {min(predicted):.2f}-{max(predicted):.2f})" if predicted else "-"
        print(f"  {n:,} per input: violated {hits}/{seeds}; stated detection probability of a hockey-stick "
              f"difference 2 delta = 0.04 on an event as likely as the witness: {stated}", flush=True)


def alarms(directory: Path, seeds: int) -> None:
    E = write_E(directory, 4, 1.0)
    clients = [("pure_ldp", "DE", None), ("pure_ldp", "OUE", None), ("pure_ldp", "HR", "hadamard_response_support"),
               ("pure_ldp", "OLH", "local_hashing_support"), ("multi_freq_ldpy", "GRR", None),
               ("multi_freq_ldpy", "OUE", None), ("multi_freq_ldpy", "SUE", None), ("multi_freq_ldpy", "HE", None),
               ("multi_freq_ldpy", "OLH", "local_hashing_support")]
    total, runs, started = 0, 0, time.perf_counter()
    print(f"5. false alarms of correct clients at the defaults (k = 4, eps = 1, 4,000 per input), {seeds} seeds each")
    for library, protocol, support in clients:
        found = 0
        for seed in range(seeds):
            extra = ["--support", f"designer.audit.libraries:{support}"] if support else []
            code, payload, _ = audit(ROOT, "--E", E, "--sampler", f"designer.audit.libraries:{library}",
                                     "--arg", f"protocol={protocol}", "--arg", "eps=1", "--arg", "k=4", *extra,
                                     "--reports-per-input", 4000, "--seed", 1000 + seed)
            if code not in (0, 1):
                raise SystemExit(f"{library} {protocol} seed {seed}: exit {code}")
            found += code == 1
            runs += 1
        total += found
        print(f"  {library} {protocol}: {found}/{seeds} violated", flush=True)
    from scipy.stats import beta

    upper = beta.ppf(0.95, total + 1, runs - total) if total < runs else 1.0
    print(f"  all: {total}/{runs} ({total / runs:.1%}; upper 95% bound {upper:.1%}), "
          f"{(time.perf_counter() - started) / runs:.1f} s per audit", flush=True)


def main() -> None:
    arguments = sys.argv[1:]
    before = Path(arguments[arguments.index("--before") + 1]) if "--before" in arguments else None
    long = "--long" in arguments
    plain = [a for i, a in enumerate(arguments) if not a.startswith("--") and (i == 0 or arguments[i - 1] != "--before")]
    section = plain[0]
    seeds = int(plain[1]) if len(plain) > 1 else 10
    print(f"bench_audit_bytes {section}: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load {os.getloadavg()[0]:.1f} (2 cores shared)", flush=True)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        if section == "spelling":
            spelling(directory, before)
        elif section == "state":
            state(directory, before, seeds)
        elif section == "seconds":
            seconds_budget(directory, before, long)
        elif section == "delta":
            delta(directory, seeds)
        elif section == "alarms":
            alarms(directory, seeds)
        else:
            raise SystemExit(f"unknown section {section!r}: spelling, state, seconds, delta or alarms")


if __name__ == "__main__":
    main()
