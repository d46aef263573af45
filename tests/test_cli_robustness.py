"""The CLI contract at its edges: usage errors, numeric extremes, line numbers, all-or-nothing writes."""

import os
import stat
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from designer import cli
from designer.cli import app
from designer.examples import example_path

runner = CliRunner()


def run_main(monkeypatch, capsys, *arguments):
    """Run the console-script entry point as a user would; return (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["ldp-designer", *arguments])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (["simulate", "--mechanism", "bogus", "--k", "4", "--eps", "1", "--n", "10"], "'bogus' is not one of"),
        (["simulate", "--mechanism", "grr", "--k", "abc", "--eps", "1", "--n", "10"], "--k"),
        (["simulate", "--mechanism", "grr", "--k", "4", "--n", "10"], "Missing option '--eps'"),
        (["certify", "--channel", "Q.csv"], "Missing option '--E'"),
        (["no-such-command"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(monkeypatch, capsys, arguments, fragment):
    code, out, err = run_main(monkeypatch, capsys, *arguments)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ldp-designer") and fragment in err


def test_no_arguments_prints_help_and_exit_0(monkeypatch, capsys):
    code, out, _ = run_main(monkeypatch, capsys)
    assert code == 0 and "certify" in out and "design" in out


def test_exit_codes_survive_the_entry_point(monkeypatch, capsys):
    ldp, loose = str(example_path("ldp4_E.csv")), str(example_path("grr4_too_loose_Q.csv"))
    assert run_main(monkeypatch, capsys, "certify", "--E", ldp, "--channel", str(example_path("grr4_Q.csv")))[0] == 0
    assert run_main(monkeypatch, capsys, "certify", "--E", ldp, "--channel", loose)[0] == 1


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--mechanism", "grr", "--k", "10", "--n", "10", "--eps", "1000"],
        ["simulate", "--mechanism", "grr", "--k", "10", "--n", "10", "--eps", "1e-300"],
        ["range", "--m", "8", "--D", "1", "--n", "100", "--queries", "2", "--eps", "800"],
        ["range", "--m", "8", "--D", "1", "--n", "100", "--queries", "2", "--eps", "1e-200"],
    ],
)
def test_extreme_epsilon_is_refused_with_its_option_named(command):
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: --eps must be between 1e-09 and 700")


def test_memory_error_is_bad_input(monkeypatch):
    import designer.simulation as simulation_module  # the command imports it when it runs

    def exhausted(*_args, **_kwargs):
        raise MemoryError("Unable to allocate 745. GiB for an array")

    monkeypatch.setattr(simulation_module, "named_distribution", exhausted)
    result = runner.invoke(app, ["simulate", "--mechanism", "grr", "--k", "10", "--n", "10", "--eps", "1"])
    assert result.exit_code == 2 and "not enough memory" in result.stderr and "745. GiB" in result.stderr


def test_overflowing_entries_name_file_line_and_value(tmp_path):
    (tmp_path / "E.csv").write_text("# a comment\n0,1\n1e400,0\n")
    (tmp_path / "Q.csv").write_text("0.5,0.5\n0.5,0.5\n")
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")])
    assert result.exit_code == 2
    assert "E.csv: row 3, column 1" in result.stderr and "'1e400'" in result.stderr and "too large" in result.stderr


def test_rows_are_counted_as_file_lines_despite_comments(tmp_path):
    (tmp_path / "E.csv").write_text("0,1\n1,0\n")
    (tmp_path / "Q.csv").write_text("# written by hand\n\n0.5,0.5\n-1,2\n")
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")])
    assert result.exit_code == 2 and "Q.csv: row 4, column 1: probability '-1' is negative" in result.stderr
    (tmp_path / "Q.csv").write_text("# comment\n0.5,0.5\n0.5,0.6\n")
    result = runner.invoke(app, ["certify", "--E", str(tmp_path / "E.csv"), "--channel", str(tmp_path / "Q.csv")])
    assert "Q.csv: row 3 sums to 1.1" in result.stderr


def test_design_writes_channel_and_summary_all_or_nothing(tmp_path):
    out = tmp_path / "Q.csv"
    result = runner.invoke(
        app, ["design", "--E", str(example_path("survey_E.csv")), "--out", str(out), "--summary", str(tmp_path / "nope" / "s.json")]
    )
    assert result.exit_code == 2 and "nope" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_output_files_follow_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        out = tmp_path / "E.csv"
        assert runner.invoke(app, ["spec", "ldp", "--k", "3", "--eps", "1", "--out", str(out)]).exit_code == 0
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert np.genfromtxt(out, delimiter=",")[0, 1] == 1.0


def test_distance_matrix_may_hold_infinity(tmp_path):
    (tmp_path / "D.csv").write_text("0,2,inf\n2,0,inf\ninf,inf,0\n")
    out = tmp_path / "E.csv"
    result = runner.invoke(app, ["spec", "metric", "--distance", str(tmp_path / "D.csv"), "--eps", "0.5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    E = np.genfromtxt(out, delimiter=",")
    assert E[0, 1] == 1.0 and np.isinf(E[0, 2])
