"""The output guard: every command refuses, before reading anything, an output path that names
one of its inputs (same path, another spelling, a symbolic or a hard link) or an existing key
file, with one line naming the options and exit code 2.

Commands and their file options are discovered from the CLI itself: a new ``Path`` parameter
fails :func:`test_every_path_parameter_is_declared_as_input_or_output` until its command's
``@guarded(...)`` declares it, and a new command that writes a file fails
:func:`test_every_command_with_outputs_is_covered` until it has a row in :data:`REQUIRED`.
"""

from __future__ import annotations

import functools
import inspect
import os
import typing
from pathlib import Path

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from designer.cli import app
from designer.commands import FileOptions, file_parameters, guarded
from designer.commands.keys import JS_CLIENT
from designer.examples import example_path
from designer.io import InputError, json_writer, write_files
from designer.io.protected import key_text_kind

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
    "estimate": [],
    "account": ["--rounds", "2", "--delta", "1e-6"],
}


@functools.cache
def commands() -> dict:
    """The app's Click commands by name, built once (they are only read here; a build takes 25 ms)."""
    return get_command(app).commands


def names_paths(hint) -> bool:
    """Whether a type hint is ``Path``, or holds it (``Path | None``, ``list[Path]``)."""
    return hint is Path or any(names_paths(argument) for argument in typing.get_args(hint))


def path_options(name: str) -> dict[str, bool]:
    """``{option: is an output}`` of a command's ``Path`` parameters."""
    callback = commands()[name].callback
    hints = typing.get_type_hints(inspect.unwrap(callback))
    return {option: is_output for parameter, (option, is_output) in file_parameters(callback).items()
            if names_paths(hints[parameter])}


def test_every_path_parameter_is_declared_as_input_or_output():
    for name, command in commands().items():
        declared = getattr(command.callback, "file_options", None)
        assert isinstance(declared, FileOptions), f"{name}: decorate the command with @guarded(reads=..., writes=...)"
        options = {option for option, _ in file_parameters(command.callback).values()}
        undeclared = set(path_options(name)) - declared.declared
        assert not undeclared, f"{name}: declare {sorted(undeclared)} in @guarded(reads=..., writes=...)"
        assert declared.declared <= options, f"{name}: declares options it does not have"
        assert not declared.reads & declared.outputs and not declared.writes & declared.writes_into, name
        for output, read in declared.updates:
            assert output in declared.writes and read in declared.reads, (name, output, read)


def test_the_declaration_test_catches_a_forgotten_path_option():
    """The check above, on a command with one declared and one forgotten ``Path`` option."""

    @guarded(reads=("--E",))
    def forgetful(e_file: Path = typer.Option(..., "--E"), out: Path = typer.Option(..., "--out")) -> None:
        pass

    hints = typing.get_type_hints(inspect.unwrap(forgetful))
    found = {option for parameter, (option, _) in file_parameters(forgetful).items() if names_paths(hints[parameter])}
    assert found - forgetful.file_options.declared == {"--out"}


def path_parameters(name: str) -> tuple[list[str], list[str], list[str]]:
    """(output options, input options, positional inputs) of a command's ``Path`` parameters."""
    outputs, inputs, positional = [], [], []
    for option, is_output in path_options(name).items():
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


def updates(name: str) -> set[tuple[str, str]]:
    return set(commands()[name].callback.file_options.updates)


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
        if (output, victim) in updates(name):
            continue
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


# ----------------------------------------------------------------- issue 30: the newest outputs, links, keys
def signed_free_package(tmp_path: Path) -> Path:
    package = tmp_path / "m.json"
    result = runner.invoke(app, ["package", "--E", str(example_path("survey_E.csv")),
                                 "--channel", str(example_path("survey_mangat_Q.csv")), "--out", str(package)])
    assert result.exit_code == 0, result.output
    return package


@pytest.mark.parametrize("through", ["itself", "a symbolic link"])
def test_saved_counts_never_replace_the_mechanism(tmp_path, through):
    package = signed_free_package(tmp_path)
    before = package.read_bytes()
    reports = tmp_path / "reports.csv"
    reports.write_text("y\nyes\nno\nyes\n")
    destination = package
    if through == "a symbolic link":
        destination = tmp_path / "counts.parquet"
        destination.symlink_to(package)
    result = runner.invoke(app, ["estimate", "--mechanism", str(package), "--reports", str(reports),
                                 "--save-counts", str(destination)])
    refused(result, "--save-counts", "--mechanism")
    assert package.read_bytes() == before


def test_export_js_replaces_a_symbolic_link_not_its_target(tmp_path):
    victim = tmp_path / "victim.mjs"
    victim.write_text(KEEP)
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "ldp-client.mjs").symlink_to(victim)
    result = runner.invoke(app, ["export-js", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    written = folder / "ldp-client.mjs"
    assert victim.read_text() == KEEP
    assert not written.is_symlink() and written.read_text() == JS_CLIENT.read_text()


def key_files(tmp_path: Path) -> dict[str, Path]:
    """Existing key files of every recognised kind, some under names that do not say so."""
    result = runner.invoke(app, ["keygen", "--out", str(tmp_path / "author.key")])
    assert result.exit_code == 0, result.output
    renamed = tmp_path / "notes.txt"
    renamed.write_text((tmp_path / "author.key.pub").read_text())
    pem = tmp_path / "server.crt"
    pem.write_text("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
                   "-----END PRIVATE KEY-----\n")
    ssh = tmp_path / "id.txt"
    ssh.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGn9 user@host\n")
    return {"public": tmp_path / "author.key.pub", "private": tmp_path / "author.key", "renamed public": renamed,
            "PEM": pem, "OpenSSH": ssh}


def test_no_command_overwrites_a_key_file(tmp_path):
    for what, key in key_files(tmp_path).items():
        before = key.read_bytes()
        for arguments in (["package-high-low", "--k", "4", "--sensitive", "2", "--eps", "1", "--out", str(key)],
                          ["spec", "ldp", "--k", "3", "--eps", "1", "--out", str(key)],
                          ["keygen", "--out", str(key)]):
            result = runner.invoke(app, arguments)
            assert result.exit_code == 2 and str(key) in result.stderr, (what, arguments, result.output)
            assert "Traceback" not in result.output and len(result.stderr.strip().splitlines()) == 1
            assert key.read_bytes() == before, (what, arguments)


def test_the_writer_refuses_a_key_file_whoever_calls_it(tmp_path):
    """Files a command names itself (export-js's client, a sweep's parts) go through the same check."""
    for what, key in key_files(tmp_path).items():
        before = key.read_bytes()
        with pytest.raises(InputError, match="never overwrites a key"):
            write_files([(tmp_path / "other.csv", json_writer({})), (key, json_writer({}))])
        assert key.read_bytes() == before and not (tmp_path / "other.csv").exists(), what


@pytest.mark.parametrize("text, kind", [
    ("AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", "Ed25519 public key"),
    ("A" * 86 + "==", "Ed25519 private key"),
    ("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n", "PEM public key"),
    ("0.5,0.5\n0.5,0.5\n", None),
    ("AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nAQAA\n", None),
    ("c481389062fd5f66fd9ac6ec0ef4e1c360d360620f17aa58d20753e4b5bfc861\n", None),  # a hex SHA-256: 48 bytes
])
def test_key_files_are_recognised_by_content(text, kind):
    assert key_text_kind(text) == kind
