"""A run of one command registers only its own module (``designer.cli.COMMANDS``), with the same behaviour.

The map from command names to modules only decides what a run imports: these
tests check that it names every command exactly once and its right module, and
that a run through it (the console-script path) prints what the app with every
command prints.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from designer import cli
from designer.examples import example_path
from test_cli_robustness import run_main


def registered(modules: list[str]) -> list[str]:
    return [command.name for command in cli.build_app(modules).registered_commands]


def test_every_command_maps_to_the_module_that_registers_it():
    found = {name: module for module in cli.COMMAND_MODULES for name in registered([module])}
    assert found == cli.COMMANDS, "a new command: add its name and module to designer.cli.COMMANDS"
    assert registered(cli.COMMAND_MODULES) == [command.name for command in cli.app.registered_commands]
    assert len(set(registered(cli.COMMAND_MODULES))) == len(cli.COMMANDS)  # no name registered twice


@pytest.mark.parametrize(
    "arguments",
    [
        ["certify", "--E", str(example_path("ldp4_E.csv")), "--channel", str(example_path("grr4_too_loose_Q.csv")), "--json"],
        ["certify", "--help"],
        ["strategy", "--help"],
        ["export-js", "--help"],
    ],
)
def test_a_single_command_run_prints_what_the_full_app_prints(monkeypatch, capsys, arguments):
    code, out, err = run_main(monkeypatch, capsys, *arguments)
    full = CliRunner().invoke(cli.app, arguments, prog_name=cli.NAME)
    assert (code or 0, out) == (full.exit_code, full.stdout)
    assert err == ""
    if arguments[-1] == "--json":
        assert code == 1 and json.loads(out)["verdict"] == "violated"


def test_a_usage_error_names_the_command(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "certify", "--bogus", "1")
    assert (code, out) == (2, "")
    assert err.startswith("error: ldp-designer certify: No such option: --bogus") and err.count("\n") == 1


def test_a_command_run_imports_no_other_command_module():
    probe = (
        "import sys\n"
        "from designer.cli import main\n"
        "sys.argv = ['ldp-designer', 'certify', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(name for name in sys.modules if name.startswith('designer.commands.')))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "['designer.commands.certify']"
