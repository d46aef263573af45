"""Edges of issue 30: each was a traceback, a message naming no file or option, or a silent
misreading; each is now one line naming the file, row or option, with exit code 2."""

from __future__ import annotations

import gzip
import json

import pytest
from test_one_line_errors import run_main
from typer.main import get_command

from designer import cli
from designer.design.symmetry.files import SCHEMA_PATH
from designer.examples import example_path


def one_line_error(code, out, err, *fragments: str) -> str:
    assert code == 2 and "Traceback" not in out + err, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert all(fragment in err for fragment in fragments), err
    return err


# ----------------------------------------------------------------- class files (design --classes)
def design_classes(monkeypatch, capsys, tmp_path, text: str):
    path = tmp_path / "classes.json"
    path.write_text(text)
    out = tmp_path / "Q.csv"
    result = run_main(monkeypatch, capsys, "design", "--classes", path, "--out", out)
    assert not out.exists()
    return path, result


def test_a_class_file_nested_100000_deep_is_one_line(monkeypatch, capsys, tmp_path):
    path, result = design_classes(monkeypatch, capsys, tmp_path, "[" * 100_000 + "]" * 100_000)
    one_line_error(*result, str(path), "nested too deeply")


def test_a_5000_digit_class_size_names_the_file(monkeypatch, capsys, tmp_path):
    text = json.dumps({"classes": [{"size": 1}], "levels": [[1]]}).replace('"size": 1', '"size": ' + "9" * 5000)
    path, result = design_classes(monkeypatch, capsys, tmp_path, text)
    message = one_line_error(*result, str(path), "5000-digit number")
    assert "set_int_max_str_digits" not in message


def unknown_members(schema: dict, where: str = "") -> list[tuple[str, list[str]]]:
    """``(where, allowed members)`` of every object the schema closes with ``additionalProperties: false``."""
    found = []
    if schema.get("type") == "object" and schema.get("additionalProperties") is False:
        found.append((where, sorted(schema["properties"])))
    for name, inner in schema.get("properties", {}).items():
        found += unknown_members(inner, f"{where}.{name}" if where else name)
    if "items" in schema:
        found += unknown_members(schema["items"], f"{where}[0]")
    return found


def test_every_member_the_schema_forbids_is_refused(monkeypatch, capsys, tmp_path):
    """Read from the schema itself: the top level and each class entry (``colour`` was ignored)."""
    closed = unknown_members(json.loads(SCHEMA_PATH.read_text()))
    assert [where for where, _ in closed] == ["", "classes[0]"]
    for where, _ in closed:
        document = {"classes": [{"name": "a", "size": 2}], "levels": [[1]]}
        target = document if not where else document["classes"][0]
        target["colour"] = "red"
        path, result = design_classes(monkeypatch, capsys, tmp_path, json.dumps(document))
        one_line_error(*result, str(path), "unknown field 'colour'", where)


def test_a_class_name_that_is_not_text_is_refused(monkeypatch, capsys, tmp_path):
    text = json.dumps({"classes": [{"name": 7, "size": 2}], "levels": [[1]]})
    path, result = design_classes(monkeypatch, capsys, tmp_path, text)
    one_line_error(*result, str(path), "classes[0].name must be text")


# ----------------------------------------------------------------- options
def seeded_commands() -> list[str]:
    """Every command with a ``--seed`` option, found in the app itself."""
    return sorted(name for name, command in get_command(cli.app).commands.items()
                  if any("--seed" in parameter.opts for parameter in command.params))


def test_seeded_commands_are_found():
    assert {"simulate", "range", "sample-package", "audit"} <= set(seeded_commands())


@pytest.mark.parametrize("command", seeded_commands())
def test_a_negative_seed_names_the_option(monkeypatch, capsys, command):
    code, out, err = run_main(monkeypatch, capsys, command, "--seed", "-1")
    one_line_error(code, out, err, f"ldp-designer {command}", "'--seed'", "greater than or equal to 0")


# ----------------------------------------------------------------- report files
@pytest.fixture(scope="module")
def package(tmp_path_factory):
    path = tmp_path_factory.mktemp("package") / "m.json"
    from typer.testing import CliRunner

    result = CliRunner().invoke(cli.app, ["package", "--E", str(example_path("survey_E.csv")),
                                          "--channel", str(example_path("survey_mangat_Q.csv")), "--out", str(path)])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("compressed", [False, True])
def test_a_csv_header_naming_a_column_twice_is_refused(monkeypatch, capsys, tmp_path, package, compressed):
    outputs = json.loads(package.read_text())["outputs"]
    folder = tmp_path / "reports"
    folder.mkdir()
    good = folder / "a.csv"
    good.write_text("y,day\n" + "".join(f"{outputs[i % 2]},1\n" for i in range(10)))
    text = "day,y,y\n" + "".join(f"1,{outputs[0]},{outputs[1]}\n" for _ in range(10))
    bad = folder / ("b.csv.gz" if compressed else "b.csv")
    bad.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    result = run_main(monkeypatch, capsys, "estimate", "--mechanism", package, "--reports", folder)
    one_line_error(*result, str(bad), "'y' twice", "columns 2 and 3")


def test_distinct_names_duckdb_would_also_give_are_accepted(monkeypatch, capsys, tmp_path, package):
    """``y`` and ``y_1`` are two real columns (``y_1`` is also the name DuckDB gives a second ``y``)."""
    outputs = json.loads(package.read_text())["outputs"]
    reports = tmp_path / "r.csv"
    reports.write_text("y,y_1\n" + "".join(f"{outputs[0]},{outputs[1]}\n" for _ in range(10)))
    code, out, err = run_main(monkeypatch, capsys, "estimate", "--mechanism", package, "--reports", reports, "--json")
    assert code == 0, err
    assert json.loads(out)["reports"] == 10
