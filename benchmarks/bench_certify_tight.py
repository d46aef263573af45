"""Benchmark: exact certification of a channel tight on every pair, against the non-tight case.

The channel is the dense random k x k channel of ``bench_cli_certify.py`` (entries
written as ``repr`` floats, read exactly). The non-tight case is its E there (the
tight E + 0.5, ``inf`` on 10% of the pairs), which the float filter decides alone.
The tight case writes every ``E[x, x']`` as ``log(a/b)`` with ``a/b`` the pair's
largest ratio ``Q[x, y] / Q[x', y]`` exactly (found at the float argmax; the
certifier checks it: the verdict must be certified with margin 0), so no pair can
be decided in floats and all ``k (k - 1)`` pairs are finished in rationals.

Timed reading included (``read_privacy_matrix`` + ``read_channel`` with
``exact=True``, then ``certify(..., exact=True)``); medians over ``--repeats`` rounds,
the cases interleaved in each round; the load average is printed (the machine may be
shared). ``--before PATH`` also times another checkout (e.g. ``git worktree add --detach
/tmp/before main``) on the same files in the same rounds; each case then runs in a fresh
child process per checkout (its ``designer`` first on ``sys.path``), and the CPU seconds of
each part are printed next to the wall-clock ones (on a loaded machine they move less).

Run: ``.venv/bin/python benchmarks/bench_certify_tight.py [--k 1000] [--repeats 3] [--before PATH]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from bench_cli_certify import write_case

from designer.certify import certify
from designer.io import read_channel, read_privacy_matrix


def write_tight(folder: Path, q_path: Path) -> Path:
    """``E[x, x'] = log(max_y Q[x, y] / Q[x', y])`` written exactly (``0`` when the ratio is <= 1)."""
    cells = [line.split(",") for line in q_path.read_text().splitlines()]
    logs = np.log(np.array(cells, dtype=float))
    lines = []
    for x, row in enumerate(cells):
        witness = np.argmax(logs[x][None, :] - logs, axis=1)
        entries = []
        for x_prime, y in enumerate(witness.tolist()):
            ratio = Fraction(row[y]) / Fraction(cells[x_prime][y])
            entries.append("0" if x_prime == x or ratio <= 1 else f"log({ratio})")
        lines.append(",".join(entries))
    path = folder / "E_tight.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_and_certify(e_path: Path, q_path: Path) -> tuple[dict[str, float], object]:
    start, cpu = time.perf_counter(), time.process_time()
    privacy = read_privacy_matrix(e_path)
    channel = read_channel(q_path)
    read, read_cpu = time.perf_counter(), time.process_time()
    certificate = certify(channel, privacy, exact=True)
    return {"read": read - start, "certify": time.perf_counter() - read, "read cpu": read_cpu - cpu,
            "certify cpu": time.process_time() - read_cpu}, certificate


def in_child(tree: Path, e_path: Path, q_path: Path) -> tuple[dict[str, float], object]:
    """:func:`read_and_certify` in a fresh interpreter whose ``designer`` is the one in ``tree``."""
    script = (f"import sys, json; sys.path[:0] = [{str(tree)!r}, {str(Path(__file__).parent)!r}]; "
              "from bench_certify_tight import read_and_certify; "
              f"times, c = read_and_certify({str(e_path)!r}, {str(q_path)!r}); "
              "print(json.dumps([times, c.verdict, c.margin]))")
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=environment)
    times, verdict, margin = json.loads(output.stdout.splitlines()[-1])
    return times, argparse.Namespace(certified=verdict == "certified", verdict=verdict, margin=margin)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout to time in the same rounds (child processes)")
    arguments = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    trees = {"": None} if arguments.before is None else {"before: ": arguments.before.resolve(), "now: ": here}
    with tempfile.TemporaryDirectory() as folder:
        e_loose, q_path = write_case(Path(folder), arguments.k, 0)
        e_tight = write_tight(Path(folder), q_path)
        print(f"k = {arguments.k}, load average {os.getloadavg()[0]:.1f}", flush=True)
        cases = {f"{tree}{name}": (path, e_path) for tree, path in trees.items()
                 for name, e_path in (("non-tight", e_loose), ("tight on every pair", e_tight))}
        times: dict[str, list[dict[str, float]]] = {name: [] for name in cases}
        for _ in range(arguments.repeats):
            for name, (tree, e_path) in cases.items():
                if tree is None:
                    seconds, certificate = read_and_certify(e_path, q_path)
                else:
                    seconds, certificate = in_child(tree, e_path, q_path)
                if not certificate.certified or ("non-tight" not in name and certificate.margin != 0):
                    raise SystemExit(f"{name}: {certificate.verdict}, margin {certificate.margin}")
                times[name].append(seconds)
        base_name = next(iter(cases))
        base = statistics.median(run["read"] + run["certify"] for run in times[base_name])
        for name, runs in times.items():
            total = statistics.median(run["read"] + run["certify"] for run in runs)
            cpu = statistics.median(run["read cpu"] + run["certify cpu"] for run in runs)
            parts = ", ".join(f"{part} {statistics.median(run[part] for run in runs):.2f} s" for part in runs[0])
            print(f"{name}: {total:.2f} s, cpu {cpu:.2f} s ({parts}), {total / base:.2f}x {base_name}")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
