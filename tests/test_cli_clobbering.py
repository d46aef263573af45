"""Outputs never overwrite inputs: every command that writes files refuses, before reading
anything, an output path that names one of its inputs (same path, another spelling, a
symbolic or a hard link), with one line naming both options and exit code 2.

Commands and their file options are discovered from the CLI itself, so a new command
that writes a file fails :func:`test_every_command_with_outputs_is_covered` until it has
a row in :data:`REQUIRED`.
"""

from __future__ import annotations

import inspect
import os
import typing
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from designer.cli import app
from designer.commands import file_parameters

runner = CliRunner()
KEEP = "keep me\n"

#: The other arguments each command with an output file needs to get past option parsing.
REQUIRED = {
    "spec": ["ldp", "--k", "3", "--eps", "1"],
    "design": [],
    "robust": ["--secret", "s", "--public", "u", "--eps", "1", "--protocol", "grr"],
    "strategy": ["--workload", "prefix"],
    "package": [],
    "package-hadamard": ["--block-sizes", "2*2", "--eps", "1"],
    "package-high-low": ["--k", "4", "--sensitive", "2", "--eps", "1"],
    "export-js": [],
    "audit": [],
    "sweep": [],
    "keygen": [],
}


def commands() -> dict:
    return get_command(app).commands


def path_parameters(name: str) -> tuple[list[str], list[str], list[str]]:
    """(output options, input options, positional inputs) of a command's ``Path`` parameters."""
    callback = commands()[name].callback
    hints = typing.get_type_hints(inspect.unwrap(callback))
    outputs, inputs, positional = [], [], []
    for parameter, (option, is_output) in file_parameters(callback).items():
        if Path not in (typing.get_args(hints[parameter]) or (hints[parameter],)):
            continue
        if is_output:
            outputs.append(option)
        elif option.startswith("--"):
            inputs.append(option)
        else:
            positional.append(option)
    return outputs, inputs, positional


def test_every_command_with_outputs_is_covered():
    writing = {name for name in commands() if path_parameters(name)[0]}
    assert writing == set(REQUIRED), "add the new command's required arguments to REQUIRED"


def test_an_option_a_command_reads_is_an_input_even_where_others_write_it():
    """``shuffle --package`` reads a package (``design --package`` writes one)."""
    outputs, inputs, _ = path_parameters("shuffle")
    assert outputs == [] and "--package" in inputs
    assert "--package" in path_parameters("design")[0]


def refused(result, first: str, second: str) -> str:
    message = result.stderr.strip()
    assert result.exit_code == 2, (result.output, result.exception)
    assert len(message.splitlines()) == 1 and message.startswith("error: ") and "Traceback" not in result.output
    assert first in message and second in message, message
    return message


def run(tmp_path: Path, name: str, assignments: dict[str, str], positional: list[str]):
    arguments = [name, *positional, *REQUIRED[name]]
    for option, value in assignments.items():
        arguments += [option, value]
    return runner.invoke(app, arguments)


CASES = [(name, output) for name in REQUIRED for output in path_parameters(name)[0]]


@pytest.mark.parametrize("name, output", CASES)
def test_an_output_naming_any_input_is_refused_before_reading(tmp_path, name, output):
    outputs, inputs, positional = path_parameters(name)
    files = {option: tmp_path / f"input{index}" for index, option in enumerate(inputs + positional)}
    for path in files.values():
        path.write_text(KEEP)
    for victim, path in files.items():
        assignments = {option: str(files[option]) for option in inputs}
        if output != "--out" and "--out" in outputs:
            assignments["--out"] = str(tmp_path / "fresh")
        for spelling in (str(path), str(tmp_path / "." / path.name)):
            assignments[output] = spelling
            refused(run(tmp_path, name, assignments, [str(files[option]) for option in positional]), output, victim)
        assert path.read_text() == KEEP
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_link_to_an_input_is_the_input(tmp_path, link):
    channel = tmp_path / "Q.csv"
    channel.write_text("0.5,0.5\n0.5,0.5\n")
    alias = tmp_path / "alias.json"
    alias.symlink_to(channel) if link == "symbolic" else os.link(channel, alias)
    e_file = tmp_path / "E.csv"
    e_file.write_text("0,1\n1,0\n")
    result = runner.invoke(app, ["package", "--E", str(e_file), "--channel", str(channel), "--out", str(alias)])
    refused(result, "--out", "--channel")
    assert channel.read_text() == "0.5,0.5\n0.5,0.5\n"


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(KEEP)
    result = runner.invoke(app, ["sweep", str(plan), "--out", str(tmp_path / "x"), "--plot", str(tmp_path / "x")])
    assert "each output needs its own file" in refused(result, "--out", "--plot")


@pytest.mark.parametrize(
    "arguments, victim",
    [
        (["strategy", "--workload", "{file}", "--E", "{other}", "--out", "{file}"], "--workload"),
        (["strategy", "--workload", "prefix", "--strategy", "{file}", "--E", "{other}", "--out", "{file}"], "--strategy"),
        (["audit", "--E", "{other}", "--sampler", "{file}:draw", "--reports-per-input", "5", "--channel-out", "{file}"], "--sampler"),
        (["package-hadamard", "--block-sizes", "{file}", "--eps", "1", "--out", "{file}"], "--block-sizes"),
    ],
)
def test_a_text_option_naming_a_file_is_an_input(tmp_path, arguments, victim):
    file, other = tmp_path / "W.py", tmp_path / "E.csv"
    file.write_text(KEEP)
    other.write_text("0,1\n1,0\n")
    result = runner.invoke(app, [item.format(file=file, other=other) for item in arguments])
    output = "--channel-out" if arguments[0] == "audit" else "--out"
    refused(result, output, victim)
    assert file.read_text() == KEEP
