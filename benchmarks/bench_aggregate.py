"""Benchmark: counting reports out of core (DuckDB, Dask) against numpy ``bincount`` in memory.

Reports: outputs of 16-ary randomised response (eps = 1) under a Zipf(1.1) prior,
one ``uint8`` column ``y``, written once as Parquet files of ``ROWS_PER_FILE`` rows
(generated chunk by chunk, so memory stays flat) under a temporary folder, deleted
at the end.

* DuckDB (``designer.aggregate.counting.count_reports``, the ``estimate`` command's
  path) over all the files (10^9 reports by default) and over the first 10^8,
  each in a child process: wall time, rows/s and the child's peak RSS
  (``ru_maxrss`` from ``os.wait4``).
* Dask (``count_reports(..., scheduler=...)``: batches of files counted by DuckDB on the
  workers, tree reduction) over the first 10^8 on an embedded LocalCluster of 2 workers
  (start-up and a warm-up count of one file, which imports DuckDB on the workers, not timed).
* numpy: ``bincount`` over the same reports held in memory as ``uint8`` arrays
  (chunk by chunk; memory = 1 byte per report).

Run: ``.venv/bin/python benchmarks/bench_aggregate.py [total reports, default 1e9]``.

Partitioned case (``bench_aggregate.py partitions [reports per day, default 1e7] [days, default 30]``):
the same reports in a Hive layout ``day=DD/part-0.parquet``, timed in one run, in-process, after
one warm-up read so every engine sees the files in the page cache (medians of 3; of 5 for the
incremental day and Dask):

* ``--by day``: one grouped count (``count_reports(folder, by=("day",))``) against one
  ungrouped DuckDB count of the same files;
* incremental day: saved counts (with their manifest) of the first ``days - 1`` days merged with
  the last day (``count_increment`` + ``write_counts``: read the counts, stat the 29 counted
  files, hash and count the new one, write the merged counts) against counting that day fresh;
* Dask: 1,000 files of 10^4 reports counted on a LocalCluster of 2 single-thread workers
  (start-up not timed) against DuckDB over the same files.

Structured case (``bench_aggregate.py structured [N, default 1e7]``): block HR at
k = 43,750 as in the paper's Gowalla experiment (Section 7: 35 blocks of 1250, a (5, 7)
grid of the 125 x 350 locations; 71,680 outputs), eps = 1, packaged with a 32-bit coin.
N reports (Zipf(1.1) prior over the symbols, shuffled) drawn with the mechanism's numpy
sampler at the package's exact level, written as one Parquet file. Timed in the same run,
medians of 3: the DuckDB count (in a child process, as above), loading the package
(structure, SHA-256, exact proof), ``estimate_reports`` (alphabet check, estimator (19),
exact standard errors, intervals) and the whole command, against the count. At k = 1000 (8 blocks of 125, 1024
outputs) the same structured estimate is timed against the dense path the command used
before (materialise Q, least-squares inverse, ``pinv`` covariance; BLAS limited to 1 thread).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from timing import timed

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


def chunk(index: int, cdf: np.ndarray, rows: int = ROWS_PER_FILE) -> np.ndarray:
    rng = np.random.default_rng([2026, index])
    return np.searchsorted(cdf, rng.random(rows), side="right").astype(np.uint8)


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
            count_reports(str(root / "reports-0000.parquet"), "y", scheduler=cluster.scheduler_address)  # warm-up
            for pattern, count in ((str(root / "*.parquet"), files * ROWS_PER_FILE), (small, small_files * ROWS_PER_FILE)):
                start = time.perf_counter()
                counted = count_reports(pattern, "y", scheduler=cluster.scheduler_address)
                seconds = time.perf_counter() - start
                assert counted.total == count
                rows.append(("Dask, LocalCluster 2 workers", counted.total, seconds, float("nan")))

        cdf = np.cumsum(output_distribution())
        cdf[-1] = 1.0
        in_memory = [chunk(index, cdf) for index in range(small_files)]
        start = time.perf_counter()
        counts = sum(np.bincount(array, minlength=K) for array in in_memory)
        seconds = time.perf_counter() - start
        assert dict(zip(counted.values, counted.counts)) == {str(value): int(c) for value, c in enumerate(counts)}
        rows.append(("numpy bincount, in memory (uint8)", int(counts.sum()), seconds, sum(a.nbytes for a in in_memory) / 2**20))
        baseline = rows[-1][2] / rows[-1][1]
        print(f"load average {os.getloadavg()}")
        print("| engine | reports | seconds | reports/s | time per report vs numpy bincount | peak memory (MiB) |")
        print("|---|---|---|---|---|---|")
        for label, count, seconds, peak in rows:
            print(f"| {label} | {count:.0e} | {seconds:.2f} | {count / seconds:.3g} | {seconds / count / baseline:.2f}x | {peak:.0f} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def structured_case(total: int) -> None:
    """Block HR at k = 43,750: the structured estimate with intervals against the DuckDB count."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from threadpoolctl import threadpool_limits

    from designer.aggregate.counting import count_reports
    from designer.aggregate.estimate import estimate_reports, load_mechanism, unbiased_interval
    from designer.aggregate.structured import structured_unbiased_interval
    from designer.deploy.package import write_package
    from designer.deploy.structured import build_hadamard_package

    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-structured-", dir="/tmp"))
    print(f"machine shared with other jobs; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    try:
        write_package(root / "bhr.json", build_hadamard_package([1250] * 35, "1"))
        mechanism = load_mechanism(root / "bhr.json").structured
        rng = np.random.default_rng(2026)
        prior = np.arange(1, mechanism.k + 1, dtype=float) ** -1.1
        rng.shuffle(prior)
        prior /= prior.sum()
        start = time.perf_counter()
        reports = mechanism.sample(rng.choice(mechanism.k, size=total, p=prior), rng).astype(np.int32)
        pq.write_table(pa.table({"y": reports}), root / "reports.parquet")
        print(f"generated {total:.0e} reports (k = {mechanism.k}, {mechanism.n_outputs} outputs) in "
              f"{time.perf_counter() - start:.1f} s")
        del reports
        pattern = str(root / "*.parquet")
        child = [duckdb_child(pattern) for _ in range(3)]
        count_seconds = sorted(seconds for seconds, _, _ in child)[1]
        counted = count_reports(pattern, "y")
        load_seconds, loaded = timed(lambda: load_mechanism(root / "bhr.json"))
        estimate_seconds, result = timed(lambda: estimate_reports(loaded, counted.values, counted.counts))
        inside = np.bincount(np.asarray(counted.values, dtype=np.int64), counted.counts, minlength=mechanism.n_outputs)
        core_seconds, _ = timed(lambda: structured_unbiased_interval(inside, mechanism))
        command = [sys.executable, "-c", "from designer.cli import main; main()", "estimate", "--mechanism",
                   str(root / "bhr.json"), "--reports", pattern, "--json"]
        cli_seconds, _ = timed(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL))
        values = np.array([row["value"] for row in result["estimate"]])
        covered = np.mean([row["low"] <= prior[x] <= row["high"] for x, row in enumerate(result["estimate"])])
        print(f"estimate: TV to the prior {0.5 * np.abs(values - prior).sum():.3f}, 95% intervals cover {covered:.4f}")
        print("| step (k = 43,750, N = %.0e) | median s | vs DuckDB count |" % total)
        print("|---|---|---|")
        for label, seconds in (("DuckDB count (child process)", count_seconds),
                               ("load + verify the package (exact proof)", load_seconds),
                               ("`estimate_reports`: alphabet, (19), standard errors, intervals", estimate_seconds),
                               ("of which estimator (19) + exact standard errors", core_seconds),
                               ("whole `ldp-designer estimate --json` (start-up, count, estimate, 43,750 rows out)",
                                cli_seconds)):
            print(f"| {label} | {seconds:.4f} | {seconds / count_seconds:.3f}x |")
        small = load_mechanism_for_blocks(root, [125] * 8)
        counts = rng.multinomial(total, small.forward(np.full(small.k, 1.0 / small.k)))
        materialise_seconds, matrix = timed(lambda: np.asarray(small.channel().matrix, dtype=float), 1)
        with threadpool_limits(1):  # 2 BLAS threads on a shared 2-core machine ran 4-25x slower than 1
            dense_seconds, _ = timed(lambda: unbiased_interval(counts, matrix))
        structured_seconds, _ = timed(lambda: structured_unbiased_interval(counts, small))
        print(f"| k = {small.k}, {small.n_outputs} outputs: dense path (materialise Q once) | "
              f"{materialise_seconds:.3f} | - |")
        print(f"| k = {small.k}: dense least squares + pinv covariance | {dense_seconds:.4f} | "
              f"{dense_seconds / structured_seconds:.0f}x the structured time |")
        print(f"| k = {small.k}: structured (19) + exact standard errors | {structured_seconds:.5f} | 1x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def load_mechanism_for_blocks(root: Path, sizes: list[int]):
    """The structured mechanism of a freshly written block-hadamard package with these block sizes."""
    from designer.aggregate.estimate import load_mechanism
    from designer.deploy.package import write_package
    from designer.deploy.structured import build_hadamard_package

    write_package(root / "small.json", build_hadamard_package(sizes, "1"))
    return load_mechanism(root / "small.json").structured


def partitions_case(per_day: int, days: int) -> None:
    """``--by day``, the incremental day and Dask's tree reduction, each against DuckDB in the same run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from designer.aggregate.counting import count_source
    from designer.aggregate.counts_file import read_counts, write_counts
    from designer.aggregate.filters import parse_by
    from designer.aggregate.increments import count_increment
    from designer.aggregate.sources import resolve_reports

    root = Path(tempfile.mkdtemp(prefix="bench-aggregate-partitions-", dir="/tmp"))
    print(f"machine shared with other jobs; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    try:
        cdf = np.cumsum(output_distribution())
        cdf[-1] = 1.0
        start = time.perf_counter()
        for day in range(1, days + 1):
            (root / "r" / f"day={day:02d}").mkdir(parents=True)
            pq.write_table(pa.table({"y": chunk(day, cdf, per_day)}), root / "r" / f"day={day:02d}" / "part-0.parquet")
        (root / "small").mkdir()
        for index in range(1000):
            pq.write_table(pa.table({"y": chunk(10_000 + index, cdf, 10_000)}),
                           root / "small" / f"r-{index:04d}.parquet")
        print(f"generated {days} days x {per_day:.0e} reports and 1000 files x 1e4 "
              f"in {time.perf_counter() - start:.0f} s")
        source = resolve_reports(str(root / "r"))
        count_source(source)  # warm-up: the page cache holds the files for every engine below
        plain_seconds, plain = timed(lambda: count_source(source))
        by_seconds, grouped = timed(lambda: count_source(source, by=("day",)))
        assert grouped.total == plain.total == days * per_day and len(grouped.groups()) == days

        earlier = resolve_reports(str(root / "r" / "day=*" / "*.parquet"))
        last = earlier.files[-1]
        day = parse_by("day")
        saved = count_increment(replace(earlier, files=earlier.files[:-1]), by=day)
        counts = root / "counts.parquet"
        write_counts(counts, saved.rows(), "y", day, None, list(saved.files))
        fresh_source = resolve_reports(last)

        def increment():  # read and check the saved counts, plan by content, count the new day, write
            merged = count_increment(earlier, saved=read_counts(counts, "y"))
            write_counts(root / "merged.parquet", merged.rows(), "y", day, None, list(merged.files))
            return merged

        fresh_seconds, fresh = timed(lambda: count_source(fresh_source, by=("day",)), 5)
        increment_seconds, merged = timed(increment, 5)
        assert merged.groups() == grouped.groups() and fresh.total == per_day

        from distributed import Client, LocalCluster

        small = resolve_reports(str(root / "small"))
        duck_seconds, duck = timed(lambda: count_source(small), 5)
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster):
            count_source(small, scheduler=cluster.scheduler_address)  # warm-up: imports on the workers
            dask_seconds, on_dask = timed(lambda: count_source(small, scheduler=cluster.scheduler_address), 5)
        assert on_dask.groups() == duck.groups() and duck.total == 10**7
        print(f"load average {os.getloadavg()}")
        print("| goal | measured (median) | baseline (same run) | ratio | target |")
        print("|---|---|---|---|---|")
        print(f"| `--by day`, {days} partitions x {per_day:.0e} | {by_seconds:.2f} s | one ungrouped DuckDB count "
              f"{plain_seconds:.2f} s | {by_seconds / plain_seconds:.2f}x | <= 1.3x |")
        print(f"| incremental day: {days - 1} days saved + 1 new day of {per_day:.0e} (read, stat, hash, count, "
              f"merge, write) | {increment_seconds:.3f} s | that day fresh {fresh_seconds:.3f} s | "
              f"{increment_seconds / fresh_seconds:.2f}x | <= 1.2x |")
        print(f"| Dask, 1000 files x 1e4, LocalCluster 2 workers | {dask_seconds:.2f} s | "
              f"DuckDB {duck_seconds:.2f} s | "
              f"{dask_seconds / duck_seconds:.2f}x | <= 3x |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "partitions":
        partitions_case(int(float(sys.argv[2])) if len(sys.argv) > 2 else 10**7,
                        int(sys.argv[3]) if len(sys.argv) > 3 else 30)
    elif len(sys.argv) > 1 and sys.argv[1] == "structured":
        structured_case(int(float(sys.argv[2])) if len(sys.argv) > 2 else 10**7)
    else:
        main()
