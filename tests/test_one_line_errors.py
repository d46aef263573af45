"""Errors whose message is empty (``ValueError()``, ``OSError()``) still give one line and exit 2.

``str(error).splitlines()[0]`` raised IndexError on them (a traceback instead of the error);
each case drives a CLI path with the failing call monkeypatched to raise an empty-message error.
"""

import json
import sys

import pytest

from designer import cli
from designer.errors import first_line, one_line
from designer.examples import example_path

GRR4 = str(example_path("grr4_Q.csv"))
LDP4 = str(example_path("ldp4_E.csv"))


def run_main(monkeypatch, capsys, *arguments):
    """Run the console-script entry point in this process; return (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["ldp-designer", *map(str, arguments)])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def assert_one_line_error(code, out, err, expected):
    assert code == 2 and out == ""
    assert "Traceback" not in err and err.count("\n") == 1
    assert err == f"error: {expected}\n"


@pytest.mark.parametrize(
    "error, expected",
    [
        (ValueError(), "ValueError"),
        (OSError(), "OSError"),
        (ValueError("   \n\t\n"), "ValueError"),
        (ValueError("first\nsecond"), "first"),
        (ValueError("\n  indented first  \nsecond"), "indented first"),
        (KeyError("x"), "'x'"),
    ],
)
def test_one_line_is_the_first_non_blank_line_or_the_class_name(error, expected):
    assert one_line(error) == expected


def test_first_line_answers_the_fallback_for_blank_text():
    assert first_line("", "none") == "none" and first_line("\r\n \n", "none") == "none"
    assert first_line("a\r\nb", "none") == "a"


def test_unreadable_counts_file_with_an_empty_message(monkeypatch, capsys, tmp_path):
    import pyarrow.parquet

    from designer.aggregate.counts_file import write_counts

    def refuse(*args, **kwargs):
        raise OSError()

    counts = tmp_path / "c.parquet"
    write_counts(counts, {((), "0"): 1}, "y", (), None, [])  # a counts file whose rows then cannot be read
    monkeypatch.setattr(pyarrow.parquet, "read_table", refuse)
    result = run_main(monkeypatch, capsys, "estimate", "--mechanism", GRR4, "--counts", counts)
    assert_one_line_error(*result, f"--counts {counts}: cannot read it (OSError)")


def test_where_refused_by_duckdb_with_an_empty_message(monkeypatch, capsys, tmp_path):
    import duckdb

    class Parser:  # json_serialize_sql's answer for an expression that does not parse, message empty
        def execute(self, *args):
            return self

        def fetchone(self):
            return [json.dumps({"error": True, "error_message": ""})]

        def close(self):
            pass

    monkeypatch.setattr(duckdb, "connect", lambda *args, **kwargs: Parser())
    (tmp_path / "r.csv").write_text("y\n0\n1\n")
    result = run_main(monkeypatch, capsys, "estimate", "--mechanism", GRR4, "--reports", tmp_path / "r.csv",
                      "--where", "y >")
    assert_one_line_error(*result, "--where y >: it does not parse")


def test_package_refused_with_an_empty_message(monkeypatch, capsys, tmp_path):
    from designer.deploy import package

    made = tmp_path / "grr4.json"
    assert run_main(monkeypatch, capsys, "package", "--E", LDP4, "--channel", GRR4, "--out", made)[0] == 0

    def refuse(document):
        raise package.PackageTampered()

    monkeypatch.setattr(package, "verify_package", refuse)
    (tmp_path / "r.csv").write_text("y\n0\n1\n")
    result = run_main(monkeypatch, capsys, "estimate", "--mechanism", made, "--reports", tmp_path / "r.csv")
    assert_one_line_error(*result, f"{made}: PackageTampered")


@pytest.mark.parametrize("error, expected", [(ValueError(), "ValueError"), (ArithmeticError(), "ArithmeticError"),
                                             (MemoryError(), "not enough memory for this input (MemoryError)")])
def test_the_generic_handler_with_an_empty_message(monkeypatch, capsys, error, expected):
    import designer.io

    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(designer.io, "read_channel", refuse)
    result = run_main(monkeypatch, capsys, "certify", "--E", LDP4, "--channel", GRR4)
    assert_one_line_error(*result, expected)
