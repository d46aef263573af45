"""Benchmark: counting reports out of core (DuckDB, Dask) against numpy ``bincount`` in memory.

Reports: outputs of 16-ary randomised response (eps = 1) under a Zipf(1.1) prior,
one ``uint8`` column ``y``, written once as Parquet files of ``ROWS_PER_FILE`` rows
(generated chunk by chunk, so memory stays flat) under a temporary folder, deleted
at the end.

* DuckDB (``designer.aggregate.counting.count_reports``, the ``estimate`` command's
  path) over all the files (10^9 reports by default) and over the first 10^8,
  each in a child process: wall time, rows/s and the child's peak RSS
  (``ru_maxrss`` from ``os.wait4``).
* Dask (``count_reports(..., scheduler=...)``) over the first 10^8 on an embedded
  LocalCluster of 2 workers (start-up not timed).
* numpy: ``bincount`` over the same reports held in memory as ``uint8`` arrays
  (chunk by chunk; memory = 1 byte per report).

Run: ``.venv/bin/python benchmarks/bench_aggregate.py [total reports, default 1e9]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROWS_PER_FILE = 10_000_000
K = 16
EPSILON = 1.0


def output_distribution() -> np.ndarray:
    """q = Q^T p for 16-ary randomised response at eps = 1 and a Zipf(1.1) prior."""
    prior = np.arange(1, K + 1, dtype=float) ** -1.1
    prior /= prior.sum()
    keep = np.exp(EPSILON) / (np.exp(EPSILON) + K - 1)
    other = 1 / (np.exp(EPSILON) + K - 1)
    return prior * keep + (1 - prior) * other


def chunk(index: int, cdf: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng([2026, index])
    return np.searchsorted(cdf, rng.random(ROWS_PER_FILE), side="right").astype(np.uint8)


def generate(folder: Path, files: int) -> tuple[float, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cdf = np.cumsum(output_distribution())
    cdf[-1] = 1.0
    start = time.perf_counter()
    for index in range(files):
        pq.write_table(pa.table({"y": chunk(index, cdf)}), folder / f"reports-{index:04d}.parquet")
    size = sum(path.stat().st_size for path in folder.glob("*.parquet"))
    return time.perf_counter() - start, size


def duckdb_child(pattern: str) -> tuple[float, int, float]:
    """(seconds, reports, peak RSS MiB) of a DuckDB count in a fresh child process."""
    code = (
        "import json, sys, time\n"
        "from designer.aggregate.counting import count_reports\n"
        "t = time.perf_counter(); counted = count_reports(sys.argv[1], 'y')\n"
        "print(json.dumps({'seconds': time.perf_counter() - t, 'total': counted.total}))\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, pattern], stdout=subprocess.PIPE, text=True)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    assert status == 0, status
    result = json.loads(output.strip().splitlines()[-1])
    return result["seconds"], result["total"], usage.ru_maxrss / 1024


def main() -> None:
    total = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**9
    files = total // ROWS_PER_FILE
    small_files = min(files, 10)
    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-", dir="/tmp"))
    print(f"machine shared with other jobs; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    try:
        seconds, size = generate(root, files)
        print(f"generated {files * ROWS_PER_FILE:.1e} reports in {files} Parquet files: {size / 2**20:.0f} MiB on disk, {seconds:.0f} s")
        rows = []
        small = str(root / "reports-000[0-9].parquet") if small_files == 10 else str(root / "*.parquet")
        for label, pattern, count in (("DuckDB", str(root / "*.parquet"), files * ROWS_PER_FILE),
                                      ("DuckDB", small, small_files * ROWS_PER_FILE)):
            seconds, counted, peak = duckdb_child(pattern)
            assert counted == count
            rows.append((label, count, seconds, peak))

        from distributed import Client, LocalCluster

        from designer.aggregate.counting import count_reports

        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster):
            start = time.perf_counter()
            counted = count_reports(small, "y", scheduler=cluster.scheduler_address)
            seconds = time.perf_counter() - start
            assert counted.total == small_files * ROWS_PER_FILE
            rows.append(("Dask, LocalCluster 2 workers", counted.total, seconds, float("nan")))

        cdf = np.cumsum(output_distribution())
        cdf[-1] = 1.0
        in_memory = [chunk(index, cdf) for index in range(small_files)]
        start = time.perf_counter()
        counts = sum(np.bincount(array, minlength=K) for array in in_memory)
        seconds = time.perf_counter() - start
        assert dict(zip(counted.values, counted.counts)) == {value: int(c) for value, c in enumerate(counts)}
        rows.append(("numpy bincount, in memory (uint8)", int(counts.sum()), seconds, sum(a.nbytes for a in in_memory) / 2**20))
        baseline = rows[-1][2] / rows[-1][1]
        print(f"load average {os.getloadavg()}")
        print("| engine | reports | seconds | reports/s | time per report vs numpy bincount | peak memory (MiB) |")
        print("|---|---|---|---|---|---|")
        for label, count, seconds, peak in rows:
            print(f"| {label} | {count:.0e} | {seconds:.2f} | {count / seconds:.3g} | {seconds / count / baseline:.2f}x | {peak:.0f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
