"""Benchmark: ``ldp-designer certify`` end to end in float mode against a plain numpy script.

Baseline (measured in the same run, interleaved with the CLI): a script that
``np.loadtxt``-s both CSVs and computes the tight E with a row loop
(``max_y log Q[x, y] - log Q[x', y]`` for one x at a time), then compares with E.
Cases: dense random channels k = 100, 300, 1000 with E = the tight E + 0.5 and
``inf`` on 10% of the pairs (so the E file also goes through the fast path).

Also measured in-process: the reader layer (``read_channel`` + ``read_privacy_matrix``,
float mode) against ``np.loadtxt`` of the same files, exact-mode reading at k = 1000
(for scale), and the candidate
vectorised parsers on the 1000 x 1000 channel (numpy ``loadtxt``, pandas' C
engine with its import time measured in a fresh interpreter, pyarrow when
installed, Python ``float`` per cell).

Run: ``.venv/bin/python benchmarks/bench_cli_certify.py [repeats]``
"""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from timing import run_times, timed

from designer.io import read_channel, read_privacy_matrix

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / ".venv" / "bin" / "ldp-designer"
PYTHON = sys.executable
SCRIPT = """
import sys
import numpy as np
E = np.loadtxt(sys.argv[1], delimiter=",")
Q = np.loadtxt(sys.argv[2], delimiter=",")
logQ = np.log(Q)
tight = np.empty_like(E)
for x in range(Q.shape[0]):
    tight[x] = np.max(logQ[x][None, :] - logQ, axis=1)
print("certified" if np.all(tight <= E + 1e-9) else "violated")
"""


def write_case(folder: Path, k: int, seed: int) -> tuple[Path, Path]:
    """A dense random channel and a loose E with inf entries, written as the writer writes floats (repr)."""
    rng = np.random.default_rng(seed)
    Q = rng.random((k, k)) + 0.05
    Q /= Q.sum(axis=1, keepdims=True)
    logs = np.log(Q)
    tight = np.max(logs[:, None, :] - logs[None, :, :], axis=2) if k <= 300 else None
    if tight is None:
        tight = np.empty((k, k))
        for x in range(k):
            tight[x] = np.max(logs[x][None, :] - logs, axis=1)
    E = tight + 0.5
    E[rng.random((k, k)) < 0.1] = np.inf
    np.fill_diagonal(E, 0.0)
    paths = folder / f"E{k}.csv", folder / f"Q{k}.csv"
    for path, matrix in zip(paths, (E, Q)):
        with path.open("w", newline="") as handle:
            csv.writer(handle, lineterminator="\n").writerows([[repr(v) for v in row] for row in matrix.tolist()])
    return paths


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    assert result.returncode == 0 and "certified" in result.stdout.lower(), result.stderr
    return seconds


def end_to_end(e_path: Path, q_path: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of the CLI and of the numpy script, runs interleaved."""
    cli, script = [], []
    for _ in range(repeats):
        cli.append(wall([str(CLI), "certify", "--E", str(e_path), "--channel", str(q_path)]))
        script.append(wall([PYTHON, "-c", SCRIPT, str(e_path), str(q_path)]))
    return statistics.median(cli), statistics.median(script)


def parsers(q_path: Path) -> dict[str, float]:
    """Seconds to parse the channel CSV with each candidate (median of 3)."""
    found = {}
    found["numpy loadtxt"], _ = timed(lambda: np.loadtxt(q_path, delimiter=",", ndmin=2))
    found["python float per cell"], _ = timed(
        lambda: [[float(cell) for cell in line.split(",")] for line in q_path.read_text().splitlines()]
    )
    try:
        import pandas

        found["pandas C engine"], _ = timed(lambda: pandas.read_csv(q_path, header=None, engine="c").to_numpy())
        imports = [
            float(subprocess.run([PYTHON, "-c", "import time, numpy; s = time.perf_counter(); import pandas; "
                                  "print(time.perf_counter() - s)"], capture_output=True, text=True).stdout)
            for _ in range(3)
        ]
        found["pandas import (fresh interpreter)"] = statistics.median(imports)
    except ImportError:
        pass
    try:
        import pyarrow.csv as arrow

        options = arrow.ReadOptions(autogenerate_column_names=True)
        found["pyarrow"], _ = timed(lambda: arrow.read_csv(q_path, read_options=options))
    except ImportError:
        found["pyarrow"] = float("nan")  # not installed (not a dependency)
    return found


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as folder:
        cases = {k: write_case(Path(folder), k, seed=k) for k in (100, 300, 1000)}
        e_path, q_path = cases[1000]
        print("parsers, 1000 x 1000 channel (22 MB):")
        for name, seconds in parsers(q_path).items():
            print(f"  {name:36s} {seconds:.3f} s")
        print("in-process reading of both files (float mode):")
        for k, (e, q) in cases.items():
            reader, _ = timed(lambda: (read_channel(q, exact=False), read_privacy_matrix(e, exact=False)), repeats)
            loadtxt, _ = timed(lambda: (np.loadtxt(q, delimiter=","), np.loadtxt(e, delimiter=",")), repeats)
            print(f"  k={k:5d}: reader layer {reader:.4f} s, np.loadtxt {loadtxt:.4f} s, ratio {reader / loadtxt:.2f}")
        exact, _ = timed(lambda: (read_channel(q_path, exact=True), read_privacy_matrix(e_path, exact=True)), 1)
        print(f"  k= 1000, exact mode (Fractions, as written): {exact:.3f} s")
        times, _ = run_times(lambda: subprocess.run([PYTHON, "-c", "import numpy"]), 5)
        print(f"python -c 'import numpy': {statistics.median(times):.3f} s")
        print("end to end (median of interleaved runs):")
        for k, (e, q) in cases.items():
            cli, script = end_to_end(e, q, repeats)
            print(f"  k={k:5d}: ldp-designer certify {cli:.3f} s, numpy script {script:.3f} s, ratio {cli / script:.2f}")


if __name__ == "__main__":
    main()
