"""Cost of PolyOpt's optimality proof (``robust --verify``) against the design alone.

For the confidence sets of ``COUNTS`` (alpha = 0.05, eps = 1) it times, in the same
run (median of ``REPEATS``):

* the column-generation design alone (:func:`designer.robust.polyopt.polyopt`), the
  baseline;
* the same design followed by :func:`designer.robust.polyopt.verify_optimality`
  (exact enumeration of the outer cone Γ'' and the LP-dual check on its vertices);
* the command line end to end, ``robust --protocol polyopt --method column-generation``
  without and with ``--verify`` (import, design, certification, proof, writing).

It prints the ratios and the proof (status, gap, vertices).

Run: ``.venv/bin/python benchmarks/bench_robust_verify.py``
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import timed

from designer.robust.confidence import ConfidenceSet
from designer.robust.polyopt import polyopt, verify_optimality

COUNTS = {
    "(2,3)": [[30, 10, 5], [20, 40, 15]],
    "(3,3)": [[30, 10, 5], [20, 40, 15], [5, 5, 20]],
}
REPEATS = 5
CLI = str(Path(sys.executable).with_name("ldp-designer"))


def write_records(counts, path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["s", "u"])
        for s, row in enumerate(counts):
            for u, count in enumerate(row):
                writer.writerows([[f"s{s}", f"u{u}"]] * count)


def main() -> None:
    print("| case | design alone | design + verify | ratio | proof | CLI without --verify | CLI --verify | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, counts in COUNTS.items():
            confidence = ConfidenceSet(counts, 0.05)
            design_seconds, design = timed(lambda: polyopt(confidence, 1.0, method="column-generation"), REPEATS)
            verify_seconds, proof = timed(
                lambda: verify_optimality(confidence, polyopt(confidence, 1.0, method="column-generation")), REPEATS)
            records = Path(folder) / f"{name}.csv"
            write_records(counts, records)
            base = [CLI, "robust", "--data", str(records), "--secret", "s", "--public", "u", "--eps", "1",
                    "--protocol", "polyopt", "--method", "column-generation", "--out", str(Path(folder) / "Q.csv")]
            plain, _ = timed(lambda: subprocess.run(base, check=True, capture_output=True), REPEATS)
            verified, _ = timed(lambda: subprocess.run([*base, "--verify"], check=True, capture_output=True), REPEATS)
            print(f"| {name} | {design_seconds:.2f} s | {verify_seconds:.2f} s | {verify_seconds / design_seconds:.2f}x "
                  f"| {proof.status}, gap {proof.gap:.1e} nats, {proof.vertices} vertices, proof {proof.seconds:.2f} s "
                  f"| {plain:.2f} s | {verified:.2f} s | {verified / plain:.2f}x |")


if __name__ == "__main__":
    main()
