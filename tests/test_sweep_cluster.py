"""Sweeps and aggregation on a real multi-process Dask cluster on 127.0.0.1.

The fixture starts ``dask scheduler`` and two ``dask worker`` processes (no nanny,
so a killed worker stays dead) and stops them afterwards, with timeouts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest
from inprocess_cli import run_cli

from designer.sweep import parse_plan, run_sweep
from designer.sweep.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
DASK = str(Path(sys.executable).with_name("dask"))

ROBUST_PLAN = """
task = "robust-design"
epsilons = [0.5, 2.0, 6.0]
protocols = ["polyopt", "ue-cr", "srr"]
[draws]
shapes = [[2, 3]]
records = [300]
alphas = [0.05]
count = 3
seed = 11
"""

SIMULATE_PLAN = """
task = "simulate"
epsilons = [0.5, 2.0]
[[families]]
family = "ldp"
k = 8
[simulate]
mechanisms = ["grr", "hr"]
n = 20000
distribution = "zipf:1.1"
replicates = 2
"""


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2):
    """``dask scheduler`` + ``workers`` x ``dask worker`` on 127.0.0.1; yields (address, worker processes)."""
    from distributed import Client

    scheduler_file = folder / "scheduler.json"
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log = open(folder / "cluster.log", "w")
    processes = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                   "--scheduler-file", str(scheduler_file)], stdout=log, stderr=log, env=environment)]
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        worker_processes = [
            subprocess.Popen([DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                              "--host", "127.0.0.1", "--name", f"worker-{i}"], stdout=log, stderr=log, env=environment)
            for i in range(workers)
        ]
        processes += worker_processes
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(workers, timeout=90)
        yield address, worker_processes
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=5)  # a worker without a nanny may linger on SIGTERM: it is disposable
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with dask_cluster(tmp_path_factory.mktemp("cluster")) as (address, _):
        yield address


def stored_rows(path: Path):
    return ResultStore(path).read().drop(columns=["seconds"])


@pytest.mark.parametrize("plan_text", [ROBUST_PLAN, SIMULATE_PLAN], ids=["robust-design", "simulate"])
def test_cluster_sweep_equals_the_serial_run(cluster, tmp_path, plan_text):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(plan_text)
    result = run_cli("sweep", str(plan_file), "--out", str(tmp_path / "cluster"), "--scheduler", cluster)
    assert result.returncode == 0, result.stderr
    plan = parse_plan(tomllib.loads(plan_text), source=str(plan_file))
    run_sweep(plan, tmp_path / "serial", workers=0)
    on_cluster, serial = stored_rows(tmp_path / "cluster"), stored_rows(tmp_path / "serial")
    assert len(serial) == len(plan.cells) and serial["error"].isna().all()
    assert on_cluster.equals(serial)  # bit for bit: deterministic designs, simulations seeded by cell hash
    if plan.task == "simulate":  # the replicates differ (their seeds do), the sampling error is small
        assert serial.groupby(["protocol", "epsilon"])["objective"].nunique().eq(2).all()
        assert serial["objective"].between(0, 0.5).all()


def test_cluster_aggregation_equals_duckdb_and_bincount(cluster, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    channel = ROOT / "designer" / "examples" / "grr4_Q.csv"
    reports = [rng.integers(0, 4, size=50_000) for _ in range(4)]
    reports[2][:5] = 9  # outside the alphabet {0, 1, 2, 3}
    for i, part in enumerate(reports):
        pq.write_table(pa.table({"y": part}), tmp_path / f"reports-{i}.parquet")
        (tmp_path / f"reports-{i}.csv").write_text("y\n" + "\n".join(map(str, part)) + "\n")
    outputs = {}
    for kind in ("parquet", "csv"):
        for engine in ("duckdb", "dask"):
            extra = ["--scheduler", cluster] if engine == "dask" else []
            result = run_cli("estimate", "--mechanism", str(channel), "--reports", str(tmp_path / f"*.{kind}"), "--json",
                             *extra)
            assert result.returncode == 0, result.stderr
            outputs[kind, engine] = json.loads(result.stdout)
            assert outputs[kind, engine]["engine"] == engine
    everything = np.concatenate(reports)
    counts = np.bincount(everything, minlength=10)
    for output in outputs.values():
        assert output["reports"] == everything.size and output["in_alphabet"] == counts[:4].sum()
        assert output["outside_alphabet"] == {"count": 5, "distinct": 1, "values": {"9": 5}}
    assert all(output["estimate"] == outputs["parquet", "duckdb"]["estimate"] for output in outputs.values())


@contextlib.contextmanager
def extra_worker(address: str, folder: Path):
    """One more ``dask worker`` (no nanny) on the cluster at ``address``, joined before it is yielded; stopped
    afterwards if still alive. Starting it costs one process, not a new scheduler and two workers."""
    from distributed import Client

    environment = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    log = open(folder / "worker.log", "w")
    worker = None
    try:
        with Client(address, timeout="30s") as client:  # closed before the sweep opens its own
            before = len(client.scheduler_info()["workers"])
            worker = subprocess.Popen([DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                       "--host", "127.0.0.1", "--name", "worker-extra"], stdout=log, stderr=log,
                                      env=environment)
            client.wait_for_workers(before + 1, timeout=90)
        yield worker
    finally:
        if worker is not None and worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=5)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(timeout=10)
        log.close()


def test_killing_a_worker_loses_no_cell(cluster, tmp_path):
    """A worker that joined the module's cluster is killed after two cells: its cells are computed elsewhere."""
    plan = parse_plan(tomllib.loads(ROBUST_PLAN.replace('"polyopt", "ue-cr", "srr"', '"polyopt"')
                                    .replace("[[2, 3]]", "[[3, 3]]").replace("count = 3", "count = 4")))
    killed = threading.Event()
    with extra_worker(cluster, tmp_path) as worker:
        def progress(done: int, todo: int) -> None:
            if done >= 2 and not killed.is_set():
                worker.send_signal(signal.SIGKILL)
                killed.set()

        summary = run_sweep(plan, tmp_path / "out", scheduler=cluster, progress=progress)
        assert killed.is_set() and worker.wait(timeout=10) == -signal.SIGKILL
    frame = ResultStore(tmp_path / "out").read()
    assert summary.computed == len(plan.cells) == len(frame) == 12
    assert frame["error"].isna().all() and set(frame["hash"]) == {cell.hash for cell in plan.cells}


def test_millisecond_cells_travel_in_batches(cluster, tmp_path, monkeypatch):
    """400 binary randomised-response designs: a few dozen tasks, every cell once, each value exact."""
    import math

    import designer.sweep.execution as execution

    sizes: list[int] = []
    measured = execution.task_cells

    def recording(rows, remaining, slots):
        sizes.append(len(rows))
        return measured(rows, remaining, slots)

    monkeypatch.setattr(execution, "task_cells", recording)
    epsilons = ", ".join(f"{0.5 + i / 200:.3f}" for i in range(400))
    plan = parse_plan(tomllib.loads(f'task = "design"\nepsilons = [{epsilons}]\n[[families]]\nfamily = "ldp"\nk = 2\n'))
    summary = run_sweep(plan, tmp_path / "out", scheduler=cluster)
    frame = ResultStore(tmp_path / "out").read()
    assert summary.computed == len(frame) == sum(sizes) == 400 and frame["hash"].is_unique
    assert len(sizes) < 100 and max(sizes) > 10  # batched: far fewer tasks than cells
    assert summary.parts == 1
    for eps, objective in zip(frame["epsilon"], frame["objective"]):
        p = math.exp(eps) / (1 + math.exp(eps))
        assert objective == pytest.approx(math.log(2) + p * math.log(p) + (1 - p) * math.log(1 - p), abs=1e-9)


def held_results(client, name: str) -> int:
    """Task results held in memory by the worker called ``name``, asked through ``client``."""
    address = next(address for address, info in client.scheduler_info()["workers"].items() if info["name"] == name)
    return client.run(lambda dask_worker: len(dask_worker.data), workers=[address])[address]


def unfetched_results(client, name: str) -> int:
    """Results the worker called ``name`` still holds 0.2 s after it first holds one; 0 after 30 s.

    Called while the sweep waits (in its progress callback): nothing is fetched meanwhile, and a result the
    sweep has already fetched and released is freed within milliseconds.
    """
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if held_results(client, name):
            time.sleep(0.2)
            if held := held_results(client, name):
                return held
        time.sleep(0.02)
    return 0


def test_a_users_default_client_survives_a_sweep_that_loses_a_worker(cluster, tmp_path):
    """The sweep's futures are awaited on the sweep's own client, not on the user's open default client.

    The extra worker is killed while it holds a finished result the sweep has not fetched yet: the sweep's
    client must wait for the recomputation on its own event loop (waiting on the user's raised "... is bound to
    a different event loop", stored as each lost cell's error).
    """
    from distributed import Client, default_client

    plan = parse_plan(tomllib.loads(ROBUST_PLAN.replace('"polyopt", "ue-cr", "srr"', '"polyopt"')
                                    .replace("count = 3", "count = 2")))
    held: list[int] = []
    with extra_worker(cluster, tmp_path) as worker, Client(cluster, timeout="30s") as user:
        def progress(done: int, todo: int) -> None:
            if not held:
                held.append(unfetched_results(user, "worker-extra"))
                worker.send_signal(signal.SIGKILL)

        summary = run_sweep(plan, tmp_path / "cluster", scheduler=cluster, progress=progress)
        assert worker.wait(timeout=10) == -signal.SIGKILL and held[0] >= 1
        assert default_client() is user and user.submit(sum, [1, 2]).result() == 3
    run_sweep(plan, tmp_path / "serial", workers=0)
    on_cluster, serial = stored_rows(tmp_path / "cluster"), stored_rows(tmp_path / "serial")
    assert summary.computed == len(plan.cells) == len(serial) == 6 and summary.errors == 0
    assert serial["error"].isna().all() and on_cluster.equals(serial)
