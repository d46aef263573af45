"""Up-front limits: sizes that would not fit in memory, runs that would take hours, and
privacy levels that are not finite numbers are refused at once with one line and exit 2."""

import math
import sys
import time
import tracemalloc
from unittest import mock

import numpy as np
import pytest
from typer.testing import CliRunner

from designer.cli import app, main
from designer.commands.range import range_memory, simulate_range
from designer.commands.simulate import EqualBlocks
from designer.mechanisms import (
    BlockHadamardResponse,
    GeneralizedRandomizedResponse,
    HadamardResponse,
    HighLowHadamardResponse,
)
from designer.simulation import SimulationTooLong, named_distribution, simulate, simulation_memory

runner = CliRunner()


def refused(arguments: list[str], seconds: float = 10.0) -> str:
    """Run the console script's ``main`` (usage errors included); assert exit 2, one ``error:`` line,
    no traceback, within ``seconds``; return the line."""
    start = time.perf_counter()
    with runner.isolation() as (stdout, stderr, _), mock.patch.object(sys, "argv", ["ldp-designer", *arguments]):
        with pytest.raises(SystemExit) as exit_status:
            main()
        printed, message = stdout.getvalue().decode(), stderr.getvalue().decode().strip()
    elapsed = time.perf_counter() - start
    assert exit_status.value.code == 2, printed + message
    assert "Traceback" not in message
    assert len(message.splitlines()) == 1 and message.startswith("error: "), message
    assert elapsed < seconds, f"refused only after {elapsed:.1f} s"
    return message


def simulate_arguments(*extra: str) -> list[str]:
    return ["simulate", "--eps", "1", "--n", "10", *extra]


# ------------------------------------------------------------------ simulate: memory
@pytest.mark.parametrize(
    "mechanism, outputs",
    [
        (["--mechanism", "grr", "--k", "1000000000"], "1,000,000,000 outputs"),
        (["--mechanism", "hr", "--k", "1000000000"], f"{2**30:,} outputs"),
        (["--mechanism", "block-hr", "--k", "1000000000", "--blocks", "1000000000"], "2,000,000,000 outputs"),
        (["--mechanism", "high-low-hr", "--k", "1000000000", "--sensitive", "3"], f"{4 + 10**9 - 3:,} outputs"),
        (["--mechanism", "grr", "--k", str(10**30)], f"{10**30:,} outputs"),
    ],
)
def test_simulate_refuses_a_domain_too_large_for_memory_at_once(mechanism, outputs):
    message = refused(simulate_arguments(*mechanism), seconds=5)
    assert outputs in message and "of memory, more than the" in message


def test_memory_model_bounds_the_measured_peak():
    """simulation_memory is an upper bound of the tracemalloc peak, for every mechanism."""
    k = 1 << 15
    for mechanism in (
        GeneralizedRandomizedResponse(k - 1, 1.0),
        HadamardResponse(k - 1, 1.0),
        HadamardResponse(k, 1.0),  # k a power of two: 2k outputs
        BlockHadamardResponse(list(EqualBlocks(k, 64)), 1.0),
        BlockHadamardResponse([1] * 4096, 1.0),  # many tiny blocks
        HighLowHadamardResponse(k, k // 3, 1.0),
    ):
        prior = None
        tracemalloc.start()
        try:
            prior = named_distribution("zipf:1.1", mechanism.k)
            simulate(mechanism, prior, 5000, 0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        blocks = len(getattr(mechanism, "blocks", [None]))
        bound = simulation_memory(mechanism.k, mechanism.n_outputs, blocks)
        # the bound holds without the constant for the chunk temporaries (n = 5000 is one small chunk)
        assert peak <= bound - (128 << 20), (mechanism, peak, bound)


def test_equal_blocks_match_numpy_split_and_the_mechanism_outputs():
    for k, count in [(100, 7), (10, 10), (1000, 3), (17, 1)]:
        blocks = EqualBlocks(k, count)
        assert list(blocks) == [len(part) for part in np.array_split(np.arange(k), count)]
        assert blocks.outputs() == BlockHadamardResponse(list(blocks), 1.0).n_outputs


def test_simulate_memory_check_uses_the_available_memory(monkeypatch):
    import designer.simulation as simulation

    needed = simulation_memory(1000, 1000)
    monkeypatch.setattr(simulation, "available_memory", lambda: needed - 1)
    message = refused(simulate_arguments("--mechanism", "grr", "--k", "1000"))
    assert "1,000 outputs" in message
    monkeypatch.setattr(simulation, "available_memory", lambda: needed)
    assert runner.invoke(app, simulate_arguments("--mechanism", "grr", "--k", "1000")).exit_code == 0


# -------------------------------------------------------------------- simulate: time
def test_simulate_refuses_a_run_projected_beyond_max_seconds_after_one_chunk():
    message = refused(["simulate", "--mechanism", "grr", "--k", "10", "--eps", "1", "--n", str(10**12)], seconds=20)
    assert "1,000,000,000,000 users would take about" in message and "--max-seconds" in message


def test_projection_is_checked_once_after_the_first_chunk():
    seen = []
    mechanism = GeneralizedRandomizedResponse(4, 1.0)
    with pytest.raises(SimulationTooLong, match="5,000 users would take about"):
        simulate(mechanism, np.full(4, 0.25), 5000, 0, progress=seen.append, chunk=1000, max_seconds=1e-9)
    assert seen == [1000]
    # a run within its budget completes; one chunk only is never refused (it is already done)
    simulate(mechanism, np.full(4, 0.25), 5000, 0, chunk=1000, max_seconds=3600)
    simulate(mechanism, np.full(4, 0.25), 1000, 0, chunk=1000, max_seconds=1e-9)


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_simulate_max_seconds_must_be_positive(value):
    assert "--max-seconds" in refused(simulate_arguments("--mechanism", "grr", "--k", "4", f"--max-seconds={value}"))


def test_simulate_max_seconds_inf_means_no_limit():
    result = runner.invoke(app, simulate_arguments("--mechanism", "grr", "--k", "4", "--max-seconds", "inf", "--json"))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("epsilon", ["1e400", "inf", "nan", "-1", "0", "1e300", "log(0)"])
def test_simulate_refuses_non_finite_or_out_of_range_epsilon(epsilon):
    arguments = ["simulate", "--mechanism", "grr", "--k", "4", "--n", "10", f"--eps={epsilon}"]
    assert "--eps" in refused(arguments)


# ------------------------------------------------------------------------------- spec
@pytest.mark.parametrize("epsilon", ["1e400", "inf", "nan", "-1"])
def test_spec_refuses_a_non_finite_or_negative_epsilon_and_writes_nothing(tmp_path, epsilon):
    out = tmp_path / "E.csv"
    for family in (["ldp", "--k", "3"], ["block", "--k", "4", "--blocks", "2"], ["metric", "--grid", "2x2"]):
        refused(["spec", *family, f"--eps={epsilon}", "--out", str(out)])
        assert not out.exists() and list(tmp_path.iterdir()) == []


def test_spec_writes_a_zero_level_as_zero_and_a_huge_finite_level_as_is(tmp_path):
    out = tmp_path / "E.csv"
    assert runner.invoke(app, ["spec", "ldp", "--k", "2", "--eps=-0.0", "--out", str(out)]).exit_code == 0
    assert out.read_text() == "0.0,0.0\n0.0,0.0\n"
    assert runner.invoke(app, ["spec", "ldp", "--k", "2", "--eps=1e308", "--out", str(out)]).exit_code == 0
    assert out.read_text() == "0.0,1e+308\n1e+308,0.0\n"


def test_spec_refuses_a_domain_whose_matrix_cannot_fit(tmp_path):
    out = tmp_path / "E.csv"
    message = refused(["spec", "ldp", "--k", "100000000", "--out", str(out)], seconds=5)
    assert "100,000,000 x 100,000,000 E matrix" in message and not out.exists()


# ------------------------------------------------------------------------------ range
@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (["--m", "2", "--D", "100000"], "--D 100000 is more than the 26"),
        (["--m", "1", "--D", "30"], "--D 30 is more than the 26"),
        (["--m", "1000000000000", "--D", "1"], "cells is more than"),
        (["--m", "4", "--D", "1", "--n", str(10**12)], "of memory, more than the"),
        (["--m", "4", "--D", "1", "--n", "100", "--queries", str(10**12)], "more than the 100,000"),
        (["--eps", "nan"], "--eps"),
        (["--eps", "1e400"], "--eps"),
        (["--eps", "-1"], "--eps"),
    ],
)
def test_range_refuses_oversized_or_invalid_runs_at_once(arguments, fragment):
    assert fragment in refused(["range", *arguments], seconds=5)


def test_range_memory_model_bounds_the_measured_peak():
    for m, dimensions, n, queries in [(64, 2, 200_000, 10), (8, 4, 200_000, 10), (512, 2, 1000, 10), (1024, 1, 200_000, 10)]:
        tracemalloc.start()
        try:
            simulate_range(m, dimensions, 1.0, n, queries, 0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak <= range_memory(m, dimensions, n, queries), (m, dimensions, n, peak)
    assert range_memory(4, 1, 10**12, 0) > 10**12 * 48  # coordinates and draws; reports are streamed in blocks
    assert range_memory(1024, 1, 10**6, 0) < 2**30  # independent of m * n (the reports alone would be 1 GB)
    assert math.isclose(range_memory(2, 26, 1, 0), (256 << 20) + 48 * 26 + 64 * 2**26)


# --------------------------------------------------------------------------- strategy
@pytest.mark.parametrize("users", ["0", str(2**53 + 1), "1" + "0" * 400])
def test_strategy_refuses_a_user_count_a_float_cannot_hold(tmp_path, users):
    e_file = tmp_path / "E.csv"
    e_file.write_text("0,1,2\n1,0,1\n2,1,0\n")
    out = tmp_path / "s.json"
    message = refused(["strategy", "--workload", "prefix", "--E", str(e_file), "--out", str(out), "--n", users])
    assert "--n must be between 1 and 2^53" in message and not out.exists()
