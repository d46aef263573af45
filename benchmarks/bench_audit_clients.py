"""Benchmark: auditing real library clients at scale (pure-ldp 1.2, multi-freq-ldpy), through the CLI.

1. **Audit time per 10^6 reports, against the audit of commit 4e06f22** (extracted
   with ``git archive`` into a temporary directory, run in the same session):
   62,500 reports per input of k = 16 inputs (10^6 in all) of pure-ldp's ``DE``
   (categorical), ``OUE`` (bit vectors) and ``OLH`` (hashed ``(value, seed)``
   pairs, ``--support``), eps = 1 against E = 1, fixed split, one process each;
   wall time and peak memory (the child's maximum resident set).
2. **The pre-1.2 pure-ldp unary-encoding bug**: pure-ldp 1.1.2 (downloaded from
   PyPI with ``pip download pure-ldp==1.1.2 --no-deps`` and installed with
   ``--target`` into a temporary directory, never into the environment) sets
   the true bit with probability ``p + (1 - p) q`` instead of ``p``. Its ``OUE``
   and ``SUE`` clients (k = 16) are audited against their own eps at growing
   budgets; the smallest budget that says ``violated`` is reported.
3. ``--long``: every pure-ldp and multi-freq-ldpy client at eps = 1, k = 16,
   10^6 reports per input (1.6e7 reports): the smallest off-diagonal entry of
   the ``--lower-bounds-out`` matrix (simultaneous 95% lower bounds on every
   pair's privacy loss), wall time and peak memory; hashed reports with
   ``local_hashing_support``, pure-ldp's HR with ``hadamard_response_support``.
   About an hour on a loaded machine (``--long pure_ldp`` or ``--long multi_freq_ldpy``: one library).

Run: ``.venv/bin/python benchmarks/bench_audit_clients.py [--long [pure_ldp | multi_freq_ldpy]]`` (a few
minutes without ``--long``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BASELINE_COMMIT = "4e06f22"
K, EPS = 16, 1.0
SHAPES = (("categorical", "DE"), ("bit vector", "OUE"), ("hashed", "OLH"))
PURE_LDP = ("DE", "OUE", "SUE", "HE", "HR", "OLH")
MULTI_FREQ_LDPY = ("GRR", "OUE", "SUE", "HE", "OLH", "BLH", "SS")
HASHED = {"OLH", "BLH"}
OLD_BUDGETS = (1_000, 3_000, 10_000, 30_000, 100_000)
OLD_EPSILONS = (1.0, 0.5, 0.1)


def audit_command(library: str, protocol: str, eps: float, reports_per_input: int, out: Path,
                  seed: int = 1) -> list[str]:
    """The exact ``ldp-designer audit`` command line of one client (the one documented in docs/audit.md)."""
    command = [sys.executable, "-m", "designer.cli", "audit", "--E", str(out / f"E_{eps:g}.csv"),
               "--sampler", f"designer.audit.libraries:{library}", "--arg", f"protocol={protocol}",
               "--arg", f"eps={eps:g}", "--arg", f"k={K}", "--reports-per-input", str(reports_per_input),
               "--lower-bounds-out", str(out / "L.csv"), "--max-memory", "12", "--seed", str(seed), "--json"]
    if protocol in HASHED:
        command += ["--support", "designer.audit.libraries:local_hashing_support"]
    if (library, protocol) == ("pure_ldp", "HR") and eps <= 1:
        command += ["--support", "designer.audit.libraries:hadamard_response_support"]
    return command


def run(command: list[str], pythonpath: str, out: Path) -> dict:
    """Run one audit (in the directory of the last ``pythonpath`` entry: ``python -m`` puts the working
    directory first on the path); its JSON, wall seconds and peak resident memory (MB)."""
    environment = dict(os.environ, PYTHONPATH=pythonpath)
    start = time.perf_counter()
    with open(out / "stdout.json", "w") as stdout, open(out / "stderr.txt", "w") as stderr:
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=environment,
                                   cwd=pythonpath.split(os.pathsep)[-1])
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: violated
        raise RuntimeError(f"{' '.join(command)} failed: {(out / 'stderr.txt').read_text()[-2000:]}")
    result = json.loads((out / "stdout.json").read_text())
    lower = np.array([[float(v) for v in row] for row in result["lower_bounds"]])
    off_diagonal = lower[~np.eye(len(lower), dtype=bool)]
    return {"json": result, "seconds": seconds, "megabytes": usage.ru_maxrss / 1024,
            "min_lower": float(off_diagonal.min()), "max_lower": float(off_diagonal.max())}


def write_E(out: Path, eps: float) -> None:
    E = np.full((K, K), eps)
    np.fill_diagonal(E, 0.0)
    np.savetxt(out / f"E_{eps:g}.csv", E, delimiter=",", fmt="%.17g")


def baseline_tree(out: Path) -> Path:
    """The audit of commit 4e06f22 (designer and solvers), extracted into ``out/baseline``."""
    tree = out / "baseline"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE_COMMIT, "designer", "solvers"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def time_per_million(out: Path) -> None:
    print("== audit time per 10^6 reports (62,500 per input, k = 16), this tree vs commit", BASELINE_COMMIT)
    tree = baseline_tree(out)
    print(f"{'shape':<12} {'client':<12} {'now s':>7} {'now MB':>7} {'then s':>7} {'then MB':>8} {'ratio':>6}"
          f" {'min L now':>9} {'then':>6}")
    for shape, protocol in SHAPES:
        command = audit_command("pure_ldp", protocol, EPS, 62_500, out)
        now = run(command, str(ROOT), out)
        then = run(command, str(tree), out)
        print(f"{shape:<12} {'pure-ldp ' + protocol:<12} {now['seconds']:>7.1f} {now['megabytes']:>7.0f} "
              f"{then['seconds']:>7.1f} {then['megabytes']:>8.0f} {then['seconds'] / now['seconds']:>6.2f}"
              f" {now['min_lower']:>9.3f} {then['min_lower']:>6.3f}")


def old_pure_ldp(out: Path) -> None:
    print("== pure-ldp 1.1.2 unary encoding (true bit kept with p + (1-p) q), k = 16, audited against its eps")
    wheel = out / "wheel"
    target = out / "pure_ldp_1_1_2"
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(pip + ["download", "pure-ldp==1.1.2", "--no-deps", "-q", "-d", str(wheel)], check=True,
                   capture_output=True)
    subprocess.run(pip + ["install", "--no-deps", "-q", "--target", str(target), *map(str, wheel.glob("*.whl"))],
                   check=True, capture_output=True)
    print(f"{'client':<6} {'eps':>4} {'true loss':>9} {'reports/input':>13} {'verdict':>9} {'bound':>6} {'s':>5}")
    for protocol in ("OUE", "SUE"):
        for eps in OLD_EPSILONS:
            write_E(out, eps)
            p, q = unary_probabilities(protocol, eps)
            kept = p + (1 - p) * q
            loss = np.log(kept * (1 - q) / (q * (1 - kept)))
            for budget in OLD_BUDGETS:
                result = run(audit_command("pure_ldp", protocol, eps, budget, out), f"{target}:{ROOT}", out)
                verdict = result["json"]["verdict"]
                if verdict == "violated" or budget == OLD_BUDGETS[-1]:
                    print(f"{protocol:<6} {eps:>4g} {loss:>9.3f} {budget:>13,} {verdict:>9} "
                          f"{result['json']['largest_lower_bound']:>6.3f} {result['seconds']:>5.1f}")
                    break


def unary_probabilities(protocol: str, eps: float) -> tuple[float, float]:
    """``(p, q)`` of pure-ldp's unary encoding: OUE ``(1/2, 1/(e^eps+1))``, SUE ``p = e^(eps/2)/(e^(eps/2)+1)``."""
    if protocol == "OUE":
        return 0.5, 1 / (np.exp(eps) + 1)
    p = np.exp(eps / 2) / (np.exp(eps / 2) + 1)
    return p, 1 - p


def every_client(out: Path, only: str | None = None) -> None:
    print("== every client at eps = 1, k = 16, 10^6 reports per input: simultaneous lower bounds (95%)")
    print(f"{'client':<22} {'min L':>6} {'max L':>6} {'verdict':>18} {'s':>6} {'MB':>6}")
    for library, protocols in (("pure_ldp", PURE_LDP), ("multi_freq_ldpy", MULTI_FREQ_LDPY)):
        if only is not None and library != only:
            continue
        for protocol in protocols:
            try:
                result = run(audit_command(library, protocol, EPS, 1_000_000, out), str(ROOT), out)
            except RuntimeError as error:
                print(f"{library + ' ' + protocol:<22} failed: {str(error)[-300:]}", flush=True)
                continue
            print(f"{library + ' ' + protocol:<22} {result['min_lower']:>6.3f} {result['max_lower']:>6.3f} "
                  f"{result['json']['verdict']:>18} {result['seconds']:>6.0f} {result['megabytes']:>6.0f}", flush=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory)
        write_E(out, EPS)
        if "--long" in sys.argv:  # optionally followed by one library: pure_ldp or multi_freq_ldpy
            position = sys.argv.index("--long") + 1
            every_client(out, sys.argv[position] if position < len(sys.argv) else None)
            return
        time_per_million(out)
        old_pure_ldp(out)


if __name__ == "__main__":
    main()
