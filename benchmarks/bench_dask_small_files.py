"""Benchmark: ``estimate --scheduler`` (Dask) against DuckDB on many small report files, as a user runs it.

1,000 Parquet files of 10^4 reports (``uint8``). An external Dask cluster is started as a user
starts one (``dask scheduler``; two ``dask worker --nthreads 1``), with the checkout under test on
``PYTHONPATH`` of every process (the scheduler too: it unpickles the task graph). Each count runs
in a fresh interpreter, as the command line does, and reports

* ``import``: importing ``distributed`` in the client (DuckDB's path never does);
* ``count``: ``count_source`` (connecting to the scheduler, the tasks, the merge; what
  ``count_seconds`` of ``estimate --json`` reports);
* ``wall``: the whole child process (interpreter start, imports, listing the files, count).

The first Dask count after the cluster starts is reported apart ("cold": the workers import DuckDB
and the package on their first task). DuckDB and Dask are interleaved in every round; medians over
``--repeats`` rounds. ``--before PATH`` times another checkout the same way (its own cluster, same
files, same run). ``--preload`` starts the workers with ``--preload designer.aggregate.counting``
(they import DuckDB and the package when they start, not on their first task).

Run: ``.venv/bin/python benchmarks/bench_dask_small_files.py [--repeats 5] [--before PATH] [--preload]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FILES, ROWS = 1000, 10_000
CHILD = """
import json, sys, time
start = time.perf_counter()
from designer.aggregate.counting import count_source
from designer.aggregate.sources import resolve_reports
source = resolve_reports(sys.argv[1])
imported = time.perf_counter()
if len(sys.argv) > 2:
    import distributed
imported_dask = time.perf_counter()
counted = count_source(source, scheduler=sys.argv[2] if len(sys.argv) > 2 else None)
print(json.dumps({"import": imported_dask - imported, "count": counted.seconds, "total": counted.total,
                  "in_child": time.perf_counter() - start}))
"""


def generate(folder: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    folder.mkdir()
    for index in range(FILES):
        pq.write_table(pa.table({"y": rng.integers(0, 16, ROWS).astype(np.uint8)}), folder / f"r-{index:04d}.parquet")


def child(tree: Path, reports: Path, scheduler: str | None) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    output = subprocess.run([sys.executable, "-c", CHILD, str(reports), *([scheduler] if scheduler else [])],
                            capture_output=True, text=True, env=environment, cwd=reports.parent)  # not this tree
    if output.returncode:
        raise SystemExit(f"{tree}: {output.stderr.strip().splitlines()[-1]}")
    times = json.loads(output.stdout.splitlines()[-1])
    assert times["total"] == FILES * ROWS
    return {**times, "wall": time.perf_counter() - start}


class Cluster:
    """``dask scheduler`` and two single-thread ``dask worker`` processes with ``tree`` on PYTHONPATH."""

    def __init__(self, tree: Path, port: int, preload: bool = False):
        environment = {**os.environ, "PYTHONPATH": str(tree)}
        self.address = f"tcp://127.0.0.1:{port}"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": environment, "cwd": "/"}
        self.processes = [subprocess.Popen([BIN / "dask", "scheduler", "--port", str(port),
                                            "--dashboard-address", ":0"], **quiet)]
        time.sleep(3)
        options = ["--preload", "designer.aggregate.counting"] if preload else []
        self.processes += [subprocess.Popen([BIN / "dask", "worker", self.address, "--nthreads", "1",
                                             "--dashboard-address", ":0", *options], **quiet) for _ in range(2)]
        from distributed import Client

        with Client(self.address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)

    def close(self) -> None:
        for process in reversed(self.processes):
            process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout, timed the same way in the same run")
    parser.add_argument("--preload", action="store_true", help="workers import the counting module when they start")
    arguments = parser.parse_args()
    trees = {"": ROOT} if arguments.before is None else {"before: ": arguments.before.resolve(), "now: ": ROOT}
    folder = Path(tempfile.mkdtemp(prefix="bench-dask-small-", dir="/tmp"))
    try:
        generate(folder / "small")
        print(f"{FILES} files x {ROWS} reports; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")
        child(ROOT, folder / "small", None)  # page cache warm
        results: dict[str, list[dict]] = {}
        for index, (label, tree) in enumerate(trees.items()):
            cluster = Cluster(tree, 8786 + 11 * (index + 1), arguments.preload)
            try:
                results[f"{label}Dask, first count (cold workers)"] = [child(tree, folder / "small", cluster.address)]
                for _ in range(arguments.repeats):
                    results.setdefault(f"{label}DuckDB", []).append(child(tree, folder / "small", None))
                    results.setdefault(f"{label}Dask (warm workers)", []).append(
                        child(tree, folder / "small", cluster.address))
            finally:
                cluster.close()
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
        print("| engine | count (median) | import distributed | whole process | count / DuckDB's | process / DuckDB's |")
        print("|---|---|---|---|---|---|")
        for name, runs in results.items():
            label = name.split(": ")[0] + ": " if ": " in name else ""
            duck = results[f"{label}DuckDB"]
            count, wall = (statistics.median(run[part] for run in runs) for part in ("count", "wall"))
            duck_count, duck_wall = (statistics.median(run[part] for run in duck) for part in ("count", "wall"))
            imported = statistics.median(run["import"] for run in runs)
            print(f"| {name} | {count:.2f} s | {imported:.2f} s | {wall:.2f} s | {count / duck_count:.2f}x | "
                  f"{wall / duck_wall:.2f}x |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
