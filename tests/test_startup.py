"""Fast start: what ``import designer``, ``import designer.cli`` and the commands load.

Each check runs in a fresh interpreter (a child process) and inspects
``sys.modules`` there: the assertions are on module sets, never on times
(benchmarks/bench_startup.py measures the times).
"""

from __future__ import annotations

import ast
import importlib
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import designer

ROOT = Path(__file__).resolve().parents[1]

#: Modules that cost 0.05-1.3 s to import and that no command may load unless it uses them.
HEAVY = (
    "cvxpy",
    "scipy.stats",
    "scipy.optimize",
    "matplotlib",
    "pandas",
    "flint",
    "networkx",
    "cdd",
    "duckdb",
    "dask",
    "randomgen",
    "hypothesis",
)


def loaded_after(code: str) -> tuple[set[str], str]:
    """Run ``code`` in a fresh interpreter; the top-level-or-listed modules it loaded, and its stdout."""
    probe = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps(sorted(name for name in sys.modules if name in {list(HEAVY) + ['numpy']!r})))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    output, _, last = result.stdout.rstrip("\n").rpartition("\n")
    return set(json.loads(last)), output


def run_cli(*arguments: str) -> str:
    """Python code that runs ``ldp-designer ARGUMENTS`` in-process and swallows its exit."""
    return (
        "from designer.cli import main\n"
        f"sys.argv = ['ldp-designer', *{list(arguments)!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert stop.code in (0, None, 1), stop.code\n"
    )


def test_import_designer_loads_no_submodule_and_nothing_heavy():
    loaded, _ = loaded_after(
        "import designer\n"
        "assert not [name for name in sys.modules if name.startswith('designer.')], "
        "[name for name in sys.modules if name.startswith('designer.')]"
    )
    assert loaded == set()  # not even numpy


def test_import_cli_and_help_load_nothing_heavy():
    loaded, _ = loaded_after("import designer.cli")
    assert loaded == set(), f"import designer.cli loaded {sorted(loaded)}"
    loaded, output = loaded_after(run_cli("--help"))
    assert not loaded & set(HEAVY), f"--help loaded {sorted(loaded & set(HEAVY))}"
    assert "numpy" not in loaded, (
        "--help loaded numpy: a command module imports numpy (or a designer module that does) at "
        "module level; import it inside the command function"
    )
    from designer.cli import app

    names = [command.name for command in app.registered_commands]
    assert len(names) >= 9 and "certify" in names and "design" in names
    for name in names:  # every registered command is listed, with the first words of its help
        line = next((line for line in output.splitlines() if f" {name} " in line), None)
        assert line is not None, f"{name} missing from --help"


def test_every_command_help_loads_nothing_heavy():
    from designer.cli import app

    names = [command.name for command in app.registered_commands]
    loaded, output = loaded_after("".join(run_cli(name, "--help") for name in names))
    assert loaded == set(), f"COMMAND --help loaded {sorted(loaded)}"
    for name in names:
        assert f"Usage: ldp-designer {name} [OPTIONS]" in output


def test_float_certify_loads_only_numpy(tmp_path):
    e_file, channel_file = tmp_path / "E.csv", tmp_path / "Q.csv"
    e_file.write_text("0,1,1\n1,0,1\n1,1,0\n")  # classic LDP, epsilon = 1: exp(1) is irrational
    channel_file.write_text("0.5,0.25,0.25\n0.25,0.5,0.25\n0.25,0.25,0.5\n")  # ratios 2 <= e
    arguments = ["certify", "--E", str(e_file), "--channel", str(channel_file)]
    loaded, output = loaded_after(run_cli(*arguments))
    assert "CERTIFIED" in output
    assert loaded == {"numpy"}, f"float-mode certify loaded {sorted(loaded - {'numpy'})}"
    # exact mode decides 2 <= e with Arb balls, and the probe sees python-flint arrive: the check can fail
    loaded, output = loaded_after(run_cli(*arguments, "--exact"))
    assert "exact proof" in output
    assert loaded == {"numpy", "flint"}


def test_public_api_resolves_to_the_defining_objects():
    for name in designer.__all__:
        module = importlib.import_module(designer._PUBLIC[name])
        assert getattr(designer, name) is getattr(module, name), name
    from designer import Channel, PrivacyMatrix, certify

    channel = Channel([[0.75, 0.25], [0.25, 0.75]])  # both ratios are 3: E_Q = log 3 off the diagonal
    assert certify(channel, PrivacyMatrix.classic(2, 1.2)).margin == pytest.approx(1.2 - math.log(3), abs=1e-12)
    assert not certify(channel, PrivacyMatrix.classic(2, 1.0)).certified  # log 3 = 1.0986 > 1


def test_certify_stays_the_function_after_the_submodule_is_imported():
    loaded, output = loaded_after(
        "import designer.certify\n"
        "import designer\n"
        "from designer import certify\n"
        "print(callable(certify), certify is designer.certify, type(sys.modules['designer.certify']).__name__)"
    )
    assert output.split() == ["True", "True", "module"]


def test_public_names_agree_with_the_type_checking_imports():
    tree = ast.parse((ROOT / "designer" / "__init__.py").read_text())
    eager = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for child in ast.walk(node)
        if isinstance(child, ast.ImportFrom)
        for alias in child.names
    }
    assert set(designer.__all__) == set(designer._PUBLIC) == eager
    assert sorted(designer.__all__) == designer.__all__


def test_unknown_attribute_is_an_attribute_error_and_submodules_resolve():
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        designer.not_a_name  # noqa: B018
    assert designer.theory.__name__ == "designer.theory"
    assert not hasattr(designer, "__not_a_dunder__")


def test_defaults_name_the_library_objects():
    from designer import defaults
    from designer.design.vertex import VERTEX_UTILITIES
    from designer.utility import F_DIVERGENCES

    assert tuple(F_DIVERGENCES) == defaults.F_DIVERGENCE_NAMES
    assert VERTEX_UTILITIES == ("mutual-information", *F_DIVERGENCES)


def test_design_loads_neither_scipy_optimize_nor_networkx(tmp_path):
    e_file = tmp_path / "E.csv"
    e_file.write_text("0,1,1\n1,0,1\n1,1,0\n")  # classic LDP, k = 3, epsilon = 1
    loaded, output = loaded_after(run_cli("design", "--E", str(e_file), "--out", str(tmp_path / "Q.csv")))
    assert "certified" in output
    assert loaded == {"numpy"}, f"design loaded {sorted(loaded - {'numpy'})}"


def test_components_agree_with_networkx():
    import networkx as nx
    import numpy as np

    from designer.spec import PrivacyMatrix

    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(1, 25))
        epsilon = np.where(rng.random((k, k)) < rng.uniform(0.0, 0.3), 1.0, np.inf)
        np.fill_diagonal(epsilon, 0.0)
        graph = nx.Graph()
        graph.add_nodes_from(range(k))
        graph.add_edges_from(zip(*np.nonzero(np.isfinite(epsilon))))
        expected = sorted((sorted(int(x) for x in part) for part in nx.connected_components(graph)), key=min)
        assert [part.tolist() for part in PrivacyMatrix(epsilon).components()] == expected
