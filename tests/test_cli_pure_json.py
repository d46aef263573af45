"""``--json`` prints exactly one JSON document on stdout, and nothing else writes there.

Every command runs as a program, in a process of its own (:mod:`forked_cli`: forked from one
interpreter that imported the libraries they share), so output written by native libraries straight to
file descriptor 1 (highspy 1.16's "Running HiGHS ... Copyright" banner, printed once a process) is seen
too; ``json.loads`` accepts one document and nothing after it. Commands are discovered from the CLI: one
that gains ``--json`` fails :func:`test_every_json_command_has_a_case` until it has a row in :data:`CASES`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.main import get_command

from designer.cli import app
from forked_cli import run_forked

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "designer" / "examples"
SAMPLERS = ROOT / "tests" / "fixtures" / "audit" / "samplers.py"
#: Imported once before the commands are forked (most of their start-up); importing them writes nothing.
#: Then the package's modules that two or more of the commands import (measured: each command's new modules
#: after the libraries above): each child imported them again, 0.05 to 0.1 CPU s a command, 1 to 1.5 s of
#: the 6.6 s the 16 children took; what a command alone imports (scikit-learn for audit, duckdb for
#: estimate, cryptography for keygen) is still imported in its own process.
PRELOAD = ["numpy", "scipy.optimize", "scipy.sparse", "scipy.stats", "highspy", "cdd", "flint", "rich", "pydantic",
           "pydantic.type_adapter", "designer.io", "designer.spec", "designer.channel", "designer.certify",
           "designer.exact", "designer.exact_filter", "designer.cone", "designer.design", "designer.robust",
           "designer.deploy", "designer.estimation", "designer.mechanisms", "designer.simulation", "designer.theory",
           "designer.metric", "designer.noise", "designer.utility", "solvers.linear", "solvers.vertices",
           "solvers.column_generation", "solvers.chi2ball", "solvers.hadamard", "solvers.kronecker"]
RECORDS = ["--data", str(EXAMPLES / "robust_survey_records.csv"), "--secret", "smoker", "--public", "region", "--eps", "1"]

#: command -> (arguments with {tmp} for the test's folder, expected exit code); run in this order
#: (robust before certify-robust; package before verify-package, sample-package and estimate).
CASES = {
    "certify": (["--E", str(EXAMPLES / "ldp4_E.csv"), "--channel", str(EXAMPLES / "grr4_Q.csv")], 0),
    "design": (["--E", str(EXAMPLES / "survey_E.csv"), "--out", "{tmp}/design.csv"], 0),
    "robust": ([*RECORDS, "--protocol", "polyopt", "--out", "{tmp}/robust.csv"], 0),
    "certify-robust": ([*RECORDS, "--channel", "{tmp}/robust.csv"], 0),
    "simulate": (["--mechanism", "grr", "--k", "4", "--eps", "1", "--n", "1000", "--seed", "1"], 0),
    "range": (["--m", "8", "--D", "1", "--n", "1000", "--queries", "5"], 0),
    "strategy": (["--workload", "prefix", "--E", str(EXAMPLES / "line8_E.csv"), "--out", "{tmp}/strategy.json"], 0),
    "package": (["--E", str(EXAMPLES / "ldp4_E.csv"), "--channel", str(EXAMPLES / "grr4_Q.csv"), "--out", "{tmp}/p.json"], 0),
    "verify-package": (["{tmp}/p.json"], 0),
    "sample-package": (["{tmp}/p.json", "--input", "0", "--n", "5", "--seed", "1"], 0),
    "estimate": (["--mechanism", "{tmp}/p.json", "--reports", "{tmp}/reports.csv"], 0),
    "keygen": (["--out", "{tmp}/author.key"], 0),
    "shuffle": (["--channel", str(EXAMPLES / "grr4_Q.csv"), "--n", "1000", "--delta", "1e-6"], 0),
    "account": (["--channel", str(EXAMPLES / "grr4_Q.csv"), "--rounds", "10", "--delta", "1e-6"], 0),
    "audit": (["--E", str(EXAMPLES / "ldp4_E.csv"), "--sampler", f"{SAMPLERS}:grr", "--arg", "eps=1", "--arg", "k=4",
               "--reports-per-input", "500", "--seed", "1"], 0),
}


def test_every_json_command_has_a_case():
    with_json = {name for name, command in get_command(app).commands.items()
                 if any("--json" in (parameter.opts or []) for parameter in command.params)}
    assert with_json == set(CASES), "add a case for the command's --json output"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Each case's command with ``--json``, then ``demo``, each a program (:func:`forked_cli.run_forked`), by
    name; ``"start-up"``: the imports before the forks; ``"parent"``: the process that forked them."""
    folder = tmp_path_factory.mktemp("json")
    (folder / "reports.csv").write_text("y\n" + "\n".join(str(index % 4) for index in range(200)) + "\n")
    first = ["robust", "package"]  # the others read what these write
    names = first + [name for name in CASES if name not in first]
    commands = [[name, *(argument.replace("{tmp}", str(folder)) for argument in CASES[name][0]), "--json"]
                for name in names]
    done, parent = run_forked([*commands, ["demo"]], PRELOAD, cwd=ROOT)
    return {"start-up": done[0], **dict(zip(names, done[1:])), "demo": done[-1], "parent": parent}


def test_json_stdout_is_exactly_one_document(runs):
    assert runs["start-up"].stdout == "" and runs["parent"].stdout == ""  # nothing on stdout outside the commands
    for name in CASES:
        result = runs[name]
        assert result.returncode == CASES[name][1], (name, result.stderr)
        try:
            document = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            pytest.fail(f"{name} --json: stdout is not one JSON document ({error}): {result.stdout[:200]!r}")
        assert isinstance(document, dict) and document, name


def test_the_demo_prints_no_solver_banner(runs):
    result = runs["demo"]
    assert result.returncode == 0, result.stderr
    assert "optimal" in result.stdout and "HiGHS" not in result.stdout + result.stderr
