"""The sweep store heals: quarantine of unreadable parts, retries, compaction, parameter columns, up-front checks."""

from __future__ import annotations

import math
import os
import time
import tomllib
from pathlib import Path

import pytest
from inprocess_cli import run_cli
from test_sweep import DESIGN_PLAN, ROBUST_PLAN, write

from designer.sweep import load_plan, parse_plan, run_sweep
from designer.sweep.cells import canonical_json
from designer.sweep.execution import MAX_TASK_CELLS, TASK_SECONDS, task_cells
from designer.sweep.plot import check_one_objective, curve_names, curve_table, plot_tradeoff
from designer.sweep.runners import COLUMNS
from designer.sweep.store import QUARANTINE, ResultStore


def binary_rr_information(eps: float) -> float:
    """I(X;Y) of binary randomised response under a uniform prior: log 2 - H_b(e^eps / (1 + e^eps))."""
    p = math.exp(eps) / (1 + math.exp(eps))
    return math.log(2) + p * math.log(p) + (1 - p) * math.log(1 - p)


def test_unreadable_parts_are_quarantined_and_recomputed(tmp_path):
    plan = write(tmp_path / "plan.toml", DESIGN_PLAN)
    out = tmp_path / "out"
    assert run_cli("sweep", str(plan), "--out", str(out), "--workers", "0").returncode == 0
    [part] = out.glob("part-*.parquet")
    data = part.read_bytes()
    part.write_bytes(data[: len(data) // 2])  # truncated
    (out / "part-00000000000000000001-1.parquet").write_bytes(b"")  # empty
    result = run_cli("sweep", str(plan), "--out", str(out), "--workers", "0")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("unreadable part") == 2 and "Parquet file size is 0 bytes" in result.stderr
    assert "6 cells, 0 already stored, 6 computed" in result.stderr
    assert sorted(path.name for path in (out / QUARANTINE).iterdir()) == sorted([part.name, "part-00000000000000000001-1.parquet"])
    frame = ResultStore(out).read()
    assert len(frame) == 6 and frame["error"].isna().all()
    for _, row in frame[frame["family"] == "ldp"].iterrows():
        assert row["objective"] == pytest.approx(binary_rr_information(row["epsilon"]), abs=1e-9)
    # the folder is still a Parquet dataset for pandas (the quarantine folder is skipped)
    import pandas as pd

    assert len(pd.read_parquet(out)) == 6


def test_retry_failed_recomputes_timed_out_cells(tmp_path, monkeypatch):
    import designer.sweep.execution as execution

    plan = write(tmp_path / "plan.toml", ROBUST_PLAN.replace('"srr", "grr-cr", "polyopt"', '"polyopt"').replace("count = 2", "count = 1"))
    out = tmp_path / "out"
    with monkeypatch.context() as patch:  # every cell outlasts the timeout (a cell warm from earlier tests can take
        # under 0.1 ms, and holding the GIL it finished before the join's timeout returned: 1 in ~3 runs of the files)
        computed = execution.run_cell
        patch.setattr(execution, "run_cell", lambda *arguments: (time.sleep(0.05), computed(*arguments))[1])
        first = run_cli("sweep", str(plan), "--out", str(out), "--workers", "0", "--cell-timeout", "0.0001")
    assert "2 computed" in first.stderr and "2 failed (2 timed out)" in first.stderr
    assert "2 of the plan's stored cells record an error; --retry-failed recomputes them" in first.stderr
    again = run_cli("sweep", str(plan), "--out", str(out), "--workers", "0", "--cell-timeout", "600")
    assert "2 already stored, 0 computed" in again.stderr  # without the flag nothing is retried
    retried = run_cli("sweep", str(plan), "--out", str(out), "--workers", "0", "--cell-timeout", "600", "--retry-failed")
    assert retried.returncode == 0, retried.stderr
    assert "0 already stored, 2 computed" in retried.stderr and "record an error" not in retried.stderr
    frame = ResultStore(out).read()
    run_sweep(load_plan(plan), tmp_path / "fresh", workers=0)
    fresh = ResultStore(tmp_path / "fresh").read()
    assert frame["error"].isna().all() and len(frame) == 2
    assert frame["hash"].tolist() == fresh["hash"].tolist() and frame["objective"].tolist() == fresh["objective"].tolist()
    assert (frame["objective"] > 0).all() and (frame["objective"] <= 1).all()


def test_family_parameters_and_E_hash_are_columns(tmp_path):
    plan = parse_plan(tomllib.loads("""
task = "design"
epsilons = [1.0]
families = [{ family = "high-low", k = 4, sensitive = [0] }, { family = "high-low", k = 4, sensitive = [0, 1, 2, 3] },
            { family = "ldp", k = 4 }]
"""))
    run_sweep(plan, tmp_path / "out", workers=0)
    frame = ResultStore(tmp_path / "out").read().set_index("sensitive", drop=False)
    import hashlib

    expected = hashlib.sha256(b'{"family":"high-low","k":4,"sensitive":[0]}').hexdigest()
    assert frame.loc["0", "E_hash"] == expected
    assert frame["E_hash"].nunique() == 3 and frame.loc["0", "params"] == canonical_json({}) == "{}"
    # every symbol sensitive is classic LDP: the same optimum as the ldp family
    ldp = frame[frame["family"] == "ldp"]["objective"].item()
    assert frame.loc["0,1,2,3", "objective"] == pytest.approx(ldp, abs=1e-9)
    assert frame.loc["0", "objective"] > ldp + 1e-3  # one sensitive symbol: less protection, more information
    table, keys = curve_table(frame.reset_index(drop=True))
    names = [name for name, _ in curve_names(table, keys)]
    assert sorted(names) == ["high-low, sensitive=0", "high-low, sensitive=0,1,2,3", "ldp"]


def test_params_column_holds_the_other_inputs(tmp_path):
    channel = write(tmp_path / "Q.csv", "3/4,1/4\n1/4,3/4\n")
    plan = parse_plan(tomllib.loads(f'task = "certify"\nepsilons = [1.5]\n[[families]]\nfamily = "ldp"\nk = 2\n'
                                    f'[certify]\nchannels = ["{channel}"]\n'))
    run_sweep(plan, tmp_path / "out", workers=0)
    row = ResultStore(tmp_path / "out").read().iloc[0]
    import hashlib
    import json

    params = json.loads(row["params"])
    assert params == {"channel": str(channel), "channel_sha256": hashlib.sha256(channel.read_bytes()).hexdigest()}
    assert row["objective"] == pytest.approx(1.5 - math.log(3), abs=1e-12)  # margin eps - log(3/4 / 1/4)


def test_plot_and_summary_read_only_the_current_plan(tmp_path):
    out = tmp_path / "out"
    stale = parse_plan(tomllib.loads(DESIGN_PLAN.replace("[0.5, 1.0, 2.0]", "[3.0]")), source="stale.toml")
    current = parse_plan(tomllib.loads(DESIGN_PLAN), source="current.toml")
    run_sweep(stale, out, workers=0)
    run_sweep(current, out, workers=0)
    hashes = {cell.hash for cell in current.cells}
    assert len(ResultStore(out).read()) == 8 and set(ResultStore(out).read(hashes)["hash"]) == hashes
    table, _ = curve_table(ResultStore(out).read(hashes))
    assert sorted(table["epsilon"].unique()) == [0.5, 1.0, 2.0]
    assert table.groupby("family")["count"].sum().to_dict() == {"block": 3, "ldp": 3}


def test_mixed_objectives_are_refused_before_any_cell(tmp_path):
    plan = write(tmp_path / "plan.toml", DESIGN_PLAN + '[design]\nutilities = ["mutual-information", "expected-loss"]\n')
    result = run_cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--plot", str(tmp_path / "c.png"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "one objective per axis" in result.stderr and "design (expected-loss), design (mutual-information)" in result.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "c.png").exists()
    assert run_cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--workers", "0").returncode == 0  # without --plot: fine
    frame = ResultStore(tmp_path / "out").read()
    with pytest.raises(ValueError, match="one objective per axis"):
        plot_tradeoff(frame, tmp_path / "c.png")
    check_one_objective(frame[frame["utility"] == "expected-loss"].to_dict("records"))


@pytest.mark.parametrize(
    "text, size",
    [
        ('task = "simulate"\nepsilons = [1.0, 2.0]\n[[families]]\nfamily = "ldp"\nk = 4\n'
         '[simulate]\nmechanisms = ["grr", "hr"]\nn = 100\nreplicates = 1e9\n', "4,000,000,000 cells (2 epsilons x 1 families x 2 mechanisms x 1000000000 replicates)"),
        ('task = "design"\nepsilons = {start = 0.1, stop = 2.0, num = 1e9}\n[[families]]\nfamily = "ldp"\nk = 4\n',
         "1,000,000,000 cells (1000000000 epsilons x 1 families x 1 utilities)"),
        ('task = "design"\nepsilons = [1.0]\n[[families]]\nfamily = "ldp"\nk = 100000000\n', "k = 100,000,000 symbols; at most 4,096"),
    ],
)
def test_plan_size_is_refused_up_front(tmp_path, text, size):
    plan = write(tmp_path / "plan.toml", text)
    start = time.monotonic()
    result = run_cli("sweep", str(plan), "--out", str(tmp_path / "out"))
    assert time.monotonic() - start < 30
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and size in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_unwritable_plot_format_fails_before_any_cell(tmp_path):
    plan = write(tmp_path / "plan.toml", DESIGN_PLAN)
    result = run_cli("sweep", str(plan), "--out", str(tmp_path / "out"), "--plot", str(tmp_path / "x.bmp"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "cannot write .bmp images" in result.stderr
    assert not (tmp_path / "out").exists()


def rows(hashes, objective: float) -> list[dict]:
    return [{**dict.fromkeys(COLUMNS), "hash": h, "task": "design", "epsilon": 1.0, "objective": objective} for h in hashes]


def test_compaction_merges_parts_newest_row_wins_and_survives_a_crash(tmp_path, monkeypatch):
    store = ResultStore(tmp_path / "out")
    for i in range(64):
        store.append(rows([f"h{i:02d}a", f"h{i:02d}b"], float(i)))
    store.append(rows(["h00a"], 100.0))  # a retried cell: the newer row must win
    before = store.read()
    assert len(store.parts()) == 65 and before.set_index("hash").loc["h00a", "objective"] == 100.0
    old = store.parts()

    def crash(self, missing_ok=False):
        raise OSError("killed")

    # a crash once the merged part is in place, before any old part is removed: the same rows
    with monkeypatch.context() as patch:
        patch.setattr(Path, "unlink", crash)
        with pytest.raises(OSError, match="killed"):
            store.compact()
    assert len(store.parts()) == 66 and set(old) < set(store.parts())
    assert store.read().equals(before) and store.stored_hashes() == set(before["hash"])
    assert store.compact() == (66, 128)
    assert len(store.parts()) == 1 and not set(store.parts()) & set(old)
    assert store.read().equals(before)
    result = run_cli("sweep", "--out", str(tmp_path / "out"), "--compact")
    assert result.returncode == 0 and "0 parts merged" in result.stderr and "1 part file now" in result.stderr
    refused = run_cli("sweep", "plan.toml", "--out", str(tmp_path / "out"), "--compact")
    assert refused.returncode == 2 and "either PLAN or --compact" in refused.stderr


def test_a_sweep_leaves_one_part(tmp_path, monkeypatch):
    import designer.sweep.execution as execution

    monkeypatch.setattr(execution, "FLUSH_ROWS", 2)  # a part every two rows while running
    summary = run_sweep(parse_plan(tomllib.loads(DESIGN_PLAN)), tmp_path / "out", workers=0)
    assert summary.parts == 1 == len(ResultStore(tmp_path / "out").parts()) and summary.computed == 6
    assert not [name for name in os.listdir(tmp_path / "out") if name.startswith(".")]


def test_task_sizes_follow_the_measured_cell_time():
    def measured(count: int, seconds: float) -> list[dict]:
        return [{"seconds": seconds}] * count

    assert task_cells(measured(4, 0.002), remaining=10_000, slots=4) == int(TASK_SECONDS / 0.002) == 125
    assert task_cells(measured(1, 3.0), remaining=10_000, slots=4) == 1  # slow cells: one per task
    assert task_cells(measured(8, 1e-6), remaining=100_000, slots=4) == MAX_TASK_CELLS
    assert task_cells(measured(8, 0.001), remaining=40, slots=4) == 10  # the tail is shared evenly
    assert task_cells(measured(2, 0.0), remaining=3, slots=4) == 1
    assert task_cells([{"seconds": None}], remaining=0, slots=4) == 1  # a KilledWorker row has no time


def test_parts_written_before_the_parameter_columns_read_them_as_null(tmp_path):
    import pyarrow.parquet as pq

    plan = parse_plan(tomllib.loads(DESIGN_PLAN))
    run_sweep(plan, tmp_path / "out", workers=0)
    [part] = ResultStore(tmp_path / "out").parts()
    new = pq.read_table(part)
    old = new.drop_columns(["sensitive", "blocks", "E_hash", "params"])  # the columns before they existed
    pq.write_table(old, part)
    messages: list[str] = []
    frame = ResultStore(tmp_path / "out", warn=messages.append).read()
    assert not messages and len(frame) == 6 and frame["E_hash"].isna().all() and frame["params"].isna().all()
    assert frame["objective"].tolist() == new.to_pandas().sort_values("hash")["objective"].tolist()
    summary = run_sweep(plan, tmp_path / "out", workers=0)
    assert (summary.skipped, summary.computed) == (6, 0)  # the old rows still count as stored


def test_sweep_without_plan_or_compact_is_one_line(tmp_path):
    result = run_cli("sweep", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "missing PLAN" in result.stderr
    assert not (tmp_path / "out").exists()


def test_two_E_files_are_two_curves_told_apart_by_E_hash(tmp_path):
    write(tmp_path / "E1.csv", "0,1\n1,0\n")
    write(tmp_path / "E2.csv", "0,2\n2,0\n")  # twice the level: binary randomised response at 2 eps
    plan = parse_plan(tomllib.loads('task = "design"\nepsilons = [0.5, 1.0]\n'
                                    'families = [{ family = "file", path = "E1.csv" }, { family = "file", path = "E2.csv" }]\n'),
                      base=tmp_path)
    run_sweep(plan, tmp_path / "out", workers=0)
    frame = ResultStore(tmp_path / "out").read()
    import hashlib

    for name, scale in (("E1.csv", 1), ("E2.csv", 2)):
        digest = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        rows = frame[frame["params"].str.contains(digest)]
        assert len(rows) == 2 and rows["E_hash"].nunique() == 1
        for _, row in rows.iterrows():
            assert row["objective"] == pytest.approx(binary_rr_information(scale * row["epsilon"]), abs=1e-9)
    table, keys = curve_table(frame)
    names = sorted(name for name, _ in curve_names(table, keys))
    assert names == sorted(f"E {h[:8]}" for h in frame["E_hash"].unique())  # nothing else varies


# ----------------------------------------------------------------- issue 30: parts of the wrong type, killed writers
def test_a_part_with_a_text_objective_is_quarantined_naming_it(tmp_path):
    """pyarrow cannot cast "high" to float64: before, every later run exited 2 without naming the part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    store = ResultStore(tmp_path)
    store.append([dict.fromkeys(COLUMNS) | {"hash": "a", "objective": 0.5}])
    bad = tmp_path / "part-00000000000000000002-1.parquet"
    pq.write_table(pa.table({"hash": ["b"], "objective": ["high"]}), bad)
    warnings = []
    frame = ResultStore(tmp_path, warn=warnings.append).read()
    assert list(frame["hash"]) == ["a"] and frame["objective"].tolist() == [0.5]
    assert len(warnings) == 1 and warnings[0].startswith(f"{bad}: unreadable part") and "moved to" in warnings[0]
    assert (tmp_path / QUARANTINE / bad.name).exists() and not bad.exists()


KILLED_COMPACTION = """
import os, signal, sys
import pyarrow.parquet as pq
from designer.sweep.store import ResultStore

write_table = pq.write_table
def write_then_die(table, where, **options):
    write_table(table, where, **options)
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9 after the merged part is staged, before its rename
pq.write_table = write_then_die
ResultStore(sys.argv[1]).compact()
"""


def test_a_compaction_killed_with_sigkill_leaves_no_staging_file_behind(tmp_path):
    import subprocess
    import sys

    store = ResultStore(tmp_path)
    for name in ("a", "b"):
        store.append([dict.fromkeys(COLUMNS) | {"hash": name, "objective": 1.0}])
    killed = subprocess.run([sys.executable, "-c", KILLED_COMPACTION, str(tmp_path)], capture_output=True, text=True,
                            timeout=60)
    assert killed.returncode == -9, killed.stderr
    [staging] = tmp_path.glob(".part-*.tmp")
    warnings = []
    reopened = ResultStore(tmp_path, warn=warnings.append)
    assert not staging.exists() and list(tmp_path.glob(".*.tmp")) == []
    assert len(warnings) == 1 and warnings[0].startswith(f"{staging}: removed a part left half-written")
    assert sorted(reopened.read()["hash"]) == ["a", "b"] and reopened.compact() == (2, 2)


def test_a_staging_file_being_written_is_left_alone(tmp_path):
    """A live writer's staging file (this process), and another host's recent one, are not removed."""
    import socket

    ResultStore(tmp_path)
    mine = tmp_path / f".part-00000000000000000001-{os.getpid()}.parquet.{socket.gethostname()}.tmp"
    elsewhere = tmp_path / ".part-00000000000000000002-1.parquet.another-host.tmp"
    old = tmp_path / ".part-00000000000000000003-1.parquet.another-host.tmp"
    for path in (mine, elsewhere, old):
        path.write_bytes(b"PAR1")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    warnings = []
    ResultStore(tmp_path, warn=warnings.append)
    assert mine.exists() and elsewhere.exists() and not old.exists()
    assert len(warnings) == 1 and "another-host" in warnings[0] and "untouched for 24 hours" in warnings[0]
