"""Sweeps without a cluster: plans, hashes, cell results against the library, timeouts, resume after Ctrl-C."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from inprocess_cli import run_cli

from designer.robust.confidence import ConfidenceSet
from designer.robust.protocols import PROTOCOLS
from designer.sweep import PlanError, execution, load_plan, parse_plan, run_sweep
from designer.sweep.cells import cell_hash, jeffreys_counts, package_version
from designer.sweep.store import ResultStore

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from designer.cli import main; main()"]


def run_program(*arguments: str) -> subprocess.CompletedProcess:
    """The command line as a program: for a run that opens a Dask client (it would outlive an in-process run)."""
    return subprocess.run([*CLI, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=120)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


DESIGN_PLAN = """
task = "design"
epsilons = [0.5, 1.0, 2.0]
[[families]]
family = "ldp"
k = 2
[[families]]
family = "block"
blocks = [2, 2]
"""

ROBUST_PLAN = """
task = "robust-design"
epsilons = [0.5, 2.0]
protocols = ["srr", "grr-cr", "polyopt"]
certify = true
[draws]
shapes = [[2, 2]]
records = [200]
alphas = [0.05]
count = 2
seed = 5
"""


@pytest.mark.parametrize(
    "text, message",
    [
        ('task = "design"\nepsilons = [1.0]\n[[families]]\nfamily = "nope"\nk = 3\n', "unknown family 'nope'"),
        ('task = "design"\n[[families]]\nfamily = "ldp"\nk = 3\n', "missing field 'epsilons'"),
        ('task = "design"\nepsilons = [1.0, -0.5]\n[[families]]\nfamily = "ldp"\nk = 3\n', "every epsilon must be > 0"),
        ('task = "design"\nepsilons = [1.0]\n[[families]]\nfamily = "high-low"\nk = 3\n', "missing field 'sensitive'"),
        ('task = "robust-design"\nepsilons = [1.0]\nprotocols = ["srr"]\n', "missing field 'draws'"),
        ('task = "fly"\nepsilons = [1.0]\n', "unknown task 'fly'"),
    ],
)
def test_bad_plan_is_one_line_and_exit_2_before_any_work(tmp_path, text, message):
    plan = write(tmp_path / "plan.toml", text)
    result = run_cli("sweep", str(plan), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and message in result.stderr
    assert not (tmp_path / "out").exists()


def test_unreachable_scheduler_is_one_line_and_exit_2(tmp_path):
    plan = write(tmp_path / "plan.toml", DESIGN_PLAN)
    result = run_program("sweep", str(plan), "--out", str(tmp_path / "out"), "--scheduler", "tcp://127.0.0.1:9")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.stderr
    assert not (tmp_path / "out").exists()


def test_epsilon_grids():
    def grid(text: str) -> list[float]:
        plan = parse_plan(tomllib_loads(DESIGN_PLAN.replace("[0.5, 1.0, 2.0]", text)))
        return sorted({cell.inputs["epsilon"] for cell in plan.cells})

    assert grid("{start = 0.5, stop = 2.0, num = 3, spacing = 'geometric'}") == [0.5, 1.0, 2.0]
    assert grid("{start = 0.2, stop = 8.0, num = 12}") == pytest.approx(np.linspace(0.2, 8.0, 12).tolist(), abs=1e-6)
    with pytest.raises(PlanError, match="epsilons.num must be >= 1"):
        grid("{start = 0.2, stop = 8.0, num = 0}")
    with pytest.raises(PlanError, match="same cell twice"):
        grid("[0.5, 0.5]")


def test_cell_hash_covers_inputs_and_version():
    plan = parse_plan(tomllib_loads(DESIGN_PLAN))
    hashes = [cell.hash for cell in plan.cells]
    assert len(set(hashes)) == len(hashes) == 6
    first = plan.cells[0]
    assert first.hash == cell_hash(first.inputs) == cell_hash(dict(reversed(list(first.inputs.items()))))
    assert cell_hash({**first.inputs, "epsilon": 0.5000001}) != first.hash
    assert package_version() != "0+unknown"


def tomllib_loads(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


def test_design_cells_match_the_closed_form(tmp_path):
    """k = 2 classic LDP: the optimum is binary randomised response, I = log 2 - H_b(e^eps / (1 + e^eps))."""
    summary = run_sweep(parse_plan(tomllib_loads(DESIGN_PLAN)), tmp_path / "out", workers=0)
    assert (summary.total, summary.computed, summary.errors) == (6, 6, 0)
    frame = ResultStore(tmp_path / "out").read()
    assert frame["certified"].all() and frame["error"].isna().all()
    for family, k in (("ldp", 2), ("block", 4)):
        rows = frame[frame["family"] == family].sort_values("epsilon")
        assert rows["k"].tolist() == [k] * 3
        for eps, objective in zip(rows["epsilon"], rows["objective"]):
            p = math.exp(eps) / (1 + math.exp(eps))
            binary = math.log(2) + p * math.log(p) + (1 - p) * math.log(1 - p)
            # two independent blocks of two: I = H(block) + I within the block = log 2 + binary
            expected = binary if family == "ldp" else math.log(2) + binary
            assert objective == pytest.approx(expected, abs=1e-9)


def test_robust_cells_match_direct_protocol_calls(tmp_path):
    plan = parse_plan(tomllib_loads(ROBUST_PLAN))
    assert len(plan.cells) == 2 * 2 * 3
    run_sweep(plan, tmp_path / "out", workers=0)
    frame = ResultStore(tmp_path / "out").read()
    assert frame["error"].isna().all() and (frame["verdict"] == "certified").all()
    for draw in (0, 1):
        counts = jeffreys_counts((2, 2), 200, 5, draw)
        assert np.all(counts.sum(axis=1) > 0) and counts.sum() == 200
        confidence = ConfidenceSet(counts, 0.05)
        for eps in (0.5, 2.0):
            for name in ("srr", "grr-cr"):
                row = frame[(frame["draw"] == draw) & (frame["epsilon"] == eps) & (frame["protocol"] == name)]
                assert row["objective"].item() == PROTOCOLS[name](confidence, eps).normalised_utility
            polyopt_value = frame[(frame["draw"] == draw) & (frame["epsilon"] == eps) & (frame["protocol"] == "polyopt")]
            # PolyOpt is optimal among the protocols of Theorem 11, so at least the SRR / GRR-CR designs
            others = frame[(frame["draw"] == draw) & (frame["epsilon"] == eps) & (frame["protocol"] != "polyopt")]
            assert polyopt_value["objective"].item() >= others["objective"].max() - 1e-9


def test_failures_and_timeouts_are_rows_not_fatal(tmp_path, monkeypatch):
    channel = write(tmp_path / "Q.csv", "1/2,1/2\n1/2,1/2\n")
    plan = write(tmp_path / "plan.toml", f"""
task = "certify"
epsilons = [1.0]
[[families]]
family = "ldp"
k = 2
[[families]]
family = "ldp"
k = 3
[certify]
channels = ["{channel.name}"]
""")
    run_sweep(load_plan(plan), tmp_path / "out", workers=0)
    frame = ResultStore(tmp_path / "out").read().set_index("k")
    assert frame.loc[2, "verdict"] == "certified" and frame.loc[2, "objective"] == pytest.approx(1.0)
    assert frame.loc[3, "error"].startswith("ValueError") and pd_isna(frame.loc[3, "objective"])
    slow = parse_plan(tomllib_loads(ROBUST_PLAN.replace('"srr", "grr-cr", "polyopt"', '"polyopt"').replace("count = 2", "count = 1")))
    # the cells wait on a gate first, so none can finish within the timeout however the threads are scheduled
    gate = threading.Event()
    real_run_cell = execution.run_cell
    monkeypatch.setattr(execution, "run_cell", lambda *arguments: (gate.wait(60), real_run_cell(*arguments))[1])
    try:
        summary = run_sweep(slow, tmp_path / "slow", workers=0, cell_timeout=1e-4)
    finally:
        gate.set()
    rows = ResultStore(tmp_path / "slow").read()
    assert summary.timed_out == summary.errors == len(rows) == 2
    assert rows["error"].str.startswith("timed out after 0.0001 s").all()


def pd_isna(value) -> bool:
    return value is None or value != value


#: The command line with every cell held 0.4 s first, so that the first part (stored after FLUSH_SECONDS = 2 s)
#: appears long before the 16 cells are done, on a fast machine too.
#: SIGINT gets Python's handler back: a shell's background job starts its children with SIGINT ignored.
SLOW_CELLS_CLI = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
                  "from designer.sweep import execution; cell = execution.run_cell; "
                  "execution.run_cell = lambda *arguments: (time.sleep(0.4), cell(*arguments))[1]; "
                  "from designer.cli import main; main()"]


def test_interrupted_sweep_resumes_without_recomputing(tmp_path):
    # 16 cells of 2 x 2 PolyOpt (milliseconds each: the 0.4 s hold paces the child, not the cells' CPU)
    plan = write(tmp_path / "plan.toml", ROBUST_PLAN.replace("count = 2", "count = 8").replace("certify = true", "certify = false")
                 .replace('"srr", "grr-cr", "polyopt"', '"polyopt"'))
    out = tmp_path / "out"
    child = subprocess.Popen([*SLOW_CELLS_CLI, "sweep", str(plan), "--out", str(out), "--workers", "0"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob("part-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(out.glob("part-*.parquet")), "no part written within 60 s"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    assert "interrupted:" in stderr and "rerun the same command to resume" in stderr
    total = len(load_plan(plan).cells)
    before = ResultStore(out).read()
    stored = set(before["hash"])
    assert 0 < len(stored) < total
    result = run_cli("sweep", str(plan), "--out", str(out), "--workers", "0")
    assert result.returncode == 0, result.stderr
    assert f"{total} cells, {len(stored)} already stored, {total - len(stored)} computed" in result.stderr
    frame = ResultStore(out).read()
    assert len(frame) == total and frame["hash"].is_unique and frame["error"].isna().all()
    # the stored rows are kept as they were (a recomputed cell would have a new 'seconds')
    assert frame[frame["hash"].isin(stored)].reset_index(drop=True).equals(before)
    assert len(list(out.glob("part-*.parquet"))) == 1  # the finished run merged its parts


def test_plot_and_summary_from_the_cli(tmp_path):
    plan = write(tmp_path / "plan.toml", DESIGN_PLAN)
    result = run_cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--workers", "0", "--plot", str(tmp_path / "curves.png"))
    assert result.returncode == 0, result.stderr
    assert "6 cells, 0 already stored, 6 computed" in result.stderr
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [name for name in os.listdir(tmp_path / "out") if name.endswith(".tmp")]
