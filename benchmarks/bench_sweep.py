"""Benchmark: sweep throughput on 1 and 2 local Dask workers against a serial loop, and per-cell overhead.

* CPU-bound cells: PolyOpt (float vertices) at |S| = |U| = 3, n = 1000, alpha = 0.05,
  Jeffreys draws, 3 epsilons (``CPU_CELLS`` cells, about 0.2-1 s each). Baseline: a
  plain loop calling :func:`designer.sweep.runners.run_cell` in this process (no store,
  no Dask). Then ``run_sweep`` serially (``workers=0``: the store's overhead) and on an
  embedded LocalCluster of 1 and 2 worker processes. Cluster start-up is timed apart;
  the throughput is over the cells only (from the first submission to the last row stored).
* Trivial cells: ``certify`` of a 2 x 2 channel at ``TRIVIAL_CELLS`` epsilons (about 1 ms
  each): per-cell overhead = (sweep time - serial loop time) / cells, on 1 worker.

Run: ``.venv/bin/python benchmarks/bench_sweep.py`` (about 2-4 minutes).
"""

from __future__ import annotations

import os
import statistics
import shutil
import tempfile
import time
import tomllib
from pathlib import Path

from designer.sweep import parse_plan, run_sweep
from designer.sweep.cells import package_version
from designer.sweep.runners import run_cell

CPU_CELLS_DRAWS = 32  # x 3 epsilons
TRIVIAL_CELLS = 600
REPEATS = 3

CPU_PLAN = f"""
task = "robust-design"
epsilons = [0.5, 1.0, 2.0]
protocols = ["polyopt"]
[draws]
shapes = [[3, 3]]
records = [1000]
alphas = [0.05]
count = {CPU_CELLS_DRAWS}
seed = 7
"""


def trivial_plan(folder: Path) -> str:
    channel = folder / "Q.csv"
    channel.write_text("3/4,1/4\n1/4,3/4\n")
    epsilons = ", ".join(f"{1.2 + i / 1000:.4f}" for i in range(TRIVIAL_CELLS))
    return f"""
task = "certify"
epsilons = [{epsilons}]
[[families]]
family = "ldp"
k = 2
[certify]
channels = ["{channel}"]
"""


def serial_loop(plan) -> float:
    version = package_version()
    start = time.perf_counter()
    for cell in plan.cells:
        row = run_cell(cell.inputs, cell.hash, version)
        assert row["error"] is None, row["error"]
    return time.perf_counter() - start


def sweep_seconds(plan, folder: Path, workers: int) -> tuple[float, float]:
    """(seconds over the cells, seconds of cluster start-up) of one fresh sweep."""
    out = folder / f"out-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    begin = time.perf_counter()
    started = {}
    summary = run_sweep(plan, out, workers=workers, on_start=lambda todo, skipped: started.setdefault("t", time.perf_counter()))
    assert summary.computed == len(plan.cells) and summary.errors == 0
    return summary.seconds, started["t"] - begin


def main() -> None:
    print(f"machine shared with other jobs; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        plan = parse_plan(tomllib.loads(CPU_PLAN))
        n = len(plan.cells)
        run_cell(plan.cells[0].inputs, plan.cells[0].hash, package_version())  # warm-up: imports, caches
        times: dict[str, list[float]] = {}
        startups: dict[str, list[float]] = {}
        for _ in range(REPEATS):  # interleaved, so a change in the machine's load hits every variant
            times.setdefault("serial loop (baseline)", []).append(serial_loop(plan))
            startups.setdefault("serial loop (baseline)", []).append(0.0)
            for workers in (0, 1, 2):
                name = "run_sweep serial (store only)" if workers == 0 else f"LocalCluster, {workers} worker(s)"
                seconds, startup = sweep_seconds(plan, folder, workers)
                times.setdefault(name, []).append(seconds)
                startups.setdefault(name, []).append(startup)
        baseline = statistics.median(times["serial loop (baseline)"])
        one = statistics.median(times["LocalCluster, 1 worker(s)"])
        print(f"CPU-bound: {n} PolyOpt (3,3) cells, medians of {REPEATS} interleaved runs; load average {os.getloadavg()}")
        print("| run | median s | runs (s) | cells/s | vs serial loop | vs 1 worker | cluster start-up (s) |")
        print("|---|---|---|---|---|---|---|")
        for name, values in times.items():
            seconds = statistics.median(values)
            print(f"| {name} | {seconds:.2f} | {', '.join(f'{v:.2f}' for v in values)} | {n / seconds:.2f} | "
                  f"{baseline / seconds:.2f}x | {one / seconds:.2f}x | {statistics.median(startups[name]):.2f} |")

        trivial = parse_plan(tomllib.loads(trivial_plan(folder)), base=folder)
        m = len(trivial.cells)
        loop = serial_loop(trivial)
        one, _ = sweep_seconds(trivial, folder, 1)
        serial_store, _ = sweep_seconds(trivial, folder, 0)
        print(f"trivial cells ({m}, certify 2x2): serial loop {1e3 * loop / m:.2f} ms/cell; "
              f"run_sweep serial {1e3 * serial_store / m:.2f} ms/cell; 1 worker {1e3 * one / m:.2f} ms/cell; "
              f"Dask overhead {1e3 * (one - loop) / m:.2f} ms/cell; load average {os.getloadavg()}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
