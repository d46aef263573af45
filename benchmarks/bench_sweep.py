"""Benchmark: sweep throughput on 1 and 2 local Dask workers against a serial loop, and per-cell overhead.

* CPU-bound cells: PolyOpt (float vertices) at |S| = |U| = 3, n = 1000, alpha = 0.05,
  Jeffreys draws, 3 epsilons (``CPU_CELLS`` cells, about 0.2-1 s each). Baseline: a
  plain loop calling :func:`designer.sweep.runners.run_cell` in this process (no store,
  no Dask). Then ``run_sweep`` serially (``workers=0``: the store's overhead) and on an
  embedded LocalCluster of 1 and 2 worker processes. Cluster start-up is timed apart;
  the throughput is over the cells only (from the first submission to the last row stored).
* Millisecond cells: ``design`` (mutual information) of four k = 4 families at 900
  epsilons, ``MS_CELLS`` = 3,600 cells of about 1-2 ms each, where the per-task cost of
  Dask matters: the serial loop against ``run_sweep`` serially and on 1 and 2 workers
  (cells batched per task, see :mod:`designer.sweep.execution`), and on 2 workers with
  one cell per task (the unbatched scheduling), interleaved; each time is divided by the
  serial loop of the same repeat, and the median of those ratios is reported. Overhead =
  1 worker / loop - 1 (goal: under 10%); goal: 2 workers no slower than the loop. The parts
  left in the store after each run are counted (compaction).

Run: ``.venv/bin/python benchmarks/bench_sweep.py [cpu] [millisecond]`` (default both;
about 2-4 minutes each on 2 cores).
"""

from __future__ import annotations

import os
import sys
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
MS_EPSILONS = 900  # x 4 families
MS_CELLS = 4 * MS_EPSILONS
REPEATS = 3
MS_REPEATS = 3

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


MS_PLAN = f"""
task = "design"
epsilons = {{ start = 0.5, stop = 4.0, num = {MS_EPSILONS}, spacing = "geometric" }}
[[families]]
family = "ldp"
k = 4
[[families]]
family = "high-low"
k = 4
sensitive = [0]
[[families]]
family = "block"
blocks = [2, 2]
[[families]]
family = "metric-line"
k = 4
"""


def serial_loop(plan) -> float:
    version = package_version()
    start = time.perf_counter()
    for cell in plan.cells:
        row = run_cell(cell.inputs, cell.hash, version)
        assert row["error"] is None, row["error"]
    return time.perf_counter() - start


def sweep_seconds(plan, folder: Path, workers: int, parts: list | None = None) -> tuple[float, float]:
    """(seconds over the cells, seconds of cluster start-up) of one fresh sweep; its part count into ``parts``."""
    out = folder / f"out-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    begin = time.perf_counter()
    started = {}
    summary = run_sweep(plan, out, workers=workers, on_start=lambda todo, skipped: started.setdefault("t", time.perf_counter()))
    assert summary.computed == len(plan.cells) and summary.errors == 0
    if parts is not None:
        parts.append(summary.parts)
    return summary.seconds, started["t"] - begin


def cpu_bound(folder: Path) -> None:
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


def millisecond(folder: Path) -> None:
    import designer.sweep.execution as execution

    plan = parse_plan(tomllib.loads(MS_PLAN))
    n = len(plan.cells)
    assert n == MS_CELLS
    run_cell(plan.cells[0].inputs, plan.cells[0].hash, package_version())  # warm-up: imports, caches
    times: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    startups: dict[str, list[float]] = {}
    parts: dict[str, list[int]] = {}
    variants = [("run_sweep serial", 0, execution.MAX_TASK_CELLS), ("LocalCluster, 1 worker", 1, execution.MAX_TASK_CELLS),
                ("LocalCluster, 2 workers", 2, execution.MAX_TASK_CELLS),
                ("LocalCluster, 2 workers, one cell per task (unbatched)", 2, 1)]
    for _ in range(MS_REPEATS):  # interleaved; each variant's ratio is taken against this repeat's loop
        loop = serial_loop(plan)
        times.setdefault("serial loop (baseline)", []).append(loop)
        ratios.setdefault("serial loop (baseline)", []).append(1.0)
        for name, workers, cap in variants:
            execution.MAX_TASK_CELLS = cap
            try:
                seconds, startup = sweep_seconds(plan, folder, workers, parts.setdefault(name, []))
            finally:
                execution.MAX_TASK_CELLS = variants[0][2]
            times.setdefault(name, []).append(seconds)
            ratios.setdefault(name, []).append(seconds / loop)
            startups.setdefault(name, []).append(startup)
    print(f"millisecond cells: {n} designs (4 families, k = 4), {MS_REPEATS} interleaved repeats; "
          f"load average {os.getloadavg()}")
    print("| run | median s | runs (s) | ms/cell | time / same repeat's loop: median (runs) | cluster start-up (s) | parts left |")
    print("|---|---|---|---|---|---|---|")
    for name, values in times.items():
        seconds = statistics.median(values)
        startup = f"{statistics.median(startups[name]):.2f}" if name in startups else "-"
        left = ", ".join(map(str, parts[name])) if name in parts else "-"
        print(f"| {name} | {seconds:.2f} | {', '.join(f'{v:.2f}' for v in values)} | {1e3 * seconds / n:.2f} | "
              f"{statistics.median(ratios[name]):.2f} ({', '.join(f'{r:.2f}' for r in ratios[name])}) | {startup} | {left} |")


def main() -> None:
    sections = sys.argv[1:] or ["cpu", "millisecond"]
    print(f"machine shared with other jobs; {os.cpu_count()} CPUs; load average {os.getloadavg()}")
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        for section in sections:
            {"cpu": cpu_bound, "millisecond": millisecond}[section](folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
