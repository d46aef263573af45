"""Up-front refusals: how fast oversized runs are refused, against ``python -c "import numpy"``.

Each case runs the console script as a subprocess (a fresh interpreter, as a user
would) and records the wall time and the peak resident memory of the child.
Usage: ``python benchmarks/bench_limits.py [repeats]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from timing import timed

CLI = [sys.executable, "-m", "designer.cli"]
CASES = {
    'python -c "import numpy" (baseline)': [sys.executable, "-c", "import numpy"],
    "simulate --mechanism grr --k 10^9 (refused: memory)": [
        *CLI, "simulate", "--mechanism", "grr", "--k", "1000000000", "--eps", "1", "--n", "10"],
    "simulate --mechanism hr --k 10 --n 10^12 (refused: projected time)": [
        *CLI, "simulate", "--mechanism", "hr", "--k", "10", "--eps", "1", "--n", str(10**12)],
    "spec ldp --k 10^8 (refused: memory)": [*CLI, "spec", "ldp", "--k", "100000000", "--out", "/tmp/never.csv"],
    "range --m 4 --D 1 --n 10^12 (refused: memory)": [*CLI, "range", "--m", "4", "--D", "1", "--n", str(10**12)],
}


def run(command: list[str]) -> tuple[int, float]:
    """Exit code and peak RSS (MiB) of one child process (``wait4`` reports that child alone)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage.ru_maxrss / 1024


def main(repeats: int = 5) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, median of {repeats}")
    print("| case | exit | median (s) | ratio to `import numpy` | peak RSS (MiB) |")
    print("|---|---|---|---|---|")
    baseline = None
    for name, command in CASES.items():
        seconds, (code, peak) = timed(lambda: run(command), repeats)
        baseline = baseline or seconds
        print(f"| {name} | {code} | {seconds:.3f} | {seconds / baseline:.2f} | {peak:.0f} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
